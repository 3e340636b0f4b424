//! Process functions: records in, any output, with access to timestamps,
//! watermarks, the current key and side outputs.

use std::marker::PhantomData;
use std::sync::Arc;

use weir_runtime::element::{StreamRecord, NO_TIMESTAMP};
use weir_runtime::operator::SideOutputs;
use weir_runtime::time::TimerQueue;

use super::{Collector, FunctionResult, RuntimeContext};
use crate::operators::OwnState;

/// Names a side output and fixes its record type (Flink's `OutputTag`).
/// Two tags are the same side output when their ids are equal.
pub struct OutputTag<T> {
    id: Arc<str>,
    _type: PhantomData<fn() -> T>,
}

impl<T> OutputTag<T> {
    /// A tag with id `id`.
    pub fn new(id: impl AsRef<str>) -> Self {
        OutputTag {
            id: Arc::from(id.as_ref()),
            _type: PhantomData,
        }
    }

    /// The tag's id.
    pub fn id(&self) -> &str {
        &self.id
    }
}

impl<T> Clone for OutputTag<T> {
    fn clone(&self) -> Self {
        OutputTag {
            id: Arc::clone(&self.id),
            _type: PhantomData,
        }
    }
}

impl<T> std::fmt::Debug for OutputTag<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "OutputTag({})", self.id)
    }
}

/// Which clock a timer belongs to (Flink's `TimeDomain`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeDomain {
    /// Fired by the watermark.
    EventTime,
    /// Fired by the processing-time clock.
    ProcessingTime,
}

/// The timers of a keyed process operator: per key, de-duplicated, fired in
/// timestamp order.
pub(crate) struct KeyedTimers<K> {
    pub event: TimerQueue<K, ()>,
    pub processing: TimerQueue<K, ()>,
}

impl<K: Clone + Eq + std::hash::Hash> Default for KeyedTimers<K> {
    fn default() -> Self {
        KeyedTimers {
            event: TimerQueue::new(),
            processing: TimerQueue::new(),
        }
    }
}

impl<K> KeyedTimers<K>
where
    K: Clone + Eq + std::hash::Hash + serde::Serialize + serde::de::DeserializeOwned,
    K: weir_state::StableHash,
{
    /// Writes the timers to the checkpoint being taken: per key, its
    /// event-time and processing-time timestamps.
    pub fn save(&self, own: &OwnState) -> Result<(), weir_state::StateError> {
        let mut by_key: std::collections::HashMap<&K, (Vec<i64>, Vec<i64>)> =
            std::collections::HashMap::new();
        for t in self.event.iter() {
            by_key.entry(&t.key).or_default().0.push(t.timestamp);
        }
        for t in self.processing.iter() {
            by_key.entry(&t.key).or_default().1.push(t.timestamp);
        }
        own.save("timers", by_key)
    }

    /// Registers the timers a restore brought.
    pub fn restore(&mut self, own: &OwnState) -> Result<(), weir_state::StateError> {
        for (key, (event, processing)) in own.restore::<K, (Vec<i64>, Vec<i64>)>("timers")? {
            for t in event {
                self.event.register(t, key.clone(), ());
            }
            for t in processing {
                self.processing.register(t, key.clone(), ());
            }
        }
        Ok(())
    }
}

/// Timers and time, for the current key (Flink's `TimerService`).
pub struct TimerService<'a, K> {
    key: &'a K,
    timers: Option<&'a mut KeyedTimers<K>>,
    watermark: i64,
    processing_time: i64,
}

impl<'a, K: Clone + Eq + std::hash::Hash> TimerService<'a, K> {
    pub(crate) fn new(
        key: &'a K,
        timers: Option<&'a mut KeyedTimers<K>>,
        watermark: i64,
        processing_time: i64,
    ) -> Self {
        TimerService {
            key,
            timers,
            watermark,
            processing_time,
        }
    }

    fn timers(&mut self) -> &mut KeyedTimers<K> {
        match self.timers.as_deref_mut() {
            Some(t) => t,
            // As Flink's UnsupportedOperationException: the panic fails the
            // job with this message, naming the operator.
            None => panic!("setting timers is only supported on keyed streams"),
        }
    }

    /// The operator's current event-time watermark.
    pub fn current_watermark(&self) -> i64 {
        self.watermark
    }

