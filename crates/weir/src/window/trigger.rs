//! Triggers: when a window's contents are emitted (Flink's `Trigger`).

use std::marker::PhantomData;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::{GlobalWindow, Window};
use crate::state_slot::StateSlot;

/// What a trigger decides (Flink's `TriggerResult`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TriggerResult {
    /// Do nothing.
    Continue,
    /// Emit the window's result; keep its contents.
    Fire,
    /// Drop the window's contents without emitting.
    Purge,
    /// Emit, then drop the contents.
    FireAndPurge,
}

impl TriggerResult {
    /// Whether the window emits.
    pub fn is_fire(self) -> bool {
        matches!(self, TriggerResult::Fire | TriggerResult::FireAndPurge)
    }

    /// Whether the window's contents are dropped.
    pub fn is_purge(self) -> bool {
        matches!(self, TriggerResult::Purge | TriggerResult::FireAndPurge)
    }
}

/// A trigger's own state for one key and window (e.g. a count).
pub type TriggerState = StateSlot;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TimerRequest {
    RegisterEvent(i64),
    RegisterProcessing(i64),
    DeleteEvent(i64),
    DeleteProcessing(i64),
}

/// What a trigger may see and do for the key and window it is called for.
pub struct TriggerContext<'a> {
    watermark: i64,
    processing_time: i64,
    state: &'a mut TriggerState,
    timers: &'a mut Vec<TimerRequest>,
}

impl<'a> TriggerContext<'a> {
    pub(crate) fn new(
        watermark: i64,
        processing_time: i64,
        state: &'a mut TriggerState,
        timers: &'a mut Vec<TimerRequest>,
    ) -> Self {
        TriggerContext {
            watermark,
            processing_time,
            state,
            timers,
        }
    }

    /// The operator's event-time watermark.
    pub fn current_watermark(&self) -> i64 {
        self.watermark
    }

    /// The current processing time.
    pub fn current_processing_time(&self) -> i64 {
        self.processing_time
    }

    /// Calls `on_event_time(time)` when the watermark reaches `time`.
    pub fn register_event_time_timer(&mut self, time: i64) {
        self.timers.push(TimerRequest::RegisterEvent(time));
    }

    /// Calls `on_processing_time(time)` when processing time reaches `time`.
    pub fn register_processing_time_timer(&mut self, time: i64) {
        self.timers.push(TimerRequest::RegisterProcessing(time));
    }

    /// Deletes an event-time timer of this key and window.
    pub fn delete_event_time_timer(&mut self, time: i64) {
        self.timers.push(TimerRequest::DeleteEvent(time));
    }

    /// Deletes a processing-time timer of this key and window.
    pub fn delete_processing_time_timer(&mut self, time: i64) {
        self.timers.push(TimerRequest::DeleteProcessing(time));
    }

    /// The trigger's state for this key and window, created with `Default`.
    pub fn state<S>(&mut self) -> &mut S
    where
        S: Default + Serialize + DeserializeOwned + Send + 'static,
    {
        self.state.get_or_default::<S>()
    }

    /// Drops the trigger's state for this key and window.
    pub fn clear_state(&mut self) {
        self.state.clear();
    }
}

/// Decides when a window emits (Flink's `Trigger`). One instance serves all
/// keys and windows of a subtask; per-window state lives in the context.
pub trait Trigger<T, W>: Send + 'static {
    /// A record was added to `window`.
    fn on_element(
        &mut self,
        element: &T,
        timestamp: i64,
        window: &W,
        ctx: &mut TriggerContext<'_>,
    ) -> TriggerResult;

    /// An event-time timer of this window fired.
    fn on_event_time(
        &mut self,
        time: i64,
        window: &W,
        ctx: &mut TriggerContext<'_>,
    ) -> TriggerResult;

    /// A processing-time timer of this window fired.
    fn on_processing_time(
        &mut self,
        time: i64,
        window: &W,
        ctx: &mut TriggerContext<'_>,
    ) -> TriggerResult;

    /// Whether the trigger supports merging windows (sessions).
    fn can_merge(&self) -> bool {
        false
    }

    /// Windows were merged into `window`; `merged` holds their states.
    fn on_merge(&mut self, _window: &W, _ctx: &mut TriggerContext<'_>, _merged: Vec<TriggerState>) {
    }

    /// The window is being dropped: delete timers and state.
    fn clear(&mut self, window: &W, ctx: &mut TriggerContext<'_>);
}

