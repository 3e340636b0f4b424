//! Keyed streams: records partitioned by key, and the operators that keep
//! per-key state.

use std::ops::AddAssign;

use serde::de::DeserializeOwned;
use serde::Serialize;
use std::sync::Arc;

use weir_runtime::graph::{NodeFactory, Partitioning};

use super::partitioning::{GatheredWriter, KeyGroupWriter};
use super::{DataStream, Key};
use crate::functions::{
    Collector, FilterFunction, FlatMapFunction, FunctionResult, KeyedBundleFunction,
    KeyedProcessFunction, MapFunction, ProcessContext, ReduceFunction, RuntimeContext,
};
use crate::operators::{
    BundleGatherOperator, Gathered, KeySelector, KeyedBundleOperator, KeyedProcessOperator,
    KeyedReduceOperator, Lists,
};
use crate::window::{
    CountEvictor, CountTrigger, GlobalWindow, GlobalWindows, PurgingTrigger, WindowAssigner,
    WindowedStream,
};

/// A stream partitioned by key (Flink's `KeyedStream`).
pub struct KeyedStream<T, K> {
    stream: DataStream<T>,
    /// The stream as it was before partitioning by key: what a bundle
    /// operator's gathering reads, ahead of its own keyed exchange.
    unkeyed: DataStream<T>,
    key_of: KeySelector<T, K>,
}

impl<T, K> Clone for KeyedStream<T, K> {
    fn clone(&self) -> Self {
        KeyedStream {
            stream: self.stream.clone(),
            unkeyed: self.unkeyed.clone(),
            key_of: Arc::clone(&self.key_of),
        }
    }
}

