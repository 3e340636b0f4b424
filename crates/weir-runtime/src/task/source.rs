//! Sources: user functions that produce records, driven by the task loop.

use super::{await_final_checkpoint, FlushTimer, ProcessingTime, TaskHead, TaskSettings};
use crate::checkpoint::{CheckpointNotice, TaskMessage};
use crate::element::{Control, StreamRecord, WatermarkStatus, MAX_WATERMARK};
use crate::error::{FunctionResult, SubtaskName, TaskError};
use crate::operator::{guarded, Output, RuntimeContext};

/// Whether a source has more to give.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceStatus {
    /// Call `poll_next` again.
    More,
    /// The (bounded) input is exhausted: the source ends.
    Finished,
}

/// Where a source writes the records of one poll, and, for sources that
/// generate their own watermarks, the watermark and idleness after them.
pub struct SourceContext<'a, T> {
    records: &'a mut Vec<StreamRecord<T>>,
    limit: usize,
    watermark: Option<i64>,
    idle: Option<bool>,
}

impl<'a, T> SourceContext<'a, T> {
    /// A context appending to `records` until it holds `limit` records.
    pub fn new(records: &'a mut Vec<StreamRecord<T>>, limit: usize) -> Self {
        SourceContext {
            records,
            limit,
            watermark: None,
            idle: None,
        }
    }

    /// Emits a watermark after this poll's records. Only watermarks above
    /// the source's last one are forwarded.
    pub fn emit_watermark(&mut self, watermark: i64) {
        self.watermark = Some(self.watermark.map_or(watermark, |w| w.max(watermark)));
    }

    /// Marks the source idle (after this poll's records) until it emits
    /// records or a watermark again.
    pub fn mark_idle(&mut self) {
        self.idle = Some(true);
    }

    /// Marks the source active again.
    pub fn mark_active(&mut self) {
        self.idle = Some(false);
    }

    /// Emits a record without timestamp.
    #[inline]
    pub fn collect(&mut self, value: T) {
        self.records.push(StreamRecord::new(value));
    }

    /// Emits a record with an event timestamp (ms).
    #[inline]
    pub fn collect_with_timestamp(&mut self, value: T, timestamp: i64) {
        self.records
            .push(StreamRecord::with_timestamp(value, timestamp));
    }

    /// How many more records this poll should emit; a source may emit more,
    /// but should return once this reaches zero so the task can interleave
    /// control work.
    #[inline]
    pub fn remaining(&self) -> usize {
        self.limit.saturating_sub(self.records.len())
    }

    /// Whether this poll has emitted enough.
    #[inline]
    pub fn is_full(&self) -> bool {
        self.remaining() == 0
    }
}

/// A source of records (Flink's `SourceFunction`, pull-based).
///
/// The task calls `poll_next` in a loop; between calls it flushes output,
/// checks for cancellation and (with checkpointing) takes snapshots, so a
/// source never needs a lock or its own thread. By implementing this trait,
/// you promise that `poll_next` returns within about 100 ms even when no
/// data is available (emitting nothing), so that cancellation and timers are
/// never starved.
pub trait SourceFunction<T>: Send + 'static {
    /// Called once before the first poll, with this subtask's context (a
    /// parallel source uses it to pick its share of the input).
    fn open(&mut self, _ctx: &RuntimeContext) -> FunctionResult {
        Ok(())
    }

    /// Emits up to `ctx.remaining()` records.
    fn poll_next(&mut self, ctx: &mut SourceContext<'_, T>) -> FunctionResult<SourceStatus>;

    /// The source's position for a checkpoint (e.g. an offset), as bytes;
    /// `None` if it cannot resume. Restored through [`restore_position`]
    /// right after `open` on recovery.
    ///
    /// [`restore_position`]: SourceFunction::restore_position
    fn snapshot_position(&mut self, _checkpoint_id: u64) -> FunctionResult<Option<Vec<u8>>> {
        Ok(None)
    }

    /// Resumes from a position written by `snapshot_position`.
    fn restore_position(&mut self, _position: &[u8]) -> FunctionResult {
        Ok(())
    }

    /// Checkpoint `checkpoint_id` completed: every subtask's state of it
    /// is durable (e.g. commit the offsets it holds to an external system
    /// for monitoring, as Flink's Kafka source does). Called between polls.
    fn notify_checkpoint_complete(&mut self, _checkpoint_id: u64) -> FunctionResult {
        Ok(())
    }

    /// Called once after the last poll.
    fn close(&mut self) -> FunctionResult {
        Ok(())
    }
}

/// The head of a task that starts with a source.
pub struct SourceHead<T> {
    source: Box<dyn SourceFunction<T>>,
    out: Output<T>,
    ctx: RuntimeContext,
    at: SubtaskName,
    settings: TaskSettings,
}

impl<T: Send + 'static> SourceHead<T> {
    /// A head running `source` into `out`.
    pub fn new(
        source: Box<dyn SourceFunction<T>>,
        out: Output<T>,
        ctx: RuntimeContext,
        settings: TaskSettings,
    ) -> Self {
        let at = ctx.subtask_name();
        SourceHead {
            source,
            out,
            ctx,
            at,
            settings,
        }
    }
}

