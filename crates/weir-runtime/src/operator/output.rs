//! Where an operator writes: its main output buffer and its side outputs.

use std::any::Any;
use std::sync::Arc;

use super::Downstream;
use crate::checkpoint::CheckpointNotice;
use crate::element::{Control, StreamRecord};
use crate::error::TaskError;
use crate::metrics::{OperatorMetrics, SubtaskCounts};

/// An operator's output: a buffer of records for the next hop, plus the
/// side outputs that downstream operators consume.
///
/// Records collected here are handed on when the operator's call returns (or
/// earlier, before a control element), never one by one.
pub struct Output<O> {
    buffer: Vec<StreamRecord<O>>,
    next: Box<dyn Downstream<O>>,
    sides: SideOutputs,
    metrics: Arc<OperatorMetrics>,
    counts: Arc<SubtaskCounts>,
}

impl<O> Output<O> {
    /// Records an operator buffers before [`Output::flush_if_full`] hands
    /// them on: a quarter of a source's batch. The results of one call
    /// that emits many (a bundle of many keys, a firing of many windows)
    /// are then handed on, and dropped or sent, while still in the core's
    /// caches, and their memory is reused from there: a `GROUP BY`'s
    /// result rows of fifteen columns made a batch of 1024 some 400 KiB,
    /// and Nexmark q16's SQL query ran 7 % faster with 256.
    pub const FULL_BATCH: usize = 256;
}

impl<O: Send + 'static> Output<O> {
    /// An output to `next` with side outputs `sides`, counting into `metrics`.
    pub fn new(
        next: Box<dyn Downstream<O>>,
        sides: SideOutputs,
        metrics: Arc<OperatorMetrics>,
    ) -> Self {
        Output {
            buffer: Vec::new(),
            next,
            sides,
            counts: metrics.subtask_counts(0),
            metrics,
        }
    }

    /// Emits a record.
    #[inline]
    pub fn collect(&mut self, record: StreamRecord<O>) {
        self.buffer.push(record);
    }

    /// Emits the value in `taken` stamped `timestamp`, taken out of it
    /// where it lies (`None` is left there) and copied a word at a time
    /// ([`StreamRecord::push_taken`]).
    #[inline(always)]
    pub fn collect_taken(&mut self, taken: &mut Option<O>, timestamp: i64) {
        StreamRecord::push_taken(&mut self.buffer, taken, timestamp);
    }

    /// The pending records, to extend in bulk.
    #[inline]
    pub fn records(&mut self) -> &mut Vec<StreamRecord<O>> {
        &mut self.buffer
    }

    /// The main buffer and the side outputs at once, for functions that
    /// write to both.
    #[inline]
    pub fn split(&mut self) -> (&mut Vec<StreamRecord<O>>, &mut SideOutputs) {
        (&mut self.buffer, &mut self.sides)
    }

    /// Whether side outputs hold records not yet handed on. An operator
    /// that must keep the order between its main and side output (the
    /// window operator's late records) flushes before switching.
    pub fn has_pending_side_records(&self) -> bool {
        self.sides.has_pending()
    }

    /// Hands pending records (main and side) to the next hop.
    pub fn flush(&mut self) -> Result<(), TaskError> {
        if !self.buffer.is_empty() {
            self.counts.add_out(self.buffer.len());
            self.next.push_batch(&mut self.buffer)?;
        }
        self.sides.flush()
    }

    /// Hands the pending records on once they fill a batch. An operator
    /// that emits many records in one call (a watermark that fires every
    /// window, timers of many keys) calls it between them, so what it
    /// buffers stays one batch instead of everything the call emits.
    #[inline]
    pub fn flush_if_full(&mut self) -> Result<(), TaskError> {
        if self.buffer.len() >= Self::FULL_BATCH {
            self.flush()?;
        }
        Ok(())
    }

    /// Flushes, then asks every hop downstream to send partial buffers.
    pub fn flush_buffers(&mut self) -> Result<(), TaskError> {
        self.flush()?;
        self.next.flush_buffers()?;
        self.sides.flush_buffers()
    }

    /// The earliest processing-time deadline downstream.
    pub fn processing_deadline(&self) -> Option<i64> {
        min_deadline(
            self.next.processing_deadline(),
            self.sides.processing_deadline(),
        )
    }

    /// Passes processing time on downstream.
    pub fn advance_processing_time(&mut self, now: i64) -> Result<(), TaskError> {
        self.next.advance_processing_time(now)?;
        self.sides.advance_processing_time(now)
    }

    /// Emits a watermark after every record collected so far, on the main
    /// and every side output (Flink broadcasts watermarks to side outputs).
    pub fn emit_watermark(&mut self, watermark: i64) -> Result<(), TaskError> {
        self.counts.set_output_watermark(watermark);
        self.forward_control(Control::Watermark(watermark))
    }

    /// Counts records and shows watermarks as `subtask`'s (0 by default).
    pub fn with_subtask(mut self, subtask: u32) -> Self {
        self.counts = self.metrics.subtask_counts(subtask);
        self
    }

    /// Passes a control element on, after every record collected so far.
    pub fn forward_control(&mut self, control: Control) -> Result<(), TaskError> {
        self.flush()?;
        self.next.push_control(control)?;
        self.sides.push_control(control)
    }

    /// Opens everything downstream.
    pub fn open(&mut self) -> Result<(), TaskError> {
        self.next.open()?;
        self.sides.open()
    }

    /// Passes a checkpoint notice to the operators chained downstream.
    pub fn notify_checkpoint(&mut self, notice: CheckpointNotice) -> Result<(), TaskError> {
        self.next.notify_checkpoint(notice)?;
        self.sides
            .slots
            .iter_mut()
            .try_for_each(|s| s.notify_checkpoint(notice))
    }

    /// Closes everything downstream.
    pub fn close(&mut self) -> Result<(), TaskError> {
        self.next.close()?;
        self.sides.close()
    }
}

