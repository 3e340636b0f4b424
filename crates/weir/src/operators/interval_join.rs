//! The interval join operator (Flink's `IntervalJoinOperator`): both sides
//! buffered per key and timestamp, each new record joined against the other
//! side's buffer, buffers cleaned by event-time timers once the watermark
//! guarantees no more matches.

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;
use std::marker::PhantomData;

use serde::de::DeserializeOwned;
use serde::Serialize;
use weir_runtime::element::{StreamRecord, NO_TIMESTAMP};
use weir_runtime::operator::{Output, RuntimeContext, TwoInputOperator};
use weir_runtime::time::TimerQueue;
use weir_runtime::FunctionResult;

use weir_state::StableHash;

use super::{KeySelector, OwnState, SavedWatermark};
use crate::datastream::ProcessJoinContext;
use crate::functions::Collector;

type Buffer<K, T> = HashMap<K, BTreeMap<i64, Vec<T>>, foldhash::fast::RandomState>;

pub(crate) struct IntervalJoinOperator<A, B, K, F, O> {
    key1: KeySelector<A, K>,
    key2: KeySelector<B, K>,
    lower: i64,
    upper: i64,
    f: F,
    left: Buffer<K, A>,
    right: Buffer<K, B>,
    // Namespace `true` cleans the left buffer, `false` the right.
    timers: TimerQueue<K, bool>,
    watermark: i64,
    checkpoint: Option<(OwnState, SavedWatermark)>,
    _out: PhantomData<fn() -> O>,
}

/// One key's buffered records in a checkpoint: `(timestamp, records)` of
/// each side. The cleanup timers follow from the timestamps.
type Buffered<A, B> = (Vec<(i64, Vec<A>)>, Vec<(i64, Vec<B>)>);

