//! Exactly-once sinks by two-phase commit (Flink's
//! `TwoPhaseCommitSinkFunction`): records go into a transaction; when a
//! checkpoint barrier passes, the transaction is pre-committed and kept in
//! the checkpoint; when the checkpoint completes, it is committed. After a
//! failure, transactions the restored checkpoint holds as pre-committed are
//! committed again (so `commit` must be idempotent) and the transaction that
//! was open is aborted: its records are replayed from the sources.
//!
//! Without checkpointing the last transaction is committed when the input
//! ends, as a bounded (batch) job expects.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use weir_runtime::checkpoint::FINAL_SNAPSHOT;
use weir_state::{ListStateDescriptor, OperatorListState};

use crate::functions::{FunctionResult, RuntimeContext, SinkContext, SinkFunction};

/// The transactional system behind a [`TwoPhaseCommitSink`].
///
/// By implementing this trait, you promise that `commit` and
/// `recover_and_commit` of an already committed transaction succeed
/// without writing anything twice, and that nothing written to a
/// transaction is visible to readers before it is committed.
pub trait TwoPhaseCommit<T>: Send + 'static {
    /// What identifies a transaction; it is stored in checkpoints.
    type Txn: Serialize + DeserializeOwned + Clone + Send + 'static;

    /// The sink's default name (see [`SinkFunction::default_name`]): by
    /// default this type's name.
    fn name(&self) -> String {
        crate::functions::short_type_name::<Self>()
    }

    /// Called once per subtask, before anything else.
    fn open(&mut self, _ctx: &RuntimeContext) -> FunctionResult {
        Ok(())
    }
    /// Starts a transaction.
    fn begin_transaction(&mut self) -> FunctionResult<Self::Txn>;
    /// Writes `value` into `txn`.
    fn invoke(&mut self, txn: &mut Self::Txn, value: T, ctx: &SinkContext) -> FunctionResult;
    /// Makes `txn` durable so that `commit` cannot fail for lack of data;
    /// no more records go into it. `checkpoint_id` is the checkpoint whose
    /// completion will commit it ([`FINAL_SNAPSHOT`] for the final one, or
    /// at the end of a job without checkpoints).
    fn pre_commit(&mut self, txn: &mut Self::Txn, checkpoint_id: u64) -> FunctionResult;
    /// Makes `txn`'s records visible. Idempotent.
    fn commit(&mut self, txn: Self::Txn) -> FunctionResult;
    /// Drops `txn` and its records.
    fn abort(&mut self, txn: Self::Txn) -> FunctionResult;
    /// Commits a pre-committed transaction found in a restored checkpoint
    /// (it may have been committed before the failure).
    fn recover_and_commit(&mut self, txn: Self::Txn) -> FunctionResult {
        self.commit(txn)
    }
    /// Aborts the transaction that was open when the restored checkpoint
    /// was taken.
    fn recover_and_abort(&mut self, txn: Self::Txn) -> FunctionResult {
        self.abort(txn)
    }
    /// Called once per subtask at the end.
    fn close(&mut self) -> FunctionResult {
        Ok(())
    }
}

/// What a subtask keeps in its operator state: the pre-committed
/// transactions by checkpoint, and the open one.
#[derive(Clone, Serialize, Deserialize)]
#[serde(bound = "X: Serialize + DeserializeOwned")]
struct Transactions<X> {
    pending: Vec<(u64, X)>,
    current: Option<X>,
}

/// A sink that writes through a [`TwoPhaseCommit`] system exactly once.
pub struct TwoPhaseCommitSink<S: TwoPhaseCommit<T>, T> {
    system: S,
    current: Option<S::Txn>,
    pending: Vec<(u64, S::Txn)>,
    state: Option<OperatorListState<Transactions<S::Txn>>>,
    checkpointing: bool,
    _type: std::marker::PhantomData<fn(T)>,
}

impl<S: TwoPhaseCommit<T> + Clone, T> Clone for TwoPhaseCommitSink<S, T> {
    fn clone(&self) -> Self {
        TwoPhaseCommitSink::new(self.system.clone())
    }
}

impl<S: TwoPhaseCommit<T>, T> TwoPhaseCommitSink<S, T> {
    /// A sink writing through `system`.
    pub fn new(system: S) -> Self {
        TwoPhaseCommitSink {
            system,
            current: None,
            pending: Vec::new(),
            state: None,
            checkpointing: false,
            _type: std::marker::PhantomData,
        }
    }

    /// The system behind the sink.
    pub fn system(&self) -> &S {
        &self.system
    }
}

impl<S: TwoPhaseCommit<T>, T: Send + 'static> SinkFunction<T> for TwoPhaseCommitSink<S, T> {
    fn default_name(&self) -> String {
        self.system.name()
    }

    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.system.open(ctx)?;
        self.checkpointing = ctx.is_checkpointing();
        let state = ctx
            .operator_state
            .get_list_state(&ListStateDescriptor::new("\u{1}weir/2pc-transactions"))?;
        for restored in state.get()? {
            let Transactions { pending, current } = restored;
            for (_, txn) in pending {
                self.system.recover_and_commit(txn)?;
            }
            if let Some(txn) = current {
                self.system.recover_and_abort(txn)?;
            }
        }
        state.clear()?;
        self.state = Some(state);
        Ok(())
    }

    fn invoke(&mut self, value: T, ctx: &SinkContext) -> FunctionResult {
        let txn = match &mut self.current {
            Some(txn) => txn,
            empty => empty.insert(self.system.begin_transaction()?),
        };
        self.system.invoke(txn, value, ctx)
    }

    fn snapshot_state(&mut self, checkpoint_id: u64) -> FunctionResult {
        if let Some(mut txn) = self.current.take() {
            self.system.pre_commit(&mut txn, checkpoint_id)?;
            self.pending.push((checkpoint_id, txn));
        }
        // The next transaction starts now, so that the checkpoint records
        // it as the open one and a restore aborts whatever it received.
        if checkpoint_id != FINAL_SNAPSHOT {
            self.current = Some(self.system.begin_transaction()?);
        }
        if let Some(state) = &self.state {
            state.update(vec![Transactions {
                pending: self.pending.clone(),
                current: self.current.clone(),
            }])?;
        }
        Ok(())
    }

    fn notify_checkpoint_complete(&mut self, checkpoint_id: u64) -> FunctionResult {
        let (done, keep): (Vec<_>, Vec<_>) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|(id, _)| *id <= checkpoint_id || *id == FINAL_SNAPSHOT);
        self.pending = keep;
        for (_, txn) in done {
            self.system.commit(txn)?;
        }
        Ok(())
    }

    fn finish(&mut self) -> FunctionResult {
        // With checkpointing, the final checkpoint commits what is left;
        // without, nothing else will.
        if !self.checkpointing {
            if let Some(mut txn) = self.current.take() {
                self.system.pre_commit(&mut txn, FINAL_SNAPSHOT)?;
                self.system.commit(txn)?;
            }
        }
        Ok(())
    }

    fn close(&mut self) -> FunctionResult {
        self.system.close()
    }
}
