//! A running job and its result.

use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use crossbeam_channel::Receiver;

use crate::cancel::CancelSource;
use crate::error::{JobError, TaskError};
use crate::metrics::OperatorMetrics;

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

/// A running job (Flink's `JobClient`).
pub struct JobClient {
    pub(crate) job_id: JobId,
    pub(crate) job_name: String,
    pub(crate) started: Instant,
    pub(crate) cancel: CancelSource,
    pub(crate) results: Receiver<Result<(), TaskError>>,
    pub(crate) threads: Vec<JoinHandle<()>>,
    pub(crate) operators: Vec<OperatorEntry>,
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

    /// Waits for the job to end. The first task failure cancels the rest and
    /// is returned.
    pub fn wait(self) -> Result<JobExecutionResult, JobError> {
        let mut failure: Option<TaskError> = None;
        for _ in 0..self.threads.len() {
            match self.results.recv() {
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
        for thread in self.threads {
            // Each thread reported its result before ending; a join error
            // would mean the reporting itself panicked.
            if thread.join().is_err() && failure.is_none() {
                failure = Some(TaskError::Internal("task thread panicked".into()));
            }
        }
        if let Some(e) = failure {
            return Err(JobError::TaskFailed(e));
        }
        if self.cancel.is_cancelled() {
            return Err(JobError::Cancelled);
        }
        Ok(JobExecutionResult {
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
        })
    }
}
