//! Sources over values known when the job is built.

use std::sync::Arc;

use super::index_ranges::IndexRanges;
use crate::functions::{
    FunctionResult, RuntimeContext, SourceContext, SourceFunction, SourceStatus,
};

/// Emits the elements of a collection in order (`from_elements`,
/// `from_collection`); not parallel, as in Flink.
pub struct CollectionSource<T> {
    elements: Arc<[T]>,
    next: usize,
}

impl<T> CollectionSource<T> {
    /// A source over `elements`.
    pub fn new(elements: Arc<[T]>) -> Self {
        CollectionSource { elements, next: 0 }
    }
}

impl<T> Clone for CollectionSource<T> {
    fn clone(&self) -> Self {
        CollectionSource::new(Arc::clone(&self.elements))
    }
}

impl<T: Clone + Send + Sync + 'static> SourceFunction<T> for CollectionSource<T> {
    fn poll_next(&mut self, ctx: &mut SourceContext<'_, T>) -> FunctionResult<SourceStatus> {
        let end = (self.next + ctx.remaining().max(1)).min(self.elements.len());
        for value in &self.elements[self.next..end] {
            ctx.collect(value.clone());
        }
        self.next = end;
        Ok(if self.next == self.elements.len() {
            SourceStatus::Finished
        } else {
            SourceStatus::More
        })
    }

    fn snapshot_position(&mut self, _checkpoint_id: u64) -> FunctionResult<Option<Vec<u8>>> {
        Ok(Some((self.next as u64).to_le_bytes().to_vec()))
    }

    fn restore_position(&mut self, position: &[u8]) -> FunctionResult {
        let bytes: [u8; 8] = position
            .try_into()
            .map_err(|_| "collection source position must be 8 bytes")?;
        self.next = u64::from_le_bytes(bytes) as usize;
        Ok(())
    }
}

/// Emits the numbers `from..=to` (`from_sequence`), split into contiguous
/// ranges over the parallel subtasks. (A sequence of all 2^64 `i64`s stops
/// one short.)
pub struct SequenceSource {
    from: i64,
    to: i64,
    // Offsets from `from` still to emit.
    ranges: IndexRanges,
}

impl Clone for SequenceSource {
    fn clone(&self) -> Self {
        SequenceSource::new(self.from, self.to)
    }
}

impl std::fmt::Debug for SequenceSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SequenceSource({}..={})", self.from, self.to)
    }
}

impl SequenceSource {
    /// The numbers `from..=to`; empty when `to < from`.
    pub fn new(from: i64, to: i64) -> Self {
        SequenceSource {
            from,
            to,
            ranges: IndexRanges::default(),
        }
    }
}

impl SourceFunction<i64> for SequenceSource {
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        let count = (i128::from(self.to) - i128::from(self.from) + 1).clamp(0, u64::MAX as i128);
        let (i, p) = (i128::from(ctx.subtask_index), i128::from(ctx.parallelism));
        let share = |k: i128| (count * k / p) as u64;
        self.ranges = IndexRanges::open(ctx, (share(i), share(i + 1)))?;
        Ok(())
    }

    fn poll_next(&mut self, ctx: &mut SourceContext<'_, i64>) -> FunctionResult<SourceStatus> {
        if let Some((start, stop)) = self.ranges.take(ctx.remaining().max(1) as u64) {
            for offset in start..stop {
                ctx.collect((i128::from(self.from) + i128::from(offset)) as i64);
            }
        }
        Ok(if self.ranges.is_done() {
            SourceStatus::Finished
        } else {
            SourceStatus::More
        })
    }

    /// The position lives in operator state (remaining ranges), so that a
    /// restore at another parallelism redistributes it.
    fn snapshot_position(&mut self, _checkpoint_id: u64) -> FunctionResult<Option<Vec<u8>>> {
        self.ranges.save()?;
        Ok(None)
    }
}
