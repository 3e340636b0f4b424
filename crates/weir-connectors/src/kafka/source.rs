//! The Kafka source (Flink's `KafkaSource`): the partitions of the given
//! topics, or of every topic matching a pattern, split over the subtasks
//! with Flink's owner formula, read from the starting offsets or, after a
//! restore, from the checkpoint's.
//!
//! Offsets live in the checkpoint (the source of truth), in a union list
//! state every subtask receives whole on restore: each takes the offsets of
//! the partitions it owns at the new parallelism, so a job resumes at any
//! parallelism exactly where the checkpoint left each partition. When a
//! checkpoint completes, its offsets are also committed to the consumer
//! group, for lag monitoring (Flink's `commit.offsets.on.checkpoint`).
//!
//! Run with `env.from_split_source(source, strategy, name)`, each partition
//! is a split with a watermark generator of its own: a lagging partition
//! holds the watermark back, an idle one (`with_idleness`) does not. With
//! `add_parallel_source` the subtask's records share one generator.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::message::{Headers, Message};
use rdkafka::{Offset, TopicPartitionList};
use weir::functions::{
    FunctionResult, RuntimeContext, SourceContext, SourceFunction, SourceStatus,
};
use weir::prelude::{ListStateDescriptor, OperatorListState, SplitContext, SplitSourceFunction};

/// Where partitions without a checkpointed offset start (Flink's
/// `OffsetsInitializer`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartingOffsets {
    /// The oldest record kept.
    Earliest,
    /// Only records produced from now on.
    Latest,
    /// The consumer group's committed offsets; partitions the group has no
    /// offset for start as the reset strategy says.
    Committed(OffsetReset),
    /// The first record whose timestamp (ms) is at or after this one;
    /// partitions without such a record start at their end.
    Timestamp(i64),
    /// These offsets, per topic and partition; other partitions start at
    /// the earliest.
    Specific(BTreeMap<(String, i32), i64>),
}

/// Where `Committed` starts a partition the group has no offset for
/// (Flink's `OffsetResetStrategy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffsetReset {
    /// At the oldest record kept.
    Earliest,
    /// At the end.
    Latest,
    /// Nowhere: the job fails, naming the partition.
    None,
}

/// Where a bounded source stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Never,
    /// At the end each partition had when the subtask opened.
    Latest,
    /// Before the first record with a timestamp at or after this one.
    Timestamp(i64),
}

/// Which topics are read.
#[derive(Debug, Clone)]
enum Topics {
    Names(Vec<String>),
    Pattern(regex::Regex),
}

/// A record as a deserializer sees it.
pub struct KafkaRecord<'a> {
    /// Its topic.
    pub topic: &'a str,
    /// Its partition.
    pub partition: i32,
    /// Its offset.
    pub offset: i64,
    /// Its timestamp (ms), if it has one.
    pub timestamp: Option<i64>,
    /// Its key.
    pub key: Option<&'a [u8]>,
    /// Its value.
    pub value: Option<&'a [u8]>,
    headers: Option<&'a rdkafka::message::BorrowedHeaders>,
}

impl std::fmt::Debug for KafkaRecord<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KafkaRecord")
            .field("topic", &self.topic)
            .field("partition", &self.partition)
            .field("offset", &self.offset)
            .field("timestamp", &self.timestamp)
            .field("key", &self.key)
            .field("value", &self.value)
            .field("headers", &self.headers())
            .finish()
    }
}

impl KafkaRecord<'_> {
    /// Its headers, in order, as (key, value).
    pub fn headers(&self) -> Vec<(&str, Option<&[u8]>)> {
        self.headers.map_or_else(Vec::new, |headers| {
            headers.iter().map(|h| (h.key, h.value)).collect()
        })
    }
}

