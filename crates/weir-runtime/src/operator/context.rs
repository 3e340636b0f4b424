//! What a function knows about where it runs.

use std::time::Duration;

use crate::error::SubtaskName;
use std::sync::Arc;

use crate::checkpoint::{CheckpointPort, SubtaskState, TakenSnapshot};
use crate::element::Barrier;
use crate::metrics::OperatorMetrics;
use crate::time::SharedClock;
use weir_state::{
    AggregatingState, AggregatingStateDescriptor, KeyedStateStore, ListState, ListStateDescriptor,
    MapState, MapStateDescriptor, OperatorStateStore, ReducingState, ReducingStateDescriptor,
    StateBackend, StateError, StateValue, ValueState, ValueStateDescriptor,
};

/// The runtime context of one parallel instance of an operator (Flink's
/// `RuntimeContext`): which subtask it is, of how many. Keyed state will be
/// reached through it.
#[derive(Debug, Clone)]
pub struct RuntimeContext {
    /// The job's id (Flink's `getJobId`), new for every run of a program.
    pub job_id: String,
    /// The checkpoint or savepoint this attempt restored, if any.
    pub restored_checkpoint: Option<u64>,
    /// Name of the operator.
    pub operator_name: String,
    /// Name of the task (the chain) the operator runs in.
    pub task_name: String,
    /// Whether the operator is the first of its task: its input records
    /// were made by other tasks, on other threads (a source has none).
    /// Further down a chain, an operator's input was made on its thread.
    pub heads_task: bool,
    /// 0-based index of this subtask.
    pub subtask_index: u32,
    /// Number of parallel subtasks of the operator.
    pub parallelism: u32,
    /// Number of key groups.
    pub max_parallelism: u32,
    /// How many times the job was restarted before this attempt (0 first).
    pub attempt_number: u32,
    /// The job's processing-time clock.
    pub clock: SharedClock,
    /// Interval of periodic watermark emission; zero disables it.
    pub auto_watermark_interval: Duration,
    /// The operator's counters (shared by its subtasks).
    pub metrics: Arc<OperatorMetrics>,
    /// Keyed state of this subtask, on keyed streams only.
    pub keyed_state: Option<KeyedStateStore>,
    /// The backend keyed operators open their state in.
    pub state_backend: StateBackend,
    /// This subtask's operator state (lists that survive rescaling by
    /// even split or union; snapshots come with checkpoints).
    pub operator_state: OperatorStateStore,
    /// The keyed store this subtask opened and what a restore brought.
    pub subtask_state: SubtaskState,
    /// How this subtask acknowledges checkpoints (with checkpointing on).
    pub checkpoint: Option<CheckpointPort>,
    /// Where the task this subtask heads shows where its watermark comes
    /// from; a source reports what it emitted and its splits here.
    pub probe: Arc<crate::provenance::SubtaskProbe>,
}

impl RuntimeContext {
    /// Opens this subtask's keyed state in the job's backend, over the key
    /// groups the subtask owns, restoring what a checkpoint holds for them;
    /// returns a context whose functions see it, and the store.
    pub fn open_keyed_state(&self) -> Result<(RuntimeContext, KeyedStateStore), StateError> {
        let range = weir_state::key_group_range_for_operator(
            self.max_parallelism,
            self.parallelism,
            self.subtask_index,
        );
        let store = match self.subtask_state.take_native()? {
            Some(native) => {
                let format = self.state_backend.native_format().ok_or_else(|| {
                    StateError::Internal(format!(
                        "the checkpoint holds {} files for '{}', which the '{}' backend cannot \
                         read; restore with that backend",
                        "key-value store",
                        self.operator_name,
                        self.state_backend.name()
                    ))
                })?;
                format.open(&native, self.max_parallelism, range, self.clock.clone())?
            }
            None => self
                .state_backend
                .open(self.max_parallelism, range, self.clock.clone())?,
        };
        self.subtask_state.register_keyed(&store)?;
        if let Some(statistics) = store.statistics() {
            self.metrics
                .set_store_statistics(self.subtask_index, statistics);
        }
        let mut keyed = self.clone();
        keyed.keyed_state = Some(store.clone());
        Ok((keyed, store))
    }

    /// Whether the job takes checkpoints.
    pub fn is_checkpointing(&self) -> bool {
        self.checkpoint.is_some()
    }

