//! Emitting records from a user function.

use weir_runtime::element::StreamRecord;

/// Where a function emits its output (Flink's `Collector`). Records take the
/// timestamp of the input record being processed, as Flink's
/// `TimestampedCollector` does, unless given one.
pub struct Collector<'a, O> {
    records: &'a mut Vec<StreamRecord<O>>,
    timestamp: i64,
}

impl<'a, O> Collector<'a, O> {
    /// A collector appending to `records` with timestamp `timestamp`.
    pub fn new(records: &'a mut Vec<StreamRecord<O>>, timestamp: i64) -> Self {
        Collector { records, timestamp }
    }

    /// Emits `value`.
    #[inline]
    pub fn collect(&mut self, value: O) {
        self.records
            .push(StreamRecord::with_timestamp(value, self.timestamp));
    }

    /// Emits `value`, copied a word at a time
    /// ([`StreamRecord::push_moved`]): for a value that lies in memory as
    /// a call returned it, which a plain move reads back in wider pieces
    /// than were stored and stalls on. (A value put together in registers
    /// is better emitted by [`collect`](Self::collect), which does not
    /// store it first.)
    #[inline]
    pub fn collect_moved(&mut self, value: O) {
        StreamRecord::push_moved(self.records, value, self.timestamp);
    }

    /// Emits `value` with its own event timestamp (ms).
    #[inline]
    pub fn collect_with_timestamp(&mut self, value: O, timestamp: i64) {
        self.records
            .push(StreamRecord::with_timestamp(value, timestamp));
    }
}
