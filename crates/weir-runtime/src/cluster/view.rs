//! A running job as its operators see it from outside (the REST API, the
//! CLI): status, vertices and their counters, checkpoints, failures; and
//! what they may do to it (savepoint, stop, cancel). Cheap to clone and
//! usable from any thread while the job runs and after it ended.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::cancel::CancelSource;
use crate::checkpoint::{CheckpointStats, HISTORY_SIZE};
use crate::error::JobError;
use crate::metrics::OperatorMetrics;
use crate::time::{Clock, SystemClock};

use super::job::{JobId, SavepointHandle};

/// Where a job is in its life (Flink's job statuses).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobStatus {
    /// Tasks are running.
    Running,
    /// A task failed; the job is about to be deployed again.
    Restarting,
    /// Every task finished (bounded input, or stopped with a savepoint).
    Finished,
    /// The job failed and will not restart.
    Failed,
    /// The job was cancelled.
    Canceled,
}

impl JobStatus {
    /// Flink's name of the status (`RUNNING`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            JobStatus::Running => "RUNNING",
            JobStatus::Restarting => "RESTARTING",
            JobStatus::Finished => "FINISHED",
            JobStatus::Failed => "FAILED",
            JobStatus::Canceled => "CANCELED",
        }
    }

    /// Whether the job has ended.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            JobStatus::Finished | JobStatus::Failed | JobStatus::Canceled
        )
    }
}

/// One vertex (operator) of the job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VertexView {
    /// Its name.
    pub name: String,
    /// Its uid, if set.
    pub uid: Option<String>,
    /// Subtasks in the current attempt.
    pub parallelism: u32,
    /// Records received, over all subtasks and attempts.
    pub records_in: u64,
    /// Records emitted.
    pub records_out: u64,
    /// Records in and out of each subtask (over all attempts).
    pub subtask_records: Vec<(u64, u64)>,
    /// The lowest input watermark of its subtasks, once they have one.
    pub watermark: Option<i64>,
    /// Each subtask's input watermark, once it has one.
    pub subtask_watermarks: Vec<Option<i64>>,
    /// The last watermark each subtask emitted, once it has emitted one.
    pub subtask_output_watermarks: Vec<Option<i64>>,
    /// Late records dropped (Flink's `numLateRecordsDropped`).
    pub late_records_dropped: u64,
    /// For a vertex that heads tasks: each subtask's total time idle
    /// (waiting for input) and back-pressured (waiting for a full output
    /// channel), over all attempts; empty for chained operators.
    pub subtask_times: Vec<(Duration, Duration)>,
    /// Subtasks of the current attempt whose task opened its operators
    /// (Flink's RUNNING; the others are INITIALIZING).
    pub running_subtasks: u32,
}

/// A connection between two vertices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EdgeView {
    /// The producing vertex (its index).
    pub from: usize,
    /// The consuming vertex.
    pub to: usize,
    /// How records are distributed (Flink's ship strategy: `FORWARD`,
    /// `HASH`, `REBALANCE`, `BROADCAST`, …).
    pub ship_strategy: String,
    /// The side output it carries, if any.
    pub side_output: Option<String>,
}

/// A failure the job saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobException {
    /// When, in ms since the epoch.
    pub timestamp_ms: i64,
    /// What happened.
    pub message: String,
}

struct Inner {
    id: JobId,
    name: String,
    start_ms: i64,
    started: Instant,
    cancel: CancelSource,
    savepoints: Option<SavepointHandle>,
    vertices: Vec<(String, Option<String>, Arc<OperatorMetrics>)>,
    /// Edges; `DEFAULT` strategies are resolved by parallelism when read.
    edges: Vec<EdgeView>,
    live: Mutex<Live>,
}

struct Live {
    status: JobStatus,
    end_ms: Option<i64>,
    duration: Option<Duration>,
    parallelism: Vec<u32>,
    /// The statistics of attempts that ended, folded together.
    previous: CheckpointStats,
    /// The current attempt's, shared with its coordinator.
    current: Arc<Mutex<CheckpointStats>>,
    exceptions: Vec<JobException>,
    /// Restarts after failures (Flink's `numRestarts`).
    restarts: u64,
}

