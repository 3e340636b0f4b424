//! The window operator (Flink's `WindowOperator` and
//! `EvictingWindowOperator` in one), and the single internal shape every
//! window function is normalised into.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use weir_runtime::element::{StreamRecord, NO_TIMESTAMP};
use weir_runtime::metrics::OperatorMetrics;
use weir_runtime::operator::{Operator, Output, RuntimeContext, SideOutputs};
use weir_runtime::time::{SharedClock, TimerQueue};
use weir_runtime::FunctionResult;
use weir_state::{
    KeyedStateStore, MapState, MapStateDescriptor, StableHash, StateError, ValueState,
    ValueStateDescriptor,
};

use super::assigner::{AssignerContext, WindowAssigner};
use super::evictor::{Evictor, EvictorContext};
use super::function::{ProcessWindowContext, WindowScope};
use super::merging::{Merge, MergingWindowSet};
use super::trigger::{TimerRequest, Trigger, TriggerContext, TriggerResult, TriggerState};
use super::window_map::WindowMap;
use super::Window;
use crate::functions::Collector;
use crate::operators::{KeySelector, OwnState, SavedWatermark};
use crate::state_slot::StateSlot;

pub(crate) type Map<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// What a window keeps and how it turns into output: the one shape that
/// `reduce`, `aggregate`, `process` and `apply` (and their combinations)
/// are all adapted to.
pub(crate) trait WindowLogic<K, W, T, O>: Send + 'static {
    /// The per-key, per-window contents (checkpointed with the window).
    type Acc: Clone + Send + Serialize + DeserializeOwned + 'static;

    /// Whether `Acc` holds the elements themselves (see [`Self::buffer`]).
    const KEEPS_ELEMENTS: bool = false;

    /// Called once per subtask.
    fn open(&mut self, _ctx: &RuntimeContext) -> FunctionResult {
        Ok(())
    }
    /// Empty contents.
    fn create(&mut self) -> Self::Acc;
    /// Adds a record.
    fn add(&mut self, acc: &mut Self::Acc, record: StreamRecord<T>);
    /// Merges `from` into `into` (merging windows).
    fn merge(&mut self, into: &mut Self::Acc, from: Self::Acc);
    /// Whether [`Self::merge_ref`] is implemented (sliding windows kept as
    /// slices need it).
    const MERGES_BY_REF: bool = false;
    /// Merges a copy of `from` into `into`.
    fn merge_ref(&mut self, _into: &mut Self::Acc, _from: &Self::Acc) {}
    /// The element buffer, for evictors (only element-keeping logic has one).
    fn buffer(_acc: &mut Self::Acc) -> Option<&mut Vec<StreamRecord<T>>> {
        None
    }
    /// Emits one firing.
    fn emit(
        &mut self,
        key: &K,
        acc: &Self::Acc,
        ctx: &mut ProcessWindowContext<'_, W>,
        out: &mut Collector<'_, O>,
    ) -> FunctionResult;
    /// The window is dropped.
    fn clear(&mut self, _ctx: &mut ProcessWindowContext<'_, W>) -> FunctionResult {
        Ok(())
    }
}

/// What an event-time window fails the job with when a record has no
/// timestamp (Flink: "Record has Long.MIN_VALUE timestamp"): without one
/// the record has no window, and would otherwise be taken for late.
pub(crate) fn no_timestamp() -> Box<dyn std::error::Error + Send + Sync> {
    "a record without a timestamp reached an event-time window: stamp the records first \
     (assign_timestamps_and_watermarks, or a source that assigns timestamps), or use a \
     processing-time window"
        .into()
}

/// Sends a late record to the late side output `tag`, after the results
/// emitted before it, or, without a tag, drops it and counts it (Flink's
/// `numLateRecordsDropped`). Shared by every window operator.
pub(crate) fn emit_late<T: Send + 'static, O: Send + 'static>(
    tag: Option<&str>,
    metrics: Option<&OperatorMetrics>,
    record: StreamRecord<T>,
    out: &mut Output<O>,
) -> FunctionResult {
    match tag {
        Some(tag) => {
            if !out.records().is_empty() {
                out.flush()?;
            }
            out.split().1.emit(tag, record);
        }
        None => {
            if let Some(m) = metrics {
                m.add_late_dropped(1);
            }
        }
    }
    Ok(())
}

