//! A running job and its result.

use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use crossbeam_channel::Receiver;

use weir_state::LoadedCheckpoint;

use super::deploy::{deploy, JobShared};
use super::view::{JobStatus, JobView};
use crate::cancel::CancelSource;
use crate::checkpoint::{apply_retention, CheckpointStats, CoordinatorHandle, CoordinatorMessage};
use crate::error::{JobError, TaskError};
use crate::metrics::OperatorMetrics;
use crate::recovery::RestartTracker;

/// A job's id: 16 random bytes, printed as 32 hex digits like Flink's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct JobId(pub u128);

impl JobId {
    /// A new random id.
    pub fn random() -> Self {
        let state = std::collections::hash_map::RandomState::new();
        let mut hi = state.build_hasher();
        hi.write_u128(
            SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0),
        );
        let mut lo = state.build_hasher();
        lo.write_u64(hi.finish());
        JobId((u128::from(hi.finish()) << 64) | u128::from(lo.finish()))
    }
}

impl std::str::FromStr for JobId {
    type Err = String;

    /// 32 hexadecimal digits, as Flink writes job ids.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        if text.len() != 32 || !text.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(format!("a job id is 32 hexadecimal digits, not '{text}'"));
        }
        u128::from_str_radix(text, 16)
            .map(JobId)
            .map_err(|e| format!("'{text}': {e}"))
    }
}

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:032x}", self.0)
    }
}

/// The counters of one operator at the end of a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperatorResult {
    /// Operator name.
    pub name: String,
    /// The user's uid, if set.
    pub uid: Option<String>,
    /// Parallelism it ran with.
    pub parallelism: u32,
    /// Records received, over all subtasks.
    pub records_in: u64,
    /// Records emitted on the main output, over all subtasks.
    pub records_out: u64,
    /// Sends that waited on a full channel (back-pressure), over all subtasks.
    pub blocked_sends: u64,
    /// Late records dropped by window operators without a late side output
    /// (Flink's `numLateRecordsDropped`).
    pub num_late_records_dropped: u64,
}

/// What a finished job reports (Flink's `JobExecutionResult`).
#[derive(Debug, Clone)]
pub struct JobExecutionResult {
    /// The job's id.
    pub job_id: JobId,
    /// The job's name.
    pub job_name: String,
    /// Wall time from start to finish.
    pub net_runtime: Duration,
    /// Per-operator counters, in graph order.
    pub operators: Vec<OperatorResult>,
    /// How many times the job restarted after a failure.
    pub restarts: u32,
    /// The failures it recovered from, oldest first.
    pub recovered_failures: Vec<String>,
    /// Checkpoint counters of the last attempt (completed and failed
    /// counts cover all attempts).
    pub checkpoints: CheckpointStats,
}

impl JobExecutionResult {
    /// Late records dropped by all window operators of the job.
    pub fn num_late_records_dropped(&self) -> u64 {
        self.operators
            .iter()
            .map(|o| o.num_late_records_dropped)
            .sum()
    }

    /// The counters of the first operator named `name`.
    pub fn operator(&self, name: &str) -> Option<&OperatorResult> {
        self.operators.iter().find(|o| o.name == name)
    }
}

pub(crate) struct OperatorEntry {
    pub name: String,
    pub uid: Option<String>,
    pub parallelism: u32,
    pub metrics: Arc<OperatorMetrics>,
}

/// Cancels a running job from any thread.
#[derive(Debug, Clone)]
pub struct JobCancelHandle(CancelSource);

impl JobCancelHandle {
    /// Cancels the job: every task stops at its next step; nothing hangs.
    pub fn cancel(&self) {
        self.0.cancel();
    }
}

/// One deployment of the job: its task threads and coordinator.
pub(crate) struct Attempt {
    pub cancel: CancelSource,
    pub results: Receiver<Result<(), TaskError>>,
    pub threads: Vec<JoinHandle<()>>,
    pub coordinator: Option<CoordinatorHandle>,
    pub stats: Arc<Mutex<CheckpointStats>>,
    pub parallelism: Vec<u32>,
}

