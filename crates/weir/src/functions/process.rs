//! Process functions: records in, any output, with access to timestamps,
//! watermarks, the current key and side outputs.

use std::marker::PhantomData;
use std::sync::Arc;

use weir_runtime::element::{StreamRecord, NO_TIMESTAMP};
use weir_runtime::operator::SideOutputs;

use super::{Collector, FunctionResult, RuntimeContext};

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

/// What a process function may ask about the record it is processing, and
/// where it sends side output. `K` is the key type on keyed streams.
pub struct ProcessContext<'a, K = ()> {
    timestamp: i64,
    watermark: i64,
    key: &'a K,
    sides: &'a mut SideOutputs,
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
            key,
            sides,
        }
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
