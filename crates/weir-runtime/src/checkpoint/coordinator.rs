//! The checkpoint coordinator: one thread per job that triggers
//! checkpoints, collects acknowledgements, writes the files off the task
//! threads, commits `_metadata` and notifies the tasks.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use weir_state::checkpoint_storage::{
    encode_metadata, load_metadata, state_file, OperatorMetadata, StateFile,
};
use weir_state::file_system::join;
use weir_state::snapshot::encode_framed;
use weir_state::{
    key_group_range_for_operator, CheckpointMetadata, CheckpointStorage, SavepointStorage,
};

use super::{
    CheckpointConfig, CheckpointRetention, CoordinatorMessage, SharedFiles, TaskMessage, Upload,
};
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
    /// Bytes of state in the latest completed checkpoint.
    pub last_size: u64,
    /// The longest time from trigger to completion of any checkpoint.
    pub max_duration: Duration,
    /// The largest checkpoint, in bytes of state.
    pub max_size: u64,
    /// The longest a task paused for any checkpoint (the synchronous part:
    /// operator hooks and copying state out; files are written elsewhere).
    pub max_pause: Duration,
    /// Bytes written to the storage by all completed checkpoints (state
    /// files and new shared files: with incremental checkpoints, less than
    /// their sizes).
    pub bytes_written: u64,
    /// Bytes the latest completed checkpoint wrote.
    pub last_bytes_written: u64,
    /// Bytes of state of each operator (graph order) in the latest
    /// completed checkpoint.
    pub operator_state_sizes: Vec<u64>,
    /// The latest checkpoints and savepoints, completed or not, oldest
    /// first (at most [`HISTORY_SIZE`], Flink's `web.checkpoints.history`).
    pub history: std::collections::VecDeque<CheckpointRecord>,
}

/// The "interval" of a coordinator that takes no periodic checkpoints.
const NO_PERIODIC_CHECKPOINTS: Duration = Duration::from_secs(10 * 365 * 24 * 3600);

/// Checkpoints kept in [`CheckpointStats::history`].
pub const HISTORY_SIZE: usize = 10;

/// One checkpoint or savepoint in the history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointRecord {
    /// Its id.
    pub id: u64,
    /// Whether it was a savepoint.
    pub savepoint: bool,
    /// When it was triggered, in ms since the epoch.
    pub trigger_timestamp_ms: i64,
    /// From trigger to completion (or failure).
    pub duration: Duration,
    /// Bytes of state (0 unless completed).
    pub state_size: u64,
    /// The longest any task paused for it (the synchronous part).
    pub max_pause: Duration,
    /// The longest any task's input waited for its barrier on all channels
    /// (barrier alignment; zero in at-least-once mode and for sources).
    pub max_alignment: Duration,
    /// Where it is, once completed.
    pub location: Option<String>,
    /// Why it failed, if it did.
    pub failure: Option<String>,
}

/// An operator as the coordinator knows it.
#[derive(Debug, Clone)]
pub(crate) struct OperatorInfo {
    pub id: String,
    pub name: String,
    pub parallelism: u32,
}

/// What the coordinator does after a message.
#[derive(Debug, PartialEq, Eq)]
enum Step {
    Continue,
    Complete,
    Failed(String),
}

/// A savepoint asked for: directory, reply, and whether (and how) the job
/// stops after it.
type QueuedSavepoint = (PathBuf, Sender<Result<String, String>>, Option<bool>);

/// Where a savepoint goes and who waits for it.
struct SavepointTarget {
    storage: SavepointStorage,
    reply: Sender<Result<String, String>>,
    /// `Some(drain)`: the job stops after it.
    stop: Option<bool>,
}

struct Pending {
    /// Set for a savepoint: its own directory instead of the job's
    /// checkpoint storage.
    savepoint: Option<SavepointTarget>,
    barrier: Barrier,
    started: Instant,
    acked: HashSet<(usize, u32)>,
    files: Vec<Vec<StateFile>>,
    max_pause: Duration,
    /// The longest barrier alignment any task reported.
    max_alignment: Duration,
    /// Bytes written to the storage for this checkpoint (state files and
    /// newly shared files).
    written: u64,
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
    use crate::time::Clock;
    crate::time::SystemClock.now_ms()
}

