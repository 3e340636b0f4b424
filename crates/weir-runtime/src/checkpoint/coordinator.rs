//! The checkpoint coordinator: one thread per job that triggers
//! checkpoints, collects acknowledgements, writes the files off the task
//! threads, commits `_metadata` and notifies the tasks.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Instant, SystemTime};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use weir_state::checkpoint_storage::{encode_metadata, state_file, OperatorMetadata, StateFile};
use weir_state::snapshot::encode_framed;
use weir_state::{key_group_range_for_operator, CheckpointMetadata, CheckpointStorage};

use super::{CheckpointConfig, CheckpointRetention, CoordinatorMessage, TaskMessage};
use crate::cancel::CancelSource;
use crate::element::{Barrier, BarrierKind};

/// Counters of a job's checkpoints (Flink's checkpoint statistics).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckpointStats {
    /// Checkpoints completed.
    pub completed: u64,
    /// Checkpoints that failed or timed out.
    pub failed: u64,
    /// Checkpoints aborted because a task ended while they were in flight.
    pub aborted: u64,
    /// The latest completed checkpoint's id.
    pub latest_completed: Option<u64>,
    /// Where it is.
    pub latest_location: Option<String>,
    /// The checkpoint the current attempt restored from.
    pub restored: Option<u64>,
    /// Why the job failed because of checkpoints, if it did.
    pub failure: Option<String>,
}

/// An operator as the coordinator knows it.
#[derive(Debug, Clone)]
pub(crate) struct OperatorInfo {
    pub id: String,
    pub name: String,
    pub parallelism: u32,
}

struct Pending {
    barrier: Barrier,
    started: Instant,
    acked: HashSet<(usize, u32)>,
    files: Vec<Vec<StateFile>>,
}

pub(crate) struct Coordinator {
    pub config: CheckpointConfig,
    pub storage: Arc<dyn CheckpointStorage>,
    pub job_id: String,
    pub max_parallelism: u32,
    pub operators: Vec<OperatorInfo>,
    pub sources: Vec<Sender<TaskMessage>>,
    pub tasks: Vec<Sender<TaskMessage>>,
    pub next_id: u64,
    pub cancel: CancelSource,
    pub stats: Arc<Mutex<CheckpointStats>>,
}

/// The running coordinator.
pub(crate) struct CoordinatorHandle {
    pub tx: Sender<CoordinatorMessage>,
    thread: Option<JoinHandle<()>>,
}

