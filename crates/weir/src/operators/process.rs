//! Process functions on plain and keyed streams.

use std::marker::PhantomData;

use std::hash::Hash;

use serde::de::DeserializeOwned;
use serde::Serialize;
use weir_runtime::element::{StreamRecord, NO_TIMESTAMP};
use weir_runtime::operator::{Operator, Output, RuntimeContext};
use weir_runtime::time::SharedClock;
use weir_runtime::FunctionResult;
use weir_state::{KeyedStateStore, StableHash};

use super::{KeySelector, OwnState};
use crate::functions::{
    Collector, KeyedProcessFunction, KeyedTimers, ProcessContext, ProcessFunction, TimeDomain,
};

pub(crate) struct ProcessOperator<F, I, O> {
    f: F,
    watermark: i64,
    _types: PhantomData<fn(I) -> O>,
}

impl<F, I, O> ProcessOperator<F, I, O> {
    pub fn new(f: F) -> Self {
        ProcessOperator {
            f,
            watermark: i64::MIN,
            _types: PhantomData,
        }
    }
}

impl<F, I, O> Operator for ProcessOperator<F, I, O>
where
    F: ProcessFunction<I, O>,
    I: Send + 'static,
    O: Send + 'static,
{
    type In = I;
    type Out = O;

    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.f.open(ctx)
    }

    fn process_batch(
        &mut self,
        input: &mut Vec<StreamRecord<I>>,
        out: &mut Output<O>,
    ) -> FunctionResult {
        let (records, sides) = out.split();
        for r in input.drain(..) {
            let mut ctx = ProcessContext::new(r.timestamp, self.watermark, &(), sides);
            self.f
                .process_element(r.value, &mut ctx, &mut Collector::new(records, r.timestamp))?;
        }
        Ok(())
    }

    fn process_watermark(&mut self, watermark: i64, out: &mut Output<O>) -> FunctionResult {
        self.watermark = watermark;
        out.emit_watermark(watermark)?;
        Ok(())
    }

    fn snapshot_state(&mut self, checkpoint_id: u64) -> FunctionResult {
        self.f.snapshot_state(checkpoint_id)
    }

    fn notify_checkpoint_complete(&mut self, checkpoint_id: u64) -> FunctionResult {
        self.f.notify_checkpoint_complete(checkpoint_id)
    }

    fn notify_checkpoint_aborted(&mut self, checkpoint_id: u64) -> FunctionResult {
        self.f.notify_checkpoint_aborted(checkpoint_id)
    }

    fn close(&mut self) -> FunctionResult {
        self.f.close()
    }
}

pub(crate) struct KeyedProcessOperator<F, K, I, O> {
    f: F,
    key_of: KeySelector<I, K>,
    watermark: i64,
    timers: KeyedTimers<K>,
    clock: Option<SharedClock>,
    state: Option<KeyedStateStore>,
    own: Option<OwnState>,
    /// The keys of the batch in process (kept for its allocation).
    keys: Vec<K>,
    _types: PhantomData<fn(I) -> O>,
}

/// The keyed state of a keyed operator's subtask, and the context its
/// functions open with.
pub(crate) fn keyed_context(
    ctx: &RuntimeContext,
) -> Result<(RuntimeContext, KeyedStateStore), weir_state::StateError> {
    ctx.open_keyed_state()
}

/// Points keyed state at `key`, if the function declared any.
#[inline]
pub(crate) fn set_current_key<K: Serialize + StableHash>(
    store: &Option<KeyedStateStore>,
    key: &K,
) -> FunctionResult {
    if let Some(store) = store.as_ref().filter(|s| s.in_use()) {
        store.set_current_key(key)?;
    }
    Ok(())
}

/// [`set_current_key`] for a key encoded (as keyed state encodes keys)
/// where it was made, with its [`StableHash::stable_hash`].
pub(crate) fn set_current_encoded_key(
    store: &Option<KeyedStateStore>,
    encoded: &[u8],
    hash: u64,
) -> FunctionResult {
    if let Some(store) = store.as_ref().filter(|s| s.in_use()) {
        store.set_current_hashed_key(encoded, hash)?;
    }
    Ok(())
}

