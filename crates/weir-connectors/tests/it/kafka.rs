//! The Kafka source and sink through whole jobs, against a local tansu
//! broker: what a job writes, another reads back; offsets survive a
//! failure.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use weir::prelude::*;

use crate::FailAfterCheckpoint;
use weir::sink::CollectSink;
use weir_connectors::format::Csv;
use weir_connectors::kafka::{
    read_committed, read_topic, DeliveryGuarantee, KafkaSink, KafkaSource, LocalKafka, OffsetReset,
    StartingOffsets, TRANSACTION_HEADER,
};

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
    .map(FailAfterCheckpoint::at(3_000))
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

/// A broker with a topic `out` of `partitions` partitions and its commit
/// log `out.commits`.
fn broker_with_out(partitions: u32) -> LocalKafka {
    let kafka = broker();
    kafka.create_topic("out", partitions).expect("topic");
    kafka.create_topic("out.commits", 1).expect("topic");
    kafka
}

/// The exactly-once sink the tests use: numbers to `out`, committed
/// transactions logged in `out.commits`.
fn exactly_once_to_out(kafka: &LocalKafka) -> KafkaSink<u64> {
    let (key, value) = LocalKafka::ONE_RECORD_PER_BATCH;
    KafkaSink::strings(&kafka.bootstrap_servers(), "out")
        .with_delivery_guarantee(DeliveryGuarantee::ExactlyOnce)
        .with_transactional_id_prefix("numbers-job")
        .with_commit_log("out.commits")
        .with_property(key, value)
}

#[test]
fn the_exactly_once_sink_commits_each_record_once_across_a_failure() {
    const N: u64 = 6_000;
    let kafka = broker_with_out(3);
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(2)
        .enable_checkpointing(Duration::from_millis(50))
        .set_restart_strategy(RestartStrategy::fixed_delay(1, Duration::ZERO));
    // Slow enough that checkpoints complete while records flow.
    env.add_parallel_source(
        GeneratorSource::new(N, |i| i).with_rate_limit(2_000.0),
        "numbers",
    )
    .uid("numbers")
    // Midway through the second subtask's range (it starts at N / 2):
    // after many checkpoints, with records of both subtasks' open
    // transactions already at the broker when it fails.
    // Twenty records into a checkpoint interval (about fifty long), so that
    // the open transaction has records at the broker when it fails.
    .map(FailAfterCheckpoint::at(N / 2 + N / 4).after_records_since_barrier(20))
    .uid("fail once")
    // Each subtask's records to a partition of their own: tansu applies a
    // committed transaction's offsets (the sink's marker) only once no
    // transaction still open overlaps it in a partition, which the other
    // subtask's nearly always would (see docs/design/kafka.md).
    .add_sink(exactly_once_to_out(&kafka).with_partitioner(|i| Some(i32::from(*i >= N / 2))))
    .uid("sink");
    let result = env.execute("exactly once").expect("recovers");
    assert_eq!(result.restarts, 1, "{:?}", result.recovered_failures);
    let servers = kafka.bootstrap_servers();
    let committed_records = read_committed(&servers, "out", "out.commits").expect("reads");
    let mut committed: Vec<u64> = committed_records
        .iter()
        .map(|r| r.text().parse().expect("a number"))
        .collect();
    committed.sort();
    // tansu does not hide aborted records: the topic usually holds the
    // records written after the restored checkpoint twice, once aborted;
    // whether the failed transaction's records reached the broker before
    // the failure is up to the producer's timing, so only the committed
    // ones are judged.
    let all = read_topic(&servers, "out").expect("reads");
    assert!(all.len() as u64 >= N, "{} records", all.len());
    let expected: Vec<u64> = (0..N).collect();
    if committed != expected {
        let missing: Vec<_> = expected
            .iter()
            .filter(|i| committed.binary_search(i).is_err())
            .collect();
        let mut distinct = committed.clone();
        distinct.dedup();
        // Which transactions hold a record twice, and how many each.
        let twice: std::collections::BTreeSet<&str> = committed
            .windows(2)
            .filter(|w| w[0] == w[1])
            .map(|w| w[0].to_string())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .flat_map(|v| {
                committed_records
                    .iter()
                    .filter(move |r| r.text() == v)
                    .filter_map(|r| r.transaction.as_deref())
            })
            .collect();
        let log = read_topic(&servers, "out.commits").expect("reads");
        panic!(
            "{} committed, {} distinct; missing {:?}...; transactions holding duplicates: \
             {twice:?}; commit log: {:?}",
            committed.len(),
            distinct.len(),
            &missing[..missing.len().min(20)],
            log.iter().map(|r| r.text()).collect::<Vec<_>>()
        );
    }
    // A record deserializer sees the headers (here the sink's transaction).
    let env = StreamExecutionEnvironment::new();
    let tags = env
        .add_source(
            KafkaSource::new(&servers, &["out"], |r| {
                Ok(r.headers()
                    .iter()
                    .find(|(k, _)| *k == TRANSACTION_HEADER)
                    .and_then(|(_, v)| v.map(|v| String::from_utf8_lossy(v).into_owned())))
            })
            // The end of a read_committed reader is the last stable offset,
            // which tansu sometimes reports as 0 after aborted transactions.
            .with_property("isolation.level", "read_uncommitted")
            .bounded(),
            "tags",
        )
        .execute_and_collect()
        .expect("reads");
    assert!(!tags.is_empty());
    assert!(
        tags.iter()
            .all(|t| t.as_deref().is_some_and(|t| t.starts_with("numbers-job:"))),
        "{:?}",
        &tags[..3]
    );
}