type Deserializer<T> = Arc<dyn Fn(&KafkaRecord<'_>) -> Result<T, String> + Send + Sync>;

/// A partition a subtask reads, and how far.
#[derive(Debug)]
struct Partition {
    topic: String,
    partition: i32,
    /// The next offset to read.
    next: i64,
    /// Bounded: where the partition ends.
    stop: Option<i64>,
    /// Started by timestamp: records before the first at or after this
    /// one are skipped (the broker's offset lookup should have skipped
    /// them already; not every broker implements it).
    skip_before: Option<i64>,
    /// Bounded by timestamp: the first record at or after this one ends
    /// the partition.
    stop_at_time: Option<i64>,
    /// Its end was reported (as a split that finished).
    reported_done: bool,
}

impl Partition {
    fn done(&self) -> bool {
        self.stop.is_some_and(|stop| self.next >= stop)
    }
}

/// The partition a subtask reads, Flink's `KafkaTopicPartitionAssigner`:
/// partitions of one topic go round robin from a start that depends on
/// the topic's (Java) hash, so topics spread over subtasks.
pub fn owner(topic: &str, partition: i32, parallelism: u32) -> u32 {
    let hash = topic.encode_utf16().fold(0i32, |h, unit| {
        h.wrapping_mul(31).wrapping_add(i32::from(unit))
    });
    let start = (hash.wrapping_mul(31) & 0x7fff_ffff) as i64 % i64::from(parallelism);
    ((start + i64::from(partition)) % i64::from(parallelism)) as u32
}

/// The Kafka source; see the module docs.
pub struct KafkaSource<T> {
    servers: String,
    topics: Topics,
    group_id: Option<String>,
    starting: StartingOffsets,
    stop: Stop,
    skip_malformed: bool,
    commit_on_checkpoint: bool,
    discovery: Duration,
    deserialize: Deserializer<T>,
    /// librdkafka properties set by the user, applied last.
    properties: Vec<(String, String)>,
    /// At most this many records a second over all subtasks.
    rate: Option<f64>,
    // Per subtask, from `open` on.
    consumer: Mutex<Option<BaseConsumer>>,
    /// The partitions this subtask owns (a few: found by a scan, without
    /// making a key per record).
    partitions: Vec<Partition>,
    /// Partitions named in the watermark diagnosis so far.
    named: usize,
    offsets: Option<OperatorListState<(String, i32, i64)>>,
    /// Offsets of checkpoints taken and not yet complete.
    taken: BTreeMap<u64, TopicPartitionList>,
    restored: BTreeMap<(String, i32), i64>,
    subtask: u32,
    parallelism: u32,
    next_discovery: Option<Instant>,
    skipped: u64,
    /// This subtask's share of `rate`, since when, and how many so far.
    pace: Option<(f64, Instant, u64)>,
}

impl<T> Clone for KafkaSource<T> {
    fn clone(&self) -> Self {
        KafkaSource {
            servers: self.servers.clone(),
            topics: self.topics.clone(),
            group_id: self.group_id.clone(),
            starting: self.starting.clone(),
            stop: self.stop,
            skip_malformed: self.skip_malformed,
            commit_on_checkpoint: self.commit_on_checkpoint,
            discovery: self.discovery,
            deserialize: Arc::clone(&self.deserialize),
            properties: self.properties.clone(),
            rate: self.rate,
            consumer: Mutex::new(None),
            partitions: Vec::new(),
            named: 0,
            offsets: None,
            taken: BTreeMap::new(),
            restored: BTreeMap::new(),
            subtask: 0,
            parallelism: 1,
            next_discovery: None,
            skipped: 0,
            pace: None,
        }
    }
}

impl KafkaSource<String> {
    /// Values of `topics` as UTF-8 strings (a value that is not UTF-8 is
    /// malformed).
    pub fn strings(bootstrap_servers: &str, topics: &[&str]) -> Self {
        KafkaSource::new(bootstrap_servers, topics, |r: &KafkaRecord<'_>| {
            String::from_utf8(r.value.unwrap_or_default().to_vec())
                .map_err(|e| format!("the value is not UTF-8: {e}"))
        })
    }
}

impl KafkaSource<Vec<u8>> {
    /// Values of `topics` as raw bytes (an empty value for a record
    /// without one).
    pub fn bytes(bootstrap_servers: &str, topics: &[&str]) -> Self {
        KafkaSource::new(bootstrap_servers, topics, |r: &KafkaRecord<'_>| {
            Ok(r.value.unwrap_or_default().to_vec())
        })
    }
}

