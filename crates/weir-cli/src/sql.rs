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
    /// VIEW, SET, INSERT INTO, statement sets, SELECT, WITH, VALUES,
    /// EXPLAIN, SHOW, DESCRIBE, ALTER, DROP). Without it, an interactive shell reads
    /// statements from standard input.
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
    /// The interactive shell's history file (default
    /// ~/.local/share/weir/sql-history); the arrow keys recall earlier
    /// statements, of this session and the ones before.
    #[arg(long = "history", value_name = "FILE")]
    history: Option<PathBuf>,
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
        None => shell(&mut session, options.history),
    }
}

/// Where the shell's lines come from: a terminal (line editing, the
/// history of earlier sessions with the arrow keys, as Flink's SQL client
/// has) or a pipe (lines as they come).
enum Lines {
    Terminal {
        editor: Box<rustyline::DefaultEditor>,
        history: Option<PathBuf>,
    },
    Piped(std::io::Lines<std::io::StdinLock<'static>>),
}

impl Lines {
    fn open(history: Option<PathBuf>) -> anyhow::Result<Lines> {
        use std::io::IsTerminal;
        if !std::io::stdin().is_terminal() {
            return Ok(Lines::Piped(std::io::stdin().lock().lines()));
        }
        let mut editor =
            rustyline::DefaultEditor::new().context("opening the terminal for line editing")?;
        if let Some(path) = &history {
            // A first session has no history yet.
            let _ = editor.load_history(path);
        }
        Ok(Lines::Terminal {
            editor: Box::new(editor),
            history,
        })
    }

    /// The next line.
    fn next(&mut self, prompt: &str) -> anyhow::Result<Line> {
        match self {
            Lines::Piped(lines) => {
                let mut out = std::io::stdout();
                write!(out, "{prompt}")?;
                out.flush()?;
                match lines.next().transpose().context("reading standard input")? {
                    Some(line) => Ok(Line::Text(line)),
                    None => Ok(Line::End),
                }
            }
            Lines::Terminal { editor, .. } => match editor.readline(prompt) {
                Ok(line) => Ok(Line::Text(line)),
                Err(rustyline::error::ReadlineError::Eof) => Ok(Line::End),
                // Ctrl-C drops the statement being typed, as Flink's does.
                Err(rustyline::error::ReadlineError::Interrupted) => Ok(Line::Cancel),
                Err(e) => Err(e).context("reading the terminal"),
            },
        }
    }

