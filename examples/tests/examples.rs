//! Each example, run as a user would, over its bundled sample input.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

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

fn data(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("data")
        .join(file)
}

/// Runs an example over a sample file; returns (stdout, stderr).
fn run(name: &str, input: &str, extra: &[&str]) -> (String, String) {
    let out = Command::new(example(name))
        .arg("--input")
        .arg(data(input))
        .args(extra)
        .output()
        .expect("run example");
    assert!(
        out.status.success(),
        "{name} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Every example binary.
const EXAMPLES: [&str; 13] = [
    "order_report",
    "word_count",
    "tumbling_window_sum",
    "sliding_window_sum",
    "count_window_sum",
    "session_window",
    "event_time_window_sum",
    "keyed_state_max",
    "dynamic_rules",
    "running_total_word_count",
    "exactly_once_word_count",
    "nexmark",
    "window_playground",
];

#[test]
fn every_example_answers_help_with_its_usage() {
    let connectors = cfg!(feature = "connectors").then_some("kafka_to_postgres");
    for name in EXAMPLES.into_iter().chain(connectors) {
        for flag in ["--help", "-h"] {
            let out = Command::new(example(name))
                .arg(flag)
                .output()
                .expect("run example");
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(out.status.success(), "{name} {flag}: {:?}", out.status);
            // Its own run command, and the engine's flags.
            assert!(
                stdout.contains(&format!("--example {name}")),
                "{name} {flag}:\n{stdout}"
            );
            assert!(stdout.contains("-D key=value"), "{name} {flag}:\n{stdout}");
        }
        if name == "nexmark" {
            continue; // runs its defaults without arguments
        }
        // Without arguments: the usage, not a guess at where input is.
        let out = Command::new(example(name)).output().expect("run example");
        assert_eq!(out.status.code(), Some(2), "{name} without arguments");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(&format!("--example {name}")),
            "{name} without arguments"
        );
    }
}

/// `(key,n)` lines summed per key.
fn totals(stdout: &str) -> BTreeMap<String, i64> {
    let mut t = BTreeMap::new();
    for line in stdout.lines() {
        let inner = line.trim_start_matches('(').trim_end_matches(')');
        let (k, n) = inner.split_once(',').expect("a (key,n) line");
        *t.entry(k.to_string()).or_default() += n.parse::<i64>().expect("a number");
    }
    t
}

const ORDER_REPORT: &str = "\
user alice [2024-05-01 10:00:00, 10:00:10): 3 orders, total 35.50 (o1, o3, o5)
user bob [2024-05-01 10:00:00, 10:00:10): 1 order, total 8.00 (o2)
user bob [2024-05-01 10:00:00, 10:00:10): 2 orders, total 10.00 (o2, o7)
late> order o9 of carol at 2024-05-01 10:00:08: 1.00
user bob [2024-05-01 10:00:10, 10:00:20): 1 order, total 5.25 (o4)
user carol [2024-05-01 10:00:10, 10:00:20): 1 order, total 40.00 (o6)
user alice [2024-05-01 10:00:10, 10:00:20): 1 order, total 7.75 (o8)
user bob [2024-05-01 10:00:20, 10:00:30): 1 order, total 9.99 (o10)
";

#[test]
fn order_report_fires_refires_and_sends_late_orders_aside() {
    let (stdout, stderr) = run("order_report", "orders.csv", &[]);
    let expected = ORDER_REPORT;
    // Windows of different users firing at the same watermark may come in
    // any order; each user's lines keep theirs.
    let sorted = |s: &str| {
        let mut v: Vec<&str> = s.lines().collect();
        v.sort_unstable();
        v.join("\n")
    };
    assert_eq!(sorted(&stdout), sorted(expected));
    let bob: Vec<&str> = stdout.lines().filter(|l| l.contains(" bob ")).collect();
    assert!(
        bob[0].contains("(o2)") && bob[1].contains("(o2, o7)"),
        "{bob:?}"
    );
    assert!(
        stderr.contains("skipping line 12: expected 4 comma-separated fields"),
        "{stderr}"
    );
}

#[test]
fn order_report_gives_the_same_report_at_parallelism_3() {
    let (stdout, _) = run("order_report", "orders.csv", &["-p", "3"]);
    // Sinks at parallelism 3 print Flink's subtask prefixes: `2> …`,
    // `late:1> …`.
    let mut prefixes = std::collections::BTreeSet::new();
    let mut lines: Vec<String> = stdout
        .lines()
        .map(|line| {
            let (head, rest) = line.split_once("> ").expect("a prefixed line");
            let (tag, subtask) = head.split_once(':').unwrap_or(("", head));
            prefixes.insert(subtask.parse::<u32>().expect("a subtask number"));
            match tag {
                "" => rest.to_string(),
                tag => format!("{tag}> {rest}"),
            }
        })
        .collect();
    lines.sort_unstable();
    let mut expected: Vec<&str> = ORDER_REPORT.lines().collect();
    expected.sort_unstable();
    assert_eq!(lines, expected);
    assert!(prefixes.iter().all(|p| (1..=3).contains(p)), "{prefixes:?}");
    assert!(prefixes.len() > 1, "all windows in one subtask: {stdout}");
}

#[test]
fn event_time_window_sum_closes_windows_by_watermark() {
    let (stdout, _) = run("event_time_window_sum", "events.txt", &[]);
    let mut lines: Vec<&str> = stdout.lines().collect();
    lines.sort_unstable();
    assert_eq!(
        lines,
        vec![
            "a [2024-01-01 12:00:00, 2024-01-01 12:00:10): 4",
            "a [2024-01-01 12:00:10, 2024-01-01 12:00:20): 5",
            "b [2024-01-01 12:00:00, 2024-01-01 12:00:10): 2",
            "b [2024-01-01 12:00:20, 2024-01-01 12:00:30): 6",
        ]
    );
}

#[test]
fn count_window_sum_sums_every_five() {
    let (stdout, _) = run("count_window_sum", "numbers.txt", &[]);
    // 1..=12: two full windows; the last two numbers never fire.
    assert_eq!(stdout, "15\n40\n");
}

#[test]
fn processing_time_windows_account_for_every_record() {
    // Which 5-second window each line falls in depends on the clock; what
    // every window adds up to does not.
    let expected: BTreeMap<String, i64> = [("a", 4), ("b", 1), ("c", 10)]
        .map(|(k, n)| (k.to_string(), n))
        .into();
    let (stdout, _) = run("tumbling_window_sum", "pairs.txt", &[]);
    assert_eq!(totals(&stdout), expected);
    // Sliding 10 s / 5 s: each record counts in two windows.
    let (stdout, _) = run("sliding_window_sum", "pairs.txt", &[]);
    let doubled: BTreeMap<String, i64> = expected.iter().map(|(k, n)| (k.clone(), n * 2)).collect();
    assert_eq!(totals(&stdout), doubled);
}

#[test]
fn session_window_groups_a_burst() {
    let (stdout, _) = run("session_window", "pairs.txt", &[]);
    assert_eq!(stdout, "session of 5 records: sum 15, keys [a, b, c]\n");
}

#[test]
fn word_count_counts_words_at_any_parallelism() {
    let (stdout, _) = run("word_count", "words.txt", &[]);
    assert!(
        stdout.starts_with("(to,1)\n(be,1)\n(or,1)\n(not,1)\n(to,2)\n(be,2)\n"),
        "{stdout}"
    );
    let last_to = stdout.lines().rev().find(|l| l.starts_with("(to,"));
    assert_eq!(last_to, Some("(to,13)"));
    let (stdout, _) = run("word_count", "words.txt", &["-p", "2"]);
    assert!(stdout.lines().any(|l| l.ends_with("> (to,13)")), "{stdout}");
}

#[test]
fn keyed_state_max_keeps_a_running_max_per_city() {
    let (stdout, stderr) = run("keyed_state_max", "cities.csv", &[]);
    assert_eq!(
        stdout,
        "shenzhen -> 5\nbeijing -> 3\nshenzhen -> 9\nshenzhen -> 9\nbeijing -> 7\nshanghai -> 1\n"
    );
    assert!(stderr.contains("skipping line 6"), "{stderr}");
    // Each city's lines stay in order at any parallelism.
    let (stdout, _) = run("keyed_state_max", "cities.csv", &["-p", "3"]);
    let shenzhen: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains("shenzhen"))
        .map(|l| l.split_once("> ").map_or(l, |(_, rest)| rest))
        .collect();
    assert_eq!(
        shenzhen,
        vec!["shenzhen -> 5", "shenzhen -> 9", "shenzhen -> 9"]
    );
}

