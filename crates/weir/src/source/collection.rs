//! Sources over values known when the job is built.

use std::sync::Arc;

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
/// ranges over the parallel subtasks.
#[derive(Debug, Clone)]
pub struct SequenceSource {
    from: i64,
    to: i64,
    // i128 so that the full i64 range cannot overflow.
    next: i128,
    end: i128,
}

impl SequenceSource {
    /// The numbers `from..=to`; empty when `to < from`.
    pub fn new(from: i64, to: i64) -> Self {
        SequenceSource {
            from,
            to,
            next: 0,
            end: 0,
        }
    }
}

impl SourceFunction<i64> for SequenceSource {
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        let count = (i128::from(self.to) - i128::from(self.from) + 1).max(0);
        let (i, p) = (i128::from(ctx.subtask_index), i128::from(ctx.parallelism));
        self.next = i128::from(self.from) + count * i / p;
        self.end = i128::from(self.from) + count * (i + 1) / p;
        Ok(())
    }

    fn poll_next(&mut self, ctx: &mut SourceContext<'_, i64>) -> FunctionResult<SourceStatus> {
        let stop = self.end.min(self.next + ctx.remaining().max(1) as i128);
        while self.next < stop {
            ctx.collect(self.next as i64);
            self.next += 1;
        }
        Ok(if self.next >= self.end {
            SourceStatus::Finished
        } else {
            SourceStatus::More
        })
    }

    fn snapshot_position(&mut self, _checkpoint_id: u64) -> FunctionResult<Option<Vec<u8>>> {
        Ok(Some(self.next.to_le_bytes().to_vec()))
    }

    fn restore_position(&mut self, position: &[u8]) -> FunctionResult {
        let bytes: [u8; 16] = position
            .try_into()
            .map_err(|_| "sequence source position must be 16 bytes")?;
        self.next = i128::from_le_bytes(bytes);
        Ok(())
    }
}
