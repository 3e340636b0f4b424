//! The error type of the public API.

use std::path::PathBuf;

pub use weir_runtime::error::{FunctionError, FunctionResult, JobError, SubtaskName, TaskError};

/// Everything that can go wrong building or running a job.
///
/// Variants are named for who must act: the user (`Config`, `InvalidJob`),
/// the environment (`Io`), or whatever a running job reports (`Job`).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A configuration key or a command-line argument is invalid.
    #[error("configuration error: {0}")]
    Config(String),
    /// The program builds an invalid job (e.g. a parallelism of 0).
    #[error("invalid job: {0}")]
    InvalidJob(String),
    /// A file could not be read or written.
    #[error("cannot access '{}': {cause}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        cause: std::io::Error,
    },
    /// A checkpoint or savepoint to start from could not be read.
    #[error("cannot restore from '{}': {reason}", path.display())]
    Restore {
        /// The path given.
        path: PathBuf,
        /// What was wrong with it.
        reason: String,
    },
    /// The job failed, was cancelled, or was rejected by the runtime.
    #[error(transparent)]
    Job(#[from] JobError),
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
