//! How a job checkpoints (Flink's `CheckpointConfig`), with Flink's defaults.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use weir_state::file_system::join;
use weir_state::{CheckpointStorage, FsCheckpointStorage, MemoryCheckpointStorage, StateError};

/// The guarantee barriers give (Flink's `CheckpointingMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckpointingMode {
    /// Inputs that delivered barrier `n` are held until every input has, so
    /// a snapshot sees exactly the records before the barrier.
    ExactlyOnce,
    /// No input is held: records after a barrier may reach a snapshot, and
    /// are replayed after a failure (duplicates, never loss).
    AtLeastOnce,
}

/// What happens to the job's checkpoints when it ends (Flink's
/// `ExternalizedCheckpointRetention`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckpointRetention {
    /// Deleted when the job finishes, fails for good, or is cancelled
    /// (Flink's default, `NO_EXTERNALIZED_CHECKPOINTS`).
    NoExternalizedCheckpoints,
    /// Kept when the job is cancelled or fails for good; deleted when it
    /// finishes.
    RetainOnCancellation,
    /// Deleted when the job is cancelled, kept when it fails for good.
    DeleteOnCancellation,
}

/// Where checkpoints are written.
#[derive(Debug, Clone, Default)]
pub enum CheckpointStorageConfig {
    /// In memory (Flink's `jobmanager` storage): survives task failures
    /// inside the process, not the process.
    #[default]
    Memory,
    /// Files under `<dir>/<job-id>/chk-<n>/` (Flink's `filesystem`):
    /// a local path, `file://…`, or an object store (`s3://bucket/prefix`).
    Directory(PathBuf),
    /// A storage the caller made (tests inspect or corrupt it).
    Custom(Arc<dyn CheckpointStorage>),
}

impl CheckpointStorageConfig {
    /// The storage of job `job_id`; fails if the location cannot be used
    /// (an unknown scheme, an object store that cannot be set up).
    pub fn open(&self, job_id: &str) -> Result<Arc<dyn CheckpointStorage>, StateError> {
        Ok(match self {
            CheckpointStorageConfig::Memory => Arc::new(MemoryCheckpointStorage::new()),
            CheckpointStorageConfig::Directory(dir) => Arc::new(FsCheckpointStorage::open(&join(
                &dir.to_string_lossy(),
                job_id,
            ))?),
            CheckpointStorageConfig::Custom(storage) => Arc::clone(storage),
        })
    }
}

/// A job's checkpointing settings. Checkpointing is off until an interval
/// is set.
#[derive(Debug, Clone)]
pub struct CheckpointConfig {
    /// Time between checkpoint triggers; `None` disables checkpointing.
    pub interval: Option<Duration>,
    /// Exactly-once (default) or at-least-once.
    pub mode: CheckpointingMode,
    /// A checkpoint not complete after this long is aborted (10 min).
    pub timeout: Duration,
    /// Least time from the end of one checkpoint to the start of the next (0).
    pub min_pause: Duration,
    /// Checkpoints in flight at once (1; more are not supported yet).
    pub max_concurrent: u32,
    /// Failed checkpoints in a row the job tolerates before it fails (0).
    pub tolerable_failures: u32,
    /// What happens to checkpoints when the job ends.
    pub retention: CheckpointRetention,
    /// Completed checkpoints kept (1).
    pub num_retained: usize,
    /// Where checkpoints go.
    pub storage: CheckpointStorageConfig,
    /// Where savepoints go when none is named
    /// (`execution.checkpointing.savepoint-dir`).
    pub savepoint_dir: Option<PathBuf>,
}

impl Default for CheckpointConfig {
    fn default() -> Self {
        CheckpointConfig {
            interval: None,
            mode: CheckpointingMode::ExactlyOnce,
            timeout: Duration::from_secs(600),
            min_pause: Duration::ZERO,
            max_concurrent: 1,
            tolerable_failures: 0,
            retention: CheckpointRetention::NoExternalizedCheckpoints,
            num_retained: 1,
            storage: CheckpointStorageConfig::Memory,
            savepoint_dir: None,
        }
    }
}

impl CheckpointConfig {
    /// Whether checkpoints are taken.
    pub fn is_enabled(&self) -> bool {
        self.interval.is_some_and(|i| !i.is_zero())
    }
}
