//! Map, filter and flat-map.

use std::marker::PhantomData;

use weir_runtime::element::StreamRecord;
use weir_runtime::operator::{Operator, Output, RuntimeContext};
use weir_runtime::FunctionResult;

use crate::functions::{Collector, FilterFunction, FlatMapFunction, MapFunction};

pub(crate) struct MapOperator<F, I, O> {
    f: F,
    _types: PhantomData<fn(I) -> O>,
}

impl<F, I, O> MapOperator<F, I, O> {
    pub fn new(f: F) -> Self {
        MapOperator {
            f,
            _types: PhantomData,
        }
    }
}

impl<F, I, O> Operator for MapOperator<F, I, O>
where
    F: MapFunction<I, O>,
    I: Send + 'static,
    O: Send + 'static,
{
    type In = I;
    type Out = O;

    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.f.open(ctx)
    }

    #[inline]
    fn process_batch(
        &mut self,
        input: &mut Vec<StreamRecord<I>>,
        out: &mut Output<O>,
    ) -> FunctionResult {
        let f = &mut self.f;
        out.records().extend(input.drain(..).map(|r| StreamRecord {
            timestamp: r.timestamp,
            value: f.map(r.value),
        }));
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

pub(crate) struct FilterOperator<F, T> {
    f: F,
    _types: PhantomData<fn(T)>,
}

impl<F, T> FilterOperator<F, T> {
    pub fn new(f: F) -> Self {
        FilterOperator {
            f,
            _types: PhantomData,
        }
    }
}

impl<F, T> Operator for FilterOperator<F, T>
where
    F: FilterFunction<T>,
    T: Send + 'static,
{
    type In = T;
    type Out = T;

    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.f.open(ctx)
    }

    #[inline]
    fn process_batch(
        &mut self,
        input: &mut Vec<StreamRecord<T>>,
        out: &mut Output<T>,
    ) -> FunctionResult {
        let f = &mut self.f;
        input.retain(|r| f.filter(&r.value));
        // Filtering in place and handing the same vector on avoids a copy.
        let records = out.records();
        if records.is_empty() {
            std::mem::swap(records, input);
        } else {
            records.append(input);
        }
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

pub(crate) struct FlatMapOperator<F, I, O> {
    f: F,
    _types: PhantomData<fn(I) -> O>,
}

impl<F, I, O> FlatMapOperator<F, I, O> {
    pub fn new(f: F) -> Self {
        FlatMapOperator {
            f,
            _types: PhantomData,
        }
    }
}

impl<F, I, O> Operator for FlatMapOperator<F, I, O>
where
    F: FlatMapFunction<I, O>,
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
        let records = out.records();
        for r in input.drain(..) {
            self.f
                .flat_map(r.value, &mut Collector::new(records, r.timestamp));
        }
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
