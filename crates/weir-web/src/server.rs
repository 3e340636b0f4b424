//! The server: binding, the token check, and one handler per endpoint.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};
use weir_runtime::checkpoint::CheckpointStats;
use weir_runtime::cluster::{JobStatus, JobView, VertexView};

use crate::api::{JobSummary, SavepointStatus, TriggerId};
use crate::archive::ArchiveError;

/// The port Flink's REST API uses, and ours unless configured.
pub const DEFAULT_PORT: u16 = 8081;

/// Where and how the server listens.
#[derive(Debug, Clone)]
pub struct RestConfig {
    /// Address to bind (default 127.0.0.1).
    pub bind_address: String,
    /// Port; 0 picks a free one.
    pub port: u16,
    /// Bearer token every mutating call must carry; required to bind
    /// beyond loopback.
    pub token: Option<String>,
    /// Where the job's REST answers are archived when it ends (see
    /// [`archive`](crate::archive)); `None`: not archived.
    pub archive_dir: Option<PathBuf>,
}

impl Default for RestConfig {
    fn default() -> Self {
        RestConfig {
            bind_address: Ipv4Addr::LOCALHOST.to_string(),
            port: DEFAULT_PORT,
            token: None,
            archive_dir: None,
        }
    }
}

/// Why the server did not start.
#[derive(Debug, thiserror::Error)]
pub enum RestError {
    /// The address is not an IP address or `localhost`.
    #[error("rest.bind-address '{0}' is not an IP address")]
    Address(String),
    /// Binding beyond loopback without a token.
    #[error(
        "the REST API binds to {0}, beyond loopback: set weir.rest.token so that \
         calls that change the job must carry it"
    )]
    TokenRequired(String),
    /// The port is taken (or binding failed otherwise).
    #[error("cannot bind the REST API to {addr}: {cause}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        cause: std::io::Error,
    },
    /// The server thread could not start.
    #[error("cannot start the REST server: {0}")]
    Start(std::io::Error),
}

/// A running server; dropping it stops it.
pub struct RestServer {
    addr: SocketAddr,
    state: Arc<AppState>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for RestServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RestServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

/// A bound, not yet serving, listener: binding comes first, before the
/// job starts, so that a port in use or a bad address fails the job before
/// any record flows.
#[derive(Debug)]
pub struct RestListener {
    listener: TcpListener,
    token: Option<String>,
    archive_dir: Option<PathBuf>,
}

impl RestListener {
    /// Checks the address and the token rule and binds the port.
    pub fn bind(config: &RestConfig) -> Result<RestListener, RestError> {
        let ip: IpAddr = match config.bind_address.as_str() {
            "localhost" => Ipv4Addr::LOCALHOST.into(),
            other => other
                .parse()
                .map_err(|_| RestError::Address(other.to_string()))?,
        };
        let token = config.token.clone().filter(|t| !t.is_empty());
        if !ip.is_loopback() && token.is_none() {
            return Err(RestError::TokenRequired(ip.to_string()));
        }
        let wanted = SocketAddr::new(ip, config.port);
        let listener = TcpListener::bind(wanted).map_err(|cause| RestError::Bind {
            addr: wanted,
            cause,
        })?;
        Ok(RestListener {
            listener,
            token,
            archive_dir: config.archive_dir.clone(),
        })
    }

    /// The address it is bound to (the port, if 0 was asked for).
    pub fn local_addr(&self) -> Result<SocketAddr, RestError> {
        self.listener.local_addr().map_err(RestError::Start)
    }
}

impl RestServer {
    /// Binds (synchronously, so a port in use is an error here) and serves
    /// `job`'s API; `settings` is the configuration `GET /config` shows.
    pub fn start(
        config: &RestConfig,
        job: JobView,
        settings: Vec<(String, String)>,
    ) -> Result<RestServer, RestError> {
        Self::serve(RestListener::bind(config)?, job, settings)
    }

