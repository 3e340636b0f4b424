//! The Kafka sink (Flink's `KafkaSink`): records to a topic fixed or chosen
//! per record, keys and values from a serializer, partitions from Kafka's
//! default partitioner or the user's, a record's event time as its Kafka
//! timestamp (as Flink writes it), with one of three delivery guarantees:
//!
//! - `NONE`: produced as they come; a failure may lose what was in flight.
//! - `AT_LEAST_ONCE`: every checkpoint barrier flushes the producer and
//!   waits for the broker's acknowledgements before the barrier is
//!   acknowledged; a record the broker refused fails the job.
//! - `EXACTLY_ONCE`: a Kafka transaction per checkpoint and subtask,
//!   committed when the checkpoint completes (see [`super::transactional`]).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rdkafka::config::ClientConfig;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{
    BaseProducer, BaseRecord, DeliveryResult, NoCustomPartitioner, Producer, ProducerContext,
};
use rdkafka::ClientContext;
use serde::{Deserialize, Serialize};
use weir::functions::{FunctionResult, RuntimeContext, SinkContext, SinkFunction};
use weir::sink::TwoPhaseCommitSink;

use super::transactional::KafkaTransactions;

/// What the sink promises (Flink's `DeliveryGuarantee`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeliveryGuarantee {
    /// Produced as they come; a failure may lose what was in flight.
    None,
    /// Flushed and acknowledged on every barrier: nothing lost, records
    /// after the restored checkpoint produced again.
    AtLeastOnce,
    /// A transaction per checkpoint, committed when it completes: readers
    /// with `isolation.level=read_committed` see each record once. Needs a
    /// transactional id prefix.
    ExactlyOnce,
}

/// A record's key and value as bytes (no value: a tombstone), or why it
/// has none.
type Serializer<T> =
    Arc<dyn Fn(&T) -> Result<(Option<Vec<u8>>, Option<Vec<u8>>), String> + Send + Sync>;
/// A record's topic, when it is chosen per record.
type TopicSelector<T> = Arc<dyn Fn(&T) -> String + Send + Sync>;
/// A record's partition, when the user chooses it (`None`: Kafka's
/// default partitioner).
type Partitioner<T> = Arc<dyn Fn(&T) -> Option<i32> + Send + Sync>;

/// A record as the sink produces it (and, exactly-once, keeps until its
/// transaction is committed).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Encoded {
    /// `None`: the sink's topic.
    pub topic: Option<String>,
    pub partition: Option<i32>,
    /// The record's event time (ms), as the Kafka timestamp.
    pub timestamp: Option<i64>,
    pub key: Option<Vec<u8>>,
    pub value: Vec<u8>,
    /// A record without a value (a compacted topic's delete).
    #[serde(default)]
    pub tombstone: bool,
}

/// How records become Kafka records: everything of a sink but its
/// producers, shared by its subtasks.
pub(crate) struct Encoder<T> {
    pub servers: String,
    pub topic: String,
    serialize: Serializer<T>,
    select_topic: Option<TopicSelector<T>>,
    partitioner: Option<Partitioner<T>>,
    /// librdkafka properties set by the user, applied last.
    pub properties: Vec<(String, String)>,
}

impl<T> Encoder<T> {
    pub fn new(
        servers: &str,
        topic: &str,
        serialize: impl Fn(&T) -> (Option<Vec<u8>>, Vec<u8>) + Send + Sync + 'static,
    ) -> Self {
        Self::fallible(servers, topic, move |v| {
            let (key, value) = serialize(v);
            Ok((key, Some(value)))
        })
    }

    pub fn fallible(
        servers: &str,
        topic: &str,
        serialize: impl Fn(&T) -> Result<(Option<Vec<u8>>, Option<Vec<u8>>), String>
            + Send
            + Sync
            + 'static,
    ) -> Self {
        Encoder {
            servers: servers.to_string(),
            topic: topic.to_string(),
            serialize: Arc::new(serialize),
            select_topic: None,
            partitioner: None,
            properties: Vec::new(),
        }
    }

    pub fn encode(&self, value: &T, timestamp: Option<i64>) -> Result<Encoded, String> {
        let (key, payload) =
            (self.serialize)(value).map_err(|why| format!("a record for {}: {why}", self.topic))?;
        Ok(Encoded {
            topic: self.select_topic.as_ref().map(|select| select(value)),
            partition: self.partitioner.as_ref().and_then(|p| p(value)),
            timestamp,
            key,
            tombstone: payload.is_none(),
            value: payload.unwrap_or_default(),
        })
    }

