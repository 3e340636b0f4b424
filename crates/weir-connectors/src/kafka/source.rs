//! The Kafka source (Flink's `KafkaSource`): the partitions of the given
//! topics, split over the subtasks with Flink's owner formula, read from
//! the starting offsets or, after a restore, from the checkpoint's.
//!
//! Offsets live in the checkpoint (the source of truth), in a union list
//! state every subtask receives whole on restore: each takes the offsets of
//! the partitions it owns at the new parallelism, so a job resumes at any
//! parallelism exactly where the checkpoint left each partition.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};
use weir::functions::{
    FunctionResult, RuntimeContext, SourceContext, SourceFunction, SourceStatus,
};
use weir::prelude::{ListStateDescriptor, OperatorListState};

/// Where partitions without a checkpointed offset start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartingOffsets {
    /// The oldest record kept.
    Earliest,
    /// Only records produced from now on.
    Latest,
}

/// A record as a deserializer sees it.
#[derive(Debug)]
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
    topics: Vec<String>,
    group_id: Option<String>,
    starting: StartingOffsets,
    bounded: bool,
    skip_malformed: bool,
    deserialize: Deserializer<T>,
    // Per subtask, from `open` on.
    consumer: Mutex<Option<BaseConsumer>>,
    /// The partitions this subtask owns (a few: found by a scan, without
    /// making a key per record).
    partitions: Vec<Partition>,
    offsets: Option<OperatorListState<(String, i32, i64)>>,
    skipped: u64,
    /// librdkafka properties set by the user, applied last.
    properties: Vec<(String, String)>,
}