    /// Serves `job`'s API on a listener bound earlier.
    pub fn serve(
        bound: RestListener,
        job: JobView,
        settings: Vec<(String, String)>,
    ) -> Result<RestServer, RestError> {
        let RestListener {
            listener,
            token,
            archive_dir,
        } = bound;
        let addr = listener.local_addr().map_err(RestError::Start)?;
        listener.set_nonblocking(true).map_err(RestError::Start)?;
        let state = Arc::new(AppState {
            job,
            archive_dir,
            token,
            settings,
            triggers: Mutex::new(HashMap::new()),
            rates: crate::metrics::Rates::default(),
        });
        let served_state = Arc::clone(&state);
        let (shutdown, stopped) = tokio::sync::oneshot::channel::<()>();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .map_err(RestError::Start)?;
        let thread = std::thread::Builder::new()
            .name("rest-api".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                        return;
                    };
                    // Rates (records and task times per second) come from
                    // totals sampled every second while the API is up.
                    let sampled = Arc::clone(&served_state);
                    tokio::spawn(async move {
                        let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
                        loop {
                            tick.tick().await;
                            sampled.rates.sample(&sampled.job);
                        }
                    });
                    let served = axum::serve(listener, router(served_state))
                        .with_graceful_shutdown(async {
                            let _ = stopped.await;
                        })
                        .await;
                    if let Err(e) = served {
                        tracing::error!("REST API stopped: {e}");
                    }
                });
            })
            .map_err(RestError::Start)?;
        Ok(RestServer {
            addr,
            state,
            shutdown: Some(shutdown),
            thread: Some(thread),
        })
    }

    /// The address it listens on (the port, if 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for RestServer {
    fn drop(&mut self) {
        // A savepoint that stopped the job completes just before the job
        // ends: give its requester a few seconds to read where it is.
        for _ in 0..50 {
            let unread = self
                .state
                .triggers
                .lock()
                .map(|t| {
                    t.values()
                        .any(|(s, read)| !read && *s != SavepointStatus::InProgress)
                })
                .unwrap_or(false);
            if !unread {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        // The job ended: its answers stay readable in the archive.
        if let Some(dir) = &self.state.archive_dir {
            match archive_answers(&self.state)
                .and_then(|a| crate::archive::write(dir, &self.state.job.id().to_string(), &a))
            {
                Ok(path) => tracing::info!(
                    job_id = %self.state.job.id(),
                    path = %path.display(),
                    "job {} archived to {}",
                    self.state.job.id(),
                    path.display()
                ),
                Err(e) => tracing::warn!(
                    job_id = %self.state.job.id(),
                    error = %e,
                    "job {} could not be archived: {e}",
                    self.state.job.id()
                ),
            }
        }
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The job's REST answers as the archive keeps them: every read-only
/// endpoint a dashboard or `weir` uses, asked of the router itself.
fn archive_answers(state: &Arc<AppState>) -> Result<crate::archive::JobArchive, ArchiveError> {
    let id = state.job.id().to_string();
    let mut paths = vec![
        "/jobs/overview".to_string(),
        format!("/jobs/{id}"),
        format!("/jobs/{id}/plan"),
        format!("/jobs/{id}/config"),
        format!("/jobs/{id}/checkpoints"),
        format!("/jobs/{id}/exceptions"),
        format!("/jobs/{id}/diagnosis"),
    ];
    for v in 0..state.job.vertices().len() {
        for what in ["metrics", "watermarks", "backpressure"] {
            paths.push(format!("/jobs/{id}/vertices/{v}/{what}"));
        }
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .map_err(|cause| ArchiveError::Io {
            path: PathBuf::from("(runtime)"),
            cause,
        })?;
    let router = router(Arc::clone(state));
    let mut archive = crate::archive::JobArchive::default();
    for path in paths {
        // A vertex's metrics are archived with their values, all of them.
        let uri = if path.ends_with("/metrics") {
            let ids = runtime.block_on(answer(&router, &path));
            let all: Vec<String> = ids
                .as_ref()
                .and_then(|v| v.as_array().cloned())
                .unwrap_or_default()
                .iter()
                .filter_map(|m| m["id"].as_str().map(str::to_string))
                .collect();
            format!("{path}?get={}", all.join(","))
        } else {
            path.clone()
        };
        if let Some(json) = runtime.block_on(answer(&router, &uri)) {
            archive.archive.push(crate::archive::ArchivedAnswer {
                path,
                json: json.to_string(),
            });
        }
    }
    Ok(archive)
}

/// The JSON `router` answers to `GET uri`, if it succeeds.
async fn answer(router: &Router, uri: &str) -> Option<Value> {
    use tower::ServiceExt;

    let request = axum::http::Request::get(uri)
        .body(axum::body::Body::empty())
        .ok()?;
    let response = router.clone().oneshot(request).await.ok()?;
    if !response.status().is_success() {
        return None;
    }
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}

struct AppState {
    job: JobView,
    archive_dir: Option<PathBuf>,
    token: Option<String>,
    settings: Vec<(String, String)>,
    /// Savepoint requests by id, and whether their outcome was read.
    triggers: Mutex<HashMap<String, (SavepointStatus, bool)>>,
    /// Recent totals, for per-second rates.
    rates: crate::metrics::Rates,
}

type Shared = State<Arc<AppState>>;

fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/", get(dashboard))
        .route("/overview", get(overview))
        .route("/config", get(config))
        .route("/jobs", get(jobs))
        .route("/jobs/overview", get(jobs_overview))
        .route("/jobs/{id}", get(job).patch(cancel))
        .route("/jobs/{id}/plan", get(job_plan))
        .route("/jobs/{id}/config", get(job_config))
        .route("/jobs/{id}/checkpoints", get(checkpoints))
        .route("/jobs/{id}/exceptions", get(exceptions))
        .route("/jobs/{id}/savepoints", post(trigger_savepoint))
        .route("/jobs/{id}/savepoints/{trigger}", get(savepoint_status))
        .route("/jobs/{id}/stop", post(stop))
        .route("/jobs/{id}/diagnosis", get(diagnosis))
        .route("/metrics", get(metrics))
        .route("/jobs/{id}/vertices/{vid}", get(vertex_detail))
        .route("/jobs/{id}/vertices/{vid}/metrics", get(vertex_metrics))
        .route(
            "/jobs/{id}/vertices/{vid}/watermarks",
            get(vertex_watermarks),
        )
        .route(
            "/jobs/{id}/vertices/{vid}/backpressure",
            get(vertex_backpressure),
        )
        .fallback(|method: Method| async move {
            error(StatusCode::NOT_FOUND, format!("{method}: no such endpoint"))
        })
        .with_state(state)
}

/// A failed call, answered Flink's way: `{"errors": [message]}`.
struct ApiError {
    status: StatusCode,
    message: String,
}

fn error(status: StatusCode, message: impl Into<String>) -> ApiError {
    ApiError {
        status,
        message: message.into(),
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(json!({ "errors": [self.message] }))).into_response()
    }
}

type Answer = Result<Response, ApiError>;

impl AppState {
    /// The job, if `id` names it.
    fn job(&self, id: &str) -> Result<&JobView, ApiError> {
        if id.eq_ignore_ascii_case(&self.job.id().to_string()) {
            Ok(&self.job)
        } else {
            Err(error(StatusCode::NOT_FOUND, format!("Job {id} not found")))
        }
    }

    /// Refuses a mutating call without the configured token.
    fn authorise(&self, headers: &HeaderMap) -> Result<(), ApiError> {
        let Some(token) = &self.token else {
            return Ok(());
        };
        let given = headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        if given == Some(token.as_str()) {
            Ok(())
        } else {
            Err(error(
                StatusCode::UNAUTHORIZED,
                "this call needs 'Authorization: Bearer <weir.rest.token>'",
            ))
        }
    }
}

/// `body` as `T`; an empty body is `T::default()`.
fn parse_body<T: DeserializeOwned + Default>(body: &Bytes) -> Result<T, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    serde_json::from_slice(body).map_err(|e| {
        error(
            StatusCode::BAD_REQUEST,
            format!("malformed request body: {e}"),
        )
    })
}

fn summary(job: &JobView) -> JobSummary {
    JobSummary {
        jid: job.id().to_string(),
        name: job.name().to_string(),
        state: job.status().as_str().to_string(),
        start_time: job.start_time_ms(),
        end_time: job.end_time_ms().unwrap_or(-1),
        duration: job.duration().as_millis() as i64,
    }
}

/// The web dashboard: one page, embedded in the binary, that reads the
/// endpoints below (no assets from elsewhere: it works offline).
pub(crate) async fn dashboard() -> Response {
    axum::response::Html(include_str!("../assets/dashboard.html")).into_response()
}

async fn overview(State(s): Shared) -> Response {
    let status = s.job.status();
    let count = |st: JobStatus| u32::from(status == st);
    Json(json!({
        "taskmanagers": 1,
        "slots-total": s.job.vertices().iter().map(|v| v.parallelism).max().unwrap_or(0),
        "jobs-running": u32::from(!status.is_terminal()),
        "jobs-finished": count(JobStatus::Finished),
        "jobs-cancelled": count(JobStatus::Canceled),
        "jobs-failed": count(JobStatus::Failed),
        "weir-version": env!("CARGO_PKG_VERSION"),
    }))
    .into_response()
}

async fn config(State(s): Shared) -> Response {
    let settings: serde_json::Map<String, Value> = s
        .settings
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    Json(json!({
        "refresh-interval": 3000,
        "timezone-name": "UTC",
        "timezone-offset": 0,
        "weir-version": env!("CARGO_PKG_VERSION"),
        "features": { "web-submit": false, "web-cancel": true },
        "configuration": settings,
    }))
    .into_response()
}

/// Flink's `/jobs/:id/config`: the job's settings as `user-config`.
async fn job_config(State(s): Shared, Path(id): Path<String>) -> Answer {
    let job = s.job(&id)?;
    let settings: serde_json::Map<String, Value> = s
        .settings
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    Ok(Json(json!({
        "jid": job.id().to_string(),
        "name": job.name(),
        "execution-config": { "user-config": settings },
    }))
    .into_response())
}

async fn jobs(State(s): Shared) -> Response {
    Json(json!({
        "jobs": [{ "id": s.job.id().to_string(), "status": s.job.status().as_str() }]
    }))
    .into_response()
}

async fn jobs_overview(State(s): Shared) -> Response {
    Json(json!({ "jobs": [summary(&s.job)] })).into_response()
}

async fn job(State(s): Shared, Path(id): Path<String>) -> Answer {
    let job = s.job(&id)?;
    let sum = summary(job);
    let vertices: Vec<Value> = job
        .vertices()
        .iter()
        .enumerate()
        .map(|(i, v)| {
            // Flink's vertex status: INITIALIZING until every subtask
            // opened its operators.
            let status = match sum.state.as_str() {
                "RUNNING" if v.running_subtasks < v.parallelism => "INITIALIZING",
                state => state,
            };
            json!({
                "id": format!("{i}"),
                "name": v.name,
                "uid": v.uid,
                "parallelism": v.parallelism,
                "status": status,
                "tasks": {
                    "RUNNING": v.running_subtasks.min(v.parallelism),
                    "INITIALIZING": v.parallelism.saturating_sub(v.running_subtasks),
                },
                "metrics": {
                    "read-records": v.records_in,
                    "write-records": v.records_out,
                },
                "watermark": v.watermark,
            })
        })
        .collect();
    Ok(Json(json!({
        "jid": sum.jid,
        "name": sum.name,
        "state": sum.state,
        "start-time": sum.start_time,
        "end-time": sum.end_time,
        "duration": sum.duration,
        "now": now_ms(),
        "vertices": vertices,
        "plan": plan(job),
    }))
    .into_response())
}

/// The job graph in the shape of Flink's `plan`: each node with its
/// inputs, their producing node and ship strategy.
fn plan(job: &JobView) -> Value {
    let edges = job.edges();
    let nodes: Vec<Value> = job
        .vertices()
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let inputs: Vec<Value> = edges
                .iter()
                .filter(|e| e.to == i)
                .enumerate()
                .map(|(num, e)| {
                    json!({
                        "num": num,
                        "id": e.from.to_string(),
                        "ship_strategy": e.ship_strategy,
                        "exchange": "pipelined_bounded",
                        "side_output": e.side_output,
                    })
                })
                .collect();
            json!({
                "id": i.to_string(),
                "parallelism": v.parallelism,
                "operator": "",
                "operator_strategy": "",
                "description": v.name,
                "inputs": inputs,
            })
        })
        .collect();
    json!({ "jid": job.id().to_string(), "name": job.name(), "type": "STREAMING", "nodes": nodes })
}

