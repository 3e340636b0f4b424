//! The `weir` command: run a job program, and list, savepoint, stop and
//! cancel running jobs through their REST API, as Flink's `bin/flink`;
//! run Flink SQL scripts, as its `sql-client.sh`; inspect and dispose of
//! checkpoints and savepoints on disk.

mod checkpoints;
mod jobs;
mod new_project;
mod sql;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use weir_state::checkpoint_storage::load_path;

/// Weir, a stream processor: run jobs, operate on running jobs, and
/// inspect their checkpoints.
#[derive(Parser)]
#[command(name = "weir", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Where a running job's REST API is.
#[derive(clap::Args, Clone)]
struct Target {
    /// The job's REST API.
    #[arg(
        short = 'm',
        long = "jobmanager",
        value_name = "HOST:PORT",
        default_value = "localhost:8081"
    )]
    address: String,
    /// Token for jobs whose REST API binds beyond loopback
    /// (weir.rest.token).
    #[arg(long, env = "WEIR_REST_TOKEN", hide_env_values = true)]
    token: Option<String>,
}

#[derive(Subcommand)]
enum Command {
    /// Runs a job program (any binary built on Weir) with its REST API.
    ///
    /// Attached, the job's output streams here and its exit status is
    /// this command's; detached (-d), it prints the job id and REST address
    /// and leaves the job running, its output in a log file.
    ///
    /// Examples:
    ///   weir run target/release/examples/running_total_word_count --port 9999
    ///   weir run -d -p 2 -s /tmp/savepoints/savepoint-3f2a1b-0123456789ab ./my_job --input in.txt
    #[command(verbatim_doc_comment)]
    Run(jobs::RunOptions),
    /// Lists the job behind a REST API (running ones; -a: all).
    ///
    /// Example: weir list -m localhost:8081
    #[command(verbatim_doc_comment)]
    List {
        /// Include finished, failed and cancelled jobs (from the archive
        /// of ended jobs, too).
        #[arg(short = 'a', long)]
        all: bool,
        /// The archive of ended jobs (jobmanager.archive.fs.dir; default
        /// ~/.local/share/weir/completed-jobs).
        #[arg(long, value_name = "DIR")]
        archive_dir: Option<PathBuf>,
        #[command(flatten)]
        target: Target,
    },
    /// Serves the archive of ended jobs read-only: the dashboard and the
    /// REST answers each job had when it ended (Flink's history server).
    ///
    /// Example: weir history-server --port 8082
    #[command(verbatim_doc_comment)]
    HistoryServer {
        /// The archive (jobmanager.archive.fs.dir; default
        /// ~/.local/share/weir/completed-jobs).
        #[arg(long, value_name = "DIR")]
        archive_dir: Option<PathBuf>,
        /// The port (0: any free one).
        #[arg(long, default_value_t = 8082)]
        port: u16,
    },
    /// Takes a savepoint of a running job, or deletes one (--dispose).
    ///
    /// Examples:
    ///   weir savepoint 3f2a1b… /tmp/savepoints
    ///   weir savepoint 3f2a1b… s3://my-bucket/savepoints
    ///   weir savepoint --dispose /tmp/savepoints/savepoint-3f2a1b-0123456789ab
    #[command(verbatim_doc_comment)]
    Savepoint {
        /// The job.
        #[arg(required_unless_present = "dispose")]
        job_id: Option<String>,
        /// Where the savepoint goes (default: the job's
        /// execution.checkpointing.savepoint-dir).
        dir: Option<PathBuf>,
        /// Deletes the savepoint at PATH (after checking that it is one).
        #[arg(long, value_name = "PATH", conflicts_with_all = ["job_id", "dir"])]
        dispose: Option<PathBuf>,
        #[command(flatten)]
        target: Target,
    },
    /// Stops a job with a savepoint (sources stop, sinks commit, it ends).
    ///
    /// Example: weir stop --savepoint-path /tmp/savepoints --drain 3f2a1b…
    #[command(verbatim_doc_comment)]
    Stop {
        /// Where the savepoint goes (default: the job's savepoint dir).
        #[arg(short = 'p', long = "savepoint-path", value_name = "DIR")]
        savepoint_path: Option<PathBuf>,
        /// First emit the end-of-time watermark, so every event-time window
        /// and timer fires.
        #[arg(short = 'd', long)]
        drain: bool,
        /// The job.
        job_id: String,
        #[command(flatten)]
        target: Target,
    },
    /// Cancels a job (no savepoint).
    ///
    /// Example: weir cancel 3f2a1b…
    #[command(verbatim_doc_comment)]
    Cancel {
        /// The job.
        job_id: String,
        #[command(flatten)]
        target: Target,
    },
    /// Explains why a job's event-time windows do not fire: for each
    /// waiting operator subtask, the input holding its watermark back,
    /// followed upstream to the source subtask and split, how long each has
    /// not advanced, idle inputs, and records dropped as late.
    ///
    /// Example: weir diagnose 3f2a1b… -m localhost:8081
    #[command(verbatim_doc_comment)]
    Diagnose {
        /// The job.
        job_id: String,
        #[command(flatten)]
        target: Target,
    },
    /// Runs Flink SQL: a script of CREATE TABLE, SET, INSERT INTO and SELECT
    /// statements (-f), or an interactive shell.
    ///
    /// SELECT prints its rows as a changelog table (the op column: +I, -U,
    /// +U, -D); INSERT INTO runs a job writing into a table, as does
    /// CREATE TABLE … AS SELECT; EXECUTE STATEMENT SET BEGIN … END runs its
    /// INSERTs as one job; EXPLAIN prints the plan. SHOW TABLES, DESCRIBE,
    /// SHOW CREATE TABLE, ALTER TABLE and DROP TABLE look after the
    /// session's tables. In the shell, HELP; lists the statements and
    /// QUIT; leaves.
    ///
    /// Examples:
    ///   weir sql -f examples/sql/order_report.sql
    ///   weir sql -f examples/sql/currency_conversion.sql
    ///   weir sql -p 2 -D execution.checkpointing.interval=10s -f job.sql
    #[command(verbatim_doc_comment)]
    Sql(sql::SqlOptions),
    /// Checkpoints and savepoints.
    #[command(subcommand)]
    Checkpoint(CheckpointCommand),
    /// Creates a Cargo project with a Weir job (a word count), a test of
    /// it, and how to run both.
    ///
    /// Examples:
    ///   weir new my-job && cd my-job && cargo test
    ///   weir new my-job --weir-path ~/src/weir/crates/weir
    #[command(verbatim_doc_comment)]
    New {
        /// The project's name (its directory and package).
        name: String,
        /// Where the project's directory goes.
        #[arg(long, value_name = "DIR", default_value = ".")]
        dir: PathBuf,
        /// The weir crate the project depends on (default: the source tree
        /// this command was built from).
        #[arg(long, value_name = "PATH")]
        weir_path: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
enum CheckpointCommand {
    /// Prints what a checkpoint or savepoint holds, after verifying every
    /// file's size and checksum.
    ///
    /// PATH is a `chk-N` or `savepoint-…` directory, its `_metadata`, or a
    /// job's checkpoint directory (its newest checkpoint that verifies);
    /// on a local disk or `s3://bucket/prefix` (credentials and endpoint
    /// from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION,
    /// AWS_ENDPOINT_URL).
    ///
    /// Example: weir checkpoint inspect /tmp/checkpoints/3f2a…/chk-12
    ///          weir checkpoint inspect s3://my-bucket/checkpoints/3f2a…
    #[command(verbatim_doc_comment)]
    Inspect {
        /// The checkpoint, savepoint, or job checkpoint directory.
        path: PathBuf,
    },
    /// Lists every checkpoint and savepoint under a directory or an
    /// `s3://` prefix, newest first: job id, id, time, size, complete or
    /// not, verifies or not.
    ///
    /// Example: weir checkpoint list /tmp/checkpoints
    ///          weir checkpoint list /tmp/checkpoints --latest
    ///          weir checkpoint list s3://my-bucket/checkpoints
    #[command(verbatim_doc_comment)]
    List {
        /// A checkpoint directory (of jobs), or a directory of savepoints
        /// (or such an `s3://` prefix).
        dir: PathBuf,
        /// Print only the path to resume from: the newest complete
        /// checkpoint or savepoint that verifies (exit 1 if none).
        #[arg(long)]
        latest: bool,
    },
}

fn main() -> ExitCode {
    weir_state::allocator::grow_heaps_in_large_steps();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(options) => jobs::run(options),
        Command::Sql(options) => sql::run(options),
        Command::List {
            all,
            archive_dir,
            target,
        } => jobs::list(
            &target.client(),
            all,
            &archive_dir.unwrap_or_else(weir_web::archive::default_dir),
        ),
        Command::HistoryServer { archive_dir, port } => jobs::history_server(
            &archive_dir.unwrap_or_else(weir_web::archive::default_dir),
            port,
        ),
        Command::Savepoint {
            dispose: Some(path),
            ..
        } => checkpoints::dispose_savepoint(&path).map(|location| {
            println!("disposed savepoint {location}");
            ExitCode::SUCCESS
        }),
        Command::Savepoint {
            job_id,
            dir,
            target,
            ..
        } => jobs::savepoint(
            &target.client(),
            job_id.as_deref().unwrap_or_default(),
            dir.as_deref(),
        ),
        Command::Stop {
            savepoint_path,
            drain,
            job_id,
            target,
        } => jobs::stop(&target.client(), &job_id, savepoint_path.as_deref(), drain),
        Command::Cancel { job_id, target } => jobs::cancel(&target.client(), &job_id),
        Command::Diagnose { job_id, target } => target
            .client()
            .diagnosis(&job_id)
            .map(|text| {
                print!("{text}");
                ExitCode::SUCCESS
            })
            .map_err(Into::into),
        Command::Checkpoint(CheckpointCommand::Inspect { path }) => inspect(&path),
        Command::Checkpoint(CheckpointCommand::List { dir, latest }) => list(&dir, latest),
        Command::New {
            name,
            dir,
            weir_path,
        } => new_project::create(&name, &dir, weir_path),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("weir: {e:#}");
            ExitCode::FAILURE
        }
    }
}

