//! How records travel to the next operator: forward, rebalance, rescale,
//! shuffle, broadcast, by key group, or by a user's partitioner.

use std::marker::PhantomData;
use std::sync::Arc;

use weir_runtime::element::{Control, Message, StreamRecord};
use weir_runtime::exchange::{
    ChannelWriter, CustomPartitioner, KeyGroupPartitioner, Partitioner, Sender,
};
use weir_runtime::graph::{Erased, Partitioning, WriterContext, WriterFactory};
use weir_runtime::operator::Downstream;
use weir_runtime::{JobError, TaskError};
use weir_state::StableHash;

use super::{DataStream, Key};
use crate::operators::{Gathered, KeySelector};

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

/// Writers of a keyed bundle operator's input (`process_bundles`): each
/// [`Gathered`] batch whole to the one subtask, or, with more, split into
/// one for each subtask that owns some of its keys. Each is sent as soon
/// as it is written (batches of one): it is already a batch of records.
pub(crate) struct GatheredWriter<K, I> {
    /// Keys the records of batches not gathered yet.
    pub key_of: KeySelector<I, K>,
}

impl<K: Key, I: Clone + Send + 'static> WriterFactory for GatheredWriter<K, I> {
    fn name(&self) -> &'static str {
        "HASH"
    }

    fn chains_at_parallelism_one(&self) -> bool {
        true
    }

    fn writer(&self, targets: Erased, ctx: &WriterContext) -> Result<Erased, JobError> {
        let targets = senders::<Gathered<K, I>>(targets)?;
        let subtasks = targets.len();
        // Batches of one: each record is a batch already, sent at once,
        // and a writer's list of a whole batch of them would be allocated
        // for each.
        let ctx = WriterContext {
            batch_size: 1,
            ..ctx.clone()
        };
        Ok(boxed(SplitGathered {
            channels: ChannelWriter::new(targets, BySubtask, &ctx),
            subtasks,
            key_of: Arc::clone(&self.key_of),
            max_parallelism: ctx.max_parallelism,
            split: Vec::new(),
        }))
    }
}

/// Routes a split bundle to the subtask it was split for.
struct BySubtask;

impl<K, I> Partitioner<Gathered<K, I>> for BySubtask
where
    K: StableHash,
{
    #[inline]
    fn select(&mut self, value: &Gathered<K, I>, _n: usize) -> usize {
        value.subtask()
    }
}

/// A [`GatheredWriter`]'s writer: splits each batch where it has more
/// than one subtask to go to, then sends it.
struct SplitGathered<K, I> {
    channels: ChannelWriter<Gathered<K, I>, BySubtask>,
    subtasks: usize,
    key_of: KeySelector<I, K>,
    max_parallelism: u32,
    split: Vec<StreamRecord<Gathered<K, I>>>,
}

impl<K: Key, I: Clone + Send + 'static> Downstream<Gathered<K, I>> for SplitGathered<K, I> {
    fn open(&mut self) -> Result<(), TaskError> {
        self.channels.open()
    }

    fn push_batch(
        &mut self,
        batch: &mut Vec<StreamRecord<Gathered<K, I>>>,
    ) -> Result<(), TaskError> {
        let n = self.subtasks;
        if n > 1 {
            let split = &mut self.split;
            for record in batch.drain(..) {
                let timestamp = record.timestamp;
                record
                    .value
                    .split_by_subtask(n, self.max_parallelism, &self.key_of, |part| {
                        split.push(StreamRecord::with_timestamp(part, timestamp));
                    });
            }
            std::mem::swap(batch, split);
        }
        self.channels.push_batch(batch)
    }

    fn push_control(&mut self, control: Control) -> Result<(), TaskError> {
        self.channels.push_control(control)
    }

    fn flush_buffers(&mut self) -> Result<(), TaskError> {
        self.channels.flush_buffers()
    }

    fn close(&mut self) -> Result<(), TaskError> {
        self.channels.close()
    }
}