impl<T: Clone + Send + 'static, K: Key> KeyedStream<T, K> {
    pub(crate) fn new(stream: &DataStream<T>, key_of: KeySelector<T, K>) -> Self {
        let writer = KeyGroupWriter {
            key_of: Arc::clone(&key_of),
        };
        KeyedStream {
            stream: stream.partitioned(Partitioning::Custom(Arc::new(writer))),
            unkeyed: stream.partitioned(Partitioning::Default),
            key_of,
        }
    }

    /// The key selector.
    pub fn key_selector(&self) -> KeySelector<T, K> {
        Arc::clone(&self.key_of)
    }

    /// The partitioned records as a plain stream (what the next operator reads).
    pub fn as_stream(&self) -> &DataStream<T> {
        &self.stream
    }

    /// Folds each record into its key's value and emits the new value
    /// (a rolling reduce, Flink's `reduce` on a `KeyedStream`).
    pub fn reduce<F>(&self, f: F) -> DataStream<T>
    where
        T: Serialize + DeserializeOwned,
        F: ReduceFunction<T> + Clone + Sync,
    {
        self.reduce_named("Keyed Reduce", f)
    }

    fn reduce_named<F>(&self, name: &str, f: F) -> DataStream<T>
    where
        T: Serialize + DeserializeOwned,
        F: ReduceFunction<T> + Clone + Sync,
    {
        let key_of = Arc::clone(&self.key_of);
        let factory = NodeFactory::one_input(move |_| {
            KeyedReduceOperator::new(f.clone(), Arc::clone(&key_of))
        });
        self.stream.add_operator(name, factory)
    }

    /// Rolling sum of the field `field` points to; the other fields keep the
    /// values of the key's first record (Flink's `sum(pos)`).
    pub fn sum<N, F>(&self, field: F) -> DataStream<T>
    where
        T: Serialize + DeserializeOwned,
        N: AddAssign + Copy + Send + 'static,
        F: Fn(&mut T) -> &mut N + Clone + Send + Sync + 'static,
    {
        self.reduce_named("Keyed Aggregation", move |mut acc: T, mut value: T| {
            let add = *field(&mut value);
            *field(&mut acc) += add;
            acc
        })
    }

    /// Rolling minimum of a field; other fields from the key's first record
    /// (Flink's `min`; use [`min_by`](Self::min_by) for the whole record).
    pub fn min<N, F>(&self, field: F) -> DataStream<T>
    where
        T: Serialize + DeserializeOwned,
        N: PartialOrd + Copy + Send + 'static,
        F: Fn(&mut T) -> &mut N + Clone + Send + Sync + 'static,
    {
        self.reduce_named("Keyed Aggregation", move |mut acc: T, mut value: T| {
            let candidate = *field(&mut value);
            let current = field(&mut acc);
            if candidate < *current {
                *current = candidate;
            }
            acc
        })
    }

    /// Rolling maximum of a field; other fields from the key's first record.
    pub fn max<N, F>(&self, field: F) -> DataStream<T>
    where
        T: Serialize + DeserializeOwned,
        N: PartialOrd + Copy + Send + 'static,
        F: Fn(&mut T) -> &mut N + Clone + Send + Sync + 'static,
    {
        self.reduce_named("Keyed Aggregation", move |mut acc: T, mut value: T| {
            let candidate = *field(&mut value);
            let current = field(&mut acc);
            if candidate > *current {
                *current = candidate;
            }
            acc
        })
    }

    /// The record with the smallest field so far; the earlier record on ties
    /// (Flink's `minBy`).
    pub fn min_by<N, F>(&self, field: F) -> DataStream<T>
    where
        T: Serialize + DeserializeOwned,
        N: PartialOrd,
        F: Fn(&T) -> N + Clone + Send + Sync + 'static,
    {
        self.reduce_named("Keyed Aggregation", move |acc: T, value: T| {
            if field(&value) < field(&acc) {
                value
            } else {
                acc
            }
        })
    }

    /// The record with the largest field so far; the earlier record on ties
    /// (Flink's `maxBy`).
    pub fn max_by<N, F>(&self, field: F) -> DataStream<T>
    where
        T: Serialize + DeserializeOwned,
        N: PartialOrd,
        F: Fn(&T) -> N + Clone + Send + Sync + 'static,
    {
        self.reduce_named("Keyed Aggregation", move |acc: T, value: T| {
            if field(&value) > field(&acc) {
                value
            } else {
                acc
            }
        })
    }

    /// Processes every record knowing its key, with keyed state and timers.
    pub fn process<O, F>(&self, f: F) -> DataStream<O>
    where
        O: Clone + Send + 'static,
        F: KeyedProcessFunction<K, T, O> + Clone + Sync,
    {
        self.keyed_process("KeyedProcess", f)
    }

    /// Processes the records a bundle at a time: the records of each
    /// input batch grouped by key, at most `max_records` records a bundle,
    /// each key's handed over at once (see [`KeyedBundleFunction`]).
    ///
    /// Two operators: `Gather`, chained to the operator before (with its
    /// parallelism, where that was set), and `KeyedBundle` after the keyed
    /// exchange, which this returns. Each batch goes through the exchange
    /// whole (split only between subtasks), gathered by key in `Gather`
    /// while `KeyedBundle` is the slower of the two (its channel was
    /// found full), in `KeyedBundle` otherwise.
    pub fn process_bundles<O, F>(&self, max_records: usize, f: F) -> DataStream<O>
    where
        O: Clone + Send + 'static,
        F: KeyedBundleFunction<K, T, O> + Clone + Sync,
    {
        let lists = Lists::default();
        let (key_of, gather_lists) = (Arc::clone(&self.key_of), lists.clone());
        let gather = NodeFactory::one_input(move |_| {
            BundleGatherOperator::new(Arc::clone(&key_of), max_records, gather_lists.clone())
        });
        let key_of = Arc::clone(&self.key_of);
        let parallelism = self.unkeyed.parallelism_set();
        let mut gathered = self
            .unkeyed
            .add_operator::<Gathered<K, T>>("Gather", gather);
        if let Some(p) = parallelism {
            gathered = gathered.set_parallelism(p);
        }
        let writer = GatheredWriter {
            key_of: Arc::clone(&key_of),
        };
        let factory = NodeFactory::one_input(move |_| {
            KeyedBundleOperator::new(f.clone(), Arc::clone(&key_of), max_records, lists.clone())
        });
        gathered
            .partitioned(Partitioning::Custom(Arc::new(writer)))
            .add_operator("KeyedBundle", factory)
    }

    /// Cuts each key's records into windows.
    pub fn window<A: WindowAssigner<T>>(&self, assigner: A) -> WindowedStream<T, K, A::W>
    where
        T: serde::Serialize + serde::de::DeserializeOwned,
    {
        WindowedStream::new(self.clone(), assigner, false)
    }

    /// Tumbling count windows: fire and purge every `size` records of a key
    /// (Flink's `countWindow(size)`).
    pub fn count_window(&self, size: u64) -> WindowedStream<T, K, GlobalWindow>
    where
        T: serde::Serialize + serde::de::DeserializeOwned,
    {
        self.window(GlobalWindows::create())
            .trigger(PurgingTrigger::of(CountTrigger::of(size)))
    }

    /// Sliding count windows: every `slide` records, the last `size` records
    /// (Flink's `countWindow(size, slide)`).
    pub fn count_window_slide(&self, size: u64, slide: u64) -> WindowedStream<T, K, GlobalWindow>
    where
        T: serde::Serialize + serde::de::DeserializeOwned,
    {
        self.window(GlobalWindows::create())
            .evictor(CountEvictor::of(size as usize))
            .trigger(CountTrigger::of(slide))
    }

    fn keyed_process<O, F>(&self, name: &str, f: F) -> DataStream<O>
    where
        O: Clone + Send + 'static,
        F: KeyedProcessFunction<K, T, O> + Clone + Sync,
    {
        let key_of = Arc::clone(&self.key_of);
        let factory = NodeFactory::one_input(move |_| {
            KeyedProcessOperator::new(f.clone(), Arc::clone(&key_of))
        });
        self.stream.add_operator(name, factory)
    }

    /// `map` with keyed state: the function's state handles follow the key
    /// of each record (Flink's `RichMapFunction` on a `KeyedStream`).
    pub fn map<O, F>(&self, f: F) -> DataStream<O>
    where
        O: Clone + Send + 'static,
        F: MapFunction<T, O> + Clone + Sync,
    {
        self.keyed_process("Map", KeyedMap(f))
    }

    /// `flat_map` with keyed state.
    pub fn flat_map<O, F>(&self, f: F) -> DataStream<O>
    where
        O: Clone + Send + 'static,
        F: FlatMapFunction<T, O> + Clone + Sync,
    {
        self.keyed_process("Flat Map", KeyedFlatMap(f))
    }

    /// `filter` with keyed state.
    pub fn filter<F>(&self, f: F) -> DataStream<T>
    where
        F: FilterFunction<T> + Clone + Sync,
    {
        self.keyed_process("Filter", KeyedFilter(f))
    }
}

