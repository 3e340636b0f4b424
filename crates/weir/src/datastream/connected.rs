//! Two streams of different types feeding one operator (Flink's
//! `ConnectedStreams`).

use std::sync::Arc;

use weir_runtime::graph::{NodeFactory, StreamEdge, TypeOf};

use super::{DataStream, Key};
use crate::functions::{CoProcessFunction, FlatMapFunction, MapFunction};
use crate::operators::{CoFlatMapOperator, CoMapOperator, CoProcessOperator};

/// Two connected streams.
pub struct ConnectedStreams<A, B> {
    first: DataStream<A>,
    second: DataStream<B>,
}

impl<A: Clone + Send + 'static, B: Clone + Send + 'static> ConnectedStreams<A, B> {
    pub(crate) fn new(first: DataStream<A>, second: DataStream<B>) -> Self {
        ConnectedStreams { first, second }
    }

    /// Partitions both streams by key, so records with equal keys from either
    /// side meet in the same subtask.
    pub fn key_by<K, F1, F2>(&self, key1: F1, key2: F2) -> ConnectedStreams<A, B>
    where
        K: Key,
        F1: Fn(&A) -> K + Send + Sync + 'static,
        F2: Fn(&B) -> K + Send + Sync + 'static,
    {
        ConnectedStreams {
            first: self.first.key_by(key1).as_stream().clone(),
            second: self.second.key_by(key2).as_stream().clone(),
        }
    }

    pub(crate) fn add<O: Clone + Send + 'static>(
        &self,
        name: &str,
        factory: NodeFactory,
    ) -> DataStream<O> {
        let env = self.first.env.clone();
        let id = env.with_graph(|graph| {
            let id = graph.add_node(name, factory, TypeOf::<O>::shared());
            let sides = [(1u8, &self.first.inputs), (2u8, &self.second.inputs)];
            for (input, inputs) in sides {
                for i in inputs {
                    graph.add_edge(StreamEdge {
                        from: i.node,
                        to: id,
                        side_output: i.side_output.clone(),
                        input,
                        partitioning: i.partitioning.clone(),
                    });
                }
            }
            id
        });
        DataStream::from_node(env, id)
    }

    /// Maps records of the first stream with `f1` and of the second with `f2`
    /// into one output stream (Flink's `CoMapFunction`).
    pub fn map<O, F1, F2>(&self, f1: F1, f2: F2) -> DataStream<O>
    where
        O: Clone + Send + 'static,
        F1: MapFunction<A, O> + Clone + Sync,
        F2: MapFunction<B, O> + Clone + Sync,
    {
        let fns = Arc::new((f1, f2));
        let factory =
            NodeFactory::two_input(move |_| CoMapOperator::new(fns.0.clone(), fns.1.clone()));
        self.add("Co-Map", factory)
    }

    /// Flat-maps records of each stream with its own function.
    pub fn flat_map<O, F1, F2>(&self, f1: F1, f2: F2) -> DataStream<O>
    where
        O: Clone + Send + 'static,
        F1: FlatMapFunction<A, O> + Clone + Sync,
        F2: FlatMapFunction<B, O> + Clone + Sync,
    {
        let fns = Arc::new((f1, f2));
        let factory =
            NodeFactory::two_input(move |_| CoFlatMapOperator::new(fns.0.clone(), fns.1.clone()));
        self.add("Co-Flat Map", factory)
    }

    /// Processes both streams with one function that sees both.
    pub fn process<O, F>(&self, f: F) -> DataStream<O>
    where
        O: Clone + Send + 'static,
        F: CoProcessFunction<A, B, O> + Clone + Sync,
    {
        let factory = NodeFactory::two_input(move |_| CoProcessOperator::new(f.clone()));
        self.add("Co-Process", factory)
    }
}
