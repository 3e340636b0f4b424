//! What window operators put into checkpoints besides their per-key
//! contents: the operator's event-time watermark.
//!
//! Flink restarts operators at watermark `MIN`, so a window that fired
//! before the checkpoint can fire again when replayed records arrive. Weir
//! restores the watermark with the windows: replayed records are judged
//! late or on time exactly as they were before the failure, and windows
//! fire once.

use weir_runtime::operator::RuntimeContext;
use weir_state::{ListStateDescriptor, OperatorListState, StateError};

/// The operator's watermark, kept in union operator state (on restore at
/// another parallelism every subtask takes the smallest, which never makes
/// an on-time record late).
pub(crate) struct SavedWatermark {
    list: OperatorListState<i64>,
}

impl SavedWatermark {
    /// Opens the saved watermark; returns it and the restored value
    /// (`i64::MIN` on a fresh start).
    pub fn open(ctx: &RuntimeContext) -> Result<(Self, i64), StateError> {
        let list = ctx
            .operator_state
            .get_union_list_state(&ListStateDescriptor::<i64>::new("\u{1}weir/watermark"))?;
        let restored = list.get()?.into_iter().min().unwrap_or(i64::MIN);
        Ok((SavedWatermark { list }, restored))
    }

    /// Records `watermark` for the checkpoint being taken.
    pub fn save(&self, watermark: i64) -> Result<(), StateError> {
        self.list.update(vec![watermark])
    }
}
