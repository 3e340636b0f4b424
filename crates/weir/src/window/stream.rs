//! `WindowedStream` and `AllWindowedStream`: the API between `window(..)`
//! and the window function.

use serde::de::DeserializeOwned;
use serde::Serialize;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use weir_runtime::graph::NodeFactory;

use super::aligned::AlignedWindowOperator;
use super::assigner::WindowAssigner;
use super::by_backend::ByBackend;
use super::evictor::Evictor;
use super::function::{
    AggregateFunction, Elements, ProcessWindowContext, ProcessWindowFunction, WindowFunction,
};
use super::logic::{
    AggregateLogic, AggregateProcessLogic, ApplyLogic, BufferedLogic, ProcessLogic, ReduceLogic,
    ReduceProcessLogic,
};
use super::operator::{WindowLogic, WindowOperator, WindowSpec};
use super::session::SessionWindowOperator;
use super::trigger::Trigger;
use super::Window;
use crate::datastream::{DataStream, Key, KeyedStream};
use crate::functions::{Collector, FunctionResult, OutputTag, ReduceFunction};

/// The settings of a window with the assigner's default trigger and no
/// evictor.
fn default_spec<T: 'static, K, W: Window>(
    key_of: &crate::operators::KeySelector<T, K>,
    assigner: &Arc<dyn WindowAssigner<T, W = W>>,
    allowed_lateness: i64,
    late_tag: &Option<String>,
) -> WindowSpec<T, K, W> {
    WindowSpec {
        key_of: Arc::clone(key_of),
        assigner: Arc::clone(assigner),
        trigger: assigner.default_trigger(),
        evictor: None,
        allowed_lateness,
        late_tag: late_tag.clone(),
    }
}

/// The in-memory operator `memory` makes on the heap backend, else the
/// general operator with contents in the keyed-state backend.
fn by_backend<T, K, W, O, L, M>(
    ctx: &weir_runtime::operator::RuntimeContext,
    spec: WindowSpec<T, K, W>,
    make: &dyn Fn() -> L,
    memory: impl FnOnce(L) -> M,
) -> ByBackend<M, WindowOperator<T, K, W, O, L>>
where
    T: Clone + Send + Serialize + DeserializeOwned + 'static,
    K: Key,
    W: Window,
    O: Send + 'static,
    L: WindowLogic<K, W, T, O>,
{
    if ctx.state_backend.is_heap() {
        ByBackend::Memory(memory(make()))
    } else {
        ByBackend::Stored(WindowOperator::new(spec, make()))
    }
}

type TriggerFactory<T, W> = Arc<dyn Fn() -> Box<dyn Trigger<T, W>> + Send + Sync>;
type EvictorFactory<T, W> = Arc<dyn Fn() -> Box<dyn Evictor<T, W>> + Send + Sync>;

/// A keyed stream cut into windows (Flink's `WindowedStream`).
pub struct WindowedStream<T, K, W> {
    keyed: KeyedStream<T, K>,
    assigner: Arc<dyn WindowAssigner<T, W = W>>,
    trigger: Option<TriggerFactory<T, W>>,
    evictor: Option<EvictorFactory<T, W>>,
    allowed_lateness_ms: i64,
    late_tag: Option<String>,
    all: bool,
}

