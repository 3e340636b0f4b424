//! The window operator for event-time tumbling and sliding windows, and
//! processing-time tumbling windows, with the default trigger: state kept
//! by time slice, not by key and window.
//!
//! Every key shares the same window ends, so instead of Flink's one state
//! entry and one timer per key and window, the state is a short list of
//! slices (`gcd(size, slide)` long), each a map from key to accumulator. A
//! record touches one map entry, whatever the number of windows it belongs
//! to; a watermark fires whole windows at once, merging a window's slices
//! per key (for tumbling windows a slice is the window). The results —
//! which windows fire when, with what contents, and which records are late —
//! are exactly those of [`WindowOperator`](super::operator::WindowOperator)
//! with an `EventTimeTrigger`, which the golden and property tests check.
//!
//! Processing-time tumbling windows are kept the same way: a batch's
//! records go to the slice of the processing time read once for the
//! batch, and a window fires when processing time reaches its last
//! millisecond, as the `ProcessingTimeTrigger`'s timer would fire it.

use std::collections::BTreeSet;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::hash::Hash;
use std::sync::Arc;
use weir_state::{KeyedStateStore, StableHash};

use weir_runtime::element::{StreamRecord, NO_TIMESTAMP};
use weir_runtime::metrics::OperatorMetrics;
use weir_runtime::operator::{Operator, Output, RuntimeContext};
use weir_runtime::FunctionResult;

use super::operator::{emit_late, focus, no_timestamp, with_context, Firing, Map, WindowLogic};
use super::{TimeWindow, Window};
use crate::functions::Collector;
use crate::operators::{KeySelector, OwnState, SavedWatermark};

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

struct Slice<K, A> {
    start: i64,
    entries: SliceMap<K, A>,
}

/// A slice's accumulators by key, in the order the keys came: new keys
/// are appended to one array, not written at random slots of a table
/// (each slot a cache miss, once a firing leaves scores of slices larger
/// than the caches), and a firing reads them in order.
type SliceMap<K, A> = indexmap::IndexMap<K, A, foldhash::fast::RandomState>;

/// One key's slices, and the starts of its windows with per-window state
/// (which is in the keyed-state backend), as a checkpoint writes them ...
#[derive(Serialize)]
struct KeyOut<'a, A> {
    slices: Vec<(i64, &'a A)>,
    window_states: Vec<i64>,
}

/// ... and as a restore reads them.
#[derive(Deserialize)]
struct KeyIn<A> {
    slices: Vec<(i64, A)>,
    window_states: Vec<i64>,
}

pub(crate) struct AlignedWindowOperator<T, K, W, O, L: WindowLogic<K, W, T, O>> {
    key_of: KeySelector<T, K>,
    logic: L,
    size: i64,
    slide: i64,
    offset: i64,
    slice: i64,
    allowed_lateness: i64,
    late_tag: Option<String>,
    /// Slices in ascending start order.
    slices: Vec<Slice<K, L::Acc>>,
    /// The emptied tables of dropped slices, for the next new ones.
    spares: Vec<SliceMap<K, L::Acc>>,
    /// Slices made since the last watermark: how many spare tables the
    /// next watermark keeps.
    made: usize,
    /// The table a sliding window's slices are merged into, emptied after
    /// each firing.
    merged: Map<K, L::Acc>,
    /// Windows (by start) whose function used per-window state: cleared
    /// when they are dropped.
    window_states: Map<(K, i64), ()>,
    state: Option<KeyedStateStore>,
    watermark: i64,
    metrics: Option<Arc<OperatorMetrics>>,
    clock: Option<weir_runtime::time::SharedClock>,
    own: Option<OwnState>,
    saved_watermark: Option<SavedWatermark>,
    /// Windows by processing time (tumbling only) rather than event time.
    processing: bool,
    /// Processing time up to which windows have fired: every window whose
    /// last millisecond is at or before it has.
    fired_to: i64,
    _out: std::marker::PhantomData<fn() -> (W, O)>,
}

