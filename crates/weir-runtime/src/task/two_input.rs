//! The head of a task whose first operator has two inputs (`connect`).

use super::{
    await_final_checkpoint, wait_for_input, FlushTimer, GateEvent, InputGate, ProcessingTime,
    TaskHead, TaskSettings,
};
use crate::checkpoint::{CheckpointNotice, TaskMessage};
use crate::element::{Barrier, Control, WatermarkStatus};
use crate::error::{SubtaskName, TaskError};
use crate::metrics::{OperatorMetrics, SubtaskCounts};
use crate::operator::min_deadline;
use crate::operator::{guarded, Output, RuntimeContext, TwoInputOperator};
use std::sync::Arc;

/// Reads two input gates into a two-input operator.
pub struct TwoInputHead<Op: TwoInputOperator> {
    op: Op,
    out: Output<Op::Out>,
    gate1: InputGate<Op::In1>,
    gate2: InputGate<Op::In2>,
    ctx: RuntimeContext,
    at: SubtaskName,
    metrics: Arc<OperatorMetrics>,
    counts: Arc<SubtaskCounts>,
    settings: TaskSettings,
    watermark: i64,
    idle: bool,
    // The barrier being aligned across both inputs, and which delivered it.
    barrier: Option<(Barrier, [bool; 2])>,
}

impl<Op: TwoInputOperator> TwoInputHead<Op> {
    /// A head feeding `op` from two gates.
    pub fn new(
        op: Op,
        out: Output<Op::Out>,
        gates: (InputGate<Op::In1>, InputGate<Op::In2>),
        ctx: RuntimeContext,
        metrics: Arc<OperatorMetrics>,
        settings: TaskSettings,
    ) -> Self {
        let at = ctx.subtask_name();
        let counts = metrics.subtask_counts(ctx.subtask_index);
        TwoInputHead {
            counts,
            op,
            out,
            gate1: gates.0,
            gate2: gates.1,
            ctx,
            at,
            metrics,
            settings,
            watermark: i64::MIN,
            idle: false,
            barrier: None,
        }
    }

    /// The operator's watermark is the minimum of its inputs' (Flink's
    /// combined watermark); an idle or finished input does not hold it back.
    fn combined_watermark(&self) -> Option<i64> {
        let w1 =
            (!self.gate1.is_idle() && !self.gate1.is_finished()).then(|| self.gate1.watermark());
        let w2 =
            (!self.gate2.is_idle() && !self.gate2.is_finished()).then(|| self.gate2.watermark());
        match (w1, w2) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (Some(a), None) => Some(a),
            (None, Some(b)) => Some(b),
            (None, None) => Some(self.gate1.watermark().max(self.gate2.watermark())),
        }
    }

    /// Shows the operator's pending event-time timers, if it keeps any.
    fn publish_timers(&self) {
        if let Some((count, earliest)) = self.op.pending_event_timers() {
            self.counts.set_timers(count, earliest);
        }
    }

    fn on_watermark_change(&mut self) -> Result<(), TaskError> {
        if let Some(wm) = self.combined_watermark() {
            if wm > self.watermark {
                self.watermark = wm;
                self.metrics.set_watermark(self.ctx.subtask_index, wm);
                let (op, out) = (&mut self.op, &mut self.out);
                guarded(&self.at, || op.process_watermark(wm, out))?;
                self.publish_timers();
            }
        }
        let idle = (self.gate1.is_idle() || self.gate1.is_finished())
            && (self.gate2.is_idle() || self.gate2.is_finished())
            && !(self.gate1.is_finished() && self.gate2.is_finished());
        if idle != self.idle {
            self.idle = idle;
            let status = if idle {
                WatermarkStatus::Idle
            } else {
                WatermarkStatus::Active
            };
            self.out.forward_control(Control::WatermarkStatus(status))?;
        }
        Ok(())
    }

    /// Input `input` delivered barrier `b` on all its channels. With
    /// alignment, that input is held until the other delivers it too.
    fn on_barrier(&mut self, b: Barrier, input: usize) -> Result<(), TaskError> {
        let seen = match &mut self.barrier {
            Some((pending, seen)) if pending.checkpoint_id == b.checkpoint_id => seen,
            _ => &mut self.barrier.insert((b, [false; 2])).1,
        };
        seen[input] = true;
        if self.settings.aligned {
            match input {
                0 => self.gate1.hold(true),
                _ => self.gate2.hold(true),
            }
        }
        self.check_barrier()
    }

    /// Snapshots and forwards the pending barrier once both inputs
    /// delivered it (or ended).
    fn check_barrier(&mut self) -> Result<(), TaskError> {
        let Some((b, seen)) = self.barrier else {
            return Ok(());
        };
        if !((seen[0] || self.gate1.is_finished()) && (seen[1] || self.gate2.is_finished())) {
            return Ok(());
        }
        self.barrier = None;
        self.gate1.hold(false);
        self.gate2.hold(false);
        let op = &mut self.op;
        let started = std::time::Instant::now();
        guarded(&self.at, || op.snapshot_state(b.checkpoint_id))?;
        self.ctx.acknowledge_checkpoint(&b, None, started);
        self.out.forward_control(Control::Barrier(b))
    }

    fn step(&mut self, poll_first: bool) -> Result<bool, TaskError> {
        let event = if poll_first {
            self.gate1.poll()?.map(Either::First)
        } else {
            self.gate2.poll()?.map(Either::Second)
        };
        let Some(event) = event else {
            return Ok(false);
        };
        let (op, out) = (&mut self.op, &mut self.out);
        match event {
            Either::First(GateEvent::Records(mut batch)) => {
                self.counts.add_in(batch.len());
                guarded(&self.at, || op.process_batch1(&mut batch, out))?;
                self.publish_timers();
                self.out.flush()?;
            }
            Either::Second(GateEvent::Records(mut batch)) => {
                self.counts.add_in(batch.len());
                guarded(&self.at, || op.process_batch2(&mut batch, out))?;
                self.publish_timers();
                self.out.flush()?;
            }
            Either::First(GateEvent::Barrier(b)) => self.on_barrier(b, 0)?,
            Either::Second(GateEvent::Barrier(b)) => self.on_barrier(b, 1)?,
            _ => {
                self.on_watermark_change()?;
                self.check_barrier()?;
            }
        }
        Ok(true)
    }
}

