//! The golden cases in `tests/golden/`: each SQL script's changelog on Weir
//! must equal, as a set of lines, what Flink 2.3 printed for it
//! (`NAME.flink.out`, written by `flink/compare.sh --update`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use weir_sql::Session;

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("lock").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn changelog(script: &Path) -> Vec<String> {
    let dir = script.parent().expect("the case's directory");
    let sql = std::fs::read_to_string(script)
        .expect("the case")
        .replace("${DIR}", &dir.display().to_string());
    let out = Captured::default();
    let mut session = Session::with_output(Box::new(out.clone()));
    session.set("sql-client.execution.result-mode", "changelog");
    if let Err(e) = session.execute_script(&sql) {
        panic!("{}: {e}", script.display());
    }
    let text = String::from_utf8(out.0.lock().expect("lock").clone()).expect("utf-8");
    let mut lines: Vec<String> = text
        .lines()
        .filter(|l| {
            ["+I[", "-U[", "+U[", "-D["]
                .iter()
                .any(|p| l.starts_with(p))
        })
        .map(str::to_string)
        .collect();
    lines.sort_unstable();
    lines
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
        assert_eq!(changelog(&case), flink, "{}", case.display());
    }
}
