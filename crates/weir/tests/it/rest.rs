//! The REST API of a running job, endpoint by endpoint, through real HTTP
//! on loopback: answers, bad input, savepoints, stop, cancel, the token.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::Value;
use weir::prelude::*;
use weir_runtime::cluster::JobClient;
use weir_web::{RestClient, SavepointStatus};

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("weir-rest-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// A slow counting job with checkpoints, serving its REST API on a free
/// port; the job and the port.
fn start(extra: &[(&str, &str)]) -> (JobClient, u16) {
    let mut all = vec![("execution.checkpointing.interval", "50 ms")];
    all.extend_from_slice(extra);
    start_with(&all)
}

fn start_with(settings: &[(&str, &str)]) -> (JobClient, u16) {
    let env = StreamExecutionEnvironment::new();
    let mut c = Configuration::new();
    // The job binds a free port itself: no port is released and bound
    // again, which another process could take in between.
    c.set("rest.port", "0");
    for (k, v) in settings {
        c.set(*k, *v);
    }
    env.configure(&c).expect("configuration");
    env.add_source(
        GeneratorSource::new(u64::MAX, |i| i).with_rate_limit(2_000.0),
        "numbers",
    )
    .key_by(|i| i % 4)
    .reduce(|a: u64, b: u64| a + b)
    .add_sink(DiscardingSink);
    let job = env.execute_async("counting").expect("the job starts");
    let port = job.rest_address().expect("the REST API is served").port();
    (job, port)
}

/// `(status, body)` of a call.
pub(crate) fn call(
    method: &str,
    url: &str,
    body: Option<&str>,
    token: Option<&str>,
) -> (u16, Value) {
    let mut req = ureq::request(method, url);
    if let Some(t) = token {
        req = req.set("Authorization", &format!("Bearer {t}"));
    }
    let res = match body {
        Some(b) => req.set("Content-Type", "application/json").send_string(b),
        None => req.call(),
    };
    let r = match res {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("{method} {url}: {e}"),
    };
    let status = r.status();
    let text = r.into_string().expect("body");
    let json = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{url}: {e}: {text}"));
    (status, json)
}

pub(crate) fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn savepoint_done(client: &RestClient, job: &str, trigger: &str) -> SavepointStatus {
    let mut last = SavepointStatus::InProgress;
    wait_until("the savepoint", || {
        last = client.savepoint_status(job, trigger).expect("status");
        last != SavepointStatus::InProgress
    });
    last
}

#[test]
fn every_endpoint_answers_flink_shaped_json() {
    let (job, port) = start(&[]);
    let id = job.job_id().to_string();
    let base = format!("http://127.0.0.1:{port}");

    let (status, overview) = call("GET", &format!("{base}/overview"), None, None);
    assert_eq!(status, 200);
    assert_eq!(overview["jobs-running"], 1);

    let (_, jobs) = call("GET", &format!("{base}/jobs"), None, None);
    assert_eq!(jobs["jobs"][0]["id"], id.as_str());
    assert_eq!(jobs["jobs"][0]["status"], "RUNNING");

    let (_, list) = call("GET", &format!("{base}/jobs/overview"), None, None);
    assert_eq!(list["jobs"][0]["name"], "counting");
    assert_eq!(list["jobs"][0]["state"], "RUNNING");
    assert!(list["jobs"][0]["start-time"].as_i64().unwrap_or(0) > 0);

    // Records flow and checkpoints complete while we watch.
    wait_until("records and a checkpoint", || {
        let (_, j) = call("GET", &format!("{base}/jobs/{id}"), None, None);
        let (_, c) = call("GET", &format!("{base}/jobs/{id}/checkpoints"), None, None);
        j["vertices"][0]["metrics"]["write-records"]
            .as_u64()
            .unwrap_or(0)
            > 0
            && c["counts"]["completed"].as_u64().unwrap_or(0) > 0
    });
    let (_, detail) = call("GET", &format!("{base}/jobs/{id}"), None, None);
    assert_eq!(detail["jid"], id.as_str());
    let vertices = detail["vertices"].as_array().expect("vertices");
    assert!(vertices.len() >= 2, "{detail}");
    assert!(vertices
        .iter()
        .all(|v| v["parallelism"].as_u64() == Some(1)));
    let (_, chk) = call("GET", &format!("{base}/jobs/{id}/checkpoints"), None, None);
    let latest = &chk["latest"]["completed"];
    assert!(latest["id"].as_u64().is_some(), "{chk}");
    let history = chk["history"].as_array().expect("history");
    assert!(!history.is_empty() && history.len() <= 10);
    assert_eq!(history[0]["status"], "COMPLETED");
    assert!(history[0]["end_to_end_duration"].as_u64().is_some());
    assert!(history[0]["alignment_duration"].as_u64().is_some());

    let (_, exceptions) = call("GET", &format!("{base}/jobs/{id}/exceptions"), None, None);
    assert!(exceptions["root-exception"].is_null());

    let (_, config) = call("GET", &format!("{base}/config"), None, None);
    assert_eq!(config["configuration"]["rest.port"], "0");
    assert_eq!(
        config["configuration"]["execution.checkpointing.interval"],
        "50 ms"
    );

    job.cancel();
    assert!(job.wait().is_err(), "a cancelled job is no success");
}

#[test]
fn bad_requests_get_json_errors() {
    let (job, port) = start(&[]);
    let id = job.job_id().to_string();
    let base = format!("http://127.0.0.1:{port}");
    let unknown = "0".repeat(32);

    for (method, path) in [
        ("GET", format!("/jobs/{unknown}")),
        ("GET", format!("/jobs/{unknown}/checkpoints")),
        ("GET", "/jobs/not-a-job/exceptions".to_string()),
        ("GET", "/no/such/endpoint".to_string()),
        ("GET", format!("/jobs/{id}/savepoints/no-such-request")),
        ("PATCH", format!("/jobs/{unknown}?mode=cancel")),
    ] {
        let (status, body) = call(method, &format!("{base}{path}"), None, None);
        assert_eq!(status, 404, "{method} {path}: {body}");
        assert!(body["errors"][0].is_string(), "{path}: {body}");
    }
    let savepoints = format!("{base}/jobs/{id}/savepoints");
    let (status, body) = call("POST", &savepoints, Some("{not json"), None);
    assert_eq!(status, 400, "{body}");
    assert!(body["errors"][0]
        .as_str()
        .is_some_and(|m| m.contains("malformed")));
    let (status, _) = call("POST", &savepoints, Some(r#"{"bogus": 1}"#), None);
    assert_eq!(status, 400, "unknown fields are refused");
    // A directory that cannot be written: under a regular file.
    let file = temp_dir("not-a-dir");
    std::fs::write(&file, b"x").expect("file");
    let target = file.join("savepoints");
    let (status, body) = call(
        "POST",
        &savepoints,
        Some(&format!(
            r#"{{"target-directory": "{}"}}"#,
            target.display()
        )),
        None,
    );
    assert_eq!(status, 400, "{body}");
    assert!(body["errors"][0]
        .as_str()
        .is_some_and(|m| m.contains("cannot write")));
    let (status, _) = call(
        "PATCH",
        &format!("{base}/jobs/{id}?mode=terminate"),
        None,
        None,
    );
    assert_eq!(status, 400);
    // Still running after all that.
    let (_, detail) = call("GET", &format!("{base}/jobs/{id}"), None, None);
    assert_eq!(detail["state"], "RUNNING");
    let _ = std::fs::remove_file(&file);
    job.cancel();
    let _ = job.wait();
}

#[test]
fn savepoints_stop_and_cancel_through_the_api() {
    let dir = temp_dir("savepoints");
    let (job, port) = start(&[]);
    let id = job.job_id().to_string();
    let client = RestClient::new(&format!("127.0.0.1:{port}"), None);

    let trigger = client
        .trigger_savepoint(&id, Some(&dir.display().to_string()))
        .expect("triggered");
    let SavepointStatus::Completed(location) = savepoint_done(&client, &id, &trigger) else {
        panic!("the savepoint failed");
    };
    let path = PathBuf::from(location.trim_start_matches("file://"));
    assert!(path.join("_metadata").is_file(), "{location}");
    assert!(path.starts_with(&dir));

    let (_, chk) = call(
        "GET",
        &format!("http://127.0.0.1:{port}/jobs/{id}/checkpoints"),
        None,
        None,
    );
    assert_eq!(chk["latest"]["savepoint"]["is_savepoint"], true, "{chk}");

    // Stop with a savepoint: the job finishes, a success.
    let trigger = client
        .stop(&id, Some(&dir.display().to_string()), false)
        .expect("stop");
    let SavepointStatus::Completed(stopped_at) = savepoint_done(&client, &id, &trigger) else {
        panic!("stop failed");
    };
    assert_ne!(stopped_at, location);
    let result = job.wait().expect("stopped jobs finish");
    assert!(result.operators.iter().any(|o| o.records_out > 0));
    let _ = std::fs::remove_dir_all(&dir);

    // Cancel.
    let (job, port) = start(&[]);
    let id = job.job_id().to_string();
    RestClient::new(&format!("127.0.0.1:{port}"), None)
        .cancel(&id)
        .expect("cancel");
    assert!(matches!(job.wait(), Err(weir_runtime::JobError::Cancelled)));
}

#[test]
fn a_served_job_takes_savepoints_without_periodic_checkpoints() {
    let dir = temp_dir("no-checkpoints");
    let (job, port) = start_with(&[]);
    let id = job.job_id().to_string();
    let client = RestClient::new(&format!("127.0.0.1:{port}"), None);
    let trigger = client
        .trigger_savepoint(&id, Some(&dir.display().to_string()))
        .expect("triggered");
    let SavepointStatus::Completed(location) = savepoint_done(&client, &id, &trigger) else {
        panic!("the savepoint failed");
    };
    assert!(PathBuf::from(location.trim_start_matches("file://"))
        .join("_metadata")
        .is_file());
    let (_, chk) = call(
        "GET",
        &format!("http://127.0.0.1:{port}/jobs/{id}/checkpoints"),
        None,
        None,
    );
    assert_eq!(
        chk["counts"]["completed"], 0,
        "no periodic checkpoints: {chk}"
    );
    job.cancel();
    let _ = job.wait();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_configured_token_guards_every_call_that_changes_the_job() {
    let (job, port) = start(&[("weir.rest.token", "s3cret")]);
    let id = job.job_id().to_string();
    let base = format!("http://127.0.0.1:{port}");
    // Reading needs no token.
    let (status, _) = call("GET", &format!("{base}/jobs/{id}"), None, None);
    assert_eq!(status, 200);
    for (method, path, body) in [
        ("POST", format!("/jobs/{id}/savepoints"), Some("{}")),
        ("POST", format!("/jobs/{id}/stop"), Some("{}")),
        ("PATCH", format!("/jobs/{id}?mode=cancel"), None),
    ] {
        let (status, _) = call(method, &format!("{base}{path}"), body, None);
        assert_eq!(status, 401, "{method} {path} without the token");
        let (status, _) = call(method, &format!("{base}{path}"), body, Some("wrong"));
        assert_eq!(status, 401, "{method} {path} with a wrong token");
    }
    let (_, config) = call("GET", &format!("{base}/config"), None, None);
    assert!(
        config["configuration"]["weir.rest.token"].is_null(),
        "the token is not shown"
    );
    let (status, _) = call(
        "PATCH",
        &format!("{base}/jobs/{id}?mode=cancel"),
        None,
        Some("s3cret"),
    );
    assert_eq!(status, 202);
    assert!(job.wait().is_err());
}

/// Runs a job over 1000 numbers with `settings`, which must fail at start;
/// its error, and how many records reached the sink.
fn refused_at_start(settings: &[(&str, &str)]) -> (String, usize) {
    let env = StreamExecutionEnvironment::new();
    let mut c = Configuration::new();
    for (k, v) in settings {
        c.set(*k, *v);
    }
    env.configure(&c).expect("configuration");
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    env.from_sequence(0, 1000)
        .add_sink(weir::sink::CollectSink::new(std::sync::Arc::clone(&seen)));
    let err = env
        .execute("refused")
        .expect_err("the REST API cannot start");
    let flowed = seen.lock().expect("lock").len();
    (err.to_string(), flowed)
}

#[test]
fn binding_is_checked_before_any_record_flows() {
    // A port in use is an error at start, not a silent failure, and not
    // one found after the job wrote its output.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = taken.local_addr().expect("addr").port().to_string();
    let (err, flowed) = refused_at_start(&[("rest.port", &port)]);
    assert!(err.contains("cannot bind"), "{err}");
    assert_eq!(flowed, 0, "records flowed before the port was bound");

    let (err, flowed) = refused_at_start(&[("rest.port", "0"), ("rest.bind-address", "not-an-ip")]);
    assert!(err.contains("'not-an-ip' is not an IP address"), "{err}");
    assert_eq!(flowed, 0);

    // Beyond loopback a token is required (checked before binding).
    let (err, flowed) = refused_at_start(&[("rest.port", "0"), ("rest.bind-address", "0.0.0.0")]);
    assert!(err.contains("weir.rest.token"), "{err}");
    assert_eq!(flowed, 0);
}

#[test]
fn exceptions_show_a_real_failure_the_job_recovered_from() {
    #[derive(Clone)]
    struct FailFirstAttempt(bool);
    impl MapFunction<u64, u64> for FailFirstAttempt {
        fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
            self.0 = ctx.attempt_number == 0;
            Ok(())
        }
        fn map(&mut self, i: u64) -> u64 {
            if self.0 && i == 100 {
                panic!("injected failure at record {i}");
            }
            i
        }
    }
    let env = StreamExecutionEnvironment::new();
    let mut c = Configuration::new();
    c.set("rest.port", "0")
        .set("execution.checkpointing.interval", "50 ms")
        .set("restart-strategy.type", "fixed-delay")
        .set("restart-strategy.fixed-delay.attempts", "3")
        .set("restart-strategy.fixed-delay.delay", "10 ms");
    env.configure(&c).expect("configuration");
    env.add_source(
        GeneratorSource::new(u64::MAX, |i| i).with_rate_limit(2_000.0),
        "numbers",
    )
    .map(FailFirstAttempt(true))
    .add_sink(DiscardingSink);
    let job = env.execute_async("recovering").expect("the job starts");
    let (port, id, cancel) = (
        job.rest_address().expect("served").port(),
        job.job_id().to_string(),
        job.cancel_handle(),
    );
    // Restarts happen while someone waits for the job, as `execute` does.
    let waiting = std::thread::spawn(move || job.wait());
    let url = format!("http://127.0.0.1:{port}/jobs/{id}/exceptions");
    let mut exceptions = Value::Null;
    wait_until("the failure in /exceptions", || {
        exceptions = call("GET", &url, None, None).1;
        !exceptions["root-exception"].is_null()
    });
    let root = exceptions["root-exception"].as_str().expect("a message");
    assert!(root.contains("injected failure at record 100"), "{root}");
    assert!(root.contains("Map (1/1)"), "names the subtask: {root}");
    let history = exceptions["exceptionHistory"]["entries"]
        .as_array()
        .expect("history");
    assert_eq!(history.len(), 1, "{exceptions}");
    assert_eq!(history[0]["stacktrace"].as_str(), Some(root));
    // It recovered: the job runs on.
    let detail_url = format!("http://127.0.0.1:{port}/jobs/{id}");
    wait_until("the restarted job to run", || {
        call("GET", &detail_url, None, None).1["state"] == "RUNNING"
    });
    cancel.cancel();
    assert!(waiting.join().expect("waiter").is_err());
}

/// `/metrics` parsed by Prometheus' own parser (its Python client's
/// OpenMetrics parser): Flink's metric names, the job's labels, and
/// values that follow the running job.
#[test]
fn metrics_scrape_in_the_prometheus_format() {
    let (job, port) = start(&[]);
    let id = job.job_id().to_string();
    let view = job.view();
    wait_until("a checkpoint", || view.checkpoints().completed >= 1);
    let response = ureq::get(&format!("http://127.0.0.1:{port}/metrics"))
        .call()
        .expect("scraped");
    assert!(
        response
            .header("Content-Type")
            .is_some_and(|t| t.starts_with("application/openmetrics-text")),
        "{:?}",
        response.header("Content-Type")
    );
    let text = response.into_string().expect("body");
    job.cancel();
    let _ = job.wait();

    let parser = "import json, sys\n\
        from prometheus_client.openmetrics.parser import text_string_to_metric_families\n\
        samples = [[s.name, s.labels, s.value]\n\
                   for f in text_string_to_metric_families(sys.stdin.read()) for s in f.samples]\n\
        print(json.dumps(samples))\n";
    let mut child = std::process::Command::new("python3")
        .args(["-c", parser])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("python3 runs");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        stdin.write_all(text.as_bytes()).expect("written");
    }
    let out = child.wait_with_output().expect("parsed");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("No module named 'prometheus_client'"),
        "Prometheus' parser is missing: run scripts/install-deps.sh \
         (python3 -m pip install prometheus-client)"
    );
    assert!(
        out.status.success(),
        "the parser refused the text: {stderr}\n{text}"
    );
    let samples: Vec<(String, std::collections::BTreeMap<String, String>, f64)> =
        serde_json::from_slice(&out.stdout).expect("samples");
    let value = |name: &str, want: &dyn Fn(&std::collections::BTreeMap<String, String>) -> bool| {
        samples
            .iter()
            .filter(|(n, l, _)| n == name && l.get("job_id") == Some(&id) && want(l))
            .map(|(_, _, v)| *v)
            .collect::<Vec<f64>>()
    };
    let any = |_: &std::collections::BTreeMap<String, String>| true;
    let completed = value("weir_jobmanager_job_numberOfCompletedCheckpoints", &any);
    assert!(
        completed.len() == 1 && completed[0] >= 1.0,
        "{completed:?}\n{text}"
    );
    assert_eq!(value("weir_jobmanager_job_numRestarts", &any), vec![0.0]);
    assert!(value("weir_jobmanager_job_uptime", &any)[0] > 0.0, "{text}");
    assert!(
        value("weir_jobmanager_job_lastCheckpointSize", &any)[0] > 0.0,
        "{text}"
    );
    let out = value("weir_taskmanager_job_task_operator_numRecordsOut", &|l| {
        l.get("operator_name")
            .is_some_and(|n| n.contains("numbers"))
    });
    assert!(
        out.len() == 1 && out[0] > 0.0,
        "records out of the source: {text}"
    );
    let into_reduce = value("weir_taskmanager_job_task_operator_numRecordsIn", &|l| {
        l.get("operator_name").is_some_and(|n| n.contains("Reduce"))
    });
    assert!(into_reduce.iter().any(|v| *v > 0.0), "{text}");
    // The keyed reduce keeps state; the checkpoint says how much.
    let reduce_state = value("weir_taskmanager_job_task_operator_stateSize", &|l| {
        l.get("operator_name").is_some_and(|n| n.contains("Reduce"))
    });
    assert!(
        reduce_state.len() == 1 && reduce_state[0] > 0.0,
        "{reduce_state:?}\n{text}"
    );
}

/// Flink's per-vertex endpoints: metric ids, values by `get`, and each
/// subtask's input watermark, for an event-time job at parallelism 2.
#[test]
fn vertex_metrics_and_watermarks_answer_as_flink_does() {
    let env = StreamExecutionEnvironment::new();
    let mut c = Configuration::new();
    c.set("rest.port", "0")
        .set("pipeline.auto-watermark-interval", "10 ms");
    env.configure(&c).expect("configuration");
    env.set_parallelism(2);
    env.add_source(
        GeneratorSource::new(u64::MAX, |i| i).with_rate_limit(2_000.0),
        "numbers",
    )
    .assign_timestamps_and_watermarks(
        WatermarkStrategy::for_monotonous_timestamps()
            .with_timestamp_assigner(|i: &u64, _| 1_000 * *i as i64),
    )
    .key_by(|i| i % 4)
    .reduce(|a: u64, b: u64| a + b)
    .add_sink(DiscardingSink);
    let job = env.execute_async("event time").expect("the job starts");
    let port = job.rest_address().expect("the REST API is served").port();
    let id = job.job_id().to_string();
    let base = format!("http://127.0.0.1:{port}/jobs/{id}");
    let (_, detail) = call("GET", &base, None, None);
    let reduce = detail["vertices"]
        .as_array()
        .expect("vertices")
        .iter()
        .find(|v| v["name"].as_str().is_some_and(|n| n.contains("Reduce")))
        .expect("the reduce vertex")["id"]
        .as_str()
        .expect("an id")
        .to_string();
    let vertex = format!("{base}/vertices/{reduce}");
    // Both subtasks have a watermark once records flowed to each.
    let mut watermarks = Value::Null;
    wait_until("watermarks on both subtasks", || {
        watermarks = call("GET", &format!("{vertex}/watermarks"), None, None).1;
        watermarks.as_array().is_some_and(|w| {
            w.len() == 2
                && w.iter().all(|e| {
                    e["value"]
                        .as_str()
                        .and_then(|v| v.parse::<i64>().ok())
                        .is_some_and(|v| v > 0)
                })
        })
    });
    assert_eq!(
        watermarks[1]["id"], "1.currentInputWatermark",
        "{watermarks}"
    );

    let (status, ids) = call("GET", &format!("{vertex}/metrics"), None, None);
    assert_eq!(status, 200);
    let ids: Vec<&str> = ids
        .as_array()
        .expect("ids")
        .iter()
        .filter_map(|m| m["id"].as_str())
        .collect();
    assert!(
        ids.contains(&"numRecordsIn")
            && ids.contains(&"0.currentInputWatermark")
            && ids.contains(&"1.currentOutputWatermark")
            && ids.contains(&"1.watermarkLag"),
        "{ids:?}"
    );
    // Timestamps are 1 000 ms × the record, minutes after 1970: the lag
    // (wall clock minus watermark) is decades; the reduce emits the
    // watermark it received.
    let (_, values) = call(
        "GET",
        &format!("{vertex}/metrics?get=0.watermarkLag,0.currentOutputWatermark"),
        None,
        None,
    );
    let values = values.as_array().expect("values").clone();
    assert_eq!(values.len(), 2, "{values:?}");
    let number = |i: usize| -> i64 {
        values[i]["value"]
            .as_str()
            .and_then(|v| v.parse().ok())
            .expect("a number")
    };
    assert!(number(0) > 1_000_000_000_000, "{values:?}");
    assert!(number(1) > 0, "{values:?}");
    let (_, values) = call(
        "GET",
        &format!("{vertex}/metrics?get=numRecordsIn,nosuchmetric"),
        None,
        None,
    );
    let values = values.as_array().expect("values").clone();
    assert_eq!(values.len(), 1, "{values:?}");
    assert_eq!(values[0]["id"], "numRecordsIn");
    let n: u64 = values[0]["value"]
        .as_str()
        .and_then(|v| v.parse().ok())
        .expect("a count");
    assert!(n > 0);
    let (status, _) = call("GET", &format!("{base}/vertices/99/metrics"), None, None);
    assert_eq!(status, 404);
    // Each subtask counts its own records (Flink's vertex detail).
    let mut detail = Value::Null;
    wait_until("records on both reduce subtasks", || {
        detail = call("GET", &vertex, None, None).1;
        detail["subtasks"].as_array().is_some_and(|s| {
            s.len() == 2
                && s.iter().all(|t| {
                    t["status"] == "RUNNING" && t["metrics"]["read-records"].as_u64() > Some(0)
                })
        })
    });
    let (_, per_subtask) = call(
        "GET",
        &format!("{vertex}/metrics?get=0.numRecordsIn,1.numRecordsIn"),
        None,
        None,
    );
    assert_eq!(
        per_subtask.as_array().map(Vec::len),
        Some(2),
        "{per_subtask}"
    );
    job.cancel();
    let _ = job.wait();
}

/// A fast source feeding a slow map: the source's task waits for the full
/// channel (back-pressure "high"), the map's task is busy and not
/// back-pressured, and a chained sink refers to its task's head.
#[test]
fn backpressure_and_busy_time_show_the_slow_task() {
    let env = StreamExecutionEnvironment::new();
    let mut c = Configuration::new();
    c.set("rest.port", "0");
    env.configure(&c).expect("configuration");
    env.add_source(GeneratorSource::new(u64::MAX, |i| i), "numbers")
        .rebalance()
        .map(|i: u64| {
            std::thread::sleep(Duration::from_micros(200));
            i
        })
        .add_sink(DiscardingSink);
    let job = env.execute_async("slow map").expect("the job starts");
    let port = job.rest_address().expect("the REST API is served").port();
    let base = format!("http://127.0.0.1:{port}/jobs/{}", job.job_id());
    let (_, detail) = call("GET", &base, None, None);
    let vertex_id = |part: &str| {
        detail["vertices"]
            .as_array()
            .expect("vertices")
            .iter()
            .find(|v| v["name"].as_str().is_some_and(|n| n.contains(part)))
            .and_then(|v| v["id"].as_str())
            .unwrap_or_else(|| panic!("no vertex {part}: {detail}"))
            .to_string()
    };
    let (source, map, sink) = (vertex_id("numbers"), vertex_id("Map"), vertex_id("Sink"));
    let mut answer = Value::Null;
    wait_until("back-pressure on the source", || {
        answer = call(
            "GET",
            &format!("{base}/vertices/{source}/backpressure"),
            None,
            None,
        )
        .1;
        answer["backpressureLevel"] == "high"
    });
    assert!(
        answer["subtasks"][0]["ratio"]
            .as_f64()
            .is_some_and(|r| r > 0.5),
        "{answer}"
    );
    let (_, at_map) = call(
        "GET",
        &format!("{base}/vertices/{map}/backpressure"),
        None,
        None,
    );
    assert_eq!(at_map["backpressureLevel"], "ok", "{at_map}");
    let (_, busy) = call(
        "GET",
        &format!("{base}/vertices/{map}/metrics?get=0.busyTimeMsPerSecond,0.idleTimeMsPerSecond"),
        None,
        None,
    );
    let value = |id: &str| {
        busy.as_array()
            .and_then(|a| a.iter().find(|m| m["id"] == id))
            .and_then(|m| m["value"].as_str())
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or_else(|| panic!("no {id}: {busy}"))
    };
    assert!(value("0.busyTimeMsPerSecond") > 500.0, "{busy}");
    assert!(value("0.idleTimeMsPerSecond") < 500.0, "{busy}");
    let (_, chained) = call(
        "GET",
        &format!("{base}/vertices/{sink}/backpressure"),
        None,
        None,
    );
    assert_eq!(chained["status"], "deprecated", "{chained}");
    job.cancel();
    let _ = job.wait();
}

/// A headless Chromium driven through WebDriver (Debian's `chromium` and
/// `chromium-driver`).
pub(crate) struct Browser {
    driver: std::process::Child,
    session: String,
    base: String,
}

impl Browser {
    pub(crate) fn start() -> Browser {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let driver = std::process::Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "chromedriver: {e}: install Chromium and its driver \
                     (scripts/install-deps.sh; Debian: apt-get install -y chromium chromium-driver)"
                )
            });
        let base = format!("http://127.0.0.1:{port}");
        wait_until("chromedriver", || {
            ureq::get(&format!("{base}/status")).call().is_ok()
        });
        let caps = serde_json::json!({ "capabilities": { "alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": "/usr/bin/chromium",
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                         "--disable-dev-shm-usage", "--window-size=1400,1000"],
            },
        }}});
        let created: Value = ureq::post(&format!("{base}/session"))
            .send_json(caps)
            .expect("a browser session")
            .into_json()
            .expect("json");
        let session = created["value"]["sessionId"]
            .as_str()
            .expect("session id")
            .to_string();
        Browser {
            driver,
            session,
            base,
        }
    }

    pub(crate) fn call(&self, method: &str, path: &str, body: Value) -> Value {
        let url = format!("{}/session/{}{path}", self.base, self.session);
        let answer = match method {
            "GET" => ureq::get(&url).call(),
            _ => ureq::request(method, &url).send_json(body),
        };
        match answer {
            Ok(r) => r.into_json::<Value>().expect("json")["value"].clone(),
            Err(ureq::Error::Status(_, r)) => r
                .into_json::<Value>()
                .map(|v| v["value"].clone())
                .unwrap_or(Value::Null),
            Err(e) => panic!("{method} {path}: {e}"),
        }
    }

    pub(crate) fn go(&self, url: &str) {
        self.call("POST", "/url", serde_json::json!({ "url": url }));
    }

    /// The elements matching `css`, by WebDriver id.
    pub(crate) fn all(&self, css: &str) -> Vec<String> {
        let found = self.call(
            "POST",
            "/elements",
            serde_json::json!({ "using": "css selector", "value": css }),
        );
        found
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|e| e.as_object()?.values().next()?.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    }

    pub(crate) fn text(&self, css: &str) -> String {
        self.all(css)
            .first()
            .map(|e| {
                self.call("GET", &format!("/element/{e}/text"), Value::Null)
                    .as_str()
                    .unwrap_or_default()
                    .to_string()
            })
            .unwrap_or_default()
    }

    pub(crate) fn click(&self, css: &str) {
        let e = self.all(css).into_iter().next().expect(css);
        self.call(
            "POST",
            &format!("/element/{e}/click"),
            serde_json::json!({}),
        );
    }

    pub(crate) fn type_into(&self, css: &str, text: &str) {
        let e = self.all(css).into_iter().next().expect(css);
        self.call(
            "POST",
            &format!("/element/{e}/value"),
            serde_json::json!({ "text": text }),
        );
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = ureq::delete(&format!("{}/session/{}", self.base, self.session)).call();
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// The dashboard at `/` in a real headless Chromium: the job graph
/// appears, its counts go up while the job runs, and a savepoint started
/// from the page shows in the checkpoint history.
#[test]
fn the_dashboard_shows_the_running_job_and_takes_a_savepoint() {
    let dir = temp_dir("dashboard-savepoints");
    // The page refreshes once a second and the history holds the last 10
    // checkpoints: at 50 ms apart, a savepoint could leave the history
    // before the page ever showed it.
    let (job, port) = start(&[("execution.checkpointing.interval", "1 s")]);
    let browser = Browser::start();
    browser.go(&format!("http://127.0.0.1:{port}/"));
    wait_until("the job graph", || browser.all(".vertex").len() == 3);
    // Source -> keyed reduce -> sink: two edges, drawn with their ship
    // strategies.
    wait_until("the edges", || browser.all("#edges path.edge").len() == 2);
    let labels: Vec<String> = browser
        .all("#edges .edge-label")
        .iter()
        .map(|e| {
            browser
                .call("GET", &format!("/element/{e}/text"), Value::Null)
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    assert_eq!(labels, ["HASH", "FORWARD"], "{labels:?}");
    wait_until("the job's state", || {
        browser.text("#job-state") == "RUNNING"
    });
    let count = || {
        browser
            .text(".vertex .records-out")
            .replace(',', "")
            .parse::<u64>()
            .unwrap_or(0)
    };
    let first = count();
    wait_until("records counted on the page", || count() > first);
    // Per-subtask detail, folded away until asked for.
    browser.click("#subtask-details summary");
    wait_until("the subtask table", || {
        browser
            .text("#subtask-table")
            .lines()
            .any(|row| row.starts_with("Source: numbers 1 RUNNING"))
    });
    browser.type_into("#savepoint-dir", &dir.display().to_string());
    browser.click("#savepoint-button");
    wait_until("the savepoint", || {
        browser
            .text("#savepoint-result")
            .starts_with("savepoint completed: file://")
    });
    wait_until("the savepoint in the history", || {
        browser
            .text("#checkpoint-history")
            .lines()
            .any(|row| row.contains("savepoint") && row.contains("COMPLETED"))
    });
    assert!(
        std::fs::read_dir(&dir).map(|d| d.count()).unwrap_or(0) == 1,
        "the savepoint is on disk"
    );
    // Duration, size and alignment charted: a bar per checkpoint in each.
    let rows = browser.all("#checkpoint-history tr").len();
    for chart in ["#checkpoint-chart", "#size-chart", "#alignment-chart"] {
        wait_until("the charts", || {
            browser.all(&format!("{chart} rect")).len() == rows
        });
    }
    job.cancel();
    let _ = job.wait();
}

/// Flink's `/jobs/:id/plan`: each node with its inputs and their ship
/// strategy; the default strategy resolved (forward between equal
/// parallelisms).
#[test]
fn the_plan_lists_each_operators_inputs() {
    let (job, port) = start(&[]);
    let base = format!("http://127.0.0.1:{port}/jobs/{}", job.job_id());
    let (status, plan) = call("GET", &format!("{base}/plan"), None, None);
    assert_eq!(status, 200);
    let nodes = plan["plan"]["nodes"].as_array().expect("nodes").clone();
    assert_eq!(nodes.len(), 3, "{plan}");
    assert!(
        nodes[0]["inputs"].as_array().is_some_and(Vec::is_empty),
        "{plan}"
    );
    assert_eq!(nodes[1]["inputs"][0]["id"], "0", "{plan}");
    assert_eq!(nodes[1]["inputs"][0]["ship_strategy"], "HASH", "{plan}");
    assert_eq!(nodes[2]["inputs"][0]["id"], "1", "{plan}");
    assert_eq!(nodes[2]["inputs"][0]["ship_strategy"], "FORWARD", "{plan}");
    let (_, detail) = call("GET", &base, None, None);
    assert_eq!(detail["plan"], plan["plan"]);
    job.cancel();
    let _ = job.wait();
}

#[test]
fn vertices_are_initializing_until_their_subtasks_opened() {
    use std::sync::{Arc, Barrier};
    /// Opens only once the test lets it.
    #[derive(Clone)]
    struct SlowOpen(Arc<Barrier>);
    impl MapFunction<u64, u64> for SlowOpen {
        fn open(&mut self, _ctx: &RuntimeContext) -> FunctionResult {
            self.0.wait();
            Ok(())
        }
        fn map(&mut self, i: u64) -> u64 {
            i
        }
    }
    let gate = Arc::new(Barrier::new(2));
    let env = StreamExecutionEnvironment::new();
    let mut c = Configuration::new();
    c.set("rest.port", "0");
    env.configure(&c).expect("configuration");
    env.add_source(
        GeneratorSource::new(u64::MAX, |i| i).with_rate_limit(2_000.0),
        "numbers",
    )
    .rebalance()
    .map(SlowOpen(Arc::clone(&gate)))
    .add_sink(DiscardingSink);
    let job = env.execute_async("opening").expect("the job starts");
    let url = format!(
        "http://127.0.0.1:{}/jobs/{}",
        job.rest_address().expect("served").port(),
        job.job_id()
    );
    let statuses = || -> Vec<String> {
        let detail = call("GET", &url, None, None).1;
        detail["vertices"]
            .as_array()
            .expect("vertices")
            .iter()
            .map(|v| format!("{} {}", v["name"].as_str().unwrap_or("?"), v["status"]))
            .collect()
    };
    wait_until("the source to run", || {
        statuses()
            .iter()
            .any(|s| s.starts_with("Source") && s.ends_with("\"RUNNING\""))
    });
    let before = statuses();
    assert!(
        before.iter().any(|s| s == "Map \"INITIALIZING\""),
        "the map has not opened: {before:?}"
    );
    gate.wait();
    wait_until("every vertex to run", || {
        statuses().iter().all(|s| s.ends_with("\"RUNNING\""))
    });
    job.cancel();
}

/// Counts per key in a `ValueState` (kept in the state backend).
#[cfg(feature = "rocksdb")]
#[derive(Clone, Default)]
struct CountPerKey(Option<ValueState<u64>>);

#[cfg(feature = "rocksdb")]
impl KeyedProcessFunction<u64, u64, u64> for CountPerKey {
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.0 = Some(ctx.get_state(&ValueStateDescriptor::new("count"))?);
        Ok(())
    }

    fn process_element(
        &mut self,
        _value: u64,
        _ctx: &mut ProcessContext<'_, u64>,
        out: &mut Collector<'_, u64>,
    ) -> FunctionResult {
        let count = self.0.as_ref().ok_or("not opened")?;
        let n = count.value()?.unwrap_or(0) + 1;
        count.update(n)?;
        out.collect(n);
        Ok(())
    }
}

/// RocksDB's own figures per operator subtask in `/metrics`: memtable
/// size, pending compaction bytes, estimated keys, block cache use, and
/// (with Flink's `state.backend.rocksdb.metrics.*` keys) cache hits and
/// misses.
#[cfg(feature = "rocksdb")]
#[test]
fn rocksdb_statistics_are_scraped_per_subtask() {
    let env = StreamExecutionEnvironment::new();
    let mut c = Configuration::new();
    c.set("rest.port", "0")
        .set("state.backend.type", "rocksdb")
        .set("weir.state.rocksdb.write-back-cache.size", "0")
        .set("state.backend.rocksdb.metrics.block-cache-hit", "true");
    env.configure(&c).expect("configuration");
    env.add_source(
        GeneratorSource::new(u64::MAX, |i| i).with_rate_limit(2_000.0),
        "numbers",
    )
    .key_by(|i| i % 100)
    .process(CountPerKey::default())
    .add_sink(DiscardingSink);
    let job = env.execute_async("rocksdb").expect("the job starts");
    let port = job.rest_address().expect("served").port();
    let value = |text: &str, name: &str| -> Option<f64> {
        text.lines()
            .find(|l| l.starts_with(name) && l.contains("KeyedProcess"))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
    };
    let mut text = String::new();
    wait_until("RocksDB's keys in the metrics", || {
        text = ureq::get(&format!("http://127.0.0.1:{port}/metrics"))
            .call()
            .expect("scraped")
            .into_string()
            .expect("body");
        value(
            &text,
            "weir_taskmanager_job_task_operator_rocksdb_estimate_num_keys",
        )
        .is_some_and(|n| n > 0.0)
    });
    assert!(
        value(
            &text,
            "weir_taskmanager_job_task_operator_rocksdb_cur_size_all_mem_tables"
        )
        .is_some_and(|n| n > 0.0),
        "{text}"
    );
    for name in [
        "weir_taskmanager_job_task_operator_rocksdb_estimate_pending_compaction_bytes",
        "weir_taskmanager_job_task_operator_rocksdb_block_cache_usage",
        "weir_taskmanager_job_task_operator_rocksdb_block_cache_hit",
        "weir_taskmanager_job_task_operator_rocksdb_block_cache_miss",
    ] {
        assert!(value(&text, name).is_some(), "{name}: {text}");
    }
    assert!(
        text.lines()
            .any(|l| l.contains("rocksdb_estimate_num_keys") && l.contains("subtask_index=\"0\"")),
        "{text}"
    );
    job.cancel();
    let _ = job.wait();
}

/// A source waiting for input that never comes is idle, not busy (as
/// Flink counts a source without data).
#[test]
fn a_source_without_data_counts_as_idle() {
    #[derive(Clone)]
    struct Silent;
    impl SourceFunction<u64> for Silent {
        fn poll_next(&mut self, _ctx: &mut SourceContext<'_, u64>) -> FunctionResult<SourceStatus> {
            // As a socket source blocks for data that does not come.
            std::thread::sleep(Duration::from_millis(20));
            Ok(SourceStatus::More)
        }
    }
    let env = StreamExecutionEnvironment::new();
    let mut c = Configuration::new();
    c.set("rest.port", "0");
    env.configure(&c).expect("configuration");
    env.add_source(Silent, "silent").add_sink(DiscardingSink);
    let job = env.execute_async("silent").expect("the job starts");
    let url = format!(
        "http://127.0.0.1:{}/jobs/{}/vertices/0/metrics?get=0.idleTimeMsPerSecond,0.busyTimeMsPerSecond",
        job.rest_address().expect("served").port(),
        job.job_id()
    );
    let mut values = Value::Null;
    wait_until("the source's idle time", || {
        values = call("GET", &url, None, None).1;
        values.as_array().is_some_and(|v| v.len() == 2)
    });
    let value = |id: &str| -> f64 {
        values
            .as_array()
            .and_then(|v| v.iter().find(|e| e["id"] == id))
            .and_then(|e| e["value"].as_str())
            .and_then(|v| v.parse().ok())
            .unwrap_or(f64::NAN)
    };
    assert!(value("0.idleTimeMsPerSecond") > 800.0, "{values}");
    assert!(value("0.busyTimeMsPerSecond") < 200.0, "{values}");
    job.cancel();
}
