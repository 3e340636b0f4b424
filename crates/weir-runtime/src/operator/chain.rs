//! The hops of a chain: a link around an operator, fan-out, discard.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use super::{min_deadline, Downstream, Operator, Output, RuntimeContext};
use crate::checkpoint::CheckpointNotice;
use crate::element::{Control, StreamRecord};
use crate::error::{FunctionResult, SubtaskName, TaskError};
use crate::metrics::{OperatorMetrics, SubtaskCounts};

/// Runs a user-facing call, turning its error or panic into a [`TaskError`]
/// that names the operator. Errors already raised downstream (a
/// [`TaskError`] travelling up through `?`) pass through unchanged, so the
/// failure names the operator where it happened.
#[inline]
pub fn guarded<R>(
    at: &SubtaskName,
    call: impl FnOnce() -> FunctionResult<R>,
) -> Result<R, TaskError> {
    match catch_unwind(AssertUnwindSafe(call)) {
        Ok(Ok(r)) => Ok(r),
        Ok(Err(e)) => Err(match e.downcast::<TaskError>() {
            Ok(task_error) => *task_error,
            Err(e) => TaskError::function(at, e),
        }),
        Err(payload) => Err(TaskError::panic(at, payload)),
    }
}

/// One operator of a chain, with its output.
pub struct ChainLink<Op: Operator> {
    op: Op,
    out: Output<Op::Out>,
    ctx: RuntimeContext,
    at: SubtaskName,
    metrics: Arc<OperatorMetrics>,
    counts: Arc<SubtaskCounts>,
}

impl<Op: Operator> ChainLink<Op> {
    /// Links `op` to `out`.
    pub fn new(
        op: Op,
        out: Output<Op::Out>,
        ctx: RuntimeContext,
        metrics: Arc<OperatorMetrics>,
    ) -> Self {
        let at = ctx.subtask_name();
        let counts = metrics.subtask_counts(ctx.subtask_index);
        ChainLink {
            counts,
            op,
            out,
            ctx,
            at,
            metrics,
        }
    }
}

impl<Op: Operator> ChainLink<Op> {
    /// Shows the operator's pending event-time timers, if it keeps any.
    #[inline]
    fn publish_timers(&self) {
        if let Some((count, earliest)) = self.op.pending_event_timers() {
            self.counts.set_timers(count, earliest);
        }
    }
}

impl<Op: Operator> Downstream<Op::In> for ChainLink<Op> {
    fn open(&mut self) -> Result<(), TaskError> {
        // Downstream first, so an operator may emit from `open`.
        self.out.open()?;
        let (op, ctx) = (&mut self.op, &self.ctx);
        guarded(&self.at, || op.open(ctx))
    }

    #[inline]
    fn push_batch(&mut self, batch: &mut Vec<StreamRecord<Op::In>>) -> Result<(), TaskError> {
        self.counts.add_in(batch.len());
        let (op, out) = (&mut self.op, &mut self.out);
        guarded(&self.at, || op.process_batch(batch, out))?;
        batch.clear();
        self.publish_timers();
        self.out.flush()
    }

    fn push_control(&mut self, control: Control) -> Result<(), TaskError> {
        let (op, out) = (&mut self.op, &mut self.out);
        match control {
            Control::Watermark(wm) => {
                self.metrics.set_watermark(self.ctx.subtask_index, wm);
                guarded(&self.at, || op.process_watermark(wm, out))?;
                self.publish_timers();
                Ok(())
            }
            Control::EndOfInput => {
                // Bounded input ends with every processing-time timer firing,
                // as in Flink's BATCH execution mode, so a bounded job emits
                // each processing-time window once instead of dropping it.
                if op.processing_deadline().is_some() {
                    guarded(&self.at, || op.on_processing_time(i64::MAX, out))?;
                }
                guarded(&self.at, || op.end_input(out))?;
                let ctx = &self.ctx;
                if ctx.checkpoint.is_some() {
                    guarded(&self.at, || {
                        op.snapshot_state(crate::checkpoint::FINAL_SNAPSHOT)?;
                        Ok(ctx.report_finished(None)?)
                    })?;
                }
                self.out.forward_control(control)
            }
            Control::Barrier(barrier) => {
                self.out.flush()?;
                let started = std::time::Instant::now();
                guarded(&self.at, || op.snapshot_state(barrier.checkpoint_id))?;
                self.ctx.acknowledge_checkpoint(&barrier, None, started);
                self.out.forward_control(control)
            }
            Control::WatermarkStatus(_) => self.out.forward_control(control),
        }
    }

