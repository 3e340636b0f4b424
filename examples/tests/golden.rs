//! Golden tests of window semantics: the `window_playground` example over
//! fixed inputs, against the output of Apache Flink on the same inputs
//! (`tests/golden/cases.txt` lists them).
//!
//! Outputs are compared per watermark batch (the lines between two `WM,`
//! lines) as multisets — Flink's order among windows of different keys that
//! fire at the same watermark is unspecified — and, within each key, in
//! exact order.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// The example binary cargo built next to this test's binary.
fn playground() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let target = exe
        .parent()
        .and_then(Path::parent)
        .expect("target directory");
    target.join("examples/window_playground")
}

fn run(input: &Path, args: &[&str], trace: bool) -> String {
    let mut cmd = Command::new(playground());
    cmd.arg("--input").arg(input).args(args);
    if trace {
        cmd.arg("--trace-watermarks");
    }
    let out = cmd.output().expect("run window_playground");
    assert!(
        out.status.success(),
        "window_playground failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 output")
}

fn key_of(line: &str) -> &str {
    let mut f = line.split(',');
    match f.next() {
        Some("LATE") => f.next().unwrap_or(""),
        Some(k) => k,
        None => "",
    }
}

/// Batches split at `WM,` lines, each sorted; and each key's lines in order.
fn normalise(output: &str) -> (Vec<Vec<String>>, BTreeMap<String, Vec<String>>) {
    let mut batches = vec![Vec::new()];
    let mut per_key: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in output.lines().filter(|l| !l.trim().is_empty()) {
        if line.starts_with("WM,") {
            batches.push(vec![line.to_string()]);
            batches.push(Vec::new());
            continue;
        }
        per_key
            .entry(key_of(line).to_string())
            .or_default()
            .push(line.to_string());
        if let Some(b) = batches.last_mut() {
            b.push(line.to_string());
        }
    }
    for b in &mut batches {
        b.sort();
    }
    batches.retain(|b| !b.is_empty());
    (batches, per_key)
}

#[test]
fn window_semantics_match_flink() {
    check_cases(&[]);
}

/// On RocksDB, window contents live in the backend (the general window
/// operator with the window as namespace): the same results.
#[cfg(feature = "rocksdb")]
#[test]
fn window_semantics_match_flink_with_contents_in_rocksdb() {
    check_cases(&["-D", "state.backend.type=rocksdb"]);
}

fn check_cases(backend: &[&str]) {
    let dir = golden_dir();
    let cases = std::fs::read_to_string(dir.join("cases.txt")).expect("cases.txt");
    let mut checked = 0;
    for line in cases
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
    {
        let parts: Vec<&str> = line.split_whitespace().collect();
        let (name, input) = (parts[0], dir.join(parts[1]));
        let args: Vec<&str> = parts[2..].iter().chain(backend).copied().collect();
        for trace in [false, true] {
            let expected_file = dir.join(format!("{name}{}.out", if trace { ".wm" } else { "" }));
            let expected = std::fs::read_to_string(&expected_file).expect("expected output");
            let actual = run(&input, &args, trace);
            assert_eq!(
                normalise(&actual),
                normalise(&expected),
                "case {name} (trace {trace}) differs from Flink:\n--- weir\n{actual}\n--- flink\n{expected}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 26, "only {checked} golden outputs checked");
}

#[test]
fn bad_lines_are_reported_and_skipped() {
    let dir = std::env::temp_dir().join(format!("weir-golden-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let input = dir.join("bad.csv");
    std::fs::write(
        &input,
        "key,timestamp_ms,value\na,1000,1\nb,notanumber,2\nc,5\na,2000,3\n",
    )
    .expect("write input");
    let out = Command::new(playground())
        .arg("--input")
        .arg(&input)
        .args(["--window", "tumbling:10000"])
        .output()
        .expect("run window_playground");
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("line 3") && stderr.contains("timestamp"),
        "{stderr}"
    );
    assert!(
        stderr.contains("line 4") && stderr.contains("3 comma-separated fields"),
        "{stderr}"
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "a,0,10000,2,4\n");
    std::fs::remove_dir_all(&dir).expect("cleanup");
}
