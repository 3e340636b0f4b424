//! Errors of state access.

/// Why a state operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// Keyed state was used where there is no key (not on a keyed stream,
    /// or outside record processing).
    #[error("keyed state '{0}' is only available on a keyed stream (after key_by)")]
    NotKeyed(String),
    /// The same state name was registered with another kind or type.
    #[error("state '{name}' is already registered as {existing}")]
    Conflict {
        /// The state's name.
        name: String,
        /// What it was registered as.
        existing: String,
    },
    /// A key, namespace or value could not be encoded or decoded.
    #[error("state codec error: {0}")]
    Codec(String),
    /// State bytes carry a format version this build does not read.
    #[error("state value has format version {found}, expected {expected}")]
    Version {
        /// The version found.
        found: u8,
        /// The version this build writes.
        expected: u8,
    },
    /// A path given to restore from is none of the things a checkpoint or
    /// savepoint can be given as.
    #[error(
        "not a checkpoint or savepoint: {0} (expected a savepoint or checkpoint directory \
         holding _metadata, its _metadata file, or a checkpoint directory of jobs: \
         <dir>/<job-id>/chk-<n>)"
    )]
    NotACheckpoint(String),
    /// A checkpoint file failed verification (bad magic, version,
    /// length or checksum).
    #[error("corrupt checkpoint data: {0}")]
    Corrupt(String),
    /// Reading or writing checkpoint files failed.
    #[error("checkpoint I/O on {path}: {cause}")]
    Io {
        /// The file or directory.
        path: String,
        /// The cause (in the message, so not also a `source()`: reports
        /// print each cause once).
        cause: std::io::Error,
    },
    /// A checkpoint location this build cannot use (an unknown scheme, S3
    /// without the `object-store` feature) or an object store that could
    /// not be set up.
    #[error("checkpoint location {0}")]
    Location(String),
    /// A bug in Weir.
    #[error("internal state error: {0}")]
    Internal(String),
}

impl From<postcard::Error> for StateError {
    fn from(e: postcard::Error) -> Self {
        StateError::Codec(e.to_string())
    }
}
