//! Crash and resume, out of process: example jobs are killed with SIGKILL
//! at random moments and restarted from their newest retained checkpoint,
//! as an operator would after a machine died.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime};

mod support;
use support::accept_within;

fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let target = exe
        .parent()
        .and_then(Path::parent)
        .expect("target directory");
    target.join("examples").join(name)
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("weir-recovery-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// The newest completed checkpoint under `root` (any job), by the time its
/// metadata was written.
fn newest_checkpoint(root: &Path) -> Option<PathBuf> {
    let mut best: Option<(SystemTime, PathBuf)> = None;
    for job in std::fs::read_dir(root).ok()?.flatten() {
        let Ok(checkpoints) = std::fs::read_dir(job.path()) else {
            continue;
        };
        for chk in checkpoints.flatten() {
            let meta = chk.path().join("_metadata");
            if let Ok(modified) = meta.metadata().and_then(|m| m.modified()) {
                if best.as_ref().is_none_or(|(t, _)| modified > *t) {
                    best = Some((modified, chk.path()));
                }
            }
        }
    }
    best.map(|(_, p)| p)
}

/// The completed checkpoints (`chk-<id>` with `_metadata`) of the one job
/// under `root`, by id.
fn completed_checkpoints(root: &Path) -> Vec<(u64, PathBuf)> {
    let mut found = Vec::new();
    for job in std::fs::read_dir(root).into_iter().flatten().flatten() {
        for chk in std::fs::read_dir(job.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            let name = chk.file_name().to_string_lossy().to_string();
            let id = name
                .strip_prefix("chk-")
                .and_then(|n| n.parse::<u64>().ok());
            if let (Some(id), true) = (id, chk.path().join("_metadata").is_file()) {
                found.push((id, chk.path()));
            }
        }
    }
    found.sort();
    found
}

/// A cheap random sequence, seeded from the clock; the seed is printed so
/// a failing run can be repeated.
struct Lcg(u64);

impl Lcg {
    fn from_clock() -> Self {
        let seed = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64);
        eprintln!("random seed {seed}");
        Lcg(seed)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

/// The lines of the committed (visible) files under `dir`, sorted.
fn committed(dir: &Path) -> Vec<String> {
    let mut lines = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            let text = std::fs::read_to_string(entry.path()).expect("part file");
            lines.extend(text.lines().map(str::to_string));
        }
    }
    lines.sort();
    lines
}

fn word_count(input: &Path, output: &Path, checkpoints: &Path, extra: &[&str]) -> Command {
    word_count_to(input, output, &checkpoints.display().to_string(), extra)
}

/// The word count with checkpoints at `location` (a path or a URI).
fn word_count_to(input: &Path, output: &Path, location: &str, extra: &[&str]) -> Command {
    let mut cmd = Command::new(example("exactly_once_word_count"));
    cmd.arg("--input")
        .arg(input)
        .arg("--output")
        .arg(output)
        .args(["-D", "execution.checkpointing.interval=100ms"])
        .arg("-D")
        .arg(format!("execution.checkpointing.dir={location}"))
        .args([
            "-D",
            "execution.checkpointing.externalized-checkpoint-retention=RETAIN_ON_CANCELLATION",
            "-D",
            "execution.checkpointing.num-retained=3",
        ])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    cmd
}

