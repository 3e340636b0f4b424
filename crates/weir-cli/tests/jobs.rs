//! The seed's walk-through through the real binaries: the running total
//! word count (no periodic checkpoints) started detached with `weir run`,
//! listed, savepointed and
//! stopped with the CLI over its REST API (an ephemeral port), resumed at
//! another parallelism from the stop's savepoint: one more word continues
//! the total exactly.

use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn weir() -> Command {
    Command::new(env!("CARGO_BIN_EXE_weir"))
}

/// An example program built next to this test.
fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let target = exe
        .parent()
        .and_then(Path::parent)
        .expect("target directory");
    let path = target.join("examples").join(name);
    assert!(
        path.exists(),
        "{} is missing: build the examples first (cargo test --workspace does)",
        path.display()
    );
    path
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("weir-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).to_string()
}

fn ok(mut cmd: Command) -> String {
    let out = cmd.output().expect("weir runs");
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}{}",
        stdout(&out),
        String::from_utf8_lossy(&out.stderr)
    );
    stdout(&out)
}

/// The value after `prefix` on the line that has it.
fn field(text: &str, prefix: &str) -> String {
    text.lines()
        .find_map(|l| l.strip_prefix(prefix))
        .unwrap_or_else(|| panic!("no '{prefix}' in:\n{text}"))
        .trim()
        .to_string()
}