    /// A producer configuration: the servers, then `extra`, then the
    /// user's properties.
    pub fn config(&self, extra: &[(&str, &str)]) -> ClientConfig {
        let mut config = ClientConfig::new();
        config
            .set("bootstrap.servers", &self.servers)
            .set("linger.ms", "5");
        for (key, value) in extra {
            config.set(*key, *value);
        }
        for (key, value) in &self.properties {
            config.set(key, value);
        }
        config
    }

    /// Produces `record`, serving acknowledgements while librdkafka's local
    /// queue is full.
    pub fn send(
        &self,
        producer: &BaseProducer<Deliveries>,
        record: &Encoded,
        headers: Option<&OwnedHeaders>,
    ) -> FunctionResult {
        let topic = record.topic.as_deref().unwrap_or(&self.topic);
        let mut message: BaseRecord<'_, [u8], [u8], ()> = BaseRecord::to(topic);
        if !record.tombstone {
            message = message.payload(&record.value[..]);
        }
        if let Some(key) = &record.key {
            message = message.key(&key[..]);
        }
        if let Some(partition) = record.partition {
            message = message.partition(partition);
        }
        if let Some(timestamp) = record.timestamp {
            message = message.timestamp(timestamp);
        }
        if let Some(headers) = headers {
            message = message.headers(headers.clone());
        }
        loop {
            match producer.send(message) {
                Ok(()) => break,
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back)) => {
                    producer.poll(Duration::from_millis(50));
                    message = back;
                }
                Err((e, _)) => {
                    return Err(
                        format!("Kafka at {}: producing to {topic}: {e}", self.servers).into(),
                    )
                }
            }
        }
        producer.poll(Duration::ZERO);
        Ok(())
    }
}

/// The name of a transaction in the commit log and in its records' headers:
/// `<transactional id prefix>:<subtask>:<number>`.
pub(crate) fn transaction_name(prefix: &str, subtask: u32, instance: i64) -> String {
    format!("{prefix}:{subtask}:{instance}")
}

/// A header naming the transaction a record was written in.
pub(crate) fn transaction_header(name: &str) -> OwnedHeaders {
    let text = name;
    OwnedHeaders::new().insert(Header {
        key: TRANSACTION_HEADER,
        value: Some(text.as_bytes()),
    })
}

/// The header that names a record's transaction when the sink keeps a
/// commit log (see [`KafkaSink::with_commit_log`]).
pub const TRANSACTION_HEADER: &str = "weir.transaction";

/// Records the first delivery the broker refused.
pub(crate) struct Deliveries {
    pub failed: Arc<Mutex<Option<String>>>,
}

impl ClientContext for Deliveries {}

impl ProducerContext<NoCustomPartitioner> for Deliveries {
    type DeliveryOpaque = ();

    fn delivery(&self, result: &DeliveryResult<'_>, _opaque: ()) {
        if let Err((e, message)) = result {
            use rdkafka::message::Message;
            if let Ok(mut failed) = self.failed.lock() {
                failed.get_or_insert_with(|| format!("{} refused a record: {e}", message.topic()));
            }
        }
    }
}

impl Deliveries {
    /// A delivery the broker refused, as the job's failure.
    pub fn check(failed: &Mutex<Option<String>>, servers: &str) -> FunctionResult {
        match failed.lock().ok().and_then(|f| f.clone()) {
            Some(why) => Err(format!("Kafka at {servers}: {why}").into()),
            None => Ok(()),
        }
    }
}

/// A producer of the `NONE` and `AT_LEAST_ONCE` guarantees.
struct Plain {
    producer: BaseProducer<Deliveries>,
    failed: Arc<Mutex<Option<String>>>,
}

enum Mode<T> {
    Closed,
    Plain(Plain),
    /// A [`TwoPhaseCommitSink`] over [`KafkaTransactions`].
    Transactional(Box<dyn SinkFunction<T>>),
}

/// The Kafka sink; see the module docs.
pub struct KafkaSink<T> {
    encoder: Arc<Encoder<T>>,
    guarantee: DeliveryGuarantee,
    transactional_id_prefix: Option<String>,
    commit_log: Option<String>,
    /// Per subtask, from `open` on (in a mutex only to be `Sync`).
    mode: Mutex<Mode<T>>,
}

