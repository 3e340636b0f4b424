//! `weir sql`: Flink SQL scripts (`-f`) and an interactive shell, as
//! Flink's `sql-client.sh`.

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use weir_sql::Session;

/// What `weir sql` was asked.
#[derive(clap::Args)]
pub(crate) struct SqlOptions {
    /// A script to run: statements separated by ';' (CREATE TABLE, CREATE
    /// VIEW, SET, INSERT INTO, SELECT, EXPLAIN). Without it, an interactive
    /// shell reads statements from standard input.
    #[arg(short = 'f', long = "file", value_name = "FILE")]
    file: Option<PathBuf>,
    /// Default parallelism of the jobs (as SET 'parallelism.default').
    #[arg(short = 'p', long)]
    parallelism: Option<u32>,
    /// Configuration for every job, as SET would (repeatable).
    #[arg(short = 'D', value_name = "KEY=VALUE")]
    define: Vec<String>,
    /// Starts the jobs from this savepoint or checkpoint (as SET
    /// 'execution.state-recovery.path').
    #[arg(short = 's', long = "from-savepoint", value_name = "PATH")]
    from_savepoint: Option<PathBuf>,
    /// Lets a savepoint hold state no operator of the job claims (it is
    /// dropped), as `weir run -n`.
    #[arg(short = 'n', long = "allow-non-restored-state")]
    allow_non_restored_state: bool,
}

pub(crate) fn run(options: SqlOptions) -> anyhow::Result<ExitCode> {
    let mut session = Session::new();
    if let Some(p) = options.parallelism {
        session.set("parallelism.default", &p.to_string());
    }
    if let Some(path) = &options.from_savepoint {
        session.set("execution.state-recovery.path", &path.display().to_string());
    }
    if options.allow_non_restored_state {
        session.set("execution.state-recovery.ignore-unclaimed-state", "true");
    }
    for d in &options.define {
        let (key, value) = d
            .split_once('=')
            .with_context(|| format!("-D {d}: expected KEY=VALUE"))?;
        session.set(key.trim(), value.trim());
    }
    match options.file {
        Some(path) => {
            let script = std::fs::read_to_string(&path)
                .with_context(|| format!("reading {}", path.display()))?;
            session.execute_script(&script)?;
            Ok(ExitCode::SUCCESS)
        }
        None => shell(&mut session),
    }
}

/// Reads statements (ending with ';') line by line and runs each; an error
/// is printed and the shell goes on. Ends at end of input or `QUIT;`.
fn shell(session: &mut Session) -> anyhow::Result<ExitCode> {
    let stdin = std::io::stdin();
    let mut pending = String::new();
    let mut failed = false;
    prompt(&pending)?;
    for line in stdin.lock().lines() {
        let line = line.context("reading standard input")?;
        pending.push_str(&line);
        pending.push('\n');
        if line.trim_end().ends_with(';') {
            let statement = std::mem::take(&mut pending);
            let trimmed = statement.trim().trim_end_matches(';').trim();
            if trimmed.eq_ignore_ascii_case("quit") || trimmed.eq_ignore_ascii_case("exit") {
                return Ok(ExitCode::SUCCESS);
            }
            if let Err(e) = session.execute_script(&statement) {
                eprintln!("[ERROR] {e}");
                failed = true;
            }
        }
        prompt(&pending)?;
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn prompt(pending: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout();
    write!(
        out,
        "{}",
        if pending.is_empty() {
            "Weir SQL> "
        } else {
            "> "
        }
    )?;
    out.flush()?;
    Ok(())
}
