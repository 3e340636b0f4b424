//! What a function knows about where it runs.

use std::time::Duration;

use crate::error::SubtaskName;
use std::sync::Arc;

use crate::metrics::OperatorMetrics;
use crate::time::SharedClock;

/// The runtime context of one parallel instance of an operator (Flink's
/// `RuntimeContext`): which subtask it is, of how many. Keyed state will be
/// reached through it.
#[derive(Debug, Clone)]
pub struct RuntimeContext {
    /// Name of the operator.
    pub operator_name: String,
    /// Name of the task (the chain) the operator runs in.
    pub task_name: String,
    /// 0-based index of this subtask.
    pub subtask_index: u32,
    /// Number of parallel subtasks of the operator.
    pub parallelism: u32,
    /// Number of key groups.
    pub max_parallelism: u32,
    /// How many times the job was restarted before this attempt (0 first).
    pub attempt_number: u32,
    /// The job's processing-time clock.
    pub clock: SharedClock,
    /// Interval of periodic watermark emission; zero disables it.
    pub auto_watermark_interval: Duration,
    /// The operator's counters (shared by its subtasks).
    pub metrics: Arc<OperatorMetrics>,
}

impl RuntimeContext {
    /// `Name (i/n)`, as Flink names a subtask in logs and errors.
    pub fn subtask_name(&self) -> SubtaskName {
        SubtaskName {
            operator: self.operator_name.clone(),
            subtask: self.subtask_index,
            parallelism: self.parallelism,
        }
    }
}