/// Flink's `/jobs/:id/plan`.
async fn job_plan(State(s): Shared, Path(id): Path<String>) -> Answer {
    let job = s.job(&id)?;
    Ok(Json(json!({ "plan": plan(job) })).into_response())
}

fn now_ms() -> i64 {
    use weir_runtime::time::Clock;
    weir_runtime::time::SystemClock.now_ms()
}

fn history_entry(r: &weir_runtime::checkpoint::CheckpointRecord) -> Value {
    json!({
        "id": r.id,
        "status": if r.failure.is_some() { "FAILED" } else { "COMPLETED" },
        "is_savepoint": r.savepoint,
        "trigger_timestamp": r.trigger_timestamp_ms,
        "end_to_end_duration": r.duration.as_millis() as u64,
        "state_size": r.state_size,
        "sync_duration": r.max_pause.as_millis() as u64,
        "alignment_duration": r.max_alignment.as_millis() as u64,
        "external_path": r.location,
        "failure_message": r.failure,
    })
}

impl AppState {
    /// Vertex `vid` (its index, as `/jobs/:id` lists it) of job `id`.
    fn vertex(&self, id: &str, vid: &str) -> Result<(usize, VertexView), ApiError> {
        let job = self.job(id)?;
        vid.parse::<usize>()
            .ok()
            .and_then(|i| Some((i, job.vertices().into_iter().nth(i)?)))
            .ok_or_else(|| error(StatusCode::NOT_FOUND, format!("Vertex {vid} not found")))
    }
}

