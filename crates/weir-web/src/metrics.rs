//! `GET /metrics`: the job's metrics in the OpenMetrics text format that
//! Prometheus scrapes, named as Flink's Prometheus reporter names them
//! (scope joined by `_`, `weir` in place of `flink`). As in Flink's
//! reporter, counters are exposed as gauges, so the names carry no
//! `_total` suffix.
//!
//! The values are read from the job's view at each scrape; nothing is
//! recorded on the tasks' hot path for them.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use weir_runtime::cluster::JobView;

/// How far back per-second rates look (Flink's meters look back 60 s
/// for records per second; its busy and back-pressure times, as these,
/// are recent).
const WINDOW: Duration = Duration::from_secs(10);

/// Totals of one vertex at one moment.
#[derive(Clone)]
struct VertexSample {
    records_in: u64,
    records_out: u64,
    /// (idle, back-pressured) per subtask.
    times: Vec<(Duration, Duration)>,
}

/// Per-second rates of one vertex over the recent window.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct VertexRates {
    /// Records received per second.
    pub records_in: f64,
    /// Records emitted per second.
    pub records_out: f64,
    /// Per subtask of a vertex that heads tasks: ms per second busy,
    /// back-pressured and idle (Flink's `busyTimeMsPerSecond`, …).
    pub subtasks: Vec<TaskRates>,
}

/// Flink's task time gauges, in ms per second.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct TaskRates {
    pub busy: f64,
    pub backpressured: f64,
    pub idle: f64,
}

/// Samples of the job's totals, taken every second by the REST server, from
/// which rates are computed.
#[derive(Default)]
pub(crate) struct Rates {
    samples: Mutex<VecDeque<(Instant, Vec<VertexSample>)>>,
}

impl Rates {
    /// Records the job's totals now.
    pub(crate) fn sample(&self, job: &JobView) {
        let vertices = job
            .vertices()
            .into_iter()
            .map(|v| VertexSample {
                records_in: v.records_in,
                records_out: v.records_out,
                times: v.subtask_times,
            })
            .collect();
        let mut samples = self.samples.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        samples.push_back((now, vertices));
        while samples
            .front()
            .is_some_and(|(at, _)| now.duration_since(*at) > WINDOW + Duration::from_millis(500))
        {
            samples.pop_front();
        }
    }

    /// Rates per vertex between the oldest and newest sample in the
    /// window; empty until two samples exist.
    pub(crate) fn per_second(&self) -> Vec<VertexRates> {
        let samples = self.samples.lock().unwrap_or_else(|p| p.into_inner());
        let (Some((t0, first)), Some((t1, last))) = (samples.front(), samples.back()) else {
            return Vec::new();
        };
        let secs = t1.duration_since(*t0).as_secs_f64();
        if secs <= 0.0 {
            return Vec::new();
        }
        first
            .iter()
            .zip(last)
            .map(|(a, b)| VertexRates {
                records_in: b.records_in.saturating_sub(a.records_in) as f64 / secs,
                records_out: b.records_out.saturating_sub(a.records_out) as f64 / secs,
                subtasks: b
                    .times
                    .iter()
                    .enumerate()
                    .map(|(i, (idle, bp))| {
                        let (idle0, bp0) = a.times.get(i).copied().unwrap_or_default();
                        let per_second =
                            |d: Duration| (d.as_secs_f64() * 1000.0 / secs).clamp(0.0, 1000.0);
                        let idle = per_second(idle.saturating_sub(idle0));
                        let backpressured = per_second(bp.saturating_sub(bp0));
                        TaskRates {
                            busy: (1000.0 - idle - backpressured).max(0.0),
                            backpressured,
                            idle,
                        }
                    })
                    .collect(),
            })
            .collect()
    }
}

/// The content type of the answer.
pub(crate) const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

type Labels = Vec<(String, String)>;