/// One side output of an operator, with its record type erased so that an
/// operator can have several of different types.
pub trait SideOutput: Send {
    /// The tag's id.
    fn tag(&self) -> &str;
    /// For downcasting to the typed [`SideSlot`].
    fn as_any_mut(&mut self) -> &mut dyn Any;
    /// Hands pending records on.
    fn flush(&mut self) -> Result<(), TaskError>;
    /// Flushes and asks downstream to send partial buffers.
    fn flush_buffers(&mut self) -> Result<(), TaskError>;
    /// Passes a checkpoint notice on.
    fn notify_checkpoint(&mut self, notice: CheckpointNotice) -> Result<(), TaskError>;
    /// Passes a control element on.
    fn push_control(&mut self, control: Control) -> Result<(), TaskError>;
    /// Opens downstream.
    fn open(&mut self) -> Result<(), TaskError>;
    /// Whether records wait in the buffer.
    fn has_pending(&self) -> bool;
    /// The earliest processing-time deadline downstream.
    fn processing_deadline(&self) -> Option<i64>;
    /// Passes processing time on downstream.
    fn advance_processing_time(&mut self, now: i64) -> Result<(), TaskError>;
    /// Closes downstream.
    fn close(&mut self) -> Result<(), TaskError>;
}

/// A typed side output: a buffer and the hop its records go to.
pub struct SideSlot<X> {
    tag: String,
    buffer: Vec<StreamRecord<X>>,
    next: Box<dyn Downstream<X>>,
}

impl<X: Send + 'static> SideSlot<X> {
    /// A side output for `tag` whose records go to `next`.
    pub fn new(tag: String, next: Box<dyn Downstream<X>>) -> Self {
        SideSlot {
            tag,
            buffer: Vec::new(),
            next,
        }
    }
}

impl<X: Send + 'static> SideOutput for SideSlot<X> {
    fn tag(&self) -> &str {
        &self.tag
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
    fn flush(&mut self) -> Result<(), TaskError> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        self.next.push_batch(&mut self.buffer)
    }
    fn flush_buffers(&mut self) -> Result<(), TaskError> {
        self.flush()?;
        self.next.flush_buffers()
    }
    fn notify_checkpoint(&mut self, notice: CheckpointNotice) -> Result<(), TaskError> {
        self.next.notify_checkpoint(notice)
    }
    fn push_control(&mut self, control: Control) -> Result<(), TaskError> {
        self.flush()?;
        self.next.push_control(control)
    }
    fn open(&mut self) -> Result<(), TaskError> {
        self.next.open()
    }
    fn has_pending(&self) -> bool {
        !self.buffer.is_empty()
    }
    fn processing_deadline(&self) -> Option<i64> {
        self.next.processing_deadline()
    }
    fn advance_processing_time(&mut self, now: i64) -> Result<(), TaskError> {
        self.flush()?;
        self.next.advance_processing_time(now)
    }
    fn close(&mut self) -> Result<(), TaskError> {
        self.next.close()
    }
}

/// The side outputs of one operator that something downstream consumes.
/// A tag nobody consumes has no slot, and its records are dropped.
#[derive(Default)]
pub struct SideOutputs {
    slots: Vec<Box<dyn SideOutput>>,
}

impl SideOutputs {
    /// Side outputs over `slots`.
    pub fn new(slots: Vec<Box<dyn SideOutput>>) -> Self {
        SideOutputs { slots }
    }

    /// Emits `record` to the side output `tag`. Returns whether anything
    /// consumes that tag with that type.
    pub fn emit<X: Send + 'static>(&mut self, tag: &str, record: StreamRecord<X>) -> bool {
        for slot in &mut self.slots {
            if slot.tag() == tag {
                if let Some(typed) = slot.as_any_mut().downcast_mut::<SideSlot<X>>() {
                    typed.buffer.push(record);
                    return true;
                }
            }
        }
        false
    }

    fn flush(&mut self) -> Result<(), TaskError> {
        self.slots.iter_mut().try_for_each(|s| s.flush())
    }
    fn has_pending(&self) -> bool {
        self.slots.iter().any(|s| s.has_pending())
    }
    fn flush_buffers(&mut self) -> Result<(), TaskError> {
        self.slots.iter_mut().try_for_each(|s| s.flush_buffers())
    }
    fn push_control(&mut self, control: Control) -> Result<(), TaskError> {
        self.slots
            .iter_mut()
            .try_for_each(|s| s.push_control(control))
    }
    fn open(&mut self) -> Result<(), TaskError> {
        self.slots.iter_mut().try_for_each(|s| s.open())
    }
    fn close(&mut self) -> Result<(), TaskError> {
        self.slots.iter_mut().try_for_each(|s| s.close())
    }
    fn processing_deadline(&self) -> Option<i64> {
        self.slots
            .iter()
            .fold(None, |d, s| min_deadline(d, s.processing_deadline()))
    }
    fn advance_processing_time(&mut self, now: i64) -> Result<(), TaskError> {
        self.slots
            .iter_mut()
            .try_for_each(|s| s.advance_processing_time(now))
    }
}

/// The earlier of two optional deadlines.
pub fn min_deadline(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}