/// A vertex's metrics by Flink's ids: their names without `get`, else
/// `[{"id", "value"}]` of those asked for (values as strings, as Flink
/// answers); an unknown id is left out, as Flink does.
async fn vertex_metrics(
    State(s): Shared,
    Path((id, vid)): Path<(String, String)>,
    Query(query): Query<HashMap<String, String>>,
) -> Answer {
    let (index, v) = s.vertex(&id, &vid)?;
    let mut metrics: Vec<(String, String)> = vec![
        ("numRecordsIn".into(), v.records_in.to_string()),
        ("numRecordsOut".into(), v.records_out.to_string()),
        (
            "numLateRecordsDropped".into(),
            v.late_records_dropped.to_string(),
        ),
    ];
    for (subtask, (records_in, records_out)) in v.subtask_records.iter().enumerate() {
        metrics.push((format!("{subtask}.numRecordsIn"), records_in.to_string()));
        metrics.push((format!("{subtask}.numRecordsOut"), records_out.to_string()));
    }
    let now = now_ms();
    for (subtask, w) in v.subtask_watermarks.iter().enumerate() {
        if let Some(w) = w {
            metrics.push((format!("{subtask}.currentInputWatermark"), w.to_string()));
            metrics.push((
                format!("{subtask}.watermarkLag"),
                now.saturating_sub(*w).to_string(),
            ));
        }
    }
    for (subtask, w) in v.subtask_output_watermarks.iter().enumerate() {
        if let Some(w) = w {
            metrics.push((format!("{subtask}.currentOutputWatermark"), w.to_string()));
        }
    }
    if let Some(size) = s.job.checkpoints().operator_state_sizes.get(index) {
        metrics.push(("stateSize".into(), size.to_string()));
    }
    if let Some(r) = s.rates.per_second().get(index) {
        metrics.push(("numRecordsInPerSecond".into(), r.records_in.to_string()));
        metrics.push(("numRecordsOutPerSecond".into(), r.records_out.to_string()));
        for (subtask, t) in r.subtasks.iter().enumerate() {
            metrics.push((format!("{subtask}.busyTimeMsPerSecond"), t.busy.to_string()));
            metrics.push((
                format!("{subtask}.backPressuredTimeMsPerSecond"),
                t.backpressured.to_string(),
            ));
            metrics.push((format!("{subtask}.idleTimeMsPerSecond"), t.idle.to_string()));
        }
    }
    let Some(wanted) = query.get("get") else {
        let ids: Vec<Value> = metrics.iter().map(|(id, _)| json!({ "id": id })).collect();
        return Ok(Json(ids).into_response());
    };
    let wanted: Vec<&str> = wanted.split(',').map(str::trim).collect();
    let values: Vec<Value> = metrics
        .iter()
        .filter(|(id, _)| wanted.contains(&id.as_str()))
        .map(|(id, value)| json!({ "id": id, "value": value }))
        .collect();
    Ok(Json(values).into_response())
}