/// One key's one window.
struct Entry<A> {
    /// Contents held here (`None` when purged, never filled, or kept in
    /// the keyed-state backend).
    acc: Option<A>,
    /// With contents in the keyed-state backend: `Some(next element
    /// sequence number)` while the window has contents there.
    stored: Option<u64>,
    trigger_state: TriggerState,
    event_timers: Vec<i64>,
    processing_timers: Vec<i64>,
}

impl<A> Default for Entry<A> {
    fn default() -> Self {
        Entry {
            acc: None,
            stored: None,
            trigger_state: TriggerState::default(),
            event_timers: Vec::new(),
            processing_timers: Vec::new(),
        }
    }
}

impl<A> Entry<A> {
    fn is_empty(&self) -> bool {
        self.acc.is_none()
            && self.stored.is_none()
            && self.trigger_state.is_empty()
            && self.event_timers.is_empty()
            && self.processing_timers.is_empty()
    }
}

struct KeyState<W, A> {
    windows: WindowMap<W, Entry<A>>,
    merging: MergingWindowSet<W>,
}

/// A key's windows as a checkpoint writes them (by reference) ...
#[derive(Serialize)]
struct KeyOut<'a, W, A> {
    windows: Vec<(&'a W, EntryOut<'a, A>)>,
    merging: &'a [(W, W)],
}

#[derive(Serialize)]
struct EntryOut<'a, A> {
    acc: Option<&'a A>,
    stored: Option<u64>,
    trigger_state: Option<Vec<u8>>,
    event_timers: &'a [i64],
    processing_timers: &'a [i64],
}

/// ... and as a restore reads them back.
#[derive(Deserialize)]
struct KeyIn<W, A> {
    windows: Vec<(W, EntryIn<A>)>,
    merging: Vec<(W, W)>,
}

#[derive(Deserialize)]
struct EntryIn<A> {
    acc: Option<A>,
    #[serde(default)]
    stored: Option<u64>,
    trigger_state: Option<Vec<u8>>,
    event_timers: Vec<i64>,
    processing_timers: Vec<i64>,
}

impl<W: Window, A: Serialize> KeyState<W, A> {
    fn to_checkpoint(&self) -> Result<KeyOut<'_, W, A>, StateError> {
        let mut windows = Vec::with_capacity(self.windows.len());
        for (w, e) in self.windows.iter() {
            windows.push((
                w,
                EntryOut {
                    acc: e.acc.as_ref(),
                    stored: e.stored,
                    trigger_state: e.trigger_state.encode()?,
                    event_timers: &e.event_timers,
                    processing_timers: &e.processing_timers,
                },
            ));
        }
        Ok(KeyOut {
            windows,
            merging: self.merging.mapping(),
        })
    }

    fn from_checkpoint(k: KeyIn<W, A>) -> Self {
        KeyState {
            windows: k
                .windows
                .into_iter()
                .map(|(w, e)| {
                    let entry = Entry {
                        acc: e.acc,
                        stored: e.stored,
                        trigger_state: StateSlot::restored(e.trigger_state),
                        event_timers: e.event_timers,
                        processing_timers: e.processing_timers,
                    };
                    (w, entry)
                })
                .collect(),
            merging: MergingWindowSet::from_mapping(k.merging),
        }
    }
}

impl<W: Window, A> Default for KeyState<W, A> {
    fn default() -> Self {
        KeyState {
            windows: WindowMap::default(),
            merging: MergingWindowSet::default(),
        }
    }
}

/// Window contents kept in the keyed-state backend, with the (state)
/// window as namespace, as Flink keeps them: on key-value backends such as
/// RocksDB, so windows may hold more than memory. Accumulators (`reduce`,
/// `aggregate`) are one value per key and window, read and written once
/// per record; element buffers (`process`, `apply`, evictors) are one map
/// entry per element under a sequence number, so adding an element never
/// reads the buffer, and a firing reads it in arrival order.
enum StoredContents<T, A> {
    /// Accumulators of incremental logic.
    Values(ValueState<A>),
    /// Element buffers, by sequence number.
    Elements(MapState<u64, StreamRecord<T>>),
}

/// Name of the keyed state holding window contents.
const CONTENTS_STATE: &str = "window-contents";

/// Points `store` at `key` and `window`.
pub(crate) fn focus<K: Serialize + StableHash, W: Serialize>(
    store: &KeyedStateStore,
    key: &K,
    window: &W,
) -> Result<(), StateError> {
    store.set_current_key(key)?;
    store.set_current_namespace(window)
}

