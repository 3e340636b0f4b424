//! Reading back what sinks wrote: every record of a topic up to its end at
//! the time of the call, and, for the exactly-once sink with a commit log,
//! only the records of committed transactions — what a `read_committed`
//! reader sees on a broker that isolates transactions, decided from the
//! sink's own log for brokers that do not.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::{Headers, Message};
use rdkafka::{Offset, TopicPartitionList};

use super::sink::TRANSACTION_HEADER;
use super::source::offset_for_time;

/// A record as read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicRecord {
    /// Its partition.
    pub partition: i32,
    /// Its offset.
    pub offset: i64,
    /// Its key.
    pub key: Option<Vec<u8>>,
    /// Its value.
    pub value: Vec<u8>,
    /// Its `weir.transaction` header, if it has one:
    /// `<transactional id prefix>:<subtask>:<number>`.
    pub transaction: Option<String>,
}

impl TopicRecord {
    /// The value as text (lossy).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.value).into_owned()
    }
}

/// Every record of `topic` (all partitions, in partition and offset
/// order) up to the end each partition had when called.
///
/// The broker's watermarks are only a floor for where each partition
/// ends: tansu has been seen to report a low watermark of 1 for a
/// partition whose record 0 it serves, and a high watermark one short of
/// the records a concurrent producer appended, which made a reader that
/// trusted them drop a partition's first or last record. So every
/// partition is read from offset 0 (or the earliest the broker still has)
/// until the broker says it has nothing more (end of partition) at or past
/// the reported end, and a short quiet spell brings nothing new.
pub fn read_topic(bootstrap_servers: &str, topic: &str) -> Result<Vec<TopicRecord>, String> {
    read_topic_since(bootstrap_servers, topic, None)
}

/// As [`read_topic`], from the first record of each partition whose
/// timestamp is at or after `since_ms` (milliseconds since the epoch), or
/// from the start without it.
pub(crate) fn read_topic_since(
    bootstrap_servers: &str,
    topic: &str,
    since_ms: Option<i64>,
) -> Result<Vec<TopicRecord>, String> {
    let request = Duration::from_secs(30);
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap_servers)
        .set("group.id", "weir-read-topic")
        .set("enable.auto.commit", "false")
        .set("isolation.level", "read_uncommitted")
        // Transaction markers take offsets but are never delivered: the end
        // is where the broker says a partition ends.
        .set("enable.partition.eof", "true")
        // Offset 0 is gone from a topic whose old records were deleted.
        .set("auto.offset.reset", "earliest")
        .create()
        .map_err(|e| format!("Kafka consumer for {bootstrap_servers}: {e}"))?;
    let metadata = consumer
        .fetch_metadata(Some(topic), request)
        .map_err(|e| format!("Kafka at {bootstrap_servers}: metadata of {topic}: {e}"))?;
    let mut assignment = TopicPartitionList::new();
    let mut partitions = Vec::new();
    for p in metadata
        .topics()
        .iter()
        .filter(|t| t.name() == topic)
        .flat_map(|t| t.partitions())
    {
        let (_, high) = consumer
            .fetch_watermarks(topic, p.id(), request)
            .map_err(|e| format!("Kafka: offsets of {topic}/{}: {e}", p.id()))?;
        let from = match since_ms {
            None => 0,
            // No record that late: nothing to read (but what comes).
            Some(ms) => offset_for_time(&consumer, topic, p.id(), ms)
                .map_err(|e| e.to_string())?
                .unwrap_or(high),
        };
        partitions.push(Reading {
            partition: p.id(),
            next: from,
            reported_end: high,
            // Nothing reported to read: the quiet spell is enough (an end
            // of partition may never be signalled for an empty one).
            at_end: from >= high,
        });
        assignment
            .add_partition_offset(topic, p.id(), Offset::Offset(from))
            .map_err(|e| format!("Kafka: {e}"))?;
    }
    consumer
        .assign(&assignment)
        .map_err(|e| format!("Kafka: assigning {topic}: {e}"))?;
    let mut records = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut quiet_since: Option<Instant> = None;
    loop {
        if partitions.iter().all(|r| r.at_end) {
            let since = *quiet_since.get_or_insert_with(Instant::now);
            if since.elapsed() >= QUIET {
                break;
            }
        }
        if Instant::now() > deadline {
            return Err(format!("Kafka: reading {topic} took over 60 s"));
        }
        let Some(message) = consumer.poll(Duration::from_millis(50)) else {
            continue;
        };
        let message = match message {
            Ok(message) => message,
            Err(rdkafka::error::KafkaError::PartitionEOF(partition)) => {
                // Past the reported end (transaction markers take offsets
                // but are never delivered, so the position tells).
                let position = consumer
                    .position()
                    .ok()
                    .and_then(|list| {
                        list.find_partition(topic, partition)
                            .and_then(|p| p.offset().to_raw())
                    })
                    .unwrap_or(0);
                if let Some(reading) = partitions.iter_mut().find(|r| r.partition == partition) {
                    reading.at_end = reading.next.max(position) >= reading.reported_end;
                }
                continue;
            }
            Err(e) => return Err(format!("Kafka: reading {topic}: {e}")),
        };
        let Some(reading) = partitions
            .iter_mut()
            .find(|r| r.partition == message.partition())
        else {
            continue;
        };
        if message.offset() < reading.next {
            continue;
        }
        reading.next = message.offset() + 1;
        reading.at_end = false;
        quiet_since = None;
        let transaction = message.headers().and_then(|headers| {
            headers
                .iter()
                .find(|h| h.key == TRANSACTION_HEADER)
                .and_then(|h| Some(String::from_utf8_lossy(h.value?).into_owned()))
        });
        records.push(TopicRecord {
            partition: message.partition(),
            offset: message.offset(),
            key: message.key().map(<[u8]>::to_vec),
            value: message.payload().unwrap_or_default().to_vec(),
            transaction,
        });
    }
    records.sort_by_key(|r| (r.partition, r.offset));
    Ok(records)
}

/// How long a reader that reached every partition's end waits for records
/// the broker's watermarks did not count.
const QUIET: Duration = Duration::from_millis(300);

/// Where [`read_topic`] is in one partition.
struct Reading {
    partition: i32,
    /// The next offset to take.
    next: i64,
    /// The high watermark the broker reported before reading.
    reported_end: i64,
    /// The broker said it has nothing after what was read, which is at
    /// or past the reported end.
    at_end: bool,
}

/// The records of `topic` whose transaction the commit log `commit_log`
/// names (see `KafkaSink::with_commit_log`).
pub fn read_committed(
    bootstrap_servers: &str,
    topic: &str,
    commit_log: &str,
) -> Result<Vec<TopicRecord>, String> {
    let committed: BTreeSet<String> = read_topic(bootstrap_servers, commit_log)?
        .iter()
        .map(TopicRecord::text)
        .collect();
    Ok(read_topic(bootstrap_servers, topic)?
        .into_iter()
        .filter(|r| {
            r.transaction
                .as_ref()
                .is_some_and(|t| committed.contains(t))
        })
        .collect())
}
