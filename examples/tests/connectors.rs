//! `kafka_to_postgres` and `kafka_order_report` killed with SIGKILL at
//! random moments and resumed from their newest checkpoint each time,
//! against a local Kafka broker and PostgreSQL: the final table, and the
//! committed records, equal what a run without failures writes.
//! `WEIR_KILLS` sets how many kills (default 20 per test).
#![cfg(feature = "connectors")]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use weir::prelude::*;
use weir_connectors::kafka::{read_committed, read_topic, KafkaSink, LocalKafka};
use weir_connectors::postgres::LocalPostgres;

const KEYS: u64 = 20;
const RECORDS: u64 = 20_000;

fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    exe.parent()
        .and_then(Path::parent)
        .expect("target directory")
        .join("examples")
        .join(name)
}

/// A cheap random sequence seeded from the clock (printed, to repeat a run).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % below
    }
}

/// The checkpoints under `dir` (`<job>/chk-<id>`), as (id, complete).
fn checkpoint_dirs(dir: &Path) -> Vec<(u64, bool)> {
    job_dirs(dir)
        .into_iter()
        .flat_map(|job| std::fs::read_dir(job).into_iter().flatten().flatten())
        .filter_map(|chk| {
            let id = chk
                .file_name()
                .to_str()
                .and_then(|n| n.strip_prefix("chk-"))
                .and_then(|n| n.parse::<u64>().ok())?;
            Some((id, chk.path().join("_metadata").is_file()))
        })
        .collect()
}

/// The job directories under `dir` (each run of a job gets its own).
fn job_dirs(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|job| job.path())
        .collect()
}

/// How many completed checkpoints (`_metadata` files) are under `dir`.
fn checkpoints(dir: &Path) -> usize {
    checkpoint_dirs(dir)
        .iter()
        .filter(|(_, done)| *done)
        .count()
}

/// Whether a checkpoint under `dir` newer than every completed one has
/// files but no `_metadata` yet (older ones may be left by killed runs).
fn checkpoint_in_progress(dir: &Path) -> bool {
    let all = checkpoint_dirs(dir);
    let newest_complete = all
        .iter()
        .filter(|(_, done)| *done)
        .map(|(id, _)| *id)
        .max();
    let newest = all.iter().map(|(id, _)| *id).max();
    newest > newest_complete
}

