//! Adapters from each user-facing window function to [`WindowLogic`].

use std::marker::PhantomData;

use serde::de::DeserializeOwned;
use serde::Serialize;
use weir_runtime::element::StreamRecord;

use super::function::{
    AggregateFunction, Elements, ProcessWindowContext, ProcessWindowFunction, WindowFunction,
};
use super::operator::WindowLogic;
use crate::functions::{Collector, FunctionResult, ReduceFunction, RuntimeContext};

/// `reduce(f)`: one value per window, emitted as is.
pub(crate) struct ReduceLogic<F, T> {
    pub f: F,
    pub _t: PhantomData<fn(T)>,
}

fn reduce_into<T, F: ReduceFunction<T>>(f: &mut F, acc: &mut Option<T>, value: T) {
    *acc = Some(match acc.take() {
        Some(a) => f.reduce(a, value),
        None => value,
    });
}

impl<K, W, T, F> WindowLogic<K, W, T, T> for ReduceLogic<F, T>
where
    T: Clone + Send + Serialize + DeserializeOwned + 'static,
    F: ReduceFunction<T>,
{
    type Acc = Option<T>;

    fn create(&mut self) -> Option<T> {
        None
    }

    #[inline]
    fn add(&mut self, acc: &mut Option<T>, record: StreamRecord<T>) {
        reduce_into(&mut self.f, acc, record.value);
    }

    fn merge(&mut self, into: &mut Option<T>, from: Option<T>) {
        if let Some(v) = from {
            reduce_into(&mut self.f, into, v);
        }
    }

    const MERGES_BY_REF: bool = true;

    fn merge_ref(&mut self, into: &mut Option<T>, from: &Option<T>) {
        if let Some(v) = from {
            reduce_into(&mut self.f, into, v.clone());
        }
    }

    fn emit(
        &mut self,
        _k: &K,
        acc: &Option<T>,
        _ctx: &mut ProcessWindowContext<'_, W>,
        out: &mut Collector<'_, T>,
    ) -> FunctionResult {
        if let Some(v) = acc {
            out.collect(v.clone());
        }
        Ok(())
    }
}

/// `reduce(f, process)`: one value per window, handed to a process function.
pub(crate) struct ReduceProcessLogic<F, P, T> {
    pub f: F,
    pub process: P,
    pub _t: PhantomData<fn(T)>,
}

impl<K, W, T, O, F, P> WindowLogic<K, W, T, O> for ReduceProcessLogic<F, P, T>
where
    T: Clone + Send + Serialize + DeserializeOwned + 'static,
    F: ReduceFunction<T>,
    P: ProcessWindowFunction<T, O, K, W>,
{
    type Acc = Option<T>;

    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.process.open(ctx)
    }

    fn create(&mut self) -> Option<T> {
        None
    }

    fn add(&mut self, acc: &mut Option<T>, record: StreamRecord<T>) {
        reduce_into(&mut self.f, acc, record.value);
    }

    fn merge(&mut self, into: &mut Option<T>, from: Option<T>) {
        if let Some(v) = from {
            reduce_into(&mut self.f, into, v);
        }
    }

    const MERGES_BY_REF: bool = true;

    fn merge_ref(&mut self, into: &mut Option<T>, from: &Option<T>) {
        if let Some(v) = from {
            reduce_into(&mut self.f, into, v.clone());
        }
    }

    fn emit(
        &mut self,
        k: &K,
        acc: &Option<T>,
        ctx: &mut ProcessWindowContext<'_, W>,
        out: &mut Collector<'_, O>,
    ) -> FunctionResult {
        match acc {
            Some(v) => self.process.process(k, ctx, Elements::one(v), out),
            None => Ok(()),
        }
    }

    fn clear(&mut self, ctx: &mut ProcessWindowContext<'_, W>) -> FunctionResult {
        self.process.clear(ctx)
    }
}