impl Coordinator {
    /// Starts the coordinator's thread.
    pub fn start(
        self,
        tx: Sender<CoordinatorMessage>,
        rx: Receiver<CoordinatorMessage>,
    ) -> std::io::Result<CoordinatorHandle> {
        let (cancel, stats) = (self.cancel.clone(), Arc::clone(&self.stats));
        let thread = std::thread::Builder::new()
            .name("checkpoint coordinator".into())
            .spawn(move || {
                let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.run(rx)));
                // Tasks wait for the coordinator at the end of their input:
                // if it dies, the attempt fails instead of hanging.
                if run.is_err() {
                    if let Ok(mut s) = stats.lock() {
                        s.failure = Some("the checkpoint coordinator panicked".into());
                    }
                    cancel.cancel();
                }
            })?;
        Ok(CoordinatorHandle {
            tx,
            thread: Some(thread),
        })
    }

    /// The storage checkpoint `p` goes to.
    fn storage_of<'a>(&'a self, p: &'a Pending) -> &'a dyn CheckpointStorage {
        match &p.savepoint {
            Some(target) => &target.storage,
            None => &*self.storage,
        }
    }

    fn expected_acks(&self) -> usize {
        self.operators.iter().map(|o| o.parallelism as usize).sum()
    }

    fn run(mut self, rx: Receiver<CoordinatorMessage>) {
        // Without an interval the coordinator only takes savepoints (and
        // the final checkpoint when every input ended).
        let interval = self
            .config
            .interval
            .filter(|i| !i.is_zero())
            .unwrap_or(NO_PERIODIC_CHECKPOINTS);
        let mut pending: Option<Pending> = None;
        let mut next_trigger = Instant::now() + interval;
        let mut failures_in_a_row = 0u32;
        // Final snapshots of operator subtasks whose input ended: their
        // state no longer changes, so they stand in for acknowledgements
        // of every later checkpoint (Flink's checkpoints after tasks
        // finished, FLIP-147).
        let mut finished: HashMap<(usize, u32), weir_state::SubtaskSnapshot> = HashMap::new();
        let mut shared_files = SharedFiles::default();
        // Savepoints asked for while a checkpoint was in flight.
        let mut queued_savepoints: Vec<QueuedSavepoint> = Vec::new();
        // After a stop-with-savepoint succeeded, nothing more is triggered.
        let mut stopped = false;
        loop {
            let deadline = match &pending {
                Some(p) => p.started + self.config.timeout,
                None => next_trigger,
            };
            let wait = deadline.saturating_duration_since(Instant::now());
            let outcome = match rx.recv_timeout(wait) {
                Ok(CoordinatorMessage::Stop) | Err(RecvTimeoutError::Disconnected) => {
                    if let Some(p) = pending.take() {
                        self.abort(&p, false);
                    }
                    for (_, reply, _) in queued_savepoints.drain(..) {
                        let _ = reply.send(Err("the job ended".into()));
                    }
                    break;
                }
                Ok(CoordinatorMessage::TriggerSavepoint { dir, reply, stop }) => {
                    queued_savepoints.push((dir, reply, stop));
                    Step::Continue
                }
                Ok(CoordinatorMessage::Finished {
                    operator,
                    subtask,
                    snapshot,
                }) => {
                    let mut outcome = Step::Continue;
                    if let Some(p) = pending.as_mut() {
                        outcome = self.on_ack(p, operator, subtask, &snapshot, Vec::new());
                    }
                    finished.insert((operator, subtask), *snapshot);
                    outcome
                }
                Ok(CoordinatorMessage::Decline {
                    checkpoint_id,
                    reason,
                }) => {
                    if pending
                        .as_ref()
                        .is_some_and(|p| p.barrier.checkpoint_id == checkpoint_id)
                    {
                        Step::Failed(reason)
                    } else {
                        Step::Continue
                    }
                }
                Ok(CoordinatorMessage::Ack {
                    checkpoint_id,
                    operator,
                    subtask,
                    snapshot,
                    pause,
                    alignment,
                }) => match pending
                    .as_mut()
                    .filter(|p| p.barrier.checkpoint_id == checkpoint_id)
                {
                    Some(p) => {
                        p.max_pause = p.max_pause.max(pause);
                        p.max_alignment = p.max_alignment.max(alignment);
                        let prefix = format!("op{operator}-{subtask}");
                        let mut upload = Upload {
                            written: &mut p.written,
                            shared: Vec::new(),
                            files: &mut shared_files,
                        };
                        let storage: &dyn CheckpointStorage = match &p.savepoint {
                            Some(target) => &target.storage,
                            None => &*self.storage,
                        };
                        let completed =
                            snapshot.complete(storage, checkpoint_id, &prefix, &mut upload);
                        let shared = upload.shared;
                        match completed {
                            Ok(snapshot) => self.on_ack(p, operator, subtask, &snapshot, shared),
                            Err(e) => Step::Failed(e.to_string()),
                        }
                    }
                    None => {
                        // Late for an aborted checkpoint.
                        snapshot.discard();
                        Step::Continue
                    }
                },
                Err(RecvTimeoutError::Timeout) => {
                    if pending
                        .as_ref()
                        .is_some_and(|p| p.started.elapsed() >= self.config.timeout)
                    {
                        Step::Failed("checkpoint expired before completing".into())
                    } else {
                        if pending.is_none() && Instant::now() >= next_trigger && !stopped {
                            next_trigger = Instant::now() + interval;
                            pending = self.trigger(&finished, None);
                        }
                        // Subtasks that ended may already have acknowledged
                        // everything.
                        match &pending {
                            Some(p) if p.acked.len() == self.expected_acks() => Step::Complete,
                            _ => Step::Continue,
                        }
                    }
                }
            };
            match outcome {
                Step::Continue => {}
                Step::Complete => {
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
                    next_trigger = next_trigger.max(Instant::now() + self.config.min_pause);
                }
                Step::Failed(reason) => {
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
            if pending.is_none() && !queued_savepoints.is_empty() && !stopped {
                let (dir, reply, stop) = queued_savepoints.remove(0);
                stopped = stop.is_some();
                pending = self.trigger_savepoint(&finished, &dir, reply, stop);
            }
            if !finished.is_empty() && finished.len() == self.expected_acks() {
                // Every operator ended: the final checkpoint lets
                // two-phase-commit sinks commit the last results.
                if let Some(p) = pending.take() {
                    self.abort(&p, false);
                }
                let final_id = self.trigger_final(&finished);
                self.notify(TaskMessage::Final(final_id));
                finished.clear();
            }
        }
    }

    /// Records an acknowledgement of the pending checkpoint.
    fn on_ack(
        &self,
        p: &mut Pending,
        operator: usize,
        subtask: u32,
        snapshot: &weir_state::SubtaskSnapshot,
        shared: Vec<String>,
    ) -> Step {
        match self.store_ack(p, operator, subtask, snapshot, shared) {
            Err(e) => Step::Failed(e.to_string()),
            Ok(()) if p.acked.len() == self.expected_acks() => Step::Complete,
            Ok(()) => Step::Continue,
        }
    }

    /// Triggers a savepoint into a new `savepoint-<job6>-<rand12>` directory
    /// under `dir`.
    fn trigger_savepoint(
        &mut self,
        finished: &HashMap<(usize, u32), weir_state::SubtaskSnapshot>,
        dir: &Path,
        reply: Sender<Result<String, String>>,
        stop: Option<bool>,
    ) -> Option<Pending> {
        let rand = {
            use std::hash::{BuildHasher, Hasher};
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_i64(now_ms());
            h.finish() & 0xffff_ffff_ffff
        };
        let job6 = &self.job_id[..self.job_id.len().min(6)];
        let location = join(
            &dir.to_string_lossy(),
            &format!("savepoint-{job6}-{rand:012x}"),
        );
        let storage = match SavepointStorage::open(&location) {
            Ok(storage) => storage,
            Err(e) => {
                let _ = reply.send(Err(format!("savepoint could not be written: {e}")));
                return None;
            }
        };
        self.trigger(
            finished,
            Some(SavepointTarget {
                storage,
                reply,
                stop,
            }),
        )
    }

    /// Takes the final checkpoint from the final snapshots of every
    /// operator subtask; `None` if it could not be written.
    fn trigger_final(
        &mut self,
        finished: &HashMap<(usize, u32), weir_state::SubtaskSnapshot>,
    ) -> Option<u64> {
        let barrier = Barrier {
            checkpoint_id: self.next_id,
            timestamp_ms: now_ms(),
            kind: BarrierKind::Checkpoint,
            alignment: Duration::ZERO,
        };
        self.next_id += 1;
        let mut p = Pending {
            savepoint: None,
            barrier,
            started: Instant::now(),
            acked: HashSet::new(),
            files: vec![Vec::new(); self.operators.len()],
            max_pause: Duration::ZERO,
            max_alignment: Duration::ZERO,
            written: 0,
        };
        let id = p.barrier.checkpoint_id;
        for ((operator, subtask), snapshot) in finished {
            if let Err(e) = self.store_ack(&mut p, *operator, *subtask, snapshot, Vec::new()) {
                self.abort(&p, true);
                self.fail_final(id, &e.to_string());
                return None;
            }
        }
        match self.complete(p) {
            Ok(()) => Some(id),
            Err(why) => {
                self.fail_final(id, &why);
                None
            }
        }
    }

    /// The final checkpoint is what commits the last results of
    /// exactly-once sinks: without it they stay uncommitted, so the job
    /// fails rather than ending as if its output were complete.
    fn fail_final(&self, id: u64, why: &str) {
        self.update(|s| {
            s.failure = Some(format!(
                "the final checkpoint {id} failed, so the last results of exactly-once \
                 sinks were not committed: {why}"
            ))
        });
    }

    /// Triggers the next checkpoint (or, with `savepoint`, a savepoint) at
    /// the sources still running; the final snapshots of ended subtasks
    /// acknowledge it at once.
    fn trigger(
        &mut self,
        finished: &HashMap<(usize, u32), weir_state::SubtaskSnapshot>,
        savepoint: Option<SavepointTarget>,
    ) -> Option<Pending> {
        let kind = match savepoint {
            Some(_) => BarrierKind::Savepoint,
            None => BarrierKind::Checkpoint,
        };
        let stop = savepoint.as_ref().and_then(|t| t.stop);
        let barrier = Barrier {
            checkpoint_id: self.next_id,
            timestamp_ms: now_ms(),
            kind,
            alignment: Duration::ZERO,
        };
        // A source that ended dropped its mailbox; its final snapshot is
        // in `finished` (or on its way, and then acknowledges on arrival).
        let delivered = self
            .sources
            .iter()
            .filter(|s| {
                let message = match stop {
                    Some(drain) => TaskMessage::TriggerStop { barrier, drain },
                    None => TaskMessage::Trigger(barrier),
                };
                s.send(message).is_ok()
            })
            .count();
        if delivered == 0 {
            if let Some(target) = savepoint {
                let _ = target
                    .reply
                    .send(Err("no source is running to take a savepoint".into()));
            }
            return None;
        }
        self.next_id += 1;
        let mut p = Pending {
            savepoint,
            barrier,
            started: Instant::now(),
            acked: HashSet::new(),
            files: vec![Vec::new(); self.operators.len()],
            max_pause: Duration::ZERO,
            max_alignment: Duration::ZERO,
            written: 0,
        };
        for ((operator, subtask), snapshot) in finished {
            if self
                .store_ack(&mut p, *operator, *subtask, snapshot, Vec::new())
                .is_err()
            {
                self.abort(&p, true);
                return None;
            }
        }
        Some(p)
    }

    fn store_ack(
        &self,
        p: &mut Pending,
        operator: usize,
        subtask: u32,
        snapshot: &weir_state::SubtaskSnapshot,
        shared: Vec<String>,
    ) -> Result<(), weir_state::StateError> {
        if !p.acked.insert((operator, subtask)) {
            return Ok(());
        }
        if snapshot.is_empty() {
            return Ok(());
        }
        let bytes = encode_framed(snapshot)?;
        let name = format!("op{operator}-{subtask}");
        self.storage_of(p)
            .write_file(p.barrier.checkpoint_id, &name, &bytes)?;
        let info = &self.operators[operator];
        let range = key_group_range_for_operator(self.max_parallelism, info.parallelism, subtask);
        let mut file = state_file(subtask, (range.start, range.end), name, &bytes);
        file.shared = shared;
        p.written += file.size;
        p.files[operator].push(file);
        Ok(())
    }

    fn complete(&mut self, mut p: Pending) -> Result<(), String> {
        let id = p.barrier.checkpoint_id;
        let files = std::mem::take(&mut p.files);
        let operator_sizes: Vec<u64> = files
            .iter()
            .map(|f| f.iter().map(|f| f.size).sum())
            .collect();
        let metadata = CheckpointMetadata {
            job_id: self.job_id.clone(),
            checkpoint_id: id,
            timestamp_ms: p.barrier.timestamp_ms,
            savepoint: p.barrier.kind == BarrierKind::Savepoint,
            max_parallelism: self.max_parallelism,
            operators: self
                .operators
                .iter()
                .zip(files)
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
        let size = metadata.state_size();
        if let Some(target) = p.savepoint.as_ref() {
            // Savepoints belong to the user: no retention, no shared-file
            // collection, and they do not count as the job's checkpoints.
            let written = encode_metadata(&metadata)
                .and_then(|bytes| target.storage.write_metadata(id, &bytes));
            let location = target.storage.location(id);
            match &written {
                Ok(()) => self.record(&p, size, Some(location.clone()), None),
                Err(e) => self.record(&p, 0, None, Some(e.to_string())),
            }
            let Some(target) = p.savepoint else {
                return Ok(());
            };
            return match written {
                Ok(()) => {
                    self.notify(TaskMessage::Complete(id));
                    if target.stop.is_some() {
                        // After the notice, so sinks commit first.
                        self.notify(TaskMessage::Terminate);
                    }
                    let _ = target.reply.send(Ok(location));
                    Ok(())
                }
                Err(e) => {
                    let _ = target.storage.discard(id);
                    self.notify(TaskMessage::Aborted(id));
                    let why = format!("savepoint could not be written: {e}");
                    let _ = target.reply.send(Err(why.clone()));
                    Err(why)
                }
            };
        }
        let written =
            encode_metadata(&metadata).and_then(|bytes| self.storage.write_metadata(id, &bytes));
        if let Err(e) = written {
            let _ = self.storage.discard(id);
            self.notify(TaskMessage::Aborted(id));
            self.update(|s| s.failed += 1);
            let why = format!("checkpoint {id} could not be committed: {e}");
            self.record(&p, 0, None, Some(why.clone()));
            return Err(why);
        }
        let location = self.storage.location(id);
        self.record(&p, size, Some(location.clone()), None);
        self.update(|s| {
            s.completed += 1;
            s.latest_completed = Some(id);
            s.latest_location = Some(location);
            s.last_size = size;
            s.max_duration = s.max_duration.max(p.started.elapsed());
            s.max_size = s.max_size.max(size);
            s.max_pause = s.max_pause.max(p.max_pause);
            s.bytes_written += p.written;
            s.last_bytes_written = p.written;
            s.operator_state_sizes = operator_sizes;
        });
        self.notify(TaskMessage::Complete(id));
        if let Ok(ids) = self.storage.completed() {
            let keep = self.config.num_retained.max(1);
            for old in ids.iter().rev().skip(keep) {
                let _ = self.storage.discard(*old);
            }
        }
        collect_shared_garbage(&*self.storage);
        Ok(())
    }

    fn abort(&self, p: &Pending, failed: bool) {
        let id = p.barrier.checkpoint_id;
        self.record(
            p,
            0,
            None,
            Some(if failed { "failed" } else { "aborted" }.into()),
        );
        let _ = self.storage_of(p).discard(id);
        self.notify(TaskMessage::Aborted(id));
        if let Some(target) = &p.savepoint {
            let _ = target.reply.send(Err(
                "the savepoint was aborted (timeout, a declined snapshot, or the \
                           job ended)"
                    .into(),
            ));
            return;
        }
        self.update(|s| {
            if failed {
                s.failed += 1;
            } else {
                s.aborted += 1;
            }
        });
        // Shared files it uploaded that no completed checkpoint refers to
        // would otherwise stay until the next completed checkpoint, or
        // forever if the job ends now.
        collect_shared_garbage(&*self.storage);
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

    /// Adds `p`'s outcome to the history.
    fn record(
        &self,
        p: &Pending,
        state_size: u64,
        location: Option<String>,
        failure: Option<String>,
    ) {
        let record = CheckpointRecord {
            id: p.barrier.checkpoint_id,
            savepoint: p.barrier.kind == BarrierKind::Savepoint,
            trigger_timestamp_ms: p.barrier.timestamp_ms,
            duration: p.started.elapsed(),
            state_size,
            max_pause: p.max_pause,
            max_alignment: p.max_alignment,
            location,
            failure,
        };
        self.update(|s| {
            if s.history.len() == HISTORY_SIZE {
                s.history.pop_front();
            }
            s.history.push_back(record);
        });
    }
}

/// Deletes shared files no retained checkpoint refers to any more.
fn collect_shared_garbage(storage: &dyn CheckpointStorage) {
    if !storage.shares_files() {
        return;
    }
    let Ok(ids) = storage.completed() else {
        return;
    };
    let mut keep = HashSet::new();
    for id in ids {
        match load_metadata(storage, id) {
            Ok(meta) => keep.extend(
                meta.operators
                    .iter()
                    .flat_map(|o| &o.files)
                    .flat_map(|f| f.shared.iter().cloned()),
            ),
            // An unreadable checkpoint may still refer to files: keep all.
            Err(_) => return,
        }
    }
    storage.retain_shared(&keep);
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
        collect_shared_garbage(storage);
        storage.remove_if_empty();
    }
}
