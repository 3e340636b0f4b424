//! Connector benchmarks against local servers: the Kafka source and sink
//! and the PostgreSQL upsert sink, each next to the same work done by the
//! client library alone in this process (a bare librdkafka producer or
//! consumer loop, a bare batched upsert and a `COPY`), so that the ratio
//! shows what Weir adds. The broker is tansu (one record per produce
//! batch, which it needs): its own limit dominates the absolute figures.

use std::time::{Duration, Instant};

use anyhow::Context;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::{Offset, TopicPartitionList};
use weir::prelude::*;
use weir_connectors::kafka::{DeliveryGuarantee, KafkaSink, KafkaSource, LocalKafka};
use weir_connectors::postgres::{LocalPostgres, PostgresSink, Row};

/// One measurement: records/s and MB/s of values.
struct Rate {
    records: f64,
    megabytes: f64,
}

fn rate(records: u64, value_size: usize, took: Duration) -> Rate {
    let s = took.as_secs_f64().max(1e-9);
    Rate {
        records: records as f64 / s,
        megabytes: (records as f64 * value_size as f64) / s / 1e6,
    }
}

fn print_row(what: &str, r: &Rate, base: Option<&Rate>) {
    let ratio = base.map_or(String::new(), |b| {
        format!("{:>6.0} %", 100.0 * r.records / b.records)
    });
    println!(
        "  {what:<44} {:>10.0} records/s {:>8.1} MB/s {ratio}",
        r.records, r.megabytes
    );
}

fn value(i: u64, size: usize) -> Vec<u8> {
    let mut v = format!("{i:020}").into_bytes();
    v.resize(size, b'x');
    v
}

fn bare_produce(servers: &str, topic: &str, n: u64, size: usize) -> anyhow::Result<Duration> {
    let (key, batch) = LocalKafka::ONE_RECORD_PER_BATCH;
    let producer: BaseProducer = ClientConfig::new()
        .set("bootstrap.servers", servers)
        .set("linger.ms", "5")
        .set(key, batch)
        .create()?;
    let started = Instant::now();
    for i in 0..n {
        let payload = value(i, size);
        let mut record = BaseRecord::<(), _>::to(topic).payload(&payload);
        loop {
            match producer.send(record) {
                Ok(()) => break,
                Err((_, back)) => {
                    producer.poll(Duration::from_millis(10));
                    record = back;
                }
            }
        }
        producer.poll(Duration::ZERO);
    }
    producer.flush(Duration::from_secs(300))?;
    Ok(started.elapsed())
}

fn weir_produce(
    servers: &str,
    topic: &str,
    n: u64,
    size: usize,
    guarantee: DeliveryGuarantee,
) -> anyhow::Result<Duration> {
    let (key, batch) = LocalKafka::ONE_RECORD_PER_BATCH;
    let env = StreamExecutionEnvironment::new();
    env.enable_checkpointing(Duration::from_secs(1));
    env.add_source(GeneratorSource::new(n, move |i| value(i, size)), "values")
        .add_sink(
            KafkaSink::new(servers, topic, |v: &Vec<u8>| (None, v.clone()))
                .with_delivery_guarantee(guarantee)
                .with_transactional_id_prefix(&format!("bench-{topic}"))
                .with_property(key, batch),
        );
    let started = Instant::now();
    env.execute("produce")?;
    Ok(started.elapsed())
}

fn bare_consume(servers: &str, topic: &str, partitions: i32, n: u64) -> anyhow::Result<Duration> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", servers)
        .set("group.id", "bench-bare")
        .set("enable.auto.commit", "false")
        .create()?;
    let mut assignment = TopicPartitionList::new();
    for p in 0..partitions {
        assignment.add_partition_offset(topic, p, Offset::Beginning)?;
    }
    consumer.assign(&assignment)?;
    let started = Instant::now();
    let mut read = 0;
    while read < n {
        if let Some(message) = consumer.poll(Duration::from_millis(100)) {
            message?;
            read += 1;
        }
        anyhow::ensure!(
            started.elapsed() < Duration::from_secs(600),
            "read {read} of {n}"
        );
    }
    Ok(started.elapsed())
}

fn weir_consume(servers: &str, topic: &str) -> anyhow::Result<Duration> {
    let env = StreamExecutionEnvironment::new();
    env.add_source(KafkaSource::bytes(servers, &[topic]).bounded(), topic)
        .add_sink(DiscardingSink);
    let started = Instant::now();
    env.execute("consume")?;
    Ok(started.elapsed())
}

fn upsert_row(i: u64) -> (String, i64) {
    (format!("key-{i}"), i as i64)
}

