//! Streams and their transformations (Flink's DataStream API).
//!
//! A [`DataStream`] is a handle on the output of an operator (or a union of
//! several); each transformation adds an operator to the environment's graph
//! and returns a handle on its output. Nothing runs until `execute`.

mod broadcast;
mod connected;
mod interval_join;
mod join;
mod keyed;
mod partitioning;

pub use broadcast::{BroadcastConnectedStream, BroadcastStream};
pub use connected::ConnectedStreams;
pub use interval_join::{IntervalJoin, IntervalJoined, ProcessJoinContext};
pub use join::{CoGroup, Join, JoinEqualTo, JoinWhere, JoinWindow, JoinedStreams, TaggedUnion};
pub use keyed::KeyedStream;

use std::hash::Hash;
use std::marker::PhantomData;
use std::path::Path;
use std::sync::{Arc, Mutex};

use weir_runtime::graph::{
    ChainingStrategy, NodeFactory, NodeId, Partitioning, StreamEdge, TypeOf,
};

use crate::environment::StreamExecutionEnvironment;
use crate::error::Result;
use crate::functions::{
    FilterFunction, FlatMapFunction, MapFunction, OutputTag, ProcessFunction, SinkFunction,
};
use crate::operators::{
    FilterOperator, FlatMapOperator, MapOperator, ProcessOperator, SinkOperator,
};
use crate::sink::{CollectSink, PrintFormat, PrintSink, PrintTarget, TextFileSink};
use crate::watermark::{
    ScanContext, ScanWithWatermarksOperator, TimestampsAndWatermarksOperator, WatermarkStrategy,
};
use crate::window::{
    AllWindowedStream, CountEvictor, CountTrigger, GlobalWindow, GlobalWindows, PurgingTrigger,
    WindowAssigner,
};

/// A key: hashable, comparable, serializable both ways (keyed state,
/// timers and window contents are written to checkpoints and read back, so
/// keys are owned types such as `String`, not `&str`), and with a
/// [`StableHash`](weir_state::StableHash) that fixes its key group forever.
pub trait Key:
    Hash
    + Eq
    + Clone
    + Send
    + Sync
    + serde::Serialize
    + serde::de::DeserializeOwned
    + weir_state::StableHash
    + 'static
{
}
impl<K> Key for K where
    K: Hash
        + Eq
        + Clone
        + Send
        + Sync
        + serde::Serialize
        + serde::de::DeserializeOwned
        + weir_state::StableHash
        + 'static
{
}

/// One input of the next operator: an operator's main or side output, and
/// how records reach the next operator from it.
#[derive(Clone)]
pub(crate) struct StreamInput {
    pub node: NodeId,
    pub side_output: Option<String>,
    pub partitioning: Partitioning,
}

/// A stream of records of type `T`.
pub struct DataStream<T> {
    pub(crate) env: StreamExecutionEnvironment,
    pub(crate) inputs: Vec<StreamInput>,
    _type: PhantomData<fn() -> T>,
}

impl<T> Clone for DataStream<T> {
    fn clone(&self) -> Self {
        DataStream {
            env: self.env.clone(),
            inputs: self.inputs.clone(),
            _type: PhantomData,
        }
    }
}