impl<T: serde::Serialize + serde::de::DeserializeOwned + 'static> KafkaSource<T> {
    /// Values of `topics` as JSON documents of `T` (a value that is not
    /// one is malformed).
    pub fn json(bootstrap_servers: &str, topics: &[&str]) -> Self {
        KafkaSource::with_format(bootstrap_servers, topics, crate::format::JsonLines::new())
    }
}

impl<T> KafkaSource<T> {
    /// Values of `topics` in `format` (CSV with `with_columns`, JSON; a
    /// value the format cannot read is malformed).
    pub fn with_format(
        bootstrap_servers: &str,
        topics: &[&str],
        format: impl crate::format::RecordFormat<T>,
    ) -> Self {
        KafkaSource::new(bootstrap_servers, topics, move |r: &KafkaRecord<'_>| {
            format.decode(r.value.unwrap_or_default())
        })
    }
}

impl<T> KafkaSource<T> {
    /// Records of `topics` made by `deserialize`, which sees key, value,
    /// headers, partition, offset and timestamp (an `Err` is a malformed
    /// record: see [`skip_malformed`](Self::skip_malformed)).
    pub fn new(
        bootstrap_servers: &str,
        topics: &[&str],
        deserialize: impl Fn(&KafkaRecord<'_>) -> Result<T, String> + Send + Sync + 'static,
    ) -> Self {
        KafkaSource {
            servers: bootstrap_servers.to_string(),
            topics: Topics::Names(topics.iter().map(|t| t.to_string()).collect()),
            group_id: None,
            starting: StartingOffsets::Earliest,
            stop: Stop::Never,
            skip_malformed: false,
            commit_on_checkpoint: true,
            discovery: Duration::from_secs(300),
            deserialize: Arc::new(deserialize),
            properties: Vec::new(),
            rate: None,
            consumer: Mutex::new(None),
            partitions: Vec::new(),
            named: 0,
            offsets: None,
            taken: BTreeMap::new(),
            restored: BTreeMap::new(),
            subtask: 0,
            parallelism: 1,
            next_discovery: None,
            skipped: 0,
            pace: None,
        }
    }

    /// Reads every topic whose whole name matches `pattern` (a regular
    /// expression, Flink's `setTopicPattern`) instead of the named topics;
    /// topics created later are found by partition discovery.
    pub fn with_topic_pattern(mut self, pattern: &str) -> Result<Self, regex::Error> {
        self.topics = Topics::Pattern(regex::Regex::new(&format!("^(?:{pattern})$"))?);
        Ok(self)
    }

    /// Sets a librdkafka consumer property (Flink's `setProperty`).
    pub fn with_property(mut self, key: &str, value: &str) -> Self {
        self.properties.push((key.to_string(), value.to_string()));
        self
    }

    /// The consumer group (`group.id`; default `weir-<first topic>`): where
    /// offsets are committed when checkpoints complete, and where
    /// `StartingOffsets::Committed` reads them.
    pub fn with_group_id(mut self, group_id: &str) -> Self {
        self.group_id = Some(group_id.to_string());
        self
    }

    /// Where partitions start without a checkpoint (default earliest).
    pub fn with_starting_offsets(mut self, starting: StartingOffsets) -> Self {
        self.starting = starting;
        self
    }

    /// Stops at the offsets that were the latest when the job started
    /// (Flink's `setBounded(OffsetsInitializer.latest())`): a bounded job.
    pub fn bounded(mut self) -> Self {
        self.stop = Stop::Latest;
        self
    }

    /// Stops before the first record of each partition whose timestamp is
    /// at or after `timestamp_ms` (Flink's
    /// `setBounded(OffsetsInitializer.timestamp(t))`).
    pub fn bounded_by_timestamp(mut self, timestamp_ms: i64) -> Self {
        self.stop = Stop::Timestamp(timestamp_ms);
        self
    }

    /// Skips malformed records, counting them and warning about the first
    /// few, instead of failing the job (the default).
    pub fn skip_malformed(mut self) -> Self {
        self.skip_malformed = true;
        self
    }

    /// Whether completed checkpoints commit their offsets to the consumer
    /// group (default yes; Flink's `commit.offsets.on.checkpoint`).
    pub fn with_commit_offsets_on_checkpoint(mut self, commit: bool) -> Self {
        self.commit_on_checkpoint = commit;
        self
    }

    /// How often an unbounded source looks for new partitions and, with a
    /// pattern, new topics (Flink's `partition.discovery.interval.ms`,
    /// default 5 minutes; zero turns it off). New partitions start at
    /// their earliest offset.
    pub fn with_partition_discovery_interval(mut self, interval: Duration) -> Self {
        self.discovery = interval;
        self
    }

    /// Reads at most `records_per_second` over all subtasks (to watch or
    /// interrupt a job part-way; checkpoints pass between the records).
    pub fn with_rate_limit(mut self, records_per_second: f64) -> Self {
        self.rate = (records_per_second > 0.0).then_some(records_per_second);
        self
    }

    fn group(&self) -> String {
        self.group_id.clone().unwrap_or_else(|| match &self.topics {
            Topics::Names(names) => format!("weir-{}", names.first().map_or("", |t| t)),
            Topics::Pattern(pattern) => format!("weir-{}", pattern.as_str()),
        })
    }

    /// How many records the rate limit allows now.
    fn allowed(&mut self) -> u64 {
        match &mut self.pace {
            None => u64::MAX,
            Some((rate, started, emitted)) => {
                let due = (started.elapsed().as_secs_f64() * *rate) as u64 + 1;
                due.saturating_sub(*emitted)
            }
        }
    }

    fn finished(&self) -> bool {
        self.stop != Stop::Never && self.partitions.iter().all(Partition::done)
    }
}

/// How long a poll waits for a record (barriers wait at most this long).
const POLL: Duration = Duration::from_millis(20);
/// How long metadata and offset requests may take.
const REQUEST: Duration = Duration::from_secs(30);

/// Every partition of the topics `topics` names or matches.
fn discover(
    consumer: &BaseConsumer,
    servers: &str,
    topics: &Topics,
) -> FunctionResult<Vec<(String, i32)>> {
    let mut found = Vec::new();
    match topics {
        Topics::Names(names) => {
            for topic in names {
                let metadata = consumer
                    .fetch_metadata(Some(topic), REQUEST)
                    .map_err(|e| format!("Kafka at {servers}: metadata of {topic}: {e}"))?;
                let before = found.len();
                for t in metadata.topics().iter().filter(|t| t.name() == topic) {
                    found.extend(t.partitions().iter().map(|p| (topic.clone(), p.id())));
                }
                if found.len() == before {
                    return Err(
                        format!("Kafka at {servers}: topic {topic} has no partitions").into(),
                    );
                }
            }
        }
        Topics::Pattern(pattern) => {
            let metadata = consumer
                .fetch_metadata(None, REQUEST)
                .map_err(|e| format!("Kafka at {servers}: metadata: {e}"))?;
            for t in metadata.topics() {
                // Kafka's internal topics (`__consumer_offsets`) never match.
                if !t.name().starts_with("__") && pattern.is_match(t.name()) {
                    found.extend(
                        t.partitions()
                            .iter()
                            .map(|p| (t.name().to_string(), p.id())),
                    );
                }
            }
        }
    }
    found.sort();
    Ok(found)
}

fn watermarks(consumer: &BaseConsumer, topic: &str, p: i32) -> FunctionResult<(i64, i64)> {
    Ok(consumer
        .fetch_watermarks(topic, p, REQUEST)
        .map_err(|e| format!("Kafka: offsets of {topic}/{p}: {e}"))?)
}

/// The offset of the first record of `topic`/`p` at or after `timestamp`,
/// or `None` past the end.
pub(crate) fn offset_for_time(
    consumer: &BaseConsumer,
    topic: &str,
    p: i32,
    timestamp: i64,
) -> FunctionResult<Option<i64>> {
    let mut list = TopicPartitionList::new();
    list.add_partition_offset(topic, p, Offset::Offset(timestamp))
        .map_err(|e| format!("Kafka: {e}"))?;
    let found = consumer
        .offsets_for_times(list, REQUEST)
        .map_err(|e| format!("Kafka: offsets of {topic}/{p} by time: {e}"))?;
    Ok(found.elements().first().and_then(|e| match e.offset() {
        Offset::Offset(n) => Some(n),
        _ => None,
    }))
}

impl<T> KafkaSource<T> {
    /// Where `topic`/`p` starts: the restored offset, else the starting
    /// offsets (partitions found after the start: the earliest).
    fn start_offset(
        &self,
        consumer: &BaseConsumer,
        topic: &str,
        p: i32,
        initial: bool,
    ) -> FunctionResult<i64> {
        if let Some(offset) = self.restored.get(&(topic.to_string(), p)) {
            return Ok(*offset);
        }
        let (low, high) = watermarks(consumer, topic, p)?;
        if !initial {
            return Ok(low);
        }
        Ok(match &self.starting {
            StartingOffsets::Earliest => low,
            StartingOffsets::Latest => high,
            StartingOffsets::Specific(offsets) => {
                offsets.get(&(topic.to_string(), p)).copied().unwrap_or(low)
            }
            StartingOffsets::Timestamp(ts) => {
                offset_for_time(consumer, topic, p, *ts)?.unwrap_or(high)
            }
            StartingOffsets::Committed(reset) => {
                let mut list = TopicPartitionList::new();
                list.add_partition(topic, p);
                let committed = consumer
                    .committed_offsets(list, REQUEST)
                    .map_err(|e| format!("Kafka: committed offset of {topic}/{p}: {e}"))?;
                let offset = committed.elements().first().and_then(|e| match e.offset() {
                    Offset::Offset(n) => Some(n),
                    _ => None,
                });
                match (offset, reset) {
                    (Some(offset), _) => offset,
                    (None, OffsetReset::Earliest) => low,
                    (None, OffsetReset::Latest) => high,
                    (None, OffsetReset::None) => {
                        return Err(format!(
                            "Kafka: the group {} has no committed offset for {topic}/{p} \
                             (and the reset strategy is none)",
                            self.group()
                        )
                        .into())
                    }
                }
            }
        })
    }

