//! Running a job: chaining the graph into tasks, wiring channels, starting
//! one thread per subtask, and collecting the outcome.

mod deploy;
pub mod diagnosis;
mod job;
mod view;

pub use deploy::{execute, JobConfig};
pub use job::{
    JobCancelHandle, JobClient, JobExecutionResult, JobId, OperatorResult, SavepointHandle,
};
pub use view::{EdgeView, JobException, JobStatus, JobView, VertexView};