/// Registers a family of gauges and returns it.
fn family<M>(registry: &mut Registry, name: &str, help: &str) -> Family<Labels, M>
where
    M: Default,
    Family<Labels, M>: prometheus_client::registry::Metric + Clone,
{
    let f = Family::<Labels, M>::default();
    registry.register(name, help, f.clone());
    f
}

/// Gauges of rates.
type FloatGauge = Gauge<f64, std::sync::atomic::AtomicU64>;

fn clamp(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// `labels` with the subtask's index added.
fn with_subtask(labels: &Labels, subtask: impl ToString) -> Labels {
    let mut labels = labels.clone();
    labels.push(("subtask_index".into(), subtask.to_string()));
    labels
}

/// The metrics of `job`, encoded, with rates from `rates`.
pub(crate) fn render(job: &JobView, rates: &Rates) -> Result<String, std::fmt::Error> {
    let mut registry = Registry::with_prefix("weir");
    let job_labels: Labels = vec![
        ("job_id".into(), job.id().to_string()),
        ("job_name".into(), job.name().to_string()),
    ];
    let set = |f: &Family<Labels, Gauge>, labels: &Labels, v: i64| {
        f.get_or_create(labels).set(v);
    };

    let c = job.checkpoints();
    let last = c
        .history
        .iter()
        .rev()
        .find(|r| r.failure.is_none() && !r.savepoint);
    for (name, help, value) in [
        (
            "jobmanager_job_uptime",
            "Milliseconds the job has been running",
            clamp(job.duration().as_millis() as u64),
        ),
        (
            "jobmanager_job_numRestarts",
            "Restarts after failures",
            clamp(job.restarts()),
        ),
        (
            "jobmanager_job_numberOfCompletedCheckpoints",
            "Completed checkpoints",
            clamp(c.completed),
        ),
        (
            "jobmanager_job_numberOfFailedCheckpoints",
            "Failed checkpoints",
            clamp(c.failed + c.aborted),
        ),
        (
            "jobmanager_job_lastCheckpointDuration",
            "Milliseconds from trigger to completion of the latest completed checkpoint",
            last.map_or(0, |r| clamp(r.duration.as_millis() as u64)),
        ),
        (
            "jobmanager_job_lastCheckpointSize",
            "Bytes of state in the latest completed checkpoint",
            clamp(c.last_size),
        ),
        (
            "jobmanager_job_lastCheckpointAlignmentTime",
            "Longest barrier alignment of the latest completed checkpoint, in milliseconds",
            last.map_or(0, |r| clamp(r.max_alignment.as_millis() as u64)),
        ),
    ] {
        set(
            &family::<Gauge>(&mut registry, name, help),
            &job_labels,
            value,
        );
    }

    let records_in = family::<Gauge>(
        &mut registry,
        "taskmanager_job_task_operator_numRecordsIn",
        "Records the operator subtask received",
    );
    let records_out = family::<Gauge>(
        &mut registry,
        "taskmanager_job_task_operator_numRecordsOut",
        "Records the operator subtask emitted",
    );
    let late = family::<Gauge>(
        &mut registry,
        "taskmanager_job_task_operator_numLateRecordsDropped",
        "Records dropped as late, over its subtasks",
    );
    let watermark = family::<Gauge>(
        &mut registry,
        "taskmanager_job_task_operator_currentInputWatermark",
        "The subtask's input watermark in ms since the epoch",
    );
    let output_watermark = family::<Gauge>(
        &mut registry,
        "taskmanager_job_task_operator_currentOutputWatermark",
        "The last watermark the subtask emitted, in ms since the epoch",
    );
    let lag = family::<Gauge>(
        &mut registry,
        "taskmanager_job_task_operator_watermarkLag",
        "Milliseconds from the subtask's input watermark to the wall clock",
    );
    let state_size = family::<Gauge>(
        &mut registry,
        "taskmanager_job_task_operator_stateSize",
        "Bytes of the operator's state in the latest completed checkpoint",
    );
    let now = weir_runtime::provenance::wall_clock_ms();
    let stores = job.store_statistics();
    // RocksDB's own figures, by operator subtask, named after its
    // properties as Flink's RocksDB metrics are.
    let mut store_families: Vec<(&'static str, Family<Labels, Gauge>)> = Vec::new();
    let sizes = c.operator_state_sizes.clone();
    let per_second = rates.per_second();
    let in_rate = family::<FloatGauge>(
        &mut registry,
        "taskmanager_job_task_operator_numRecordsInPerSecond",
        "Records received per second, recently",
    );
    let out_rate = family::<FloatGauge>(
        &mut registry,
        "taskmanager_job_task_operator_numRecordsOutPerSecond",
        "Records emitted per second, recently",
    );
    let busy = family::<FloatGauge>(
        &mut registry,
        "taskmanager_job_task_busyTimeMsPerSecond",
        "Milliseconds per second the task worked",
    );
    let backpressured = family::<FloatGauge>(
        &mut registry,
        "taskmanager_job_task_backPressuredTimeMsPerSecond",
        "Milliseconds per second the task waited for a full output channel",
    );
    let idle = family::<FloatGauge>(
        &mut registry,
        "taskmanager_job_task_idleTimeMsPerSecond",
        "Milliseconds per second the task waited for input",
    );
    for (index, v) in job.vertices().iter().enumerate() {
        let mut labels = job_labels.clone();
        labels.push(("operator_name".into(), v.name.clone()));
        labels.push((
            "operator_id".into(),
            v.uid.clone().unwrap_or_else(|| index.to_string()),
        ));
        for (subtask, (records_in_n, records_out_n)) in v.subtask_records.iter().enumerate() {
            let labels = with_subtask(&labels, subtask);
            set(&records_in, &labels, clamp(*records_in_n));
            set(&records_out, &labels, clamp(*records_out_n));
        }
        set(&late, &labels, clamp(v.late_records_dropped));
        if let Some(size) = sizes.get(index) {
            set(&state_size, &labels, clamp(*size));
        }
        if let Some(r) = per_second.get(index) {
            in_rate.get_or_create(&labels).set(r.records_in);
            out_rate.get_or_create(&labels).set(r.records_out);
            for (subtask, t) in r.subtasks.iter().enumerate() {
                let mut labels = job_labels.clone();
                labels.push(("task_name".into(), v.name.clone()));
                labels.push(("subtask_index".into(), subtask.to_string()));
                busy.get_or_create(&labels).set(t.busy);
                backpressured.get_or_create(&labels).set(t.backpressured);
                idle.get_or_create(&labels).set(t.idle);
            }
        }
        for (subtask, w) in v.subtask_watermarks.iter().enumerate() {
            if let Some(w) = w {
                let labels = with_subtask(&labels, subtask);
                set(&watermark, &labels, *w);
                set(&lag, &labels, now.saturating_sub(*w));
            }
        }
        for (subtask, read) in stores.get(index).into_iter().flatten() {
            let labels = with_subtask(&labels, subtask);
            for (name, value) in read {
                let family = match store_families.iter().find(|(n, _)| n == name) {
                    Some((_, f)) => f.clone(),
                    None => {
                        let f = family::<Gauge>(
                            &mut registry,
                            &format!("taskmanager_job_task_operator_{name}"),
                            "A figure of the subtask's RocksDB instance (its property or ticker of \
                             that name)",
                        );
                        store_families.push((name, f.clone()));
                        f
                    }
                };
                set(&family, &labels, clamp(*value));
            }
        }
        for (subtask, w) in v.subtask_output_watermarks.iter().enumerate() {
            if let Some(w) = w {
                let labels = with_subtask(&labels, subtask);
                set(&output_watermark, &labels, *w);
            }
        }
    }
    let mut out = String::new();
    encode(&mut out, &registry)?;
    Ok(out)
}