    /// Where a bounded source stops reading `topic`/`p` at the latest (one
    /// bounded by timestamp stops earlier, at the first record at or after
    /// it).
    fn stop_offset(
        &self,
        consumer: &BaseConsumer,
        topic: &str,
        p: i32,
    ) -> FunctionResult<Option<i64>> {
        Ok(match self.stop {
            Stop::Never => None,
            Stop::Latest | Stop::Timestamp(_) => Some(watermarks(consumer, topic, p)?.1),
        })
    }

    /// Takes the partitions of `found` this subtask owns and does not read
    /// yet, and assigns all it reads to the consumer, each at its next
    /// offset.
    fn add_partitions(
        &mut self,
        consumer: &BaseConsumer,
        found: &[(String, i32)],
        initial: bool,
    ) -> FunctionResult<usize> {
        let known: BTreeSet<(&str, i32)> = self
            .partitions
            .iter()
            .map(|p| (p.topic.as_str(), p.partition))
            .collect();
        let mut new = Vec::new();
        for (topic, p) in found {
            if owner(topic, *p, self.parallelism) == self.subtask
                && !known.contains(&(topic.as_str(), *p))
            {
                let restored = self.restored.contains_key(&(topic.clone(), *p));
                new.push(Partition {
                    topic: topic.clone(),
                    partition: *p,
                    next: self.start_offset(consumer, topic, *p, initial)?,
                    stop: self.stop_offset(consumer, topic, *p)?,
                    skip_before: match self.starting {
                        StartingOffsets::Timestamp(ts) if initial && !restored => Some(ts),
                        _ => None,
                    },
                    stop_at_time: match self.stop {
                        Stop::Timestamp(ts) => Some(ts),
                        _ => None,
                    },
                    reported_done: false,
                });
            }
        }
        let added = new.len();
        if added > 0 || initial {
            self.partitions.extend(new);
            let mut assignment = TopicPartitionList::new();
            for p in &self.partitions {
                assignment
                    .add_partition_offset(&p.topic, p.partition, Offset::Offset(p.next))
                    .map_err(|e| format!("Kafka: assigning {}/{}: {e}", p.topic, p.partition))?;
            }
            consumer
                .assign(&assignment)
                .map_err(|e| format!("Kafka: assigning partitions: {e}"))?;
        }
        Ok(added)
    }

