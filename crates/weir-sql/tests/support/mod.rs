//! What the integration tests share: a writer they read back, and running
//! a script in a session that prints into it.

#![allow(dead_code)]

use std::io::Write;
use std::sync::{Arc, Mutex};

use weir_sql::{Session, SqlError};

/// A writer the test reads back.
#[derive(Clone, Default)]
pub struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("lock").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().expect("lock")).into_owned()
    }
}

/// Runs `script` with `settings` set first; what it printed.
pub fn run_with(script: &str, settings: &[(&str, &str)]) -> Result<String, SqlError> {
    let out = Captured::default();
    let mut session = Session::with_output(Box::new(out.clone()));
    for (k, v) in settings {
        session.set(k, v);
    }
    session.execute_script(script)?;
    Ok(out.text())
}

/// The changelog lines (`+I[…]`, `-U[…]`, …) of `script`, sorted.
pub fn changelog(script: &str) -> Result<Vec<String>, SqlError> {
    let text = run_with(script, &[("sql-client.execution.result-mode", "changelog")])?;
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
    Ok(lines)
}

/// The rows a changelog leaves in a table (`+I`/`+U` add a row, `-U`/`-D`
/// take one back), as `[…]` sorted; a retraction of a row not there is a
/// failure.
pub fn materialize(changelog: &[String]) -> Vec<String> {
    let mut rows: Vec<String> = Vec::new();
    for line in changelog {
        let (kind, row) = line.split_at(2);
        match kind {
            "+I" | "+U" => rows.push(row.to_string()),
            "-U" | "-D" => {
                let i = rows
                    .iter()
                    .position(|r| r == row)
                    .unwrap_or_else(|| panic!("{line} retracts a row never inserted"));
                rows.swap_remove(i);
            }
            other => panic!("not a changelog kind: {other}"),
        }
    }
    rows.sort_unstable();
    rows
}
