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