impl<Op: TwoInputOperator> super::TimeDriven for TwoInputHead<Op> {
    fn deadline(&self) -> Option<i64> {
        min_deadline(
            self.op.processing_deadline(),
            self.out.processing_deadline(),
        )
    }

    fn advance(&mut self, now: i64) -> Result<(), TaskError> {
        if self.op.processing_deadline().is_some_and(|d| d <= now) {
            let (op, out) = (&mut self.op, &mut self.out);
            guarded(&self.at, || op.on_processing_time(now, out))?;
            self.out.flush()?;
        }
        self.out.advance_processing_time(now)
    }
}

/// Hands a checkpoint notice to the operator, then to what is chained
/// after it.
fn deliver<Op: TwoInputOperator>(
    op: &mut Op,
    out: &mut Output<Op::Out>,
    at: &SubtaskName,
    notice: CheckpointNotice,
) -> Result<(), TaskError> {
    guarded(at, || match notice {
        CheckpointNotice::Complete(id) => op.notify_checkpoint_complete(id),
        CheckpointNotice::Aborted(id) => op.notify_checkpoint_aborted(id),
    })?;
    out.notify_checkpoint(notice)
}

enum Either<A, B> {
    First(A),
    Second(B),
}

impl<Op: TwoInputOperator> TaskHead for TwoInputHead<Op> {
    fn run(mut self: Box<Self>, opened: &dyn Fn()) -> Result<(), TaskError> {
        self.out.open()?;
        let (op, ctx) = (&mut self.op, &self.ctx);
        guarded(&self.at, || op.open(ctx))?;
        opened();
        let mut flush = FlushTimer::new(self.settings.buffer_timeout);
        let mut time = ProcessingTime::new(self.settings.clock.clone());
        let mut first = true;
        while !(self.gate1.is_finished() && self.gate2.is_finished()) {
            if self.settings.cancel.is_cancelled() {
                return Err(TaskError::Cancelled);
            }
            // Alternate between inputs so neither starves the other.
            let progressed = self.step(first)? || self.step(!first)?;
            first = !first;
            if !progressed {
                wait_for_input(
                    &[&self.gate1, &self.gate2],
                    &self.settings,
                    time.wait_limit(flush.wait_limit()),
                )?;
            }
            time.tick(&mut *self)?;
            while let Some(message) = self.settings.next_message() {
                let notice = match message {
                    TaskMessage::Complete(id) => CheckpointNotice::Complete(id),
                    TaskMessage::Aborted(id) => CheckpointNotice::Aborted(id),
                    TaskMessage::Terminate => {
                        // Stopped after a savepoint: no end of input.
                        let op = &mut self.op;
                        guarded(&self.at, || op.close())?;
                        return self.out.close();
                    }
                    TaskMessage::Trigger(_)
                    | TaskMessage::TriggerStop { .. }
                    | TaskMessage::Final(_) => continue,
                };
                deliver(&mut self.op, &mut self.out, &self.at, notice)?;
            }
            if flush.due() {
                self.out.flush_buffers()?;
            }
        }
        // Both gates may report `Finished` still; it carries no data.
        let (op, out) = (&mut self.op, &mut self.out);
        if op.processing_deadline().is_some() {
            guarded(&self.at, || op.on_processing_time(i64::MAX, out))?;
        }
        guarded(&self.at, || op.end_input(out))?;
        let (op, ctx) = (&mut self.op, &self.ctx);
        if ctx.checkpoint.is_some() {
            guarded(&self.at, || {
                op.snapshot_state(crate::checkpoint::FINAL_SNAPSHOT)?;
                Ok(ctx.report_finished(None)?)
            })?;
        }
        self.out.forward_control(Control::EndOfInput)?;
        let (op, out, at) = (&mut self.op, &mut self.out, &self.at);
        await_final_checkpoint(&self.settings, |notice| deliver(op, out, at, notice))?;
        let op = &mut self.op;
        guarded(&self.at, || op.close())?;
        self.out.close()
    }
}