    /// Whether this subtask was restored from a checkpoint (Flink's
    /// `FunctionInitializationContext::isRestored`).
    pub fn is_restored(&self) -> bool {
        self.operator_state.is_restored()
    }

    /// Snapshots this subtask's registered state (and `position`, for a
    /// source) for `barrier` and acknowledges it to the coordinator; a
    /// snapshot that fails declines the checkpoint instead of failing the
    /// task, as Flink does.
    /// `started` is when the task paused for the barrier: the pause ends
    /// here, as the state is copied out (files are written by the
    /// coordinator).
    pub(crate) fn acknowledge_checkpoint(
        &self,
        barrier: &Barrier,
        position: Option<Vec<u8>>,
        started: std::time::Instant,
    ) {
        let Some(port) = &self.checkpoint else {
            return;
        };
        match self.snapshot(position) {
            Ok(snapshot) => port.acknowledge(barrier, snapshot, started.elapsed()),
            Err(e) => port.decline(barrier, format!("{}: {e}", self.subtask_name())),
        }
    }

    /// Reports this subtask's final state after its input ended (and, for
    /// a source, its final position); it stands in for the subtask in
    /// every later checkpoint.
    pub(crate) fn report_finished(&self, position: Option<Vec<u8>>) -> Result<(), StateError> {
        if let Some(port) = &self.checkpoint {
            // The final state is taken entry by entry: the store closes soon.
            let mut snapshot = TakenSnapshot::default();
            snapshot.base.source_position = position;
            self.subtask_state.snapshot_keyed(&mut snapshot, false)?;
            snapshot.base.operator = self.operator_state.snapshot()?;
            port.finished(snapshot.complete_in_memory()?);
        }
        Ok(())
    }

    fn snapshot(&self, position: Option<Vec<u8>>) -> Result<TakenSnapshot, StateError> {
        let mut snapshot = TakenSnapshot::default();
        snapshot.base.source_position = position;
        let native = self.checkpoint.as_ref().is_some_and(|p| p.native);
        self.subtask_state.snapshot_keyed(&mut snapshot, native)?;
        snapshot.base.operator = self.operator_state.snapshot()?;
        Ok(snapshot)
    }

    fn keyed(&self, name: &str) -> Result<&KeyedStateStore, StateError> {
        self.keyed_state
            .as_ref()
            .ok_or_else(|| StateError::NotKeyed(name.to_string()))
    }

    /// The value state `desc` of the current key (Flink's `getState`).
    /// Only on keyed streams; elsewhere a [`StateError::NotKeyed`].
    pub fn get_state<T: StateValue>(
        &self,
        desc: &ValueStateDescriptor<T>,
    ) -> Result<ValueState<T>, StateError> {
        self.keyed(desc.name())?.value_state(desc)
    }

    /// The list state `desc` of the current key.
    pub fn get_list_state<T: StateValue>(
        &self,
        desc: &ListStateDescriptor<T>,
    ) -> Result<ListState<T>, StateError> {
        self.keyed(desc.name())?.list_state(desc)
    }

    /// The map state `desc` of the current key.
    pub fn get_map_state<K, V>(
        &self,
        desc: &MapStateDescriptor<K, V>,
    ) -> Result<MapState<K, V>, StateError>
    where
        K: StateValue + std::hash::Hash + Eq,
        V: StateValue,
    {
        self.keyed(desc.name())?.map_state(desc)
    }

    /// The reducing state `desc` of the current key.
    pub fn get_reducing_state<T: StateValue>(
        &self,
        desc: &ReducingStateDescriptor<T>,
    ) -> Result<ReducingState<T>, StateError> {
        self.keyed(desc.name())?.reducing_state(desc)
    }

    /// The aggregating state `desc` of the current key.
    pub fn get_aggregating_state<In, Acc: StateValue, Out>(
        &self,
        desc: &AggregatingStateDescriptor<In, Acc, Out>,
    ) -> Result<AggregatingState<In, Acc, Out>, StateError> {
        self.keyed(desc.name())?.aggregating_state(desc)
    }

    /// `Name (i/n)`, as Flink names a subtask in logs and errors.
    pub fn subtask_name(&self) -> SubtaskName {
        SubtaskName {
            operator: self.operator_name.clone(),
            subtask: self.subtask_index,
            parallelism: self.parallelism,
        }
    }
}