/// Settings of a window operator, fixed when the job is built.
pub(crate) struct WindowSpec<T, K, W> {
    pub key_of: KeySelector<T, K>,
    pub assigner: Arc<dyn WindowAssigner<T, W = W>>,
    pub trigger: Box<dyn Trigger<T, W>>,
    pub evictor: Option<Box<dyn Evictor<T, W>>>,
    pub allowed_lateness: i64,
    pub late_tag: Option<String>,
}

pub(crate) struct WindowOperator<T, K, W, O, L: WindowLogic<K, W, T, O>> {
    spec: WindowSpec<T, K, W>,
    logic: L,
    event_time: bool,
    merging: bool,
    keys: Map<K, KeyState<W, L::Acc>>,
    event_timers: TimerQueue<K, W>,
    processing_timers: TimerQueue<K, W>,
    watermark: i64,
    clock: Option<SharedClock>,
    metrics: Option<Arc<OperatorMetrics>>,
    scratch: Vec<W>,
    requests: Vec<TimerRequest>,
    own: Option<OwnState>,
    saved_watermark: Option<SavedWatermark>,
    /// The subtask's keyed state (window and global state of process
    /// functions; contents too, with `stored`).
    state: Option<KeyedStateStore>,
    stored: Option<StoredContents<T, L::Acc>>,
    _out: std::marker::PhantomData<fn() -> O>,
}