/// `aggregate(a)`: one accumulator per window, emitted as `get_result`.
pub(crate) struct AggregateLogic<A, T, Acc, R> {
    pub agg: A,
    pub _t: PhantomData<fn(T, Acc) -> R>,
}

impl<K, W, T, Acc, R, A> WindowLogic<K, W, T, R> for AggregateLogic<A, T, Acc, R>
where
    T: Send + 'static,
    Acc: Clone + Send + Serialize + DeserializeOwned + 'static,
    R: Send + 'static,
    A: AggregateFunction<T, Acc, R>,
{
    type Acc = Acc;

    fn create(&mut self) -> Acc {
        self.agg.create_accumulator()
    }

    #[inline]
    fn add(&mut self, acc: &mut Acc, record: StreamRecord<T>) {
        self.agg.add(record.value, acc);
    }

    fn merge(&mut self, into: &mut Acc, from: Acc) {
        let a = std::mem::replace(into, self.agg.create_accumulator());
        *into = self.agg.merge(a, from);
    }

    const MERGES_BY_REF: bool = true;

    fn merge_ref(&mut self, into: &mut Acc, from: &Acc) {
        self.agg.merge_into(into, from);
    }

    fn emit(
        &mut self,
        _k: &K,
        acc: &Acc,
        _ctx: &mut ProcessWindowContext<'_, W>,
        out: &mut Collector<'_, R>,
    ) -> FunctionResult {
        out.collect(self.agg.get_result(acc));
        Ok(())
    }
}

/// `aggregate(a, process)`: the aggregate's result handed to a process function.
pub(crate) struct AggregateProcessLogic<A, P, T, Acc, R> {
    pub agg: A,
    pub process: P,
    pub _t: PhantomData<fn(T, Acc) -> R>,
}

impl<K, W, T, Acc, R, O, A, P> WindowLogic<K, W, T, O> for AggregateProcessLogic<A, P, T, Acc, R>
where
    T: Send + 'static,
    Acc: Clone + Send + Serialize + DeserializeOwned + 'static,
    R: Send + 'static,
    A: AggregateFunction<T, Acc, R>,
    P: ProcessWindowFunction<R, O, K, W>,
{
    type Acc = Acc;

    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.process.open(ctx)
    }

    fn create(&mut self) -> Acc {
        self.agg.create_accumulator()
    }

    fn add(&mut self, acc: &mut Acc, record: StreamRecord<T>) {
        self.agg.add(record.value, acc);
    }

    fn merge(&mut self, into: &mut Acc, from: Acc) {
        let a = std::mem::replace(into, self.agg.create_accumulator());
        *into = self.agg.merge(a, from);
    }

    const MERGES_BY_REF: bool = true;

    fn merge_ref(&mut self, into: &mut Acc, from: &Acc) {
        self.agg.merge_into(into, from);
    }

    fn emit(
        &mut self,
        k: &K,
        acc: &Acc,
        ctx: &mut ProcessWindowContext<'_, W>,
        out: &mut Collector<'_, O>,
    ) -> FunctionResult {
        let result = self.agg.get_result(acc);
        self.process.process(k, ctx, Elements::one(&result), out)
    }

    fn clear(&mut self, ctx: &mut ProcessWindowContext<'_, W>) -> FunctionResult {
        self.process.clear(ctx)
    }
}

/// `process(p)`: every element kept, the process function sees them all.
pub(crate) struct ProcessLogic<P, T> {
    pub process: P,
    pub _t: PhantomData<fn(T)>,
}