/// Flink's `/jobs/:id/vertices/:vid`: the vertex with each subtask's
/// status, records in and out, input watermark and waiting times.
async fn vertex_detail(State(s): Shared, Path((id, vid)): Path<(String, String)>) -> Answer {
    let (index, v) = s.vertex(&id, &vid)?;
    let job_state = s.job.status().as_str();
    let rates = s.rates.per_second();
    let times = rates
        .get(index)
        .map(|r| r.subtasks.clone())
        .unwrap_or_default();
    let subtasks: Vec<Value> = (0..v.parallelism as usize)
        .map(|i| {
            let (records_in, records_out) = v.subtask_records.get(i).copied().unwrap_or((0, 0));
            let status = match job_state {
                "RUNNING" if (i as u32) >= v.running_subtasks => "INITIALIZING",
                state => state,
            };
            json!({
                "subtask": i,
                "status": status,
                "metrics": { "read-records": records_in, "write-records": records_out },
                "watermark": v.subtask_watermarks.get(i).copied().flatten(),
                "busy-time-ms-per-second": times.get(i).map(|t| t.busy),
                "backpressured-time-ms-per-second": times.get(i).map(|t| t.backpressured),
                "idle-time-ms-per-second": times.get(i).map(|t| t.idle),
            })
        })
        .collect();
    Ok(Json(json!({
        "id": index.to_string(),
        "name": v.name,
        "parallelism": v.parallelism,
        "now": now_ms(),
        "subtasks": subtasks,
    }))
    .into_response())
}

