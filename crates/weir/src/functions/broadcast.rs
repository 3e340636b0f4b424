//! Broadcast state (Flink's broadcast state pattern): a low-volume stream
//! (rules, thresholds, configuration) is broadcast to every parallel
//! instance of an operator, which keeps it in broadcast state — a map per
//! descriptor, the same in every instance — and reads it while processing
//! the main stream.

use std::collections::HashMap;
use std::hash::Hash;

use serde::de::DeserializeOwned;
use weir_runtime::element::{StreamRecord, NO_TIMESTAMP};
use weir_runtime::operator::SideOutputs;
use weir_state::{
    decode_key, KeyedStateStore, ListStateDescriptor, MapStateDescriptor, OperatorStateStore,
    StateError, StateValue, ValueState, ValueStateDescriptor,
};

use super::process::{KeyedTimers, TimerService};
use super::{Collector, FunctionResult, OutputTag, RuntimeContext};
use crate::state_slot::StateSlot;

/// The broadcast states of one operator instance, by descriptor name.
#[derive(Default)]
pub(crate) struct BroadcastStates {
    maps: Vec<(String, StateSlot)>,
}

impl BroadcastStates {
    /// Declares the states a broadcast stream carries (typed on first use).
    pub fn new(names: &[String]) -> Self {
        BroadcastStates {
            maps: names
                .iter()
                .map(|n| (n.clone(), StateSlot::default()))
                .collect(),
        }
    }

    fn slot(&mut self, name: &str) -> Result<&mut StateSlot, StateError> {
        self.maps
            .iter_mut()
            .find(|(n, _)| n == name)
            .map(|(_, m)| m)
            .ok_or_else(|| {
                StateError::Internal(format!(
                    "broadcast state '{name}' is not carried by the broadcast stream"
                ))
            })
    }

    pub fn get_mut<K: StateValue + Hash + Eq, V: StateValue>(
        &mut self,
        desc: &MapStateDescriptor<K, V>,
    ) -> Result<&mut HashMap<K, V>, StateError> {
        self.slot(desc.name())?
            .get_or_default_checked::<HashMap<K, V>>()
            .ok_or_else(|| StateError::Conflict {
                name: desc.name().to_string(),
                existing: "a broadcast state of another type".into(),
            })
    }

    /// Restores the states from operator state (every instance snapshots
    /// the same broadcast state; the first copy is taken, so any
    /// parallelism restores it whole, as Flink does).
    pub fn restore(&mut self, store: &OperatorStateStore) -> Result<(), StateError> {
        for (name, slot) in &mut self.maps {
            let list = store.get_union_list_state(&Self::descriptor(name))?;
            if let Some(bytes) = list.get()?.into_iter().next() {
                *slot = StateSlot::restored(Some(bytes));
            }
        }
        Ok(())
    }

    /// Writes the states to operator state for the checkpoint being taken.
    pub fn snapshot(&self, store: &OperatorStateStore) -> Result<(), StateError> {
        for (name, slot) in &self.maps {
            let list = store.get_union_list_state(&Self::descriptor(name))?;
            list.update(slot.encode()?.into_iter().collect())?;
        }
        Ok(())
    }

    fn descriptor(name: &str) -> ListStateDescriptor<Vec<u8>> {
        ListStateDescriptor::new(format!("\u{1}weir/broadcast/{name}"))
    }
}

/// What `process_element` may do: read broadcast state, and on keyed
/// streams use keyed state (through the handles from `open`) and timers.
pub struct ReadOnlyContext<'a, K = ()> {
    pub(crate) states: &'a mut BroadcastStates,
    pub(crate) key: &'a K,
    pub(crate) timestamp: i64,
    pub(crate) watermark: i64,
    pub(crate) processing_time: i64,
    pub(crate) timers: Option<&'a mut KeyedTimers<K>>,
    pub(crate) sides: &'a mut SideOutputs,
}

impl<K: Clone + Eq + Hash> ReadOnlyContext<'_, K> {
    /// The broadcast state `desc`, read-only here (only broadcast elements
    /// change it, so every instance sees the same).
    pub fn get_broadcast_state<BK: StateValue + Hash + Eq, BV: StateValue>(
        &mut self,
        desc: &MapStateDescriptor<BK, BV>,
    ) -> Result<&HashMap<BK, BV>, StateError> {
        Ok(&*self.states.get_mut(desc)?)
    }

    /// The key of the record (keyed streams).
    pub fn get_current_key(&self) -> &K {
        self.key
    }

    /// The record's event timestamp, if it has one.
    pub fn timestamp(&self) -> Option<i64> {
        (self.timestamp != NO_TIMESTAMP).then_some(self.timestamp)
    }

    /// The operator's watermark.
    pub fn current_watermark(&self) -> i64 {
        self.watermark
    }

    /// Timers of the current key (keyed streams only).
    pub fn timer_service(&mut self) -> TimerService<'_, K> {
        TimerService::new(
            self.key,
            self.timers.as_deref_mut(),
            self.watermark,
            self.processing_time,
        )
    }

    /// Emits `value` to the side output `tag`.
    pub fn output<X: Send + 'static>(&mut self, tag: &OutputTag<X>, value: X) {
        self.sides.emit(
            tag.id(),
            StreamRecord::with_timestamp(value, self.timestamp),
        );
    }
}