impl<T: Send + 'static> TaskHead for SourceHead<T> {
    fn run(mut self: Box<Self>, opened: &dyn Fn()) -> Result<(), TaskError> {
        let SourceHead {
            source,
            out,
            ctx,
            at,
            settings,
        } = &mut *self;
        out.open()?;
        guarded(at, || source.open(ctx))?;
        let restored = guarded(at, || Ok(ctx.subtask_state.take_position()?))?;
        if let Some(position) = restored {
            guarded(at, || source.restore_position(&position))?;
        }
        opened();
        let mut flush = FlushTimer::new(settings.buffer_timeout);
        let mut time = ProcessingTime::new(settings.clock.clone());
        let (mut watermark, mut idle) = (i64::MIN, false);
        // The stop-with-savepoint this source halted for, if any.
        let mut halted: Option<u64> = None;
        loop {
            if settings.cancel.is_cancelled() {
                return Err(TaskError::Cancelled);
            }
            if halted.is_some() {
                // Nothing after a stop's barrier: wait for the stop or its
                // abort.
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            let polled = std::time::Instant::now();
            let (status, wm, now_idle) = if halted.is_some() {
                (SourceStatus::More, None, None)
            } else {
                guarded(at, || {
                    let mut ctx = SourceContext::new(out.records(), settings.batch_size);
                    let status = source.poll_next(&mut ctx)?;
                    Ok((status, ctx.watermark, ctx.idle))
                })?
            };
            let emitted = !out.records().is_empty();
            if emitted {
                settings.probe.on_records();
            } else {
                // A poll that found nothing (a socket without data, a
                // consumer with no new records) waited for input: idle,
                // not busy, as Flink counts a source without data.
                settings.times.add_idle(polled.elapsed());
            }
            if idle && (emitted || wm.is_some_and(|w| w > watermark) || now_idle == Some(false)) {
                idle = false;
                settings.probe.on_source_idle(false);
                out.forward_control(Control::WatermarkStatus(WatermarkStatus::Active))?;
            }
            out.flush()?;
            if let Some(w) = wm.filter(|w| *w > watermark) {
                watermark = w;
                settings.probe.on_source_watermark(w);
                out.emit_watermark(w)?;
            }
            if now_idle == Some(true) && !idle {
                idle = true;
                settings.probe.on_source_idle(true);
                out.forward_control(Control::WatermarkStatus(WatermarkStatus::Idle))?;
            }
            // After a stop's barrier nothing runs on processing time (as
            // Flink quiesces its timers): a periodic watermark would fire
            // timers whose output the savepoint's state emits again on
            // resume.
            if halted.is_none() {
                time.tick(out)?;
            }
            if flush.due() {
                out.flush_buffers()?;
            }
            while let Some(message) = settings.next_message() {
                match message {
                    TaskMessage::Terminate => {
                        // Stopped after a savepoint: no end of input.
                        guarded(at, || source.close())?;
                        return out.close();
                    }
                    TaskMessage::Trigger(barrier) | TaskMessage::TriggerStop { barrier, .. } => {
                        if let TaskMessage::TriggerStop { drain, .. } = message {
                            // Drain: every event-time window and timer
                            // fires before the savepoint's barrier.
                            if drain && watermark < MAX_WATERMARK {
                                watermark = MAX_WATERMARK;
                                out.emit_watermark(MAX_WATERMARK)?;
                            }
                            halted = Some(barrier.checkpoint_id);
                        }
                        // The position is taken between polls, so it names
                        // exactly the records emitted before the barrier.
                        let started = std::time::Instant::now();
                        let position =
                            guarded(at, || source.snapshot_position(barrier.checkpoint_id))?;
                        ctx.acknowledge_checkpoint(&barrier, position, started);
                        out.forward_control(Control::Barrier(barrier))?;
                    }
                    TaskMessage::Complete(id) => {
                        guarded(at, || source.notify_checkpoint_complete(id))?;
                        out.notify_checkpoint(CheckpointNotice::Complete(id))?
                    }
                    TaskMessage::Aborted(id) => {
                        if halted == Some(id) {
                            // The stop failed: the job goes on.
                            halted = None;
                        }
                        out.notify_checkpoint(CheckpointNotice::Aborted(id))?
                    }
                    TaskMessage::Final(_) => {}
                }
            }
            if status == SourceStatus::Finished {
                break;
            }
        }
        out.emit_watermark(MAX_WATERMARK)?;
        // The position after the last record: a restore of a checkpoint
        // taken from now on must not replay anything.
        if ctx.checkpoint.is_some() {
            let position = guarded(at, || {
                source.snapshot_position(crate::checkpoint::FINAL_SNAPSHOT)
            })?;
            guarded(at, || Ok(ctx.report_finished(position)?))?;
        }
        out.forward_control(Control::EndOfInput)?;
        await_final_checkpoint(settings, |notice| out.notify_checkpoint(notice))?;
        guarded(at, || source.close())?;
        out.close()
    }
}
