//! The golden cases in `tests/golden/`: each SQL script's changelog on Weir
//! must equal, as a set of lines, what Flink 2.3 printed for it
//! (`NAME.flink.out`, written by `flink/compare.sh --update`); a case marked
//! `-- compare: final rows` compares the rows the changelogs leave.

use std::path::{Path, PathBuf};

mod support;

/// The changelog of `script`, run after the statements `before`.
fn changelog(script: &Path, before: &str) -> Vec<String> {
    let dir = script.parent().expect("the case's directory");
    let sql = std::fs::read_to_string(script)
        .expect("the case")
        .replace("${DIR}", &dir.display().to_string());
    support::changelog(&format!("{before}{sql}"))
        .unwrap_or_else(|e| panic!("{}: {e}", script.display()))
}

#[test]
fn weir_prints_what_flink_printed_for_every_golden_case() {
    every_case_prints_what_flink_printed("", false);
}

/// Every keyed exchange chained into one thread (the default on a
/// machine of one core; elsewhere a job of one chain is split where a
/// core would be idle) prints the same changelogs.
#[test]
fn every_golden_case_prints_the_same_with_keyed_exchanges_chained() {
    every_case_prints_what_flink_printed(
        "SET 'pipeline.operator-chaining.chain-keyed-exchanges' = 'true';\n",
        false,
    );
}

/// Flink's own topology, a task on each side of every keyed exchange,
/// changes no case's rows. What the changelogs leave is compared: with
/// more threads, the rows of two sources (two scans of one table in
/// `set_all.sql`) interleave in other orders, and an updating query's
/// intermediate rows with them.
#[test]
fn every_golden_case_leaves_the_same_rows_with_keyed_exchanges_split() {
    every_case_prints_what_flink_printed(
        "SET 'pipeline.operator-chaining.chain-keyed-exchanges' = 'false';\n",
        true,
    );
}

/// Runs every case after the statements `before` and compares its
/// changelog with Flink's, or the rows the changelogs leave if
/// `final_rows`.
fn every_case_prints_what_flink_printed(before: &str, final_rows: bool) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/golden")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "sql"))
        .collect();
    cases.sort();
    assert!(
        cases.len() >= 4,
        "golden cases missing in {}",
        dir.display()
    );
    for case in cases {
        let expected = case.with_extension("flink.out");
        let flink = std::fs::read_to_string(&expected).unwrap_or_else(|_| {
            panic!(
                "{} has no Flink output: run crates/weir-sql/flink/compare.sh --update",
                case.display()
            )
        });
        let mut flink: Vec<String> = flink.lines().map(str::to_string).collect();
        flink.sort_unstable();
        assert!(
            !flink.is_empty(),
            "{}: Flink printed no rows",
            expected.display()
        );
        let mut weir = changelog(&case, before);
        // A case whose changelog depends on which source's rows arrive
        // first compares the rows it leaves (compare.sh wrote Flink's so).
        let text = std::fs::read_to_string(&case).expect("the case");
        let leaves = |lines: &[String]| -> Vec<String> {
            support::materialize(lines)
                .into_iter()
                .map(|row| format!("+I{row}"))
                .collect()
        };
        if final_rows {
            flink = leaves(&flink);
        }
        if final_rows
            || text
                .lines()
                .any(|l| l.starts_with("-- compare: final rows"))
        {
            weir = leaves(&weir);
        }
        assert_eq!(weir, flink, "{}", case.display());
    }
}