/// Polls `ready` every millisecond for up to ten seconds.
fn await_condition(ready: impl Fn() -> bool) {
    let until = Instant::now() + Duration::from_secs(10);
    while !ready() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn kills() -> u32 {
    std::env::var("WEIR_KILLS")
        .ok()
        .and_then(|k| k.parse().ok())
        .unwrap_or(20)
}

/// How a run of kills went.
struct Kills {
    killed: u32,
    seed: u64,
}

/// Runs `example` with `args` (and `--bounded --rate 1000 -p 2`) and a
/// checkpoint directory, kills it with
/// SIGKILL at a random moment after each run's first new checkpoint,
/// `kills()` times, resuming each run from the newest checkpoint; the last
/// run reads to the end and must succeed.
fn run_with_kills(example_name: &str, args: &[String]) -> Kills {
    let tag = format!("{example_name}-{}-{}", std::process::id(), args.len());
    let dir = std::env::temp_dir().join(format!("weir-{tag}"));
    let _ = std::fs::remove_dir_all(&dir);
    // The runs' standard error, kept for a failure's message.
    let log = std::env::temp_dir().join(format!("weir-{tag}.log"));
    let _ = std::fs::remove_file(&log);
    let seed = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64);
    eprintln!("{example_name}: kill seed {seed}");
    let mut random = Lcg(seed);
    let run = || {
        let mut cmd = Command::new(example(example_name));
        cmd.args(args)
            // Bounded, slow enough for every kill to land part-way.
            .args(["--bounded", "--rate", "1000", "-p", "2"])
            .args(["-D", "execution.checkpointing.interval=50ms"])
            .arg("-D")
            .arg(format!("execution.checkpointing.dir={}", dir.display()))
            .args([
                "-D",
                "execution.checkpointing.externalized-checkpoint-retention=RETAIN_ON_CANCELLATION",
            ])
            .stdout(Stdio::null())
            .stderr(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&log)
                    .expect("log"),
            );
        let restoring = checkpoints(&dir) > 0;
        if restoring {
            cmd.arg("--from-savepoint").arg(&dir);
        }
        (cmd.spawn().expect("starts"), restoring)
    };
    let (mut killed, mut restored) = (0, 0);
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let before = checkpoints(&dir);
        let jobs_before = job_dirs(&dir);
        let (mut job, restoring) = run();
        restored += u32::from(restoring);
        if killed < kills() {
            // After this run's first checkpoint, so that every run makes
            // progress however slow the machine is (the checkpoints of a
            // run killed before are kept as they were).
            let waiting = Instant::now() + Duration::from_secs(30);
            while checkpoints(&dir) <= before
                && job.try_wait().expect("status").is_none()
                && Instant::now() < waiting
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            // Then at a random moment, or in one of the two short windows
            // where exactly-once is hardest: a checkpoint taken but not
            // yet complete (a sink that committed at the barrier would
            // duplicate), and one just completed (its transactions likely
            // not yet committed: the restore must finish them).
            match killed % 3 {
                0 => std::thread::sleep(Duration::from_millis(random.next(100))),
                1 => await_condition(|| checkpoint_in_progress(&dir)),
                _ => {
                    let done = checkpoints(&dir);
                    await_condition(|| checkpoints(&dir) > done);
                }
            }
            // This run's checkpoint directory, by now created.
            let own = job_dirs(&dir)
                .into_iter()
                .find(|d| !jobs_before.contains(d));
            if job.try_wait().expect("status").is_none() {
                job.kill().expect("SIGKILL");
                let _ = job.wait();
                killed += 1;
                if own.is_some_and(|d| !d.exists()) {
                    // The kill came after the job had ended: a finished
                    // job discards its checkpoints, and resuming from an
                    // older run's would repeat what this one committed.
                    break;
                }
                continue;
            }
        }
        // The last run reads to the end: a run that does not end in two
        // minutes fails the test (with the runs' log) instead of hanging it.
        let ending = Instant::now() + Duration::from_secs(120);
        while job.try_wait().expect("status").is_none() && Instant::now() < ending {
            std::thread::sleep(Duration::from_millis(20));
        }
        if job.try_wait().expect("status").is_none() {
            let _ = job.kill();
            let _ = job.wait();
            panic!(
                "the last run did not end within two minutes: {}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        let status = job.wait().expect("ends");
        assert!(
            status.success(),
            "the job failed ({status}): {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        break;
    }
    assert!(Instant::now() < deadline);
    assert_eq!(killed, kills(), "the input ended before every kill landed");
    // Most runs resumed from a checkpoint of an earlier one: the kills
    // came after checkpoints, not only before the first.
    eprintln!("{killed} kills, {restored} restores");
    assert!(
        restored >= killed / 2,
        "{restored} restores after {killed} kills"
    );
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&log);
    Kills { killed, seed }
}