/// What `process_broadcast_element` may do: change broadcast state, and on
/// keyed streams visit the keyed state of every key.
pub struct BroadcastContext<'a, K = ()> {
    pub(crate) states: &'a mut BroadcastStates,
    pub(crate) keyed: Option<&'a KeyedStateStore>,
    pub(crate) timestamp: i64,
    pub(crate) watermark: i64,
    pub(crate) sides: &'a mut SideOutputs,
    pub(crate) _key: std::marker::PhantomData<fn() -> K>,
}

impl<K> BroadcastContext<'_, K> {
    /// The broadcast state `desc`, to read and change.
    pub fn get_broadcast_state<BK: StateValue + Hash + Eq, BV: StateValue>(
        &mut self,
        desc: &MapStateDescriptor<BK, BV>,
    ) -> Result<&mut HashMap<BK, BV>, StateError> {
        self.states.get_mut(desc)
    }

    /// Calls `f(key, state)` for every key of this instance holding the
    /// value state `desc` (Flink's `applyToKeyedState`).
    pub fn apply_to_keyed_state<S, F>(
        &mut self,
        desc: &ValueStateDescriptor<S>,
        mut f: F,
    ) -> FunctionResult
    where
        K: DeserializeOwned,
        S: StateValue,
        F: FnMut(&K, &ValueState<S>) -> FunctionResult,
    {
        let store = self
            .keyed
            .ok_or_else(|| StateError::NotKeyed(desc.name().to_string()))?;
        let state = store.value_state(desc)?;
        for (key_group, key) in store.keys_of(desc.name())? {
            store.set_current_encoded_key(key_group, &key)?;
            let k: K = decode_key(&key)?;
            f(&k, &state)?;
        }
        Ok(())
    }

    /// The broadcast record's event timestamp, if it has one.
    pub fn timestamp(&self) -> Option<i64> {
        (self.timestamp != NO_TIMESTAMP).then_some(self.timestamp)
    }

    /// The operator's watermark.
    pub fn current_watermark(&self) -> i64 {
        self.watermark
    }

    /// Emits `value` to the side output `tag`.
    pub fn output<X: Send + 'static>(&mut self, tag: &OutputTag<X>, value: X) {
        self.sides.emit(
            tag.id(),
            StreamRecord::with_timestamp(value, self.timestamp),
        );
    }
}

/// Processes a keyed stream connected to a broadcast stream (Flink's
/// `KeyedBroadcastProcessFunction`).
pub trait KeyedBroadcastProcessFunction<K, I, B, O>: Send + 'static {
    /// Called once per subtask; declare keyed state here.
    fn open(&mut self, _ctx: &RuntimeContext) -> FunctionResult {
        Ok(())
    }

    /// A record of the keyed stream: broadcast state is read-only.
    fn process_element(
        &mut self,
        value: I,
        ctx: &mut ReadOnlyContext<'_, K>,
        out: &mut Collector<'_, O>,
    ) -> FunctionResult;

    /// A record of the broadcast stream, seen by every instance.
    fn process_broadcast_element(
        &mut self,
        value: B,
        ctx: &mut BroadcastContext<'_, K>,
        out: &mut Collector<'_, O>,
    ) -> FunctionResult;

    /// A timer of `ctx.get_current_key()` fired.
    fn on_timer(
        &mut self,
        _timestamp: i64,
        _ctx: &mut ReadOnlyContext<'_, K>,
        _out: &mut Collector<'_, O>,
    ) -> FunctionResult {
        Ok(())
    }

    /// Called once per subtask at the end.
    fn close(&mut self) -> FunctionResult {
        Ok(())
    }
}

/// Processes a (non-keyed) stream connected to a broadcast stream (Flink's
/// `BroadcastProcessFunction`).
pub trait BroadcastProcessFunction<I, B, O>: Send + 'static {
    /// Called once per subtask.
    fn open(&mut self, _ctx: &RuntimeContext) -> FunctionResult {
        Ok(())
    }

    /// A record of the main stream: broadcast state is read-only.
    fn process_element(
        &mut self,
        value: I,
        ctx: &mut ReadOnlyContext<'_>,
        out: &mut Collector<'_, O>,
    ) -> FunctionResult;

    /// A record of the broadcast stream, seen by every instance.
    fn process_broadcast_element(
        &mut self,
        value: B,
        ctx: &mut BroadcastContext<'_>,
        out: &mut Collector<'_, O>,
    ) -> FunctionResult;

    /// Called once per subtask at the end.
    fn close(&mut self) -> FunctionResult {
        Ok(())
    }
}