impl<T: Clone + Send + 'static> DataStream<T> {
    pub(crate) fn from_node(env: StreamExecutionEnvironment, node: NodeId) -> Self {
        Self::from_inputs(
            env,
            vec![StreamInput {
                node,
                side_output: None,
                partitioning: Partitioning::Default,
            }],
        )
    }

    pub(crate) fn from_inputs(env: StreamExecutionEnvironment, inputs: Vec<StreamInput>) -> Self {
        DataStream {
            env,
            inputs,
            _type: PhantomData,
        }
    }

    /// The environment this stream belongs to.
    pub fn env(&self) -> &StreamExecutionEnvironment {
        &self.env
    }

    /// Adds a one-input operator reading this stream.
    pub(crate) fn add_operator<O: Clone + Send + 'static>(
        &self,
        name: &str,
        factory: NodeFactory,
    ) -> DataStream<O> {
        let id = self.env.with_graph(|graph| {
            let id = graph.add_node(name, factory, TypeOf::<O>::shared());
            for input in &self.inputs {
                graph.add_edge(StreamEdge {
                    from: input.node,
                    to: id,
                    side_output: input.side_output.clone(),
                    input: 1,
                    partitioning: input.partitioning.clone(),
                });
            }
            id
        });
        DataStream::from_node(self.env.clone(), id)
    }

    /// Applies `f` to every record (Flink's `map`).
    pub fn map<O, F>(&self, f: F) -> DataStream<O>
    where
        O: Clone + Send + 'static,
        F: MapFunction<T, O> + Clone + Sync,
    {
        let factory = NodeFactory::one_input(move |_| MapOperator::new(f.clone()));
        self.add_operator("Map", factory)
    }

    /// Keeps the records for which `f` is true.
    pub fn filter<F>(&self, f: F) -> DataStream<T>
    where
        F: FilterFunction<T> + Clone + Sync,
    {
        let factory = NodeFactory::one_input(move |_| FilterOperator::new(f.clone()));
        self.add_operator("Filter", factory)
    }

    /// Turns every record into any number of records.
    pub fn flat_map<O, F>(&self, f: F) -> DataStream<O>
    where
        O: Clone + Send + 'static,
        F: FlatMapFunction<T, O> + Clone + Sync,
    {
        let factory = NodeFactory::one_input(move |_| FlatMapOperator::new(f.clone()));
        self.add_operator("Flat Map", factory)
    }

    /// Processes every record with access to its timestamp, the watermark and
    /// side outputs.
    pub fn process<O, F>(&self, f: F) -> DataStream<O>
    where
        O: Clone + Send + 'static,
        F: ProcessFunction<T, O> + Clone + Sync,
    {
        let factory = NodeFactory::one_input(move |_| ProcessOperator::new(f.clone()));
        self.add_operator("Process", factory)
    }

    /// Assigns event timestamps and generates watermarks (Flink's
    /// `assignTimestampsAndWatermarks`). Chained to its input, so each
    /// parallel subtask of the source gets its own generator.
    pub fn assign_timestamps_and_watermarks(
        &self,
        strategy: WatermarkStrategy<T>,
    ) -> DataStream<T> {
        let factory =
            NodeFactory::one_input(move |_| TimestampsAndWatermarksOperator::new(strategy.clone()));
        self.add_operator("Timestamps/Watermarks", factory)
    }

    /// Makes at most one record of each record with `make`, assigns it a
    /// timestamp and shows it to `strategy`'s watermark generator, then
    /// keeps it if `keep` says so (`keep` may also change it in place).
    ///
    /// The same records, timestamps and watermarks as
    /// `flat_map(make).assign_timestamps_and_watermarks(strategy).filter(keep)`,
    /// in one operator that takes each record through all three steps
    /// before the next: a record made is still in the CPU's caches when it
    /// is stamped and filtered, where chained operators would hand on a
    /// whole batch between steps. This is an event-time source's scan with
    /// its watermarks and a filter pushed into it (what Flink's SQL planner
    /// does for a table's `WATERMARK` and `WHERE`). The watermarks follow
    /// every record made, including those `keep` drops, so a filter never
    /// holds event time back. An error from `make` or `keep` fails the job.
    pub fn filter_map_with_watermarks<M, P, K>(
        &self,
        mut make: P,
        strategy: WatermarkStrategy<M>,
        mut keep: K,
    ) -> DataStream<M>
    where
        M: Clone + Send + 'static,
        P: FnMut(T) -> crate::error::FunctionResult<Option<M>> + Clone + Send + Sync + 'static,
        K: FnMut(&mut M) -> crate::error::FunctionResult<bool> + Clone + Send + Sync + 'static,
    {
        self.scan_with_watermarks(
            move |record: T, ctx: &mut ScanContext<'_, M>| {
                if let Some(mut value) = make(record)? {
                    ctx.stamp(&value);
                    if keep(&mut value)? {
                        ctx.collect(value);
                    }
                }
                Ok(())
            },
            strategy,
        )
    }

    /// Takes each record through `scan`, with timestamps and watermarks
    /// from `strategy`, in one operator.
    ///
    /// `scan` gets the record and a [`ScanContext`]: `stamp` shows a value
    /// to the timestamp assigner and the watermark generator, and `collect`
    /// emits a record with the timestamp last stamped (stamping the record
    /// itself if `scan` stamped nothing). What `scan` stamps may be a
    /// stand-in: a source that can read a record's time and a filter's
    /// fields without making the whole record stamps a stand-in holding
    /// those, and makes the record only if the filter keeps it, so a
    /// record dropped costs none of its making, while the watermarks still
    /// follow every record. [`filter_map_with_watermarks`] is this with a
    /// record made, stamped and then filtered. An error from `scan` fails
    /// the job.
    ///
    /// [`filter_map_with_watermarks`]: DataStream::filter_map_with_watermarks
    pub fn scan_with_watermarks<M, S>(
        &self,
        scan: S,
        strategy: WatermarkStrategy<M>,
    ) -> DataStream<M>
    where
        M: Clone + Send + 'static,
        S: FnMut(T, &mut ScanContext<'_, M>) -> crate::error::FunctionResult
            + Clone
            + Send
            + Sync
            + 'static,
    {
        let factory = NodeFactory::one_input(move |_| {
            ScanWithWatermarksOperator::new(scan.clone(), strategy.clone())
        });
        self.add_operator("Timestamps/Watermarks", factory)
    }

    /// Partitions the stream by key: records with equal keys go to the same
    /// subtask (by key group), where keyed operators see them.
    pub fn key_by<K, F>(&self, key_of: F) -> KeyedStream<T, K>
    where
        K: Key,
        F: Fn(&T) -> K + Send + Sync + 'static,
    {
        KeyedStream::new(self, Arc::new(key_of))
    }

    /// Cuts the whole stream into windows, processed by one subtask
    /// (Flink's `windowAll`).
    pub fn window_all<A: WindowAssigner<T>>(&self, assigner: A) -> AllWindowedStream<T, A::W>
    where
        T: serde::Serialize + serde::de::DeserializeOwned,
    {
        AllWindowedStream::new(self, assigner)
    }

    /// Tumbling count windows over the whole stream (`countWindowAll(size)`).
    pub fn count_window_all(&self, size: u64) -> AllWindowedStream<T, GlobalWindow>
    where
        T: serde::Serialize + serde::de::DeserializeOwned,
    {
        self.window_all(GlobalWindows::create())
            .trigger(PurgingTrigger::of(CountTrigger::of(size)))
    }

    /// Sliding count windows over the whole stream
    /// (`countWindowAll(size, slide)`).
    pub fn count_window_all_slide(
        &self,
        size: u64,
        slide: u64,
    ) -> AllWindowedStream<T, GlobalWindow>
    where
        T: serde::Serialize + serde::de::DeserializeOwned,
    {
        self.window_all(GlobalWindows::create())
            .evictor(CountEvictor::of(size as usize))
            .trigger(CountTrigger::of(slide))
    }

    /// Merges streams of the same type into one.
    pub fn union(&self, others: &[DataStream<T>]) -> DataStream<T> {
        let mut inputs = self.inputs.clone();
        for other in others {
            inputs.extend(other.inputs.iter().cloned());
        }
        DataStream::from_inputs(self.env.clone(), inputs)
    }

    /// Connects with a stream of another type, for a two-input operator.
    pub fn connect<U: Clone + Send + 'static>(
        &self,
        other: &DataStream<U>,
    ) -> ConnectedStreams<T, U> {
        ConnectedStreams::new(self.clone(), other.clone())
    }

    /// The records this operator emitted to the side output `tag`.
    pub fn get_side_output<X: Clone + Send + 'static>(&self, tag: &OutputTag<X>) -> DataStream<X> {
        let Some(node) = self.single_node("get_side_output") else {
            return DataStream::from_inputs(self.env.clone(), Vec::new());
        };
        self.env.with_graph(|graph| {
            let outputs = &mut graph.node_mut(node).side_outputs;
            if !outputs.iter().any(|(id, _)| id == tag.id()) {
                outputs.push((tag.id().to_string(), TypeOf::<X>::shared()));
            }
        });
        DataStream::from_inputs(
            self.env.clone(),
            vec![StreamInput {
                node,
                side_output: Some(tag.id().to_string()),
                partitioning: Partitioning::Default,
            }],
        )
    }

    /// Writes every record to `sink`.
    pub fn add_sink<S>(&self, sink: S) -> DataStreamSink
    where
        S: SinkFunction<T> + Clone + Sync,
    {
        let name = sink.default_name();
        self.add_named_sink(&name, sink)
    }

    fn add_named_sink<S>(&self, name: &str, sink: S) -> DataStreamSink
    where
        S: SinkFunction<T> + Clone + Sync,
    {
        let factory = NodeFactory::one_input(move |_| SinkOperator::new(sink.clone()));
        let stream = self.add_operator::<()>(name, factory);
        DataStreamSink {
            stream: stream.erase(),
        }
    }

    /// Prints every record to standard output, as Flink's `print()`.
    pub fn print(&self) -> DataStreamSink
    where
        T: PrintFormat,
    {
        self.add_named_sink(
            "Print to Std. Out",
            PrintSink::new(PrintTarget::Stdout, None),
        )
    }

    /// Prints every record to standard output after `prefix`.
    pub fn print_with_prefix(&self, prefix: &str) -> DataStreamSink
    where
        T: PrintFormat,
    {
        let sink = PrintSink::new(PrintTarget::Stdout, Some(prefix.to_string()));
        self.add_named_sink("Print to Std. Out", sink)
    }

    /// Prints every record to standard error.
    pub fn print_to_err(&self) -> DataStreamSink
    where
        T: PrintFormat,
    {
        self.add_named_sink(
            "Print to Std. Err",
            PrintSink::new(PrintTarget::Stderr, None),
        )
    }

    /// Prints every record to standard error after `prefix`.
    pub fn print_to_err_with_prefix(&self, prefix: &str) -> DataStreamSink
    where
        T: PrintFormat,
    {
        let sink = PrintSink::new(PrintTarget::Stderr, Some(prefix.to_string()));
        self.add_named_sink("Print to Std. Err", sink)
    }

    /// Writes every record as a line of text to `path` (a directory of
    /// per-subtask files when the sink's parallelism is above 1).
    pub fn write_as_text(&self, path: impl AsRef<Path>) -> DataStreamSink
    where
        T: PrintFormat,
    {
        self.add_named_sink("Text File Sink", TextFileSink::new(path.as_ref()))
    }

    /// Runs the job and returns every record of this stream (bounded jobs;
    /// for tests). The collecting sink has parallelism 1.
    pub fn execute_and_collect(&self) -> Result<Vec<T>> {
        let out = Arc::new(Mutex::new(Vec::new()));
        self.add_named_sink("Collect Sink", CollectSink::new(Arc::clone(&out)))
            .set_parallelism(1);
        self.env.execute("Collect")?;
        let mut guard = out.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        Ok(std::mem::take(&mut *guard))
    }

    /// Sets the parallelism of the operator producing this stream.
    pub fn set_parallelism(self, parallelism: u32) -> Self {
        if parallelism == 0 {
            self.env
                .record_error("parallelism must be at least 1".into());
        } else {
            self.update_node("set_parallelism", |n| n.parallelism = Some(parallelism));
        }
        self
    }

    /// Names the operator producing this stream (shown in logs, errors and
    /// the job result).
    pub fn name(self, name: &str) -> Self {
        self.update_node("name", |n| n.name = name.to_string());
        self
    }

    /// Gives the operator a stable id, used to match its state on restore.
    pub fn uid(self, uid: &str) -> Self {
        self.update_node("uid", |n| n.uid = Some(uid.to_string()));
        self
    }

    /// Starts a new chain at this operator.
    pub fn start_new_chain(self) -> Self {
        self.update_node("start_new_chain", |n| n.chaining = ChainingStrategy::Head);
        self
    }

    /// Never chains this operator with its neighbours.
    pub fn disable_chaining(self) -> Self {
        self.update_node("disable_chaining", |n| n.chaining = ChainingStrategy::Never);
        self
    }

    fn update_node(&self, what: &str, f: impl FnOnce(&mut weir_runtime::graph::StreamNode)) {
        if let Some(node) = self.single_node(what) {
            self.env.with_graph(|graph| f(graph.node_mut(node)));
        }
    }

    /// The parallelism set on the operators this stream comes from, if
    /// it was set, and set alike on all of them.
    pub(crate) fn parallelism_set(&self) -> Option<u32> {
        let set: Vec<Option<u32>> = self.env.with_graph(|graph| {
            self.inputs
                .iter()
                .map(|i| graph.node(i.node).parallelism)
                .collect()
        });
        match set.split_first() {
            Some((&first, rest)) if rest.iter().all(|&p| p == first) => first,
            _ => None,
        }
    }

    /// The operator whose main output this stream is; records a build error
    /// if it is a union, a side output or a repartitioned stream.
    fn single_node(&self, what: &str) -> Option<NodeId> {
        match &self.inputs[..] {
            [StreamInput {
                node,
                side_output: None,
                partitioning: Partitioning::Default,
            }] => Some(*node),
            _ => {
                self.env.record_error(format!(
                    "{what} applies to an operator's output, not to a union, side output \
                     or repartitioned stream"
                ));
                None
            }
        }
    }

    fn erase(self) -> DataStream<()> {
        DataStream::from_inputs(self.env, self.inputs)
    }
}

/// The end of a stream: a sink, whose settings can still be changed.
pub struct DataStreamSink {
    stream: DataStream<()>,
}

impl DataStreamSink {
    /// Sets the sink's parallelism.
    pub fn set_parallelism(self, parallelism: u32) -> Self {
        DataStreamSink {
            stream: self.stream.set_parallelism(parallelism),
        }
    }

    /// Names the sink.
    pub fn name(self, name: &str) -> Self {
        DataStreamSink {
            stream: self.stream.name(name),
        }
    }

    /// Gives the sink a stable id.
    pub fn uid(self, uid: &str) -> Self {
        DataStreamSink {
            stream: self.stream.uid(uid),
        }
    }

    /// Never chains the sink with its predecessor.
    pub fn disable_chaining(self) -> Self {
        DataStreamSink {
            stream: self.stream.disable_chaining(),
        }
    }
}
