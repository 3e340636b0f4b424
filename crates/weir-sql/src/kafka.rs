//! The `kafka` connector: a topic as a source (values in `json` or `csv`,
//! read from the group's offsets, the earliest, the latest or a timestamp,
//! without end or to the offsets of the start) and as a sink of inserts
//! (none, at-least-once or exactly-once by Kafka transactions), with
//! Flink's option names. Offsets and transactions are the Kafka
//! connector's (`weir-connectors`), so a SQL job checkpoints and restores
//! them as a DataStream job does.
//!
//! ```sql
//! CREATE TABLE orders (id BIGINT, buyer STRING, amount DECIMAL(10, 2)) WITH (
//!   'connector' = 'kafka', 'topic' = 'orders',
//!   'properties.bootstrap.servers' = '127.0.0.1:9092',
//!   'properties.group.id' = 'report', 'scan.startup.mode' = 'earliest-offset',
//!   'format' = 'json');
//! ```

use weir::prelude::*;
use weir_connectors::kafka::{
    DeliveryGuarantee, KafkaRecord, KafkaSink, KafkaSource, OffsetReset, StartingOffsets,
};

use crate::catalog::TableDef;
use crate::connector::{append_only, check_options, connector_error, RowDecoder, TableRows};
use crate::error::SqlError;
use crate::format::{format_options, RowFormat};
use crate::types::SqlType;
use crate::value::Row;

/// The options a kafka table takes, besides `properties.*`.
fn known_options(table: &TableDef, source: bool) -> Vec<String> {
    let mut known: Vec<String> = [
        "connector",
        "topic",
        "format",
        "value.format",
        "properties.bootstrap.servers",
        "properties.group.id",
    ]
    .map(String::from)
    .to_vec();
    if source {
        known.extend(
            [
                "scan.startup.mode",
                "scan.startup.timestamp-millis",
                "scan.bounded.mode",
                "scan.bounded.timestamp-millis",
            ]
            .map(String::from),
        );
    } else {
        known.extend(
            [
                "sink.delivery-guarantee",
                "sink.transactional-id-prefix",
                "sink.partitioner",
            ]
            .map(String::from),
        );
    }
    let (key, prefix) = format_key(table);
    known.extend(format_options(
        table.option(key).unwrap_or_default(),
        prefix,
    ));
    // librdkafka's own settings pass through.
    known.extend(
        table
            .options
            .keys()
            .filter(|k| k.starts_with("properties."))
            .cloned(),
    );
    known
}

/// Which option names the value format (`format` or `value.format`) and
/// the prefix of its options.
fn format_key(table: &TableDef) -> (&'static str, &'static str) {
    if table.option("value.format").is_some() {
        ("value.format", "value.")
    } else {
        ("format", "")
    }
}

fn required<'a>(table: &'a TableDef, key: &str) -> Result<&'a str, SqlError> {
    table
        .option(key)
        .ok_or_else(|| connector_error(table, format!("the option '{key}' is missing")))
}

fn millis(table: &TableDef, key: &str) -> Result<i64, SqlError> {
    required(table, key)?.trim().parse().map_err(|_| {
        connector_error(
            table,
            format!("'{key}' must be milliseconds since the epoch"),
        )
    })
}

/// librdkafka settings from `properties.*` (but the two the connector
/// reads itself).
fn properties(table: &TableDef) -> Vec<(String, String)> {
    table
        .options
        .iter()
        .filter_map(|(k, v)| {
            let key = k.strip_prefix("properties.")?;
            (key != "bootstrap.servers" && key != "group.id").then(|| (key.to_string(), v.clone()))
        })
        .collect()
}

