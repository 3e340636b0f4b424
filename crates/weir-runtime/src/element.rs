//! The elements that flow between operators.
//!
//! Records travel in batches (`Vec<StreamRecord<T>>`); control elements
//! ([`Control`]) travel between batches, in order with the records, so a
//! watermark, a barrier or the end of input is never overtaken by a record
//! sent before it nor overtakes one sent after it. Keeping records and control
//! apart (instead of one enum per element) lets operators loop over plain
//! records without a per-record match.

/// A timestamp meaning "this record has none" (Flink's `hasTimestamp() == false`).
pub const NO_TIMESTAMP: i64 = i64::MIN;

/// The largest watermark: no record with a timestamp can follow it. Bounded
/// sources emit it at the end of their input, which fires every open
/// event-time window and timer.
pub const MAX_WATERMARK: i64 = i64::MAX;

/// A data record with its event timestamp in milliseconds since the epoch
/// (or [`NO_TIMESTAMP`]). Serializable so that operators buffering records
/// (windows with process functions, evictors) can checkpoint them.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StreamRecord<T> {
    /// The user's value.
    pub value: T,
    /// Event timestamp in ms, or [`NO_TIMESTAMP`].
    pub timestamp: i64,
}

impl<T> StreamRecord<T> {
    /// A record without timestamp.
    #[inline]
    pub fn new(value: T) -> Self {
        StreamRecord {
            value,
            timestamp: NO_TIMESTAMP,
        }
    }

    /// A record with an event timestamp.
    #[inline]
    pub fn with_timestamp(value: T, timestamp: i64) -> Self {
        StreamRecord { value, timestamp }
    }

    /// The timestamp, if the record has one.
    #[inline]
    pub fn timestamp(&self) -> Option<i64> {
        (self.timestamp != NO_TIMESTAMP).then_some(self.timestamp)
    }

    /// Replaces the value, keeping the timestamp.
    #[inline]
    pub fn replace<U>(self, value: U) -> StreamRecord<U> {
        StreamRecord {
            value,
            timestamp: self.timestamp,
        }
    }
}

/// Whether an input channel currently produces data (Flink's `WatermarkStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatermarkStatus {
    /// The channel produces records and watermarks; its watermark counts.
    Active,
    /// The channel is idle; its watermark does not hold back the minimum.
    Idle,
}

/// Whether a barrier belongs to a checkpoint or a savepoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BarrierKind {
    /// A periodic checkpoint owned by the engine.
    Checkpoint,
    /// A savepoint triggered by the user, self-contained.
    Savepoint,
}

/// A checkpoint barrier: everything before it belongs to checkpoint
/// `checkpoint_id`, everything after it to the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Barrier {
    /// The checkpoint this barrier delimits.
    pub checkpoint_id: u64,
    /// When the coordinator triggered it, in ms since the epoch.
    pub timestamp_ms: i64,
    /// Checkpoint or savepoint.
    pub kind: BarrierKind,
    /// How long the input gate that released it waited for it on all its
    /// channels (barrier alignment); zero as sent by the coordinator.
    pub alignment: std::time::Duration,
}

/// A control element, travelling in-band with records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    /// A promise: no record with timestamp `<= t` follows on this stream
    /// (records that break it are late). Watermarks only ever advance.
    Watermark(i64),
    /// The sending channel became idle or active again.
    WatermarkStatus(WatermarkStatus),
    /// A checkpoint barrier.
    Barrier(Barrier),
    /// The sender will send nothing more. It is the last element of a channel.
    EndOfInput,
}

/// What a channel between two subtasks carries.
#[derive(Debug)]
pub enum Message<T> {
    /// A non-empty batch of records, in order.
    Records(Vec<StreamRecord<T>>),
    /// A control element.
    Control(Control),
}