/// A view of one job; clones share it.
#[derive(Clone)]
pub struct JobView(Arc<Inner>);

impl std::fmt::Debug for JobView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobView")
            .field("id", &self.0.id)
            .field("name", &self.0.name)
            .finish_non_exhaustive()
    }
}

/// Milliseconds since the epoch, now.
fn now_ms() -> i64 {
    SystemClock.now_ms()
}

impl JobView {
    pub(crate) fn new(
        id: JobId,
        name: &str,
        cancel: CancelSource,
        savepoints: Option<SavepointHandle>,
        vertices: Vec<(String, Option<String>, Arc<OperatorMetrics>)>,
        edges: Vec<EdgeView>,
    ) -> Self {
        JobView(Arc::new(Inner {
            id,
            name: name.to_string(),
            start_ms: now_ms(),
            started: Instant::now(),
            cancel,
            savepoints,
            vertices,
            edges,
            live: Mutex::new(Live {
                status: JobStatus::Running,
                end_ms: None,
                duration: None,
                parallelism: Vec::new(),
                previous: CheckpointStats::default(),
                current: Arc::default(),
                exceptions: Vec::new(),
                restarts: 0,
            }),
        }))
    }

    fn live(&self) -> MutexGuard<'_, Live> {
        // A panic while holding the lock leaves plain data behind: use it.
        self.0.live.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// An attempt was deployed with `parallelism` per vertex; its
    /// coordinator keeps `stats`.
    pub(crate) fn attempt_started(&self, parallelism: &[u32], stats: Arc<Mutex<CheckpointStats>>) {
        let mut live = self.live();
        let ended = std::mem::replace(&mut live.current, stats);
        let ended = ended.lock().map(|s| s.clone()).unwrap_or_default();
        fold(&mut live.previous, &ended);
        live.parallelism = parallelism.to_vec();
        live.status = JobStatus::Running;
    }

    /// The job failed with `message`; `restarting` if it will run again.
    pub(crate) fn failed(&self, message: &str, restarting: bool) {
        let mut live = self.live();
        live.exceptions.push(JobException {
            timestamp_ms: now_ms(),
            message: message.to_string(),
        });
        if restarting {
            live.restarts += 1;
            live.status = JobStatus::Restarting;
        } else {
            self.end(&mut live, JobStatus::Failed);
        }
    }

    /// The job ended with `status`.
    pub(crate) fn ended(&self, status: JobStatus) {
        let mut live = self.live();
        self.end(&mut live, status);
    }

    fn end(&self, live: &mut Live, status: JobStatus) {
        live.status = status;
        live.end_ms = Some(now_ms());
        live.duration = Some(self.0.started.elapsed());
    }

    /// The job's id.
    pub fn id(&self) -> JobId {
        self.0.id
    }

    /// The job's name.
    pub fn name(&self) -> &str {
        &self.0.name
    }

    /// When the job started, in ms since the epoch.
    pub fn start_time_ms(&self) -> i64 {
        self.0.start_ms
    }

    /// When it ended, if it has.
    pub fn end_time_ms(&self) -> Option<i64> {
        self.live().end_ms
    }

    /// How long it has run (until its end, once ended).
    pub fn duration(&self) -> Duration {
        self.live()
            .duration
            .unwrap_or_else(|| self.0.started.elapsed())
    }

    /// Its status.
    pub fn status(&self) -> JobStatus {
        self.live().status
    }

    /// Its vertices, in graph order.
    pub fn vertices(&self) -> Vec<VertexView> {
        let parallelism = self.live().parallelism.clone();
        self.0
            .vertices
            .iter()
            .enumerate()
            .map(|(i, (name, uid, metrics))| VertexView {
                name: name.clone(),
                uid: uid.clone(),
                parallelism: parallelism.get(i).copied().unwrap_or(0),
                records_in: metrics.records_in(),
                records_out: metrics.records_out(),
                subtask_records: metrics.subtask_records(),
                watermark: metrics.watermark().filter(|w| *w != i64::MIN),
                subtask_watermarks: metrics.subtask_watermarks(),
                subtask_output_watermarks: metrics.subtask_output_watermarks(),
                late_records_dropped: metrics.late_records_dropped(),
                subtask_times: metrics
                    .subtask_times()
                    .iter()
                    .map(|t| (t.idle(), t.backpressured()))
                    .collect(),
                running_subtasks: metrics.running_subtasks(),
            })
            .collect()
    }

