//! Factories: how a node of the graph becomes operators, one per subtask.
//!
//! The graph is built from typed user code but stored untyped, so that nodes
//! of every type fit in one `Vec`. Typed pieces (downstream hops, channel
//! ends) pass between factories as [`Erased`] boxes while a job is wired up,
//! once per subtask; records themselves never pass through `Any`.

use std::any::Any;
use std::marker::PhantomData;
use std::sync::Arc;

use crossbeam_channel::Receiver;

use crate::cancel::CancelToken;
use crate::element::Message;
use crate::error::JobError;
use crate::metrics::OperatorMetrics;
use crate::operator::{
    ChainLink, Downstream, Operator, Output, RuntimeContext, SideOutputs, TwoInputOperator,
};
use crate::task::{
    InputGate, OneInputHead, SourceFunction, SourceHead, TaskHead, TaskSettings, TwoInputHead,
};

/// A typed value whose type is known only to the factory that made it.
pub type Erased = Box<dyn Any + Send>;

/// Takes the typed value out of an [`Erased`] box.
pub fn unerase<X: 'static>(value: Erased, what: &str) -> Result<X, JobError> {
    value
        .downcast::<X>()
        .map(|b| *b)
        .map_err(|_| JobError::Internal(format!("type mismatch wiring {what}")))
}

/// What an operator's output is made of, for one subtask.
pub struct OutputParts {
    /// `Box<dyn Downstream<Out>>`: where main output records go.
    pub next: Erased,
    /// The consumed side outputs.
    pub sides: SideOutputs,
    /// The operator's counters.
    pub metrics: Arc<OperatorMetrics>,
    /// The subtask it belongs to.
    pub subtask: u32,
}

impl OutputParts {
    fn into_output<O: Send + 'static>(self, what: &str) -> Result<Output<O>, JobError> {
        let next: Box<dyn Downstream<O>> = unerase(self.next, what)?;
        Ok(Output::new(next, self.sides, self.metrics).with_subtask(self.subtask))
    }
}

/// Everything a channel writer needs besides its channels.
#[derive(Clone)]
pub struct WriterContext {
    /// The upstream subtask index.
    pub subtask: u32,
    /// Records per batch.
    pub batch_size: usize,
    /// Number of key groups, for key-group partitioning.
    pub max_parallelism: u32,
    /// Cancellation, to stop waiting on a full channel.
    pub cancel: CancelToken,
    /// Counters of the producing operator.
    pub metrics: Arc<OperatorMetrics>,
    /// Waiting times of the producing task (back-pressure).
    pub times: Arc<crate::metrics::TaskTimes>,
}

/// Builds the writer of a typed partitioning (key groups, custom).
pub trait WriterFactory: Send + Sync {
    /// Name shown in plans (`HASH`, `CUSTOM`).
    fn name(&self) -> &'static str;
    /// Whether an edge of this partitioning between two operators that both
    /// run with parallelism 1 may be chained. True for key groups: every key
    /// belongs to the one subtask, so the edge is a forward edge in effect
    /// and the records need not cross threads.
    fn chains_at_parallelism_one(&self) -> bool {
        false
    }

    /// A `Box<dyn Downstream<T>>` writing to `senders`
    /// (`Vec<Sender<Message<T>>>`, one per target subtask, in order).
    fn writer(&self, senders: Erased, ctx: &WriterContext) -> Result<Erased, JobError>;
}

/// How a node makes its operators.
pub enum NodeFactory {
    /// A source: no input.
    Source(Box<dyn SourceFactory>),
    /// One input; may be chained after its predecessor.
    OneInput(Box<dyn OneInputFactory>),
    /// Two inputs; always the head of its task.
    TwoInput(Box<dyn TwoInputFactory>),
}

impl NodeFactory {
    /// A source node running the function `make` returns for each subtask.
    pub fn source<T, F>(make: F) -> Self
    where
        T: Send + 'static,
        F: Fn(&RuntimeContext) -> Box<dyn SourceFunction<T>> + Send + Sync + 'static,
    {
        NodeFactory::Source(Box::new(SourceOf(make, PhantomData)))
    }

    /// A one-input node running the operator `make` returns for each subtask.
    pub fn one_input<Op, F>(make: F) -> Self
    where
        Op: Operator,
        F: Fn(&RuntimeContext) -> Op + Send + Sync + 'static,
    {
        NodeFactory::OneInput(Box::new(OneInputOf(make, PhantomData)))
    }

    /// A two-input node running the operator `make` returns for each subtask.
    pub fn two_input<Op, F>(make: F) -> Self
    where
        Op: TwoInputOperator,
        F: Fn(&RuntimeContext) -> Op + Send + Sync + 'static,
    {
        NodeFactory::TwoInput(Box::new(TwoInputOf(make, PhantomData)))
    }
}