impl<T, K, W, O, L> AlignedWindowOperator<T, K, W, O, L>
where
    T: Send + 'static,
    K: Hash + Eq + Clone + Send + Serialize + StableHash + 'static,
    W: Window,
    O: Send + 'static,
    L: WindowLogic<K, W, T, O>,
{
    /// Windows of `size` every `slide` (equal for tumbling), shifted by `offset`.
    pub fn new(
        key_of: KeySelector<T, K>,
        logic: L,
        (size, slide, offset): (i64, i64, i64),
        allowed_lateness: i64,
        late_tag: Option<String>,
    ) -> Self {
        let slice = gcd(size, slide);
        AlignedWindowOperator {
            key_of,
            logic,
            size,
            slide,
            offset,
            slice,
            allowed_lateness,
            late_tag,
            slices: Vec::new(),
            spares: Vec::new(),
            made: 0,
            merged: Map::default(),
            window_states: Map::default(),
            state: None,
            watermark: i64::MIN,
            metrics: None,
            clock: None,
            own: None,
            saved_watermark: None,
            processing: false,
            fired_to: i64::MIN,
            _out: std::marker::PhantomData,
        }
    }

    /// The same operator over processing-time tumbling windows (`size`
    /// equal to `slide`; no lateness, as in Flink, whose processing-time
    /// windows are cleaned up when they fire).
    pub fn in_processing_time(mut self) -> Self {
        debug_assert_eq!(self.size, self.slide, "processing-time windows here tumble");
        self.processing = true;
        self.allowed_lateness = 0;
        self.late_tag = None;
        self
    }

    /// The time windows fire by: the watermark, or the processing time
    /// windows have fired up to.
    fn time(&self) -> i64 {
        if self.processing {
            self.fired_to
        } else {
            self.watermark
        }
    }

    fn cleanup_time(&self, window_start: i64) -> i64 {
        (window_start.saturating_add(self.size) - 1).saturating_add(self.allowed_lateness)
    }

    /// The start of the latest window that holds `ts`.
    fn last_window_start(&self, ts: i64) -> i64 {
        TimeWindow::window_start(ts, self.offset, self.slide)
    }

    fn slice_index(&mut self, start: i64) -> usize {
        // Records mostly go to the newest slices: look there first.
        for (i, s) in self.slices.iter().enumerate().rev().take(3) {
            if s.start == start {
                return i;
            }
        }
        match self.slices.binary_search_by_key(&start, |s| s.start) {
            Ok(i) => i,
            Err(i) => {
                // Sized for as many keys as the newest slice holds: a
                // slice's keys are mostly the same as the one before, and
                // growing the table by doubling rehashes every entry.
                let keys = self.slices.last().map_or(0, |s| s.entries.len());
                self.made += 1;
                let entries = match self.spares.pop() {
                    Some(mut spare) => {
                        spare.reserve(keys);
                        spare
                    }
                    None => SliceMap::with_capacity_and_hasher(keys, Default::default()),
                };
                self.slices.insert(i, Slice { start, entries });
                i
            }
        }
    }

    /// Emits `key`'s result for the window starting at `start`.
    fn emit_key(&mut self, key: &K, start: i64, out: &mut Output<O>) -> FunctionResult {
        let end = start.saturating_add(self.size);
        if self.size == self.slice {
            let Some(i) = self.slices.iter().position(|s| s.start == start) else {
                return Ok(());
            };
            // Take the accumulator out while emitting, so the logic can be
            // borrowed mutably; it goes back right after.
            let Some(at) = self.slices[i].entries.get_index_of(key) else {
                return Ok(());
            };
            let fresh = self.logic.create();
            let acc = std::mem::replace(&mut self.slices[i].entries[at], fresh);
            let result = self.emit_acc(key, start, &acc, self.now(), out);
            self.slices[i].entries[at] = acc;
            return result;
        }
        let mut merged: Option<L::Acc> = None;
        for s in self
            .slices
            .iter()
            .filter(|s| s.start >= start && s.start < end)
        {
            if let Some(a) = s.entries.get(key) {
                let m = merged.get_or_insert_with(|| self.logic.create());
                self.logic.merge_ref(m, a);
            }
        }
        match merged {
            Some(acc) => self.emit_acc(key, start, &acc, self.now(), out),
            None => Ok(()),
        }
    }

    /// Processing time now, as a firing's context reports it.
    fn now(&self) -> i64 {
        self.clock.as_ref().map_or(0, |c| c.now_ms())
    }

    /// Emits one key's result `acc` for the window starting at `start`, at
    /// processing time `now` (read once per firing, not per key).
    fn emit_acc(
        &mut self,
        key: &K,
        start: i64,
        acc: &L::Acc,
        now: i64,
        out: &mut Output<O>,
    ) -> FunctionResult {
        let end = start.saturating_add(self.size);
        let window = W::from_time_window(start, end).ok_or("aligned windows are time windows")?;
        if out.has_pending_side_records() {
            out.flush()?;
        }
        let (records, sides) = out.split();
        let firing = Firing {
            merging: false,
            watermark: self.watermark,
            now,
        };
        let logic = &mut self.logic;
        let (result, used_window_state) =
            with_context(self.state.as_ref(), firing, key, &window, sides, |ctx| {
                let result = logic.emit(key, acc, ctx, &mut Collector::new(records, end - 1));
                (result, ctx.uses_window_state())
            })?;
        result?;
        if used_window_state {
            self.window_states.insert((key.clone(), start), ());
        }
        Ok(())
    }

    /// Runs the function's `clear` for, and drops the per-window state of,
    /// every window with per-window state whose cleanup time `time` (the
    /// watermark, or processing time) passed.
    fn drop_window_states(&mut self, time: i64, out: &mut Output<O>) -> FunctionResult {
        if self.window_states.is_empty() {
            return Ok(());
        }
        let (size, lateness) = (self.size, self.allowed_lateness);
        let done: Vec<(K, i64)> = self
            .window_states
            .keys()
            .filter(|(_, start)| (start.saturating_add(size) - 1).saturating_add(lateness) <= time)
            .cloned()
            .collect();
        let Some(state) = self.state.as_ref() else {
            return Ok(());
        };
        let firing = Firing {
            merging: false,
            watermark: self.watermark,
            now: self.now(),
        };
        for (key, start) in done {
            self.window_states.remove(&(key.clone(), start));
            let window = W::from_time_window(start, start.saturating_add(size))
                .ok_or("aligned windows are time windows")?;
            let (_, sides) = out.split();
            let logic = &mut self.logic;
            with_context(Some(state), firing, &key, &window, sides, |ctx| {
                logic.clear(ctx)
            })??;
            focus(state, &key, &window)?;
            state.clear_current_namespace()?;
        }
        Ok(())
    }

    /// Emits every key's result of the window starting at `start`.
    fn fire_window(&mut self, start: i64, out: &mut Output<O>) -> FunctionResult {
        if self.size == self.slice {
            let Some(i) = self.slices.iter().position(|s| s.start == start) else {
                return Ok(());
            };
            // The window's slice is set aside while its keys are emitted
            // (emitting borrows the operator mutably), and goes back after:
            // no key is copied and no entry looked up again.
            let mut entries = std::mem::take(&mut self.slices[i].entries);
            let now = self.now();
            let mut emit = |this: &mut Self, key: &K, acc: &L::Acc| -> FunctionResult {
                this.emit_acc(key, start, acc, now, out)?;
                Ok(out.flush_if_full()?)
            };
            let result = if self.cleanup_time(start) <= self.time() {
                // The slice goes once the window fires (no lateness is
                // allowed): each entry is dropped right after its result,
                // while it is in cache. Dropped later, in a second pass
                // over a table larger than the caches, every entry was
                // fetched from memory again.
                entries
                    .drain(..)
                    .try_for_each(|(key, acc)| emit(self, &key, &acc))
            } else {
                entries
                    .iter()
                    .try_for_each(|(key, acc)| emit(self, key, acc))
            };
            self.slices[i].entries = entries;
            return result;
        }
        // One pass over the window's slices merges every key's slices,
        // into the table the last firing used (sized for the window's
        // keys up front: grown by doubling, every entry was rehashed), and
        // each entry is dropped right after its result, while in cache.
        let end = start.saturating_add(self.size);
        let mut merged = std::mem::take(&mut self.merged);
        let in_window = |s: &&Slice<K, L::Acc>| s.start >= start && s.start < end;
        let keys = self
            .slices
            .iter()
            .filter(in_window)
            .map(|s| s.entries.len())
            .max()
            .unwrap_or(0);
        merged.reserve(keys);
        for s in self.slices.iter().filter(in_window) {
            for (k, a) in &s.entries {
                match merged.get_mut(k) {
                    Some(m) => self.logic.merge_ref(m, a),
                    None => {
                        let mut m = self.logic.create();
                        self.logic.merge_ref(&mut m, a);
                        merged.insert(k.clone(), m);
                    }
                }
            }
        }
        let now = self.now();
        let result = merged.drain().try_for_each(|(key, acc)| {
            self.emit_acc(&key, start, &acc, now, out)?;
            Ok(out.flush_if_full()?)
        });
        self.merged = merged;
        result
    }

    fn on_late(&mut self, record: StreamRecord<T>, out: &mut Output<O>) -> FunctionResult {
        emit_late(
            self.late_tag.as_deref(),
            self.metrics.as_deref(),
            record,
            out,
        )
    }

    /// A record at or behind the watermark: late, or re-firing the windows
    /// it belongs to that already fired (allowed lateness).
    fn process_behind(&mut self, record: StreamRecord<T>, out: &mut Output<O>) -> FunctionResult {
        let ts = record.timestamp;
        let last_start = self.last_window_start(ts);
        if self.cleanup_time(last_start) <= self.watermark {
            return self.on_late(record, out);
        }
        let key = (self.key_of)(&record.value);
        let slice_start = TimeWindow::window_start(ts, self.offset, self.slice);
        let i = self.slice_index(slice_start);
        let acc = self.slices[i]
            .entries
            .entry(key.clone())
            .or_insert_with(|| self.logic.create());
        self.logic.add(acc, record);
        // Flink lists windows latest first and fires each one that already
        // fired but is not yet cleaned up.
        let mut start = last_start;
        while start > ts - self.size {
            let max_ts = start + self.size - 1;
            if max_ts <= self.watermark && self.cleanup_time(start) > self.watermark {
                self.emit_key(&key, start, out)?;
            }
            start -= self.slide;
        }
        Ok(())
    }

    /// Drops the slices whose last window is past its cleanup time at
    /// `time` (the watermark, or processing time).
    fn drop_slices(&mut self, time: i64) {
        let (size, lateness, offset, slide) =
            (self.size, self.allowed_lateness, self.offset, self.slide);
        // Their tables are kept, emptied, for the next new slices: one the
        // size of a slice's keys, allocated anew, came back as fresh pages
        // to fault in and zero. A watermark fires as many windows as the
        // source's time advanced since the last one (scores of them when
        // it runs ahead of the watermark interval), so as many tables are
        // kept as slices were made since the last watermark, and no more.
        let spares = &mut self.spares;
        self.slices.retain_mut(|s| {
            let last = TimeWindow::window_start(s.start, offset, slide);
            let keep = (last.saturating_add(size) - 1).saturating_add(lateness) > time;
            if !keep {
                let mut entries = std::mem::take(&mut s.entries);
                entries.clear();
                spares.push(entries);
            }
            keep
        });
        spares.truncate(self.made.max(1));
        self.made = 0;
    }

    /// Windows holding any slice, with `max_timestamp` in `(from, to]`, in
    /// ascending order.
    fn windows_due(&self, from: i64, to: i64) -> BTreeSet<i64> {
        let mut due = BTreeSet::new();
        for s in &self.slices {
            // Windows containing [s.start, s.start + slice).
            let mut start = TimeWindow::window_start(s.start, self.offset, self.slide);
            while start.saturating_add(self.size) >= s.start.saturating_add(self.slice) {
                let max_ts = start.saturating_add(self.size) - 1;
                if max_ts > from && max_ts <= to {
                    due.insert(start);
                }
                start -= self.slide;
            }
        }
        due
    }
}

