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

    /// Pushes `value` stamped `timestamp` onto `records`, copied a word at
    /// a time.
    ///
    /// A value that a call made was stored a word at a time; a plain move
    /// reads it back in wider pieces, which the CPU cannot forward from
    /// the stores still under way, so it waits for them to reach its
    /// cache, every record.
    #[inline(always)]
    pub fn push_moved(records: &mut Vec<Self>, value: T, timestamp: i64) {
        let value = std::mem::ManuallyDrop::new(value);
        // SAFETY: `value` is a `T`, read once and not dropped here.
        unsafe { Self::push_from(records, &*value, timestamp) };
    }

    /// As [`push_moved`](Self::push_moved), with the value taken out of
    /// `taken` where it lies, `None` left there (a value moved out of an
    /// `Option` first is copied whole, in wide pieces); `None` if there was
    /// nothing to take.
    #[inline(always)]
    pub fn push_taken<'a>(
        records: &'a mut Vec<Self>,
        taken: &mut Option<T>,
        timestamp: i64,
    ) -> Option<&'a mut Self> {
        let value: *const T = taken.as_ref()?;
        // SAFETY: `value` is read once, and the option it lies in is then
        // overwritten without dropping it: the value now lives in
        // `records`.
        unsafe {
            let record = Self::push_from(records, value, timestamp);
            std::ptr::write(taken, None);
            Some(record)
        }
    }

    /// Pushes a record of the value at `value` (read word by word) and
    /// `timestamp`.
    ///
    /// # Safety
    ///
    /// `value` points to a `T` that is not used again as one.
    #[inline(always)]
    unsafe fn push_from(records: &mut Vec<Self>, value: *const T, timestamp: i64) -> &mut Self {
        // SAFETY: the record's two fields are written, the value as the
        // caller promises.
        unsafe {
            push_written(records, |at| {
                std::ptr::addr_of_mut!((*at).timestamp).write(timestamp);
                copy_by_words(value, std::ptr::addr_of_mut!((*at).value));
            })
        }
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
    /// The producer's wake, its first message: the consumer wakes it
    /// through this when the channel has drained to half (see
    /// [`DrainWake`](crate::exchange::DrainWake)).
    Wake(std::sync::Arc<crate::exchange::DrainWake>),
}

/// Pushes `value` onto `items` copied a word at a time (see
/// [`StreamRecord::push_moved`]): for a value a call returned.
#[inline(always)]
pub fn push_by_words<T>(items: &mut Vec<T>, value: T) {
    let value = std::mem::ManuallyDrop::new(value);
    // SAFETY: `value` is read once and not dropped here.
    unsafe { push_written(items, |at| copy_by_words(&*value, at)) };
}

/// Pushes the item `write` writes into the room made for it at the end
/// of `items`, and returns it there.
///
/// # Safety
///
/// `write` writes a whole `T` at the pointer it is given.
#[inline(always)]
unsafe fn push_written<T>(items: &mut Vec<T>, write: impl FnOnce(*mut T)) -> &mut T {
    items.reserve(1);
    let len = items.len();
    // SAFETY: `reserve` made room for one more item at `len`; the length
    // counts it only once it is written.
    unsafe {
        let at = items.as_mut_ptr().add(len);
        write(at);
        items.set_len(len + 1);
        &mut *at
    }
}

/// Copies the `T` at `from` to `to` a word at a time (see
/// [`StreamRecord::push_moved`]), or at once if it is not made of whole
/// words.
///
/// # Safety
///
/// `from` points to a `T`; `to` is valid for a write of one.
#[inline(always)]
unsafe fn copy_by_words<T>(from: *const T, to: *mut T) {
    use std::mem::{align_of, size_of, MaybeUninit};
    type Word = MaybeUninit<usize>;
    const W: usize = size_of::<Word>();
    // Two words or fewer come back from a call in registers, and are
    // written whole; not whole words, or many, are copied at once.
    let words = size_of::<T>() / W;
    if size_of::<T>() % W != 0 || align_of::<T>() < W || !(3..=8).contains(&words) {
        // SAFETY: as the caller promises.
        unsafe { std::ptr::copy_nonoverlapping(from, to, 1) };
        return;
    }
    let (from, to) = (from.cast::<Word>(), to.cast::<Word>());
    for i in 0..words {
        // SAFETY: `i` words are within a `T` at both ends, each aligned;
        // a `MaybeUninit` word copies padding and pointers as they are.
        // Volatile, so that the reads are not merged into wider ones.
        unsafe { to.add(i).write(from.add(i).read_volatile()) };
    }
}

#[cfg(test)]
mod tests {
    use super::StreamRecord;
    use std::sync::Arc;

    fn pushed<T>(value: T) -> T {
        let mut records = Vec::new();
        StreamRecord::push_moved(&mut records, value, 7);
        let Some(record) = records.pop() else {
            panic!("nothing pushed");
        };
        assert_eq!(record.timestamp, 7);
        record.value
    }

    #[test]
    fn a_value_pushed_word_by_word_is_the_value_and_is_dropped_once() {
        // Whole words, pointers among them.
        let shared = Arc::new(5);
        let v = pushed((String::from("abc"), Arc::clone(&shared), 7u64));
        assert_eq!((v.0.as_str(), *v.1, v.2), ("abc", 5, 7));
        assert_eq!(Arc::strong_count(&shared), 2);
        drop(v);
        assert_eq!(Arc::strong_count(&shared), 1);
        // Padding within a word.
        assert_eq!(pushed((3u8, u64::MAX, 9u64)), (3, u64::MAX, 9));
        // Not whole words, two or fewer, or more than eight: copied at once.
        assert_eq!(pushed(7u8), 7);
        assert_eq!(pushed((3u8, u64::MAX)), (3, u64::MAX));
        assert_eq!(pushed([1u16, 2, 3]), [1, 2, 3]);
        let wide: [u64; 12] = std::array::from_fn(|i| i as u64);
        assert_eq!(pushed(wide), wide);
    }

    #[test]
    fn values_pushed_word_by_word_are_the_values_in_order() {
        let mut items = Vec::new();
        for i in 0..100u64 {
            super::push_by_words(&mut items, (i, format!("{i}")));
        }
        let expected: Vec<(u64, String)> = (0..100).map(|i| (i, format!("{i}"))).collect();
        assert_eq!(items, expected);
    }

    #[test]
    fn a_value_taken_out_of_an_option_leaves_none_and_is_dropped_once() {
        let shared = Arc::new(1);
        let mut records = Vec::new();
        let mut taken = Some((Arc::clone(&shared), String::from("x")));
        let record = StreamRecord::push_taken(&mut records, &mut taken, 3);
        assert_eq!(record.map(|r| r.timestamp), Some(3));
        assert!(taken.is_none());
        assert!(StreamRecord::push_taken(&mut records, &mut taken, 4).is_none());
        assert_eq!(records.len(), 1);
        assert_eq!(records[0].value.1, "x");
        assert_eq!(Arc::strong_count(&shared), 2);
        drop(records);
        assert_eq!(Arc::strong_count(&shared), 1);
    }
}
