//! The golden cases in `tests/golden/`: each SQL script's changelog on Weir
//! must equal, as a set of lines, what Flink 2.3 printed for it
//! (`NAME.flink.out`, written by `flink/compare.sh --update`); a case marked
//! `-- compare: final rows` compares the rows the changelogs leave.

use std::path::{Path, PathBuf};

mod support;

fn changelog(script: &Path) -> Vec<String> {
    let dir = script.parent().expect("the case's directory");
    let sql = std::fs::read_to_string(script)
        .expect("the case")
        .replace("${DIR}", &dir.display().to_string());
    support::changelog(&sql).unwrap_or_else(|e| panic!("{}: {e}", script.display()))
}

#[test]
fn weir_prints_what_flink_printed_for_every_golden_case() {
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
        let mut weir = changelog(&case);
        // A case whose changelog depends on which source's rows arrive
        // first compares the rows it leaves (compare.sh wrote Flink's so).
        let text = std::fs::read_to_string(&case).expect("the case");
        if text
            .lines()
            .any(|l| l.starts_with("-- compare: final rows"))
        {
            weir = support::materialize(&weir)
                .into_iter()
                .map(|row| format!("+I{row}"))
                .collect();
        }
        assert_eq!(weir, flink, "{}", case.display());
    }
}