#[test]
fn the_exactly_once_sink_needs_a_transactional_id_prefix() {
    let kafka = broker();
    let env = StreamExecutionEnvironment::new();
    env.from_elements(vec![1u64]).add_sink(
        KafkaSink::strings(&kafka.bootstrap_servers(), "out")
            .with_delivery_guarantee(DeliveryGuarantee::ExactlyOnce),
    );
    let err = env.execute("no prefix").expect_err("refused").to_string();
    assert!(err.contains("transactional id prefix"), "{err}");
}

/// Fails the job in its third checkpoint, after a pause that lets the other
/// sinks take their part of it: the checkpoint never completes.
#[derive(Clone)]
struct FailingCheckpoint {
    snapshots: u32,
    first_attempt: bool,
}

impl SinkFunction<u64> for FailingCheckpoint {
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.first_attempt = ctx.attempt_number == 0;
        Ok(())
    }
    fn invoke(&mut self, _value: u64, _ctx: &SinkContext) -> FunctionResult {
        Ok(())
    }
    fn snapshot_state(&mut self, _checkpoint_id: u64) -> FunctionResult {
        self.snapshots += 1;
        if self.first_attempt && self.snapshots == 3 {
            std::thread::sleep(Duration::from_millis(300));
            return Err("injected failure in a checkpoint".into());
        }
        Ok(())
    }
}

#[test]
fn a_checkpoint_that_never_completes_commits_nothing() {
    const N: u64 = 2_000;
    let kafka = broker_with_out(2);
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(2)
        .enable_checkpointing(Duration::from_millis(100))
        .set_restart_strategy(RestartStrategy::fixed_delay(1, Duration::ZERO));
    // Slow: the input lasts past the third checkpoint.
    let numbers = env
        .add_parallel_source(
            GeneratorSource::new(N, |i| i).with_rate_limit(500.0),
            "numbers",
        )
        .uid("numbers");
    // A partition per sink subtask: see the test above.
    numbers
        .add_sink(exactly_once_to_out(&kafka).with_partitioner(|i| Some(i32::from(*i >= N / 2))))
        .uid("sink");
    // In a task of its own, so that the Kafka sink's subtasks take their
    // part of the checkpoint (a transaction each) before it fails.
    numbers
        .add_sink(FailingCheckpoint {
            snapshots: 0,
            first_attempt: true,
        })
        .set_parallelism(1)
        .uid("failing");
    let result = env.execute("exactly once").expect("recovers");

    assert_eq!(result.restarts, 1, "{:?}", result.recovered_failures);
    let mut committed: Vec<u64> = read_committed(&kafka.bootstrap_servers(), "out", "out.commits")
        .expect("reads")
        .iter()
        .map(|r| r.text().parse().expect("a number"))
        .collect();
    committed.sort();

    // The transactions of the failed checkpoint were pre-committed, never
    // committed: their records come again after the restore, once.
    assert_eq!(committed, (0..N).collect::<Vec<_>>());
}