impl<K, W, T, O, P> WindowLogic<K, W, T, O> for ProcessLogic<P, T>
where
    T: Clone + Send + Serialize + DeserializeOwned + 'static,
    P: ProcessWindowFunction<T, O, K, W>,
{
    type Acc = Vec<StreamRecord<T>>;
    const KEEPS_ELEMENTS: bool = true;

    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.process.open(ctx)
    }

    fn create(&mut self) -> Self::Acc {
        Vec::new()
    }

    fn add(&mut self, acc: &mut Self::Acc, record: StreamRecord<T>) {
        acc.push(record);
    }

    fn merge(&mut self, into: &mut Self::Acc, mut from: Self::Acc) {
        into.append(&mut from);
    }

    fn buffer(acc: &mut Self::Acc) -> Option<&mut Vec<StreamRecord<T>>> {
        Some(acc)
    }

    fn emit(
        &mut self,
        k: &K,
        acc: &Self::Acc,
        ctx: &mut ProcessWindowContext<'_, W>,
        out: &mut Collector<'_, O>,
    ) -> FunctionResult {
        self.process.process(k, ctx, Elements::records(acc), out)
    }

    fn clear(&mut self, ctx: &mut ProcessWindowContext<'_, W>) -> FunctionResult {
        self.process.clear(ctx)
    }
}

/// `apply(f)`: every element kept, the window function sees them all.
pub(crate) struct ApplyLogic<F, T> {
    pub f: F,
    pub _t: PhantomData<fn(T)>,
}

impl<K, W, T, O, F> WindowLogic<K, W, T, O> for ApplyLogic<F, T>
where
    T: Clone + Send + Serialize + DeserializeOwned + 'static,
    W: 'static,
    F: WindowFunction<T, O, K, W>,
{
    type Acc = Vec<StreamRecord<T>>;
    const KEEPS_ELEMENTS: bool = true;

    fn create(&mut self) -> Self::Acc {
        Vec::new()
    }

    fn add(&mut self, acc: &mut Self::Acc, record: StreamRecord<T>) {
        acc.push(record);
    }

    fn merge(&mut self, into: &mut Self::Acc, mut from: Self::Acc) {
        into.append(&mut from);
    }

    fn buffer(acc: &mut Self::Acc) -> Option<&mut Vec<StreamRecord<T>>> {
        Some(acc)
    }

    fn emit(
        &mut self,
        k: &K,
        acc: &Self::Acc,
        ctx: &mut ProcessWindowContext<'_, W>,
        out: &mut Collector<'_, O>,
    ) -> FunctionResult {
        self.f.apply(k, ctx.window(), Elements::records(acc), out);
        Ok(())
    }
}

/// Any logic, keeping the elements (for evictors) and aggregating them with
/// the inner logic at each firing.
pub(crate) struct BufferedLogic<L> {
    pub inner: L,
}

impl<K, W, T, O, L> WindowLogic<K, W, T, O> for BufferedLogic<L>
where
    T: Clone + Send + Serialize + DeserializeOwned + 'static,
    L: WindowLogic<K, W, T, O>,
{
    type Acc = Vec<StreamRecord<T>>;
    const KEEPS_ELEMENTS: bool = true;

    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.inner.open(ctx)
    }

    fn create(&mut self) -> Self::Acc {
        Vec::new()
    }

    fn add(&mut self, acc: &mut Self::Acc, record: StreamRecord<T>) {
        acc.push(record);
    }

    fn merge(&mut self, into: &mut Self::Acc, mut from: Self::Acc) {
        into.append(&mut from);
    }

    fn buffer(acc: &mut Self::Acc) -> Option<&mut Vec<StreamRecord<T>>> {
        Some(acc)
    }

    fn emit(
        &mut self,
        k: &K,
        acc: &Self::Acc,
        ctx: &mut ProcessWindowContext<'_, W>,
        out: &mut Collector<'_, O>,
    ) -> FunctionResult {
        if acc.is_empty() {
            return Ok(());
        }
        let mut inner = self.inner.create();
        for record in acc {
            self.inner.add(&mut inner, record.clone());
        }
        self.inner.emit(k, &inner, ctx, out)
    }

    fn clear(&mut self, ctx: &mut ProcessWindowContext<'_, W>) -> FunctionResult {
        self.inner.clear(ctx)
    }
}
