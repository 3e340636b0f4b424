//! Lines in and out of a Kafka topic, to feed and check the Kafka examples
//! without other tools: `--produce FILE` writes each line of FILE (`-`:
//! standard input) as one record's value; `--read` prints the value of
//! every record the topic holds now, one per line, and ends.
//!
//! ```text
//! cargo run --release -p weir-examples --features connectors --example kafka_lines -- \
//!     --bootstrap-servers 127.0.0.1:9092 --topic orders --produce examples/data/orders.csv
//! cargo run --release -p weir-examples --features connectors --example kafka_lines -- \
//!     --bootstrap-servers 127.0.0.1:9092 --topic report --read
//! ```
//!
//! `--read --commit-log TOPIC` prints only the records of transactions an
//! exactly-once sink logged as committed there (for brokers that do not
//! isolate transactions). `--producer-property KEY=VALUE` sets a producer
//! property, e.g. `batch.num.messages=1`, which the tansu broker needs.

use std::io::BufRead;

use anyhow::Context;
use weir::prelude::*;
use weir_connectors::kafka::{read_committed, read_topic, KafkaSink};

fn main() -> anyhow::Result<()> {
    let env = weir_examples::environment(include_str!("kafka_lines.rs"), true)?;
    let args = env.args();
    let servers = args.required("bootstrap-servers")?.to_string();
    let topic = args.required("topic")?.to_string();
    if args.has("read") {
        let records = match args.get("commit-log") {
            Some(log) => read_committed(&servers, &topic, log),
            None => read_topic(&servers, &topic),
        }
        .map_err(anyhow::Error::msg)?;
        for record in records {
            println!("{}", record.text());
        }
        return Ok(());
    }
    let from = args
        .get("produce")
        .context("say --produce FILE (or -) or --read")?
        .to_string();
    let lines: Vec<String> = if from == "-" {
        std::io::stdin().lock().lines().collect::<Result<_, _>>()?
    } else {
        std::fs::read_to_string(&from)
            .with_context(|| format!("reading {from}"))?
            .lines()
            .map(str::to_string)
            .collect()
    };
    let count = lines.len();
    let mut sink = KafkaSink::strings(&servers, &topic);
    if let Some(property) = args.get("producer-property") {
        let (key, value) = property
            .split_once('=')
            .context("--producer-property takes KEY=VALUE")?;
        sink = sink.with_property(key, value);
    }
    env.from_collection(lines).add_sink(sink);
    env.execute("Lines to Kafka")?;
    eprintln!("{count} records written to {topic}");
    Ok(())
}