fn wait_for_line(log: &Path, wanted: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if text.lines().any(|l| l.ends_with(wanted)) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "no line {wanted} in {}:\n{text}",
            log.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The next connection to `listener`, failing the test (instead of
/// hanging) if none comes within a minute.
fn accept_within(listener: &TcpListener) -> std::net::TcpStream {
    listener.set_nonblocking(true).expect("non-blocking");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match listener.accept() {
            Ok((conn, _)) => {
                conn.set_nonblocking(false).expect("blocking");
                return conn;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                assert!(Instant::now() < deadline, "the job never connected");
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => panic!("accept: {e}"),
        }
    }
}

/// Waits until the job at `address` ended: its REST API goes away.
fn wait_until_gone(address: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let out = weir()
            .args(["list", "-m", address])
            .output()
            .expect("weir runs");
        if !out.status.success() {
            assert!(String::from_utf8_lossy(&out.stderr).contains("no Weir REST API"));
            return;
        }
        assert!(Instant::now() < deadline, "the stopped job still runs");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `weir run -d` of the running total, reading words from `port`.
fn run_detached(port: u16, log: &Path, extra: &[&str]) -> (String, String) {
    let mut cmd = weir();
    cmd.args(["run", "-d", "--rest-port", "0", "--log"])
        .arg(log)
        .args(extra)
        .arg(example("running_total_word_count"))
        .args(["--host", "127.0.0.1", "--port", &port.to_string()]);
    let out = ok(cmd);
    let job = field(&out, "Job has been submitted with JobID ");
    let address = field(&out, "REST API: http://");
    assert_eq!(job.len(), 32, "{out}");
    (job, address)
}

#[test]
fn savepoint_stop_and_resume_continue_the_total() {
    let dir = temp_dir("walkthrough");
    let savepoints = dir.join("savepoints");
    let words = TcpListener::bind("127.0.0.1:0").expect("listen");
    let port = words.local_addr().expect("address").port();

    let first_log = dir.join("first.log");
    let (job, address) = run_detached(port, &first_log, &[]);
    let mut conn = accept_within(&words);
    conn.write_all(b"hello world\naa bb cc\n").expect("send");
    wait_for_line(&first_log, "(cc,5)");

    let mut list = weir();
    list.args(["list", "-a", "-m", &address, "--archive-dir"])
        .arg(dir.join("archive"));
    let listed = ok(list);
    // Flink's layout: the running job with its start date, then (-a) the
    // terminated ones, of which there are none.
    let running = listed
        .lines()
        .find(|l| l.contains(&job))
        .unwrap_or_else(|| panic!("{listed}"));
    assert!(running.contains("(RUNNING, "), "{listed}");
    assert_eq!(
        running.as_bytes().get(2),
        Some(&b'.'),
        "a date first: {running}"
    );
    assert!(
        listed.contains("Terminated Jobs") && listed.contains("No terminated jobs."),
        "{listed}"
    );

    let mut savepoint = weir();
    savepoint
        .args(["savepoint", "-m", &address, &job])
        .arg(&savepoints);
    let taken = field(&ok(savepoint), "Savepoint completed. Path: ");
    let taken = PathBuf::from(taken.trim_start_matches("file://"));
    assert!(taken.join("_metadata").is_file(), "{}", taken.display());

    // An unknown job is a clear error, not a crash.
    let out = weir()
        .args(["savepoint", "-m", &address, &"0".repeat(32)])
        .output()
        .expect("weir runs");
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not found"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let mut stop = weir();
    stop.args(["stop", "-m", &address, "--savepoint-path"])
        .arg(&savepoints)
        .arg(&job);
    let stopped = field(&ok(stop), "Savepoint completed. Path: ");
    drop(conn);
    wait_until_gone(&address);

    // The savepoint holds state the word count does not have: refused,
    // naming the flag, unless -n drops it.
    let word_file = dir.join("words.txt");
    std::fs::write(&word_file, "x y x\n").expect("words");
    let stopped_path = stopped.trim_start_matches("file://").to_string();
    let refused = weir()
        .args(["run", "--rest-port", "0", "-s", &stopped_path])
        .arg(example("word_count"))
        .arg("--input")
        .arg(&word_file)
        .output()
        .expect("weir runs");
    assert!(!refused.status.success());
    let why = String::from_utf8_lossy(&refused.stderr);
    assert!(why.contains("-n / --allow-non-restored-state"), "{why}");
    let mut allowed = weir();
    allowed
        .args(["run", "--rest-port", "0", "-n", "-s", &stopped_path])
        .arg(example("word_count"))
        .arg("--input")
        .arg(&word_file);
    assert!(ok(allowed).lines().any(|l| l == "(x,2)"));

    // Resume at parallelism 2 from the stop's savepoint.
    let second_log = dir.join("second.log");
    let (resumed, address) = run_detached(
        port,
        &second_log,
        &["-p", "2", "-s", stopped.trim_start_matches("file://")],
    );
    assert_ne!(resumed, job);
    let mut conn = accept_within(&words);
    conn.write_all(b"dd\n").expect("send");
    wait_for_line(&second_log, "(dd,6)");

    // Stop with a drain: the end-of-time watermark, a savepoint, the end.
    let mut drain = weir();
    drain
        .args(["stop", "--drain", "-m", &address, "--savepoint-path"])
        .arg(&savepoints)
        .arg(&resumed);
    let drained = field(&ok(drain), "Savepoint completed. Path: ");
    assert!(
        PathBuf::from(drained.trim_start_matches("file://"))
            .join("_metadata")
            .is_file(),
        "{drained}"
    );
    drop(conn);
    wait_until_gone(&address);

    // And a job cancelled: resumed once more, then cancelled.
    let third_log = dir.join("third.log");
    let (third, address) = run_detached(
        port,
        &third_log,
        &["-s", drained.trim_start_matches("file://")],
    );
    let _conn = accept_within(&words);
    let mut cancel = weir();
    cancel.args(["cancel", "-m", &address, &third]);
    assert!(ok(cancel).contains("Cancelled job"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_attached_run_streams_the_job_and_returns_its_status() {
    let dir = temp_dir("attached");
    let input = dir.join("words.txt");
    std::fs::write(&input, "to be or not to be\n").expect("input");
    let mut cmd = weir();
    cmd.args(["run", "--rest-port", "0"])
        .arg(example("running_total_word_count"))
        .arg("--input")
        .arg(&input);
    let out = ok(cmd);
    assert!(out.lines().any(|l| l.ends_with("(be,6)")), "{out}");

    // A job that fails to start fails the command, saying why.
    let out = weir()
        .args(["run", "--rest-port", "0"])
        .arg(example("running_total_word_count"))
        .args(["-D", "parallelism.default=zero"])
        .output()
        .expect("weir runs");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("parallelism.default: 'zero' is not a whole number"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_job_in_the_current_directory_runs_by_its_bare_name() {
    let program = example("running_total_word_count");
    let dir = temp_dir("bare-name");
    let input = dir.join("words.txt");
    std::fs::write(&input, "a a\n").expect("input");
    let mut cmd = weir();
    cmd.current_dir(program.parent().expect("examples dir"))
        .args([
            "run",
            "--rest-port",
            "0",
            "running_total_word_count",
            "--input",
        ])
        .arg(&input);
    let out = ok(cmd);
    assert!(out.lines().any(|l| l.ends_with("(a,2)")), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_detached_job_that_fails_at_once_is_reported_as_failed() {
    let dir = temp_dir("detached-fails");
    let out = weir()
        .args(["run", "-d", "--rest-port", "0", "--log"])
        .arg(dir.join("job.log"))
        .arg(example("running_total_word_count"))
        .args(["--input", "/nonexistent/words.txt"])
        .output()
        .expect("weir runs");
    let (stdout, stderr) = (stdout(&out), String::from_utf8_lossy(&out.stderr));
    assert!(!out.status.success(), "{stdout}{stderr}");
    assert!(!stdout.contains("has been submitted"), "{stdout}");
    assert!(stderr.contains("failed at once"), "{stderr}");
    assert!(stderr.contains("/nonexistent/words.txt"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn stopping_an_attached_weir_run_stops_its_job() {
    let words = TcpListener::bind("127.0.0.1:0").expect("listen");
    let port = words.local_addr().expect("address").port();
    let mut run = weir()
        .args(["run", "--rest-port", "0"])
        .arg(example("running_total_word_count"))
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("weir runs");
    // The job announces its REST API, then connects for words.
    let stderr = run.stderr.take().expect("stderr");
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(stderr));
    let address = loop {
        let line = lines
            .next()
            .expect("the job announces its REST API")
            .expect("readable");
        if let Some((_, address)) = line.split_once(" REST API at http://") {
            break address.trim().to_string();
        }
    };
    let _conn = accept_within(&words);
    let killed = Command::new("kill")
        .args(["-TERM", &run.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    let status = run.wait().expect("weir ends");
    assert!(!status.success());
    // weir waited for the job: its REST API is gone with it.
    assert!(
        std::net::TcpStream::connect(&address).is_err(),
        "the job still serves {address} after weir ended"
    );
}

#[test]
fn diagnose_names_the_source_that_holds_the_windows_back() {
    let dir = temp_dir("diagnose");
    let orders = TcpListener::bind("127.0.0.1:0").expect("listen");
    let port = orders.local_addr().expect("address").port();
    let log = dir.join("job.log");
    let mut cmd = weir();
    cmd.args(["run", "-d", "--rest-port", "0", "--log"])
        .arg(&log)
        .arg(example("order_report"))
        .args(["--host", "127.0.0.1", "--port", &port.to_string()]);
    let out = ok(cmd);
    let job = field(&out, "Job has been submitted with JobID ");
    let address = field(&out, "REST API: http://");
    let mut conn = accept_within(&orders);
    // Two orders in the window [10:00:00, 10:00:10), then nothing: the
    // watermark stays at 10:00:02 (the latest order minus 2 s).
    conn.write_all(b"1,alice,10,2026-12-01 10:00:01\n2,bob,5,2026-12-01 10:00:04\n")
        .expect("send");
    let deadline = Instant::now() + Duration::from_secs(60);
    let answer = loop {
        let answer = ok({
            let mut d = weir();
            d.args(["diagnose", "-m", &address, &job]);
            d
        });
        if answer.contains("with_idleness") {
            break answer;
        }
        assert!(Instant::now() < deadline, "{answer}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        answer.contains("waits for watermark ≥ 2026-12-01 10:00:09.999"),
        "{answer}"
    );
    assert!(
        answer.contains("its watermark is 2026-12-01 10:00:01.999"),
        "{answer}"
    );
    assert!(
        answer.contains("; source 'Source: Socket Stream' subtask 1 has had no records for"),
        "{answer}"
    );
    // A job id the API does not serve is an error naming it.
    let out = weir()
        .args(["diagnose", "-m", &address, &"0".repeat(32)])
        .output()
        .expect("weir runs");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not found"));
    let mut cancel = weir();
    cancel.args(["cancel", "-m", &address, &job]);
    ok(cancel);
    drop(conn);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A finished job's REST answers are archived; `weir list -a` lists it
/// after its own API is gone, and `weir history-server` serves them
/// read-only.
#[test]
fn an_ended_job_stays_visible_in_the_archive_and_the_history_server() {
    let dir = temp_dir("archive");
    let archive = dir.join("archive");
    let input = dir.join("words.txt");
    std::fs::write(&input, "to be or not to be\n").expect("input");
    let mut cmd = weir();
    cmd.args(["run", "--rest-port", "0"])
        .arg(example("word_count"))
        .arg("--input")
        .arg(&input)
        .arg("-D")
        .arg(format!("jobmanager.archive.fs.dir={}", archive.display()));
    let out = ok(cmd);
    assert!(out.lines().any(|l| l.ends_with("(be,2)")), "{out}");

    // Nothing runs at the address any more: the archive still lists it.
    let out = weir()
        .args(["list", "-a", "-m", "127.0.0.1:1", "--archive-dir"])
        .arg(&archive)
        .output()
        .expect("weir runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed = stdout(&out);
    let finished = listed
        .lines()
        .find(|l| l.contains("(FINISHED, "))
        .unwrap_or_else(|| panic!("{listed}"));
    let job = finished.split(" : ").nth(1).expect("a job id").to_string();
    assert_eq!(job.len(), 32, "{finished}");
    // Without -a, only the (unreachable) API is asked.
    let out = weir()
        .args(["list", "-m", "127.0.0.1:1", "--archive-dir"])
        .arg(&archive)
        .output()
        .expect("weir runs");
    assert!(!out.status.success());

    let mut server = weir()
        .args(["history-server", "--port", "0", "--archive-dir"])
        .arg(&archive)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the history server starts");
    let mut first = String::new();
    {
        use std::io::BufRead;
        let stderr = server.stderr.take().expect("stderr");
        std::io::BufReader::new(stderr)
            .read_line(&mut first)
            .expect("its address");
    }
    let base = first
        .split("history server at ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("{first}"))
        .to_string();
    let get = |path: &str| -> (u16, serde_json::Value) {
        match ureq::get(&format!("{base}{path}")).call() {
            Ok(r) => (r.status(), r.into_json().expect("json")),
            Err(ureq::Error::Status(code, r)) => (code, r.into_json().expect("json")),
            Err(e) => panic!("{path}: {e}"),
        }
    };
    let (_, overview) = get("/jobs/overview");
    assert_eq!(overview["jobs"][0]["jid"], job.as_str(), "{overview}");
    assert_eq!(overview["jobs"][0]["state"], "FINISHED", "{overview}");
    let (_, detail) = get(&format!("/jobs/{job}"));
    assert!(
        detail["vertices"].as_array().is_some_and(|v| v
            .iter()
            .any(|v| v["name"].as_str().is_some_and(|n| n.contains("Source")))),
        "{detail}"
    );
    let (_, metrics) = get(&format!("/jobs/{job}/vertices/0/metrics"));
    assert!(
        metrics.as_array().is_some_and(|m| m
            .iter()
            .any(|e| e["id"] == "numRecordsOut" && e["value"] != "0")),
        "{metrics}"
    );
    let (status, _) = get(&format!("/jobs/{}", "0".repeat(32)));
    assert_eq!(status, 404);
    let refused = ureq::request("PATCH", &format!("{base}/jobs/{job}")).call();
    assert!(
        matches!(refused, Err(ureq::Error::Status(405, _))),
        "read-only: {refused:?}"
    );
    let page = ureq::get(&format!("{base}/"))
        .call()
        .expect("the dashboard")
        .into_string()
        .expect("html");
    assert!(page.contains("job-picker"));
    let _ = server.kill();
    let _ = server.wait();
    let _ = std::fs::remove_dir_all(&dir);
}
