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
    refused_restore(
        &dir,
        &savepoint,
        &SCRIPT.replace("SUM(id)", "MAX(id)"),
        "GroupAggregate[k; CountStar(BIGINT), Sum(BIGINT)]",
    );
}

/// Runs `script` from `savepoint` and checks that it is refused before
/// running, naming the operator `operator` whose state it lacks and the
/// flag that drops that state.
fn refused_restore(dir: &Path, savepoint: &str, script: &str, operator: &str) {
    let changed = dir.join("changed.sql");
    std::fs::write(&changed, script).expect("script");
    let refused = weir()
        .args(["sql", "-s", savepoint, "-f"])
        .arg(&changed)
        .output()
        .expect("weir sql runs");
    assert!(!refused.status.success());
    let why = String::from_utf8_lossy(&refused.stderr);
    assert!(
        why.contains(operator) && why.contains("-n / --allow-non-restored-state"),
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
    let resumed_script = dir.join("resumed.sql");
    std::fs::write(&resumed_script, second).expect("script");
    let (savepoint, before) = stopped_after(&dir, first, 30);
    assert!(
        !materialize(&before).contains(&"[0, 1000, 1501500]".to_string()),
        "the job was stopped before its end: {before:?}"
    );

    let after = resumed(&savepoint, &resumed_script);
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

/// The changelog rows `script` prints resumed from `savepoint`.
fn resumed(savepoint: &str, script: &Path) -> Vec<String> {
    let resumed = weir()
        .args(["sql", "-s", savepoint, "-f"])
        .arg(script)
        .output()
        .expect("weir sql runs");
    assert!(resumed.status.success(), "{resumed:?}");
    String::from_utf8_lossy(&resumed.stdout)
        .lines()
        .filter(|l| l.starts_with(['+', '-']))
        .map(str::to_string)
        .collect()
}

/// Runs `script` in `dir` until it printed `rows` changelog rows, then
/// stops it with a savepoint. The savepoint and the rows printed.
fn stopped_after(dir: &Path, script: &str, rows: usize) -> (String, Vec<String>) {
    let path = dir.join("job.sql");
    std::fs::write(&path, script).expect("script");
    let out = dir.join("first.out");
    let err = dir.join("first.err");
    let mut job_run = weir()
        .args(["sql", "-D", "rest.port=0", "-f"])
        .arg(&path)
        .stdout(std::fs::File::create(&out).expect("out file"))
        .stderr(std::fs::File::create(&err).expect("err file"))
        .spawn()
        .expect("weir sql runs");
    // The job's REST API is announced on stderr.
    let deadline = Instant::now() + Duration::from_secs(60);
    let (job, address) = loop {
        let announced = std::fs::read_to_string(&err)
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
    while changelog(&out).len() < rows {
        if Instant::now() >= deadline {
            // Not left running after the test.
            let _ = job_run.kill();
            panic!("the job printed too little: {:?}", changelog(&out));
        }
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
    let status = job_run.wait().expect("the job ends");
    assert!(
        status.success(),
        "{status}: {}",
        std::fs::read_to_string(&err).unwrap_or_default()
    );
    (savepoint, changelog(&out))
}

/// Nexmark q7's shape: rows joined with each window's largest id within
/// `SPAN` seconds before the window's end. Each id is a key of its own, 10
/// a second of event time per window of 10 s. At 2000 rows a second, the
/// default 200 ms watermark interval would let 400 rows (40 s of event
/// time) arrive between two watermarks, more than the state the test
/// bounds; at 10 ms the watermark trails by about 20 rows.
const HIGHEST: &str = "
SET 'pipeline.auto-watermark-interval' = '10 ms';
CREATE TABLE b (
  id BIGINT, ts AS CAST(TO_TIMESTAMP_LTZ(id * 100, 3) AS TIMESTAMP(3)),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH ('connector' = 'datagen', 'rows-per-second' = '2000',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '1000000');
CREATE TABLE out (id BIGINT, ts TIMESTAMP(3)) WITH ('connector' = 'print');
INSERT INTO out SELECT B.id, B.ts FROM b B
JOIN (
  SELECT MAX(id) AS top, window_end AS w
  FROM TABLE(TUMBLE(TABLE b, DESCRIPTOR(ts), INTERVAL '10' SECOND))
  GROUP BY window_start, window_end
) M ON B.id = M.top
WHERE B.ts BETWEEN M.w - INTERVAL 'SPAN' SECOND AND M.w;
";

/// The entries of the keyed state `name` a savepoint holds.
fn state_entries(savepoint: &str, name: &str) -> Option<usize> {
    let inspected = weir()
        .args(["checkpoint", "inspect", savepoint])
        .output()
        .expect("weir checkpoint inspect runs");
    assert!(inspected.status.success(), "{inspected:?}");
    let text = String::from_utf8_lossy(&inspected.stdout);
    let prefix = format!("keyed state '{name}'");
    text.lines().find_map(|l| {
        let entries = l.trim().strip_prefix(&prefix)?;
        // State an operator keeps in its own structures says so.
        let entries = entries
            .strip_prefix(" (the operator's own)")
            .unwrap_or(entries);
        entries
            .strip_prefix(": ")?
            .strip_suffix(" entries")?
            .parse()
            .ok()
    })
}

/// A regular join whose other side is a window aggregation's rows, bounded
/// by their window end, keeps only the rows a window still to come can
/// join. With a span of 15 s (reaching into the window before, so the join
/// stays a regular one), after thousands of rows its state holds about the
/// last 20 s of event time (the 15 s bound, the watermark's 1 s, a sweep's
/// 3.75 s). The windows' count is not read, so the join does not keep it:
/// their end moves a column to the left in the kept rows.
#[test]
fn a_join_with_windows_keeps_only_the_rows_windows_to_come_can_join() {
    let dir = temp_dir("highest");
    let script = HIGHEST
        .replace("SPAN", "15")
        .replace("MAX(id) AS top,", "MAX(id) AS top, COUNT(*) AS n,");
    // 30 windows joined: 3,000 rows read at least.
    let (savepoint, rows) = stopped_after(&dir, &script, 30);
    assert_eq!(rows[0], "+I[99, 1970-01-01 00:00:09.900]", "{rows:?}");
    let kept = state_entries(&savepoint, "left").expect("the join's state");
    assert!((100..=350).contains(&kept), "{kept} rows kept");
}

/// The same join grouped by its key runs the aggregation in the join's
/// operator, and still drops the rows no window to come can join: after
/// thousands of rows its state holds an entry for each row of about the
/// last 20 s and for each id that joined a window (one a window), not
/// one for every id read.
#[test]
fn a_join_aggregation_keeps_only_the_rows_windows_to_come_can_join() {
    let dir = temp_dir("highest-grouped");
    let script = HIGHEST.replace("SPAN", "15").replace(
        "INSERT INTO out SELECT B.id, B.ts FROM b B",
        "INSERT INTO out SELECT B.id, MAX(B.ts) FROM b B",
    );
    let script = script.replace(
        "WHERE B.ts BETWEEN M.w - INTERVAL '15' SECOND AND M.w;",
        "WHERE B.ts BETWEEN M.w - INTERVAL '15' SECOND AND M.w GROUP BY B.id;",
    );
    assert!(script.contains("GROUP BY B.id"), "{script}");
    // 30 groups joined: 3,000 rows read at least.
    let (savepoint, rows) = stopped_after(&dir, &script, 30);
    assert_eq!(rows[0], "+I[99, 1970-01-01 00:00:09.900]", "{rows:?}");
    let kept = state_entries(&savepoint, "joined-groups").expect("the join's state");
    assert!((100..=400).contains(&kept), "{kept} entries kept");
}

/// Within the window's span, the join is computed with the windows' maxima
/// by window: its state is a window's largest id and the rows at it, not
/// the rows themselves (3,000 rows read at least).
#[test]
fn a_join_with_its_own_windows_maxima_keeps_one_entry_a_window() {
    let dir = temp_dir("highest-by-window");
    let (savepoint, rows) = stopped_after(&dir, &HIGHEST.replace("SPAN", "10"), 30);
    assert_eq!(
        rows[..2],
        [
            "+I[99, 1970-01-01 00:00:09.900]",
            "+I[199, 1970-01-01 00:00:19.900]"
        ]
    );
    assert_eq!(state_entries(&savepoint, "left"), None, "no regular join");
    let windows = state_entries(&savepoint, "window-best").expect("the windows' state");
    // A row printed per window fired, whose maximum is kept for late rows;
    // a window or two still open.
    let fired = rows.len();
    assert!(
        (fired.saturating_sub(2)..=fired + 3).contains(&windows),
        "{windows} windows kept, {fired} fired"
    );
}

/// A regular join keeps only the columns its statement reads: a savepoint
/// of it holds rows of those columns alone, so a statement that reads
/// more of them does not restore from it (its rows would lack them), and
/// says so before any row flows.
#[test]
fn a_join_keeping_other_columns_does_not_restore_from_a_savepoint() {
    let dir = temp_dir("join-columns");
    let script = |select: &str| {
        format!(
            "
CREATE TABLE t (id BIGINT, x AS id * 2, y AS id * 3) WITH ('connector' = 'datagen',
  'rows-per-second' = '400',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '3000');
CREATE TABLE out (id BIGINT, x BIGINT, y BIGINT) WITH ('connector' = 'print');
INSERT INTO out SELECT {select} FROM t a JOIN t b ON a.id = b.id;
"
        )
    };
    let (savepoint, rows) = stopped_after(&dir, &script("a.id, b.x, 0"), 30);
    assert_eq!(rows[0], "+I[1, 2, 0]", "{rows:?}");
    refused_restore(
        &dir,
        &savepoint,
        &script("a.id, b.x, b.y"),
        "Join[inner; a.id = b.id, keeping a.id, b.x]",
    );
}

/// A `GROUP BY` within a join's key, run in the join's operator, stopped
/// with a savepoint resumes exactly: both sides' rows and the groups are
/// in it. Each `k` is a pair of ids (`k` and `k + 1`; 0 and 3000 alone),
/// so each group ends with the 4 pairs of its ids (1 for 0 and 3000) and
/// twice their sum.
#[test]
fn a_join_aggregation_stopped_with_a_savepoint_resumes_exactly() {
    let dir = temp_dir("join-aggregate");
    let script = "
CREATE TABLE t (id BIGINT, k AS id - MOD(id, 2)) WITH ('connector' = 'datagen',
  'rows-per-second' = '400',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '3000');
CREATE TABLE out (k BIGINT, n BIGINT, total BIGINT) WITH ('connector' = 'print');
INSERT INTO out SELECT a.k, COUNT(*), SUM(b.id) FROM t a JOIN t b ON a.k = b.k GROUP BY a.k;
";
    let (savepoint, before) = stopped_after(&dir, script, 30);
    assert!(
        !materialize(&before).contains(&"[3000, 1, 3000]".to_string()),
        "the job was stopped before its end: {before:?}"
    );
    assert_eq!(
        state_entries(&savepoint, "joined-groups").map(|n| n > 0),
        Some(true)
    );
    let resumed_script = dir.join("resumed.sql");
    std::fs::write(&resumed_script, script).expect("script");
    let after = resumed(&savepoint, &resumed_script);
    let both: Vec<String> = before.into_iter().chain(after).collect();
    let mut expected: Vec<String> = (1..1500)
        .map(|m| format!("[{}, 4, {}]", 2 * m, 8 * m + 2))
        .chain(["[0, 1, 1]".to_string(), "[3000, 1, 3000]".to_string()])
        .collect();
    expected.sort();
    assert_eq!(materialize(&both), expected);
}

/// An event-time temporal join stopped with a savepoint resumes exactly:
/// the left rows waiting for the watermark and the versions they join
/// are in the savepoint. Each row joins the version of its key (`id` mod
/// 5) valid at its time in a versioned view of the even ids: itself when
/// even, else the id 5 before it (none for 1, 3 and 5).
#[test]
fn a_temporal_join_stopped_with_a_savepoint_resumes_exactly() {
    let dir = temp_dir("temporal");
    let script = "
SET 'pipeline.auto-watermark-interval' = '10 ms';
CREATE TABLE t (
  id BIGINT, k AS MOD(id, 5), ts AS CAST(TO_TIMESTAMP_LTZ(id * 100, 3) AS TIMESTAMP(3)),
  PRIMARY KEY (k) NOT ENFORCED,
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH ('connector' = 'datagen', 'rows-per-second' = '1000',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '3000');
CREATE VIEW evens AS SELECT k, id, ts FROM t WHERE MOD(id, 2) = 0;
CREATE TABLE out (id BIGINT, version BIGINT) WITH ('connector' = 'print');
INSERT INTO out SELECT o.id, v.id FROM t AS o
JOIN evens FOR SYSTEM_TIME AS OF o.ts AS v ON o.k = v.k;
";
    let (savepoint, before) = stopped_after(&dir, script, 30);
    let waiting = state_entries(&savepoint, "temporal-left").expect("the join's left rows");
    // The rows within the watermark's second, and those since the last
    // watermark.
    assert!(waiting <= 100, "{waiting} left rows waiting");
    let resumed_script = dir.join("resumed.sql");
    std::fs::write(&resumed_script, script).expect("script");
    let after = resumed(&savepoint, &resumed_script);
    assert!(before.len() < 3000 - 3, "stopped before the end");
    let expected: Vec<String> = (1..=3000i64)
        .filter_map(|id| match id % 2 {
            0 => Some(format!("[{id}, {id}]")),
            _ if id > 5 => Some(format!("[{id}, {}]", id - 5)),
            _ => None,
        })
        .collect();
    let mut expected = expected;
    expected.sort();
    assert_leaves(&before, &after, &expected);
}

/// With `table.exec.source.idle-timeout`, a source that reads nothing for
/// that long no longer holds the watermark back: windows over a union
/// with a source that rarely has a row (whose rows all have time 0) fire
/// as the other source's time passes. Without it, none would fire before
/// the rare source ends.
#[test]
fn an_idle_source_does_not_hold_the_windows_back() {
    let dir = temp_dir("idle");
    let script = "
SET 'table.exec.source.idle-timeout' = '100 ms';
SET 'pipeline.auto-watermark-interval' = '10 ms';
CREATE TABLE fast (
  id BIGINT, ts AS CAST(TO_TIMESTAMP_LTZ(id * 100, 3) AS TIMESTAMP(3)),
  WATERMARK FOR ts AS ts
) WITH ('connector' = 'datagen', 'rows-per-second' = '1000',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '1000000');
CREATE TABLE rare (
  id BIGINT, ts AS CAST(TO_TIMESTAMP_LTZ(0, 3) AS TIMESTAMP(3)),
  WATERMARK FOR ts AS ts
) WITH ('connector' = 'datagen', 'rows-per-second' = '1',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '1000000');
CREATE VIEW both_tables AS SELECT id, ts FROM fast UNION ALL SELECT id, ts FROM rare;
CREATE TABLE out (ws TIMESTAMP(3), n BIGINT) WITH ('connector' = 'print');
INSERT INTO out SELECT window_start, COUNT(*)
FROM TABLE(TUMBLE(TABLE both_tables, DESCRIPTOR(ts), INTERVAL '1' SECOND))
GROUP BY window_start, window_end;
";
    let (_, rows) = stopped_after(&dir, script, 3);
    // Each second of the fast source's time holds 10 of its rows.
    assert_eq!(
        rows[1..3],
        [
            "+I[1970-01-01 00:00:01.000, 10]",
            "+I[1970-01-01 00:00:02.000, 10]"
        ],
        "{rows:?}"
    );
}

/// A window join stopped with a savepoint resumes exactly: the rows of
/// the windows not yet joined are in the savepoint. Ids are 100 ms apart
/// (10 s windows of 100 ids); the even ids joined with the multiples of
/// three in their window are the multiples of six, each once.
#[test]
fn a_window_join_stopped_with_a_savepoint_resumes_exactly() {
    let dir = temp_dir("window-join");
    let script = "
SET 'pipeline.auto-watermark-interval' = '10 ms';
CREATE TABLE t (
  id BIGINT, ts AS CAST(TO_TIMESTAMP_LTZ(id * 100, 3) AS TIMESTAMP(3)),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH ('connector' = 'datagen', 'rows-per-second' = '1000',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '3000');
CREATE VIEW evens AS SELECT * FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '10' SECOND))
  WHERE MOD(id, 2) = 0;
CREATE VIEW threes AS SELECT * FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '10' SECOND))
  WHERE MOD(id, 3) = 0;
CREATE TABLE out (id BIGINT, w TIMESTAMP(3)) WITH ('connector' = 'print');
INSERT INTO out SELECT e.id, e.window_start FROM evens e JOIN threes h
ON e.id = h.id AND e.window_start = h.window_start AND e.window_end = h.window_end;
";
    let (savepoint, before) = stopped_after(&dir, script, 30);
    assert!(before.len() < 500, "stopped before the end");
    // Keys of windows not yet joined.
    let waiting = state_entries(&savepoint, "windows").expect("the join's windows");
    assert!(waiting > 0, "no rows waiting");
    let resumed_script = dir.join("resumed.sql");
    std::fs::write(&resumed_script, script).expect("script");
    let after = resumed(&savepoint, &resumed_script);
    let window_start = |id: i64| {
        let start = id * 100 / 10_000 * 10;
        format!("1970-01-01 00:{:02}:{:02}.000", start / 60, start % 60)
    };
    let mut expected: Vec<String> = (1..=500i64)
        .map(|m| format!("[{}, {}]", 6 * m, window_start(6 * m)))
        .collect();
    expected.sort();
    assert_leaves(&before, &after, &expected);
}

/// Checks that the changelogs of a run stopped with a savepoint (`before`)
/// and of its resumed run (`after`) together leave the rows `expected`
/// (sorted), naming the rows missing and unexpected.
fn assert_leaves(before: &[String], after: &[String], expected: &[String]) {
    let both: Vec<String> = before.iter().chain(after).cloned().collect();
    let got = materialize(&both);
    let missing: Vec<&String> = expected.iter().filter(|r| !got.contains(r)).collect();
    let extra: Vec<&String> = got.iter().filter(|r| !expected.contains(r)).collect();
    assert!(
        missing.is_empty() && extra.is_empty() && got.len() == expected.len(),
        "missing {missing:?}, unexpected {extra:?}, {} rows for {}",
        got.len(),
        expected.len()
    );
}

/// The interactive shell, fed on standard input: a statement over two
/// lines runs at its `;`, an error is reported and the shell goes on,
/// `HELP;` lists the statements, `QUIT;` ends it before what follows.
#[test]
fn the_shell_runs_statements_as_they_end_and_goes_on_after_an_error() {
    use std::io::Write;
    let dir = temp_dir("shell");
    let mut child = weir()
        .args(["sql", "--history"])
        .arg(dir.join("history"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("weir sql starts");
    let input = "SELECT v * 2 AS doubled\n  FROM (VALUES (20), (21)) AS t(v);\n\
                 SELECT nope FROM (VALUES (1)) AS t(v);\n\
                 HELP;\n\
                 QUIT;\n\
                 SELECT 'after quit';\n";
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("input written");
    let output = child.wait_with_output().expect("weir sql ends");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stdout.contains("| +I |      40 |") && stdout.contains("| +I |      42 |"),
        "{stdout}"
    );
    assert!(
        stderr.contains("[ERROR]") && stderr.contains("'nope'"),
        "{stderr}"
    );
    assert!(
        stdout.contains("HELP") && stdout.contains("QUIT, EXIT") && stdout.contains("CREATE TABLE"),
        "{stdout}"
    );
    assert!(!stdout.contains("after quit"), "{stdout}");
    // QUIT ends the shell as it asked, whatever came before.
    assert!(output.status.success(), "{stderr}");
}
