//! Kafka tables against a local tansu broker: a query writes a topic,
//! another reads it back; mistakes are named before any job runs.

#![cfg(feature = "kafka")]

use std::path::PathBuf;

use weir_connectors::kafka::LocalKafka;
use weir_sql::SqlError;

mod support;

fn orders_csv() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/orders.csv")
}

fn kafka_table(name: &str, servers: &str, topic: &str, extra: &str) -> String {
    format!(
        "CREATE TABLE {name} (id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3))
         WITH ('connector' = 'kafka', 'topic' = '{topic}',
               'properties.bootstrap.servers' = '{servers}', 'format' = 'json'{extra});"
    )
}

#[test]
fn a_query_writes_a_topic_and_another_reads_it_back() -> Result<(), SqlError> {
    let kafka = LocalKafka::start().unwrap_or_else(|e| panic!("{e}"));
    kafka.create_topic("orders", 2).expect("topic");
    let servers = kafka.bootstrap_servers();
    let script = format!(
        "CREATE TABLE orders (id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3))
           WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv',
                 'csv.null-literal' = 'null');
         {}
         INSERT INTO sunk SELECT * FROM orders WHERE id <= 6;
         {}
         SELECT id, buyer, amount FROM back;",
        orders_csv().display(),
        // tansu keeps one record per batch (see LocalKafka).
        kafka_table(
            "sunk",
            &servers,
            "orders",
            ", 'properties.batch.num.messages' = '1'"
        ),
        kafka_table(
            "back",
            &servers,
            "orders",
            // A sink's option on a table that is read is no mistake.
            ", 'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset',
               'sink.delivery-guarantee' = 'at-least-once'"
        ),
    );
    assert_eq!(
        support::changelog(&script)?,
        [
            "+I[1, alice, 12.50]",
            "+I[2, bob, 3.00]",
            "+I[3, alice, 40.25]",
            "+I[4, carol, NULL]",
            "+I[5, alice, 1.00]",
            "+I[6, bob, 2.00]"
        ]
    );
    Ok(())
}

/// With `key.fields`, the key columns are the record's key (in the key
/// format); `EXCEPT_KEY` leaves them out of the value.
#[test]
fn key_fields_are_the_records_key() -> Result<(), SqlError> {
    let kafka = LocalKafka::start().unwrap_or_else(|e| panic!("{e}"));
    kafka.create_topic("keyed", 1).expect("topic");
    let servers = kafka.bootstrap_servers();
    let keyed = |name: &str, extra: &str| {
        format!(
            "CREATE TABLE {name} (id BIGINT, buyer STRING, amount DECIMAL(10, 2))
             WITH ('connector' = 'kafka', 'topic' = 'keyed',
                   'properties.bootstrap.servers' = '{servers}',
                   'key.format' = 'csv', 'key.fields' = 'buyer',
                   'value.format' = 'json', 'value.fields-include' = 'EXCEPT_KEY'{extra});"
        )
    };
    let bounded =
        ", 'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset'";
    let script = format!(
        "CREATE TABLE orders (id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3))
           WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv',
                 'csv.null-literal' = 'null');
         {}
         INSERT INTO sunk SELECT id, buyer, amount FROM orders WHERE id <= 3;
         {}
         SELECT id, buyer, amount FROM back;",
        orders_csv().display(),
        keyed("sunk", ", 'properties.batch.num.messages' = '1'"),
        keyed("back", bounded),
    );
    assert_eq!(
        support::changelog(&script)?,
        [
            "+I[1, alice, 12.50]",
            "+I[2, bob, 3.00]",
            "+I[3, alice, 40.25]"
        ]
    );
    // The values alone do not hold the buyer.
    let values_only = support::changelog(&format!(
        "CREATE TABLE v (id BIGINT, buyer STRING, amount DECIMAL(10, 2))
         WITH ('connector' = 'kafka', 'topic' = 'keyed',
               'properties.bootstrap.servers' = '{servers}', 'format' = 'json'{bounded});
         SELECT id, buyer FROM v;"
    ))?;
    assert_eq!(values_only, ["+I[1, NULL]", "+I[2, NULL]", "+I[3, NULL]"]);
    Ok(())
}

