//! Broadcast streams and their connection to a (keyed) main stream.

use std::marker::PhantomData;
use std::sync::Arc;

use weir_runtime::graph::NodeFactory;
use weir_state::MapStateDescriptor;

use super::{ConnectedStreams, DataStream, Key, KeyedStream};
use crate::functions::{BroadcastProcessFunction, KeyedBroadcastProcessFunction};
use crate::operators::{BroadcastOperator, KeyedBroadcastOperator};

/// A stream broadcast to every instance of the operator it connects to,
/// carrying the broadcast states it names (Flink's `BroadcastStream`).
pub struct BroadcastStream<B> {
    stream: DataStream<B>,
    states: Arc<Vec<String>>,
}

impl<B> Clone for BroadcastStream<B> {
    fn clone(&self) -> Self {
        BroadcastStream {
            stream: self.stream.clone(),
            states: Arc::clone(&self.states),
        }
    }
}

impl<B: Clone + Send + 'static> DataStream<B> {
    /// Broadcasts this stream with the broadcast state `desc` (Flink's
    /// `broadcast(descriptor)`; `broadcast()` without state is the
    /// partitioning). Use [`BroadcastStream::with_state`] to carry more.
    pub fn broadcast_state<K, V>(&self, desc: &MapStateDescriptor<K, V>) -> BroadcastStream<B> {
        BroadcastStream {
            stream: self.broadcast(),
            states: Arc::new(vec![desc.name().to_string()]),
        }
    }
}

impl<B: Clone + Send + 'static> BroadcastStream<B> {
    /// Also carries the broadcast state `desc`.
    pub fn with_state<K, V>(mut self, desc: &MapStateDescriptor<K, V>) -> Self {
        Arc::make_mut(&mut self.states).push(desc.name().to_string());
        self
    }
}

/// A main stream connected to a broadcast stream.
pub struct BroadcastConnectedStream<I, B, S> {
    main: S,
    broadcast: BroadcastStream<B>,
    _type: PhantomData<fn(I)>,
}

impl<I: Clone + Send + 'static> DataStream<I> {
    /// Connects to a broadcast stream.
    pub fn connect_broadcast<B: Clone + Send + 'static>(
        &self,
        broadcast: &BroadcastStream<B>,
    ) -> BroadcastConnectedStream<I, B, DataStream<I>> {
        BroadcastConnectedStream {
            main: self.clone(),
            broadcast: broadcast.clone(),
            _type: PhantomData,
        }
    }
}

impl<I: Clone + Send + 'static, K: Key> KeyedStream<I, K> {
    /// Connects to a broadcast stream, keeping the key of each record for
    /// keyed state and timers.
    pub fn connect_broadcast<B: Clone + Send + 'static>(
        &self,
        broadcast: &BroadcastStream<B>,
    ) -> BroadcastConnectedStream<I, B, KeyedStream<I, K>> {
        BroadcastConnectedStream {
            main: self.clone(),
            broadcast: broadcast.clone(),
            _type: PhantomData,
        }
    }
}

impl<I: Clone + Send + 'static, B: Clone + Send + 'static>
    BroadcastConnectedStream<I, B, DataStream<I>>
{
    /// Processes both streams (Flink's `BroadcastProcessFunction`).
    pub fn process<O, F>(&self, f: F) -> DataStream<O>
    where
        O: Clone + Send + 'static,
        F: BroadcastProcessFunction<I, B, O> + Clone + Sync,
    {
        let names = Arc::clone(&self.broadcast.states);
        let factory = NodeFactory::two_input(move |_| BroadcastOperator::new(f.clone(), &names));
        ConnectedStreams::new(self.main.clone(), self.broadcast.stream.clone())
            .add("Broadcast Process", factory)
    }
}

impl<I: Clone + Send + 'static, B: Clone + Send + 'static, K: Key>
    BroadcastConnectedStream<I, B, KeyedStream<I, K>>
{
    /// Processes both streams with keyed state and timers (Flink's
    /// `KeyedBroadcastProcessFunction`).
    pub fn process<O, F>(&self, f: F) -> DataStream<O>
    where
        O: Clone + Send + 'static,
        F: KeyedBroadcastProcessFunction<K, I, B, O> + Clone + Sync,
    {
        let names = Arc::clone(&self.broadcast.states);
        let key_of = self.main.key_selector();
        let factory = NodeFactory::two_input(move |_| {
            KeyedBroadcastOperator::new(f.clone(), Arc::clone(&key_of), &names)
        });
        ConnectedStreams::new(self.main.as_stream().clone(), self.broadcast.stream.clone())
            .add("Keyed Broadcast Process", factory)
    }
}