impl Target {
    fn client(&self) -> weir_web::RestClient {
        weir_web::RestClient::new(&self.address, self.token.clone())
    }
}

fn list(dir: &std::path::Path, latest: bool) -> anyhow::Result<ExitCode> {
    let entries = checkpoints::list(dir)?;
    if latest {
        return match entries.iter().find(|e| matches!(e.verifies, Some(Ok(())))) {
            Some(e) => {
                println!("{}", e.path);
                Ok(ExitCode::SUCCESS)
            }
            None => {
                eprintln!(
                    "weir: no complete checkpoint or savepoint that verifies under {}",
                    dir.display()
                );
                Ok(ExitCode::FAILURE)
            }
        };
    }
    if entries.is_empty() {
        println!("no checkpoints or savepoints under {}", dir.display());
    } else {
        print!("{}", checkpoints::describe_list(&entries));
    }
    Ok(ExitCode::SUCCESS)
}

fn inspect(path: &std::path::Path) -> anyhow::Result<ExitCode> {
    let (checkpoint, skipped) = load_path(path).map_err(|e| match e {
        // Names the path itself.
        weir_state::StateError::NotACheckpoint(_) => anyhow::anyhow!("{e}"),
        other => anyhow::anyhow!("{}: {other}", path.display()),
    })?;
    for (id, why) in skipped {
        println!("skipped checkpoint {id}: {why}");
    }
    print!("{}", checkpoints::describe(&checkpoint));
    Ok(ExitCode::SUCCESS)
}