    /// Each vertex's state store statistics (RocksDB's), by subtask; empty
    /// for vertices without them.
    pub fn store_statistics(&self) -> Vec<Vec<crate::metrics::SubtaskStoreStatistics>> {
        self.0
            .vertices
            .iter()
            .map(|(_, _, m)| m.store_statistics())
            .collect()
    }

    /// Each vertex's counters, in graph order.
    pub(crate) fn operator_metrics(&self) -> Vec<Arc<OperatorMetrics>> {
        self.0
            .vertices
            .iter()
            .map(|(_, _, m)| Arc::clone(m))
            .collect()
    }

    /// Where each vertex's watermark comes from (see
    /// [`diagnosis`](super::diagnosis)).
    pub fn watermark_provenance(&self) -> Vec<super::diagnosis::VertexProvenance> {
        super::diagnosis::provenance(self)
    }

    /// Why its event-time operators wait for their watermark, now.
    pub fn diagnose(&self) -> super::diagnosis::Diagnosis {
        super::diagnosis::diagnose(self)
    }

    /// Its edges, with the default strategy resolved as the runtime
    /// resolves it: forward between equal parallelisms, else rebalance.
    pub fn edges(&self) -> Vec<EdgeView> {
        let parallelism = self.live().parallelism.clone();
        self.0
            .edges
            .iter()
            .map(|e| {
                let mut e = e.clone();
                if e.ship_strategy == "DEFAULT" {
                    let same = parallelism.get(e.from) == parallelism.get(e.to);
                    e.ship_strategy = if same { "FORWARD" } else { "REBALANCE" }.into();
                }
                e
            })
            .collect()
    }

    /// Restarts after failures so far (Flink's `numRestarts`).
    pub fn restarts(&self) -> u64 {
        self.live().restarts
    }

    /// Its checkpoint statistics over all attempts (the restored checkpoint
    /// is the current attempt's).
    pub fn checkpoints(&self) -> CheckpointStats {
        let live = self.live();
        let current = live.current.lock().map(|s| s.clone()).unwrap_or_default();
        let mut all = live.previous.clone();
        fold(&mut all, &current);
        all.restored = current.restored.or(live.previous.restored);
        all
    }

    /// The failures it saw, oldest first.
    pub fn exceptions(&self) -> Vec<JobException> {
        self.live().exceptions.clone()
    }

    /// Takes savepoints of the job (needs checkpointing enabled).
    pub fn savepoints(&self) -> Result<SavepointHandle, JobError> {
        self.0.savepoints.clone().ok_or_else(|| {
            JobError::Savepoint(
                "savepoints need checkpointing enabled (execution.checkpointing.interval)".into(),
            )
        })
    }

    /// Cancels the job.
    pub fn cancel(&self) {
        self.0.cancel.cancel();
    }
}

/// Adds the statistics of a later attempt to `into`.
fn fold(into: &mut CheckpointStats, later: &CheckpointStats) {
    into.completed += later.completed;
    into.failed += later.failed;
    into.aborted += later.aborted;
    if later.latest_completed.is_some() {
        into.latest_completed = later.latest_completed;
        into.latest_location = later.latest_location.clone();
        into.last_size = later.last_size;
        into.last_bytes_written = later.last_bytes_written;
        into.operator_state_sizes = later.operator_state_sizes.clone();
    }
    if later.restored.is_some() {
        into.restored = later.restored;
    }
    if later.failure.is_some() {
        into.failure = later.failure.clone();
    }
    into.max_duration = into.max_duration.max(later.max_duration);
    into.max_size = into.max_size.max(later.max_size);
    into.max_pause = into.max_pause.max(later.max_pause);
    into.bytes_written += later.bytes_written;
    into.history.extend(later.history.iter().cloned());
    while into.history.len() > HISTORY_SIZE {
        into.history.pop_front();
    }
}
