//! The operator at the end of a stream.

use std::marker::PhantomData;

use weir_runtime::element::StreamRecord;
use weir_runtime::operator::{Operator, Output, RuntimeContext};
use weir_runtime::FunctionResult;

use crate::functions::SinkFunction;

pub(crate) struct SinkOperator<S, T> {
    sink: S,
    watermark: i64,
    _type: PhantomData<fn(T)>,
}

impl<S, T> SinkOperator<S, T> {
    pub fn new(sink: S) -> Self {
        SinkOperator {
            sink,
            watermark: i64::MIN,
            _type: PhantomData,
        }
    }
}

impl<S, T> Operator for SinkOperator<S, T>
where
    S: SinkFunction<T>,
    T: Send + 'static,
{
    type In = T;
    type Out = ();

    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.sink.open(ctx)
    }

    #[inline]
    fn process_batch(
        &mut self,
        input: &mut Vec<StreamRecord<T>>,
        _out: &mut Output<()>,
    ) -> FunctionResult {
        self.sink.invoke_batch(input, self.watermark)
    }

    fn process_watermark(&mut self, watermark: i64, _out: &mut Output<()>) -> FunctionResult {
        self.watermark = watermark;
        self.sink.write_watermark(watermark)
    }

    fn end_input(&mut self, _out: &mut Output<()>) -> FunctionResult {
        self.sink.finish()
    }

    fn snapshot_state(&mut self, checkpoint_id: u64) -> FunctionResult {
        self.sink.snapshot_state(checkpoint_id)
    }

    fn notify_checkpoint_complete(&mut self, checkpoint_id: u64) -> FunctionResult {
        self.sink.notify_checkpoint_complete(checkpoint_id)
    }

    fn notify_checkpoint_aborted(&mut self, checkpoint_id: u64) -> FunctionResult {
        self.sink.notify_checkpoint_aborted(checkpoint_id)
    }

    fn close(&mut self) -> FunctionResult {
        self.sink.close()
    }
}
