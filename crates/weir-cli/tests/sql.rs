//! `weir sql` end to end: a SQL job with keyed state stopped with a
//! savepoint over its REST API and resumed from it with `-s`; the two
//! runs' changelogs together leave exactly the totals one run would.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn weir() -> Command {
    Command::new(env!("CARGO_BIN_EXE_weir"))
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("weir-sql-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// The changelog lines a print sink wrote into `path`.
fn changelog(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| {
            ["+I[", "-U[", "+U[", "-D["]
                .iter()
                .any(|p| l.starts_with(p))
        })
        .map(str::to_string)
        .collect()
}

/// The rows a changelog leaves; a retraction of a row never inserted
/// fails the test.
fn materialize(lines: &[String]) -> Vec<String> {
    let mut rows: Vec<String> = Vec::new();
    for line in lines {
        let (kind, row) = line.split_at(2);
        if kind.starts_with('+') {
            rows.push(row.to_string());
        } else {
            let i = rows
                .iter()
                .position(|r| r == row)
                .unwrap_or_else(|| panic!("{line} retracts a row never inserted"));
            rows.swap_remove(i);
        }
    }
    rows.sort();
    rows
}

const SCRIPT: &str = "
CREATE TABLE t (id BIGINT, k AS MOD(id, 3)) WITH ('connector' = 'datagen',
  'rows-per-second' = '400',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '3000');
CREATE TABLE out (k BIGINT, n BIGINT, total BIGINT) WITH ('connector' = 'print');
INSERT INTO out SELECT k, COUNT(*), SUM(id) FROM t GROUP BY k;
";

#[test]
fn a_sql_job_stopped_with_a_savepoint_resumes_exactly() {
    let (dir, savepoint) = stopped_and_resumed("savepoint", SCRIPT, SCRIPT);
    // A changed query does not take the aggregation's state: refused,
    // naming the flag.
    let changed = dir.join("changed.sql");
    std::fs::write(&changed, SCRIPT.replace("SUM(id)", "MAX(id)")).expect("script");
    let refused = weir()
        .args(["sql", "-s", &savepoint, "-f"])
        .arg(&changed)
        .output()
        .expect("weir sql runs");
    assert!(!refused.status.success());
    let why = String::from_utf8_lossy(&refused.stderr);
    assert!(
        why.contains("GroupAggregate[k; CountStar(BIGINT), Sum(BIGINT)]")
            && why.contains("-n / --allow-non-restored-state"),
        "{why}"
    );
}

/// The groups' state is the same with mini-batch and without: a job run
/// with it resumes without it.
#[test]
fn a_mini_batch_sql_job_resumes_without_mini_batch() {
    let mini_batch = "SET 'table.exec.mini-batch.enabled' = 'true';
SET 'table.exec.mini-batch.allow-latency' = '1 s';
SET 'table.exec.mini-batch.size' = '1000';";
    stopped_and_resumed("mini-batch", &format!("{mini_batch}{SCRIPT}"), SCRIPT);
}

/// Runs `first` until it printed a few updates, stops it with a savepoint
/// and resumes `second` from it; the two runs' changelogs together leave
/// the totals one run would. The directory and the savepoint.
fn stopped_and_resumed(name: &str, first: &str, second: &str) -> (PathBuf, String) {
    let dir = temp_dir(name);
    let script = dir.join("job.sql");
    std::fs::write(&script, first).expect("script");
    let resumed_script = dir.join("resumed.sql");
    std::fs::write(&resumed_script, second).expect("script");
    let first_out = dir.join("first.out");
    let first_err = dir.join("first.err");
    let mut first = weir()
        .args(["sql", "-D", "rest.port=0", "-f"])
        .arg(&script)
        .stdout(std::fs::File::create(&first_out).expect("out file"))
        .stderr(std::fs::File::create(&first_err).expect("err file"))
        .spawn()
        .expect("weir sql runs");
    // The job's REST API is announced on stderr.
    let deadline = Instant::now() + Duration::from_secs(60);
    let (job, address) = loop {
        let announced = std::fs::read_to_string(&first_err)
            .unwrap_or_default()
            .lines()
            .find_map(|l| {
                let rest = l.split_once("job ")?.1;
                let (job, address) = rest.split_once(" REST API at http://")?;
                Some((job.to_string(), address.trim().to_string()))
            });
        if let Some(found) = announced {
            break found;
        }
        assert!(Instant::now() < deadline, "no REST API announced");
        std::thread::sleep(Duration::from_millis(20));
    };
    // Wait until the job has updated its groups a few times.
    while changelog(&first_out).len() < 30 {
        assert!(Instant::now() < deadline, "the job printed nothing");
        std::thread::sleep(Duration::from_millis(20));
    }
    let stopped = weir()
        .args(["stop", "-m", &address, "--savepoint-path"])
        .arg(dir.join("savepoints"))
        .arg(&job)
        .output()
        .expect("weir stop runs");
    assert!(stopped.status.success(), "{stopped:?}");
    let text = String::from_utf8_lossy(&stopped.stdout).to_string();
    let savepoint = text
        .lines()
        .find_map(|l| l.strip_prefix("Savepoint completed. Path: file://"))
        .unwrap_or_else(|| panic!("{text}"))
        .to_string();
    let status = first.wait().expect("the first run ends");
    assert!(
        status.success(),
        "{status}: {}",
        std::fs::read_to_string(&first_err).unwrap_or_default()
    );
    let before = changelog(&first_out);
    assert!(
        !materialize(&before).contains(&"[0, 1000, 1501500]".to_string()),
        "the job was stopped before its end: {before:?}"
    );

    let resumed = weir()
        .args(["sql", "-s", &savepoint, "-f"])
        .arg(&resumed_script)
        .output()
        .expect("weir sql runs");
    assert!(resumed.status.success(), "{resumed:?}");
    let after: Vec<String> = String::from_utf8_lossy(&resumed.stdout)
        .lines()
        .filter(|l| l.starts_with(['+', '-']))
        .map(str::to_string)
        .collect();
    // Every id counted once over both runs: ids ≡ k (mod 3) up to 3000.
    let both: Vec<String> = before.into_iter().chain(after).collect();
    assert_eq!(
        materialize(&both),
        [
            "[0, 1000, 1501500]",
            "[1, 1000, 1499500]",
            "[2, 1000, 1500500]"
        ]
    );

    (dir, savepoint)
}
