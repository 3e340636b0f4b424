//! `kafka_to_postgres` killed with SIGKILL at random moments and resumed
//! from its newest checkpoint each time, against a local Kafka broker and
//! PostgreSQL: the final table equals what a run without failures writes.
//! `WEIR_KILLS` sets how many kills (default 20 per sink).
#![cfg(feature = "connectors")]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use weir::prelude::*;
use weir_connectors::kafka::{KafkaSink, LocalKafka};
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

/// How many completed checkpoints (`_metadata` files) are under `dir`.
fn checkpoints(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .flat_map(|job| {
            std::fs::read_dir(job.path())
                .into_iter()
                .flatten()
                .flatten()
        })
        .filter(|chk| chk.path().join("_metadata").is_file())
        .count()
}

fn kills() -> u32 {
    std::env::var("WEIR_KILLS")
        .ok()
        .and_then(|k| k.parse().ok())
        .unwrap_or(20)
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

    let dir = std::env::temp_dir().join(format!("weir-k2p-{two_phase}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    // The runs' standard error, kept for a failure's message.
    let log = std::env::temp_dir().join(format!("weir-k2p-{two_phase}-{}.log", std::process::id()));
    let seed = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64);
    eprintln!("kill seed {seed}");
    let mut random = Lcg(seed);
    let run = || {
        let mut cmd = Command::new(example("kafka_to_postgres"));
        cmd.args(["--bootstrap-servers", &kafka.bootstrap_servers()])
            .args(["--topic", "amounts", "--table", "totals", "--bounded"])
            .args(["--postgres", &pg.url(), "--rate", "1000", "-p", "2"])
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
        if two_phase {
            cmd.arg("--two-phase-commit");
        }
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
        let (mut job, restoring) = run();
        restored += u32::from(restoring);
        if killed < kills() {
            // A random moment after this run's first checkpoint, so that
            // every run makes progress however slow the machine is (the
            // checkpoints of a run killed before are kept as they were).
            let waiting = Instant::now() + Duration::from_secs(30);
            while checkpoints(&dir) <= before
                && job.try_wait().expect("status").is_none()
                && Instant::now() < waiting
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            std::thread::sleep(Duration::from_millis(random.next(100)));
            if job.try_wait().expect("status").is_none() {
                job.kill().expect("SIGKILL");
                let _ = job.wait();
                killed += 1;
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
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&log);
}

#[test]
fn upserts_survive_kills() {
    survives_kills(false);
}

#[test]
fn two_phase_commit_survives_kills() {
    survives_kills(true);
}