/// Metadata columns read each record's topic, partition, offset and
/// timestamp; the timestamp can be the event time.
#[test]
fn metadata_columns_read_the_records_place_and_time() -> Result<(), SqlError> {
    let kafka = LocalKafka::start().unwrap_or_else(|e| panic!("{e}"));
    kafka.create_topic("placed", 1).expect("topic");
    let servers = kafka.bootstrap_servers();
    let back = format!(
        "CREATE TABLE back (
           id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3),
           `partition` BIGINT METADATA VIRTUAL,
           off BIGINT METADATA FROM 'offset' VIRTUAL,
           `topic` STRING METADATA VIRTUAL,
           written TIMESTAMP_LTZ(3) METADATA FROM 'timestamp',
           WATERMARK FOR written AS written - INTERVAL '1' SECOND
         ) WITH ('connector' = 'kafka', 'topic' = 'placed',
                 'properties.bootstrap.servers' = '{servers}', 'format' = 'json',
                 'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset');"
    );
    let script = format!(
        "CREATE TABLE orders (id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3))
           WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv',
                 'csv.null-literal' = 'null');
         {}
         INSERT INTO sunk SELECT * FROM orders WHERE id <= 4;
         {back}
         SELECT id, `partition`, off, `topic`, written > TIMESTAMP '2020-01-01 00:00:00' AS recent
         FROM back;",
        orders_csv().display(),
        kafka_table(
            "sunk",
            &servers,
            "placed",
            ", 'properties.batch.num.messages' = '1'"
        ),
    );
    assert_eq!(
        support::changelog(&script)?,
        [
            "+I[1, 0, 0, placed, TRUE]",
            "+I[2, 0, 1, placed, TRUE]",
            "+I[3, 0, 2, placed, TRUE]",
            "+I[4, 0, 3, placed, TRUE]"
        ]
    );
    // The record timestamp as the time attribute: every record is in a
    // window (the bounded read ends with the final watermark).
    let windows = support::changelog(&format!(
        "{back}
         SELECT COUNT(*) AS n FROM TABLE(TUMBLE(TABLE back, DESCRIPTOR(written), INTERVAL '1' HOUR))
         GROUP BY window_start, window_end;"
    ))?;
    let total: i64 = windows
        .iter()
        .filter_map(|r| {
            r.strip_prefix("+I[")?
                .strip_suffix(']')?
                .parse::<i64>()
                .ok()
        })
        .sum();
    assert_eq!(total, 4, "{windows:?}");
    Ok(())
}

#[test]
fn kafka_table_mistakes_are_named() {
    let err = |ddl: String, query: &str| {
        support::run_with(&format!("{ddl}\n{query}"), &[])
            .unwrap_err()
            .to_string()
    };
    let servers = "127.0.0.1:1";
    let rows = format!(
        "CREATE TABLE rows (id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3))
           WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');",
        orders_csv().display()
    );
    let e = err(
        rows.clone()
            + &kafka_table(
                "k",
                servers,
                "t",
                ", 'sink.delivery-guarantee' = 'exactly-once'",
            ),
        "INSERT INTO k SELECT * FROM rows;",
    );
    assert!(e.contains("needs 'sink.transactional-id-prefix'"), "{e}");
    let e = err(
        kafka_table("k", servers, "t", ", 'scan.startup.mode' = 'begin'"),
        "SELECT * FROM k;",
    );
    assert!(
        e.contains("'scan.startup.mode' must be earliest-offset"),
        "{e}"
    );
    let e = err(
        kafka_table(
            "k",
            servers,
            "t",
            ", 'scan.startp.mode' = 'earliest-offset'",
        ),
        "SELECT * FROM k;",
    );
    assert!(
        e.contains("unsupported options for connector 'kafka': scan.startp.mode"),
        "{e}"
    );
    let e = err(
        rows.clone() + &kafka_table("k", servers, "t", ""),
        "INSERT INTO k SELECT MAX(id), buyer, MAX(amount), MAX(ts) FROM rows GROUP BY buyer;",
    );
    assert!(e.contains("the kafka sink takes inserts only"), "{e}");
    let meta = |column: &str| {
        format!(
            "CREATE TABLE m (id BIGINT, {column}) WITH ('connector' = 'kafka', 'topic' = 't',
               'properties.bootstrap.servers' = '{servers}', 'format' = 'json');"
        )
    };
    let e = err(
        kafka_table("k", servers, "t", ", 'key.fields' = 'buyer'"),
        "SELECT * FROM k;",
    );
    assert!(e.contains("'key.fields' needs 'key.format'"), "{e}");
    let e = err(
        kafka_table(
            "k",
            servers,
            "t",
            ", 'key.format' = 'csv', 'key.fields' = 'nobody'",
        ),
        "SELECT * FROM k;",
    );
    assert!(
        e.contains("'key.fields' names 'nobody', which is not a physical column"),
        "{e}"
    );
    let e = err(meta("h STRING METADATA FROM 'headers'"), "SELECT * FROM m;");
    assert!(
        e.contains("'h' reads the metadata 'headers', which the kafka connector does not have"),
        "{e}"
    );
    let e = err(meta("o STRING METADATA FROM 'offset'"), "SELECT * FROM m;");
    assert!(
        e.contains("'o' reads the metadata 'offset', which is BIGINT, not STRING"),
        "{e}"
    );
    let e = err(
        rows + &meta("t TIMESTAMP_LTZ(3) METADATA FROM 'timestamp'"),
        "INSERT INTO m SELECT id FROM rows;",
    );
    assert!(
        e.contains("writing the METADATA column 't' is not supported"),
        "{e}"
    );
}