    fn open_source(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.subtask = ctx.subtask_index;
        self.parallelism = ctx.parallelism.max(1);
        let mut config = ClientConfig::new();
        config
            .set("bootstrap.servers", &self.servers)
            .set("group.id", self.group())
            .set("enable.auto.commit", "false")
            // Bounded: the end of a partition is reported (see
            // `poll_records`).
            .set(
                "enable.partition.eof",
                if self.stop == Stop::Never {
                    "false"
                } else {
                    "true"
                },
            );
        for (key, value) in &self.properties {
            config.set(key, value);
        }
        let consumer: BaseConsumer = config
            .create()
            .map_err(|e| format!("Kafka consumer for {}: {e}", self.servers))?;
        let offsets =
            ctx.operator_state.get_union_list_state(
                &ListStateDescriptor::<(String, i32, i64)>::new("\u{1}weir/kafka-offsets"),
            )?;
        self.restored = offsets
            .get()?
            .into_iter()
            .map(|(t, p, o)| ((t, p), o))
            .collect();
        let found = discover(&consumer, &self.servers, &self.topics)?;
        self.add_partitions(&consumer, &found, true)?;
        let all = found.len();
        *crate::unshared(&mut self.consumer) = Some(consumer);
        self.offsets = Some(offsets);
        // Each subtask's share of the rate is its share of the partitions.
        let share = self.partitions.len() as f64 / all.max(1) as f64;
        self.pace = self.rate.map(|rate| (rate * share, Instant::now(), 0));
        if self.stop == Stop::Never && !self.discovery.is_zero() {
            self.next_discovery = Some(Instant::now() + self.discovery);
        }
        Ok(())
    }

