//! Errors raised while building and running a job.

use std::fmt;

/// The error a user function returns. Any error type converts into it with `?`.
pub type FunctionError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What a user function returns.
pub type FunctionResult<T = ()> = Result<T, FunctionError>;

/// Identifies one parallel instance of an operator, for error messages:
/// `Map (2/4)` as Flink prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubtaskName {
    /// The operator's name.
    pub operator: String,
    /// 0-based subtask index.
    pub subtask: u32,
    /// Parallelism of the operator.
    pub parallelism: u32,
}

impl fmt::Display for SubtaskName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({}/{})",
            self.operator,
            self.subtask + 1,
            self.parallelism
        )
    }
}

/// Why a task stopped before its input ended.
#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    /// A user function returned an error.
    #[error("operator {at} failed: {cause}")]
    Function {
        /// Where it failed.
        at: SubtaskName,
        /// The function's error (in the message, so not also a
        /// `source()`: reports print each cause once).
        cause: FunctionError,
    },
    /// A user function panicked.
    #[error("operator {at} panicked: {message}")]
    Panic {
        /// Where it panicked.
        at: SubtaskName,
        /// The panic message.
        message: String,
    },
    /// The job was cancelled, or another task failed first.
    #[error("task cancelled")]
    Cancelled,
    /// Checkpoints failed in a way the job cannot go on from: more failures
    /// in a row than tolerated, or a final checkpoint (which commits the
    /// last results of exactly-once sinks) that could not be taken.
    #[error("{0}")]
    Checkpoint(String),
    /// A bug in Weir: an invariant of the runtime did not hold.
    #[error("internal error: {0}")]
    Internal(String),
}

impl TaskError {
    /// Wraps a user function's error with where it happened.
    pub fn function(at: &SubtaskName, cause: FunctionError) -> Self {
        TaskError::Function {
            at: at.clone(),
            cause,
        }
    }

    /// Turns a caught panic payload into an error naming where it happened.
    pub fn panic(at: &SubtaskName, payload: Box<dyn std::any::Any + Send>) -> Self {
        let message = if let Some(s) = payload.downcast_ref::<&str>() {
            (*s).to_string()
        } else if let Some(s) = payload.downcast_ref::<String>() {
            s.clone()
        } else {
            "non-string panic payload".to_string()
        };
        TaskError::Panic {
            at: at.clone(),
            message,
        }
    }
}

/// Why a job could not be built or did not finish.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// The job graph is invalid (the user must change the program).
    #[error("invalid job: {0}")]
    InvalidJob(String),
    /// A task failed; the first failure is reported.
    #[error("job failed: {0}")]
    TaskFailed(TaskError),
    /// The job was cancelled through its client.
    #[error("job cancelled")]
    Cancelled,
    /// A bug in Weir: the graph's types or wiring did not fit together.
    #[error("internal error: {0}")]
    Internal(String),
    /// A savepoint could not be taken.
    #[error("savepoint failed: {0}")]
    Savepoint(String),
    /// A task thread could not be started.
    #[error("could not start task thread: {0}")]
    Spawn(std::io::Error),
    /// The checkpoint storage cannot be written (checked before the job
    /// starts).
    #[error("checkpoints cannot be written: {0}")]
    Storage(String),
}