fn survives_kills(two_phase: bool) {
    let kafka = LocalKafka::start().unwrap_or_else(|e| panic!("{e}"));
    let pg = LocalPostgres::start().unwrap_or_else(|e| panic!("{e}"));
    kafka.create_topic("amounts", 3).expect("topic");
    // k0..k19 in blocks (each key's records together, so a key's last
    // row is written long before the end and nothing later repairs it),
    // with amounts 1, 2, 3, …: the totals are known.
    let (key, value) = LocalKafka::ONE_RECORD_PER_BATCH;
    let env = StreamExecutionEnvironment::new();
    env.from_sequence(0, RECORDS as i64 - 1).add_sink(
        KafkaSink::new(&kafka.bootstrap_servers(), "amounts", |i: &i64| {
            let (i, per_key) = (*i as u64, RECORDS / KEYS);
            let text = format!("k{},{}", i / per_key, i % per_key + 1);
            (None, text.into_bytes())
        })
        .with_property(key, value),
    );
    env.execute("produce").expect("produced");

    let mut args: Vec<String> = [
        "--bootstrap-servers",
        &kafka.bootstrap_servers(),
        "--topic",
        "amounts",
        "--table",
        "totals",
        "--postgres",
        &pg.url(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if two_phase {
        args.push("--two-phase-commit".into());
    }
    let Kills { killed, seed, .. } = run_with_kills("kafka_to_postgres", &args);

    let mut db = postgres::Client::connect(&pg.url(), postgres::NoTls).expect("connects");
    let rows: Vec<(String, i64)> = db
        .query("SELECT k, total FROM totals ORDER BY k", &[])
        .expect("query")
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let per_key = RECORDS / KEYS;
    let mut expected: Vec<(String, i64)> = (0..KEYS)
        .map(|k| (format!("k{k}"), (per_key * (per_key + 1) / 2) as i64))
        .collect();
    expected.sort();
    assert_eq!(rows, expected, "after {killed} kills (seed {seed})");
    let prepared: i64 = db
        .query_one("SELECT count(*) FROM pg_prepared_xacts", &[])
        .expect("count")
        .get(0);
    assert_eq!(prepared, 0, "prepared transactions left on the server");
}

#[test]
fn upserts_survive_kills() {
    survives_kills(false);
}

#[test]
fn two_phase_commit_survives_kills() {
    survives_kills(true);
}

/// Order lines, four per second of event time, for three users; every 7th
/// order 2 s out of order (within the bound), every 50th 11 s late (within
/// the allowed lateness: its window fires again), every 97th 25 s late
/// (to the side output).
fn order_lines(n: u64) -> Vec<String> {
    let base = 1_714_557_600u64; // 2024-05-01 10:00:00 UTC
    (0..n)
        .map(|i| {
            let mut t = base + i / 4;
            if i % 97 == 96 {
                t -= 25;
            } else if i % 50 == 49 {
                t -= 11;
            } else if i % 7 == 6 {
                t -= 2;
            }
            let (day, rest) = (t / 86_400, t % 86_400);
            // 2024-05-01 is day 19 844 since the epoch.
            assert_eq!(day, 19_844, "the orders stay within one day");
            format!(
                "o{i},u{},{}.25,2024-05-01 {:02}:{:02}:{:02}",
                i % 3,
                i % 100,
                rest / 3600,
                rest / 60 % 60,
                rest % 60
            )
        })
        .collect()
}

#[test]
fn the_kafka_order_report_survives_kills() {
    const ORDERS: u64 = 20_000;
    let kafka = LocalKafka::start().unwrap_or_else(|e| panic!("{e}"));
    let servers = kafka.bootstrap_servers();
    for topic in ["orders", "report", "late", "commits"] {
        kafka.create_topic(topic, 1).expect("topic");
    }
    let lines = order_lines(ORDERS);
    // What `order_report` prints for the same orders, read from a file.
    let file = std::env::temp_dir().join(format!("weir-orders-{}.csv", std::process::id()));
    std::fs::write(&file, lines.join("\n")).expect("writes");
    let out = Command::new(example("order_report"))
        .arg("--input")
        .arg(&file)
        .output()
        .expect("order_report runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_file(&file);
    let mut expected: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    expected.sort();
    assert!(
        expected.iter().any(|l| l.starts_with("late> ")) && expected.len() > 1_000,
        "the orders have late ones and fill many windows: {}",
        expected.len()
    );

    let (key, value) = LocalKafka::ONE_RECORD_PER_BATCH;
    let env = StreamExecutionEnvironment::new();
    env.from_collection(lines)
        .add_sink(KafkaSink::strings(&servers, "orders").with_property(key, value));
    env.execute("produce").expect("produced");

    let args: Vec<String> = [
        "--bootstrap-servers",
        &servers,
        "--input-topic",
        "orders",
        "--output-topic",
        "report",
        "--late-topic",
        "late",
        "--commit-log",
        "commits",
        "--producer-property",
        "batch.num.messages=1",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let Kills { killed, seed } = run_with_kills("kafka_order_report", &args);

    // The committed records, by the sinks' commit log (tansu does not hide
    // aborted transactions from readers).
    let committed = |topic: &str| -> Vec<String> {
        read_committed(&servers, topic, "commits")
            .expect("reads")
            .iter()
            .map(|r| r.text())
            .collect()
    };
    let mut report = committed("report");
    report.extend(committed("late").iter().map(|l| format!("late> {l}")));
    report.sort();
    let all = read_topic(&servers, "report").expect("reads").len();
    eprintln!("{} committed report lines of {all} written", report.len());
    if report != expected {
        let (mut extra, mut missing) = (report.clone(), Vec::new());
        for line in &expected {
            match extra.iter().position(|l| l == line) {
                Some(at) => {
                    extra.remove(at);
                }
                None => missing.push(line.clone()),
            }
        }
        panic!(
            "after {killed} kills (seed {seed}): {} lines, expected {}; \
             not expected: {extra:#?}; missing: {missing:#?}",
            report.len(),
            expected.len()
        );
    }
}