/// How an attempt ended.
enum Outcome {
    Finished,
    Cancelled,
    Failed(TaskError),
}

impl Attempt {
    /// Waits for every task; the first failure cancels the rest. A cancel
    /// of the job (`job_cancel`) cancels the attempt.
    fn join(mut self, job_cancel: &CancelSource) -> (Outcome, CheckpointStats) {
        let mut failure: Option<TaskError> = None;
        let job_token = job_cancel.token();
        let mut remaining = self.threads.len();
        while remaining > 0 {
            crossbeam_channel::select! {
                recv(self.results) -> r => {
                    remaining -= 1;
                    match r {
                        Ok(Ok(())) | Ok(Err(TaskError::Cancelled)) => {}
                        Ok(Err(e)) => {
                            if failure.is_none() {
                                failure = Some(e);
                                self.cancel.cancel();
                            }
                        }
                        Err(_) => break,
                    }
                }
                recv(job_token.receiver()) -> _ => self.cancel.cancel(),
            }
        }
        for thread in self.threads.drain(..) {
            // Each thread reported its result before ending; a join error
            // would mean the reporting itself panicked.
            if thread.join().is_err() && failure.is_none() {
                failure = Some(TaskError::Internal("task thread panicked".into()));
            }
        }
        if let Some(c) = self.coordinator.take() {
            c.stop();
        }
        let stats = self.stats.lock().map(|s| s.clone()).unwrap_or_default();
        let outcome = match (failure, &stats.failure) {
            (Some(e), _) => Outcome::Failed(e),
            (None, Some(why)) => Outcome::Failed(TaskError::Checkpoint(why.clone())),
            (None, None) if job_cancel.is_cancelled() || self.cancel.is_cancelled() => {
                Outcome::Cancelled
            }
            (None, None) => Outcome::Finished,
        };
        (outcome, stats)
    }
}

/// Takes savepoints of a running job, from any thread.
#[derive(Clone)]
pub struct SavepointHandle {
    coordinator: Arc<Mutex<Option<crossbeam_channel::Sender<CoordinatorMessage>>>>,
    timeout: Duration,
    default_dir: Option<std::path::PathBuf>,
}

impl std::fmt::Debug for SavepointHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SavepointHandle").finish_non_exhaustive()
    }
}

impl SavepointHandle {
    pub(crate) fn new(
        coordinator: Arc<Mutex<Option<crossbeam_channel::Sender<CoordinatorMessage>>>>,
        timeout: Duration,
        default_dir: Option<std::path::PathBuf>,
    ) -> Self {
        SavepointHandle {
            coordinator,
            timeout,
            default_dir,
        }
    }

    /// Takes a savepoint into a new `savepoint-<job6>-<rand12>` directory
    /// under `dir` (self-contained: it can be moved and restored with
    /// `--from-savepoint`) and returns its location. Waits at most the
    /// checkpoint timeout.
    pub fn trigger(&self, dir: impl AsRef<std::path::Path>) -> Result<String, JobError> {
        self.request(dir.as_ref(), None)
    }

    /// Stops the job with a savepoint (Flink's `stop`): the savepoint is
    /// taken, sinks hear it completed, and every task ends without ending
    /// its input, so nothing runs after the savepoint's barrier; `wait`
    /// then returns the job's result. With `drain`, sources first emit the
    /// end-of-time watermark, so every event-time window and timer fires
    /// before the savepoint.
    pub fn stop(&self, dir: impl AsRef<std::path::Path>, drain: bool) -> Result<String, JobError> {
        self.request(dir.as_ref(), Some(drain))
    }

    /// As [`trigger`](Self::trigger), into the configured default
    /// directory (`execution.checkpointing.savepoint-dir`).
    pub fn trigger_to_default(&self) -> Result<String, JobError> {
        let dir = self.default_dir()?;
        self.request(&dir, None)
    }

    /// As [`stop`](Self::stop), into the configured default directory.
    pub fn stop_to_default(&self, drain: bool) -> Result<String, JobError> {
        let dir = self.default_dir()?;
        self.request(&dir, Some(drain))
    }

