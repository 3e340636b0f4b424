//! Checkpoints: *when and who* (DESIGN.md §6). The coordinator triggers
//! checkpoint `n` at the sources; barriers flow with the records; every
//! operator subtask snapshots its registered state when the barrier passes
//! it and acknowledges; once all have, the coordinator writes `_metadata`
//! and tells every task the checkpoint is complete. *What bytes and where*
//! (the snapshot format, checkpoint storage) live in `weir-state`.

mod config;
mod coordinator;
mod subtask;

pub use config::{
    CheckpointConfig, CheckpointRetention, CheckpointStorageConfig, CheckpointingMode,
};
pub(crate) use coordinator::{apply_retention, Coordinator, CoordinatorHandle, OperatorInfo};
pub use coordinator::{CheckpointRecord, CheckpointStats, HISTORY_SIZE};
pub use subtask::{
    CheckpointPort, SharedFiles, StateEntries, SubtaskState, TakenSnapshot, Upload,
    INTERNAL_STATE_PREFIX,
};

use crate::element::Barrier;

/// The checkpoint id operators' `snapshot_state` sees for the final
/// snapshot taken when their input ended. That state stands in for the
/// operator in every checkpoint completed afterwards, so what a sink
/// prepares for it is committed on the next completion notice, whatever
/// its id.
pub const FINAL_SNAPSHOT: u64 = u64::MAX;

/// What the coordinator tells a task, through the task's mailbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskMessage {
    /// Sources only: take checkpoint `barrier.checkpoint_id` now and emit
    /// the barrier.
    Trigger(Barrier),
    /// Sources only: as `Trigger`, for a stop with savepoint: with `drain`
    /// the end-of-time watermark goes first (every event-time window
    /// fires), and the source emits nothing after the barrier unless the
    /// savepoint is aborted.
    TriggerStop { barrier: Barrier, drain: bool },
    /// Every task: the job stops after a savepoint; end now, without
    /// ending the input (nothing runs after the savepoint's barrier).
    Terminate,
    /// Every operator: the checkpoint completed (two-phase-commit sinks
    /// commit here).
    Complete(u64),
    /// Every operator: the checkpoint was aborted.
    Aborted(u64),
    /// Every operator of the job ended and the final checkpoint completed
    /// (with its id, already announced by `Complete`) or could not be
    /// taken (`None`): the task may close.
    Final(Option<u64>),
}

/// A completion or abort notice on its way down a chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckpointNotice {
    /// `notify_checkpoint_complete(id)`.
    Complete(u64),
    /// `notify_checkpoint_aborted(id)`.
    Aborted(u64),
}

/// What a subtask tells the coordinator.
#[derive(Debug)]
pub(crate) enum CoordinatorMessage {
    /// Operator subtask `(operator, subtask)` snapshotted checkpoint `id`.
    Ack {
        checkpoint_id: u64,
        operator: usize,
        subtask: u32,
        snapshot: Box<TakenSnapshot>,
        /// How long the task paused to take it.
        pause: std::time::Duration,
        /// How long its input aligned the barrier.
        alignment: std::time::Duration,
    },
    /// A subtask could not snapshot checkpoint `id`.
    Decline { checkpoint_id: u64, reason: String },
    /// Operator subtask `(operator, subtask)` processed all its input;
    /// `snapshot` is its state from then on.
    Finished {
        operator: usize,
        subtask: u32,
        snapshot: Box<weir_state::SubtaskSnapshot>,
    },
    /// Take a savepoint into a new directory under `dir`; the reply is its
    /// location or why it failed.
    TriggerSavepoint {
        dir: std::path::PathBuf,
        reply: crossbeam_channel::Sender<Result<String, String>>,
        /// `Some(drain)`: stop the job after it.
        stop: Option<bool>,
    },
    /// The job is over: the coordinator stops.
    Stop,
}