#[test]
fn running_total_word_count_counts_every_word() {
    let (stdout, _) = run("running_total_word_count", "words.txt", &[]);
    assert!(
        stdout.starts_with("(to,1)\n(be,2)\n(or,3)\n(not,4)\n"),
        "{stdout}"
    );
    let words = std::fs::read_to_string(data("words.txt")).expect("sample");
    let n = words
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|w| !w.is_empty())
        .count();
    assert!(stdout.trim_end().ends_with(&format!(",{n})")), "{stdout}");
}

#[cfg(feature = "rocksdb")]
#[test]
fn keyed_state_max_runs_on_rocksdb_too() {
    let heap = run(
        "keyed_state_max",
        "cities.csv",
        &["-D", "state.backend.type=hashmap"],
    )
    .0;
    let rocks = run(
        "keyed_state_max",
        "cities.csv",
        &["-D", "state.backend.type=rocksdb"],
    )
    .0;
    assert_eq!(heap, rocks);
    let rocks = run(
        "running_total_word_count",
        "words.txt",
        &["-D", "state.backend.type=rocksdb"],
    )
    .0;
    assert!(rocks.starts_with("(to,1)\n(be,2)\n"), "{rocks}");
}

#[test]
fn dynamic_rules_only_alerts_above_a_threshold() {
    let out = Command::new(example("dynamic_rules"))
        .arg("--rules")
        .arg(data("rules.txt"))
        .arg("--input")
        .arg(data("readings.txt"))
        .args(["-p", "2"])
        .output()
        .expect("run example");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    // Rules and readings race (as in Flink), so which alerts appear depends
    // on timing; every alert that does appear is right.
    let allowed = [
        "ALERT temp-2: 12 > 10 (alert #1)",
        "ALERT temp-1: 35 > 30 (alert #1)",
        "ALERT temp-1: 31 > 30 (alert #1)",
        "ALERT temp-1: 31 > 30 (alert #2)",
    ];
    for line in stdout.lines() {
        let alert = line.split_once("> ").map_or(line, |(_, rest)| rest);
        assert!(allowed.contains(&alert), "unexpected output {line:?}");
    }
}

