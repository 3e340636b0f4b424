//! Kafka: a source (Flink's `KafkaSource`: partitions split over subtasks
//! by Flink's formula, offsets in checkpoints, bounded or unbounded) and a
//! sink (Flink's `KafkaSink`: none, at-least-once or exactly-once by
//! transactions), over librdkafka; reading back what a sink wrote; and a
//! throwaway local broker (tansu) for tests.

pub mod audit;
pub mod local;
pub mod sink;
pub mod source;
pub mod transactional;

pub use audit::{read_committed, read_topic, TopicRecord};
pub use local::{LocalKafka, LocalKafkaError};
pub use sink::{DeliveryGuarantee, KafkaSink, TRANSACTION_HEADER};
pub use source::{KafkaRecord, KafkaSource, OffsetReset, StartingOffsets};
