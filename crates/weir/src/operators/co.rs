//! Operators over two connected streams.

use std::marker::PhantomData;

use weir_runtime::element::StreamRecord;
use weir_runtime::operator::{Output, RuntimeContext, TwoInputOperator};
use weir_runtime::FunctionResult;

use crate::functions::{
    CoProcessFunction, Collector, FlatMapFunction, MapFunction, ProcessContext,
};

pub(crate) struct CoMapOperator<F1, F2, I1, I2, O> {
    f1: F1,
    f2: F2,
    _types: PhantomData<fn(I1, I2) -> O>,
}

impl<F1, F2, I1, I2, O> CoMapOperator<F1, F2, I1, I2, O> {
    pub fn new(f1: F1, f2: F2) -> Self {
        CoMapOperator {
            f1,
            f2,
            _types: PhantomData,
        }
    }
}

impl<F1, F2, I1, I2, O> TwoInputOperator for CoMapOperator<F1, F2, I1, I2, O>
where
    F1: MapFunction<I1, O>,
    F2: MapFunction<I2, O>,
    I1: Send + 'static,
    I2: Send + 'static,
    O: Send + 'static,
{
    type In1 = I1;
    type In2 = I2;
    type Out = O;

    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.f1.open(ctx)?;
        self.f2.open(ctx)
    }

    fn process_batch1(
        &mut self,
        input: &mut Vec<StreamRecord<I1>>,
        out: &mut Output<O>,
    ) -> FunctionResult {
        let f = &mut self.f1;
        out.records().extend(
            input
                .drain(..)
                .map(|r| StreamRecord::with_timestamp(f.map(r.value), r.timestamp)),
        );
        Ok(())
    }

    fn process_batch2(
        &mut self,
        input: &mut Vec<StreamRecord<I2>>,
        out: &mut Output<O>,
    ) -> FunctionResult {
        let f = &mut self.f2;
        out.records().extend(
            input
                .drain(..)
                .map(|r| StreamRecord::with_timestamp(f.map(r.value), r.timestamp)),
        );
        Ok(())
    }

    fn close(&mut self) -> FunctionResult {
        self.f1.close()?;
        self.f2.close()
    }
}

pub(crate) struct CoFlatMapOperator<F1, F2, I1, I2, O> {
    f1: F1,
    f2: F2,
    _types: PhantomData<fn(I1, I2) -> O>,
}

impl<F1, F2, I1, I2, O> CoFlatMapOperator<F1, F2, I1, I2, O> {
    pub fn new(f1: F1, f2: F2) -> Self {
        CoFlatMapOperator {
            f1,
            f2,
            _types: PhantomData,
        }
    }
}

impl<F1, F2, I1, I2, O> TwoInputOperator for CoFlatMapOperator<F1, F2, I1, I2, O>
where
    F1: FlatMapFunction<I1, O>,
    F2: FlatMapFunction<I2, O>,
    I1: Send + 'static,
    I2: Send + 'static,
    O: Send + 'static,
{
    type In1 = I1;
    type In2 = I2;
    type Out = O;

    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.f1.open(ctx)?;
        self.f2.open(ctx)
    }

    fn process_batch1(
        &mut self,
        input: &mut Vec<StreamRecord<I1>>,
        out: &mut Output<O>,
    ) -> FunctionResult {
        let records = out.records();
        for r in input.drain(..) {
            self.f1
                .flat_map(r.value, &mut Collector::new(records, r.timestamp));
        }
        Ok(())
    }

    fn process_batch2(
        &mut self,
        input: &mut Vec<StreamRecord<I2>>,
        out: &mut Output<O>,
    ) -> FunctionResult {
        let records = out.records();
        for r in input.drain(..) {
            self.f2
                .flat_map(r.value, &mut Collector::new(records, r.timestamp));
        }
        Ok(())
    }

    fn close(&mut self) -> FunctionResult {
        self.f1.close()?;
        self.f2.close()
    }
}

pub(crate) struct CoProcessOperator<F, I1, I2, O> {
    f: F,
    watermark: i64,
    _types: PhantomData<fn(I1, I2) -> O>,
}

impl<F, I1, I2, O> CoProcessOperator<F, I1, I2, O> {
    pub fn new(f: F) -> Self {
        CoProcessOperator {
            f,
            watermark: i64::MIN,
            _types: PhantomData,
        }
    }
}

impl<F, I1, I2, O> TwoInputOperator for CoProcessOperator<F, I1, I2, O>
where
    F: CoProcessFunction<I1, I2, O>,
    I1: Send + 'static,
    I2: Send + 'static,
    O: Send + 'static,
{
    type In1 = I1;
    type In2 = I2;
    type Out = O;

    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.f.open(ctx)
    }

    fn process_batch1(
        &mut self,
        input: &mut Vec<StreamRecord<I1>>,
        out: &mut Output<O>,
    ) -> FunctionResult {
        let (records, sides) = out.split();
        for r in input.drain(..) {
            let mut ctx = ProcessContext::new(r.timestamp, self.watermark, &(), sides);
            self.f.process_element1(
                r.value,
                &mut ctx,
                &mut Collector::new(records, r.timestamp),
            )?;
        }
        Ok(())
    }

    fn process_batch2(
        &mut self,
        input: &mut Vec<StreamRecord<I2>>,
        out: &mut Output<O>,
    ) -> FunctionResult {
        let (records, sides) = out.split();
        for r in input.drain(..) {
            let mut ctx = ProcessContext::new(r.timestamp, self.watermark, &(), sides);
            self.f.process_element2(
                r.value,
                &mut ctx,
                &mut Collector::new(records, r.timestamp),
            )?;
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