#[test]
fn dynamic_rules_alerts_once_a_rule_is_there() {
    use std::io::{BufRead, Write};
    let rules = std::net::TcpListener::bind("127.0.0.1:0").expect("listen");
    let readings = std::net::TcpListener::bind("127.0.0.1:0").expect("listen");
    let port = |l: &std::net::TcpListener| l.local_addr().expect("address").port().to_string();
    let mut child = Command::new(example("dynamic_rules"))
        .args(["--rules-port", &port(&rules), "--port", &port(&readings)])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("run example");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, lines) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(line);
        }
    });
    let mut rules_conn = accept_within(&rules);
    let mut readings_conn = accept_within(&readings);
    rules_conn.write_all(b"temp-1,30\n").expect("send a rule");
    // The rule and the readings race, as in Flink: send a reading above
    // the threshold until the rule has reached the keyed side.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let first_alert = loop {
        readings_conn
            .write_all(b"temp-1,25\ntemp-1,35\n")
            .expect("send");
        if let Ok(line) = lines.recv_timeout(std::time::Duration::from_millis(200)) {
            break line;
        }
        assert!(std::time::Instant::now() < deadline, "no alert");
    };
    // Below the threshold never alerts; the first alert is the first.
    assert_eq!(first_alert, "ALERT temp-1: 35 > 30 (alert #1)");
    drop(rules_conn);
    drop(readings_conn);
    let status = child.wait().expect("the job ends with its inputs");
    assert!(status.success());
    let rest: Vec<String> = lines.try_iter().collect();
    reader.join().expect("reader");
    let rest: Vec<String> = rest.into_iter().chain(lines.try_iter()).collect();
    for (n, line) in rest.iter().enumerate() {
        assert_eq!(line, &format!("ALERT temp-1: 35 > 30 (alert #{})", n + 2));
    }
}