impl<T, K: Key, W: Window> WindowedStream<T, K, W>
where
    T: Clone + Send + Serialize + DeserializeOwned + 'static,
{
    pub(crate) fn new<A: WindowAssigner<T, W = W>>(
        keyed: KeyedStream<T, K>,
        assigner: A,
        all: bool,
    ) -> Self {
        WindowedStream {
            keyed,
            assigner: Arc::new(assigner),
            trigger: None,
            evictor: None,
            allowed_lateness_ms: 0,
            late_tag: None,
            all,
        }
    }

    /// Replaces the assigner's default trigger.
    pub fn trigger<Tr: Trigger<T, W> + Clone + Sync>(mut self, trigger: Tr) -> Self {
        self.trigger = Some(Arc::new(move || Box::new(trigger.clone())));
        self
    }

    pub(crate) fn with_trigger_factory(mut self, make: TriggerFactory<T, W>) -> Self {
        self.trigger = Some(make);
        self
    }

    /// Evicts elements before or after the window function runs. Windows
    /// with an evictor keep every element, even for `reduce`/`aggregate`.
    pub fn evictor<E: Evictor<T, W> + Clone + Sync>(mut self, evictor: E) -> Self {
        self.evictor = Some(Arc::new(move || Box::new(evictor.clone())));
        self
    }

    /// Keeps event-time windows for `lateness` after they fire; a late record
    /// within it re-fires its window with the updated contents.
    pub fn allowed_lateness(mut self, lateness: Duration) -> Self {
        self.allowed_lateness_ms = lateness.as_millis() as i64;
        self
    }

    /// Sends records too late for all their windows to the side output `tag`
    /// (read it with `get_side_output`) instead of dropping them.
    pub fn side_output_late_data(mut self, tag: &OutputTag<T>) -> Self {
        self.late_tag = Some(tag.id().to_string());
        self
    }

    fn build<O, L, F>(&self, make: F) -> DataStream<O>
    where
        O: Clone + Send + 'static,
        L: WindowLogic<K, W, T, O>,
        F: Fn() -> L + Send + Sync + 'static,
    {
        // An evictor needs the elements: logic that keeps only an
        // accumulator then keeps elements and aggregates them at each firing,
        // as Flink's `EvictingWindowOperator` does.
        if self.evictor.is_some() && !L::KEEPS_ELEMENTS {
            return self.build_operator(move || BufferedLogic { inner: make() });
        }
        // Tumbling and event-time sliding windows with the default trigger
        // keep state by time slice (see `aligned`), which needs merging by
        // reference unless a slice is a whole window.
        if let (Some(grid), true, true) = (
            self.assigner.aligned(),
            self.trigger.is_none(),
            self.evictor.is_none(),
        ) {
            if grid.0 == grid.1 || L::MERGES_BY_REF {
                return self.build_aligned(grid, make);
            }
        }
        // Event-time sessions with the default trigger merge directly.
        if self.assigner.merges_by_intersection()
            && self.assigner.is_event_time()
            && self.trigger.is_none()
            && self.evictor.is_none()
        {
            return self.build_sessions(make);
        }
        self.build_operator(make)
    }

    fn build_sessions<O, L, F>(&self, make: F) -> DataStream<O>
    where
        O: Clone + Send + 'static,
        L: WindowLogic<K, W, T, O>,
        F: Fn() -> L + Send + Sync + 'static,
    {
        let key_of = self.keyed.key_selector();
        let assigner = Arc::clone(&self.assigner);
        let allowed_lateness = self.allowed_lateness_ms;
        let late_tag = self.late_tag.clone();
        let factory = NodeFactory::one_input(move |ctx| {
            by_backend(
                ctx,
                default_spec(&key_of, &assigner, allowed_lateness, &late_tag),
                &make,
                |logic| {
                    SessionWindowOperator::new(
                        Arc::clone(&key_of),
                        Arc::clone(&assigner),
                        logic,
                        allowed_lateness,
                        late_tag.clone(),
                    )
                },
            )
        });
        self.finish(self.keyed.as_stream().add_operator("Window", factory))
    }

    fn finish<O: Clone + Send + 'static>(&self, stream: DataStream<O>) -> DataStream<O> {
        if self.all {
            stream.set_parallelism(1)
        } else {
            stream
        }
    }

    fn build_aligned<O, L, F>(&self, grid: (i64, i64, i64), make: F) -> DataStream<O>
    where
        O: Clone + Send + 'static,
        L: WindowLogic<K, W, T, O>,
        F: Fn() -> L + Send + Sync + 'static,
    {
        let key_of = self.keyed.key_selector();
        let allowed_lateness = self.allowed_lateness_ms;
        let late_tag = self.late_tag.clone();
        let assigner = Arc::clone(&self.assigner);
        let factory = NodeFactory::one_input(move |ctx| {
            by_backend(
                ctx,
                default_spec(&key_of, &assigner, allowed_lateness, &late_tag),
                &make,
                |logic| {
                    let op = AlignedWindowOperator::new(
                        Arc::clone(&key_of),
                        logic,
                        grid,
                        allowed_lateness,
                        late_tag.clone(),
                    );
                    if assigner.is_event_time() {
                        op
                    } else {
                        op.in_processing_time()
                    }
                },
            )
        });
        self.finish(self.keyed.as_stream().add_operator("Window", factory))
    }

    fn build_operator<O, L, F>(&self, make: F) -> DataStream<O>
    where
        O: Clone + Send + 'static,
        L: WindowLogic<K, W, T, O>,
        F: Fn() -> L + Send + Sync + 'static,
    {
        let key_of = self.keyed.key_selector();
        let assigner = Arc::clone(&self.assigner);
        let trigger = self.trigger.clone();
        let evictor = self.evictor.clone();
        let allowed_lateness = self.allowed_lateness_ms;
        let late_tag = self.late_tag.clone();
        let factory = NodeFactory::one_input(move |_| {
            let spec = WindowSpec {
                key_of: Arc::clone(&key_of),
                assigner: Arc::clone(&assigner),
                trigger: match &trigger {
                    Some(make_trigger) => make_trigger(),
                    None => assigner.default_trigger(),
                },
                evictor: evictor.as_ref().map(|make_evictor| make_evictor()),
                allowed_lateness,
                late_tag: late_tag.clone(),
            };
            WindowOperator::new(spec, make())
        });
        self.finish(self.keyed.as_stream().add_operator("Window", factory))
    }

    /// Reduces each window incrementally and emits the result.
    pub fn reduce<F>(&self, f: F) -> DataStream<T>
    where
        F: ReduceFunction<T> + Clone + Sync,
    {
        self.build(move || ReduceLogic {
            f: f.clone(),
            _t: PhantomData,
        })
    }

    /// Sums a field over each window; other fields come from the window's
    /// first record (Flink's `sum(pos)`).
    pub fn sum<N, F>(&self, field: F) -> DataStream<T>
    where
        N: std::ops::AddAssign + Copy + Send + 'static,
        F: Fn(&mut T) -> &mut N + Clone + Send + Sync + 'static,
    {
        self.reduce(move |mut acc: T, mut value: T| {
            let add = *field(&mut value);
            *field(&mut acc) += add;
            acc
        })
    }

    /// Reduces each window incrementally and hands the result to `process`
    /// with the window's metadata.
    pub fn reduce_with<O, F, P>(&self, f: F, process: P) -> DataStream<O>
    where
        O: Clone + Send + 'static,
        F: ReduceFunction<T> + Clone + Sync,
        P: ProcessWindowFunction<T, O, K, W> + Clone + Sync,
    {
        self.build(move || ReduceProcessLogic {
            f: f.clone(),
            process: process.clone(),
            _t: PhantomData,
        })
    }

    /// Aggregates each window incrementally and emits `get_result`.
    pub fn aggregate<Acc, R, A>(&self, agg: A) -> DataStream<R>
    where
        Acc: Clone + Send + Serialize + DeserializeOwned + 'static,
        R: Clone + Send + 'static,
        A: AggregateFunction<T, Acc, R> + Clone + Sync,
    {
        self.build(move || AggregateLogic {
            agg: agg.clone(),
            _t: PhantomData,
        })
    }

    /// Aggregates each window incrementally and hands the result to
    /// `process` with the window's metadata.
    pub fn aggregate_with<Acc, R, O, A, P>(&self, agg: A, process: P) -> DataStream<O>
    where
        Acc: Clone + Send + Serialize + DeserializeOwned + 'static,
        R: Send + 'static,
        O: Clone + Send + 'static,
        A: AggregateFunction<T, Acc, R> + Clone + Sync,
        P: ProcessWindowFunction<R, O, K, W> + Clone + Sync,
    {
        self.build(move || AggregateProcessLogic {
            agg: agg.clone(),
            process: process.clone(),
            _t: PhantomData,
        })
    }

    /// Processes all elements of each window with context.
    pub fn process<O, P>(&self, process: P) -> DataStream<O>
    where
        O: Clone + Send + 'static,
        P: ProcessWindowFunction<T, O, K, W> + Clone + Sync,
    {
        self.build(move || ProcessLogic {
            process: process.clone(),
            _t: PhantomData,
        })
    }

    /// Applies a window function to all elements of each window.
    pub fn apply<O, F>(&self, f: F) -> DataStream<O>
    where
        O: Clone + Send + 'static,
        F: WindowFunction<T, O, K, W> + Clone + Sync,
    {
        self.build(move || ApplyLogic {
            f: f.clone(),
            _t: PhantomData,
        })
    }
}