/// Each subtask's input watermark, as Flink's
/// `/jobs/:id/vertices/:vid/watermarks` answers.
async fn vertex_watermarks(State(s): Shared, Path((id, vid)): Path<(String, String)>) -> Answer {
    let (_, v) = s.vertex(&id, &vid)?;
    let watermarks: Vec<Value> = v
        .subtask_watermarks
        .iter()
        .enumerate()
        .map(|(subtask, w)| {
            json!({
                "id": format!("{subtask}.currentInputWatermark"),
                "value": w.unwrap_or(i64::MIN).to_string(),
            })
        })
        .collect();
    Ok(Json(watermarks).into_response())
}

/// A watermark as JSON: `null` before the first.
fn watermark_json(w: i64) -> Value {
    if w == i64::MIN {
        Value::Null
    } else {
        json!(w)
    }
}

/// "Why is there no output?": which input holds each waiting event-time
/// subtask's watermark back, down to the source split; and the provenance
/// it was read from, per vertex and subtask.
async fn diagnosis(State(s): Shared, Path(id): Path<String>) -> Answer {
    let job = s.job(&id)?;
    let names: Vec<String> = job.vertices().into_iter().map(|v| v.name).collect();
    let diagnosis = job.diagnose();
    let findings: Vec<Value> = diagnosis
        .findings
        .iter()
        .map(|f| {
            json!({
                "vertex": f.vertex.to_string(),
                "vertex-name": names.get(f.vertex),
                "subtask": f.subtask,
                "text": f.text,
                "culprit": f.culprit.as_ref().map(|(v, s, split)| json!({
                    "vertex": v.to_string(),
                    "vertex-name": names.get(*v),
                    "subtask": s,
                    "split": split,
                })),
            })
        })
        .collect();
    let vertices: Vec<Value> = job
        .watermark_provenance()
        .iter()
        .enumerate()
        .map(|(v, p)| {
            let subtasks: Vec<Value> = p
                .subtasks
                .iter()
                .enumerate()
                .map(|(i, sub)| {
                    let inputs: Vec<Vec<Value>> = sub
                        .inputs
                        .iter()
                        .map(|channels| {
                            channels
                                .iter()
                                .map(|c| {
                                    json!({
                                        "upstream-vertex": c.upstream_vertex.to_string(),
                                        "upstream-subtask": c.upstream_subtask,
                                        "watermark": watermark_json(c.watermark),
                                        "idle": c.idle,
                                        "ended": c.ended,
                                        "last-advanced": c.advanced_ms,
                                    })
                                })
                                .collect()
                        })
                        .collect();
                    json!({
                        "subtask": i,
                        "input-watermark": sub.input_watermark,
                        "pending-timers": sub.timers.map(|(n, _)| n),
                        "earliest-timer": sub.timers.and_then(|(_, e)| e),
                        "inputs": inputs,
                        "source": sub.source.as_ref().map(|src| json!({
                            "watermark": watermark_json(src.watermark),
                            "idle": src.idle,
                            "last-advanced": src.advanced_ms,
                            "last-record": src.last_record_ms,
                            "splits": src.splits.iter().map(|sp| json!({
                                "name": sp.name,
                                "watermark": watermark_json(sp.watermark),
                                "idle": sp.idle,
                                "finished": sp.finished,
                                "last-record": sp.last_record_ms,
                            })).collect::<Vec<_>>(),
                        })),
                    })
                })
                .collect();
            json!({
                "id": v.to_string(),
                "name": names.get(v),
                "task-head": p.task_head.to_string(),
                "late-records-dropped": p.late_records_dropped,
                "subtasks": subtasks,
            })
        })
        .collect();
    Ok(Json(json!({
        "now": now_ms(),
        "findings": findings,
        "notes": diagnosis.notes,
        "text": diagnosis.to_text(),
        "vertices": vertices,
    }))
    .into_response())
}

/// Flink's back-pressure levels by the share of time a task waited for a
/// full output channel.
fn backpressure_level(ratio: f64) -> &'static str {
    if ratio <= 0.10 {
        "ok"
    } else if ratio <= 0.5 {
        "low"
    } else {
        "high"
    }
}