/// The hooks an adapter below passes on to the user's function it wraps
/// (`self.0`): open, snapshots and checkpoint notices, close.
macro_rules! lifecycle_of_the_wrapped_function {
    () => {
        fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
            self.0.open(ctx)
        }
        fn snapshot_state(&mut self, checkpoint_id: u64) -> FunctionResult {
            self.0.snapshot_state(checkpoint_id)
        }
        fn notify_checkpoint_complete(&mut self, checkpoint_id: u64) -> FunctionResult {
            self.0.notify_checkpoint_complete(checkpoint_id)
        }
        fn notify_checkpoint_aborted(&mut self, checkpoint_id: u64) -> FunctionResult {
            self.0.notify_checkpoint_aborted(checkpoint_id)
        }
        fn close(&mut self) -> FunctionResult {
            self.0.close()
        }
    };
}

/// A map function run as a keyed process function, so keyed state follows
/// each record's key.
#[derive(Clone)]
struct KeyedMap<F>(F);

impl<K, T, O, F: MapFunction<T, O>> KeyedProcessFunction<K, T, O> for KeyedMap<F> {
    lifecycle_of_the_wrapped_function!();
    fn process_element(
        &mut self,
        value: T,
        _ctx: &mut ProcessContext<'_, K>,
        out: &mut Collector<'_, O>,
    ) -> FunctionResult {
        out.collect(self.0.map(value));
        Ok(())
    }
}

#[derive(Clone)]
struct KeyedFlatMap<F>(F);

impl<K, T, O, F: FlatMapFunction<T, O>> KeyedProcessFunction<K, T, O> for KeyedFlatMap<F> {
    lifecycle_of_the_wrapped_function!();
    fn process_element(
        &mut self,
        value: T,
        _ctx: &mut ProcessContext<'_, K>,
        out: &mut Collector<'_, O>,
    ) -> FunctionResult {
        self.0.flat_map(value, out);
        Ok(())
    }
}

#[derive(Clone)]
struct KeyedFilter<F>(F);

impl<K, T, F: FilterFunction<T>> KeyedProcessFunction<K, T, T> for KeyedFilter<F> {
    lifecycle_of_the_wrapped_function!();
    fn process_element(
        &mut self,
        value: T,
        _ctx: &mut ProcessContext<'_, K>,
        out: &mut Collector<'_, T>,
    ) -> FunctionResult {
        if self.0.filter(&value) {
            out.collect(value);
        }
        Ok(())
    }
}