#[test]
fn a_job_killed_again_and_again_commits_each_result_exactly_once() {
    let dir = temp_dir("kill");
    let (input, clean) = input_and_clean_run(&dir, 800);

    let (output, checkpoints) = (dir.join("out"), dir.join("chk"));
    let mut rng = Lcg::from_clock();
    let mut kills = 0;
    let finished = loop {
        let mut args = vec!["--rate".to_string(), "250".to_string()];
        if let Some(chk) = newest_checkpoint(&checkpoints) {
            args.push("--from-savepoint".into());
            args.push(chk.display().to_string());
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut child: Child = word_count(&input, &output, &checkpoints, &args)
            .spawn()
            .expect("starts");
        if kills == 4 {
            break child.wait_with_output().expect("finishes");
        }
        // 800 lines at 250 a second: about 3 s if left alone.
        std::thread::sleep(Duration::from_millis(250 + rng.below(500)));
        match child.try_wait().expect("child status") {
            Some(_) => break child.wait_with_output().expect("finished"),
            None => {
                child.kill().expect("SIGKILL");
                let _ = child.wait();
                kills += 1;
            }
        }
    };
    assert!(
        finished.status.success(),
        "{}",
        String::from_utf8_lossy(&finished.stderr)
    );
    eprintln!(
        "{kills} kills; last run: {}",
        String::from_utf8_lossy(&finished.stderr)
    );
    assert!(kills >= 2, "the job finished before it was killed twice");
    assert_same_output(&clean, &output, kills);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The committed counts and windows under `output` are those of the run
/// without failures under `clean`, each line once.
fn assert_same_output(clean: &Path, output: &Path, kills: u32) {
    for part in ["counts", "windows"] {
        let expected = committed(&clean.join(part));
        assert!(!expected.is_empty());
        let got = committed(&output.join(part));
        // Not the lines themselves on failure: thousands of them.
        if got != expected {
            let twice = got.windows(2).filter(|w| w[0] == w[1]).count();
            panic!(
                "{part} after {kills} kills: {} lines, expected {} ({twice} repeated)",
                got.len(),
                expected.len()
            );
        }
    }
}

/// Writes `lines` lines of words under `dir` and runs the word count over
/// them without failures: the input and the clean run's output directory.
fn input_and_clean_run(dir: &Path, lines: u64) -> (PathBuf, PathBuf) {
    let input = dir.join("words.txt");
    std::fs::write(&input, words(lines)).expect("input");
    let clean = dir.join("clean");
    let status = word_count(&input, &clean, &dir.join("clean-chk"), &[])
        .status()
        .expect("runs");
    assert!(status.success());
    (input, clean)
}

/// Words over `lines` lines (1 to 5 words a line).
fn words(lines: u64) -> String {
    let vocabulary = ["stream", "window", "state", "barrier", "river", "weir"];
    let mut text = String::new();
    for line in 0..lines {
        for w in 0..(line % 5 + 1) {
            text.push_str(vocabulary[((line * 7 + w * 3) % 6) as usize]);
            text.push(' ');
        }
        text.push('\n');
    }
    text
}

/// How many kills a test makes: `var` from the environment, else `default`.
fn kills_wanted(var: &str, default: u32) -> u32 {
    std::env::var(var)
        .ok()
        .and_then(|k| k.parse().ok())
        .unwrap_or(default)
}

/// A supervisor's view: the same command line each time, with a fixed job
/// id and no `--from-savepoint`; each run resumes from the newest
/// checkpoint by itself. Killed `WEIR_KILLS` times (default 20) at random
/// moments after each run's first checkpoint; the committed output equals
/// a run without failures.
#[test]
fn the_same_command_line_after_each_kill_resumes_by_itself() {
    let kills = kills_wanted("WEIR_KILLS", 20);
    let dir = temp_dir("self-resume");
    let checkpoints = dir.join("chk");
    kill_and_resume(
        &dir,
        kills,
        &checkpoints.display().to_string(),
        &checkpoints,
        &[],
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The same with checkpoints in a bucket of a local S3 server, reached
/// through Flink's `s3.*` keys: a kill mid-upload leaves nothing that a
/// restore would take for a checkpoint unless its `_metadata` was written
/// (`WEIR_S3_KILLS` times, default 10).
#[test]
fn the_same_command_line_resumes_from_checkpoints_on_s3() {
    let kills = kills_wanted("WEIR_S3_KILLS", 10);
    let s3 = weir_state::file_system::LocalS3::start("weir-recovery-s3")
        .unwrap_or_else(|e| panic!("{e}"));
    let keys: Vec<String> = s3
        .config_keys()
        .into_iter()
        .flat_map(|(k, v)| ["-D".to_string(), format!("{k}={v}")])
        .collect();
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    let dir = temp_dir("self-resume-s3");
    kill_and_resume(
        &dir,
        kills,
        &s3.uri("chk"),
        &s3.bucket_dir().join("chk"),
        &keys,
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs the word count with a fixed job id and checkpoints at `location`
/// (seen on the local disk at `seen_at`), killing it `kills` times, then
/// lets it finish and compares its committed output with a clean run's.
fn kill_and_resume(dir: &Path, kills_wanted: u32, location: &str, seen_at: &Path, extra: &[&str]) {
    let (input, clean) = input_and_clean_run(dir, 10_000);
    let output = dir.join("out");
    // 100 s of input at 100 lines a second: each run (start, restore, a
    // checkpoint, a random wait) reads a second or a few of it before its
    // kill, on a loaded machine too. The last run reads the rest at full
    // speed: only the rate differs, the job id and everything else are the
    // same.
    let same_command = |rate: &'static str| {
        let mut args = vec![
            "--rate",
            rate,
            "-D",
            "$internal.pipeline.job-id=00000000000000000000000000c0ffee",
        ];
        args.extend_from_slice(extra);
        args
    };
    let mut rng = Lcg::from_clock();
    let (mut kills, mut resumed) = (0, 0);
    let finished = loop {
        let before = completed_checkpoints(seen_at).len();
        // One job directory: every run has the same id.
        let jobs = std::fs::read_dir(seen_at).map_or(0, |d| d.count());
        assert!(jobs <= 1, "{jobs} job directories");
        let last = kills == kills_wanted;
        let rate = if last { "1000000" } else { "100" };
        let mut child: Child = word_count_to(&input, &output, location, &same_command(rate))
            .spawn()
            .expect("starts");
        if last {
            break child.wait_with_output().expect("finishes");
        }
        let until = Instant::now() + Duration::from_secs(30);
        while completed_checkpoints(seen_at).len() <= before
            && child.try_wait().expect("status").is_none()
            && Instant::now() < until
        {
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(rng.below(200)));
        match child.try_wait().expect("child status") {
            Some(_) => break child.wait_with_output().expect("finished"),
            None => {
                child.kill().expect("SIGKILL");
                let _ = child.wait();
                kills += 1;
                resumed += u32::from(before > 0);
            }
        }
    };
    let stderr = String::from_utf8_lossy(&finished.stderr);
    assert!(finished.status.success(), "{stderr}");
    assert_eq!(
        kills, kills_wanted,
        "the input ended before every kill landed"
    );
    assert!(resumed + 1 >= kills, "{resumed} of {kills} runs resumed");
    assert!(
        stderr.contains("weir: resuming job 00000000000000000000000000c0ffee from"),
        "the last run says where it resumed: {stderr}"
    );
    assert_same_output(&clean, &output, kills);
}

/// Reads the child's stdout lines into a channel.
fn lines_of(child: &mut Child) -> mpsc::Receiver<String> {
    let stdout = child.stdout.take().expect("piped stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

fn expect_line(rx: &mpsc::Receiver<String>, wanted: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) if line == wanted => return,
            Ok(_) => {}
            Err(_) => panic!("no line {wanted}"),
        }
    }
}

/// The seed's walk-through: a running total over a socket, killed after
/// five words and resumed from its checkpoint: one more word makes six.
#[test]
fn the_running_total_resumes_from_its_checkpoint_after_a_kill() {
    let dir = temp_dir("socket");
    let server = TcpListener::bind("127.0.0.1:0").expect("listen");
    let port = server.local_addr().expect("address").port().to_string();
    let start = |restore: Option<PathBuf>| {
        let mut cmd = Command::new(example("running_total_word_count"));
        cmd.args(["--port", &port, "--host", "127.0.0.1"])
            .args(["-D", "execution.checkpointing.interval=50ms"])
            .arg("-D")
            .arg(format!("execution.checkpointing.dir={}", dir.display()))
            .args([
                "-D",
                "execution.checkpointing.externalized-checkpoint-retention=RETAIN_ON_CANCELLATION",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        if let Some(path) = restore {
            cmd.arg("--from-savepoint").arg(path);
        }
        cmd.spawn().expect("starts")
    };

    let mut first = start(None);
    let out = lines_of(&mut first);
    let mut conn = accept_within(&server);
    conn.write_all(b"hello world\naa bb cc\n").expect("send");
    expect_line(&out, "(cc,5)");
    // Checkpoint `newest + 1` may have been triggered before the fifth
    // word; `newest + 2` is triggered after `newest + 1` completed, which
    // was after now: it holds the total of five.
    let newest = completed_checkpoints(&dir).last().map_or(0, |(id, _)| *id);
    let deadline = Instant::now() + Duration::from_secs(30);
    let checkpoint = loop {
        if let Some((_, chk)) = completed_checkpoints(&dir)
            .into_iter()
            .find(|(id, _)| *id >= newest + 2)
        {
            break chk;
        }
        assert!(Instant::now() < deadline, "no checkpoint after the words");
        std::thread::sleep(Duration::from_millis(10));
    };
    first.kill().expect("SIGKILL");
    let _ = first.wait();
    drop(conn);

    let mut second = start(Some(checkpoint));
    let out = lines_of(&mut second);
    let mut conn = accept_within(&server);
    conn.write_all(b"dd\n").expect("send");
    expect_line(&out, "(dd,6)");
    second.kill().expect("stop");
    let _ = second.wait();
    let _ = std::fs::remove_dir_all(&dir);
}