/// Back-pressure of a vertex's tasks over the recent window, in Flink's
/// shape; `"status": "deprecated"` for a vertex chained behind another
/// (its task is reported on the head) and `"in-progress"` until rates
/// exist.
async fn vertex_backpressure(State(s): Shared, Path((id, vid)): Path<(String, String)>) -> Answer {
    let (index, v) = s.vertex(&id, &vid)?;
    if v.subtask_times.is_empty() {
        return Ok(Json(json!({ "status": "deprecated" })).into_response());
    }
    let Some(rates) = s.rates.per_second().get(index).cloned() else {
        return Ok(Json(json!({ "status": "in-progress" })).into_response());
    };
    let subtasks: Vec<Value> = rates
        .subtasks
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let ratio = t.backpressured / 1000.0;
            json!({
                "subtask": i,
                "backpressureLevel": backpressure_level(ratio),
                "ratio": ratio,
                "idleRatio": t.idle / 1000.0,
                "busyRatio": t.busy / 1000.0,
            })
        })
        .collect();
    let worst = rates
        .subtasks
        .iter()
        .map(|t| t.backpressured / 1000.0)
        .fold(0.0, f64::max);
    Ok(Json(json!({
        "status": "ok",
        "backpressureLevel": backpressure_level(worst),
        "end-timestamp": now_ms(),
        "subtasks": subtasks,
    }))
    .into_response())
}

/// The job's metrics for Prometheus ([`crate::metrics`]).
async fn metrics(State(s): Shared) -> Answer {
    let text = crate::metrics::render(&s.job, &s.rates).map_err(|e| {
        error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot encode the metrics: {e}"),
        )
    })?;
    Ok((
        [(
            axum::http::header::CONTENT_TYPE,
            crate::metrics::CONTENT_TYPE,
        )],
        text,
    )
        .into_response())
}

async fn checkpoints(State(s): Shared, Path(id): Path<String>) -> Answer {
    let job = s.job(&id)?;
    let c: CheckpointStats = job.checkpoints();
    let latest_completed = c
        .history
        .iter()
        .rev()
        .find(|r| r.failure.is_none() && !r.savepoint);
    let latest_savepoint = c
        .history
        .iter()
        .rev()
        .find(|r| r.failure.is_none() && r.savepoint);
    let latest_failed = c.history.iter().rev().find(|r| r.failure.is_some());
    Ok(Json(json!({
        "counts": {
            "restored": u32::from(c.restored.is_some()),
            "total": c.completed + c.failed + c.aborted,
            "in_progress": 0,
            "completed": c.completed,
            "failed": c.failed + c.aborted,
        },
        "summary": {
            "state_size": { "max": c.max_size },
            "end_to_end_duration": { "max": c.max_duration.as_millis() as u64 },
            "sync_duration": { "max": c.max_pause.as_millis() as u64 },
        },
        "latest": {
            "completed": latest_completed.map(history_entry).or_else(|| c.latest_completed.map(|id| json!({
                "id": id,
                "status": "COMPLETED",
                "external_path": c.latest_location,
                "state_size": c.last_size,
            }))),
            "savepoint": latest_savepoint.map(history_entry),
            "failed": latest_failed.map(history_entry),
            "restored": c.restored.map(|id| json!({ "id": id })),
        },
        "history": c.history.iter().rev().map(history_entry).collect::<Vec<_>>(),
    }))
    .into_response())
}

async fn exceptions(State(s): Shared, Path(id): Path<String>) -> Answer {
    let job = s.job(&id)?;
    let all = job.exceptions();
    let entries: Vec<Value> = all
        .iter()
        .rev()
        .map(|e| json!({ "exceptionName": "TaskFailure", "stacktrace": e.message, "timestamp": e.timestamp_ms }))
        .collect();
    Ok(Json(json!({
        "root-exception": all.last().map(|e| e.message.clone()),
        "timestamp": all.last().map(|e| e.timestamp_ms),
        "all-exceptions": all.iter().rev().map(|e| json!({ "exception": e.message, "timestamp": e.timestamp_ms })).collect::<Vec<_>>(),
        "exceptionHistory": { "entries": entries, "truncated": false },
        "truncated": false,
    }))
    .into_response())
}

#[derive(Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct SavepointRequest {
    #[serde(rename = "target-directory")]
    target_directory: Option<String>,
    #[serde(rename = "cancel-job")]
    cancel_job: bool,
    #[serde(rename = "formatType")]
    format_type: Option<String>,
}

#[derive(Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct StopRequest {
    #[serde(rename = "targetDirectory")]
    target_directory: Option<String>,
    drain: bool,
    #[serde(rename = "formatType")]
    format_type: Option<String>,
}

/// Checks that a savepoint can be written under `dir` (a path or an
/// `s3://` prefix) before taking it.
fn writable(dir: &str) -> Result<PathBuf, ApiError> {
    let cannot = |e: weir_state::StateError| {
        error(
            StatusCode::BAD_REQUEST,
            format!("cannot write savepoints to {dir}: {e}"),
        )
    };
    let fs = weir_state::file_system::open(dir).map_err(cannot)?;
    fs.probe().map_err(cannot)?;
    Ok(PathBuf::from(dir))
}

