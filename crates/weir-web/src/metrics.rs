//! `GET /metrics`: the job's metrics in the OpenMetrics text format that
//! Prometheus scrapes, named as Flink's Prometheus reporter names them
//! (scope joined by `_`, `weir` in place of `flink`). As in Flink's
//! reporter, counters are exposed as gauges, so the names carry no
//! `_total` suffix.
//!
//! The values are read from the job's view at each scrape; nothing is
//! recorded on the tasks' hot path for them.

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use weir_runtime::cluster::JobView;

/// The content type of the answer.
pub(crate) const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

type Labels = Vec<(String, String)>;

/// Registers a family of gauges and returns it.
fn family(registry: &mut Registry, name: &str, help: &str) -> Family<Labels, Gauge> {
    let f = Family::<Labels, Gauge>::default();
    registry.register(name, help, f.clone());
    f
}

fn clamp(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// The metrics of `job`, encoded.
pub(crate) fn render(job: &JobView) -> Result<String, std::fmt::Error> {
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
        set(&family(&mut registry, name, help), &job_labels, value);
    }

    let records_in = family(
        &mut registry,
        "taskmanager_job_task_operator_numRecordsIn",
        "Records the operator received, over its subtasks",
    );
    let records_out = family(
        &mut registry,
        "taskmanager_job_task_operator_numRecordsOut",
        "Records the operator emitted, over its subtasks",
    );
    let late = family(
        &mut registry,
        "taskmanager_job_task_operator_numLateRecordsDropped",
        "Records dropped as late, over its subtasks",
    );
    let watermark = family(
        &mut registry,
        "taskmanager_job_task_operator_currentInputWatermark",
        "The subtask's input watermark in ms since the epoch",
    );
    for (index, v) in job.vertices().iter().enumerate() {
        let mut labels = job_labels.clone();
        labels.push(("operator_name".into(), v.name.clone()));
        labels.push((
            "operator_id".into(),
            v.uid.clone().unwrap_or_else(|| index.to_string()),
        ));
        set(&records_in, &labels, clamp(v.records_in));
        set(&records_out, &labels, clamp(v.records_out));
        set(&late, &labels, clamp(v.late_records_dropped));
        for (subtask, w) in v.subtask_watermarks.iter().enumerate() {
            if let Some(w) = w {
                let mut labels = labels.clone();
                labels.push(("subtask_index".into(), subtask.to_string()));
                set(&watermark, &labels, *w);
            }
        }
    }
    let mut out = String::new();
    encode(&mut out, &registry)?;
    Ok(out)
}