/// With a large heap state, the keys of a batch's records, in `keys`,
/// prepared in the store (each encoded and hashed once, and its entries
/// prefetched a few records ahead, so that the memory accesses of several
/// records overlap). Otherwise `keys` stays empty and each record's key is
/// set in turn.
pub(crate) fn prepare_keys<K: Serialize + StableHash, I>(
    store: &Option<KeyedStateStore>,
    key_of: &KeySelector<I, K>,
    batch: &[StreamRecord<I>],
    keys: &mut Vec<K>,
) -> FunctionResult {
    keys.clear();
    if let Some(store) = store_to_prepare(store, batch.len())? {
        // Each key copied a word at a time: pushed whole, as `key_of`
        // returned it, it was read back in wider pieces than it was
        // stored in, which stalls the CPU on every record.
        keys.reserve(batch.len());
        for r in batch {
            weir_runtime::element::push_by_words(keys, key_of(&r.value));
        }
        store.prepare_keys(keys.iter())?;
    }
    Ok(())
}

/// The store, when `keys` keys about to be processed are worth preparing
/// in it (see [`prepare_keys`]): more than one, with a state past the
/// caches.
pub(crate) fn store_to_prepare(
    store: &Option<KeyedStateStore>,
    keys: usize,
) -> Result<Option<&KeyedStateStore>, weir_state::StateError> {
    match store.as_ref().filter(|s| s.in_use()) {
        Some(store) if keys > 1 && store.prefetch_pays()? => Ok(Some(store)),
        _ => Ok(None),
    }
}

/// [`set_prepared_key`] for a key encoded where it was made, prepared by
/// [`KeyedStateStore::prepare_encoded_keys`].
#[inline]
pub(crate) fn set_prepared_encoded_key(
    store: &Option<KeyedStateStore>,
    index: usize,
    encoded: &[u8],
    hash: u64,
) -> FunctionResult {
    if let Some(store) = store.as_ref().filter(|s| s.in_use()) {
        store.set_prepared_encoded_key(index, encoded, hash)?;
    }
    Ok(())
}

/// Makes the `index`-th key of the last [`prepare_keys`] the current key.
#[inline]
pub(crate) fn set_prepared_key<K: Serialize + StableHash>(
    store: &Option<KeyedStateStore>,
    index: usize,
    key: &K,
) -> FunctionResult {
    if let Some(store) = store.as_ref().filter(|s| s.in_use()) {
        store.set_prepared_key(index, key)?;
    }
    Ok(())
}

impl<F, K: Clone + Eq + Hash, I, O> KeyedProcessOperator<F, K, I, O> {
    pub fn new(f: F, key_of: KeySelector<I, K>) -> Self {
        KeyedProcessOperator {
            f,
            key_of,
            watermark: i64::MIN,
            timers: KeyedTimers::default(),
            clock: None,
            state: None,
            own: None,
            keys: Vec::new(),
            _types: PhantomData,
        }
    }

    fn now(&self) -> i64 {
        self.clock.as_ref().map_or(0, |c| c.now_ms())
    }

    fn fire(
        &mut self,
        key: K,
        timestamp: i64,
        domain: TimeDomain,
        out: &mut Output<O>,
    ) -> FunctionResult
    where
        F: KeyedProcessFunction<K, I, O>,
        K: Serialize + StableHash,
        O: Send + 'static,
    {
        let now = self.now();
        // Results of event-time timers carry the timer's time; those of
        // processing-time timers carry none (as Flink's collector).
        let out_ts = match domain {
            TimeDomain::EventTime => timestamp,
            TimeDomain::ProcessingTime => NO_TIMESTAMP,
        };
        set_current_key(&self.state, &key)?;
        let (records, sides) = out.split();
        let mut ctx = ProcessContext::new(out_ts, self.watermark, &key, sides)
            .with_timers(&mut self.timers, now)
            .in_timer(domain);
        self.f
            .on_timer(timestamp, &mut ctx, &mut Collector::new(records, out_ts))
    }
}

