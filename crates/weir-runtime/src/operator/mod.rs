//! Operators: the runtime's unit of computation, and how chained operators
//! hand records to each other.
//!
//! An [`Operator`] turns batches of input records into output records, which
//! it writes to an [`Output`]. Operators of one chain are linked by
//! [`ChainLink`]s: each link owns an operator and its output, and the output's
//! next hop is the next link (or a channel writer, a fan-out, a discard). The
//! hop between operators is one dynamic call per *batch*; inside a batch an
//! operator loops over plain values, which the compiler monomorphizes and
//! inlines.

mod chain;
mod context;
mod output;

pub use chain::{guarded, ChainLink, Discard, FanOut};
pub use context::RuntimeContext;
pub use output::{min_deadline, Output, SideOutput, SideOutputs, SideSlot};

use crate::checkpoint::CheckpointNotice;
use crate::element::{Control, StreamRecord};
use crate::error::{FunctionResult, TaskError};

/// The receiving end of a hop: a chained operator, a channel writer, a
/// fan-out to several of these, or a discard.
///
/// By implementing this trait, you promise that `push_batch` takes every
/// record out of `batch` (leaving it empty, its capacity free to change) and
/// that control elements are passed on in the order received, after every
/// record received before them.
pub trait Downstream<T>: Send {
    /// Opens what lies downstream (operators' `open`), before any record.
    fn open(&mut self) -> Result<(), TaskError> {
        Ok(())
    }

    /// Takes and processes a batch of records.
    fn push_batch(&mut self, batch: &mut Vec<StreamRecord<T>>) -> Result<(), TaskError>;

    /// Processes a control element.
    fn push_control(&mut self, control: Control) -> Result<(), TaskError>;

    /// Sends partially filled output buffers now (the buffer timeout).
    fn flush_buffers(&mut self) -> Result<(), TaskError> {
        Ok(())
    }

    /// The earliest processing time (ms) at which anything downstream wants
    /// [`advance_processing_time`](Self::advance_processing_time).
    fn processing_deadline(&self) -> Option<i64> {
        None
    }

    /// Processing time is now `now`: fire what is due downstream.
    fn advance_processing_time(&mut self, _now: i64) -> Result<(), TaskError> {
        Ok(())
    }

    /// Tells the operators downstream that a checkpoint completed or was
    /// aborted. Channel writers stop it: every task hears from the
    /// coordinator itself.
    fn notify_checkpoint(&mut self, _notice: CheckpointNotice) -> Result<(), TaskError> {
        Ok(())
    }

    /// Closes what lies downstream (operators' `close`), after end of input.
    fn close(&mut self) -> Result<(), TaskError> {
        Ok(())
    }
}