/// A whole stream cut into windows, processed at parallelism 1 (Flink's
/// `AllWindowedStream`).
pub struct AllWindowedStream<T, W> {
    inner: WindowedStream<T, (), W>,
}

impl<T, W: Window> AllWindowedStream<T, W>
where
    T: Clone + Send + Serialize + DeserializeOwned + 'static,
{
    pub(crate) fn new<A: WindowAssigner<T, W = W>>(stream: &DataStream<T>, assigner: A) -> Self {
        AllWindowedStream {
            inner: WindowedStream::new(stream.key_by(|_| ()), assigner, true),
        }
    }

    /// See [`WindowedStream::trigger`].
    pub fn trigger<Tr: Trigger<T, W> + Clone + Sync>(self, trigger: Tr) -> Self {
        AllWindowedStream {
            inner: self.inner.trigger(trigger),
        }
    }

    /// See [`WindowedStream::evictor`].
    pub fn evictor<E: Evictor<T, W> + Clone + Sync>(self, evictor: E) -> Self {
        AllWindowedStream {
            inner: self.inner.evictor(evictor),
        }
    }

    /// See [`WindowedStream::allowed_lateness`].
    pub fn allowed_lateness(self, lateness: Duration) -> Self {
        AllWindowedStream {
            inner: self.inner.allowed_lateness(lateness),
        }
    }

    /// See [`WindowedStream::side_output_late_data`].
    pub fn side_output_late_data(self, tag: &OutputTag<T>) -> Self {
        AllWindowedStream {
            inner: self.inner.side_output_late_data(tag),
        }
    }

    /// Reduces each window incrementally.
    pub fn reduce<F: ReduceFunction<T> + Clone + Sync>(&self, f: F) -> DataStream<T> {
        self.inner.reduce(f)
    }

    /// Aggregates each window incrementally.
    pub fn aggregate<Acc, R, A>(&self, agg: A) -> DataStream<R>
    where
        Acc: Clone + Send + Serialize + DeserializeOwned + 'static,
        R: Clone + Send + 'static,
        A: AggregateFunction<T, Acc, R> + Clone + Sync,
    {
        self.inner.aggregate(agg)
    }

    /// Sums a field over each window (Flink's `sum(pos)`).
    pub fn sum<N, F>(&self, field: F) -> DataStream<T>
    where
        N: std::ops::AddAssign + Copy + Send + 'static,
        F: Fn(&mut T) -> &mut N + Clone + Send + Sync + 'static,
    {
        self.inner.sum(field)
    }

    /// Processes all elements of each window with context (Flink's
    /// `ProcessAllWindowFunction`).
    pub fn process<O, F>(&self, f: F) -> DataStream<O>
    where
        O: Clone + Send + 'static,
        F: FnMut(
                &mut ProcessWindowContext<'_, W>,
                Elements<'_, T>,
                &mut Collector<'_, O>,
            ) -> FunctionResult
            + Clone
            + Send
            + Sync
            + 'static,
    {
        let mut f = f;
        self.inner.process(
            move |_k: &(),
                  ctx: &mut ProcessWindowContext<'_, W>,
                  e: Elements<'_, T>,
                  out: &mut Collector<'_, O>| f(ctx, e, out),
        )
    }

    /// Applies a function of the window and its elements (Flink's
    /// `AllWindowFunction`).
    pub fn apply<O, F>(&self, f: F) -> DataStream<O>
    where
        O: Clone + Send + 'static,
        F: FnMut(&W, Elements<'_, T>, &mut Collector<'_, O>) + Clone + Send + Sync + 'static,
    {
        let mut f = f;
        self.inner.apply(
            move |_k: &(), w: &W, e: Elements<'_, T>, out: &mut Collector<'_, O>| f(w, e, out),
        )
    }
}