fn bare_upsert(url: &str, table: &str, n: u64) -> anyhow::Result<Duration> {
    let mut db = postgres::Client::connect(url, postgres::NoTls)?;
    let started = Instant::now();
    let mut i = 0;
    while i < n {
        let end = (i + 500).min(n);
        let mut sql = format!("INSERT INTO {table} (k, total) VALUES ");
        let rows: Vec<(String, i64)> = (i..end).map(upsert_row).collect();
        let mut params: Vec<&(dyn postgres::types::ToSql + Sync)> = Vec::new();
        for (j, (k, t)) in rows.iter().enumerate() {
            if j > 0 {
                sql.push(',');
            }
            sql.push_str(&format!("(${}, ${})", 2 * j + 1, 2 * j + 2));
            params.push(k);
            params.push(t);
        }
        sql.push_str(" ON CONFLICT (k) DO UPDATE SET total = EXCLUDED.total");
        db.execute(sql.as_str(), &params)?;
        i = end;
    }
    Ok(started.elapsed())
}

fn bare_copy(url: &str, table: &str, n: u64) -> anyhow::Result<Duration> {
    use std::io::Write;
    let mut db = postgres::Client::connect(url, postgres::NoTls)?;
    let started = Instant::now();
    let mut writer = db.copy_in(format!("COPY {table} (k, total) FROM STDIN").as_str())?;
    for i in 0..n {
        let (k, t) = upsert_row(i);
        writeln!(writer, "{k}\t{t}")?;
    }
    writer.finish()?;
    Ok(started.elapsed())
}

fn weir_upsert(url: &str, table: &str, n: u64) -> anyhow::Result<Duration> {
    let env = StreamExecutionEnvironment::new();
    env.add_source(GeneratorSource::new(n, upsert_row), "rows")
        .add_sink(PostgresSink::upsert(
            url,
            table,
            &["k", "total"],
            &["k"],
            |(k, t): &(String, i64)| -> Row { vec![Box::new(k.clone()), Box::new(*t)] },
        ));
    let started = Instant::now();
    env.execute("upsert")?;
    Ok(started.elapsed())
}

/// `weir-bench connectors [--records N] [--rows N]`.
pub fn main(params: &ParameterTool) -> anyhow::Result<()> {
    let records: u64 = params.get_parsed("records")?.unwrap_or(50_000);
    let rows: u64 = params.get_parsed("rows")?.unwrap_or(200_000);
    let kafka = LocalKafka::start().context("the Kafka benchmarks need tansu")?;
    let servers = kafka.bootstrap_servers();
    println!("Kafka (tansu on loopback, one record per produce batch), {records} records:");
    for size in [100usize, 1_000] {
        println!(" values of {size} bytes:");
        let topic = |what: &str| format!("{what}-{size}");
        for t in ["bare", "alo", "eo"] {
            kafka.create_topic(&topic(t), 1)?;
        }
        let bare = rate(
            records,
            size,
            bare_produce(&servers, &topic("bare"), records, size)?,
        );
        print_row("bare librdkafka producer loop", &bare, None);
        let alo = rate(
            records,
            size,
            weir_produce(
                &servers,
                &topic("alo"),
                records,
                size,
                DeliveryGuarantee::AtLeastOnce,
            )?,
        );
        print_row("generator -> KafkaSink at-least-once", &alo, Some(&bare));
        let eo = rate(
            records,
            size,
            weir_produce(
                &servers,
                &topic("eo"),
                records,
                size,
                DeliveryGuarantee::ExactlyOnce,
            )?,
        );
        print_row(
            "generator -> KafkaSink exactly-once (1 s)",
            &eo,
            Some(&bare),
        );
        println!(
            "  {:<44} {:>6.0} % of at-least-once",
            "exactly-once",
            100.0 * eo.records / alo.records
        );
        let bare_in = rate(
            records,
            size,
            bare_consume(&servers, &topic("bare"), 1, records)?,
        );
        print_row("bare librdkafka consumer loop", &bare_in, None);
        let weir_in = rate(records, size, weir_consume(&servers, &topic("bare"))?);
        print_row("KafkaSource -> discarding sink", &weir_in, Some(&bare_in));
    }
    drop(kafka);
    let pg = LocalPostgres::start().context("the PostgreSQL benchmark needs PostgreSQL")?;
    let url = pg.url();
    println!("PostgreSQL (local server, fsync off), {rows} distinct keys:");
    for t in ["bare_upsert", "bare_copy", "weir_upsert"] {
        weir_connectors::postgres::execute(
            &url,
            &format!("CREATE TABLE {t} (k TEXT PRIMARY KEY, total BIGINT NOT NULL)"),
        )?;
    }
    let copy = rate(rows, 16, bare_copy(&url, "bare_copy", rows)?);
    print_row("bare COPY", &copy, None);
    let upsert = rate(rows, 16, bare_upsert(&url, "bare_upsert", rows)?);
    print_row("bare upserts, 500 rows per statement", &upsert, Some(&copy));
    let weir = rate(rows, 16, weir_upsert(&url, "weir_upsert", rows)?);
    print_row("generator -> PostgresSink::upsert", &weir, Some(&upsert));
    println!(
        "  {:<44} {:>6.0} % of COPY",
        "PostgresSink::upsert",
        100.0 * weir.records / copy.records
    );
    println!("peak RSS {} MiB", crate::peak_rss_kib() / 1024);
    Ok(())
}
