//! Sources that read several splits (partitions, files, shards) at once,
//! with a watermark generator per split (Flink's per-split watermarks).
//!
//! A split whose records lag behind holds the source's watermark back; a
//! split that is idle (with `with_idleness`) or finished does not. The
//! source's watermark is the minimum over its active splits, emitted after
//! each poll.

use weir_runtime::provenance::SplitState;
use weir_runtime::time::SharedClock;

use crate::functions::{
    FunctionResult, RuntimeContext, SourceContext, SourceFunction, SourceStatus,
};
use crate::watermark::{assign_timestamp, Generator, Idleness, WatermarkOutput, WatermarkStrategy};

/// Where a split source writes the records of one poll, each with its split.
pub struct SplitContext<'a, T> {
    records: &'a mut Vec<(usize, T, i64)>,
    finished: &'a mut Vec<usize>,
    names: &'a mut Vec<(usize, String)>,
    limit: usize,
    no_splits: bool,
    splits: usize,
}

impl<T> SplitContext<'_, T> {
    /// Emits a record of `split` without timestamp (the strategy's
    /// assigner gives it one).
    pub fn collect(&mut self, split: usize, value: T) {
        self.records
            .push((split, value, weir_runtime::element::NO_TIMESTAMP));
    }

    /// Emits a record of `split` with an event timestamp.
    pub fn collect_with_timestamp(&mut self, split: usize, value: T, timestamp: i64) {
        self.records.push((split, value, timestamp));
    }

    /// Names `split` (e.g. `orders-7`, partition 7 of topic `orders`) in
    /// the job's watermark diagnosis; unnamed splits show their index.
    pub fn name_split(&mut self, split: usize, name: impl Into<String>) {
        self.names.push((split, name.into()));
    }

    /// `split` has no more records: it stops holding the watermark back.
    pub fn finish_split(&mut self, split: usize) {
        self.finished.push(split);
    }

    /// This subtask reads splits `0..count`: each holds the watermark back
    /// from the start, before its first record, until it is idle (with
    /// `with_idleness`) or finished, as in Flink. Without this, a split
    /// counts from its first record on.
    pub fn declare_splits(&mut self, count: usize) {
        self.splits = self.splits.max(count);
    }

    /// This subtask has no splits to read (e.g. fewer partitions than
    /// subtasks): it marks itself idle, so that it does not hold back the
    /// watermark downstream.
    pub fn mark_no_splits(&mut self) {
        self.no_splits = true;
    }

    /// How many more records this poll should emit.
    pub fn remaining(&self) -> usize {
        self.limit.saturating_sub(self.records.len())
    }
}

/// A source of several splits (see the module docs). Same contract as
/// [`SourceFunction`]: `poll_next` returns within about 100 ms.
pub trait SplitSourceFunction<T>: Send + 'static {
    /// Called once before the first poll.
    fn open(&mut self, _ctx: &RuntimeContext) -> FunctionResult {
        Ok(())
    }

    /// Emits up to `ctx.remaining()` records, each tagged with its split.
    fn poll_next(&mut self, ctx: &mut SplitContext<'_, T>) -> FunctionResult<SourceStatus>;

    /// The positions of all splits for a checkpoint (see
    /// [`SourceFunction::snapshot_position`]).
    fn snapshot_position(&mut self, _checkpoint_id: u64) -> FunctionResult<Option<Vec<u8>>> {
        Ok(None)
    }

    /// Resumes from a position written by `snapshot_position`.
    fn restore_position(&mut self, _position: &[u8]) -> FunctionResult {
        Ok(())
    }

    /// See [`SourceFunction::notify_checkpoint_complete`].
    fn notify_checkpoint_complete(&mut self, _checkpoint_id: u64) -> FunctionResult {
        Ok(())
    }

    /// Called once after the last poll.
    fn close(&mut self) -> FunctionResult {
        Ok(())
    }
}

struct Split<T> {
    generator: Generator<T>,
    idleness: Option<Idleness>,
    watermark: i64,
    idle: bool,
    finished: bool,
    name: Option<String>,
    /// When it last had a record (wall clock, ms).
    last_record_ms: Option<i64>,
}

/// Runs a [`SplitSourceFunction`] with a watermark generator per split.
pub(crate) struct SplitWatermarkSource<S, T> {
    inner: S,
    strategy: WatermarkStrategy<T>,
    splits: Vec<Split<T>>,
    ctx: Option<RuntimeContext>,
    clock: Option<SharedClock>,
    interval_ms: i64,
    next_periodic: i64,
    buffer: Vec<(usize, T, i64)>,
    finished: Vec<usize>,
    names: Vec<(usize, String)>,
}

impl<S, T> SplitWatermarkSource<S, T> {
    pub fn new(inner: S, strategy: WatermarkStrategy<T>) -> Self {
        SplitWatermarkSource {
            inner,
            strategy,
            splits: Vec::new(),
            ctx: None,
            clock: None,
            interval_ms: 0,
            next_periodic: i64::MAX,
            buffer: Vec::new(),
            finished: Vec::new(),
            names: Vec::new(),
        }
    }