/// Takes a savepoint (and stops the job after it, with `stop`) on another
/// thread; the answer is the id to poll.
fn start_savepoint(
    s: &Arc<AppState>,
    job: &JobView,
    dir: Option<String>,
    stop: Option<bool>,
) -> Answer {
    if job.status().is_terminal() {
        return Err(error(
            StatusCode::CONFLICT,
            format!("job {} is {}", job.id(), job.status().as_str()),
        ));
    }
    let handle = job
        .savepoints()
        .map_err(|e| error(StatusCode::BAD_REQUEST, e.to_string()))?;
    let dir = dir.as_deref().map(writable).transpose()?;
    let trigger = random_id();
    if let Ok(mut t) = s.triggers.lock() {
        t.insert(trigger.clone(), (SavepointStatus::InProgress, false));
    }
    let state = Arc::clone(s);
    let id = trigger.clone();
    let spawned = std::thread::Builder::new()
        .name("savepoint".into())
        .spawn(move || {
            let result = match (dir, stop) {
                (Some(d), Some(drain)) => handle.stop(d, drain),
                (Some(d), None) => handle.trigger(d),
                (None, Some(drain)) => handle.stop_to_default(drain),
                (None, None) => handle.trigger_to_default(),
            };
            let status = match result {
                Ok(location) => SavepointStatus::Completed(location),
                Err(e) => SavepointStatus::Failed(e.to_string()),
            };
            if let Ok(mut t) = state.triggers.lock() {
                t.insert(id, (status, false));
            }
        });
    spawned.map_err(|e| error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
    Ok((
        StatusCode::ACCEPTED,
        Json(TriggerId {
            request_id: trigger,
        }),
    )
        .into_response())
}

fn random_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_i64(now_ms());
    format!("{:016x}", h.finish())
}

async fn trigger_savepoint(
    State(s): Shared,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Answer {
    let job = s.job(&id)?.clone();
    s.authorise(&headers)?;
    let req: SavepointRequest = parse_body(&body)?;
    if let Some(f) = req.format_type.filter(|f| f != "CANONICAL") {
        return Err(error(
            StatusCode::BAD_REQUEST,
            format!("savepoint format {f} is not supported (CANONICAL is)"),
        ));
    }
    start_savepoint(
        &s,
        &job,
        req.target_directory,
        req.cancel_job.then_some(false),
    )
}

async fn stop(State(s): Shared, Path(id): Path<String>, headers: HeaderMap, body: Bytes) -> Answer {
    let job = s.job(&id)?.clone();
    s.authorise(&headers)?;
    let req: StopRequest = parse_body(&body)?;
    if let Some(f) = req.format_type.filter(|f| f != "CANONICAL") {
        return Err(error(
            StatusCode::BAD_REQUEST,
            format!("savepoint format {f} is not supported (CANONICAL is)"),
        ));
    }
    start_savepoint(&s, &job, req.target_directory, Some(req.drain))
}

async fn savepoint_status(State(s): Shared, Path((id, trigger)): Path<(String, String)>) -> Answer {
    s.job(&id)?;
    let status = s.triggers.lock().ok().and_then(|mut t| {
        t.get_mut(&trigger).map(|(status, read)| {
            *read = true;
            status.clone()
        })
    });
    Ok(match status {
        None => {
            return Err(error(
                StatusCode::NOT_FOUND,
                format!("no savepoint request {trigger}"),
            ))
        }
        Some(SavepointStatus::InProgress) => {
            Json(json!({ "status": { "id": "IN_PROGRESS" }, "operation": null })).into_response()
        }
        Some(SavepointStatus::Completed(location)) => Json(json!({
            "status": { "id": "COMPLETED" },
            "operation": { "location": location },
        }))
        .into_response(),
        Some(SavepointStatus::Failed(why)) => Json(json!({
            "status": { "id": "COMPLETED" },
            "operation": { "failure-cause": { "class": "SavepointFailure", "stack-trace": why } },
        }))
        .into_response(),
    })
}

#[derive(Deserialize)]
struct CancelQuery {
    mode: Option<String>,
}

async fn cancel(
    State(s): Shared,
    Path(id): Path<String>,
    Query(q): Query<CancelQuery>,
    headers: HeaderMap,
) -> Answer {
    let job = s.job(&id)?;
    s.authorise(&headers)?;
    match q.mode.as_deref() {
        None | Some("cancel") => {
            job.cancel();
            Ok((StatusCode::ACCEPTED, Json(json!({}))).into_response())
        }
        Some(other) => Err(error(
            StatusCode::BAD_REQUEST,
            format!("mode '{other}' is not supported (cancel is)"),
        )),
    }
}