/// Writes `(value, timestamp)` pairs to partition `partition` of `topic`,
/// each timestamp as the record's Kafka timestamp.
fn produce_at(kafka: &LocalKafka, topic: &str, partition: i32, records: Vec<(u64, i64)>) {
    let (key, value) = LocalKafka::ONE_RECORD_PER_BATCH;
    let env = StreamExecutionEnvironment::new();
    env.from_collection(records)
        .assign_timestamps_and_watermarks(
            WatermarkStrategy::no_watermarks().with_timestamp_assigner(|r: &(u64, i64), _| r.1),
        )
        .map(|r: (u64, i64)| r.0)
        .add_sink(
            KafkaSink::strings(&kafka.bootstrap_servers(), topic)
                .with_partitioner(move |_| Some(partition))
                .with_property(key, value),
        );
    env.execute("produce").expect("produced");
}

fn read_numbers(source: KafkaSource<String>) -> Vec<u64> {
    let env = StreamExecutionEnvironment::new();
    let mut read = env
        .add_source(source, "numbers")
        .map(|s: String| s.parse::<u64>().expect("a number"))
        .execute_and_collect()
        .expect("reads");
    read.sort();
    read
}

#[test]
fn starting_and_stopping_offsets_by_timestamp_and_per_partition() {
    let kafka = broker();
    kafka.create_topic("timed", 1).expect("topic");
    produce_at(
        &kafka,
        "timed",
        0,
        // Value i at (i + 1) s (a timestamp of 0 means "now" to producers).
        (0..100).map(|i| (i, (i as i64 + 1) * 1_000)).collect(),
    );
    let servers = kafka.bootstrap_servers();
    // From the first record at or after 51 s to the end.
    let from_time = KafkaSource::strings(&servers, &["timed"])
        .with_starting_offsets(StartingOffsets::Timestamp(51_000))
        .bounded();
    assert_eq!(read_numbers(from_time), (50..100).collect::<Vec<_>>());
    // From offset 10, stopping before the first record at or after 21 s.
    let specific = KafkaSource::strings(&servers, &["timed"])
        .with_starting_offsets(StartingOffsets::Specific(
            [(("timed".to_string(), 0), 10)].into_iter().collect(),
        ))
        .bounded_by_timestamp(21_000);
    assert_eq!(read_numbers(specific), (10..20).collect::<Vec<_>>());
    // Record timestamps are the records' event time (as the sink wrote it).
    let env = StreamExecutionEnvironment::new();
    let stamps = env
        .add_source(
            KafkaSource::new(&servers, &["timed"], |r| Ok(r.timestamp)).bounded(),
            "stamps",
        )
        .execute_and_collect()
        .expect("reads");
    assert_eq!(stamps[..3], [Some(1_000), Some(2_000), Some(3_000)]);
}