    fn default_dir(&self) -> Result<std::path::PathBuf, JobError> {
        self.default_dir.clone().ok_or_else(|| {
            JobError::Savepoint(
                "no directory given and no execution.checkpointing.savepoint-dir set".into(),
            )
        })
    }

    fn request(&self, dir: &std::path::Path, stop: Option<bool>) -> Result<String, JobError> {
        let sender = self
            .coordinator
            .lock()
            .ok()
            .and_then(|c| c.clone())
            .ok_or_else(|| JobError::Savepoint("the job has no checkpoint coordinator".into()))?;
        let (reply, answer) = crossbeam_channel::bounded(1);
        sender
            .send(CoordinatorMessage::TriggerSavepoint {
                dir: dir.to_path_buf(),
                reply,
                stop,
            })
            .map_err(|_| JobError::Savepoint("the job is not running".into()))?;
        match answer.recv_timeout(self.timeout) {
            Ok(Ok(location)) => Ok(location),
            Ok(Err(why)) => Err(JobError::Savepoint(why)),
            Err(_) => Err(JobError::Savepoint(
                "no answer from the job within the checkpoint timeout".into(),
            )),
        }
    }
}

/// A running job (Flink's `JobClient`).
pub struct JobClient {
    pub(crate) job_id: JobId,
    pub(crate) job_name: String,
    pub(crate) started: Instant,
    pub(crate) cancel: CancelSource,
    pub(crate) attempt: Option<Attempt>,
    pub(crate) operators: Vec<OperatorEntry>,
    pub(crate) job: JobShared,
    /// Kept until the job ends (e.g. the REST server of the job).
    pub(crate) attachments: Vec<Box<dyn Send>>,
    /// Where the job's REST API listens, once served.
    pub(crate) rest_address: Option<std::net::SocketAddr>,
}

impl fmt::Debug for JobClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JobClient")
            .field("job_id", &self.job_id)
            .field("job_name", &self.job_name)
            .finish_non_exhaustive()
    }
}

impl JobClient {
    /// The job's id.
    pub fn job_id(&self) -> JobId {
        self.job_id
    }

    /// A handle that cancels the job, usable from another thread.
    pub fn cancel_handle(&self) -> JobCancelHandle {
        JobCancelHandle(self.cancel.clone())
    }

    /// Cancels the job.
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    /// A handle that takes savepoints, usable from another thread. Needs
    /// checkpointing enabled (its coordinator takes them).
    pub fn savepoint_handle(&self) -> Result<SavepointHandle, JobError> {
        self.job.view.savepoints()
    }

    /// Keeps `thing` until the job ends ([`wait`](Self::wait) returns), e.g.
    /// a server over the job's [`view`](Self::view).
    pub fn keep_until_end(&mut self, thing: Box<dyn Send>) {
        self.attachments.push(thing);
    }

    /// Records where the job's REST API listens (by whoever serves it).
    pub fn set_rest_address(&mut self, address: std::net::SocketAddr) {
        self.rest_address = Some(address);
    }

    /// Where the job's REST API listens, if it is served (the port, when
    /// `rest.port` was 0).
    pub fn rest_address(&self) -> Option<std::net::SocketAddr> {
        self.rest_address
    }

    /// A view of the job (status, vertices, checkpoints, failures) that
    /// outlives this client, for the REST API.
    pub fn view(&self) -> JobView {
        self.job.view.clone()
    }

    /// Stops the job with a savepoint under `dir` (see
    /// [`SavepointHandle::stop`]).
    pub fn stop_with_savepoint(
        &self,
        dir: impl AsRef<std::path::Path>,
        drain: bool,
    ) -> Result<String, JobError> {
        self.savepoint_handle()?.stop(dir, drain)
    }

    /// Takes a savepoint under `dir` and returns its location (see
    /// [`SavepointHandle::trigger`]).
    pub fn trigger_savepoint(&self, dir: impl AsRef<std::path::Path>) -> Result<String, JobError> {
        self.savepoint_handle()?.trigger(dir)
    }

