//! A throwaway S3-compatible server on loopback, for tests, examples and
//! benchmarks: `s3s-fs` (installed by `scripts/install-deps.sh`, or
//! `cargo install s3s-fs --features binary`) serving a temporary
//! directory, one bucket in it. Objects are plain files under
//! [`bucket_dir`](LocalS3::bucket_dir), so the server can be stopped and
//! started again without losing them, and a test can corrupt one.

use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::object::{configure_s3_bucket, S3Options};

const ACCESS_KEY: &str = "weir-test";
const SECRET_KEY: &str = "weir-test-secret";

/// Why a local server could not be had.
#[derive(Debug, thiserror::Error)]
pub enum LocalS3Error {
    /// The server is not installed.
    #[error(
        "the S3-compatible test server s3s-fs was not found: run scripts/install-deps.sh \
         (it runs `cargo install s3s-fs --version 0.14.1 --features binary --locked`) or \
         set WEIR_S3S_FS to the binary"
    )]
    NotInstalled,
    /// A step failed.
    #[error("cannot start a local S3 server: {0}")]
    Start(String),
}

/// A running throwaway server with one bucket; dropping it stops the
/// server and deletes its files.
#[derive(Debug)]
pub struct LocalS3 {
    root: PathBuf,
    bucket: String,
    port: u16,
    server: Option<Child>,
}

/// The server binary: `WEIR_S3S_FS`, else `s3s-fs` on the `PATH` or in
/// Cargo's bin directory.
fn binary() -> Result<PathBuf, LocalS3Error> {
    if let Some(path) = std::env::var_os("WEIR_S3S_FS") {
        return Ok(PathBuf::from(path));
    }
    let cargo_bin = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .map(|d| d.join("bin"));
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .chain(cargo_bin)
        .map(|d| d.join("s3s-fs"))
        .find(|p| p.is_file())
        .ok_or(LocalS3Error::NotInstalled)
}

fn free_port() -> Result<u16, LocalS3Error> {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| LocalS3Error::Start(format!("no free port: {e}")))
}

impl LocalS3 {
    /// Starts a server with bucket `bucket` (a name unique to the caller:
    /// this process reaches the bucket through this server from now on).
    pub fn start(bucket: &str) -> Result<Self, LocalS3Error> {
        let root = std::env::temp_dir().join(format!(
            "weir-s3-{}-{bucket}-{}",
            std::process::id(),
            free_port()?
        ));
        let bucket_dir = root.join(bucket);
        std::fs::create_dir_all(&bucket_dir)
            .map_err(|e| LocalS3Error::Start(format!("{}: {e}", bucket_dir.display())))?;
        let mut s3 = LocalS3 {
            root,
            bucket: bucket.to_string(),
            port: free_port()?,
            server: None,
        };
        s3.restart()?;
        configure_s3_bucket(bucket, s3.options());
        Ok(s3)
    }

    /// Starts the server again after [`stop`](Self::stop), on the same
    /// port, with the same objects.
    pub fn restart(&mut self) -> Result<(), LocalS3Error> {
        if self.server.is_some() {
            return Ok(());
        }
        let child = Command::new(binary()?)
            .args(["--host", "127.0.0.1", "--port", &self.port.to_string()])
            .args(["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY])
            .arg(&self.root)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| LocalS3Error::Start(format!("s3s-fs: {e}")))?;
        self.server = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect((Ipv4Addr::LOCALHOST, self.port)).is_err() {
            if let Some(Ok(Some(status))) = self.server.as_mut().map(Child::try_wait) {
                self.server = None;
                return Err(LocalS3Error::Start(format!("s3s-fs exited: {status}")));
            }
            if Instant::now() > deadline {
                return Err(LocalS3Error::Start(format!(
                    "s3s-fs did not listen on port {} within 20 s",
                    self.port
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    /// Stops the server (requests fail until [`restart`](Self::restart)).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.server.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The bucket's name.
    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// `s3://<bucket>/<path>`.
    pub fn uri(&self, path: &str) -> String {
        format!("s3://{}/{}", self.bucket, path.trim_start_matches('/'))
    }

    /// Where the server keeps the bucket's objects, one file per object.
    pub fn bucket_dir(&self) -> PathBuf {
        self.root.join(&self.bucket)
    }

    /// The options that reach this server.
    pub fn options(&self) -> S3Options {
        S3Options {
            access_key: Some(ACCESS_KEY.into()),
            secret_key: Some(SECRET_KEY.into()),
            endpoint: Some(self.endpoint()),
            region: Some("us-east-1".into()),
            path_style: Some(true),
            request_timeout: Some(Duration::from_secs(10)),
            max_retries: Some(1),
        }
    }

    /// The same as Flink's configuration keys, for a job's `-D` flags or
    /// `config.yaml`.
    pub fn config_keys(&self) -> Vec<(&'static str, String)> {
        vec![
            ("s3.access-key", ACCESS_KEY.into()),
            ("s3.secret-key", SECRET_KEY.into()),
            ("s3.endpoint", self.endpoint()),
            ("s3.path.style.access", "true".into()),
        ]
    }

    /// The same as AWS environment variables, for programs that read
    /// only those (`weir checkpoint list`).
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ACCESS_KEY_ID", ACCESS_KEY.into()),
            ("AWS_SECRET_ACCESS_KEY", SECRET_KEY.into()),
            ("AWS_ENDPOINT_URL", self.endpoint()),
            ("AWS_REGION", "us-east-1".into()),
            ("AWS_ALLOW_HTTP", "true".into()),
        ]
    }

    /// Bytes of all objects under `prefix` of the bucket, from the
    /// server's directory.
    pub fn bytes_under(&self, prefix: &str) -> u64 {
        fn walk(dir: &Path) -> u64 {
            std::fs::read_dir(dir)
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| match e.metadata() {
                    Ok(m) if m.is_dir() => walk(&e.path()),
                    Ok(m) => m.len(),
                    Err(_) => 0,
                })
                .sum()
        }
        walk(&self.bucket_dir().join(prefix))
    }
}

impl Drop for LocalS3 {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

#[cfg(test)]
mod tests {
    use super::super::open;
    use super::*;

    /// Needs s3s-fs (scripts/install-deps.sh); fails, saying so, without.
    #[test]
    fn objects_survive_a_server_restart_and_fail_while_it_is_down() {
        let mut s3 = LocalS3::start("weir-local-s3-unit").unwrap_or_else(|e| panic!("{e}"));
        let fs = open(&s3.uri("dir")).expect("open");
        fs.write("a/b", b"bytes").expect("put");
        assert_eq!(fs.read("a/b").expect("get"), b"bytes");
        assert!(s3.bucket_dir().join("dir/a/b").is_file());
        s3.stop();
        assert!(fs.read("a/b").is_err(), "the server is down");
        s3.restart().expect("restart");
        assert_eq!(fs.read("a/b").expect("get again"), b"bytes");
        assert_eq!(fs.list("a").expect("list").len(), 1);
        fs.remove_all("a").expect("delete");
        assert!(!fs.exists("a/b").expect("head"));
    }
}