    /// Looks for new partitions (and topics) when discovery is due.
    fn rediscover(&mut self) -> FunctionResult {
        if self.next_discovery.is_none_or(|due| Instant::now() < due) {
            return Ok(());
        }
        self.next_discovery = Some(Instant::now() + self.discovery);
        let Some(consumer) = crate::unshared(&mut self.consumer).take() else {
            return Err("the Kafka source was not opened".into());
        };
        let added = discover(&consumer, &self.servers, &self.topics)
            .and_then(|found| self.add_partitions(&consumer, &found, false));
        *crate::unshared(&mut self.consumer) = Some(consumer);
        if let Ok(n) = &added {
            if *n > 0 {
                tracing::info!(
                    "Kafka source subtask {}: {n} new partition(s) found",
                    self.subtask
                );
            }
        }
        added.map(|_| ())
    }

    /// Reads up to `limit` records, giving each to `emit` with the index
    /// of its partition and its timestamp; partitions that reached their
    /// end go to `done`.
    fn poll_records(
        &mut self,
        limit: usize,
        mut emit: impl FnMut(usize, T, Option<i64>),
        done: &mut Vec<usize>,
    ) -> FunctionResult<SourceStatus> {
        if self.finished() {
            return Ok(SourceStatus::Finished);
        }
        self.rediscover()?;
        if self.partitions.is_empty() {
            std::thread::sleep(POLL);
            return Ok(SourceStatus::More);
        }
        let mut allowed = self.allowed();
        if allowed == 0 {
            let wait = self.pace.map_or(0.0, |(rate, _, _)| 1.0 / rate.max(1.0));
            std::thread::sleep(Duration::from_secs_f64(wait).min(POLL));
            return Ok(SourceStatus::More);
        }
        let deserialize = Arc::clone(&self.deserialize);
        let mut emitted = 0;
        while emitted < limit && allowed > 0 {
            // The field alone: the message borrows the consumer while the
            // other fields change.
            let consumer = crate::unshared(&mut self.consumer)
                .as_mut()
                .ok_or("the Kafka source was not opened")?;
            let Some(polled) = consumer.poll(POLL) else {
                break;
            };
            let message = match polled {
                Err(rdkafka::error::KafkaError::PartitionEOF(_)) => {
                    // At the end of a partition; the consumer's position
                    // is past transaction markers, which take offsets but
                    // are never delivered: a bounded partition ending with
                    // one is done.
                    let positions = consumer
                        .position()
                        .map_err(|e| format!("Kafka: positions: {e}"))?;
                    for p in &mut self.partitions {
                        let Some(stop) = p.stop else { continue };
                        if let Some(Offset::Offset(at)) = positions
                            .find_partition(&p.topic, p.partition)
                            .map(|e| e.offset())
                        {
                            p.next = p.next.max(at.min(stop));
                        }
                    }
                    if self.finished() {
                        break;
                    }
                    continue;
                }
                polled => polled.map_err(|e| format!("Kafka at {}: {e}", self.servers))?,
            };
            let offset = message.offset();
            let Some(at) = self
                .partitions
                .iter()
                .position(|p| p.partition == message.partition() && p.topic == message.topic())
            else {
                return Err(format!(
                    "Kafka sent {}/{}, which is not assigned here",
                    message.topic(),
                    message.partition()
                )
                .into());
            };
            let timestamp = message.timestamp().to_millis();
            let partition = &mut self.partitions[at];
            if let Some(from) = partition.skip_before {
                if timestamp.is_some_and(|ts| ts < from) {
                    partition.next = offset + 1;
                    continue;
                }
                partition.skip_before = None;
            }
            if partition
                .stop_at_time
                .is_some_and(|until| timestamp.is_some_and(|ts| ts >= until))
            {
                partition.stop = Some(partition.stop.map_or(offset, |stop| stop.min(offset)));
            }
            if partition.stop.is_some_and(|stop| offset >= stop) {
                // Past the bounded end of its partition.
                partition.next = offset;
                if self.finished() {
                    break;
                }
                continue;
            }
            let record = KafkaRecord {
                topic: message.topic(),
                partition: message.partition(),
                offset,
                timestamp,
                key: message.key(),
                value: message.payload(),
                headers: message.headers(),
            };
            match deserialize(&record) {
                Ok(value) => {
                    emit(at, value, record.timestamp);
                    emitted += 1;
                }
                Err(why) if self.skip_malformed => {
                    self.skipped += 1;
                    if self.skipped <= 10 {
                        tracing::warn!(
                            "skipping the malformed record at {}/{} offset \
                             {offset}: {why}",
                            record.topic,
                            record.partition
                        );
                    }
                }
                Err(why) => {
                    return Err(format!(
                        "malformed record at {}/{} offset {offset}: {why}",
                        record.topic, record.partition
                    )
                    .into())
                }
            }
            self.partitions[at].next = offset + 1;
            allowed -= 1;
            if let Some((_, _, emitted)) = &mut self.pace {
                *emitted += 1;
            }
        }
        for (index, p) in self.partitions.iter_mut().enumerate() {
            if p.done() && !p.reported_done {
                p.reported_done = true;
                done.push(index);
            }
        }
        Ok(if self.finished() {
            SourceStatus::Finished
        } else {
            SourceStatus::More
        })
    }

