//! Kafka: a source (Flink's `KafkaSource`: partitions split over subtasks
//! by Flink's formula, offsets in checkpoints, bounded or unbounded) and a
//! sink (Flink's `KafkaSink`, at-least-once), over librdkafka; and a
//! throwaway local broker (tansu) for tests.
//!
//! Not built yet: the exactly-once sink (transactions), topic patterns and
//! partition discovery, committing offsets to the consumer group for lag
//! monitoring, per-partition watermarks, starting from committed offsets
//! or a timestamp.

pub mod local;
pub mod sink;
pub mod source;

pub use local::{LocalKafka, LocalKafkaError};
pub use sink::{DeliveryGuarantee, KafkaSink};
pub use source::{KafkaRecord, KafkaSource, StartingOffsets};