/// Makes source task heads.
pub trait SourceFactory: Send + Sync {
    /// The head of subtask `ctx.subtask_index`.
    fn head(
        &self,
        ctx: RuntimeContext,
        out: OutputParts,
        settings: TaskSettings,
    ) -> Result<Box<dyn TaskHead>, JobError>;
}

/// Makes one-input operators, chained or at the head of a task.
pub trait OneInputFactory: Send + Sync {
    /// A `Box<dyn Downstream<In>>` running the operator inside a chain.
    fn chained(&self, ctx: RuntimeContext, out: OutputParts) -> Result<Erased, JobError>;

    /// A task head reading `inputs` (`Receiver<Message<In>>` each).
    fn head(
        &self,
        ctx: RuntimeContext,
        out: OutputParts,
        inputs: Vec<Erased>,
        settings: TaskSettings,
    ) -> Result<Box<dyn TaskHead>, JobError>;
}

/// Makes two-input operators (always task heads).
pub trait TwoInputFactory: Send + Sync {
    /// A task head reading two inputs (`Receiver<Message<In1>>`, `…<In2>`).
    fn head(
        &self,
        ctx: RuntimeContext,
        out: OutputParts,
        inputs: (Vec<Erased>, Vec<Erased>),
        settings: TaskSettings,
    ) -> Result<Box<dyn TaskHead>, JobError>;
}

struct SourceOf<T, F>(F, PhantomData<fn() -> T>);

impl<T, F> SourceFactory for SourceOf<T, F>
where
    T: Send + 'static,
    F: Fn(&RuntimeContext) -> Box<dyn SourceFunction<T>> + Send + Sync + 'static,
{
    fn head(
        &self,
        ctx: RuntimeContext,
        out: OutputParts,
        settings: TaskSettings,
    ) -> Result<Box<dyn TaskHead>, JobError> {
        let source = (self.0)(&ctx);
        let out = out.into_output::<T>("source output")?;
        Ok(Box::new(SourceHead::new(source, out, ctx, settings)))
    }
}

struct OneInputOf<Op, F>(F, PhantomData<fn() -> Op>);

/// The gate of input `input` (0 or 1) of a task.
fn gate<T: Send + 'static>(
    inputs: Vec<Erased>,
    settings: &TaskSettings,
    input: usize,
) -> Result<InputGate<T>, JobError> {
    let receivers = inputs
        .into_iter()
        .map(|rx| unerase::<Receiver<Message<T>>>(rx, "input channel"))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(InputGate::with_alignment(receivers, settings.aligned)
        .with_probe(std::sync::Arc::clone(&settings.probe), input))
}

impl<Op, F> OneInputOf<Op, F>
where
    Op: Operator,
    F: Fn(&RuntimeContext) -> Op + Send + Sync + 'static,
{
    fn link(&self, ctx: RuntimeContext, out: OutputParts) -> Result<ChainLink<Op>, JobError> {
        let op = (self.0)(&ctx);
        let metrics = Arc::clone(&out.metrics);
        let out = out.into_output::<Op::Out>("operator output")?;
        Ok(ChainLink::new(op, out, ctx, metrics))
    }
}

impl<Op, F> OneInputFactory for OneInputOf<Op, F>
where
    Op: Operator,
    F: Fn(&RuntimeContext) -> Op + Send + Sync + 'static,
{
    fn chained(&self, ctx: RuntimeContext, out: OutputParts) -> Result<Erased, JobError> {
        let link: Box<dyn Downstream<Op::In>> = Box::new(self.link(ctx, out)?);
        Ok(Box::new(link))
    }

    fn head(
        &self,
        ctx: RuntimeContext,
        out: OutputParts,
        inputs: Vec<Erased>,
        settings: TaskSettings,
    ) -> Result<Box<dyn TaskHead>, JobError> {
        let link = Box::new(self.link(ctx, out)?);
        Ok(Box::new(OneInputHead::new(
            gate(inputs, &settings, 0)?,
            link,
            settings,
        )))
    }
}

struct TwoInputOf<Op, F>(F, PhantomData<fn() -> Op>);

impl<Op, F> TwoInputFactory for TwoInputOf<Op, F>
where
    Op: TwoInputOperator,
    F: Fn(&RuntimeContext) -> Op + Send + Sync + 'static,
{
    fn head(
        &self,
        ctx: RuntimeContext,
        out: OutputParts,
        inputs: (Vec<Erased>, Vec<Erased>),
        settings: TaskSettings,
    ) -> Result<Box<dyn TaskHead>, JobError> {
        let op = (self.0)(&ctx);
        let metrics = Arc::clone(&out.metrics);
        let out = out.into_output::<Op::Out>("operator output")?;
        let gates = (gate(inputs.0, &settings, 0)?, gate(inputs.1, &settings, 1)?);
        Ok(Box::new(TwoInputHead::new(
            op, out, gates, ctx, metrics, settings,
        )))
    }
}