#[test]
fn completed_checkpoints_commit_offsets_that_a_new_job_can_start_from() {
    let kafka = broker();
    kafka.create_topic("logged", 2).expect("topic");
    produce(&kafka, "logged", 400);
    let servers = kafka.bootstrap_servers();
    let env = StreamExecutionEnvironment::new();
    env.enable_checkpointing(Duration::from_millis(20));
    let read = Arc::new(Mutex::new(Vec::new()));
    env.add_source(
        KafkaSource::strings(&servers, &["logged"])
            .with_group_id("audit")
            .with_rate_limit(400.0)
            .bounded(),
        "logged",
    )
    .add_sink(CollectSink::new(Arc::clone(&read)));
    env.execute("first").expect("reads");
    assert_eq!(read.lock().expect("lock").len(), 400);
    // What the group holds now: the offsets of the last checkpoint that
    // completed while the source ran.
    let env = StreamExecutionEnvironment::new();
    let rest = env
        .add_source(
            KafkaSource::strings(&servers, &["logged"])
                .with_group_id("audit")
                .with_starting_offsets(StartingOffsets::Committed(OffsetReset::None))
                .bounded(),
            "rest",
        )
        .execute_and_collect()
        .expect("reads from the committed offsets");
    assert!(
        rest.len() < 400,
        "{} records after the committed offsets: none committed",
        rest.len()
    );
    // A group with no committed offsets and no reset strategy fails,
    // naming the partition.
    let env = StreamExecutionEnvironment::new();
    env.add_source(
        KafkaSource::strings(&servers, &["logged"])
            .with_group_id("never-committed")
            .with_starting_offsets(StartingOffsets::Committed(OffsetReset::None))
            .bounded(),
        "none",
    )
    .add_sink(DiscardingSink);
    let err = env.execute("none").expect_err("no offsets").to_string();
    assert!(err.contains("no committed offset for logged/"), "{err}");
}

#[test]
fn a_topic_pattern_reads_matching_topics_and_finds_new_ones() {
    let kafka = broker();
    for topic in ["logs-a", "logs-b", "other"] {
        kafka.create_topic(topic, 1).expect("topic");
        produce(&kafka, topic, 10);
    }
    let env = StreamExecutionEnvironment::new();
    let read = Arc::new(Mutex::new(Vec::new()));
    env.add_source(
        KafkaSource::strings(&kafka.bootstrap_servers(), &[])
            .with_topic_pattern("logs-.*")
            .expect("a pattern")
            .with_partition_discovery_interval(Duration::from_millis(200)),
        "logs",
    )
    .add_sink(CollectSink::new(Arc::clone(&read)));
    let job = env.execute_async("logs").expect("starts");
    let count = || read.lock().expect("lock").len();
    let until = std::time::Instant::now() + Duration::from_secs(30);
    while count() < 20 && std::time::Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(count(), 20, "logs-a and logs-b, not other");
    kafka.create_topic("logs-c", 1).expect("topic");
    produce(&kafka, "logs-c", 10);
    while count() < 30 && std::time::Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    job.cancel();
    let _ = job.wait();
    assert_eq!(count(), 30, "the topic created later was found");
}

/// A watermark right behind every record (no periodic timer: bounded
/// input is read faster than any interval).
struct Punctuated;

impl WatermarkGenerator<String> for Punctuated {
    fn on_event(&mut self, _event: &String, timestamp: i64, output: &mut WatermarkOutput) {
        output.emit_watermark(timestamp - 1);
    }
    fn on_periodic_emit(&mut self, _output: &mut WatermarkOutput) {}
}

#[test]
fn each_partition_has_its_own_watermark() {
    let kafka = broker();
    kafka.create_topic("split", 2).expect("topic");
    // Each partition in order, but far apart: 0..100 s then 1 000..1 100 s
    // in partition 0, 500..600 s then 1 500..1 600 s in partition 1. With
    // one watermark for both, whichever partition is read first makes the
    // other's early records late, and they are dropped.
    let block = |from: i64| (0..100).map(move |i| from + i * 1_000);
    let p0: Vec<i64> = block(1_000).chain(block(1_000_000)).collect();
    let p1: Vec<i64> = block(500_000).chain(block(1_500_000)).collect();
    produce_at(&kafka, "split", 0, p0.iter().map(|t| (0, *t)).collect());
    produce_at(&kafka, "split", 1, p1.iter().map(|t| (1, *t)).collect());
    let env = StreamExecutionEnvironment::new();
    let counts = env
        .from_split_source(
            // A few records per poll: watermarks between them.
            KafkaSource::strings(&kafka.bootstrap_servers(), &["split"])
                .bounded()
                .with_rate_limit(4_000.0),
            WatermarkStrategy::for_generator(|_| Punctuated),
            "split",
        )
        .set_parallelism(1)
        .key_by(|_| 0u8)
        .window(TumblingEventTimeWindows::of(Duration::from_secs(10)))
        .process(
            |_k: &u8,
             _ctx: &mut ProcessWindowContext<'_, TimeWindow>,
             e: Elements<'_, String>,
             out: &mut Collector<'_, usize>| {
                out.collect(e.count());
                Ok(())
            },
        )
        .execute_and_collect()
        .expect("runs");
    assert_eq!(counts.iter().sum::<usize>(), 400, "{counts:?}");
}