/// [`Buffered`] by reference, as a checkpoint writes it.
type BufferedRef<'a, A, B> = (Vec<(i64, &'a Vec<A>)>, Vec<(i64, &'a Vec<B>)>);

impl<A, B, K: Hash + Eq + Clone, F, O> IntervalJoinOperator<A, B, K, F, O> {
    pub fn new(
        key1: KeySelector<A, K>,
        key2: KeySelector<B, K>,
        lower: i64,
        upper: i64,
        f: F,
    ) -> Self {
        IntervalJoinOperator {
            key1,
            key2,
            lower,
            upper,
            f,
            left: HashMap::default(),
            right: HashMap::default(),
            timers: TimerQueue::new(),
            watermark: i64::MIN,
            checkpoint: None,
            _out: PhantomData,
        }
    }

    fn left_cleanup(&self, ts: i64) -> i64 {
        if self.upper > 0 {
            ts.saturating_add(self.upper)
        } else {
            ts
        }
    }

    fn right_cleanup(&self, ts: i64) -> i64 {
        if self.lower < 0 {
            ts.saturating_sub(self.lower)
        } else {
            ts
        }
    }

    fn is_late(&self, ts: i64) -> bool {
        self.watermark != i64::MIN && ts < self.watermark
    }
}

fn no_timestamp() -> Box<dyn std::error::Error + Send + Sync> {
    "interval joins need event timestamps: assign them with assign_timestamps_and_watermarks".into()
}

impl<A, B, K, F, O> TwoInputOperator for IntervalJoinOperator<A, B, K, F, O>
where
    A: Clone + Send + Serialize + DeserializeOwned + 'static,
    B: Clone + Send + Serialize + DeserializeOwned + 'static,
    K: Hash + Eq + Clone + Send + Serialize + DeserializeOwned + StableHash + 'static,
    F: FnMut(&A, &B, &ProcessJoinContext, &mut Collector<'_, O>) -> FunctionResult + Send + 'static,
    O: Send + 'static,
{
    type In1 = A;
    type In2 = B;
    type Out = O;

    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        let own = OwnState::new(ctx);
        for (key, (left, right)) in own.restore::<K, Buffered<A, B>>("buffers")? {
            for (ts, records) in left {
                self.timers
                    .register(self.left_cleanup(ts), key.clone(), true);
                self.left
                    .entry(key.clone())
                    .or_default()
                    .insert(ts, records);
            }
            for (ts, records) in right {
                self.timers
                    .register(self.right_cleanup(ts), key.clone(), false);
                self.right
                    .entry(key.clone())
                    .or_default()
                    .insert(ts, records);
            }
        }
        let (saved, watermark) = SavedWatermark::open(ctx)?;
        self.watermark = watermark;
        self.checkpoint = Some((own, saved));
        Ok(())
    }

    fn snapshot_state(&mut self, _checkpoint_id: u64) -> FunctionResult {
        let Some((own, saved)) = &self.checkpoint else {
            return Ok(());
        };
        let mut keys: HashMap<&K, BufferedRef<'_, A, B>> = HashMap::new();
        for (k, buffer) in &self.left {
            keys.entry(k)
                .or_default()
                .0
                .extend(buffer.iter().map(|(ts, v)| (*ts, v)));
        }
        for (k, buffer) in &self.right {
            keys.entry(k)
                .or_default()
                .1
                .extend(buffer.iter().map(|(ts, v)| (*ts, v)));
        }
        own.save("buffers", keys)?;
        saved.save(self.watermark)?;
        Ok(())
    }

    fn process_batch1(
        &mut self,
        input: &mut Vec<StreamRecord<A>>,
        out: &mut Output<O>,
    ) -> FunctionResult {
        for r in input.drain(..) {
            let ts = r.timestamp;
            if ts == NO_TIMESTAMP {
                return Err(no_timestamp());
            }
            if self.is_late(ts) {
                continue;
            }
            let key = (self.key1)(&r.value);
            // An empty range (exclusive bounds around one point) joins
            // nothing; `BTreeMap::range` would panic on it.
            if let Some(others) = self.right.get(&key).filter(|_| self.lower <= self.upper) {
                let records = out.records();
                for (&other_ts, bs) in
                    others.range(ts.saturating_add(self.lower)..=ts.saturating_add(self.upper))
                {
                    let ctx = ProcessJoinContext {
                        left_timestamp: ts,
                        right_timestamp: other_ts,
                    };
                    for b in bs {
                        (self.f)(
                            &r.value,
                            b,
                            &ctx,
                            &mut Collector::new(records, ctx.timestamp()),
                        )?;
                    }
                }
            }
            let cleanup = self.left_cleanup(ts);
            self.timers.register(cleanup, key.clone(), true);
            self.left
                .entry(key)
                .or_default()
                .entry(ts)
                .or_default()
                .push(r.value);
        }
        Ok(())
    }

    fn process_batch2(
        &mut self,
        input: &mut Vec<StreamRecord<B>>,
        out: &mut Output<O>,
    ) -> FunctionResult {
        for r in input.drain(..) {
            let ts = r.timestamp;
            if ts == NO_TIMESTAMP {
                return Err(no_timestamp());
            }
            if self.is_late(ts) {
                continue;
            }
            let key = (self.key2)(&r.value);
            // b meets a when a.ts + lower <= b.ts <= a.ts + upper.
            if let Some(others) = self.left.get(&key).filter(|_| self.lower <= self.upper) {
                let records = out.records();
                for (&other_ts, as_) in
                    others.range(ts.saturating_sub(self.upper)..=ts.saturating_sub(self.lower))
                {
                    let ctx = ProcessJoinContext {
                        left_timestamp: other_ts,
                        right_timestamp: ts,
                    };
                    for a in as_ {
                        (self.f)(
                            a,
                            &r.value,
                            &ctx,
                            &mut Collector::new(records, ctx.timestamp()),
                        )?;
                    }
                }
            }
            let cleanup = self.right_cleanup(ts);
            self.timers.register(cleanup, key.clone(), false);
            self.right
                .entry(key)
                .or_default()
                .entry(ts)
                .or_default()
                .push(r.value);
        }
        Ok(())
    }

    fn process_watermark(&mut self, watermark: i64, out: &mut Output<O>) -> FunctionResult {
        self.watermark = self.watermark.max(watermark);
        while let Some(timer) = self.timers.pop_due(watermark) {
            // Undo the cleanup-time arithmetic of registration (Flink's rule).
            if timer.namespace {
                let ts = if self.upper > 0 {
                    timer.timestamp - self.upper
                } else {
                    timer.timestamp
                };
                if let Some(buffer) = self.left.get_mut(&timer.key) {
                    buffer.remove(&ts);
                    if buffer.is_empty() {
                        self.left.remove(&timer.key);
                    }
                }
            } else {
                let ts = if self.lower < 0 {
                    timer.timestamp + self.lower
                } else {
                    timer.timestamp
                };
                if let Some(buffer) = self.right.get_mut(&timer.key) {
                    buffer.remove(&ts);
                    if buffer.is_empty() {
                        self.right.remove(&timer.key);
                    }
                }
            }
        }
        out.emit_watermark(watermark)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use weir_runtime::testing::HarnessOutput;

    type Op = IntervalJoinOperator<
        (u8, char),
        (u8, char),
        u8,
        fn(
            &(u8, char),
            &(u8, char),
            &ProcessJoinContext,
            &mut Collector<'_, String>,
        ) -> FunctionResult,
        String,
    >;

    fn op(lower: i64, upper: i64) -> Op {
        fn join(
            a: &(u8, char),
            b: &(u8, char),
            ctx: &ProcessJoinContext,
            out: &mut Collector<'_, String>,
        ) -> FunctionResult {
            out.collect(format!("{}{}@{}", a.1, b.1, ctx.timestamp()));
            Ok(())
        }
        IntervalJoinOperator::new(
            Arc::new(|a: &(u8, char)| a.0),
            Arc::new(|b: &(u8, char)| b.0),
            lower,
            upper,
            join as _,
        )
    }

    fn rec<T>(v: T, ts: i64) -> Vec<StreamRecord<T>> {
        vec![StreamRecord::with_timestamp(v, ts)]
    }

    #[test]
    fn late_records_are_dropped_and_buffers_cleaned() -> FunctionResult {
        let mut op = op(-5, 5);
        let mut h = HarnessOutput::new();
        op.process_batch1(&mut rec((1, 'a'), 100), &mut h.output)?;
        op.process_batch2(&mut rec((1, 'b'), 103), &mut h.output)?;
        assert_eq!(h.take_values(), vec!["ab@103"]);
        op.process_watermark(99, &mut h.output)?;
        // 98 < watermark 99: late, dropped without joining.
        op.process_batch2(&mut rec((1, 'l'), 98), &mut h.output)?;
        assert!(h.take_values().is_empty());
        // The left record at 100 is cleaned at 105; the right one at 103
        // stays until 108 (it may still meet left records up to 108).
        op.process_watermark(105, &mut h.output)?;
        assert!(op.left.is_empty());
        assert_eq!(op.right.get(&1).map(|b| b.len()), Some(1));
        op.process_batch1(&mut rec((1, 'c'), 106), &mut h.output)?;
        assert_eq!(h.take_values(), vec!["cb@106"]);
        op.process_watermark(200, &mut h.output)?;
        assert!(op.left.is_empty() && op.right.is_empty());
        Ok(())
    }

    #[test]
    fn records_without_timestamps_fail() {
        let mut op = op(0, 1);
        let mut h = HarnessOutput::new();
        let mut batch = vec![StreamRecord::new((1, 'x'))];
        assert!(op.process_batch1(&mut batch, &mut h.output).is_err());
    }
}
