//! The part of an index space a parallel source subtask still has to emit
//! (generators, sequences), kept in operator list state so that a restore
//! at another parallelism splits the remaining ranges over the new
//! subtasks, as Flink's list-state sources do.

use std::collections::VecDeque;

use weir_state::{ListStateDescriptor, OperatorListState, StateError};

use crate::functions::RuntimeContext;

/// Half-open ranges `[next, end)` of indices still to emit, in order.
#[derive(Default)]
pub(crate) struct IndexRanges {
    ranges: VecDeque<(u64, u64)>,
    state: Option<OperatorListState<(u64, u64)>>,
}

impl IndexRanges {
    /// The ranges of this subtask: restored ones after a restore (maybe
    /// none, when there are more subtasks than ranges), else `initial`.
    pub fn open(ctx: &RuntimeContext, initial: (u64, u64)) -> Result<Self, StateError> {
        let state = ctx
            .operator_state
            .get_list_state(&ListStateDescriptor::new("\u{1}weir/source-ranges"))?;
        let ranges = if ctx.is_restored() {
            state.get()?.into_iter().collect()
        } else {
            VecDeque::from([initial])
        };
        let mut ranges = IndexRanges {
            ranges,
            state: Some(state),
        };
        ranges.drop_empty();
        Ok(ranges)
    }

    fn drop_empty(&mut self) {
        while self.ranges.front().is_some_and(|(next, end)| next >= end) {
            self.ranges.pop_front();
        }
    }

    /// Takes up to `max` next indices: `[start, stop)`, or `None` at the end.
    pub fn take(&mut self, max: u64) -> Option<(u64, u64)> {
        self.drop_empty();
        let (next, end) = self.ranges.front_mut()?;
        let start = *next;
        let stop = (*end).min(start.saturating_add(max.max(1)));
        *next = stop;
        Some((start, stop))
    }

    /// Whether every index was taken.
    pub fn is_done(&mut self) -> bool {
        self.drop_empty();
        self.ranges.is_empty()
    }

    /// Records the remaining ranges for the checkpoint being taken.
    pub fn save(&self) -> Result<(), StateError> {
        match &self.state {
            Some(state) => state.update(self.ranges.iter().copied().collect()),
            None => Ok(()),
        }
    }
}
