//! Process functions on plain and keyed streams.

use std::marker::PhantomData;

use weir_runtime::element::StreamRecord;
use weir_runtime::operator::{Operator, Output, RuntimeContext};
use weir_runtime::FunctionResult;

use super::KeySelector;
use crate::functions::{Collector, KeyedProcessFunction, ProcessContext, ProcessFunction};

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

    fn close(&mut self) -> FunctionResult {
        self.f.close()
    }
}

pub(crate) struct KeyedProcessOperator<F, K, I, O> {
    f: F,
    key_of: KeySelector<I, K>,
    watermark: i64,
    _types: PhantomData<fn(I) -> O>,
}

impl<F, K, I, O> KeyedProcessOperator<F, K, I, O> {
    pub fn new(f: F, key_of: KeySelector<I, K>) -> Self {
        KeyedProcessOperator {
            f,
            key_of,
            watermark: i64::MIN,
            _types: PhantomData,
        }
    }
}

impl<F, K, I, O> Operator for KeyedProcessOperator<F, K, I, O>
where
    F: KeyedProcessFunction<K, I, O>,
    K: Send + 'static,
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
            let key = (self.key_of)(&r.value);
            let mut ctx = ProcessContext::new(r.timestamp, self.watermark, &key, sides);
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

    fn close(&mut self) -> FunctionResult {
        self.f.close()
    }
}