impl<T> Clone for KafkaSink<T> {
    fn clone(&self) -> Self {
        KafkaSink {
            encoder: Arc::clone(&self.encoder),
            guarantee: self.guarantee,
            transactional_id_prefix: self.transactional_id_prefix.clone(),
            commit_log: self.commit_log.clone(),
            mode: Mutex::new(Mode::Closed),
        }
    }
}

impl<T: std::fmt::Display> KafkaSink<T> {
    /// Each record's `Display` text as the value (no key).
    pub fn strings(bootstrap_servers: &str, topic: &str) -> Self {
        KafkaSink::new(bootstrap_servers, topic, |v: &T| {
            (None, v.to_string().into_bytes())
        })
    }
}

impl<T: Serialize + serde::de::DeserializeOwned + 'static> KafkaSink<T> {
    /// Each record as a JSON document (no key).
    pub fn json(bootstrap_servers: &str, topic: &str) -> Self {
        KafkaSink::with_format(bootstrap_servers, topic, crate::format::JsonLines::new())
    }
}

impl<T> KafkaSink<T> {
    /// Records to `topic` as `serialize` makes them (key, value),
    /// at-least-once.
    pub fn new(
        bootstrap_servers: &str,
        topic: &str,
        serialize: impl Fn(&T) -> (Option<Vec<u8>>, Vec<u8>) + Send + Sync + 'static,
    ) -> Self {
        KafkaSink {
            encoder: Arc::new(Encoder::new(bootstrap_servers, topic, serialize)),
            guarantee: DeliveryGuarantee::AtLeastOnce,
            transactional_id_prefix: None,
            commit_log: None,
            mode: Mutex::new(Mode::Closed),
        }
    }

    /// Each record's value in `format` (CSV, JSON), no key; a record the
    /// format cannot encode fails the job.
    pub fn with_format(
        bootstrap_servers: &str,
        topic: &str,
        format: impl crate::format::RecordFormat<T>,
    ) -> Self {
        let mut sink = KafkaSink::new(bootstrap_servers, topic, |_: &T| (None, Vec::new()));
        sink.encoder = Arc::new(Encoder::fallible(bootstrap_servers, topic, move |v| {
            Ok((None, Some(format.encode(v)?)))
        }));
        sink
    }

    /// Records to `topic` with keys, where a record without a value is a
    /// tombstone (the delete of its key in a compacted topic, as Flink's
    /// `upsert-kafka` sink writes it); a record `serialize` fails on fails
    /// the job.
    pub fn with_tombstones(
        bootstrap_servers: &str,
        topic: &str,
        serialize: impl Fn(&T) -> Result<(Option<Vec<u8>>, Option<Vec<u8>>), String>
            + Send
            + Sync
            + 'static,
    ) -> Self {
        let mut sink = KafkaSink::new(bootstrap_servers, topic, |_: &T| (None, Vec::new()));
        sink.encoder = Arc::new(Encoder::fallible(bootstrap_servers, topic, serialize));
        sink
    }

    fn encoder_mut(&mut self) -> &mut Encoder<T> {
        Arc::get_mut(&mut self.encoder).expect("a sink is configured before it is cloned")
    }

    /// Sets a librdkafka producer property (Flink's `setProperty`), e.g.
    /// `compression.type` or `transaction.timeout.ms`.
    pub fn with_property(mut self, key: &str, value: &str) -> Self {
        self.encoder_mut()
            .properties
            .push((key.to_string(), value.to_string()));
        self
    }

    /// Chooses each record's topic (the sink's topic is then only where
    /// exactly-once keeps its commit markers).
    pub fn with_topic_selector(
        mut self,
        select: impl Fn(&T) -> String + Send + Sync + 'static,
    ) -> Self {
        self.encoder_mut().select_topic = Some(Arc::new(select));
        self
    }

    /// Chooses each record's partition; `None` leaves it to Kafka's
    /// default partitioner (by key hash, or sticky without a key).
    pub fn with_partitioner(
        mut self,
        partition: impl Fn(&T) -> Option<i32> + Send + Sync + 'static,
    ) -> Self {
        self.encoder_mut().partitioner = Some(Arc::new(partition));
        self
    }

    /// Sets the delivery guarantee (default at-least-once).
    /// `ExactlyOnce` also needs [`with_transactional_id_prefix`].
    ///
    /// [`with_transactional_id_prefix`]: Self::with_transactional_id_prefix
    pub fn with_delivery_guarantee(mut self, guarantee: DeliveryGuarantee) -> Self {
        self.guarantee = guarantee;
        self
    }

