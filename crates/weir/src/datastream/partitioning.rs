//! How records travel to the next operator: forward, rebalance, rescale,
//! shuffle, broadcast, by key group, or by a user's partitioner.

use std::marker::PhantomData;
use std::sync::Arc;

use weir_runtime::element::Message;
use weir_runtime::exchange::{ChannelWriter, CustomPartitioner, KeyGroupPartitioner, Sender};
use weir_runtime::graph::{Erased, Partitioning, WriterContext, WriterFactory};
use weir_runtime::operator::Downstream;
use weir_runtime::JobError;

use super::{DataStream, Key};
use crate::operators::KeySelector;

type Senders<T> = Vec<Sender<Message<T>>>;

fn senders<T: Send + 'static>(senders: Erased) -> Result<Senders<T>, JobError> {
    senders
        .downcast::<Senders<T>>()
        .map(|b| *b)
        .map_err(|_| JobError::Internal("type mismatch wiring a partitioned edge".into()))
}

fn boxed<T: Send + 'static>(d: impl Downstream<T> + 'static) -> Erased {
    let d: Box<dyn Downstream<T>> = Box::new(d);
    Box::new(d)
}

/// Writers that route by key group (`key_by`).
pub(crate) struct KeyGroupWriter<T, K> {
    pub key_of: KeySelector<T, K>,
}

impl<T: Clone + Send + 'static, K: Key> WriterFactory for KeyGroupWriter<T, K> {
    fn name(&self) -> &'static str {
        "HASH"
    }

    fn chains_at_parallelism_one(&self) -> bool {
        true
    }

    fn writer(&self, targets: Erased, ctx: &WriterContext) -> Result<Erased, JobError> {
        let key_of = Arc::clone(&self.key_of);
        let partitioner = KeyGroupPartitioner::new(move |t: &T| key_of(t), ctx.max_parallelism);
        Ok(boxed(ChannelWriter::new(
            senders::<T>(targets)?,
            partitioner,
            ctx,
        )))
    }
}

type UserPartitioner<K> = Arc<dyn Fn(&K, usize) -> usize + Send + Sync>;

struct CustomWriter<T, K> {
    key_of: KeySelector<T, K>,
    partition: UserPartitioner<K>,
    _type: PhantomData<fn(T)>,
}

impl<T: Clone + Send + 'static, K: 'static> WriterFactory for CustomWriter<T, K> {
    fn name(&self) -> &'static str {
        "CUSTOM"
    }

    fn writer(&self, targets: Erased, ctx: &WriterContext) -> Result<Erased, JobError> {
        let key_of = Arc::clone(&self.key_of);
        let partition = Arc::clone(&self.partition);
        let partitioner = CustomPartitioner::new(
            move |t: &T| key_of(t),
            move |k: &K, n: usize| partition(k, n),
        );
        Ok(boxed(ChannelWriter::new(
            senders::<T>(targets)?,
            partitioner,
            ctx,
        )))
    }
}

impl<T: Clone + Send + 'static> DataStream<T> {
    pub(crate) fn partitioned(&self, partitioning: Partitioning) -> DataStream<T> {
        let mut inputs = self.inputs.clone();
        for input in &mut inputs {
            input.partitioning = partitioning.clone();
        }
        DataStream::from_inputs(self.env.clone(), inputs)
    }

    /// Subtask `i` sends to subtask `i` of the next operator (same
    /// parallelism required).
    pub fn forward(&self) -> DataStream<T> {
        self.partitioned(Partitioning::Forward)
    }

    /// Round robin to every subtask of the next operator.
    pub fn rebalance(&self) -> DataStream<T> {
        self.partitioned(Partitioning::Rebalance)
    }

    /// Round robin to a local group of the next operator's subtasks.
    pub fn rescale(&self) -> DataStream<T> {
        self.partitioned(Partitioning::Rescale)
    }

    /// Uniformly random subtasks.
    pub fn shuffle(&self) -> DataStream<T> {
        self.partitioned(Partitioning::Shuffle)
    }

    /// Every record to every subtask of the next operator.
    pub fn broadcast(&self) -> DataStream<T> {
        self.partitioned(Partitioning::Broadcast)
    }

    /// Sends each record to subtask `partition(key_of(record), n) % n`.
    pub fn partition_custom<K, P, F>(&self, partition: P, key_of: F) -> DataStream<T>
    where
        K: 'static,
        P: Fn(&K, usize) -> usize + Send + Sync + 'static,
        F: Fn(&T) -> K + Send + Sync + 'static,
    {
        self.partitioned(Partitioning::Custom(Arc::new(CustomWriter {
            key_of: Arc::new(key_of),
            partition: Arc::new(partition),
            _type: PhantomData,
        })))
    }
}