#[test]
fn an_unreachable_broker_fails_the_job_naming_its_address() {
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let servers = format!("127.0.0.1:{port}");
    let env = StreamExecutionEnvironment::new();
    env.add_source(
        KafkaSource::strings(&servers, &["t"])
            .with_property("socket.connection.setup.timeout.ms", "1000")
            .bounded(),
        "t",
    )
    .add_sink(DiscardingSink);
    let started = std::time::Instant::now();
    let err = env.execute("unreachable").expect_err("fails").to_string();
    assert!(err.contains(&servers), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
}

/// Reads `topic` from the savepoint at `savepoint` (or from the start) at
/// `parallelism`, to its end.
fn read_rest(kafka: &LocalKafka, topic: &str, parallelism: u32, savepoint: &str) -> Vec<u64> {
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(parallelism);
    env.set_from_savepoint(savepoint.trim_start_matches("file://"));
    let mut read = env
        .add_parallel_source(
            KafkaSource::strings(&kafka.bootstrap_servers(), &[topic]).bounded(),
            topic,
        )
        .uid("kafka")
        .map(|s: String| s.parse::<u64>().expect("a number"))
        .execute_and_collect()
        .expect("resumes");
    read.sort();
    read
}

#[test]
fn a_savepoint_at_parallelism_2_resumes_every_partition_at_3_and_at_1() {
    const N: u64 = 3_000;
    let kafka = broker();
    kafka.create_topic("wide", 5).expect("topic");
    produce(&kafka, "wide", N);
    let dir = std::env::temp_dir().join(format!("weir-kafka-rescale-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(2)
        .enable_checkpointing(Duration::from_secs(3600));
    let before = Arc::new(Mutex::new(Vec::new()));
    env.add_parallel_source(
        KafkaSource::strings(&kafka.bootstrap_servers(), &["wide"]).with_rate_limit(2_000.0),
        "wide",
    )
    .uid("kafka")
    .map(|s: String| s.parse::<u64>().expect("a number"))
    .add_sink(CollectSink::new(Arc::clone(&before)));
    let job = env.execute_async("first").expect("starts");
    let until = std::time::Instant::now() + Duration::from_secs(30);
    while before.lock().expect("lock").len() < 500 && std::time::Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
    let savepoint = job
        .stop_with_savepoint(dir.join("savepoints"), false)
        .expect("a savepoint");
    job.wait().expect("stopped");
    let before = before.lock().expect("lock").clone();
    assert!(
        before.len() >= 500 && (before.len() as u64) < N,
        "stopped part-way: {}",
        before.len()
    );
    for parallelism in [3, 1] {
        // Each partition goes on exactly where the savepoint left it:
        // together the two runs read every record once.
        let mut all = before.clone();
        all.extend(read_rest(&kafka, "wide", parallelism, &savepoint));
        all.sort();
        assert_eq!(
            all,
            (0..N).collect::<Vec<_>>(),
            "resumed at parallelism {parallelism}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A TCP proxy on loopback whose network can be cut: open connections are
/// closed and new ones refused until it is restored.
struct Proxy {
    port: u16,
    /// Where connections go (set once the broker runs).
    target: Arc<Mutex<Option<u16>>>,
    up: Arc<std::sync::atomic::AtomicBool>,
    open: Arc<Mutex<Vec<std::net::TcpStream>>>,
}

impl Proxy {
    fn start() -> Proxy {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("binds");
        let proxy = Proxy {
            port: listener.local_addr().expect("address").port(),
            target: Arc::new(Mutex::new(None)),
            up: Arc::new(std::sync::atomic::AtomicBool::new(true)),
            open: Arc::new(Mutex::new(Vec::new())),
        };
        let (target, up, open) = (
            Arc::clone(&proxy.target),
            Arc::clone(&proxy.up),
            Arc::clone(&proxy.open),
        );
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let to = *target.lock().expect("lock");
                let (Some(to), true) = (to, up.load(std::sync::atomic::Ordering::SeqCst)) else {
                    continue; // dropped: refused
                };
                let Ok(server) = std::net::TcpStream::connect(("127.0.0.1", to)) else {
                    continue;
                };
                for (mut from, mut into) in [
                    (
                        client.try_clone().expect("clone"),
                        server.try_clone().expect("clone"),
                    ),
                    (
                        server.try_clone().expect("clone"),
                        client.try_clone().expect("clone"),
                    ),
                ] {
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut from, &mut into);
                        let _ = into.shutdown(std::net::Shutdown::Both);
                    });
                }
                let mut open = open.lock().expect("lock");
                open.push(client);
                open.push(server);
            }
        });
        proxy
    }

    fn forward_to(&self, port: u16) {
        *self.target.lock().expect("lock") = Some(port);
    }

    fn cut(&self) {
        self.up.store(false, std::sync::atomic::Ordering::SeqCst);
        for stream in self.open.lock().expect("lock").drain(..) {
            let _ = stream.shutdown(std::net::Shutdown::Both);
        }
    }

    fn restore(&self) {
        self.up.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

#[test]
fn a_broker_lost_mid_run_and_back_loses_nothing() {
    const N: u64 = 3_000;
    let proxy = Proxy::start();
    let kafka = LocalKafka::start_advertising(Some(proxy.port)).unwrap_or_else(|e| panic!("{e}"));
    proxy.forward_to(
        kafka
            .bootstrap_servers()
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .expect("a port"),
    );
    let servers = format!("127.0.0.1:{}", proxy.port);
    kafka.create_topic("in", 2).expect("topic");
    kafka.create_topic("out", 2).expect("topic");
    produce(&kafka, "in", N);
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(2)
        .enable_checkpointing(Duration::from_millis(50))
        .set_restart_strategy(RestartStrategy::fixed_delay(50, Duration::from_millis(200)));
    let (key, value) = LocalKafka::ONE_RECORD_PER_BATCH;
    env.add_parallel_source(
        KafkaSource::strings(&servers, &["in"])
            .bounded()
            .with_rate_limit(1_000.0),
        "in",
    )
    .uid("in")
    .add_sink(
        KafkaSink::strings(&servers, "out")
            .with_property(key, value)
            // Fail soon rather than after librdkafka's five minutes.
            .with_property("message.timeout.ms", "5000"),
    )
    .uid("out");
    let job = env.execute_async("outage").expect("starts");
    std::thread::sleep(Duration::from_millis(1_000));
    proxy.cut();
    std::thread::sleep(Duration::from_millis(2_000));
    proxy.restore();
    // librdkafka either gives up (the job fails and the restart strategy
    // brings it back from its checkpoint) or rides the outage out.
    let result = job.wait().expect("the job comes back with the broker");
    eprintln!("restarts across the outage: {}", result.restarts);
    let mut written: Vec<u64> = read_topic(&servers, "out")
        .expect("reads")
        .iter()
        .map(|r| r.text().parse().expect("a number"))
        .collect();
    written.sort();
    written.dedup();
    // At least once: every record, some perhaps twice. (The exactly-once
    // sink is not checked here: after a cut connection tansu was seen to
    // commit a transaction's records without its offsets, the sink's
    // markers, which Kafka applies together; see docs/design/kafka.md.)
    assert_eq!(written, (0..N).collect::<Vec<_>>());
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
struct Reading {
    sensor: String,
    value: f64,
}

#[test]
fn csv_values_both_ways_and_a_bad_one_named_by_offset_and_field() {
    let kafka = broker();
    kafka.create_topic("readings", 1).expect("topic");
    let servers = kafka.bootstrap_servers();
    let (key, value) = LocalKafka::ONE_RECORD_PER_BATCH;
    let readings = vec![
        Reading {
            sensor: "a,1".into(),
            value: 1.5,
        },
        Reading {
            sensor: "b".into(),
            value: -2.0,
        },
    ];
    let env = StreamExecutionEnvironment::new();
    env.from_collection(readings.clone()).add_sink(
        KafkaSink::with_format(&servers, "readings", Csv::new()).with_property(key, value),
    );
    env.execute("write").expect("writes");
    let env = StreamExecutionEnvironment::new();
    env.from_elements(vec!["c,warm".to_string()])
        .add_sink(KafkaSink::strings(&servers, "readings").with_property(key, value));
    env.execute("write a bad one").expect("writes");
    let csv = || Csv::new().with_columns(&["sensor", "value"]);
    let env = StreamExecutionEnvironment::new();
    env.add_source(
        KafkaSource::<Reading>::with_format(&servers, &["readings"], csv()).bounded(),
        "readings",
    )
    .add_sink(DiscardingSink);
    let err = env.execute("strict").expect_err("malformed").to_string();
    assert!(
        err.contains("readings/0 offset 2: field 2 ('value')"),
        "{err}"
    );
    let env = StreamExecutionEnvironment::new();
    let read = env
        .add_source(
            KafkaSource::with_format(&servers, &["readings"], csv())
                .bounded()
                .skip_malformed(),
            "readings",
        )
        .execute_and_collect()
        .expect("reads");
    assert_eq!(read, readings);
}

#[test]
fn an_idle_partition_stops_holding_the_watermark_back() {
    let kafka = broker();
    kafka.create_topic("half", 2).expect("topic");
    // Partition 1 stays empty.
    produce_at(
        &kafka,
        "half",
        0,
        (0..100).map(|i| (i, (i as i64 + 1) * 1_000)).collect(),
    );
    let fired = Arc::new(Mutex::new(Vec::new()));
    let run = |idleness: Option<Duration>| {
        fired.lock().expect("lock").clear();
        let env = StreamExecutionEnvironment::new();
        let mut strategy = WatermarkStrategy::for_generator(|_| Punctuated);
        if let Some(timeout) = idleness {
            strategy = strategy.with_idleness(timeout);
        }
        env.from_split_source(
            KafkaSource::strings(&kafka.bootstrap_servers(), &["half"]),
            strategy,
            "half",
        )
        .set_parallelism(1)
        .key_by(|_| 0u8)
        .window(TumblingEventTimeWindows::of(Duration::from_secs(10)))
        .process(
            |_k: &u8,
             ctx: &mut ProcessWindowContext<'_, TimeWindow>,
             _e: Elements<'_, String>,
             out: &mut Collector<'_, i64>| {
                out.collect(ctx.window().start);
                Ok(())
            },
        )
        .add_sink(CollectSink::new(Arc::clone(&fired)));
        let job = env.execute_async("idle").expect("starts");
        let until = std::time::Instant::now() + Duration::from_secs(5);
        while fired.lock().expect("lock").len() < 10 && std::time::Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        job.cancel();
        let _ = job.wait();
        fired.lock().expect("lock").len()
    };
    // The empty partition holds the watermark back: no window fires while
    // the (unbounded) job runs.
    assert_eq!(run(None), 0);
    // Idle after 300 ms, it no longer does: the ten windows up to 100 s
    // fire (the record at 100 s is the next window's).
    assert_eq!(run(Some(Duration::from_millis(300))), 10);
}
