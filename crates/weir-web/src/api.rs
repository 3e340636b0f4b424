//! The JSON the server writes and the client reads, where both need the
//! same shape (the rest of the responses are built field by field).

use serde::{Deserialize, Serialize};

/// One job in `GET /jobs/overview`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobSummary {
    /// The job id (32 hex digits).
    pub jid: String,
    /// Its name.
    pub name: String,
    /// Its status (`RUNNING`, `FINISHED`, …).
    pub state: String,
    /// Start time, ms since the epoch.
    #[serde(rename = "start-time")]
    pub start_time: i64,
    /// End time, or -1 while it runs.
    #[serde(rename = "end-time")]
    pub end_time: i64,
    /// Run time so far, in ms.
    pub duration: i64,
}

/// The answer to a savepoint or stop request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TriggerId {
    /// The id to ask `GET /jobs/:id/savepoints/:trigger` with.
    #[serde(rename = "request-id")]
    pub request_id: String,
}

/// Where a savepoint request is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SavepointStatus {
    /// Still being taken.
    InProgress,
    /// Taken, at this location.
    Completed(String),
    /// Failed, for this reason.
    Failed(String),
}
