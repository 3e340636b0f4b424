//! A source that computes each record from its index (Flink's
//! `DataGeneratorSource`), for demos, tests and benchmarks.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::index_ranges::IndexRanges;
use crate::functions::{
    FunctionResult, RuntimeContext, SourceContext, SourceFunction, SourceStatus,
};

/// Emits `f(index)` for each index in `0..count` (or forever), optionally at
/// most `rate` records per second over all subtasks. Indices are split
/// between parallel subtasks in contiguous ranges, so the records of a
/// bounded generator are the same at any parallelism.
///
/// `F` is the function's own type, so each record's call is a direct one
/// (the function is inlined into the source's loop).
pub struct GeneratorSource<T, F: ?Sized = dyn Fn(u64) -> T + Send + Sync> {
    f: Arc<F>,
    _t: std::marker::PhantomData<fn() -> T>,
    count: Option<u64>,
    rate: Option<f64>,
    ranges: IndexRanges,
    started: Option<Instant>,
    emitted: u64,
    subtask_rate: Option<f64>,
}

impl<T, F: ?Sized> Clone for GeneratorSource<T, F> {
    fn clone(&self) -> Self {
        GeneratorSource {
            f: Arc::clone(&self.f),
            _t: std::marker::PhantomData,
            count: self.count,
            rate: self.rate,
            ranges: IndexRanges::default(),
            started: None,
            emitted: 0,
            subtask_rate: None,
        }
    }
}

impl<T, F: Fn(u64) -> T + Send + Sync + 'static> GeneratorSource<T, F> {
    /// `f(0), f(1), …, f(count - 1)`.
    pub fn new(count: u64, f: F) -> Self {
        Self::build(Some(count), f)
    }

    /// `f(0), f(1), …` without end.
    pub fn unbounded(f: F) -> Self {
        Self::build(None, f)
    }

    fn build(count: Option<u64>, f: F) -> Self {
        GeneratorSource {
            f: Arc::new(f),
            _t: std::marker::PhantomData,
            count,
            rate: None,
            ranges: IndexRanges::default(),
            started: None,
            emitted: 0,
            subtask_rate: None,
        }
    }

    /// Emits at most `records_per_second` over all subtasks.
    pub fn with_rate_limit(mut self, records_per_second: f64) -> Self {
        self.rate = (records_per_second > 0.0).then_some(records_per_second);
        self
    }
}

impl<T, F> SourceFunction<T> for GeneratorSource<T, F>
where
    T: Send + 'static,
    F: Fn(u64) -> T + Send + Sync + ?Sized + 'static,
{
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        let (i, p) = (u64::from(ctx.subtask_index), u64::from(ctx.parallelism));
        let share = match self.count {
            Some(count) => {
                // u128 so that count * i cannot overflow.
                let share = |k: u64| (u128::from(count) * u128::from(k) / u128::from(p)) as u64;
                (share(i), share(i + 1))
            }
            // Unbounded: each subtask owns its own slice of the index space.
            None => ((u64::MAX / p) * i, (u64::MAX / p) * (i + 1)),
        };
        self.ranges = IndexRanges::open(ctx, share)?;
        self.subtask_rate = self.rate.map(|r| r / p as f64);
        Ok(())
    }

    fn poll_next(&mut self, ctx: &mut SourceContext<'_, T>) -> FunctionResult<SourceStatus> {
        let mut n = ctx.remaining().max(1) as u64;
        if let Some(rate) = self.subtask_rate {
            let started = *self.started.get_or_insert_with(Instant::now);
            let allowed = (started.elapsed().as_secs_f64() * rate) as u64 + 1;
            n = n.min(allowed.saturating_sub(self.emitted));
            if n == 0 {
                let wait = Duration::from_secs_f64(1.0 / rate).min(Duration::from_millis(20));
                std::thread::sleep(wait);
                return Ok(SourceStatus::More);
            }
        }
        if let Some((start, stop)) = self.ranges.take(n) {
            for index in start..stop {
                ctx.collect((self.f)(index));
            }
            self.emitted += stop - start;
        }
        Ok(if self.ranges.is_done() {
            SourceStatus::Finished
        } else {
            SourceStatus::More
        })
    }

    /// The position lives in operator state (remaining index ranges), so
    /// that a restore at another parallelism redistributes it.
    fn snapshot_position(&mut self, _checkpoint_id: u64) -> FunctionResult<Option<Vec<u8>>> {
        self.ranges.save()?;
        Ok(None)
    }
}