/// Fires when the watermark passes the window's end (Flink's
/// `EventTimeTrigger`); fires at once for a window already passed (a late
/// record within the allowed lateness).
#[derive(Debug, Clone, Copy, Default)]
pub struct EventTimeTrigger;

impl EventTimeTrigger {
    /// The trigger.
    pub fn create() -> Self {
        EventTimeTrigger
    }
}

impl<T, W: Window> Trigger<T, W> for EventTimeTrigger {
    #[inline]
    fn on_element(
        &mut self,
        _e: &T,
        _ts: i64,
        window: &W,
        ctx: &mut TriggerContext<'_>,
    ) -> TriggerResult {
        if window.max_timestamp() <= ctx.current_watermark() {
            TriggerResult::Fire
        } else {
            ctx.register_event_time_timer(window.max_timestamp());
            TriggerResult::Continue
        }
    }

    fn on_event_time(
        &mut self,
        time: i64,
        window: &W,
        _ctx: &mut TriggerContext<'_>,
    ) -> TriggerResult {
        if time == window.max_timestamp() {
            TriggerResult::Fire
        } else {
            TriggerResult::Continue
        }
    }

    fn on_processing_time(
        &mut self,
        _t: i64,
        _w: &W,
        _ctx: &mut TriggerContext<'_>,
    ) -> TriggerResult {
        TriggerResult::Continue
    }

    fn can_merge(&self) -> bool {
        true
    }

    fn on_merge(&mut self, window: &W, ctx: &mut TriggerContext<'_>, _merged: Vec<TriggerState>) {
        // Only register a timer if the watermark has not passed the end yet;
        // otherwise the merged window fired (or is late) already.
        if window.max_timestamp() > ctx.current_watermark() {
            ctx.register_event_time_timer(window.max_timestamp());
        }
    }

    fn clear(&mut self, window: &W, ctx: &mut TriggerContext<'_>) {
        ctx.delete_event_time_timer(window.max_timestamp());
    }
}

/// Fires when processing time passes the window's end (Flink's
/// `ProcessingTimeTrigger`).
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcessingTimeTrigger;

impl ProcessingTimeTrigger {
    /// The trigger.
    pub fn create() -> Self {
        ProcessingTimeTrigger
    }
}

impl<T, W: Window> Trigger<T, W> for ProcessingTimeTrigger {
    fn on_element(
        &mut self,
        _e: &T,
        _ts: i64,
        window: &W,
        ctx: &mut TriggerContext<'_>,
    ) -> TriggerResult {
        ctx.register_processing_time_timer(window.max_timestamp());
        TriggerResult::Continue
    }

    fn on_event_time(&mut self, _t: i64, _w: &W, _ctx: &mut TriggerContext<'_>) -> TriggerResult {
        TriggerResult::Continue
    }

    fn on_processing_time(
        &mut self,
        _t: i64,
        _w: &W,
        _ctx: &mut TriggerContext<'_>,
    ) -> TriggerResult {
        TriggerResult::Fire
    }

    fn can_merge(&self) -> bool {
        true
    }

    fn on_merge(&mut self, window: &W, ctx: &mut TriggerContext<'_>, _merged: Vec<TriggerState>) {
        if window.max_timestamp() > ctx.current_processing_time() {
            ctx.register_processing_time_timer(window.max_timestamp());
        }
    }

    fn clear(&mut self, window: &W, ctx: &mut TriggerContext<'_>) {
        ctx.delete_processing_time_timer(window.max_timestamp());
    }
}

/// Fires every `count` records (Flink's `CountTrigger`).
#[derive(Debug, Clone, Copy)]
pub struct CountTrigger {
    max_count: u64,
}

impl CountTrigger {
    /// Fires when a window holds `max_count` records since its last firing.
    pub fn of(max_count: u64) -> Self {
        CountTrigger {
            max_count: max_count.max(1),
        }
    }
}

impl<T, W: Window> Trigger<T, W> for CountTrigger {
    fn on_element(
        &mut self,
        _e: &T,
        _ts: i64,
        _w: &W,
        ctx: &mut TriggerContext<'_>,
    ) -> TriggerResult {
        let count = ctx.state::<u64>();
        *count += 1;
        if *count >= self.max_count {
            *count = 0;
            TriggerResult::Fire
        } else {
            TriggerResult::Continue
        }
    }

    fn on_event_time(&mut self, _t: i64, _w: &W, _ctx: &mut TriggerContext<'_>) -> TriggerResult {
        TriggerResult::Continue
    }

    fn on_processing_time(
        &mut self,
        _t: i64,
        _w: &W,
        _ctx: &mut TriggerContext<'_>,
    ) -> TriggerResult {
        TriggerResult::Continue
    }