    /// The prefix of the exactly-once sink's transactional ids (Flink's
    /// `setTransactionalIdPrefix`): unique to this sink of this job, and
    /// the same across its runs, so that a restored job finishes and
    /// aborts what the previous run left.
    pub fn with_transactional_id_prefix(mut self, prefix: &str) -> Self {
        self.transactional_id_prefix = Some(prefix.to_string());
        self
    }

    /// Exactly-once: also records every committed transaction in `topic`
    /// (`<prefix>:<subtask>:<number>` as the value), and tags each record
    /// with the header `weir.transaction` naming its transaction the same
    /// way, so that
    /// readers of a broker that does not isolate transactions can tell
    /// committed records from aborted ones.
    pub fn with_commit_log(mut self, topic: &str) -> Self {
        self.commit_log = Some(topic.to_string());
        self
    }

    /// Waits until the broker acknowledged every record produced so far.
    fn flush(plain: &Plain, servers: &str) -> FunctionResult {
        plain
            .producer
            .flush(Duration::from_secs(60))
            .map_err(|e| format!("Kafka at {servers}: flushing: {e}"))?;
        Deliveries::check(&plain.failed, servers)
    }
}

impl<T: Send + 'static> SinkFunction<T> for KafkaSink<T> {
    fn default_name(&self) -> String {
        format!("Kafka: {}", self.encoder.topic)
    }

    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        let mode = match self.guarantee {
            DeliveryGuarantee::ExactlyOnce => {
                let prefix = self.transactional_id_prefix.clone().ok_or(
                    "the exactly-once Kafka sink needs a transactional id prefix \
                     (with_transactional_id_prefix)",
                )?;
                let system = KafkaTransactions::new(
                    Arc::clone(&self.encoder),
                    prefix,
                    self.commit_log.clone(),
                );
                let mut sink = TwoPhaseCommitSink::new(system);
                sink.open(ctx)?;
                Mode::Transactional(Box::new(sink))
            }
            DeliveryGuarantee::None | DeliveryGuarantee::AtLeastOnce => {
                let failed = Arc::new(Mutex::new(None));
                let producer: BaseProducer<Deliveries> = self
                    .encoder
                    .config(&[])
                    .create_with_context(Deliveries {
                        failed: Arc::clone(&failed),
                    })
                    .map_err(|e| format!("Kafka producer for {}: {e}", self.encoder.servers))?;
                Mode::Plain(Plain { producer, failed })
            }
        };
        *crate::unshared(&mut self.mode) = mode;
        Ok(())
    }

    fn invoke(&mut self, value: T, ctx: &SinkContext) -> FunctionResult {
        match crate::unshared(&mut self.mode) {
            Mode::Plain(plain) => {
                self.encoder.send(
                    &plain.producer,
                    &self.encoder.encode(&value, ctx.timestamp())?,
                    None,
                )?;
                Deliveries::check(&plain.failed, &self.encoder.servers)
            }
            Mode::Transactional(sink) => sink.invoke(value, ctx),
            Mode::Closed => Err("the Kafka sink was not opened".into()),
        }
    }

    fn snapshot_state(&mut self, checkpoint_id: u64) -> FunctionResult {
        let servers = &self.encoder.servers;
        match crate::unshared(&mut self.mode) {
            Mode::Plain(plain) => match self.guarantee {
                DeliveryGuarantee::None => Deliveries::check(&plain.failed, servers),
                _ => Self::flush(plain, servers),
            },
            Mode::Transactional(sink) => sink.snapshot_state(checkpoint_id),
            Mode::Closed => Ok(()),
        }
    }

    fn notify_checkpoint_complete(&mut self, checkpoint_id: u64) -> FunctionResult {
        match crate::unshared(&mut self.mode) {
            Mode::Transactional(sink) => sink.notify_checkpoint_complete(checkpoint_id),
            _ => Ok(()),
        }
    }

    fn finish(&mut self) -> FunctionResult {
        let servers = &self.encoder.servers;
        match crate::unshared(&mut self.mode) {
            Mode::Plain(plain) => Self::flush(plain, servers),
            Mode::Transactional(sink) => sink.finish(),
            Mode::Closed => Ok(()),
        }
    }

    fn close(&mut self) -> FunctionResult {
        match std::mem::replace(crate::unshared(&mut self.mode), Mode::Closed) {
            Mode::Transactional(mut sink) => sink.close(),
            _ => Ok(()),
        }
    }
}