impl CoordinatorHandle {
    /// Stops the coordinator and waits for it.
    pub fn stop(mut self) {
        let _ = self.tx.send(CoordinatorMessage::Stop);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

impl Coordinator {
    /// Starts the coordinator's thread.
    pub fn start(
        self,
        tx: Sender<CoordinatorMessage>,
        rx: Receiver<CoordinatorMessage>,
    ) -> std::io::Result<CoordinatorHandle> {
        let thread = std::thread::Builder::new()
            .name("checkpoint coordinator".into())
            .spawn(move || self.run(rx))?;
        Ok(CoordinatorHandle {
            tx,
            thread: Some(thread),
        })
    }

    fn expected_acks(&self) -> usize {
        self.operators.iter().map(|o| o.parallelism as usize).sum()
    }

    fn run(mut self, rx: Receiver<CoordinatorMessage>) {
        let Some(interval) = self.config.interval else {
            return;
        };
        let mut pending: Option<Pending> = None;
        let mut next_trigger = Instant::now() + interval;
        let mut tasks_ended = false;
        let mut failures_in_a_row = 0u32;
        loop {
            let deadline = match &pending {
                Some(p) => p.started + self.config.timeout,
                None => next_trigger,
            };
            let wait = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(wait) {
                Ok(CoordinatorMessage::Stop) | Err(RecvTimeoutError::Disconnected) => break,
                Ok(CoordinatorMessage::TaskEnded) => {
                    // Checkpoints after a task finished are not supported
                    // yet: the one in flight cannot complete.
                    tasks_ended = true;
                    if let Some(p) = pending.take() {
                        self.abort(&p, false);
                    }
                }
                Ok(CoordinatorMessage::Decline {
                    checkpoint_id,
                    reason,
                }) => {
                    if pending
                        .as_ref()
                        .is_some_and(|p| p.barrier.checkpoint_id == checkpoint_id)
                    {
                        if let Some(p) = pending.take() {
                            self.abort(&p, true);
                        }
                        failures_in_a_row += 1;
                        if self.failed_too_often(failures_in_a_row, &reason) {
                            break;
                        }
                        next_trigger = Instant::now() + self.config.min_pause.max(interval);
                    }
                }
                Ok(CoordinatorMessage::Ack {
                    checkpoint_id,
                    operator,
                    subtask,
                    snapshot,
                }) => {
                    let Some(p) = pending
                        .as_mut()
                        .filter(|p| p.barrier.checkpoint_id == checkpoint_id)
                    else {
                        continue;
                    };
                    if let Err(e) = self.store_ack(p, operator, subtask, &snapshot) {
                        if let Some(p) = pending.take() {
                            self.abort(&p, true);
                        }
                        failures_in_a_row += 1;
                        if self.failed_too_often(failures_in_a_row, &e.to_string()) {
                            break;
                        }
                        continue;
                    }
                    if p.acked.len() == self.expected_acks() {
                        if let Some(p) = pending.take() {
                            match self.complete(p) {
                                Ok(()) => failures_in_a_row = 0,
                                Err(e) => {
                                    failures_in_a_row += 1;
                                    if self.failed_too_often(failures_in_a_row, &e) {
                                        break;
                                    }
                                }
                            }
                        }
                        next_trigger = (next_trigger.max(Instant::now()))
                            .max(Instant::now() + self.config.min_pause);
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    if let Some(p) = pending.take_if(|p| p.started.elapsed() >= self.config.timeout)
                    {
                        self.abort(&p, true);
                        failures_in_a_row += 1;
                        if self.failed_too_often(
                            failures_in_a_row,
                            "checkpoint expired before completing",
                        ) {
                            break;
                        }
                    } else if pending.is_none() && Instant::now() >= next_trigger {
                        next_trigger = Instant::now() + interval;
                        if !tasks_ended {
                            pending = self.trigger();
                        }
                    }
                }
            }
        }
    }

    fn trigger(&mut self) -> Option<Pending> {
        let barrier = Barrier {
            checkpoint_id: self.next_id,
            timestamp_ms: now_ms(),
            kind: BarrierKind::Checkpoint,
        };
        self.next_id += 1;
        for source in &self.sources {
            if source.send(TaskMessage::Trigger(barrier)).is_err() {
                return None;
            }
        }
        Some(Pending {
            barrier,
            started: Instant::now(),
            acked: HashSet::new(),
            files: vec![Vec::new(); self.operators.len()],
        })
    }

    fn store_ack(
        &self,
        p: &mut Pending,
        operator: usize,
        subtask: u32,
        snapshot: &weir_state::SubtaskSnapshot,
    ) -> Result<(), weir_state::StateError> {
        if !p.acked.insert((operator, subtask)) {
            return Ok(());
        }
        if snapshot.is_empty() {
            return Ok(());
        }
        let bytes = encode_framed(snapshot)?;
        let name = format!("op{operator}-{subtask}");
        self.storage
            .write_file(p.barrier.checkpoint_id, &name, &bytes)?;
        let info = &self.operators[operator];
        let range = key_group_range_for_operator(self.max_parallelism, info.parallelism, subtask);
        p.files[operator].push(state_file(subtask, (range.start, range.end), name, &bytes));
        Ok(())
    }

    fn complete(&mut self, p: Pending) -> Result<(), String> {
        let id = p.barrier.checkpoint_id;
        let metadata = CheckpointMetadata {
            job_id: self.job_id.clone(),
            checkpoint_id: id,
            timestamp_ms: p.barrier.timestamp_ms,
            savepoint: p.barrier.kind == BarrierKind::Savepoint,
            max_parallelism: self.max_parallelism,
            operators: self
                .operators
                .iter()
                .zip(p.files)
                .filter(|(_, files)| !files.is_empty())
                .map(|(info, mut files)| {
                    files.sort_by_key(|f| f.subtask);
                    OperatorMetadata {
                        id: info.id.clone(),
                        name: info.name.clone(),
                        parallelism: info.parallelism,
                        files,
                    }
                })
                .collect(),
        };
        let written =
            encode_metadata(&metadata).and_then(|bytes| self.storage.write_metadata(id, &bytes));
        if let Err(e) = written {
            let _ = self.storage.discard(id);
            self.notify(TaskMessage::Aborted(id));
            self.update(|s| s.failed += 1);
            return Err(format!("checkpoint {id} could not be committed: {e}"));
        }
        let location = self.storage.location(id);
        self.update(|s| {
            s.completed += 1;
            s.latest_completed = Some(id);
            s.latest_location = Some(location);
        });
        self.notify(TaskMessage::Complete(id));
        if let Ok(ids) = self.storage.completed() {
            let keep = self.config.num_retained.max(1);
            for old in ids.iter().rev().skip(keep) {
                let _ = self.storage.discard(*old);
            }
        }
        Ok(())
    }

    fn abort(&self, p: &Pending, failed: bool) {
        let id = p.barrier.checkpoint_id;
        let _ = self.storage.discard(id);
        self.notify(TaskMessage::Aborted(id));
        self.update(|s| {
            if failed {
                s.failed += 1;
            } else {
                s.aborted += 1;
            }
        });
    }

    fn failed_too_often(&self, in_a_row: u32, reason: &str) -> bool {
        if in_a_row <= self.config.tolerable_failures {
            return false;
        }
        self.update(|s| {
            s.failure = Some(format!(
                "exceeded checkpoint tolerable failure threshold ({}): {reason}",
                self.config.tolerable_failures
            ))
        });
        self.cancel.cancel();
        true
    }

    fn notify(&self, message: TaskMessage) {
        for task in &self.tasks {
            let _ = task.send(message);
        }
    }

    fn update(&self, f: impl FnOnce(&mut CheckpointStats)) {
        if let Ok(mut s) = self.stats.lock() {
            f(&mut s);
        }
    }
}

/// Deletes a job's checkpoints when its retention says so. `cancelled`:
/// the job was cancelled; `failed`: it failed for good.
pub(crate) fn apply_retention(
    storage: &dyn CheckpointStorage,
    retention: CheckpointRetention,
    cancelled: bool,
    failed: bool,
) {
    let keep = match retention {
        CheckpointRetention::NoExternalizedCheckpoints => false,
        CheckpointRetention::RetainOnCancellation => cancelled || failed,
        CheckpointRetention::DeleteOnCancellation => failed && !cancelled,
    };
    if !keep {
        if let Ok(ids) = storage.completed() {
            for id in ids {
                let _ = storage.discard(id);
            }
        }
    }
}
