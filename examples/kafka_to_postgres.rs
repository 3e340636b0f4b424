//! Running totals per key from a Kafka topic into a PostgreSQL table,
//! exactly once in the table: by idempotent upserts (default), or by
//! two-phase commit (`--two-phase-commit`: rows appear when the checkpoint
//! after them completes).
//!
//! Each Kafka record's value is `key,amount`; the table holds each key's
//! total, `(k TEXT PRIMARY KEY, total BIGINT)`, created if missing.
//!
//! ```text
//! cargo run --release -p weir-examples --features connectors --example kafka_to_postgres -- \
//!     --bootstrap-servers 127.0.0.1:9092 --topic amounts \
//!     --postgres postgres://postgres@127.0.0.1:5432/postgres --table totals \
//!     -D execution.checkpointing.interval=1s -D execution.checkpointing.dir=/tmp/k2p-chk \
//!     -D execution.checkpointing.externalized-checkpoint-retention=RETAIN_ON_CANCELLATION
//! # kill -9 it, then the same command with --from-savepoint /tmp/k2p-chk
//! ```
//!
//! `--bounded` stops at the offsets that were the latest at start;
//! `--rate N` reads at most N records a second (to interrupt it part-way).

use weir::prelude::*;
use weir_connectors::kafka::KafkaSource;
use weir_connectors::postgres::{self, PostgresSink, Row};

fn parse(value: &str) -> Result<(String, i64), String> {
    let (key, amount) = value
        .split_once(',')
        .ok_or_else(|| format!("expected key,amount, got '{value}'"))?;
    let amount = amount
        .trim()
        .parse()
        .map_err(|_| format!("amount '{amount}' is not a whole number"))?;
    Ok((key.trim().to_string(), amount))
}

fn main() -> anyhow::Result<()> {
    let env = weir_examples::environment(include_str!("kafka_to_postgres.rs"), true)?;
    let args = env.args();
    let servers = args.required("bootstrap-servers")?.to_string();
    let topic = args.required("topic")?.to_string();
    let url = args.required("postgres")?.to_string();
    let table = args.required("table")?.to_string();
    let two_phase = args.has("two-phase-commit");
    postgres::execute(
        &url,
        &format!("CREATE TABLE IF NOT EXISTS {table} (k TEXT PRIMARY KEY, total BIGINT NOT NULL)"),
    )?;
    let mut source = KafkaSource::new(&servers, &[topic.as_str()], |r| {
        let value = std::str::from_utf8(r.value.unwrap_or_default())
            .map_err(|e| format!("not UTF-8: {e}"))?;
        parse(value).map(|_| value.to_string())
    });
    if args.has("bounded") {
        source = source.bounded();
    }
    if let Some(rate) = args.get_parsed::<f64>("rate")? {
        anyhow::ensure!(rate > 0.0, "--rate must be above 0, got {rate}");
        source = source.with_rate_limit(rate);
    }
    let totals = env
        .add_parallel_source(source, &topic)
        .uid("kafka")
        .map(|value: String| parse(&value).expect("checked by the source"))
        .key_by(|(key, _)| key.clone())
        .sum(|(_, amount)| amount)
        .uid("totals");
    let row =
        |(key, total): &(String, i64)| -> Row { vec![Box::new(key.clone()), Box::new(*total)] };
    let columns = ["k", "total"];
    if two_phase {
        totals
            .add_sink(PostgresSink::exactly_once(
                &url,
                &table,
                &columns,
                &["k"],
                row,
            ))
            .uid("postgres");
    } else {
        totals
            .add_sink(PostgresSink::upsert(&url, &table, &columns, &["k"], row))
            .uid("postgres");
    }
    env.execute("Kafka to PostgreSQL")?;
    Ok(())
}