    fn can_merge(&self) -> bool {
        true
    }

    fn on_merge(&mut self, _w: &W, ctx: &mut TriggerContext<'_>, merged: Vec<TriggerState>) {
        let sum: u64 = merged.into_iter().filter_map(|mut s| s.take::<u64>()).sum();
        *ctx.state::<u64>() += sum;
    }

    fn clear(&mut self, _w: &W, ctx: &mut TriggerContext<'_>) {
        ctx.clear_state();
    }
}

/// Turns every `Fire` of the inner trigger into `FireAndPurge` (Flink's
/// `PurgingTrigger`).
#[derive(Debug, Clone)]
pub struct PurgingTrigger<Tr> {
    inner: Tr,
}

impl<Tr> PurgingTrigger<Tr> {
    /// Wraps `inner`.
    pub fn of(inner: Tr) -> Self {
        PurgingTrigger { inner }
    }
}

fn purging(result: TriggerResult) -> TriggerResult {
    if result.is_fire() {
        TriggerResult::FireAndPurge
    } else {
        result
    }
}

impl<T, W: Window, Tr: Trigger<T, W>> Trigger<T, W> for PurgingTrigger<Tr> {
    fn on_element(&mut self, e: &T, ts: i64, w: &W, ctx: &mut TriggerContext<'_>) -> TriggerResult {
        purging(self.inner.on_element(e, ts, w, ctx))
    }

    fn on_event_time(&mut self, t: i64, w: &W, ctx: &mut TriggerContext<'_>) -> TriggerResult {
        purging(self.inner.on_event_time(t, w, ctx))
    }

    fn on_processing_time(&mut self, t: i64, w: &W, ctx: &mut TriggerContext<'_>) -> TriggerResult {
        purging(self.inner.on_processing_time(t, w, ctx))
    }

    fn can_merge(&self) -> bool {
        self.inner.can_merge()
    }

    fn on_merge(&mut self, w: &W, ctx: &mut TriggerContext<'_>, merged: Vec<TriggerState>) {
        self.inner.on_merge(w, ctx, merged)
    }

    fn clear(&mut self, w: &W, ctx: &mut TriggerContext<'_>) {
        self.inner.clear(w, ctx)
    }
}

/// Fires repeatedly every `interval` of event time, and at the window's end
/// (Flink's `ContinuousEventTimeTrigger`).
#[derive(Debug, Clone, Copy)]
pub struct ContinuousEventTimeTrigger {
    interval_ms: i64,
}

impl ContinuousEventTimeTrigger {
    /// Fires every `interval` of event time.
    pub fn of(interval: Duration) -> Self {
        ContinuousEventTimeTrigger {
            interval_ms: (interval.as_millis() as i64).max(1),
        }
    }
}

/// The next firing time at or after `time` on an `interval` grid.
fn next_fire(time: i64, interval: i64) -> i64 {
    (time - time.rem_euclid(interval)).saturating_add(interval)
}

impl<T, W: Window> Trigger<T, W> for ContinuousEventTimeTrigger {
    fn on_element(
        &mut self,
        _e: &T,
        ts: i64,
        window: &W,
        ctx: &mut TriggerContext<'_>,
    ) -> TriggerResult {
        if window.max_timestamp() <= ctx.current_watermark() {
            return TriggerResult::Fire;
        }
        ctx.register_event_time_timer(window.max_timestamp());
        let next = ctx.state::<Option<i64>>();
        if next.is_none() {
            let t = next_fire(ts, self.interval_ms).min(window.max_timestamp());
            *next = Some(t);
            ctx.register_event_time_timer(t);
        }
        TriggerResult::Continue
    }

    fn on_event_time(
        &mut self,
        time: i64,
        window: &W,
        ctx: &mut TriggerContext<'_>,
    ) -> TriggerResult {
        if time == window.max_timestamp() {
            return TriggerResult::Fire;
        }
        let next = ctx.state::<Option<i64>>();
        if *next == Some(time) {
            let t = time
                .saturating_add(self.interval_ms)
                .min(window.max_timestamp());
            *next = Some(t);
            ctx.register_event_time_timer(t);
            return TriggerResult::Fire;
        }
        TriggerResult::Continue
    }

    fn on_processing_time(
        &mut self,
        _t: i64,
        _w: &W,
        _ctx: &mut TriggerContext<'_>,
    ) -> TriggerResult {
        TriggerResult::Continue
    }

    fn can_merge(&self) -> bool {
        true
    }

