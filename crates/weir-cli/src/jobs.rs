//! The sub-commands that start a job or speak to a running one's REST API.

use std::io::{BufRead, BufReader, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use weir_web::{RestClient, SavepointStatus};

/// What `weir run` was asked.
#[derive(clap::Args)]
pub(crate) struct RunOptions {
    /// Restore from this savepoint or retained checkpoint.
    #[arg(
        short = 's',
        long = "fromSavepoint",
        alias = "from-savepoint",
        value_name = "PATH"
    )]
    from_savepoint: Option<PathBuf>,
    /// Default parallelism of the job's operators.
    #[arg(short = 'p', long)]
    parallelism: Option<u32>,
    /// Restore even if the savepoint holds state of operators the job no
    /// longer has.
    #[arg(
        short = 'n',
        long = "allowNonRestoredState",
        alias = "allow-non-restored-state"
    )]
    allow_non_restored_state: bool,
    /// A fixed job id (32 hexadecimal digits): the job keeps its
    /// checkpoints in one directory across runs and, started again, resumes
    /// from the newest of them by itself (`-D $internal.pipeline.job-id`).
    #[arg(long = "job-id", value_name = "ID")]
    job_id: Option<String>,
    /// Leave the job running and return once its REST API is up.
    #[arg(short = 'd', long)]
    detached: bool,
    /// Port of the job's REST API (0: any free port).
    #[arg(long, default_value_t = 8081)]
    rest_port: u16,
    /// Where a detached job's output goes (default: a file in the
    /// temporary directory, named with the job's process id).
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
    /// The job program.
    job: PathBuf,
    /// Its arguments (engine flags such as -D key=value included).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<String>,
}

/// How long a detached job may take to bring its REST API up.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// The line a job prints once its REST API listens.
const REST_LINE: &str = " REST API at http://";

/// The program to start: a path to an existing file runs that file (a
/// bare name in the current directory included, which `Command` would
/// otherwise look up on PATH only); anything else is looked up on PATH.
fn program(job: &Path) -> PathBuf {
    let bare = job.components().count() == 1 && !job.is_absolute();
    if bare && job.is_file() {
        Path::new(".").join(job)
    } else {
        job.to_path_buf()
    }
}

/// The exit code of a job program that ended with `status`: its own, or
/// 128 + the signal that ended it, as shells report it.
fn exit_code(status: std::process::ExitStatus) -> ExitCode {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(0), _) => ExitCode::SUCCESS,
        (Some(c), _) => ExitCode::from(u8::try_from(c).unwrap_or(1)),
        (None, Some(signal)) => ExitCode::from(u8::try_from(128 + signal).unwrap_or(1)),
        (None, None) => ExitCode::FAILURE,
    }
}

/// Runs the job program in the foreground. SIGINT, SIGTERM and SIGHUP sent
/// to `weir` are passed on to the job (which ends, and its REST API with
/// it), and `weir` waits for it: no job is left running behind a `weir`
/// that was stopped.
fn run_attached(mut cmd: Command, job: &Path) -> anyhow::Result<ExitCode> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])
        .context("cannot install signal handlers")?;
    let mut child = cmd
        .spawn()
        .with_context(|| format!("cannot start {}", job.display()))?;
    let pid = libc::pid_t::try_from(child.id()).context("process id out of range")?;
    let handle = signals.handle();
    let forwarder = std::thread::spawn(move || {
        for signal in signals.forever() {
            // SAFETY: kill(2) with a pid of our own child, still unreaped
            // (we close this loop before reaping it), and a valid signal.
            unsafe {
                libc::kill(pid, signal);
            }
        }
    });
    let status = child.wait();
    handle.close();
    let _ = forwarder.join();
    Ok(exit_code(status.with_context(|| {
        format!("waiting for {}", job.display())
    })?))
}