#[test]
fn nexmark_runs_a_query_over_the_generator_and_over_json_lines() {
    let generated = Command::new(example("nexmark"))
        .args(["--query", "q2", "--events", "50000"])
        .output()
        .expect("run nexmark");
    assert!(generated.status.success());
    let rows = String::from_utf8_lossy(&generated.stdout).into_owned();
    // (auction, price) of bids on every 123rd auction.
    let auctions: Vec<u64> = rows
        .lines()
        .map(|l| {
            l.trim_matches(|c| c == '(' || c == ')')
                .split(", ")
                .next()
                .and_then(|a| a.parse().ok())
                .expect("an (auction, price) row")
        })
        .collect();
    assert!(!auctions.is_empty());
    assert!(auctions.iter().all(|a| a % 123 == 0), "{rows}");

    // The same events as JSON lines give the same rows.
    let dir = std::env::temp_dir().join(format!("weir-nexmark-example-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("events.jsonl");
    let mut lines = String::new();
    let g = weir_nexmark::NexmarkGenerator::new(Default::default());
    for i in 0..50_000 {
        lines.push_str(&serde_json::to_string(&g.event(i)).expect("json"));
        lines.push('\n');
    }
    std::fs::write(&file, lines).expect("write");
    let replayed = Command::new(example("nexmark"))
        .args(["--query", "q2", "--input"])
        .arg(&file)
        .output()
        .expect("run nexmark");
    assert!(replayed.status.success());
    assert_eq!(String::from_utf8_lossy(&replayed.stdout), rows);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Log events as JSON lines (`-D weir.log.format=json`): level, message,
/// fields, and the span of the task they happened in; `RUST_LOG` filters
/// them; a bad format is refused.
#[test]
fn log_events_are_json_lines_with_the_task_span() {
    let dir = std::env::temp_dir().join(format!("weir-logging-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let input = dir.join("words.txt");
    std::fs::write(&input, b"good words\nbad \xff byte\nmore words\n").expect("input");
    let run = |extra: &[&str], rust_log: Option<&str>| {
        let mut cmd = Command::new(example("word_count"));
        cmd.arg("--input").arg(&input).args(extra);
        match rust_log {
            Some(filter) => cmd.env("RUST_LOG", filter),
            None => cmd.env_remove("RUST_LOG"),
        };
        cmd.output().expect("runs")
    };
    let out = run(&["-D", "weir.log.format=json"], None);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let events: Vec<serde_json::Value> = stderr
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let warning = events
        .iter()
        .find(|e| {
            e["fields"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("line 2 is not valid UTF-8"))
        })
        .unwrap_or_else(|| panic!("no warning event: {stderr}"));
    assert_eq!(warning["level"], "WARN", "{warning}");
    assert_eq!(warning["span"]["name"], "task", "{warning}");
    assert_eq!(warning["span"]["subtask"], 0, "{warning}");
    assert!(
        warning["span"]["task"]
            .as_str()
            .is_some_and(|t| t.contains("Source")),
        "{warning}"
    );
    assert_eq!(
        warning["span"]["job_id"].as_str().map(str::len),
        Some(32),
        "{warning}"
    );
    // The same run in lines, as Weir always printed them.
    let out = run(&[], None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("weir: warning: ") && stderr.contains("line 2 is not valid UTF-8"),
        "{stderr}"
    );
    // Filtered out.
    let out = run(&[], Some("error"));
    assert!(out.status.success());
    assert!(!String::from_utf8_lossy(&out.stderr).contains("UTF-8"));
    let out = run(&["-D", "weir.log.format=xml"], None);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("weir.log.format: must be text or json"));
    let _ = std::fs::remove_dir_all(&dir);
}
