//! The Kafka source and sink through whole jobs, against a local tansu
//! broker: what a job writes, another reads back; offsets survive a
//! failure.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use weir::prelude::*;

use crate::FailAfterCheckpoint;
use weir::sink::CollectSink;
use weir_connectors::kafka::{KafkaSink, KafkaSource, LocalKafka};

fn broker() -> LocalKafka {
    LocalKafka::start().unwrap_or_else(|e| panic!("{e}"))
}

/// Writes `0..n` to `topic` (key = value = the number's text), so the
/// default partitioner spreads them over the partitions.
fn produce(kafka: &LocalKafka, topic: &str, n: u64) {
    let (key, value) = LocalKafka::ONE_RECORD_PER_BATCH;
    let env = StreamExecutionEnvironment::new();
    env.from_sequence(0, n as i64 - 1).add_sink(
        KafkaSink::new(&kafka.bootstrap_servers(), topic, |i: &i64| {
            let text = i.to_string().into_bytes();
            (Some(text.clone()), text)
        })
        .with_property(key, value),
    );
    env.execute("produce").expect("produced");
}

#[test]
fn what_the_sink_writes_the_bounded_source_reads_back() {
    let kafka = broker();
    kafka.create_topic("numbers", 4).expect("topic");
    produce(&kafka, "numbers", 2_000);
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(2);
    let read = env
        .add_parallel_source(
            KafkaSource::strings(&kafka.bootstrap_servers(), &["numbers"]).bounded(),
            "numbers",
        )
        .map(|s: String| s.parse::<u64>().expect("a number"))
        .execute_and_collect()
        .expect("reads");
    let mut read = read;
    read.sort();
    // Every record once: none lost by the sink, none missed or repeated by
    // the source (four partitions over two subtasks).
    assert_eq!(read, (0..2_000).collect::<Vec<_>>());
}

#[test]
fn offsets_in_the_checkpoint_count_each_record_once_across_a_failure() {
    const KEYS: u64 = 10;
    let kafka = broker();
    kafka.create_topic("events", 3).expect("topic");
    produce(&kafka, "events", 20_000);
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(2)
        .enable_checkpointing(Duration::from_millis(20))
        .set_restart_strategy(RestartStrategy::fixed_delay(1, Duration::ZERO));
    let out = Arc::new(Mutex::new(Vec::new()));
    env.add_parallel_source(
        KafkaSource::strings(&kafka.bootstrap_servers(), &["events"]).bounded(),
        "events",
    )
    .uid("events")
    // Slow enough that checkpoints complete while records flow.
    .map(|s: String| {
        std::thread::sleep(Duration::from_micros(20));
        s.parse::<u64>().expect("a number")
    })
    .map(FailAfterCheckpoint {
        at: Some(3_000),
        checkpointed: false,
    })
    .uid("fail once")
    .map(|i: u64| (i % KEYS, 1u64))
    .key_by(|p| p.0)
    .sum(|p| &mut p.1)
    .uid("counts")
    .add_sink(CollectSink::new(Arc::clone(&out)))
    .set_parallelism(1);
    let result = env.execute("counted").expect("recovers");
    assert_eq!(result.restarts, 1, "{:?}", result.recovered_failures);
    assert!(result.checkpoints.restored.is_some());
    let mut max: BTreeMap<u64, u64> = BTreeMap::new();
    for (k, n) in out.lock().expect("lock").iter() {
        let m = max.entry(*k).or_default();
        *m = (*m).max(*n);
    }
    // Restored offsets and restored counts agree: each record counted once.
    let expected: BTreeMap<u64, u64> = (0..KEYS).map(|k| (k, 20_000 / KEYS)).collect();
    assert_eq!(max, expected);
}

#[test]
fn a_malformed_record_names_topic_partition_and_offset() {
    let kafka = broker();
    kafka.create_topic("bytes", 1).expect("topic");
    let env = StreamExecutionEnvironment::new();
    let (key, value) = LocalKafka::ONE_RECORD_PER_BATCH;
    env.from_elements(vec![vec![b'o', b'k'], vec![0xff, 0xfe]])
        .add_sink(
            KafkaSink::new(&kafka.bootstrap_servers(), "bytes", |v: &Vec<u8>| {
                (None, v.clone())
            })
            .with_property(key, value),
        );
    env.execute("produce").expect("produced");
    let env = StreamExecutionEnvironment::new();
    env.add_source(
        KafkaSource::strings(&kafka.bootstrap_servers(), &["bytes"]).bounded(),
        "bytes",
    )
    .add_sink(DiscardingSink);
    let err = env.execute("strict").expect_err("malformed").to_string();
    assert!(
        err.contains("malformed record at bytes/0 offset 1"),
        "{err}"
    );
    // Or skipped and counted.
    let env = StreamExecutionEnvironment::new();
    let read = env
        .add_source(
            KafkaSource::strings(&kafka.bootstrap_servers(), &["bytes"])
                .bounded()
                .skip_malformed(),
            "bytes",
        )
        .execute_and_collect()
        .expect("skips");
    assert_eq!(read, vec!["ok".to_string()]);
}
