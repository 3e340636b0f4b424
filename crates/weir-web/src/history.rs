//! The history server (Flink's HistoryServer): the archive directory of
//! ended jobs served read-only on a port of its own, with the same
//! dashboard and the same endpoints as a running job's REST API, answered
//! from each job's archive (see [`archive`]).

use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::Arc;

use axum::extract::State;
use axum::http::{Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::json;

use crate::archive;
use crate::server::RestError;

/// Serves `dir` on `listener` until the process ends.
pub fn serve(listener: TcpListener, dir: PathBuf) -> Result<(), RestError> {
    listener.set_nonblocking(true).map_err(RestError::Start)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .map_err(RestError::Start)?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(listener).map_err(RestError::Start)?;
        axum::serve(listener, router(Arc::new(dir)))
            .await
            .map_err(RestError::Start)
    })
}

/// Binds `addr` (loopback unless the caller decided otherwise).
pub fn bind(addr: SocketAddr) -> Result<TcpListener, RestError> {
    TcpListener::bind(addr).map_err(|cause| RestError::Bind { addr, cause })
}

type Dir = State<Arc<PathBuf>>;

fn router(dir: Arc<PathBuf>) -> Router {
    Router::new()
        .route("/", get(crate::server::dashboard))
        .route("/config", get(config))
        .route("/overview", get(overview))
        .route("/jobs", get(jobs))
        .route("/jobs/overview", get(jobs_overview))
        .fallback(lookup)
        .with_state(dir)
}

fn failure(status: StatusCode, message: String) -> Response {
    (status, Json(json!({ "errors": [message] }))).into_response()
}

/// Answers with `answer` of the archived jobs, or the error reading them.
fn with_jobs(dir: &Dir, answer: impl FnOnce(Vec<crate::JobSummary>) -> Response) -> Response {
    match archive::list(dir) {
        Ok(jobs) => answer(jobs),
        Err(e) => failure(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

async fn config() -> Response {
    Json(json!({
        "refresh-interval": 10000,
        "timezone-name": "UTC",
        "timezone-offset": 0,
        "weir-version": env!("CARGO_PKG_VERSION"),
        "features": { "web-submit": false, "web-cancel": false, "web-history": true },
        "configuration": {},
    }))
    .into_response()
}

async fn overview(dir: Dir) -> Response {
    with_jobs(&dir, |jobs| {
        let count = |state: &str| jobs.iter().filter(|j| j.state == state).count();
        Json(json!({
            "taskmanagers": 0,
            "slots-total": 0,
            "jobs-running": 0,
            "jobs-finished": count("FINISHED"),
            "jobs-cancelled": count("CANCELED"),
            "jobs-failed": count("FAILED"),
            "weir-version": env!("CARGO_PKG_VERSION"),
        }))
        .into_response()
    })
}

async fn jobs(dir: Dir) -> Response {
    with_jobs(&dir, |jobs| {
        let ids: Vec<_> = jobs
            .iter()
            .map(|j| json!({ "id": j.jid, "status": j.state }))
            .collect();
        Json(json!({ "jobs": ids })).into_response()
    })
}

async fn jobs_overview(dir: Dir) -> Response {
    with_jobs(&dir, |jobs| Json(json!({ "jobs": jobs })).into_response())
}

/// Any other `/jobs/:id/…` path, from job `id`'s archive.
async fn lookup(dir: Dir, method: Method, uri: Uri) -> Response {
    if method != Method::GET {
        return failure(
            StatusCode::METHOD_NOT_ALLOWED,
            format!("{method}: the history server is read-only"),
        );
    }
    let path = uri.path().trim_end_matches('/');
    let Some(job_id) = path
        .strip_prefix("/jobs/")
        .and_then(|p| p.split('/').next())
    else {
        return failure(StatusCode::NOT_FOUND, format!("{path}: no such endpoint"));
    };
    match archive::read(&dir, job_id) {
        Ok(Some(archive)) => match archive.answer(path) {
            Some(answer) => Json(answer).into_response(),
            None => failure(
                StatusCode::NOT_FOUND,
                format!("{path}: not in job {job_id}'s archive"),
            ),
        },
        Ok(None) => failure(
            StatusCode::NOT_FOUND,
            format!("Job {job_id} not found in the archive"),
        ),
        Err(e) => failure(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}
