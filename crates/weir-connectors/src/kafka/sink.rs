//! The Kafka sink (Flink's `KafkaSink`) with delivery guarantee `NONE` or
//! `AT_LEAST_ONCE`: records are produced as they come; with at-least-once
//! every checkpoint barrier flushes them and waits for the broker's
//! acknowledgements before the barrier is acknowledged, and a record the
//! broker refused fails the job. (`EXACTLY_ONCE`, with transactions, is not
//! built yet.)

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rdkafka::config::ClientConfig;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{
    BaseProducer, BaseRecord, DeliveryResult, NoCustomPartitioner, Producer, ProducerContext,
};
use rdkafka::ClientContext;
use weir::functions::{FunctionResult, RuntimeContext, SinkContext, SinkFunction};

/// What the sink promises (Flink's `DeliveryGuarantee`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeliveryGuarantee {
    /// Produced as they come; a failure may lose what was in flight.
    None,
    /// Flushed and acknowledged on every barrier: nothing lost, records
    /// after the restored checkpoint produced again.
    AtLeastOnce,
}

/// A record's key and value as bytes.
type Serializer<T> = Arc<dyn Fn(&T) -> (Option<Vec<u8>>, Vec<u8>) + Send + Sync>;

/// Records deliveries the broker refused.
struct Deliveries {
    failed: Arc<Mutex<Option<String>>>,
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

/// The Kafka sink; see the module docs.
pub struct KafkaSink<T> {
    servers: String,
    topic: String,
    guarantee: DeliveryGuarantee,
    serialize: Serializer<T>,
    producer: Mutex<Option<BaseProducer<Deliveries>>>,
    failed: Arc<Mutex<Option<String>>>,
    /// librdkafka properties set by the user, applied last.
    properties: Vec<(String, String)>,
}

impl<T> Clone for KafkaSink<T> {
    fn clone(&self) -> Self {
        KafkaSink {
            servers: self.servers.clone(),
            topic: self.topic.clone(),
            guarantee: self.guarantee,
            serialize: Arc::clone(&self.serialize),
            producer: Mutex::new(None),
            failed: Arc::new(Mutex::new(None)),
            properties: self.properties.clone(),
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

impl<T> KafkaSink<T> {
    /// Records to `topic` as `serialize` makes them (key, value),
    /// at-least-once.
    pub fn new(
        bootstrap_servers: &str,
        topic: &str,
        serialize: impl Fn(&T) -> (Option<Vec<u8>>, Vec<u8>) + Send + Sync + 'static,
    ) -> Self {
        KafkaSink {
            servers: bootstrap_servers.to_string(),
            topic: topic.to_string(),
            guarantee: DeliveryGuarantee::AtLeastOnce,
            serialize: Arc::new(serialize),
            producer: Mutex::new(None),
            failed: Arc::new(Mutex::new(None)),
            properties: Vec::new(),
        }
    }

    /// Sets a librdkafka producer property (Flink's `setProperty`), e.g.
    /// `compression.type`.
    pub fn with_property(mut self, key: &str, value: &str) -> Self {
        self.properties.push((key.to_string(), value.to_string()));
        self
    }

    /// Sets the delivery guarantee (default at-least-once).
    pub fn with_delivery_guarantee(mut self, guarantee: DeliveryGuarantee) -> Self {
        self.guarantee = guarantee;
        self
    }

    fn producer(&mut self) -> Result<&mut BaseProducer<Deliveries>, String> {
        crate::unshared(&mut self.producer)
            .as_mut()
            .ok_or_else(|| "the Kafka sink was not opened".to_string())
    }

    /// A delivery the broker refused, as the job's failure.
    fn check_deliveries(&self) -> FunctionResult {
        match self.failed.lock().ok().and_then(|f| f.clone()) {
            Some(why) => Err(format!("Kafka at {}: {why}", self.servers).into()),
            None => Ok(()),
        }
    }

    /// Waits until the broker acknowledged every record produced so far.
    fn flush(&mut self) -> FunctionResult {
        let servers = self.servers.clone();
        self.producer()?
            .flush(Duration::from_secs(60))
            .map_err(|e| format!("Kafka at {servers}: flushing: {e}"))?;
        self.check_deliveries()
    }
}

impl<T: Send + 'static> SinkFunction<T> for KafkaSink<T> {
    fn default_name(&self) -> String {
        format!("Kafka: {}", self.topic)
    }

    fn open(&mut self, _ctx: &RuntimeContext) -> FunctionResult {
        let mut config = ClientConfig::new();
        config
            .set("bootstrap.servers", &self.servers)
            .set("linger.ms", "5");
        for (key, value) in &self.properties {
            config.set(key, value);
        }
        let producer: BaseProducer<Deliveries> = config
            .create_with_context(Deliveries {
                failed: Arc::clone(&self.failed),
            })
            .map_err(|e| format!("Kafka producer for {}: {e}", self.servers))?;
        *crate::unshared(&mut self.producer) = Some(producer);
        Ok(())
    }

    fn invoke(&mut self, value: T, _ctx: &SinkContext) -> FunctionResult {
        let (key, payload) = (self.serialize)(&value);
        // Fields borrowed apart: no copy of the topic per record.
        let topic = self.topic.as_str();
        let producer = crate::unshared(&mut self.producer)
            .as_mut()
            .ok_or("the Kafka sink was not opened")?;
        let mut record = BaseRecord::to(topic).payload(&payload);
        if let Some(key) = &key {
            record = record.key(key);
        }
        loop {
            match producer.send(record) {
                Ok(()) => break,
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back)) => {
                    // The local queue is full: serve acknowledgements, retry.
                    producer.poll(Duration::from_millis(50));
                    record = back;
                }
                Err((e, _)) => return Err(format!("Kafka: producing to {topic}: {e}").into()),
            }
        }
        producer.poll(Duration::ZERO);
        self.check_deliveries()
    }

    fn snapshot_state(&mut self, _checkpoint_id: u64) -> FunctionResult {
        match self.guarantee {
            DeliveryGuarantee::AtLeastOnce => self.flush(),
            DeliveryGuarantee::None => self.check_deliveries(),
        }
    }

    fn finish(&mut self) -> FunctionResult {
        self.flush()
    }

    fn close(&mut self) -> FunctionResult {
        *crate::unshared(&mut self.producer) = None;
        Ok(())
    }
}