impl<T> Clone for KafkaSource<T> {
    fn clone(&self) -> Self {
        KafkaSource {
            servers: self.servers.clone(),
            topics: self.topics.clone(),
            group_id: self.group_id.clone(),
            starting: self.starting,
            bounded: self.bounded,
            skip_malformed: self.skip_malformed,
            deserialize: Arc::clone(&self.deserialize),
            consumer: Mutex::new(None),
            partitions: Vec::new(),
            offsets: None,
            skipped: 0,
            properties: self.properties.clone(),
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

impl<T> KafkaSource<T> {
    /// Records of `topics` made by `deserialize` (an `Err` is a malformed
    /// record: see [`skip_malformed`](Self::skip_malformed)).
    pub fn new(
        bootstrap_servers: &str,
        topics: &[&str],
        deserialize: impl Fn(&KafkaRecord<'_>) -> Result<T, String> + Send + Sync + 'static,
    ) -> Self {
        KafkaSource {
            servers: bootstrap_servers.to_string(),
            topics: topics.iter().map(|t| t.to_string()).collect(),
            group_id: None,
            starting: StartingOffsets::Earliest,
            bounded: false,
            skip_malformed: false,
            deserialize: Arc::new(deserialize),
            consumer: Mutex::new(None),
            partitions: Vec::new(),
            offsets: None,
            skipped: 0,
            properties: Vec::new(),
        }
    }

    /// Sets a librdkafka consumer property (Flink's `setProperty`).
    pub fn with_property(mut self, key: &str, value: &str) -> Self {
        self.properties.push((key.to_string(), value.to_string()));
        self
    }

    /// The consumer group (`group.id`; default `weir-<first topic>`).
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
        self.bounded = true;
        self
    }

    /// Skips malformed records, counting them and warning about the first
    /// few, instead of failing the job (the default).
    pub fn skip_malformed(mut self) -> Self {
        self.skip_malformed = true;
        self
    }

    fn finished(&self) -> bool {
        self.bounded && self.partitions.iter().all(Partition::done)
    }
}

/// How long a poll waits for a record (barriers wait at most this long).
const POLL: Duration = Duration::from_millis(20);
/// How long metadata and offset requests may take.
const REQUEST: Duration = Duration::from_secs(30);

impl<T: Send + 'static> SourceFunction<T> for KafkaSource<T> {
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        let group = self
            .group_id
            .clone()
            .unwrap_or_else(|| format!("weir-{}", self.topics.first().map_or("", |t| t)));
        let mut config = ClientConfig::new();
        config
            .set("bootstrap.servers", &self.servers)
            .set("group.id", &group)
            .set("enable.auto.commit", "false")
            .set("enable.partition.eof", "false");
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
        let restored: BTreeMap<(String, i32), i64> = offsets
            .get()?
            .into_iter()
            .map(|(t, p, o)| ((t, p), o))
            .collect();
        let mut assignment = TopicPartitionList::new();
        for topic in &self.topics {
            let metadata = consumer
                .fetch_metadata(Some(topic), REQUEST)
                .map_err(|e| format!("Kafka at {}: metadata of {topic}: {e}", self.servers))?;
            let partitions: Vec<i32> = metadata
                .topics()
                .iter()
                .filter(|t| t.name() == topic)
                .flat_map(|t| t.partitions().iter().map(|p| p.id()))
                .collect();
            if partitions.is_empty() {
                return Err(
                    format!("Kafka at {}: topic {topic} has no partitions", self.servers).into(),
                );
            }
            for p in partitions {
                if owner(topic, p, ctx.parallelism) != ctx.subtask_index {
                    continue;
                }
                let key = (topic.clone(), p);
                let (low, high) = consumer
                    .fetch_watermarks(topic, p, REQUEST)
                    .map_err(|e| format!("Kafka: offsets of {topic}/{p}: {e}"))?;
                let start = match restored.get(&key) {
                    Some(offset) => *offset,
                    None => match self.starting {
                        StartingOffsets::Earliest => low,
                        StartingOffsets::Latest => high,
                    },
                };
                assignment
                    .add_partition_offset(topic, p, Offset::Offset(start))
                    .map_err(|e| format!("Kafka: assigning {topic}/{p}: {e}"))?;
                self.partitions.push(Partition {
                    topic: topic.clone(),
                    partition: p,
                    next: start,
                    stop: self.bounded.then_some(high),
                });
            }
        }
        consumer
            .assign(&assignment)
            .map_err(|e| format!("Kafka: assigning partitions: {e}"))?;
        *crate::unshared(&mut self.consumer) = Some(consumer);
        self.offsets = Some(offsets);
        Ok(())
    }

    fn poll_next(&mut self, ctx: &mut SourceContext<'_, T>) -> FunctionResult<SourceStatus> {
        if self.finished() {
            return Ok(SourceStatus::Finished);
        }
        if self.partitions.is_empty() {
            // No partition of ours: nothing holds event time back.
            ctx.mark_idle();
            std::thread::sleep(POLL);
            return Ok(SourceStatus::More);
        }
        let deserialize = Arc::clone(&self.deserialize);
        while !ctx.is_full() {
            // The field alone: the message borrows the consumer while the
            // other fields change.
            let consumer = crate::unshared(&mut self.consumer)
                .as_mut()
                .ok_or("the Kafka source was not opened")?;
            let Some(polled) = consumer.poll(POLL) else {
                break;
            };
            let message = polled.map_err(|e| format!("Kafka: {e}"))?;
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
            if self.partitions[at].stop.is_some_and(|stop| offset >= stop) {
                // Past the bounded end of its partition.
                self.partitions[at].next = offset;
                if self.finished() {
                    break;
                }
                continue;
            }
            let record = KafkaRecord {
                topic: message.topic(),
                partition: message.partition(),
                offset,
                timestamp: message.timestamp().to_millis(),
                key: message.key(),
                value: message.payload(),
            };
            match deserialize(&record) {
                Ok(value) => match record.timestamp {
                    Some(ts) => ctx.collect_with_timestamp(value, ts),
                    None => ctx.collect(value),
                },
                Err(why) if self.skip_malformed => {
                    self.skipped += 1;
                    if self.skipped <= 10 {
                        eprintln!(
                            "weir: warning: skipping the malformed record at {}/{} offset \
                             {offset}: {why}",
                            record.topic, record.partition
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
        }
        Ok(if self.finished() {
            SourceStatus::Finished
        } else {
            SourceStatus::More
        })
    }

    /// The offsets of this subtask's partitions go into the checkpoint.
    fn snapshot_position(&mut self, _checkpoint_id: u64) -> FunctionResult<Option<Vec<u8>>> {
        if let Some(state) = &self.offsets {
            state.update(
                self.partitions
                    .iter()
                    .map(|p| (p.topic.clone(), p.partition, p.next))
                    .collect(),
            )?;
        }
        Ok(None)
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