    /// The offsets of this subtask's partitions go into the checkpoint.
    fn snapshot_offsets(&mut self, checkpoint_id: u64) -> FunctionResult<Option<Vec<u8>>> {
        if let Some(state) = &self.offsets {
            state.update(
                self.partitions
                    .iter()
                    .map(|p| (p.topic.clone(), p.partition, p.next))
                    .collect(),
            )?;
        }
        if self.commit_on_checkpoint && checkpoint_id != weir::sink::FINAL_SNAPSHOT {
            let mut list = TopicPartitionList::new();
            for p in &self.partitions {
                list.add_partition_offset(&p.topic, p.partition, Offset::Offset(p.next))
                    .map_err(|e| format!("Kafka: {e}"))?;
            }
            self.taken.insert(checkpoint_id, list);
        }
        Ok(None)
    }

    /// Commits the completed checkpoint's offsets to the consumer group,
    /// without waiting: they are for monitoring, the checkpoint holds the
    /// truth (a failed commit is reported by librdkafka and changes
    /// nothing).
    fn commit_offsets(&mut self, checkpoint_id: u64) -> FunctionResult {
        let Some(list) = self.taken.remove(&checkpoint_id) else {
            return Ok(());
        };
        self.taken.retain(|id, _| *id > checkpoint_id);
        if list.count() == 0 {
            return Ok(());
        }
        if let Some(consumer) = crate::unshared(&mut self.consumer).as_ref() {
            if let Err(e) = consumer.commit(&list, CommitMode::Async) {
                tracing::warn!(
                    "Kafka: committing the offsets of checkpoint \
                     {checkpoint_id} to group {}: {e}",
                    self.group()
                );
            }
        }
        Ok(())
    }
}

impl<T: Send + 'static> SourceFunction<T> for KafkaSource<T> {
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.open_source(ctx)
    }

    fn poll_next(&mut self, ctx: &mut SourceContext<'_, T>) -> FunctionResult<SourceStatus> {
        let mut done = Vec::new();
        let limit = ctx.remaining().max(1);
        let status = self.poll_records(
            limit,
            |_, value, timestamp| match timestamp {
                Some(ts) => ctx.collect_with_timestamp(value, ts),
                None => ctx.collect(value),
            },
            &mut done,
        )?;
        if self.partitions.is_empty() {
            // No partition of ours: nothing holds event time back.
            ctx.mark_idle();
        }
        Ok(status)
    }

    fn snapshot_position(&mut self, checkpoint_id: u64) -> FunctionResult<Option<Vec<u8>>> {
        self.snapshot_offsets(checkpoint_id)
    }

    fn notify_checkpoint_complete(&mut self, checkpoint_id: u64) -> FunctionResult {
        self.commit_offsets(checkpoint_id)
    }

    fn close(&mut self) -> FunctionResult {
        *crate::unshared(&mut self.consumer) = None;
        Ok(())
    }
}