    /// Waits for the job to end. The first task failure cancels the other
    /// tasks; then the restart strategy decides: the job is deployed again
    /// from its latest complete checkpoint (sources rewind to their
    /// positions in it), or the failure is returned.
    pub fn wait(mut self) -> Result<JobExecutionResult, JobError> {
        let mut tracker = RestartTracker::new(self.job.config.effective_restart_strategy());
        let mut recovered = Vec::new();
        let (mut completed, mut failed) = (0, 0);
        loop {
            let Some(attempt) = self.attempt.take() else {
                return Err(JobError::Internal("job has no running attempt".into()));
            };
            let (outcome, stats) = attempt.join(&self.cancel);
            completed += stats.completed;
            failed += stats.failed;
            let totals = CheckpointStats {
                completed,
                failed,
                ..stats
            };
            let error = match outcome {
                Outcome::Finished => {
                    self.retain(false, false);
                    self.job.view.ended(JobStatus::Finished);
                    return Ok(self.result(tracker.restarts(), recovered, totals));
                }
                Outcome::Cancelled => {
                    self.retain(true, false);
                    self.job.view.ended(JobStatus::Canceled);
                    return Err(JobError::Cancelled);
                }
                Outcome::Failed(e) => e,
            };
            let Some(delay) = tracker.on_failure(Instant::now()) else {
                self.retain(false, true);
                self.job.view.failed(&error.to_string(), false);
                return Err(JobError::TaskFailed(error));
            };
            self.job.view.failed(&error.to_string(), true);
            tracing::warn!(
                job_id = %self.job_id,
                restart = tracker.restarts(),
                delay_ms = delay.as_millis() as u64,
                error = %error,
                "job {} failed ({error}); restart {} in {} ms",
                self.job_id,
                tracker.restarts(),
                delay.as_millis()
            );
            recovered.push(error.to_string());
            if self
                .cancel
                .token()
                .receiver()
                .recv_timeout(delay)
                .is_err_and(|e| e.is_disconnected())
            {
                self.retain(true, false);
                self.job.view.ended(JobStatus::Canceled);
                return Err(JobError::Cancelled);
            }
            let restore = self.latest_checkpoint()?;
            let next_id = totals
                .latest_completed
                .max(restore.as_ref().map(|c| c.metadata.checkpoint_id))
                .map_or(1, |id| id + 1);
            let from = restore.as_deref().or(self.job.config.restore.as_deref());
            self.attempt = Some(deploy(&self.job, from, tracker.restarts(), next_id)?);
        }
    }

    /// The newest checkpoint that verifies; newer ones that do not are
    /// skipped with a warning naming the bad file.
    fn latest_checkpoint(&self) -> Result<Option<Arc<LoadedCheckpoint>>, JobError> {
        let Some(storage) = &self.job.storage else {
            return Ok(None);
        };
        let (latest, skipped) = weir_state::checkpoint_storage::load_latest(&**storage)
            .map_err(|e| JobError::Internal(format!("cannot list checkpoints: {e}")))?;
        for (id, why) in skipped {
            tracing::warn!(
                job_id = %self.job_id,
                checkpoint = id,
                reason = %why,
                "skipping checkpoint {id}: {why}"
            );
        }
        Ok(latest.map(Arc::new))
    }

    fn retain(&self, cancelled: bool, failed: bool) {
        if let Some(storage) = &self.job.storage {
            apply_retention(
                &**storage,
                self.job.config.checkpoint.retention,
                cancelled,
                failed,
            );
        }
    }

    fn result(
        self,
        restarts: u32,
        recovered_failures: Vec<String>,
        checkpoints: CheckpointStats,
    ) -> JobExecutionResult {
        JobExecutionResult {
            job_id: self.job_id,
            job_name: self.job_name,
            net_runtime: self.started.elapsed(),
            operators: self
                .operators
                .iter()
                .map(|o| OperatorResult {
                    name: o.name.clone(),
                    uid: o.uid.clone(),
                    parallelism: o.parallelism,
                    records_in: o.metrics.records_in(),
                    records_out: o.metrics.records_out(),
                    blocked_sends: o.metrics.blocked_sends(),
                    num_late_records_dropped: o.metrics.late_records_dropped(),
                })
                .collect(),
            restarts,
            recovered_failures,
            checkpoints,
        }
    }
}