    /// The current processing time.
    pub fn current_processing_time(&self) -> i64 {
        self.processing_time
    }

    /// Calls `on_timer` for this key when the watermark reaches `time`.
    /// Registering the same time twice registers it once.
    pub fn register_event_time_timer(&mut self, time: i64) {
        let key = self.key.clone();
        self.timers().event.register(time, key, ());
    }

    /// Calls `on_timer` for this key when processing time reaches `time`.
    pub fn register_processing_time_timer(&mut self, time: i64) {
        let key = self.key.clone();
        self.timers().processing.register(time, key, ());
    }

    /// Deletes this key's event-time timer at `time`, if any.
    pub fn delete_event_time_timer(&mut self, time: i64) {
        let key = self.key.clone();
        self.timers().event.delete(time, &key, &());
    }

    /// Deletes this key's processing-time timer at `time`, if any.
    pub fn delete_processing_time_timer(&mut self, time: i64) {
        let key = self.key.clone();
        self.timers().processing.delete(time, &key, &());
    }
}

/// What a process function may ask about the record it is processing (or
/// the timer firing), and where it sends side output. `K` is the key type
/// on keyed streams.
pub struct ProcessContext<'a, K = ()> {
    timestamp: i64,
    watermark: i64,
    processing_time: i64,
    key: &'a K,
    sides: &'a mut SideOutputs,
    timers: Option<&'a mut KeyedTimers<K>>,
    time_domain: Option<TimeDomain>,
}

impl<'a, K> ProcessContext<'a, K> {
    pub(crate) fn new(
        timestamp: i64,
        watermark: i64,
        key: &'a K,
        sides: &'a mut SideOutputs,
    ) -> Self {
        ProcessContext {
            timestamp,
            watermark,
            processing_time: 0,
            key,
            sides,
            timers: None,
            time_domain: None,
        }
    }

    pub(crate) fn with_timers(
        mut self,
        timers: &'a mut KeyedTimers<K>,
        processing_time: i64,
    ) -> Self {
        self.timers = Some(timers);
        self.processing_time = processing_time;
        self
    }

    pub(crate) fn in_timer(mut self, domain: TimeDomain) -> Self {
        self.time_domain = Some(domain);
        self
    }

    /// Timers and time for the current key. Registering timers outside a
    /// keyed stream fails the job, as in Flink.
    pub fn timer_service(&mut self) -> TimerService<'_, K> {
        TimerService {
            key: self.key,
            timers: self.timers.as_deref_mut(),
            watermark: self.watermark,
            processing_time: self.processing_time,
        }
    }

    /// In `on_timer`: which kind of timer fired.
    pub fn time_domain(&self) -> Option<TimeDomain> {
        self.time_domain
    }

    /// The record's event timestamp, if it has one.
    pub fn timestamp(&self) -> Option<i64> {
        (self.timestamp != NO_TIMESTAMP).then_some(self.timestamp)
    }

    /// The operator's current event-time watermark.
    pub fn current_watermark(&self) -> i64 {
        self.watermark
    }

    /// The key of the record (keyed streams).
    pub fn get_current_key(&self) -> &K {
        self.key
    }

    /// Emits `value` to the side output `tag`, with the record's timestamp.
    pub fn output<X: Send + 'static>(&mut self, tag: &OutputTag<X>, value: X) {
        self.sides.emit(
            tag.id(),
            StreamRecord::with_timestamp(value, self.timestamp),
        );
    }
}

/// Processes each record of a stream (Flink's `ProcessFunction`).
pub trait ProcessFunction<I, O>: Send + 'static {
    /// Called once per subtask before the first record.
    fn open(&mut self, _ctx: &RuntimeContext) -> FunctionResult {
        Ok(())
    }
    /// Processes one record; an error fails the job, naming this operator.
    fn process_element(
        &mut self,
        value: I,
        ctx: &mut ProcessContext<'_>,
        out: &mut Collector<'_, O>,
    ) -> FunctionResult;
    /// A checkpoint barrier passed: move what the function keeps in its
    /// own fields into its operator or keyed state (Flink's
    /// `CheckpointedFunction::snapshotState`). State declared in `open`
    /// is restored before `open` runs; `ctx.is_restored()` tells.
    fn snapshot_state(&mut self, _checkpoint_id: u64) -> FunctionResult {
        Ok(())
    }
    /// Checkpoint `checkpoint_id` completed (Flink's `CheckpointListener`).
    fn notify_checkpoint_complete(&mut self, _checkpoint_id: u64) -> FunctionResult {
        Ok(())
    }
    /// Checkpoint `checkpoint_id` was aborted (Flink's
    /// `CheckpointListener::notifyCheckpointAborted`).
    fn notify_checkpoint_aborted(&mut self, _checkpoint_id: u64) -> FunctionResult {
        Ok(())
    }
    /// Called once per subtask after the last record.
    fn close(&mut self) -> FunctionResult {
        Ok(())
    }
}