/// Each partition a split, with a watermark generator of its own (use
/// with `from_split_source`).
impl<T: Send + 'static> SplitSourceFunction<T> for KafkaSource<T> {
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.open_source(ctx)
    }

    fn poll_next(&mut self, ctx: &mut SplitContext<'_, T>) -> FunctionResult<SourceStatus> {
        let mut done = Vec::new();
        let limit = ctx.remaining().max(1);
        let status = self.poll_records(
            limit,
            |split, value, timestamp| match timestamp {
                Some(ts) => ctx.collect_with_timestamp(split, value, ts),
                None => ctx.collect(split, value),
            },
            &mut done,
        )?;
        ctx.declare_splits(self.partitions.len());
        for (split, p) in self.partitions.iter().enumerate().skip(self.named) {
            ctx.name_split(split, format!("{}-{}", p.topic, p.partition));
        }
        self.named = self.partitions.len();
        for split in done {
            ctx.finish_split(split);
        }
        if self.partitions.is_empty() {
            ctx.mark_no_splits();
        }
        Ok(status)
    }

    fn snapshot_position(&mut self, checkpoint_id: u64) -> FunctionResult<Option<Vec<u8>>> {
        self.snapshot_offsets(checkpoint_id)
    }

    fn notify_checkpoint_complete(&mut self, checkpoint_id: u64) -> FunctionResult {
        self.commit_offsets(checkpoint_id)
    }

    fn close(&mut self) -> FunctionResult {
        *crate::unshared(&mut self.consumer) = None;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::owner;

    #[test]
    fn partitions_spread_as_flink_assigns_them() {
        // Java: "orders".hashCode() = -1008770331; (h * 31) & 0x7fffffff.
        let start = ((-1_008_770_331i32).wrapping_mul(31) & 0x7fff_ffff) as i64 % 3;
        for p in 0..6 {
            assert_eq!(i64::from(owner("orders", p, 3)), (start + i64::from(p)) % 3);
        }
        // Consecutive partitions go to consecutive subtasks.
        let owners: Vec<u32> = (0..4).map(|p| owner("t", p, 4)).collect();
        let mut sorted = owners.clone();
        sorted.sort();
        assert_eq!(sorted, vec![0, 1, 2, 3]);
    }
}
