//! The order report on Kafka: orders from a topic, the report of
//! `order_report` (per user, 10 s windows of event time, 2 s of
//! out-of-orderness, 3 s of allowed lateness) to a topic exactly once,
//! orders later than that to a side-output topic.
//!
//! Each input record's value is one order line,
//! `orderId,userId,money,yyyy-MM-dd HH:mm:ss` (UTC); each output record is
//! one line of the report, the text `order_report` prints for the same
//! orders (with one input partition, so that the orders keep their order).
//!
//! ```text
//! cargo run --release -p weir-examples --features connectors --example kafka_order_report -- \
//!     --bootstrap-servers 127.0.0.1:9092 --input-topic orders --output-topic report \
//!     --late-topic late-orders \
//!     -D execution.checkpointing.interval=1s -D execution.checkpointing.dir=/tmp/kor-chk \
//!     -D execution.checkpointing.externalized-checkpoint-retention=RETAIN_ON_CANCELLATION
//! # kill -9 it, then the same command with --from-savepoint /tmp/kor-chk
//! ```
//!
//! `--bounded` stops at the offsets that were the latest at start;
//! `--rate N` reads at most N records a second (to interrupt it part-way).
//! The report is written in a transaction per checkpoint (ids prefixed
//! `--transactional-id-prefix`, default `weir-order-report`), visible to
//! `read_committed` readers when the checkpoint completes; without
//! checkpointing, at the end of bounded input. `--commit-log TOPIC` also
//! logs the committed transactions there, for brokers that do not isolate
//! transactions. Orders that are not order lines are reported on stderr.

use weir::prelude::*;
use weir_connectors::kafka::{DeliveryGuarantee, KafkaSink, KafkaSource};
use weir_examples::bounded_out_of_orderness;
use weir_examples::orders::{report, Order};

fn main() -> anyhow::Result<()> {
    let env = weir_examples::environment(include_str!("kafka_order_report.rs"), true)?;
    let args = env.args();
    let servers = args.required("bootstrap-servers")?.to_string();
    let input = args.required("input-topic")?.to_string();
    let output = args.required("output-topic")?.to_string();
    let late_topic = args.get("late-topic").map(str::to_string);
    let prefix = args
        .get_or("transactional-id-prefix", "weir-order-report")
        .to_string();
    let commit_log = args.get("commit-log").map(str::to_string);
    // Also lets tests and scripts drive a broker that needs it, e.g.
    // `--producer-property batch.num.messages=1`.
    let producer_property = args.get("producer-property").map(str::to_string);

    let mut source = KafkaSource::strings(&servers, &[input.as_str()]);
    if args.has("bounded") {
        source = source.bounded();
    }
    if let Some(rate) = args.get_parsed::<f64>("rate")? {
        anyhow::ensure!(rate > 0.0, "--rate must be above 0, got {rate}");
        source = source.with_rate_limit(rate);
    }
    let sink = |topic: &str, prefix: String| -> anyhow::Result<KafkaSink<String>> {
        let mut sink = KafkaSink::strings(&servers, topic)
            .with_delivery_guarantee(DeliveryGuarantee::ExactlyOnce)
            .with_transactional_id_prefix(&prefix);
        if let Some(log) = &commit_log {
            sink = sink.with_commit_log(log);
        }
        if let Some(property) = &producer_property {
            let (key, value) = property
                .split_once('=')
                .ok_or_else(|| anyhow::anyhow!("--producer-property takes KEY=VALUE"))?;
            sink = sink.with_property(key, value);
        }
        Ok(sink)
    };

    let late = OutputTag::<Order>::new("late-order");
    let lines = env.add_parallel_source(source, &input).uid("orders");
    let report = report(
        lines,
        bounded_out_of_orderness(&env, Duration::from_secs(2)),
        &late,
    );
    report
        .add_sink(sink(&output, prefix.clone())?)
        .uid("report");
    if let Some(topic) = &late_topic {
        report
            .get_side_output(&late)
            .map(|order: Order| order.to_string())
            .add_sink(sink(topic, format!("{prefix}-late"))?)
            .uid("late orders");
    }
    env.execute("Kafka order report")?;
    Ok(())
}