impl<T, K, W, O, L> WindowOperator<T, K, W, O, L>
where
    T: Clone + Send + Serialize + DeserializeOwned + 'static,
    K: Hash + Eq + Clone + Send + Serialize + StableHash + 'static,
    W: Window,
    O: Send + 'static,
    L: WindowLogic<K, W, T, O>,
{
    pub fn new(spec: WindowSpec<T, K, W>, logic: L) -> Self {
        let event_time = spec.assigner.is_event_time();
        let merging = spec.assigner.is_merging();
        WindowOperator {
            spec,
            logic,
            event_time,
            merging,
            keys: Map::default(),
            event_timers: TimerQueue::new(),
            processing_timers: TimerQueue::new(),
            watermark: i64::MIN,
            clock: None,
            metrics: None,
            scratch: Vec::new(),
            requests: Vec::new(),
            own: None,
            saved_watermark: None,
            state: None,
            stored: None,
            _out: std::marker::PhantomData,
        }
    }

    fn now(&self) -> i64 {
        self.clock.as_ref().map_or(0, |c| c.now_ms())
    }

    /// When a window's state is dropped (Flink's `cleanupTime`).
    fn cleanup_time(&self, window: &W) -> i64 {
        if self.event_time {
            window
                .max_timestamp()
                .checked_add(self.spec.allowed_lateness)
                .unwrap_or(i64::MAX)
        } else {
            window.max_timestamp()
        }
    }

    fn is_window_late(&self, window: &W) -> bool {
        self.event_time && self.cleanup_time(window) <= self.watermark
    }

    fn is_element_late(&self, timestamp: i64) -> bool {
        self.event_time && timestamp.saturating_add(self.spec.allowed_lateness) <= self.watermark
    }

    fn register_timer(&mut self, key: &K, window: &W, event: bool, time: i64) {
        let Some(ks) = self.keys.get_mut(key) else {
            return;
        };
        let entry = ks.windows.entry_or_default(window.clone());
        let (list, queue) = if event {
            (&mut entry.event_timers, &mut self.event_timers)
        } else {
            (&mut entry.processing_timers, &mut self.processing_timers)
        };
        // Most registrations repeat one a window already has (the event-time
        // trigger registers on every record); the entry's short list keeps
        // them off the queue's hash set.
        if !list.contains(&time) {
            list.push(time);
            queue.register(time, key.clone(), window.clone());
        }
    }

    fn delete_timer(&mut self, key: &K, window: &W, event: bool, time: i64) {
        let Some(entry) = self
            .keys
            .get_mut(key)
            .and_then(|ks| ks.windows.get_mut(window))
        else {
            return;
        };
        let (list, queue) = if event {
            (&mut entry.event_timers, &mut self.event_timers)
        } else {
            (&mut entry.processing_timers, &mut self.processing_timers)
        };
        if let Some(pos) = list.iter().position(|t| *t == time) {
            list.swap_remove(pos);
            queue.delete(time, key, window);
        }
    }

    fn apply_requests(&mut self, key: &K, window: &W) {
        let requests = std::mem::take(&mut self.requests);
        for request in &requests {
            match *request {
                TimerRequest::RegisterEvent(t) => self.register_timer(key, window, true, t),
                TimerRequest::RegisterProcessing(t) => self.register_timer(key, window, false, t),
                TimerRequest::DeleteEvent(t) => self.delete_timer(key, window, true, t),
                TimerRequest::DeleteProcessing(t) => self.delete_timer(key, window, false, t),
            }
        }
        self.requests = requests;
        self.requests.clear();
    }

    fn register_cleanup_timer(&mut self, key: &K, window: &W) {
        let time = self.cleanup_time(window);
        if time != i64::MAX {
            self.register_timer(key, window, self.event_time, time);
        }
    }

    fn delete_cleanup_timer(&mut self, key: &K, window: &W) {
        let time = self.cleanup_time(window);
        if time != i64::MAX {
            self.delete_timer(key, window, self.event_time, time);
        }
    }

    /// Runs a trigger callback for `key`'s `window`, at processing time
    /// `now`, and applies its timers.
    fn call_trigger(
        &mut self,
        key: &K,
        window: &W,
        now: i64,
        call: impl FnOnce(&mut dyn Trigger<T, W>, &mut TriggerContext<'_>) -> TriggerResult,
    ) -> TriggerResult {
        let watermark = self.watermark;
        let ks = self.keys.entry(key.clone()).or_default();
        let entry = ks.windows.entry_or_default(window.clone());
        let mut ctx =
            TriggerContext::new(watermark, now, &mut entry.trigger_state, &mut self.requests);
        let result = call(self.spec.trigger.as_mut(), &mut ctx);
        self.apply_requests(key, window);
        result
    }

    /// The contents of `key`'s `state_window` in the keyed-state backend
    /// (elements in arrival order), if it has any.
    fn load(&mut self, key: &K, state_window: &W) -> Result<Option<L::Acc>, StateError> {
        let (Some(state), Some(stored)) = (&self.state, &self.stored) else {
            return Ok(None);
        };
        focus(state, key, state_window)?;
        match stored {
            StoredContents::Values(values) => values.value(),
            StoredContents::Elements(elements) => {
                let mut items = elements.entries()?;
                if items.is_empty() {
                    return Ok(None);
                }
                items.sort_unstable_by_key(|(seq, _)| *seq);
                let mut acc = self.logic.create();
                if let Some(buffer) = L::buffer(&mut acc) {
                    buffer.extend(items.into_iter().map(|(_, r)| r));
                }
                Ok(Some(acc))
            }
        }
    }

    /// Removes the contents of `key`'s `state_window` from the keyed-state
    /// backend.
    fn remove_stored(&mut self, key: &K, state_window: &W) -> Result<(), StateError> {
        let stored_entry = self
            .keys
            .get_mut(key)
            .and_then(|ks| ks.windows.get_mut(state_window))
            .and_then(|e| e.stored.take());
        let (Some(state), Some(stored), Some(_)) = (&self.state, &self.stored, stored_entry) else {
            return Ok(());
        };
        focus(state, key, state_window)?;
        match stored {
            StoredContents::Values(values) => values.clear(),
            StoredContents::Elements(elements) => elements.clear(),
        }
    }

    /// Adds `acc` to the contents of `key`'s `state_window` in the
    /// keyed-state backend (merging accumulators, appending elements).
    fn add_stored(&mut self, key: &K, state_window: &W, mut acc: L::Acc) -> FunctionResult {
        let (Some(state), Some(stored)) = (&self.state, &self.stored) else {
            return Ok(());
        };
        let entry = self
            .keys
            .entry(key.clone())
            .or_default()
            .windows
            .entry_or_default(state_window.clone());
        focus(state, key, state_window)?;
        match stored {
            StoredContents::Elements(elements) => {
                let mut seq = entry.stored.unwrap_or(0);
                if let Some(buffer) = L::buffer(&mut acc) {
                    for record in buffer.drain(..) {
                        elements.put(seq, record)?;
                        seq += 1;
                    }
                }
                entry.stored = Some(seq);
            }
            StoredContents::Values(values) => {
                let logic = &mut self.logic;
                values.update_with(|into| {
                    Some(match into {
                        Some(mut into) => {
                            logic.merge(&mut into, acc);
                            into
                        }
                        None => acc,
                    })
                })?;
                entry.stored = Some(0);
            }
        }
        Ok(())
    }

    /// Emits the contents of `state_window` as the result of `window`.
    fn fire(
        &mut self,
        key: &K,
        window: &W,
        state_window: &W,
        out: &mut Output<O>,
    ) -> FunctionResult {
        let firing = Firing {
            merging: self.merging,
            watermark: self.watermark,
            now: self.now(),
        };
        // Contents in the keyed-state backend are read out; in memory they
        // are used where they are.
        let mut loaded = None;
        if self.stored.is_some() {
            loaded = self.load(key, state_window)?;
        }
        let acc = match loaded.as_mut() {
            Some(acc) => acc,
            None => match self
                .keys
                .get_mut(key)
                .and_then(|ks| ks.windows.get_mut(state_window))
                .and_then(|e| e.acc.as_mut())
            {
                Some(acc) => acc,
                None => return Ok(()),
            },
        };
        let before = L::buffer(acc).map(|b| b.len());
        emit_contents(
            &mut self.logic,
            self.spec.evictor.as_deref_mut(),
            self.state.as_ref(),
            firing,
            key,
            window,
            acc,
            out,
        )?;
        let evicted = self.spec.evictor.is_some() && L::buffer(acc).map(|b| b.len()) != before;
        // An evictor changed a stored buffer: it is the window's contents now.
        if let (Some(acc), true) = (loaded, evicted) {
            self.remove_stored(key, state_window)?;
            self.add_stored(key, state_window, acc)?;
        }
        Ok(())
    }

    fn purge(&mut self, key: &K, state_window: &W) -> FunctionResult {
        if let Some(entry) = self
            .keys
            .get_mut(key)
            .and_then(|ks| ks.windows.get_mut(state_window))
        {
            entry.acc = None;
        }
        self.remove_stored(key, state_window)?;
        Ok(())
    }

    fn handle(
        &mut self,
        result: TriggerResult,
        key: &K,
        window: &W,
        state_window: &W,
        out: &mut Output<O>,
    ) -> FunctionResult {
        if result.is_fire() {
            self.fire(key, window, state_window, out)?;
        }
        if result.is_purge() {
            self.purge(key, state_window)?;
        }
        Ok(())
    }

    /// Drops everything of `window` (Flink's `clearAllState`): contents,
    /// trigger state, then the function's `clear`, then per-window state.
    fn clear_all_state(
        &mut self,
        key: &K,
        window: &W,
        state_window: &W,
        out: &mut Output<O>,
    ) -> FunctionResult {
        self.call_trigger(key, window, self.now(), |t, ctx| {
            t.clear(window, ctx);
            TriggerResult::Continue
        });
        let namespaced = self
            .state
            .as_ref()
            .is_some_and(KeyedStateStore::has_namespaced_states);
        if self.stored.is_some() && window == state_window && namespaced {
            // Clearing the window's namespace below removes the contents.
            if let Some(entry) = self
                .keys
                .get_mut(key)
                .and_then(|ks| ks.windows.get_mut(state_window))
            {
                entry.stored = None;
            }
        } else {
            self.purge(key, state_window)?;
        }
        let firing = Firing {
            merging: self.merging,
            watermark: self.watermark,
            now: self.now(),
        };
        let (_, sides) = out.split();
        let logic = &mut self.logic;
        with_context(self.state.as_ref(), firing, key, window, sides, |ctx| {
            logic.clear(ctx)
        })??;
        if let (Some(state), true) = (&self.state, namespaced) {
            focus(state, key, window)?;
            state.clear_current_namespace()?;
        }
        if let Some(ks) = self.keys.get_mut(key) {
            if let Some(entry) = ks.windows.get_mut(window) {
                entry.trigger_state.clear();
            }
            ks.merging.retire_window(window);
            for w in [window, state_window] {
                if ks.windows.get(w).is_some_and(Entry::is_empty) {
                    ks.windows.remove(w);
                }
            }
            if ks.windows.is_empty() && ks.merging.is_empty() {
                self.keys.remove(key);
            }
        }
        Ok(())
    }

    /// Carries out one merge of session windows (Flink's merge function).
    fn apply_merge(&mut self, key: &K, merge: Merge<W>) -> FunctionResult {
        let Merge {
            result,
            merged,
            state_window,
            merged_state_windows,
        } = merge;
        let merged_states: Vec<TriggerState> = {
            let ks = self.keys.entry(key.clone()).or_default();
            merged
                .iter()
                .filter(|w| **w != result)
                .filter_map(|w| {
                    ks.windows
                        .get_mut(w)
                        .map(|e| std::mem::take(&mut e.trigger_state))
                })
                .collect()
        };
        self.call_trigger(key, &result, self.now(), |t, ctx| {
            t.on_merge(&result, ctx, merged_states);
            TriggerResult::Continue
        });
        for m in &merged {
            self.call_trigger(key, m, self.now(), |t, ctx| {
                t.clear(m, ctx);
                TriggerResult::Continue
            });
            self.delete_cleanup_timer(key, m);
        }
        if self.stored.is_some() {
            for sw in &merged_state_windows {
                let has = self
                    .keys
                    .get(key)
                    .and_then(|ks| ks.windows.get(sw))
                    .is_some_and(|e| e.stored.is_some());
                if !has {
                    continue;
                }
                let from = self.load(key, sw)?;
                self.remove_stored(key, sw)?;
                if let Some(from) = from {
                    self.add_stored(key, &state_window, from)?;
                }
            }
        }
        let Some(ks) = self.keys.get_mut(key) else {
            return Ok(());
        };
        for sw in &merged_state_windows {
            let from = ks.windows.get_mut(sw).and_then(|e| e.acc.take());
            if let Some(from) = from {
                let target = ks.windows.entry_or_default(state_window.clone());
                match target.acc.as_mut() {
                    Some(into) => self.logic.merge(into, from),
                    None => target.acc = Some(from),
                }
            }
        }
        for m in merged.iter().chain(&merged_state_windows) {
            if *m != result && *m != state_window && ks.windows.get(m).is_some_and(Entry::is_empty)
            {
                ks.windows.remove(m);
            }
        }
        Ok(())
    }

    fn add_to(&mut self, key: &K, state_window: &W, record: StreamRecord<T>) -> FunctionResult {
        let ks = self.keys.entry(key.clone()).or_default();
        let entry = ks.windows.entry_or_default(state_window.clone());
        let (Some(state), Some(stored)) = (&self.state, &self.stored) else {
            let acc = entry.acc.get_or_insert_with(|| self.logic.create());
            self.logic.add(acc, record);
            return Ok(());
        };
        focus(state, key, state_window)?;
        match stored {
            StoredContents::Elements(elements) => {
                let seq = entry.stored.unwrap_or(0);
                elements.put(seq, record)?;
                entry.stored = Some(seq + 1);
            }
            StoredContents::Values(values) => {
                let logic = &mut self.logic;
                values.update_with(|acc| {
                    let mut acc = acc.unwrap_or_else(|| logic.create());
                    logic.add(&mut acc, record);
                    Some(acc)
                })?;
                entry.stored = Some(0);
            }
        }
        Ok(())
    }
    fn process_record(
        &mut self,
        record: StreamRecord<T>,
        now: i64,
        out: &mut Output<O>,
    ) -> FunctionResult {
        let key = (self.spec.key_of)(&record.value);
        let ctx = AssignerContext {
            current_processing_time: now,
        };
        let mut windows = std::mem::take(&mut self.scratch);
        windows.clear();
        self.spec
            .assigner
            .assign_windows(&record.value, record.timestamp, &ctx, &mut windows);
        let mut skipped = true;
        let count = windows.len();
        let timestamp = record.timestamp;
        let mut record = Some(record);
        for (i, window) in windows.drain(..).enumerate() {
            let (actual, state_window) = if self.merging {
                let assigner = Arc::clone(&self.spec.assigner);
                let ks = self.keys.entry(key.clone()).or_default();
                let (actual, merges) = if assigner.merges_by_intersection() {
                    ks.merging
                        .add_time_window(window, |ws, cb| assigner.merge_windows(ws, cb))
                } else {
                    ks.merging
                        .add_window(window, |ws, cb| assigner.merge_windows(ws, cb))
                };
                for merge in merges {
                    self.apply_merge(&key, merge)?;
                }
                if self.is_window_late(&actual) {
                    if let Some(ks) = self.keys.get_mut(&key) {
                        ks.merging.retire_window(&actual);
                    }
                    continue;
                }
                let state_window = self
                    .keys
                    .get(&key)
                    .and_then(|ks| ks.merging.state_window(&actual))
                    .cloned()
                    .unwrap_or_else(|| actual.clone());
                (actual, state_window)
            } else {
                if self.is_window_late(&window) {
                    continue;
                }
                (window.clone(), window)
            };
            // The last window takes the record, the others a copy.
            let element = if i + 1 == count {
                record.take()
            } else {
                record.clone()
            };
            let Some(element) = element else { continue };
            skipped = false;
            // The trigger sees the element before it is added, which saves
            // a copy; it fires after, so the firing includes the element.
            let result = self.call_trigger(&key, &actual, now, |t, ctx| {
                t.on_element(&element.value, timestamp, &actual, ctx)
            });
            self.add_to(&key, &state_window, element)?;
            self.handle(result, &key, &actual, &state_window, out)?;
            self.register_cleanup_timer(&key, &actual);
        }
        self.scratch = windows;
        if let Some(record) = record.filter(|_| skipped && self.is_element_late(timestamp)) {
            self.on_late(record, out)?;
        }
        Ok(())
    }

    fn on_late(&mut self, record: StreamRecord<T>, out: &mut Output<O>) -> FunctionResult {
        emit_late(
            self.spec.late_tag.as_deref(),
            self.metrics.as_deref(),
            record,
            out,
        )
    }

    fn on_timer(
        &mut self,
        key: K,
        window: W,
        time: i64,
        event: bool,
        out: &mut Output<O>,
    ) -> FunctionResult {
        if let Some(entry) = self
            .keys
            .get_mut(&key)
            .and_then(|ks| ks.windows.get_mut(&window))
        {
            let list = if event {
                &mut entry.event_timers
            } else {
                &mut entry.processing_timers
            };
            list.retain(|t| *t != time);
        }
        let state_window = if self.merging {
            match self
                .keys
                .get(&key)
                .and_then(|ks| ks.merging.state_window(&window))
            {
                Some(sw) => sw.clone(),
                // The window was merged away; its timers were cleared with it.
                None => return Ok(()),
            }
        } else {
            window.clone()
        };
        let result = self.call_trigger(&key, &window, self.now(), |t, ctx| {
            if event {
                t.on_event_time(time, &window, ctx)
            } else {
                t.on_processing_time(time, &window, ctx)
            }
        });
        self.handle(result, &key, &window, &state_window, out)?;
        if event == self.event_time && time == self.cleanup_time(&window) {
            self.clear_all_state(&key, &window, &state_window, out)?;
        } else if let Some(ks) = self.keys.get_mut(&key) {
            if ks.windows.get(&window).is_some_and(Entry::is_empty) {
                ks.windows.remove(&window);
            }
        }
        Ok(())
    }
}

/// The logic every window operator instance runs, boxed per subtask.
impl<T, K, W, O, L> Operator for WindowOperator<T, K, W, O, L>
where
    T: Clone + Send + Serialize + DeserializeOwned + 'static,
    K: Hash + Eq + Clone + Send + Serialize + DeserializeOwned + StableHash + 'static,
    W: Window,
    O: Send + 'static,
    L: WindowLogic<K, W, T, O>,
{
    type In = T;
    type Out = O;

    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.clock = Some(ctx.clock.clone());
        self.metrics = Some(Arc::clone(&ctx.metrics));
        let own = OwnState::new(ctx);
        for (key, k) in own.restore::<K, KeyIn<W, L::Acc>>("windows")? {
            let ks = KeyState::from_checkpoint(k);
            for (w, e) in ks.windows.iter() {
                for t in &e.event_timers {
                    self.event_timers.register(*t, key.clone(), w.clone());
                }
                for t in &e.processing_timers {
                    self.processing_timers.register(*t, key.clone(), w.clone());
                }
            }
            self.keys.insert(key, ks);
        }
        self.own = Some(own);
        let (saved, watermark) = SavedWatermark::open(ctx)?;
        self.watermark = watermark;
        self.saved_watermark = Some(saved);
        let (keyed_ctx, state) = ctx.open_keyed_state()?;
        if state.is_key_value() {
            let windows = state.per_namespace();
            self.stored = Some(if L::KEEPS_ELEMENTS {
                StoredContents::Elements(
                    windows.map_state(&MapStateDescriptor::new(CONTENTS_STATE))?,
                )
            } else {
                StoredContents::Values(
                    windows.value_state(&ValueStateDescriptor::new(CONTENTS_STATE))?,
                )
            });
        }
        self.state = Some(state);
        self.logic.open(&keyed_ctx)
    }

    fn snapshot_state(&mut self, _checkpoint_id: u64) -> FunctionResult {
        if let (Some(own), Some(saved)) = (&self.own, &self.saved_watermark) {
            let keys = self
                .keys
                .iter()
                .map(|(k, ks)| Ok((k, ks.to_checkpoint()?)))
                .collect::<Result<Vec<_>, StateError>>()?;
            own.save("windows", keys)?;
            saved.save(self.watermark)?;
        }
        Ok(())
    }

    fn process_batch(
        &mut self,
        input: &mut Vec<StreamRecord<T>>,
        out: &mut Output<O>,
    ) -> FunctionResult {
        // One clock reading for the batch: assigners and triggers see the
        // same processing time for all its records (a reading per record
        // was a tenth of a processing-time window's time).
        let now = self.now();
        for record in input.drain(..) {
            if self.event_time && record.timestamp == NO_TIMESTAMP {
                return Err(no_timestamp());
            }
            self.process_record(record, now, out)?;
        }
        Ok(())
    }

    fn process_watermark(&mut self, watermark: i64, out: &mut Output<O>) -> FunctionResult {
        // Timers see the new watermark, as in Flink's timer service.
        self.watermark = self.watermark.max(watermark);
        while let Some(timer) = self.event_timers.pop_due(watermark) {
            self.on_timer(timer.key, timer.namespace, timer.timestamp, true, out)?;
            out.flush_if_full()?;
        }
        out.emit_watermark(watermark)?;
        Ok(())
    }

    fn pending_event_timers(&self) -> Option<(u64, Option<i64>)> {
        Some(self.event_timers.pending())
    }

    fn processing_deadline(&self) -> Option<i64> {
        // `peek_timestamp` needs `&mut` to skip deleted timers; the queue's
        // earliest entry is a safe lower bound.
        self.processing_timers.earliest_hint()
    }

    fn on_processing_time(&mut self, now: i64, out: &mut Output<O>) -> FunctionResult {
        // At the end of input (`now` is the end of time) the timers pending
        // then fire, but not the ones their firings register beyond them:
        // a continuous trigger registers its next firing each time, and
        // would fire forever.
        let due = match now {
            i64::MAX => self
                .processing_timers
                .iter()
                .map(|t| t.timestamp)
                .max()
                .unwrap_or(now),
            now => now,
        };
        while let Some(timer) = self.processing_timers.pop_due(due) {
            self.on_timer(timer.key, timer.namespace, timer.timestamp, false, out)?;
            out.flush_if_full()?;
        }
        Ok(())
    }
}