impl<I, O, F> ProcessFunction<I, O> for F
where
    F: FnMut(I, &mut ProcessContext<'_>, &mut Collector<'_, O>) -> FunctionResult + Send + 'static,
{
    fn process_element(
        &mut self,
        value: I,
        ctx: &mut ProcessContext<'_>,
        out: &mut Collector<'_, O>,
    ) -> FunctionResult {
        self(value, ctx, out)
    }
}

/// Processes each record of a keyed stream, knowing its key (Flink's
/// `KeyedProcessFunction`; timers arrive with event time).
pub trait KeyedProcessFunction<K, I, O>: Send + 'static {
    /// Called once per subtask before the first record.
    fn open(&mut self, _ctx: &RuntimeContext) -> FunctionResult {
        Ok(())
    }
    /// Processes one record; `ctx.get_current_key()` is its key.
    fn process_element(
        &mut self,
        value: I,
        ctx: &mut ProcessContext<'_, K>,
        out: &mut Collector<'_, O>,
    ) -> FunctionResult;
    /// A timer of `ctx.get_current_key()` fired at `timestamp`
    /// (`ctx.time_domain()` says which kind).
    fn on_timer(
        &mut self,
        _timestamp: i64,
        _ctx: &mut ProcessContext<'_, K>,
        _out: &mut Collector<'_, O>,
    ) -> FunctionResult {
        Ok(())
    }
    /// A checkpoint barrier passed: move what the function keeps in its
    /// own fields into its operator or keyed state (Flink's
    /// `CheckpointedFunction::snapshotState`). State declared in `open`
    /// is restored before `open` runs; `ctx.is_restored()` tells.
    fn snapshot_state(&mut self, _checkpoint_id: u64) -> FunctionResult {
        Ok(())
    }
    /// Checkpoint `checkpoint_id` completed (Flink's `CheckpointListener`).
    fn notify_checkpoint_complete(&mut self, _checkpoint_id: u64) -> FunctionResult {
        Ok(())
    }
    /// Checkpoint `checkpoint_id` was aborted (Flink's
    /// `CheckpointListener::notifyCheckpointAborted`).
    fn notify_checkpoint_aborted(&mut self, _checkpoint_id: u64) -> FunctionResult {
        Ok(())
    }
    /// Called once per subtask after the last record.
    fn close(&mut self) -> FunctionResult {
        Ok(())
    }
}

impl<K, I, O, F> KeyedProcessFunction<K, I, O> for F
where
    F: FnMut(I, &mut ProcessContext<'_, K>, &mut Collector<'_, O>) -> FunctionResult
        + Send
        + 'static,
{
    fn process_element(
        &mut self,
        value: I,
        ctx: &mut ProcessContext<'_, K>,
        out: &mut Collector<'_, O>,
    ) -> FunctionResult {
        self(value, ctx, out)
    }
}

/// Processes the records of two connected streams (Flink's `CoProcessFunction`).
pub trait CoProcessFunction<I1, I2, O>: Send + 'static {
    /// Called once per subtask before the first record.
    fn open(&mut self, _ctx: &RuntimeContext) -> FunctionResult {
        Ok(())
    }
    /// Processes a record of the first stream.
    fn process_element1(
        &mut self,
        value: I1,
        ctx: &mut ProcessContext<'_>,
        out: &mut Collector<'_, O>,
    ) -> FunctionResult;
    /// Processes a record of the second stream.
    fn process_element2(
        &mut self,
        value: I2,
        ctx: &mut ProcessContext<'_>,
        out: &mut Collector<'_, O>,
    ) -> FunctionResult;
    /// Called once per subtask after both inputs ended.
    fn close(&mut self) -> FunctionResult {
        Ok(())
    }
}
