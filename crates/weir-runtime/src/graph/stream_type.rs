//! Operations on one record type, kept with the graph so that untyped wiring
//! code can make typed channels, writers and fan-outs.

use std::marker::PhantomData;
use std::sync::Arc;

use crossbeam_channel::Sender;

use super::factory::{unerase, Erased, WriterContext};
use super::Partitioning;
use crate::element::Message;
use crate::error::JobError;
use crate::exchange::{
    self, BroadcastPartitioner, ChannelWriter, ForwardPartitioner, RebalancePartitioner,
    ShufflePartitioner,
};
use crate::operator::{Discard, Downstream, FanOut, SideOutput, SideSlot};

/// Typed operations for the records of one stream.
pub trait StreamType: Send + Sync {
    /// The Rust type's name, for plans and errors.
    fn type_name(&self) -> &'static str;
    /// A bounded channel: (`Sender<Message<T>>`, `Receiver<Message<T>>`).
    fn channel(&self, capacity: usize) -> (Erased, Erased);
    /// A `Box<dyn Downstream<T>>` writing to `senders` by `partitioning`.
    fn writer(
        &self,
        partitioning: &Partitioning,
        senders: Vec<Erased>,
        ctx: &WriterContext,
    ) -> Result<Erased, JobError>;
    /// A `Box<dyn Downstream<T>>` sending to each of `outs`.
    fn fan_out(&self, outs: Vec<Erased>) -> Result<Erased, JobError>;
    /// A `Box<dyn Downstream<T>>` dropping everything.
    fn discard(&self) -> Erased;
    /// A side output `tag` whose records go to `next` (a `Box<dyn Downstream<T>>`).
    fn side_slot(&self, tag: &str, next: Erased) -> Result<Box<dyn SideOutput>, JobError>;
}

/// The [`StreamType`] of `T`.
pub struct TypeOf<T>(PhantomData<fn() -> T>);

impl<T: Clone + Send + 'static> TypeOf<T> {
    /// The operations for `T`, shareable between nodes.
    pub fn shared() -> Arc<dyn StreamType> {
        Arc::new(TypeOf::<T>(PhantomData))
    }
}

fn boxed<T: 'static, D: Downstream<T> + 'static>(d: D) -> Erased {
    let d: Box<dyn Downstream<T>> = Box::new(d);
    Box::new(d)
}

impl<T: Clone + Send + 'static> StreamType for TypeOf<T> {
    fn type_name(&self) -> &'static str {
        std::any::type_name::<T>()
    }

    fn channel(&self, capacity: usize) -> (Erased, Erased) {
        let (tx, rx) = exchange::channel::<T>(capacity);
        (Box::new(tx), Box::new(rx))
    }

    fn writer(
        &self,
        partitioning: &Partitioning,
        senders: Vec<Erased>,
        ctx: &WriterContext,
    ) -> Result<Erased, JobError> {
        let targets = senders
            .into_iter()
            .map(|s| unerase::<Sender<Message<T>>>(s, "output channel"))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(match partitioning {
            Partitioning::Default | Partitioning::Forward => {
                boxed(ChannelWriter::new(targets, ForwardPartitioner, ctx))
            }
            Partitioning::Rebalance | Partitioning::Rescale => {
                let start = ctx.subtask as usize;
                let p = RebalancePartitioner::new(start);
                boxed(ChannelWriter::new(targets, p, ctx))
            }
            Partitioning::Shuffle => {
                let p = ShufflePartitioner::new(u64::from(ctx.subtask) + 1);
                boxed(ChannelWriter::new(targets, p, ctx))
            }
            Partitioning::Broadcast => {
                boxed(ChannelWriter::new(targets, BroadcastPartitioner, ctx))
            }
            Partitioning::Custom(factory) => factory.writer(Box::new(targets), ctx)?,
        })
    }

    fn fan_out(&self, outs: Vec<Erased>) -> Result<Erased, JobError> {
        let outs = outs
            .into_iter()
            .map(|o| unerase::<Box<dyn Downstream<T>>>(o, "fan-out"))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(boxed(FanOut::new(outs)))
    }

    fn discard(&self) -> Erased {
        boxed::<T, _>(Discard)
    }

    fn side_slot(&self, tag: &str, next: Erased) -> Result<Box<dyn SideOutput>, JobError> {
        let next = unerase::<Box<dyn Downstream<T>>>(next, "side output")?;
        Ok(Box::new(SideSlot::new(tag.to_string(), next)))
    }
}