    fn split(&mut self, index: usize) -> Option<&mut Split<T>> {
        while self.splits.len() <= index {
            let ctx = self.ctx.as_ref()?;
            self.splits.push(Split {
                generator: Generator::new(&self.strategy.generator, ctx),
                idleness: self.strategy.idleness.map(Idleness::new),
                watermark: i64::MIN,
                idle: false,
                finished: false,
                name: None,
                last_record_ms: None,
            });
        }
        self.splits.get_mut(index)
    }
}

impl<S, T> SplitWatermarkSource<S, T> {
    /// Shows each split's state in the job's watermark diagnosis (once
    /// per watermark interval).
    fn report_splits(&self) {
        let Some(ctx) = &self.ctx else {
            return;
        };
        let splits = self
            .splits
            .iter()
            .enumerate()
            .map(|(i, s)| SplitState {
                name: s.name.clone().unwrap_or_else(|| format!("split {i}")),
                watermark: s.watermark,
                idle: s.idle,
                finished: s.finished,
                last_record_ms: s.last_record_ms,
            })
            .collect();
        ctx.probe.update_source(|state| state.splits = splits);
    }
}

impl<S: SplitSourceFunction<T>, T: Send + 'static> SourceFunction<T>
    for SplitWatermarkSource<S, T>
{
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.ctx = Some(ctx.clone());
        self.clock = Some(ctx.clock.clone());
        self.interval_ms = ctx.auto_watermark_interval.as_millis() as i64;
        if self.interval_ms > 0 {
            self.next_periodic = ctx.clock.now_ms().saturating_add(self.interval_ms);
        }
        self.inner.open(ctx)
    }

    fn snapshot_position(&mut self, checkpoint_id: u64) -> FunctionResult<Option<Vec<u8>>> {
        self.inner.snapshot_position(checkpoint_id)
    }

    fn restore_position(&mut self, position: &[u8]) -> FunctionResult {
        self.inner.restore_position(position)
    }

    fn notify_checkpoint_complete(&mut self, checkpoint_id: u64) -> FunctionResult {
        self.inner.notify_checkpoint_complete(checkpoint_id)
    }

    fn poll_next(&mut self, ctx: &mut SourceContext<'_, T>) -> FunctionResult<SourceStatus> {
        let mut buffer = std::mem::take(&mut self.buffer);
        let mut finished = std::mem::take(&mut self.finished);
        let mut names = std::mem::take(&mut self.names);
        let mut split_ctx = SplitContext {
            records: &mut buffer,
            finished: &mut finished,
            names: &mut names,
            limit: ctx.remaining().max(1),
            no_splits: false,
            splits: 0,
        };
        let status = self.inner.poll_next(&mut split_ctx)?;
        let no_splits = split_ctx.no_splits;
        if let Some(last) = split_ctx.splits.checked_sub(1) {
            self.split(last);
        }
        let now = self.clock.as_ref().map_or(0, |c| c.now_ms());
        for (index, name) in names.drain(..) {
            if let Some(split) = self.split(index) {
                split.name = Some(name);
            }
        }
        self.names = names;
        let wall = (!buffer.is_empty()).then(weir_runtime::provenance::wall_clock_ms);
        for (index, value, timestamp) in buffer.drain(..) {
            let timestamp = assign_timestamp(&self.strategy.timestamps, &value, timestamp, now);
            if let Some(split) = self.split(index) {
                let mut out = WatermarkOutput::default();
                split.generator.on_event(&value, timestamp, &mut out);
                split.idle = false;
                split.last_record_ms = wall;
                if let Some(i) = &mut split.idleness {
                    i.activity += 1;
                }
                if let Some(w) = out.watermark {
                    split.watermark = split.watermark.max(w);
                }
            }
            ctx.collect_with_timestamp(value, timestamp);
        }
        for index in finished.drain(..) {
            if let Some(split) = self.split(index) {
                split.finished = true;
            }
        }
        self.buffer = buffer;
        self.finished = finished;
        if now >= self.next_periodic {
            self.next_periodic = now.saturating_add(self.interval_ms);
            for split in &mut self.splits {
                if split.idleness.as_mut().is_some_and(|i| i.is_idle(now)) {
                    split.idle = true;
                    continue;
                }
                let mut out = WatermarkOutput::default();
                split.generator.on_periodic_emit(&mut out);
                if let Some(w) = out.watermark {
                    split.watermark = split.watermark.max(w);
                }
            }
            self.report_splits();
        }
        let live: Vec<&Split<T>> = self.splits.iter().filter(|s| !s.finished).collect();
        match live.iter().filter(|s| !s.idle).map(|s| s.watermark).min() {
            Some(w) => ctx.emit_watermark(w),
            None if live.iter().any(|s| s.idle) || (live.is_empty() && no_splits) => {
                ctx.mark_idle()
            }
            None => {}
        }
        Ok(status)
    }

    fn close(&mut self) -> FunctionResult {
        self.inner.close()
    }
}