/// A one-input operator.
///
/// All methods run on the task's thread, one at a time: an operator never
/// needs a lock for its own state. Errors fail the task (and by the restart
/// strategy, the job) naming this operator.
pub trait Operator: Send + 'static {
    /// Input record type.
    type In: Send + 'static;
    /// Output record type.
    type Out: Send + 'static;

    /// Called once before the first record.
    fn open(&mut self, _ctx: &RuntimeContext) -> FunctionResult {
        Ok(())
    }

    /// Processes a batch; records may be drained from `input` or left in it
    /// (the caller clears it).
    fn process_batch(
        &mut self,
        input: &mut Vec<StreamRecord<Self::In>>,
        out: &mut Output<Self::Out>,
    ) -> FunctionResult;

    /// A new watermark arrived; the default forwards it.
    fn process_watermark(&mut self, watermark: i64, out: &mut Output<Self::Out>) -> FunctionResult {
        out.emit_watermark(watermark)?;
        Ok(())
    }

    /// The input ended; emit what is still held. The caller forwards the end.
    fn end_input(&mut self, _out: &mut Output<Self::Out>) -> FunctionResult {
        Ok(())
    }

    /// How many event-time timers (windows, for a window operator) are
    /// pending and the earliest one's time, for operators that keep them;
    /// read once per batch and watermark for the watermark diagnosis.
    fn pending_event_timers(&self) -> Option<(u64, Option<i64>)> {
        None
    }

    /// The processing time (ms) at which the operator next wants
    /// [`on_processing_time`](Self::on_processing_time), if any.
    fn processing_deadline(&self) -> Option<i64> {
        None
    }

    /// Processing time reached `now`, at or after the deadline.
    fn on_processing_time(&mut self, _now: i64, _out: &mut Output<Self::Out>) -> FunctionResult {
        Ok(())
    }

    /// A checkpoint barrier passed: bring the state registered in the
    /// runtime context up to date for `checkpoint_id` (the runtime then
    /// snapshots it). Operators whose state lives in the context's stores
    /// keep the default.
    fn snapshot_state(&mut self, _checkpoint_id: u64) -> FunctionResult {
        Ok(())
    }

    /// Checkpoint `checkpoint_id` completed: effects held for it may be
    /// made visible (two-phase-commit sinks commit here).
    fn notify_checkpoint_complete(&mut self, _checkpoint_id: u64) -> FunctionResult {
        Ok(())
    }

    /// Checkpoint `checkpoint_id` was aborted.
    fn notify_checkpoint_aborted(&mut self, _checkpoint_id: u64) -> FunctionResult {
        Ok(())
    }

    /// Called once after the input ended and was processed.
    fn close(&mut self) -> FunctionResult {
        Ok(())
    }
}

/// A two-input operator (`connect`, joins). Same contract as [`Operator`].
pub trait TwoInputOperator: Send + 'static {
    /// First input's record type.
    type In1: Send + 'static;
    /// Second input's record type.
    type In2: Send + 'static;
    /// Output record type.
    type Out: Send + 'static;

    /// Called once before the first record.
    fn open(&mut self, _ctx: &RuntimeContext) -> FunctionResult {
        Ok(())
    }

    /// Processes a batch from the first input.
    fn process_batch1(
        &mut self,
        input: &mut Vec<StreamRecord<Self::In1>>,
        out: &mut Output<Self::Out>,
    ) -> FunctionResult;

    /// Processes a batch from the second input.
    fn process_batch2(
        &mut self,
        input: &mut Vec<StreamRecord<Self::In2>>,
        out: &mut Output<Self::Out>,
    ) -> FunctionResult;

    /// The combined watermark (minimum of both inputs) advanced.
    fn process_watermark(&mut self, watermark: i64, out: &mut Output<Self::Out>) -> FunctionResult {
        out.emit_watermark(watermark)?;
        Ok(())
    }

    /// Both inputs ended.
    fn end_input(&mut self, _out: &mut Output<Self::Out>) -> FunctionResult {
        Ok(())
    }

    /// See [`Operator::processing_deadline`].
    fn processing_deadline(&self) -> Option<i64> {
        None
    }

    /// See [`Operator::pending_event_timers`].
    fn pending_event_timers(&self) -> Option<(u64, Option<i64>)> {
        None
    }

    /// See [`Operator::on_processing_time`].
    fn on_processing_time(&mut self, _now: i64, _out: &mut Output<Self::Out>) -> FunctionResult {
        Ok(())
    }

    /// See [`Operator::snapshot_state`].
    fn snapshot_state(&mut self, _checkpoint_id: u64) -> FunctionResult {
        Ok(())
    }

    /// See [`Operator::notify_checkpoint_complete`].
    fn notify_checkpoint_complete(&mut self, _checkpoint_id: u64) -> FunctionResult {
        Ok(())
    }

    /// See [`Operator::notify_checkpoint_aborted`].
    fn notify_checkpoint_aborted(&mut self, _checkpoint_id: u64) -> FunctionResult {
        Ok(())
    }

    /// Called once after both inputs ended.
    fn close(&mut self) -> FunctionResult {
        Ok(())
    }
}
