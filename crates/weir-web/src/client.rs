//! The client of a job's REST API, as the `weir` command uses it.

use std::time::Duration;

use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use crate::api::{JobSummary, SavepointStatus, TriggerId};

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// Nothing answered at the address.
    #[error("no Weir REST API at {addr} ({why}); is the job running? (-m HOST:PORT)")]
    Unreachable {
        /// The address tried.
        addr: String,
        /// The transport error.
        why: String,
    },
    /// The server answered with an error.
    #[error("{status}: {message}")]
    Status {
        /// HTTP status.
        status: u16,
        /// The server's message.
        message: String,
    },
    /// The answer was not what the API documents.
    #[error("unexpected answer: {0}")]
    Answer(String),
}

/// A client of the REST API at one `host:port`.
pub struct RestClient {
    base: String,
    addr: String,
    token: Option<String>,
    agent: ureq::Agent,
}

impl RestClient {
    /// A client of `addr` (`host:port`), sending `token` with mutating calls.
    pub fn new(addr: &str, token: Option<String>) -> Self {
        let agent = ureq::AgentBuilder::new()
            .timeout_connect(Duration::from_secs(5))
            .timeout(Duration::from_secs(30))
            .build();
        RestClient {
            base: format!("http://{addr}"),
            addr: addr.to_string(),
            token,
            agent,
        }
    }

    fn call<T: DeserializeOwned>(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> Result<T, ClientError> {
        let mut req = self.agent.request(method, &format!("{}{path}", self.base));
        if let Some(token) = &self.token {
            req = req.set("Authorization", &format!("Bearer {token}"));
        }
        let res = match body {
            Some(b) => req.send_json(b),
            None => req.call(),
        };
        match res {
            Ok(r) => r
                .into_json::<T>()
                .map_err(|e| ClientError::Answer(e.to_string())),
            Err(ureq::Error::Status(status, r)) => {
                let message = r
                    .into_json::<Value>()
                    .ok()
                    .and_then(|v| v["errors"][0].as_str().map(str::to_string))
                    .unwrap_or_else(|| "no message".into());
                Err(ClientError::Status { status, message })
            }
            Err(e) => Err(ClientError::Unreachable {
                addr: self.addr.clone(),
                why: e.to_string(),
            }),
        }
    }

    /// `GET /jobs/:id`: the job's details as the server gives them.
    pub fn job(&self, job: &str) -> Result<Value, ClientError> {
        self.call("GET", &format!("/jobs/{job}"), None)
    }

    /// `GET /jobs/:id/diagnosis`: why the job's event-time operators wait
    /// for their watermark, as text.
    pub fn diagnosis(&self, job: &str) -> Result<String, ClientError> {
        let v: Value = self.call("GET", &format!("/jobs/{job}/diagnosis"), None)?;
        v["text"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| ClientError::Answer("a diagnosis without text".into()))
    }

    /// `GET /jobs/overview`.
    pub fn jobs(&self) -> Result<Vec<JobSummary>, ClientError> {
        let v: Value = self.call("GET", "/jobs/overview", None)?;
        serde_json::from_value(v["jobs"].clone()).map_err(|e| ClientError::Answer(e.to_string()))
    }

    /// `POST /jobs/:id/savepoints`: starts a savepoint (into the job's
    /// default directory without `dir`).
    pub fn trigger_savepoint(&self, job: &str, dir: Option<&str>) -> Result<String, ClientError> {
        let t: TriggerId = self.call(
            "POST",
            &format!("/jobs/{job}/savepoints"),
            Some(json!({ "target-directory": dir, "cancel-job": false })),
        )?;
        Ok(t.request_id)
    }

    /// `POST /jobs/:id/stop`: stops the job with a savepoint.
    pub fn stop(&self, job: &str, dir: Option<&str>, drain: bool) -> Result<String, ClientError> {
        let t: TriggerId = self.call(
            "POST",
            &format!("/jobs/{job}/stop"),
            Some(json!({ "targetDirectory": dir, "drain": drain })),
        )?;
        Ok(t.request_id)
    }

    /// `GET /jobs/:id/savepoints/:trigger`.
    pub fn savepoint_status(
        &self,
        job: &str,
        trigger: &str,
    ) -> Result<SavepointStatus, ClientError> {
        let v: Value = self.call("GET", &format!("/jobs/{job}/savepoints/{trigger}"), None)?;
        match v["status"]["id"].as_str() {
            Some("IN_PROGRESS") => Ok(SavepointStatus::InProgress),
            Some("COMPLETED") => {
                let op = &v["operation"];
                if let Some(location) = op["location"].as_str() {
                    Ok(SavepointStatus::Completed(location.to_string()))
                } else {
                    Ok(SavepointStatus::Failed(
                        op["failure-cause"]["stack-trace"]
                            .as_str()
                            .unwrap_or("unknown failure")
                            .to_string(),
                    ))
                }
            }
            _ => Err(ClientError::Answer(v.to_string())),
        }
    }

    /// `PATCH /jobs/:id?mode=cancel`.
    pub fn cancel(&self, job: &str) -> Result<(), ClientError> {
        let _: Value = self.call("PATCH", &format!("/jobs/{job}?mode=cancel"), None)?;
        Ok(())
    }
}