/// Starts the job program with the engine flags the options stand for.
pub(crate) fn run(o: RunOptions) -> anyhow::Result<ExitCode> {
    let mut cmd = Command::new(program(&o.job));
    cmd.args(&o.args)
        .arg("-D")
        .arg(format!("rest.port={}", o.rest_port));
    if let Some(p) = o.parallelism {
        cmd.arg("-p").arg(p.to_string());
    }
    if let Some(s) = &o.from_savepoint {
        cmd.arg("--from-savepoint").arg(s);
    }
    if o.allow_non_restored_state {
        cmd.arg("--allow-non-restored-state");
    }
    if let Some(id) = &o.job_id {
        cmd.arg("-D").arg(format!("$internal.pipeline.job-id={id}"));
    }
    if !o.detached {
        return run_attached(cmd, &o.job);
    }
    let log = o.log.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!(
            "weir-{}-{}.log",
            o.job
                .file_name()
                .map_or("job".into(), |n| n.to_string_lossy().to_string()),
            std::process::id()
        ))
    });
    let file =
        std::fs::File::create(&log).with_context(|| format!("cannot write {}", log.display()))?;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(file.try_clone()?)
        .stderr(file)
        .spawn()
        .with_context(|| format!("cannot start {}", o.job.display()))?;
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        if let Some((job_id, address)) = announced(&log)? {
            // Watched until every task opened its operators, so that a job
            // that fails at once (a missing input, a bad setting found by
            // an operator's `open`) is reported as failed, not submitted.
            let client = RestClient::new(&address, None);
            let spin = std::io::stderr().is_terminal();
            let started = Instant::now();
            let mut initializing = true;
            while initializing && Instant::now() < deadline {
                if let Some(status) = child.try_wait()? {
                    if spin {
                        eprint!("\r\x1b[K");
                    }
                    return ended_at_once(&job_id, status, &log);
                }
                let (running, total) = running_vertices(&client, &job_id);
                initializing = total == 0 || running < total;
                // A restore of large state can take a while: show it moves.
                if spin && initializing && started.elapsed() > Duration::from_millis(500) {
                    eprint!(
                        "\r{running}/{total} operators running ({} s; restoring or opening)",
                        started.elapsed().as_secs()
                    );
                    let _ = std::io::stderr().flush();
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            if spin {
                eprint!("\r\x1b[K");
            }
            if let Some(status) = child.try_wait()? {
                return ended_at_once(&job_id, status, &log);
            }
            println!("Job has been submitted with JobID {job_id}");
            println!("REST API: http://{address}");
            println!("Log: {}", log.display());
            return Ok(ExitCode::SUCCESS);
        }
        if let Some(status) = child.try_wait()? {
            eprintln!("{}", tail(&log));
            bail!(
                "the job exited ({status}) before its REST API was up; its log: {}",
                log.display(),
            );
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            bail!(
                "no REST API within {} s; see {}",
                START_TIMEOUT.as_secs(),
                log.display()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// How many of the job's vertices are RUNNING (their subtasks opened),
/// of how many; `(0, 0)` while the API does not answer.
fn running_vertices(client: &RestClient, job_id: &str) -> (usize, usize) {
    let Ok(job) = client.job(job_id) else {
        return (0, 0);
    };
    let vertices = job["vertices"].as_array().cloned().unwrap_or_default();
    let running = vertices
        .iter()
        .filter(|v| v["status"].as_str() == Some("RUNNING"))
        .count();
    (running, vertices.len())
}

/// A detached job that ended while `weir run -d` still watched it: a
/// failure is reported with the job's last log lines and its exit status.
fn ended_at_once(
    job_id: &str,
    status: std::process::ExitStatus,
    log: &Path,
) -> anyhow::Result<ExitCode> {
    if status.success() {
        println!("Job {job_id} has finished; its output: {}", log.display());
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!("{}", tail(log));
    eprintln!(
        "weir: job {job_id} failed at once ({status}); its log: {}",
        log.display()
    );
    Ok(exit_code(status))
}

/// The job id and REST address a job's log announced, once it has.
fn announced(log: &Path) -> anyhow::Result<Option<(String, String)>> {
    let file = std::fs::File::open(log)?;
    for line in BufReader::new(file).lines() {
        let line = line?;
        // "weir: job <id> REST API at http://<address>"
        if let Some((head, address)) = line.split_once(REST_LINE) {
            if let Some(id) = head.strip_prefix("weir: job ") {
                return Ok(Some((id.trim().to_string(), address.trim().to_string())));
            }
        }
    }
    Ok(None)
}

/// What a job's log says about how it ended: from its `Error:` line to
/// before a backtrace, or else its last 20 lines.
fn tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    if let Some(start) = lines.iter().rposition(|l| l.starts_with("Error: ")) {
        return lines[start..]
            .iter()
            .take_while(|l| !l.starts_with("Stack backtrace:"))
            .copied()
            .collect::<Vec<_>>()
            .join("\n")
            .trim_end()
            .to_string();
    }
    lines[lines.len().saturating_sub(20)..].join("\n")
}

/// `weir history-server`: serves `dir` on loopback port `port`.
pub(crate) fn history_server(dir: &Path, port: u16) -> anyhow::Result<ExitCode> {
    let listener = weir_web::history::bind(std::net::SocketAddr::from(([127, 0, 0, 1], port)))?;
    let address = listener.local_addr()?;
    let count = weir_web::archive::list(dir)?.len();
    eprintln!(
        "weir: history server at http://{address} ({count} archived job{} in {})",
        if count == 1 { "" } else { "s" },
        dir.display()
    );
    weir_web::history::serve(listener, dir.to_path_buf())?;
    Ok(ExitCode::SUCCESS)
}

/// `weir list`: the job behind the REST API; with `all`, also the ended
/// jobs archived in `archive_dir`.
pub(crate) fn list(client: &RestClient, all: bool, archive_dir: &Path) -> anyhow::Result<ExitCode> {
    let mut jobs = match client.jobs() {
        Ok(jobs) => jobs,
        // Nothing runs there; the archive still lists what ended.
        Err(e @ weir_web::ClientError::Unreachable { .. }) if all => {
            eprintln!("weir: {e}");
            Vec::new()
        }
        Err(e) => return Err(e.into()),
    };
    if all {
        for archived in weir_web::archive::list(archive_dir)? {
            if !jobs.iter().any(|j| j.jid == archived.jid) {
                jobs.push(archived);
            }
        }
    }
    let running: Vec<_> = jobs
        .iter()
        .filter(|j| j.state == "RUNNING" || j.state == "RESTARTING")
        .collect();
    let ended: Vec<_> = jobs
        .iter()
        .filter(|j| j.state != "RUNNING" && j.state != "RESTARTING")
        .collect();
    let line = |j: &weir_web::JobSummary| {
        format!(
            "{} : {} : {} ({}, {})",
            local_date(j.start_time),
            j.jid,
            j.name,
            j.state,
            duration_text(j.duration)
        )
    };
    println!("------------------ Running/Restarting Jobs -------------------");
    if running.is_empty() {
        println!("No running jobs.");
    }
    for j in running {
        println!("{}", line(j));
    }
    println!("--------------------------------------------------------------");
    if all {
        println!("---------------------- Terminated Jobs -----------------------");
        if ended.is_empty() {
            println!("No terminated jobs.");
        }
        for j in ended {
            println!("{}", line(j));
        }
        println!("--------------------------------------------------------------");
    }
    Ok(ExitCode::SUCCESS)
}

/// A run time as `1h 02m 03s`, `2m 03s` or `3s`.
fn duration_text(ms: i64) -> String {
    let s = ms.max(0) / 1000;
    match (s / 3600, s / 60 % 60, s % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, s) => format!("{m}m {s:02}s"),
        (h, m, s) => format!("{h}h {m:02}m {s:02}s"),
    }
}

/// Milliseconds since the epoch as Flink's CLI prints a job's start, in
/// local time: `01.12.2026 11:30:05`.
pub(crate) fn local_date(ms: i64) -> String {
    // time_t is 64 bits wide wherever Weir builds.
    let secs = ms.div_euclid(1000) as libc::time_t;
    // SAFETY: `tm` is plain data that localtime_r fills in; both pointers
    // are valid for the call.
    let tm = unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&secs, &mut tm).is_null() {
            return ms.to_string();
        }
        tm
    };
    format!(
        "{:02}.{:02}.{:04} {:02}:{:02}:{:02}",
        tm.tm_mday,
        tm.tm_mon + 1,
        tm.tm_year + 1900,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec
    )
}

/// `weir savepoint JOB_ID [DIR]`.
pub(crate) fn savepoint(
    client: &RestClient,
    job_id: &str,
    dir: Option<&Path>,
) -> anyhow::Result<ExitCode> {
    println!("Triggering savepoint for job {job_id}.");
    let dir = dir.map(absolute).transpose()?;
    let trigger = client.trigger_savepoint(job_id, dir.as_deref())?;
    let location = wait_for(client, job_id, &trigger)?;
    println!("Savepoint completed. Path: {location}");
    println!("You can resume your program from this savepoint with the run command.");
    Ok(ExitCode::SUCCESS)
}

/// `weir stop [--savepoint-path DIR] [--drain] JOB_ID`.
pub(crate) fn stop(
    client: &RestClient,
    job_id: &str,
    dir: Option<&Path>,
    drain: bool,
) -> anyhow::Result<ExitCode> {
    println!("Suspending job {job_id}.");
    let dir = dir.map(absolute).transpose()?;
    let trigger = client.stop(job_id, dir.as_deref(), drain)?;
    let location = wait_for(client, job_id, &trigger)?;
    println!("Savepoint completed. Path: {location}");
    Ok(ExitCode::SUCCESS)
}

/// `weir cancel JOB_ID`.
pub(crate) fn cancel(client: &RestClient, job_id: &str) -> anyhow::Result<ExitCode> {
    client.cancel(job_id)?;
    println!("Cancelled job {job_id}.");
    Ok(ExitCode::SUCCESS)
}

/// The job resolves a relative directory against its own working
/// directory; send what the user meant.
fn absolute(dir: &Path) -> anyhow::Result<String> {
    if dir.to_str().is_some_and(weir_state::file_system::is_remote) {
        // `s3://bucket/prefix`: the same for everyone.
        return Ok(dir.display().to_string());
    }
    let abs = if dir.is_absolute() {
        dir.to_path_buf()
    } else {
        std::env::current_dir()?.join(dir)
    };
    Ok(abs.display().to_string())
}

/// Polls a savepoint request until it ends, with a spinner on a terminal.
fn wait_for(client: &RestClient, job_id: &str, trigger: &str) -> anyhow::Result<String> {
    let spin = std::io::stderr().is_terminal();
    let frames = ['|', '/', '-', '\\'];
    let started = Instant::now();
    for tick in 0usize.. {
        match client.savepoint_status(job_id, trigger)? {
            SavepointStatus::InProgress => {}
            SavepointStatus::Completed(location) => {
                if spin {
                    eprint!("\r\x1b[K");
                }
                return Ok(location);
            }
            SavepointStatus::Failed(why) => {
                if spin {
                    eprint!("\r\x1b[K");
                }
                // The job's own error may already say so.
                let why = why.strip_prefix("savepoint failed: ").unwrap_or(&why);
                bail!("the savepoint failed: {why}");
            }
        }
        if spin {
            eprint!(
                "\r{} waiting for the savepoint ({} s)",
                frames[tick % frames.len()],
                started.elapsed().as_secs()
            );
            let _ = std::io::stderr().flush();
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    unreachable!("the loop above only ends by returning")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_times_print_as_dates() {
        // 2026-12-01 12:00:00 UTC: Dec 1 or 2 in every time zone.
        let date = local_date(1_796_126_400_000);
        assert!(
            date.starts_with("01.12.2026 ") || date.starts_with("02.12.2026 "),
            "{date}"
        );
        let bytes = date.as_bytes();
        assert_eq!(date.len(), 19, "{date}");
        assert_eq!((bytes[13], bytes[16]), (b':', b':'), "{date}");
    }
}