/// The rows of a kafka table.
pub(crate) fn kafka_source(
    env: &StreamExecutionEnvironment,
    table: &TableDef,
    rows: &TableRows,
    physical: &[bool],
) -> Result<DataStream<Row>, SqlError> {
    check_options(
        table,
        &known_options(table, true)
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    )?;
    let servers = required(table, "properties.bootstrap.servers")?;
    let topics: Vec<&str> = required(table, "topic")?
        .split(';')
        .map(str::trim)
        .collect();
    let (key, prefix) = format_key(table);
    let format = RowFormat::of(table, key, prefix)?;
    let skip = format.ignores_parse_errors();
    let decode = RowDecoder::new(table, rows, physical, format);
    let mut source = KafkaSource::new(servers, &topics, move |r: &KafkaRecord<'_>| {
        decode.row(r.value.unwrap_or_default())
    });
    if let Some(group) = table.option("properties.group.id") {
        source = source.with_group_id(group);
    }
    let reset = match table.option("properties.auto.offset.reset") {
        Some("latest") => OffsetReset::Latest,
        Some("none") => OffsetReset::None,
        _ => OffsetReset::Earliest,
    };
    let starting = match table.option("scan.startup.mode").unwrap_or("group-offsets") {
        "earliest-offset" => StartingOffsets::Earliest,
        "latest-offset" => StartingOffsets::Latest,
        "group-offsets" => StartingOffsets::Committed(reset),
        "timestamp" => StartingOffsets::Timestamp(millis(table, "scan.startup.timestamp-millis")?),
        other => {
            return Err(connector_error(
                table,
                format!(
                    "'scan.startup.mode' must be earliest-offset, latest-offset, group-offsets or timestamp, not '{other}'"
                ),
            ))
        }
    };
    source = source.with_starting_offsets(starting);
    source = match table.option("scan.bounded.mode").unwrap_or("unbounded") {
        "unbounded" => source,
        "latest-offset" => source.bounded(),
        "timestamp" => source.bounded_by_timestamp(millis(table, "scan.bounded.timestamp-millis")?),
        other => {
            return Err(connector_error(
                table,
                format!(
                "'scan.bounded.mode' must be unbounded, latest-offset or timestamp, not '{other}'"
            ),
            ))
        }
    };
    if skip {
        source = source.skip_malformed();
    }
    for (key, value) in properties(table) {
        source = source.with_property(&key, &value);
    }
    Ok(env
        .add_parallel_source(source, &format!("{}[kafka]", table.name))
        .uid(&crate::plan::state_uid(&format!(
            "Source[{}; kafka]",
            table.name.to_lowercase()
        ))))
}

/// Writes `stream` (already in the table's columns) to a kafka table.
pub(crate) fn kafka_sink(
    stream: DataStream<Row>,
    table: &TableDef,
    updating: bool,
) -> Result<(), SqlError> {
    append_only(table, updating)?;
    check_options(
        table,
        &known_options(table, false)
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    )?;
    let servers = required(table, "properties.bootstrap.servers")?;
    let topic = required(table, "topic")?;
    if topic.contains(';') {
        return Err(connector_error(table, "a kafka sink writes one topic"));
    }
    let (key, prefix) = format_key(table);
    let format = RowFormat::of(table, key, prefix)?;
    let columns: Vec<(String, SqlType)> =
        table.physical().map(|(n, t)| (n.to_string(), t)).collect();
    let mut sink = KafkaSink::new(servers, topic, move |row: &Row| {
        (None, format.encode(&columns, &row.values).into_bytes())
    });
    let guarantee = match table.option("sink.delivery-guarantee").unwrap_or("at-least-once") {
        "none" => DeliveryGuarantee::None,
        "at-least-once" => DeliveryGuarantee::AtLeastOnce,
        "exactly-once" => {
            let prefix = required(table, "sink.transactional-id-prefix").map_err(|_| {
                connector_error(
                    table,
                    "'sink.delivery-guarantee' = 'exactly-once' needs 'sink.transactional-id-prefix'",
                )
            })?;
            sink = sink.with_transactional_id_prefix(prefix);
            DeliveryGuarantee::ExactlyOnce
        }
        other => {
            return Err(connector_error(
                table,
                format!("'sink.delivery-guarantee' must be none, at-least-once or exactly-once, not '{other}'"),
            ))
        }
    };
    match table.option("sink.partitioner").unwrap_or("default") {
        "default" => {}
        other => {
            return Err(connector_error(
                table,
                format!("'sink.partitioner' = '{other}' is not supported (default is)"),
            ))
        }
    }
    sink = sink.with_delivery_guarantee(guarantee);
    for (key, value) in properties(table) {
        sink = sink.with_property(&key, &value);
    }
    stream
        .add_sink(sink)
        .name(&format!("Sink: {}[kafka]", table.name))
        .uid(&crate::plan::state_uid(&format!(
            "Sink[{}; kafka]",
            table.name.to_lowercase()
        )));
    Ok(())
}