    fn on_merge(&mut self, window: &W, ctx: &mut TriggerContext<'_>, merged: Vec<TriggerState>) {
        let earliest = merged
            .into_iter()
            .filter_map(|mut s| s.take::<Option<i64>>())
            .flatten()
            .min();
        if let Some(t) = earliest {
            *ctx.state::<Option<i64>>() = Some(t);
            ctx.register_event_time_timer(t);
        }
        if window.max_timestamp() > ctx.current_watermark() {
            ctx.register_event_time_timer(window.max_timestamp());
        }
    }

    fn clear(&mut self, window: &W, ctx: &mut TriggerContext<'_>) {
        if let Some(t) = *ctx.state::<Option<i64>>() {
            ctx.delete_event_time_timer(t);
        }
        ctx.delete_event_time_timer(window.max_timestamp());
        ctx.clear_state();
    }
}

/// Fires repeatedly every `interval` of processing time (Flink's
/// `ContinuousProcessingTimeTrigger`).
#[derive(Debug, Clone, Copy)]
pub struct ContinuousProcessingTimeTrigger {
    interval_ms: i64,
}

impl ContinuousProcessingTimeTrigger {
    /// Fires every `interval` of processing time.
    pub fn of(interval: Duration) -> Self {
        ContinuousProcessingTimeTrigger {
            interval_ms: (interval.as_millis() as i64).max(1),
        }
    }
}

impl<T, W: Window> Trigger<T, W> for ContinuousProcessingTimeTrigger {
    fn on_element(
        &mut self,
        _e: &T,
        _ts: i64,
        window: &W,
        ctx: &mut TriggerContext<'_>,
    ) -> TriggerResult {
        let now = ctx.current_processing_time();
        let next = ctx.state::<Option<i64>>();
        if next.is_none() {
            let t = next_fire(now, self.interval_ms).min(window.max_timestamp());
            *next = Some(t);
            ctx.register_processing_time_timer(t);
        }
        TriggerResult::Continue
    }

    fn on_event_time(&mut self, _t: i64, _w: &W, _ctx: &mut TriggerContext<'_>) -> TriggerResult {
        TriggerResult::Continue
    }

    fn on_processing_time(
        &mut self,
        time: i64,
        window: &W,
        ctx: &mut TriggerContext<'_>,
    ) -> TriggerResult {
        let next = ctx.state::<Option<i64>>();
        if *next == Some(time) {
            let t = time
                .saturating_add(self.interval_ms)
                .min(window.max_timestamp());
            *next = Some(t);
            if t > time {
                ctx.register_processing_time_timer(t);
            }
            return TriggerResult::Fire;
        }
        TriggerResult::Continue
    }

    fn can_merge(&self) -> bool {
        true
    }

    fn on_merge(&mut self, _w: &W, ctx: &mut TriggerContext<'_>, merged: Vec<TriggerState>) {
        let earliest = merged
            .into_iter()
            .filter_map(|mut s| s.take::<Option<i64>>())
            .flatten()
            .min();
        if let Some(t) = earliest {
            *ctx.state::<Option<i64>>() = Some(t);
            ctx.register_processing_time_timer(t);
        }
    }

    fn clear(&mut self, _w: &W, ctx: &mut TriggerContext<'_>) {
        if let Some(t) = *ctx.state::<Option<i64>>() {
            ctx.delete_processing_time_timer(t);
        }
        ctx.clear_state();
    }
}

/// Never fires: the default trigger of [`GlobalWindows`](super::GlobalWindows).
#[derive(Debug, Clone, Copy, Default)]
pub struct NeverTrigger<W = GlobalWindow>(PhantomData<fn(W)>);

impl<W> NeverTrigger<W> {
    /// The trigger.
    pub fn create() -> Self {
        NeverTrigger(PhantomData)
    }
}

impl<T, W: Window> Trigger<T, W> for NeverTrigger<W> {
    fn on_element(
        &mut self,
        _e: &T,
        _ts: i64,
        _w: &W,
        _ctx: &mut TriggerContext<'_>,
    ) -> TriggerResult {
        TriggerResult::Continue
    }
    fn on_event_time(&mut self, _t: i64, _w: &W, _ctx: &mut TriggerContext<'_>) -> TriggerResult {
        TriggerResult::Continue
    }
    fn on_processing_time(
        &mut self,
        _t: i64,
        _w: &W,
        _ctx: &mut TriggerContext<'_>,
    ) -> TriggerResult {
        TriggerResult::Continue
    }
    fn clear(&mut self, _w: &W, _ctx: &mut TriggerContext<'_>) {}
}