impl<T, K, W, O, L> Operator for AlignedWindowOperator<T, K, W, O, L>
where
    T: Send + 'static,
    K: Hash + Eq + Clone + Send + Serialize + DeserializeOwned + StableHash + 'static,
    W: Window,
    O: Send + 'static,
    L: WindowLogic<K, W, T, O>,
{
    type In = T;
    type Out = O;

    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.metrics = Some(Arc::clone(&ctx.metrics));
        self.clock = Some(ctx.clock.clone());
        let own = OwnState::new(ctx);
        for (key, k) in own.restore::<K, KeyIn<L::Acc>>("windows")? {
            for (start, acc) in k.slices {
                let i = self.slice_index(start);
                self.slices[i].entries.insert(key.clone(), acc);
            }
            for start in k.window_states {
                self.window_states.insert((key.clone(), start), ());
            }
        }
        self.own = Some(own);
        let (saved, watermark) = SavedWatermark::open(ctx)?;
        self.watermark = watermark;
        self.saved_watermark = Some(saved);
        let (keyed_ctx, state) = ctx.open_keyed_state()?;
        self.state = Some(state);
        self.logic.open(&keyed_ctx)
    }

    fn snapshot_state(&mut self, _checkpoint_id: u64) -> FunctionResult {
        let (Some(own), Some(saved)) = (&self.own, &self.saved_watermark) else {
            return Ok(());
        };
        let mut keys: Map<&K, KeyOut<'_, L::Acc>> = Map::default();
        let empty = || KeyOut {
            slices: Vec::new(),
            window_states: Vec::new(),
        };
        for slice in &self.slices {
            for (k, acc) in &slice.entries {
                keys.entry(k)
                    .or_insert_with(empty)
                    .slices
                    .push((slice.start, acc));
            }
        }
        for (k, start) in self.window_states.keys() {
            keys.entry(k)
                .or_insert_with(empty)
                .window_states
                .push(*start);
        }
        own.save("windows", keys)?;
        saved.save(self.watermark)?;
        Ok(())
    }

    fn process_batch(
        &mut self,
        input: &mut Vec<StreamRecord<T>>,
        out: &mut Output<O>,
    ) -> FunctionResult {
        let mut cached: Option<(i64, usize)> = None;
        // Processing-time windows place the whole batch by one reading of
        // the clock; event-time ones place each record by its timestamp.
        let batch_time = self.processing.then(|| self.now());
        if let Some(now) = batch_time.filter(|&now| now <= self.fired_to) {
            // The window of `now` fired already (processing time reached
            // its last millisecond just before this batch): its new
            // records make it fire again, as a timer registered in the
            // past fires at once.
            let start = TimeWindow::window_start(now, self.offset, self.slice);
            self.fired_to = self.fired_to.min(start - 1);
        }
        for record in input.drain(..) {
            let ts = batch_time.unwrap_or(record.timestamp);
            if batch_time.is_none() && ts <= self.watermark {
                // An event-time record needs a timestamp.
                if ts == NO_TIMESTAMP {
                    return Err(no_timestamp());
                }
                cached = None;
                self.process_behind(record, out)?;
                continue;
            }
            let slice_start = TimeWindow::window_start(ts, self.offset, self.slice);
            let i = match cached {
                Some((start, i)) if start == slice_start => i,
                _ => {
                    let i = self.slice_index(slice_start);
                    cached = Some((slice_start, i));
                    i
                }
            };
            let key = (self.key_of)(&record.value);
            // One hash and one probe, found or not: a key new to the slice
            // (every key, in a window each key has one record in) was
            // hashed and looked for twice, by a look-up and an insert.
            match self.slices[i].entries.entry(key) {
                indexmap::map::Entry::Occupied(mut found) => {
                    self.logic.add(found.get_mut(), record)
                }
                indexmap::map::Entry::Vacant(room) => {
                    let mut acc = self.logic.create();
                    self.logic.add(&mut acc, record);
                    room.insert(acc);
                }
            }
        }
        Ok(())
    }

    /// The windows not fired yet and the earliest one's firing time:
    /// exact for tumbling windows (a slice is a window, one per key); for
    /// sliding ones, the window starts between the first and the last
    /// slice, gaps included, over all keys.
    fn pending_event_timers(&self) -> Option<(u64, Option<i64>)> {
        if self.processing {
            return Some((0, None));
        }
        let (size, wm) = (self.size, self.watermark);
        if self.slide == size {
            let mut pending = self
                .slices
                .iter()
                .filter(|s| s.start.saturating_add(size - 1) > wm);
            let Some(first) = pending.next() else {
                return Some((0, None));
            };
            let count = first.entries.len() + pending.map(|s| s.entries.len()).sum::<usize>();
            return Some((count as u64, Some(first.start.saturating_add(size - 1))));
        }
        let (Some(first), Some(last)) = (self.slices.first(), self.slices.last()) else {
            return Some((0, None));
        };
        let floor = |t: i64| TimeWindow::window_start(t, self.offset, self.slide);
        let ceil = |t: i64| {
            let f = floor(t);
            if f == t {
                t
            } else {
                f.saturating_add(self.slide)
            }
        };
        // Window starts w with a slice inside (w > first - size, w <= last)
        // that the watermark has not passed (w + size - 1 > wm).
        let lo = ceil(
            first
                .start
                .saturating_sub(size - 1)
                .max(wm.saturating_sub(size - 2)),
        );
        let hi = floor(last.start);
        if lo > hi {
            return Some((0, None));
        }
        Some((
            ((hi - lo) / self.slide + 1) as u64,
            Some(lo.saturating_add(size - 1)),
        ))
    }

    fn process_watermark(&mut self, watermark: i64, out: &mut Output<O>) -> FunctionResult {
        if watermark <= self.watermark {
            return Ok(());
        }
        if self.processing {
            // Fires nothing: processing time does.
            self.watermark = watermark;
            return Ok(out.emit_watermark(watermark)?);
        }
        let previous = self.watermark;
        self.watermark = watermark;
        for start in self.windows_due(previous, watermark) {
            self.fire_window(start, out)?;
        }
        self.drop_slices(watermark);
        self.drop_window_states(watermark, out)?;
        out.emit_watermark(watermark)?;
        Ok(())
    }

    fn processing_deadline(&self) -> Option<i64> {
        // Slices are in start order; each is one window (tumbling).
        let first = self.slices.first().filter(|_| self.processing)?;
        Some(first.start.saturating_add(self.size) - 1)
    }

    fn on_processing_time(&mut self, now: i64, out: &mut Output<O>) -> FunctionResult {
        if !self.processing || now <= self.fired_to {
            return Ok(());
        }
        let previous = self.fired_to;
        self.fired_to = now;
        for start in self.windows_due(previous, now) {
            self.fire_window(start, out)?;
        }
        self.drop_slices(now);
        self.drop_window_states(now, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::window::logic::AggregateLogic;
    use crate::window::AggregateFunction;
    use weir_runtime::testing::HarnessOutput;

    #[derive(Clone)]
    struct Count;

    impl AggregateFunction<u32, u64, u64> for Count {
        fn create_accumulator(&mut self) -> u64 {
            0
        }
        fn add(&mut self, _: u32, acc: &mut u64) {
            *acc += 1;
        }
        fn get_result(&mut self, acc: &u64) -> u64 {
            *acc
        }
        fn merge(&mut self, a: u64, b: u64) -> u64 {
            a + b
        }
    }

    type Counting =
        AlignedWindowOperator<u32, u32, TimeWindow, u64, AggregateLogic<Count, u32, u64, u64>>;

    /// Counts per key (the record is its key) in tumbling windows of
    /// `size` ms.
    fn counting(size: i64) -> Counting {
        let logic = AggregateLogic {
            agg: Count,
            _t: std::marker::PhantomData,
        };
        AlignedWindowOperator::new(Arc::new(|k: &u32| *k), logic, (size, size, 0), 0, None)
    }

    #[test]
    fn a_firing_hands_its_results_on_in_batches() -> FunctionResult {
        let mut op = counting(1000);
        let mut h = HarnessOutput::new();
        let keys = 10_000u32;
        let mut records: Vec<_> = (0..keys)
            .map(|k| StreamRecord::with_timestamp(k, i64::from(k % 1000)))
            .collect();
        op.process_batch(&mut records, &mut h.output)?;
        op.process_watermark(999, &mut h.output)?;
        // One result per key, handed on a batch at a time: the operator
        // never held the whole firing.
        assert_eq!(h.largest_batch(), Output::<u64>::FULL_BATCH);
        let results = h.take_values();
        assert_eq!(results.len(), keys as usize);
        assert!(results.iter().all(|n| *n == 1));
        Ok(())
    }

    /// Processing-time tumbling windows: a batch's records go to the
    /// window of the processing time read for the batch, whatever their
    /// timestamps; a window fires when processing time reaches its last
    /// millisecond (not with the watermark), its results stamped with that
    /// millisecond; records that come in the very millisecond their window
    /// fired make it fire again, as a timer registered in the past would.
    #[test]
    fn processing_time_windows_fire_when_the_clock_reaches_their_end() -> FunctionResult {
        let clock = crate::ManualClock::new(10);
        let mut op = counting(1000).in_processing_time();
        op.clock = Some(Arc::new(clock.clone()));
        let mut h = HarnessOutput::new();
        let batch = |keys: &[u32]| -> Vec<StreamRecord<u32>> {
            // Event timestamps far from the clock: they place nothing.
            keys.iter()
                .map(|&k| StreamRecord::with_timestamp(k, 123_456))
                .collect()
        };
        op.process_batch(&mut batch(&[1, 1, 2]), &mut h.output)?;
        assert_eq!(op.processing_deadline(), Some(999));
        op.process_watermark(1_000_000, &mut h.output)?;
        assert!(h.take_values().is_empty(), "a watermark fires nothing");
        clock.set(1500);
        op.process_batch(&mut batch(&[1]), &mut h.output)?;
        op.on_processing_time(998, &mut h.output)?;
        assert!(h.take_values().is_empty(), "before the window's end");
        op.on_processing_time(999, &mut h.output)?;
        let fired: Vec<(u64, i64)> = h
            .take()
            .into_iter()
            .filter_map(|e| match e {
                weir_runtime::testing::Emitted::Record(r) => Some((r.value, r.timestamp)),
                weir_runtime::testing::Emitted::Control(_) => None,
            })
            .collect();
        assert_eq!(fired, vec![(2, 999), (1, 999)]);
        assert_eq!(op.processing_deadline(), Some(1999));
        op.on_processing_time(1999, &mut h.output)?;
        assert_eq!(h.take_values(), vec![1]);
        assert_eq!(op.processing_deadline(), None);
        // In the millisecond the window fired: it fires again.
        clock.set(1999);
        op.process_batch(&mut batch(&[3, 3, 3]), &mut h.output)?;
        assert_eq!(op.processing_deadline(), Some(1999));
        op.on_processing_time(1999, &mut h.output)?;
        assert_eq!(h.take_values(), vec![3]);
        // The end of input fires what is left.
        clock.set(2500);
        op.process_batch(&mut batch(&[4]), &mut h.output)?;
        op.on_processing_time(i64::MAX, &mut h.output)?;
        assert_eq!(h.take_values(), vec![1]);
        assert!(op.slices.is_empty());
        Ok(())
    }

    /// A firing emits a window's keys in the order they first came (a
    /// slice appends new keys; it does not scatter them over a table).
    #[test]
    fn a_firing_emits_keys_in_their_arrival_order() -> FunctionResult {
        let mut op = counting(1000);
        let mut h = HarnessOutput::new();
        // Key k has k + 1 records, so each count names its key; the keys
        // first come in a scrambled order.
        let order: Vec<u32> = (0..64u32).map(|i| (i * 37) % 64).collect();
        let mut records: Vec<_> = order
            .iter()
            .flat_map(|&k| (0..=k).map(move |_| StreamRecord::with_timestamp(k, 5)))
            .collect();
        op.process_batch(&mut records, &mut h.output)?;
        op.process_watermark(999, &mut h.output)?;
        let counts: Vec<u64> = order.iter().map(|&k| u64::from(k) + 1).collect();
        assert_eq!(h.take_values(), counts);
        Ok(())
    }

    /// A watermark that fires many windows keeps their emptied tables for
    /// as many new slices as were made before it, and the next watermark,
    /// after fewer new slices, lets the extra ones go.
    #[test]
    fn spare_tables_follow_the_slices_made_between_watermarks() -> FunctionResult {
        let mut op = counting(10);
        let mut h = HarnessOutput::new();
        // Record i at time i, of key i % 10: each 10 ms window has ten keys.
        let feed = |op: &mut Counting, h: &mut HarnessOutput<u64>, ids: std::ops::Range<u32>| {
            let mut records: Vec<_> = ids
                .map(|i| StreamRecord::with_timestamp(i % 10, i64::from(i)))
                .collect();
            op.process_batch(&mut records, &mut h.output)
        };
        // Twelve windows before the first watermark.
        feed(&mut op, &mut h, 0..120)?;
        assert_eq!(op.slices.len(), 12);
        op.process_watermark(119, &mut h.output)?;
        assert!(op.slices.is_empty());
        assert_eq!(op.spares.len(), 12);
        assert!(op.spares.iter().all(|t| t.is_empty() && t.capacity() >= 10));
        // Two new windows take two of them; the next watermark keeps two.
        feed(&mut op, &mut h, 120..140)?;
        assert_eq!(op.spares.len(), 10);
        op.process_watermark(139, &mut h.output)?;
        assert_eq!(op.spares.len(), 2);
        assert_eq!(h.take_values().len(), 140);
        Ok(())
    }
}