    fn flush_buffers(&mut self) -> Result<(), TaskError> {
        self.out.flush_buffers()
    }

    fn processing_deadline(&self) -> Option<i64> {
        min_deadline(
            self.op.processing_deadline(),
            self.out.processing_deadline(),
        )
    }

    fn advance_processing_time(&mut self, now: i64) -> Result<(), TaskError> {
        if self.op.processing_deadline().is_some_and(|d| d <= now) {
            let (op, out) = (&mut self.op, &mut self.out);
            guarded(&self.at, || op.on_processing_time(now, out))?;
            self.out.flush()?;
        }
        self.out.advance_processing_time(now)
    }

    fn notify_checkpoint(&mut self, notice: CheckpointNotice) -> Result<(), TaskError> {
        let op = &mut self.op;
        guarded(&self.at, || match notice {
            CheckpointNotice::Complete(id) => op.notify_checkpoint_complete(id),
            CheckpointNotice::Aborted(id) => op.notify_checkpoint_aborted(id),
        })?;
        self.out.notify_checkpoint(notice)
    }

    fn close(&mut self) -> Result<(), TaskError> {
        let op = &mut self.op;
        guarded(&self.at, || op.close())?;
        self.out.close()
    }
}

/// Sends every record and control element to several hops (a stream used by
/// more than one downstream operator). Records are cloned for all but the
/// last hop.
pub struct FanOut<T> {
    outs: Vec<Box<dyn Downstream<T>>>,
    scratch: Vec<StreamRecord<T>>,
}

impl<T: Clone + Send> FanOut<T> {
    /// A fan-out to `outs`.
    pub fn new(outs: Vec<Box<dyn Downstream<T>>>) -> Self {
        FanOut {
            outs,
            scratch: Vec::new(),
        }
    }
}

impl<T: Clone + Send> Downstream<T> for FanOut<T> {
    fn open(&mut self) -> Result<(), TaskError> {
        self.outs.iter_mut().try_for_each(|o| o.open())
    }

    fn push_batch(&mut self, batch: &mut Vec<StreamRecord<T>>) -> Result<(), TaskError> {
        let Some((last, rest)) = self.outs.split_last_mut() else {
            batch.clear();
            return Ok(());
        };
        for out in rest {
            self.scratch.extend_from_slice(batch);
            out.push_batch(&mut self.scratch)?;
            self.scratch.clear();
        }
        last.push_batch(batch)
    }

    fn push_control(&mut self, control: Control) -> Result<(), TaskError> {
        self.outs
            .iter_mut()
            .try_for_each(|o| o.push_control(control))
    }

    fn flush_buffers(&mut self) -> Result<(), TaskError> {
        self.outs.iter_mut().try_for_each(|o| o.flush_buffers())
    }

    fn processing_deadline(&self) -> Option<i64> {
        self.outs
            .iter()
            .fold(None, |d, o| min_deadline(d, o.processing_deadline()))
    }

    fn advance_processing_time(&mut self, now: i64) -> Result<(), TaskError> {
        self.outs
            .iter_mut()
            .try_for_each(|o| o.advance_processing_time(now))
    }

    fn notify_checkpoint(&mut self, notice: CheckpointNotice) -> Result<(), TaskError> {
        self.outs
            .iter_mut()
            .try_for_each(|o| o.notify_checkpoint(notice))
    }

    fn close(&mut self) -> Result<(), TaskError> {
        self.outs.iter_mut().try_for_each(|o| o.close())
    }
}

/// Drops everything: the output of an operator nothing consumes (sinks).
pub struct Discard;

impl<T: Send> Downstream<T> for Discard {
    #[inline]
    fn push_batch(&mut self, batch: &mut Vec<StreamRecord<T>>) -> Result<(), TaskError> {
        batch.clear();
        Ok(())
    }

    fn push_control(&mut self, _control: Control) -> Result<(), TaskError> {
        Ok(())
    }
}
