//! A throwaway PostgreSQL server on loopback, for tests, examples and
//! benchmarks: a cluster made by `initdb` in a temporary directory, started
//! on a free port with prepared transactions enabled, stopped and deleted
//! when dropped.
//!
//! The server refuses to run as root; started by root, it runs as the
//! unprivileged `postgres` account that Debian's package creates.

use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Why a local server could not be had.
#[derive(Debug, thiserror::Error)]
pub enum LocalPostgresError {
    /// The server's programs are not installed.
    #[error(
        "PostgreSQL's server programs (initdb, postgres) were not found: install them \
         (Debian: apt-get install -y postgresql) or set WEIR_POSTGRES_BIN to their directory"
    )]
    NotInstalled,
    /// A step failed.
    #[error("cannot start a local PostgreSQL server: {0}")]
    Start(String),
}

/// A running throwaway server; dropping it stops it and deletes its files.
#[derive(Debug)]
pub struct LocalPostgres {
    dir: PathBuf,
    port: u16,
    server: Child,
}

/// Where `initdb` and `postgres` are: `WEIR_POSTGRES_BIN`, else the newest
/// version under Debian's `/usr/lib/postgresql`.
fn bin_dir() -> Result<PathBuf, LocalPostgresError> {
    if let Some(dir) = std::env::var_os("WEIR_POSTGRES_BIN") {
        return Ok(PathBuf::from(dir));
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .map_err(|_| LocalPostgresError::NotInstalled)?
        .flatten()
        .filter_map(|e| {
            let version = e.file_name().to_string_lossy().parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            bin.join("postgres").is_file().then_some((version, bin))
        })
        .collect();
    versions.sort();
    versions
        .pop()
        .map(|(_, bin)| bin)
        .ok_or(LocalPostgresError::NotInstalled)
}

fn is_root() -> bool {
    // The effective user of this process, without a C library binding.
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|ids| ids.split_whitespace().nth(1).map(|uid| uid == "0"))
        })
        .unwrap_or(false)
}

/// `program` run as the `postgres` account when this process is root.
fn command(program: &Path) -> Command {
    if is_root() {
        let mut c = Command::new("setpriv");
        c.args([
            "--reuid=postgres",
            "--regid=postgres",
            "--init-groups",
            "--reset-env",
        ])
        .arg(program);
        c
    } else {
        Command::new(program)
    }
}

fn start_error(what: &str, e: impl std::fmt::Display) -> LocalPostgresError {
    LocalPostgresError::Start(format!("{what}: {e}"))
}

/// Starts the server of the cluster in `dir` on `port`.
fn spawn_server(bin: &Path, dir: &Path, port: u16) -> Result<Child, LocalPostgresError> {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(format!("server-{port}.log")))
        .map_err(|e| start_error("creating its log", e))?;
    command(&bin.join("postgres"))
        .arg("-D")
        .arg(dir.join("data"))
        .args(["-p", &port.to_string()])
        .args(["-c", "listen_addresses=127.0.0.1"])
        .arg("-c")
        .arg(format!("unix_socket_directories={}", dir.display()))
        .args(["-c", "max_prepared_transactions=64"])
        .args(["-c", "fsync=off"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .map_err(|e| start_error("starting postgres", e))
}

impl LocalPostgres {
    /// Makes and starts a server. Fails (never silently) when PostgreSQL is
    /// not installed or does not come up within 30 s.
    pub fn start() -> Result<LocalPostgres, LocalPostgresError> {
        let bin = bin_dir()?;
        if !bin.join("initdb").is_file() {
            return Err(LocalPostgresError::NotInstalled);
        }
        let dir = std::env::temp_dir().join(format!(
            "weir-postgres-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        ));
        std::fs::create_dir_all(&dir).map_err(|e| start_error("creating its directory", e))?;
        if is_root() {
            let owned = Command::new("chown")
                .arg("postgres:postgres")
                .arg(&dir)
                .status()
                .map_err(|e| start_error("chown", e))?;
            if !owned.success() {
                return Err(start_error(
                    "chown of its directory to the postgres account",
                    owned,
                ));
            }
        }
        let data = dir.join("data");
        let init = command(&bin.join("initdb"))
            .arg("-D")
            .arg(&data)
            .args(["-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| start_error("running initdb", e))?;
        if !init.status.success() {
            let _ = std::fs::remove_dir_all(&dir);
            return Err(start_error(
                "initdb",
                String::from_utf8_lossy(&init.stderr).trim().to_string(),
            ));
        }
        // A free port can be taken between finding and binding it: try
        // a few.
        let mut last = String::new();
        for _ in 0..5 {
            let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
                .and_then(|l| l.local_addr())
                .map_err(|e| start_error("finding a free port", e))?
                .port();
            let server = spawn_server(&bin, &dir, port)?;
            let mut local = LocalPostgres {
                dir: dir.clone(),
                port,
                server,
            };
            match local.wait_until_up() {
                Ok(()) => return Ok(local),
                Err(why) => {
                    last = why;
                    let _ = local.server.kill();
                    let _ = local.server.wait();
                    // Not dropped: that would delete the cluster the next
                    // try starts.
                    std::mem::forget(local);
                }
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
        Err(LocalPostgresError::Start(last))
    }

    fn wait_until_up(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(Some(status)) = self.server.try_wait() {
                return Err(format!("postgres exited ({status}): {}", self.log_tail()));
            }
            if TcpStream::connect((Ipv4Addr::LOCALHOST, self.port)).is_ok()
                && postgres::Client::connect(&self.url(), postgres::NoTls).is_ok()
            {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!("not up after 30 s: {}", self.log_tail()));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.dir.join(format!("server-{}.log", self.port)))
            .unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(5)..].join(" / ")
    }

    /// The connection URL (user `postgres`, database `postgres`, no
    /// password).
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// The port it listens on (127.0.0.1 only).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Stops the server as an outage would, keeping its data: sessions
    /// end, new connections are refused until [`restart`](Self::restart).
    pub fn stop(&mut self) {
        shut_down(&mut self.server);
    }

    /// Starts the stopped server again, on the same port with the same
    /// data (prepared transactions survive, as they do a real restart).
    pub fn restart(&mut self) -> Result<(), LocalPostgresError> {
        self.server = spawn_server(&bin_dir()?, &self.dir, self.port)?;
        self.wait_until_up().map_err(LocalPostgresError::Start)
    }
}

/// A fast shutdown (SIGINT) lets the server end its backends; a server
/// that does not go within ten seconds is killed.
fn shut_down(server: &mut Child) {
    let _ = Command::new("kill")
        .args(["-INT", &server.id().to_string()])
        .status();
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = server.try_wait() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = server.kill();
    let _ = server.wait();
}

impl Drop for LocalPostgres {
    fn drop(&mut self) {
        shut_down(&mut self.server);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
