//! The choice between a window operator that keeps its contents in memory
//! and one that keeps them in the keyed-state backend, made per subtask
//! from the job's state backend.
//!
//! The slice-based operators for aligned windows and the direct session
//! operator keep typed contents in memory: the fast path, and the same
//! trade-off as the heap backend. On a key-value backend (RocksDB) the job
//! asked for state larger than memory, so the same windows run on the
//! general [`WindowOperator`](super::operator::WindowOperator), whose
//! contents live in the backend with the window as namespace. Both give
//! the same results; their checkpoints differ, so a job restores window
//! contents with the backend that wrote them.

use weir_runtime::element::StreamRecord;
use weir_runtime::operator::{Operator, Output, RuntimeContext};
use weir_runtime::FunctionResult;

/// One of two operators with the same input and output.
pub(crate) enum ByBackend<A, B> {
    /// Contents in operator memory (heap backend).
    Memory(A),
    /// Contents in the keyed-state backend.
    Stored(B),
}

macro_rules! delegate {
    ($self:ident, $op:ident => $call:expr) => {
        match $self {
            ByBackend::Memory($op) => $call,
            ByBackend::Stored($op) => $call,
        }
    };
}

impl<A, B> Operator for ByBackend<A, B>
where
    A: Operator,
    B: Operator<In = A::In, Out = A::Out>,
{
    type In = A::In;
    type Out = A::Out;

    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        delegate!(self, op => op.open(ctx))
    }

    fn process_batch(
        &mut self,
        input: &mut Vec<StreamRecord<Self::In>>,
        out: &mut Output<Self::Out>,
    ) -> FunctionResult {
        delegate!(self, op => op.process_batch(input, out))
    }

    fn process_watermark(&mut self, watermark: i64, out: &mut Output<Self::Out>) -> FunctionResult {
        delegate!(self, op => op.process_watermark(watermark, out))
    }

    fn end_input(&mut self, out: &mut Output<Self::Out>) -> FunctionResult {
        delegate!(self, op => op.end_input(out))
    }

    fn processing_deadline(&self) -> Option<i64> {
        delegate!(self, op => op.processing_deadline())
    }

    fn pending_event_timers(&self) -> Option<(u64, Option<i64>)> {
        delegate!(self, op => op.pending_event_timers())
    }

    fn on_processing_time(&mut self, now: i64, out: &mut Output<Self::Out>) -> FunctionResult {
        delegate!(self, op => op.on_processing_time(now, out))
    }

    fn snapshot_state(&mut self, checkpoint_id: u64) -> FunctionResult {
        delegate!(self, op => op.snapshot_state(checkpoint_id))
    }

    fn notify_checkpoint_complete(&mut self, checkpoint_id: u64) -> FunctionResult {
        delegate!(self, op => op.notify_checkpoint_complete(checkpoint_id))
    }

    fn notify_checkpoint_aborted(&mut self, checkpoint_id: u64) -> FunctionResult {
        delegate!(self, op => op.notify_checkpoint_aborted(checkpoint_id))
    }

    fn close(&mut self) -> FunctionResult {
        delegate!(self, op => op.close())
    }
}