/// What a firing needs to know besides the key and window.
#[derive(Clone, Copy)]
pub(crate) struct Firing {
    pub merging: bool,
    pub watermark: i64,
    pub now: i64,
}

/// Runs `f` with the context of `key`'s `window`, its keyed state pointed
/// at the key (eagerly if state is declared, else on first use).
pub(crate) fn with_context<K, W, R>(
    state: Option<&KeyedStateStore>,
    firing: Firing,
    key: &K,
    window: &W,
    sides: &mut SideOutputs,
    f: impl FnOnce(&mut ProcessWindowContext<'_, W>) -> R,
) -> Result<R, StateError>
where
    K: Serialize + StableHash,
    W: Window,
{
    let set_key = |s: &KeyedStateStore| s.set_current_key(key);
    let mut key_set = false;
    if let Some(s) = state.filter(|s| s.in_use()) {
        s.set_current_key(key)?;
        key_set = true;
    }
    let mut ctx = ProcessWindowContext {
        window,
        watermark: firing.watermark,
        processing_time: firing.now,
        scope: state.map(|store| WindowScope {
            store,
            set_key: &set_key,
            merging: firing.merging,
            key_set,
            namespace_set: false,
        }),
        sides,
        timestamp: window.max_timestamp(),
    };
    Ok(f(&mut ctx))
}

/// Evicts (if configured), emits and evicts again: one firing of `acc`.
#[allow(clippy::too_many_arguments)]
fn emit_contents<K, W, T: 'static, O, L>(
    logic: &mut L,
    mut evictor: Option<&mut dyn Evictor<T, W>>,
    state: Option<&KeyedStateStore>,
    firing: Firing,
    key: &K,
    window: &W,
    acc: &mut L::Acc,
    out: &mut Output<O>,
) -> FunctionResult
where
    K: Serialize + StableHash,
    W: Window,
    O: Send + 'static,
    L: WindowLogic<K, W, T, O>,
{
    // Late records sent to the side output before this firing go first.
    if out.has_pending_side_records() {
        out.flush()?;
    }
    let evictor_ctx = EvictorContext {
        current_watermark: firing.watermark,
        current_processing_time: firing.now,
    };
    if let (Some(evictor), Some(buffer)) = (evictor.as_deref_mut(), L::buffer(acc)) {
        evictor.evict_before(buffer, window, &evictor_ctx);
    }
    let (records, sides) = out.split();
    let timestamp = window.max_timestamp();
    with_context(state, firing, key, window, sides, |ctx| {
        logic.emit(key, acc, ctx, &mut Collector::new(records, timestamp))
    })??;
    if let (Some(evictor), Some(buffer)) = (evictor, L::buffer(acc)) {
        evictor.evict_after(buffer, window, &evictor_ctx);
    }
    Ok(())
}
