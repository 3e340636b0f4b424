//! The REST API of a running Weir job, shaped like Flink's (`/overview`,
//! `/jobs`, `/jobs/:id`, checkpoints, exceptions, savepoints, stop,
//! cancel), and the client the `weir` command uses to speak to it.
//!
//! The server runs on its own thread with a single-threaded async runtime,
//! never on a task thread: it reads the runtime's [`JobView`] and asks it
//! for savepoints, stops and cancellations.
//!
//! [`JobView`]: weir_runtime::cluster::JobView

mod api;
pub mod archive;
mod client;
pub mod history;
mod metrics;
mod server;

pub use api::{JobSummary, SavepointStatus, TriggerId};
pub use client::{ClientError, RestClient};
pub use server::{RestConfig, RestError, RestListener, RestServer, DEFAULT_PORT};