#[test]
fn an_upsert_kafka_table_keeps_each_keys_last_row() -> Result<(), SqlError> {
    let kafka = LocalKafka::start().unwrap_or_else(|e| panic!("{e}"));
    kafka.create_topic("counts", 1).expect("topic");
    let servers = kafka.bootstrap_servers();
    let table = |name: &str, extra: &str| {
        format!(
            "CREATE TABLE {name} (n BIGINT, buyers BIGINT, PRIMARY KEY (n) NOT ENFORCED)
             WITH ('connector' = 'upsert-kafka', 'topic' = 'counts',
                   'properties.bootstrap.servers' = '{servers}',
                   'key.format' = 'json', 'value.format' = 'json'{extra});"
        )
    };
    // How many buyers have n orders: groups empty as buyers move on, so
    // the topic gets tombstones as well as upserts.
    let script = format!(
        "CREATE TABLE orders (id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3))
           WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv',
                 'csv.null-literal' = 'null');
         {}
         INSERT INTO sunk SELECT n, COUNT(*) FROM (SELECT buyer, COUNT(*) AS n FROM orders GROUP BY buyer) GROUP BY n;
         {}
         SELECT * FROM back;",
        orders_csv().display(),
        table("sunk", ", 'properties.batch.num.messages' = '1'"),
        table("back", ", 'scan.bounded.mode' = 'latest-offset'"),
    );
    let lines = support::changelog(&script)?;
    assert!(lines.iter().any(|l| l.starts_with("-D")), "{lines:?}");
    // alice 4 orders, bob 3, carol 2, dave 1.
    assert_eq!(
        support::materialize(&lines),
        ["[1, 1]", "[2, 1]", "[3, 1]", "[4, 1]"]
    );
    let records = weir_connectors::kafka::read_topic(&servers, "counts").expect("read");
    assert!(
        records.iter().any(|r| r.value.is_empty()),
        "tombstones in the topic"
    );
    Ok(())
}

/// A topic of Debezium change events read with `'value.format' =
/// 'debezium-json'` is a changelog: an aggregation over it retracts as
/// rows change; a query's changes written in that format are events read
/// back as the same rows.
#[test]
fn a_topic_of_debezium_events_is_a_changelog() -> Result<(), SqlError> {
    use weir::prelude::*;
    use weir_connectors::kafka::KafkaSink;
    let kafka = LocalKafka::start().unwrap_or_else(|e| panic!("{e}"));
    kafka.create_topic("changes", 1).expect("topic");
    kafka.create_topic("created", 1).expect("topic");
    kafka.create_topic("inserted", 1).expect("topic");
    let servers = kafka.bootstrap_servers();
    let events = [
        r#"{"before":null,"after":{"id":1,"buyer":"alice","amount":1.50},"op":"c"}"#,
        r#"{"before":null,"after":{"id":2,"buyer":"bob","amount":2.00},"op":"r"}"#,
        r#"{"before":{"id":1,"buyer":"alice","amount":1.50},"after":{"id":1,"buyer":"bob","amount":4.00},"op":"u"}"#,
        r#"{"before":{"id":2,"buyer":"bob","amount":2.00},"after":null,"op":"d"}"#,
    ];
    let env = StreamExecutionEnvironment::new();
    let (key, value) = LocalKafka::ONE_RECORD_PER_BATCH;
    env.from_elements(events.iter().map(|e| e.to_string()).collect::<Vec<_>>())
        .add_sink(KafkaSink::strings(&servers, "changes").with_property(key, value));
    env.execute("debezium events")
        .expect("the events are written");
    let table = |name: &str, topic: &str| {
        format!(
            "CREATE TABLE {name} (id BIGINT, buyer STRING, amount DECIMAL(10, 2))
             WITH ('connector' = 'kafka', 'topic' = '{topic}',
                   'properties.bootstrap.servers' = '{servers}', 'value.format' = 'debezium-json',
                   'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset',
                   'properties.batch.num.messages' = '1');"
        )
    };
    let out = support::changelog(&format!(
        "{}
         SELECT buyer, SUM(amount) AS total FROM changes GROUP BY buyer;",
        table("changes", "changes")
    ))?;
    assert_eq!(
        support::materialize(&out),
        ["[bob, 4.00]"],
        "the final rows of {out:?}"
    );
    assert!(out.contains(&"-D[alice, 1.50]".to_string()), "{out:?}");
    // Written in that format, the changes of a query are events again:
    // an update's old row a delete, its new row a create, as Flink writes
    // them.
    let out = support::changelog(&format!(
        "{}
         {}
         INSERT INTO created SELECT id, buyer, amount * 2 FROM changes;
         SELECT * FROM created;",
        table("changes", "changes"),
        table("created", "created")
    ))?;
    assert_eq!(
        out,
        [
            "+I[1, alice, 3.00]",
            "+I[1, bob, 8.00]",
            "+I[2, bob, 4.00]",
            "-D[1, alice, 3.00]",
            "-D[2, bob, 4.00]"
        ]
    );
    let out = support::changelog(&format!(
        "CREATE TABLE orders (id BIGINT, buyer STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3))
           WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv',
                 'csv.null-literal' = 'null');
         {}
         INSERT INTO inserted SELECT id, buyer, amount FROM orders WHERE id <= 2;
         SELECT * FROM inserted;",
        orders_csv().display(),
        table("inserted", "inserted")
    ))?;
    assert_eq!(out, ["+I[1, alice, 12.50]", "+I[2, bob, 3.00]"]);
    Ok(())
}