impl<F, K, I, O> Operator for KeyedProcessOperator<F, K, I, O>
where
    F: KeyedProcessFunction<K, I, O>,
    K: Clone + Eq + Hash + Serialize + DeserializeOwned + StableHash + Send + 'static,
    I: Send + 'static,
    O: Send + 'static,
{
    type In = I;
    type Out = O;

    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.clock = Some(ctx.clock.clone());
        let own = OwnState::new(ctx);
        self.timers.restore(&own)?;
        self.own = Some(own);
        let (ctx, store) = keyed_context(ctx)?;
        self.state = Some(store);
        self.f.open(&ctx)
    }

    fn process_batch(
        &mut self,
        input: &mut Vec<StreamRecord<I>>,
        out: &mut Output<O>,
    ) -> FunctionResult {
        let now = self.now();
        // Held for the batch: each record's accesses are then plain loads
        // and stores (see `KeyedStateStore::hold`). Its results are only
        // collected meanwhile, never sent on.
        let _hold = self.state.as_ref().map(KeyedStateStore::hold);
        let mut keys = std::mem::take(&mut self.keys);
        prepare_keys(&self.state, &self.key_of, input, &mut keys)?;
        let (records, sides) = out.split();
        let mut prepared = keys.drain(..);
        // The key of the record before: a run of records of one key (a
        // window's, by time) sets it once. Nothing in between moves the
        // state to another key: a function reaches its own key's state
        // only, and timers fire between batches.
        let mut last: Option<K> = None;
        for (i, r) in input.drain(..).enumerate() {
            let key = match prepared.next() {
                Some(key) => {
                    set_prepared_key(&self.state, i, &key)?;
                    key
                }
                None => {
                    let key = (self.key_of)(&r.value);
                    if last.as_ref() != Some(&key) {
                        set_current_key(&self.state, &key)?;
                    }
                    key
                }
            };
            let mut ctx = ProcessContext::new(r.timestamp, self.watermark, &key, sides)
                .with_timers(&mut self.timers, now);
            self.f
                .process_element(r.value, &mut ctx, &mut Collector::new(records, r.timestamp))?;
            last = Some(key);
        }
        drop(prepared);
        self.keys = keys;
        Ok(())
    }

    fn process_watermark(&mut self, watermark: i64, out: &mut Output<O>) -> FunctionResult {
        // Timers see the new watermark, as in Flink's timer service.
        self.watermark = self.watermark.max(watermark);
        // Held while the due timers fire, as for a batch (no other thread
        // reaches the store, so a full output waited on meanwhile holds
        // nothing up).
        let state = self.state.clone();
        let _hold = state.as_ref().map(KeyedStateStore::hold);
        while let Some(timer) = self.timers.event.pop_due(watermark) {
            self.fire(timer.key, timer.timestamp, TimeDomain::EventTime, out)?;
            out.flush_if_full()?;
        }
        out.emit_watermark(watermark)?;
        Ok(())
    }

    fn pending_event_timers(&self) -> Option<(u64, Option<i64>)> {
        Some(self.timers.event.pending())
    }

    fn processing_deadline(&self) -> Option<i64> {
        self.timers.processing.earliest_hint()
    }

    fn on_processing_time(&mut self, now: i64, out: &mut Output<O>) -> FunctionResult {
        while let Some(timer) = self.timers.processing.pop_due(now) {
            self.fire(timer.key, timer.timestamp, TimeDomain::ProcessingTime, out)?;
            out.flush_if_full()?;
        }
        Ok(())
    }

    fn snapshot_state(&mut self, checkpoint_id: u64) -> FunctionResult {
        if let Some(own) = &self.own {
            self.timers.save(own)?;
        }
        self.f.snapshot_state(checkpoint_id)
    }

    fn notify_checkpoint_complete(&mut self, checkpoint_id: u64) -> FunctionResult {
        self.f.notify_checkpoint_complete(checkpoint_id)
    }

    fn notify_checkpoint_aborted(&mut self, checkpoint_id: u64) -> FunctionResult {
        self.f.notify_checkpoint_aborted(checkpoint_id)
    }

    fn close(&mut self) -> FunctionResult {
        self.f.close()
    }
}