    /// Keeps a statement in the history (and its file).
    fn remember(&mut self, statement: &str) {
        if let Lines::Terminal { editor, history } = self {
            let _ = editor.add_history_entry(statement.trim());
            if let Some(path) = history {
                if let Some(dir) = path.parent() {
                    let _ = std::fs::create_dir_all(dir);
                }
                if let Err(e) = editor.save_history(path) {
                    eprintln!(
                        "[WARNING] cannot write the history to {}: {e}",
                        path.display()
                    );
                }
            }
        }
    }
}

/// What the shell read.
enum Line {
    Text(String),
    /// Ctrl-C: forget the statement being typed.
    Cancel,
    End,
}

/// Where the shell keeps its history: `--history`, else
/// `~/.local/share/weir/sql-history` (Flink's is `~/.flink-sql-history`).
fn history_file(given: Option<PathBuf>) -> Option<PathBuf> {
    given.or_else(|| {
        let base = std::env::var_os("XDG_DATA_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))?;
        Some(base.join("weir").join("sql-history"))
    })
}

/// Whether the lines typed so far end a statement: at a `;`, but a
/// statement set (`EXECUTE STATEMENT SET BEGIN`, `BEGIN STATEMENT SET;`)
/// only at its `END;`.
fn is_complete(pending: &str) -> bool {
    let text = pending.trim_end();
    if !text.ends_with(';') {
        return false;
    }
    let words: Vec<String> = text
        .split_whitespace()
        .take(4)
        .map(|w| w.trim_end_matches(';').to_ascii_uppercase())
        .collect();
    let set = matches!(
        words.iter().map(String::as_str).collect::<Vec<_>>()[..],
        ["EXECUTE" | "BEGIN" | "EXPLAIN", "STATEMENT", "SET", ..]
    );
    if !set {
        return true;
    }
    let body = text.trim_end_matches(';').trim_end();
    body.len() >= 3
        && body[body.len() - 3..].eq_ignore_ascii_case("END")
        && !body[..body.len() - 3].ends_with(|c: char| c.is_alphanumeric() || c == '_')
}

/// What `HELP;` prints in the shell, as Flink's SQL client lists its
/// commands.
const SHELL_HELP: &str = "\
The following statements are available (each ends with ';'):

CREATE TABLE        Creates a table: its columns, WATERMARK, PRIMARY KEY and WITH (...) options.
CREATE VIEW         Creates a view of a query.
CREATE FUNCTION     Registers a function.
ALTER TABLE         Renames a table or sets or resets its WITH options.
DROP TABLE          Drops a table (DROP VIEW, DROP FUNCTION likewise). Syntax: \"DROP TABLE [IF EXISTS] <name>;\"
DESCRIBE            Describes a table's columns. Syntax: \"DESCRIBE <name>;\"
EXPLAIN             Prints the plan of a query or INSERT.
INSERT INTO         Runs a job writing a query's rows into a table.
SELECT              Runs a query and prints its rows as a changelog (op: +I, -U, +U, -D).
SET                 Sets a configuration key. Syntax: \"SET '<key>' = '<value>';\" \"SET;\" lists them.
RESET               Resets a configuration key. Syntax: \"RESET '<key>';\" \"RESET;\" resets them all.
SHOW TABLES         Lists the tables (SHOW VIEWS, SHOW USER FUNCTIONS, SHOW CREATE TABLE <name> likewise).
BEGIN STATEMENT SET Runs the INSERTs up to END; as one job.
HELP                Prints this list.
QUIT, EXIT          Leaves the shell.
";

/// Reads statements (ending with ';') line by line and runs each; an error
/// is printed and the shell goes on. Ends at end of input or `QUIT;`.
fn shell(session: &mut Session, history: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let mut lines = Lines::open(history_file(history))?;
    let mut pending = String::new();
    let mut failed = false;
    loop {
        let line = match lines.next(if pending.is_empty() {
            "Weir SQL> "
        } else {
            "> "
        })? {
            Line::Text(line) => line,
            Line::Cancel => {
                pending.clear();
                continue;
            }
            Line::End => break,
        };
        pending.push_str(&line);
        pending.push('\n');
        if is_complete(&pending) {
            let statement = std::mem::take(&mut pending);
            lines.remember(&statement);
            let trimmed = statement.trim().trim_end_matches(';').trim();
            if trimmed.eq_ignore_ascii_case("quit") || trimmed.eq_ignore_ascii_case("exit") {
                return Ok(ExitCode::SUCCESS);
            }
            if trimmed.eq_ignore_ascii_case("help") {
                print!("{SHELL_HELP}");
                continue;
            }
            if let Err(e) = session.execute_script(&statement) {
                eprintln!("[ERROR] {e}");
                failed = true;
            }
        }
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_statement_set_is_complete_at_its_end() {
        assert!(is_complete("SELECT 1;\n"));
        assert!(!is_complete("SELECT 1\n"));
        assert!(!is_complete("BEGIN STATEMENT SET;\n"));
        assert!(!is_complete(
            "begin statement set;\nINSERT INTO a SELECT * FROM b;\n"
        ));
        assert!(is_complete(
            "BEGIN STATEMENT SET;\nINSERT INTO a SELECT * FROM b;\nEND;\n"
        ));
        assert!(!is_complete(
            "EXECUTE STATEMENT SET BEGIN\nINSERT INTO a SELECT * FROM b;\n"
        ));
        assert!(!is_complete(
            "EXECUTE STATEMENT SET BEGIN\nINSERT INTO a SELECT x AS backend;\n"
        ));
        assert!(is_complete(
            "EXECUTE STATEMENT SET BEGIN\nINSERT INTO a SELECT * FROM b;\nend;\n"
        ));
        assert!(is_complete(
            "EXPLAIN STATEMENT SET BEGIN INSERT INTO a SELECT 1; END;"
        ));
    }
}
