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
pub fn read_topic(bootstrap_servers: &str, topic: &str) -> Result<Vec<TopicRecord>, String> {
    let request = Duration::from_secs(30);
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap_servers)
        .set("group.id", "weir-read-topic")
        .set("enable.auto.commit", "false")
        .set("isolation.level", "read_uncommitted")
        // Transaction markers take offsets but are never delivered: the end
        // is where the broker says a partition ends.
        .set("enable.partition.eof", "true")
        .create()
        .map_err(|e| format!("Kafka consumer for {bootstrap_servers}: {e}"))?;
    let metadata = consumer
        .fetch_metadata(Some(topic), request)
        .map_err(|e| format!("Kafka at {bootstrap_servers}: metadata of {topic}: {e}"))?;
    let mut ends = Vec::new();
    let mut assignment = TopicPartitionList::new();
    for p in metadata
        .topics()
        .iter()
        .filter(|t| t.name() == topic)
        .flat_map(|t| t.partitions())
    {
        let (low, high) = consumer
            .fetch_watermarks(topic, p.id(), request)
            .map_err(|e| format!("Kafka: offsets of {topic}/{}: {e}", p.id()))?;
        if high > low {
            ends.push((p.id(), low, high));
            assignment
                .add_partition_offset(topic, p.id(), Offset::Offset(low))
                .map_err(|e| format!("Kafka: {e}"))?;
        }
    }
    consumer
        .assign(&assignment)
        .map_err(|e| format!("Kafka: assigning {topic}: {e}"))?;
    let mut records = Vec::new();
    // (partition, next offset to read, end)
    let mut next: Vec<(i32, i64, i64)> = ends;
    let deadline = Instant::now() + Duration::from_secs(60);
    while next.iter().any(|(_, at, end)| at < end) {
        if Instant::now() > deadline {
            return Err(format!("Kafka: reading {topic} took over 60 s"));
        }
        let Some(message) = consumer.poll(Duration::from_millis(100)) else {
            continue;
        };
        let message = match message {
            Ok(message) => message,
            Err(rdkafka::error::KafkaError::PartitionEOF(partition)) => {
                if let Some(slot) = next.iter_mut().find(|(p, _, _)| *p == partition) {
                    slot.1 = slot.1.max(slot.2);
                }
                continue;
            }
            Err(e) => return Err(format!("Kafka: reading {topic}: {e}")),
        };
        let Some(slot) = next.iter_mut().find(|(p, _, _)| *p == message.partition()) else {
            continue;
        };
        if message.offset() >= slot.2 {
            continue;
        }
        slot.1 = message.offset() + 1;
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
