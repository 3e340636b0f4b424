//! An S3 (or S3-compatible) bucket prefix as a [`FileSystem`], through the
//! `object_store` crate.
//!
//! Callers are synchronous threads (the checkpoint coordinator, restore,
//! the CLI); requests run on a small runtime of I/O threads owned by this
//! module, never on a task thread. Each request is bounded by a timeout
//! and retried with backoff by `object_store`; what still fails is an
//! error for the caller (a checkpoint then fails and is declined).

use std::collections::HashMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::Duration;

use futures_util::StreamExt;
use object_store::aws::AmazonS3Builder;
use object_store::path::Path as ObjectPath;
use object_store::{
    BackoffConfig, ClientOptions, ObjectStore, ObjectStoreExt, PutPayload, RetryConfig,
};

use super::{io_error, normalize, Entry, FileSystem};
use crate::error::StateError;

/// How to reach S3 (Flink's `s3.*` keys). Unset fields fall back to the
/// standard AWS environment variables (`AWS_ACCESS_KEY_ID`,
/// `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`, `AWS_ENDPOINT_URL`, …), then to
/// the defaults given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct S3Options {
    /// `s3.access-key`.
    pub access_key: Option<String>,
    /// `s3.secret-key`.
    pub secret_key: Option<String>,
    /// `s3.endpoint`: an S3-compatible server (`http://` allowed).
    pub endpoint: Option<String>,
    /// `s3.region` (default `us-east-1`).
    pub region: Option<String>,
    /// `s3.path.style.access`: `bucket` in the path rather than the host
    /// name (default true with an endpoint, false without).
    pub path_style: Option<bool>,
    /// `s3.request-timeout`: one request's limit (default 60 s).
    pub request_timeout: Option<Duration>,
    /// `s3.max-retries`: retries of a failed request (default 3).
    pub max_retries: Option<usize>,
}

/// The process's options, and per-bucket ones that replace them for one
/// bucket (as Hadoop's `fs.s3a.bucket.<name>.*`).
#[derive(Debug, Default)]
struct Settings {
    all: S3Options,
    buckets: HashMap<String, S3Options>,
}

fn settings() -> &'static RwLock<Settings> {
    static SETTINGS: OnceLock<RwLock<Settings>> = OnceLock::new();
    SETTINGS.get_or_init(Default::default)
}

fn stores() -> &'static Mutex<HashMap<String, Arc<dyn ObjectStore>>> {
    static STORES: OnceLock<Mutex<HashMap<String, Arc<dyn ObjectStore>>>> = OnceLock::new();
    STORES.get_or_init(Default::default)
}

/// Sets how this process reaches S3, as Flink initialises its file
/// systems from the configuration once per process. Stores opened before
/// keep the options they were opened with.
pub fn configure_s3(new: S3Options) {
    let mut current = settings().write().unwrap_or_else(|p| p.into_inner());
    if current.all != new {
        current.all = new;
        stores().lock().unwrap_or_else(|p| p.into_inner()).clear();
    }
}

/// Sets how this process reaches one bucket, in place of the options of
/// [`configure_s3`] (a test's own server, a bucket in another account).
pub fn configure_s3_bucket(bucket: &str, new: S3Options) {
    let mut current = settings().write().unwrap_or_else(|p| p.into_inner());
    if current.buckets.get(bucket) != Some(&new) {
        current.buckets.insert(bucket.to_string(), new);
        stores()
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(bucket);
    }
}

/// The runtime the requests run on.
fn runtime() -> Result<&'static tokio::runtime::Runtime, StateError> {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    if let Some(rt) = RUNTIME.get() {
        return Ok(rt);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("weir-object-io")
        .enable_all()
        .build()
        .map_err(|e| StateError::Location(format!("s3://: cannot start I/O threads: {e}")))?;
    Ok(RUNTIME.get_or_init(|| rt))
}

/// Runs `f` on the I/O runtime and waits for it; callable from any thread,
/// inside another runtime's thread too.
fn block<T: Send + 'static>(f: impl Future<Output = T> + Send + 'static) -> Result<T, StateError> {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    runtime()?.spawn(async move {
        let _ = tx.send(f.await);
    });
    rx.recv()
        .map_err(|_| StateError::Internal("an object store request was dropped".into()))
}

/// Uploads of one [`FileSystem::upload_all`] in flight at once.
const UPLOADS_AT_ONCE: usize = 8;

/// Why one upload of several failed.
enum UploadError {
    Local(PathBuf, std::io::Error),
    Remote(String, object_store::Error),
}

/// Files under `s3://bucket/prefix`.
#[derive(Debug, Clone)]
pub struct ObjectFileSystem {
    store: Arc<dyn ObjectStore>,
    scheme: String,
    bucket: String,
    prefix: String,
}

fn build_s3(bucket: &str) -> Result<Arc<dyn ObjectStore>, StateError> {
    let opts = {
        let settings = settings().read().unwrap_or_else(|p| p.into_inner());
        settings
            .buckets
            .get(bucket)
            .unwrap_or(&settings.all)
            .clone()
    };
    let mut builder = AmazonS3Builder::from_env().with_bucket_name(bucket);
    if let Some(k) = &opts.access_key {
        builder = builder.with_access_key_id(k);
    }
    if let Some(k) = &opts.secret_key {
        builder = builder.with_secret_access_key(k);
    }
    if let Some(r) = &opts.region {
        builder = builder.with_region(r);
    }
    let endpoint = opts.endpoint.clone().or_else(|| {
        ["AWS_ENDPOINT_URL", "AWS_ENDPOINT"]
            .iter()
            .find_map(|k| std::env::var(k).ok())
    });
    // Client options replace the builder's, `allow_http` included.
    let mut client = ClientOptions::new()
        .with_timeout(opts.request_timeout.unwrap_or(Duration::from_secs(60)))
        .with_connect_timeout(Duration::from_secs(5));
    if let Some(e) = &endpoint {
        builder = builder.with_endpoint(e);
        if e.starts_with("http://") {
            client = client.with_allow_http(true);
        }
    }
    let path_style = opts.path_style.unwrap_or(endpoint.is_some());
    builder = builder.with_virtual_hosted_style_request(!path_style);
    builder = builder.with_client_options(client).with_retry(RetryConfig {
        backoff: BackoffConfig {
            init_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(5),
            base: 2.0,
        },
        max_retries: opts.max_retries.unwrap_or(3),
        retry_timeout: Duration::from_secs(120),
    });
    let store = builder
        .build()
        .map_err(|e| StateError::Location(format!("s3://{bucket}: {e}")))?;
    Ok(Arc::new(store))
}

impl ObjectFileSystem {
    /// The files under `s3://bucket/prefix` (also `s3a://`, `s3p://`).
    pub fn s3(location: &str) -> Result<Self, StateError> {
        let (scheme, rest) = location
            .split_once("://")
            .ok_or_else(|| StateError::Location(format!("{location}: not an s3:// URI")))?;
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() {
            return Err(StateError::Location(format!(
                "{location}: no bucket (expected {scheme}://bucket/prefix)"
            )));
        }
        let prefix = normalize(prefix)?;
        let store = {
            let mut stores = stores().lock().unwrap_or_else(|p| p.into_inner());
            match stores.get(bucket) {
                Some(s) => Arc::clone(s),
                None => {
                    let s = build_s3(bucket)?;
                    stores.insert(bucket.to_string(), Arc::clone(&s));
                    s
                }
            }
        };
        Ok(ObjectFileSystem {
            store,
            scheme: scheme.to_string(),
            bucket: bucket.to_string(),
            prefix,
        })
    }

    /// An object store the caller built (tests use an in-memory one).
    pub fn on(store: Arc<dyn ObjectStore>, name: &str, prefix: &str) -> Result<Self, StateError> {
        Ok(ObjectFileSystem {
            store,
            scheme: "memory".into(),
            bucket: name.to_string(),
            prefix: normalize(prefix)?,
        })
    }

    fn key(&self, path: &str) -> Result<String, StateError> {
        let relative = normalize(path)?;
        Ok(match (self.prefix.is_empty(), relative.is_empty()) {
            (true, _) => relative,
            (false, true) => self.prefix.clone(),
            (false, false) => format!("{}/{relative}", self.prefix),
        })
    }

    fn object(&self, path: &str) -> Result<ObjectPath, StateError> {
        Ok(ObjectPath::from(self.key(path)?))
    }

    fn error(&self, path: &str, e: object_store::Error) -> StateError {
        let kind = match e {
            object_store::Error::NotFound { .. } => std::io::ErrorKind::NotFound,
            _ => std::io::ErrorKind::Other,
        };
        StateError::Io {
            path: self.uri(path),
            cause: std::io::Error::new(kind, e.to_string()),
        }
    }

    fn put(&self, path: &str, payload: PutPayload) -> Result<(), StateError> {
        let store = Arc::clone(&self.store);
        let location = self.object(path)?;
        block(async move { store.put(&location, payload).await })?
            .map(|_| ())
            .map_err(|e| self.error(path, e))
    }
}

impl FileSystem for ObjectFileSystem {
    fn write(&self, path: &str, bytes: &[u8]) -> Result<(), StateError> {
        // A PUT is atomic: the object is there whole or not at all.
        self.put(path, PutPayload::from(bytes.to_vec()))
    }

    fn upload(&self, from: &Path, path: &str) -> Result<u64, StateError> {
        let sizes = self.upload_all(&[(from.to_path_buf(), path.to_string())])?;
        Ok(sizes.into_iter().sum())
    }

    fn upload_all(&self, files: &[(PathBuf, String)]) -> Result<Vec<u64>, StateError> {
        let mut jobs = Vec::with_capacity(files.len());
        for (from, path) in files {
            jobs.push((from.clone(), self.object(path)?, path.clone()));
        }
        let store = Arc::clone(&self.store);
        let results = block(async move {
            // A few requests at a time: enough to hide each one's latency.
            let permits = Arc::new(tokio::sync::Semaphore::new(UPLOADS_AT_ONCE));
            let mut tasks = Vec::with_capacity(jobs.len());
            for (from, location, path) in jobs {
                let store = Arc::clone(&store);
                let permits = Arc::clone(&permits);
                tasks.push(tokio::spawn(async move {
                    let _permit = permits.acquire_owned().await;
                    let read = tokio::task::spawn_blocking({
                        let from = from.clone();
                        move || std::fs::read(from)
                    })
                    .await;
                    let bytes = match read {
                        Ok(Ok(bytes)) => bytes,
                        Ok(Err(e)) => return Err(UploadError::Local(from, e)),
                        Err(e) => return Err(UploadError::Local(from, std::io::Error::other(e))),
                    };
                    let len = bytes.len() as u64;
                    match store.put(&location, PutPayload::from(bytes)).await {
                        Ok(_) => Ok(len),
                        Err(e) => Err(UploadError::Remote(path, e)),
                    }
                }));
            }
            let mut out = Vec::with_capacity(tasks.len());
            for task in tasks {
                out.push(task.await);
            }
            out
        })?;
        results
            .into_iter()
            .map(|r| match r {
                Ok(Ok(len)) => Ok(len),
                Ok(Err(UploadError::Local(from, cause))) => Err(io_error(&from, cause)),
                Ok(Err(UploadError::Remote(path, e))) => Err(self.error(&path, e)),
                Err(e) => Err(StateError::Internal(format!("an upload task failed: {e}"))),
            })
            .collect()
    }

    fn read(&self, path: &str) -> Result<Vec<u8>, StateError> {
        let store = Arc::clone(&self.store);
        let location = self.object(path)?;
        block(async move {
            match store.get(&location).await {
                Ok(r) => r.bytes().await,
                Err(e) => Err(e),
            }
        })?
        .map(|b| b.to_vec())
        .map_err(|e| self.error(path, e))
    }

    fn exists(&self, path: &str) -> Result<bool, StateError> {
        let store = Arc::clone(&self.store);
        let location = self.object(path)?;
        match block(async move { store.head(&location).await })? {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(self.error(path, e)),
        }
    }

    fn list(&self, dir: &str) -> Result<Vec<Entry>, StateError> {
        let store = Arc::clone(&self.store);
        let key = self.key(dir)?;
        let prefix = (!key.is_empty()).then(|| ObjectPath::from(key));
        let listed = block(async move { store.list_with_delimiter(prefix.as_ref()).await })?
            .map_err(|e| self.error(dir, e))?;
        let mut out = Vec::new();
        for p in listed.common_prefixes {
            if let Some(name) = p.filename() {
                out.push(Entry {
                    name: name.to_string(),
                    is_dir: true,
                    size: 0,
                    modified_ms: 0,
                });
            }
        }
        for o in listed.objects {
            if let Some(name) = o.location.filename() {
                out.push(Entry {
                    name: name.to_string(),
                    is_dir: false,
                    size: o.size,
                    modified_ms: o.last_modified.timestamp_millis(),
                });
            }
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    fn remove(&self, path: &str) -> Result<(), StateError> {
        let store = Arc::clone(&self.store);
        let location = self.object(path)?;
        match block(async move { store.delete(&location).await })? {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(self.error(path, e)),
        }
    }

    fn remove_all(&self, dir: &str) -> Result<(), StateError> {
        let store = Arc::clone(&self.store);
        let key = self.key(dir)?;
        if key.is_empty() {
            // Never the whole bucket by accident: only under a prefix.
            return Err(StateError::Internal(format!(
                "refusing to delete everything in {}",
                self.uri(dir)
            )));
        }
        let prefix = ObjectPath::from(key);
        block(async move {
            let mut listed = store.list(Some(&prefix));
            let mut first_error = None;
            while let Some(item) = listed.next().await {
                let result = match item {
                    Ok(meta) => store.delete(&meta.location).await,
                    Err(e) => Err(e),
                };
                match result {
                    Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                    Err(e) => {
                        first_error.get_or_insert(e);
                    }
                }
            }
            first_error.map_or(Ok(()), Err)
        })?
        .map_err(|e| self.error(dir, e))
    }

    fn uri(&self, path: &str) -> String {
        let key = self.key(path).unwrap_or_else(|_| path.to_string());
        if key.is_empty() {
            format!("{}://{}", self.scheme, self.bucket)
        } else {
            format!("{}://{}/{key}", self.scheme, self.bucket)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::memory::InMemory;

    fn fs(prefix: &str) -> ObjectFileSystem {
        ObjectFileSystem::on(Arc::new(InMemory::new()), "test", prefix).expect("fs")
    }

    #[test]
    fn files_and_directories_behave_as_on_disk() -> Result<(), StateError> {
        let fs = fs("checkpoints/job");
        assert!(!fs.exists("chk-1/_metadata")?);
        fs.write("chk-1/op-0", b"state")?;
        fs.write("chk-1/_metadata", b"meta")?;
        fs.write("shared/a.sst", b"sst")?;
        assert!(fs.exists("chk-1/_metadata")?);
        assert_eq!(fs.read("chk-1/../shared/a.sst")?, b"sst");
        let names: Vec<(String, bool)> = fs
            .list("")?
            .into_iter()
            .map(|e| (e.name, e.is_dir))
            .collect();
        assert_eq!(
            names,
            vec![("chk-1".to_string(), true), ("shared".to_string(), true)]
        );
        let files = fs.list("chk-1")?;
        assert_eq!(files.len(), 2);
        assert_eq!(files[1].size, 5);
        fs.remove_all("chk-1")?;
        assert!(fs.list("chk-1")?.is_empty());
        assert!(fs.exists("shared/a.sst")?);
        assert_eq!(
            fs.uri("shared/a.sst"),
            "memory://test/checkpoints/job/shared/a.sst"
        );
        let missing = fs.read("nothing").expect_err("missing");
        assert!(
            matches!(&missing, StateError::Io { cause, .. } if cause.kind() == std::io::ErrorKind::NotFound),
            "{missing}"
        );
        Ok(())
    }

    #[test]
    fn several_files_upload_at_once_in_order() -> Result<(), StateError> {
        let dir = std::env::temp_dir().join(format!("weir-upload-all-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| StateError::Io {
            path: dir.display().to_string(),
            cause: e,
        })?;
        let mut files = Vec::new();
        for i in 0..20usize {
            let from = dir.join(format!("f{i}"));
            std::fs::write(&from, vec![b'x'; i]).map_err(|e| StateError::Io {
                path: from.display().to_string(),
                cause: e,
            })?;
            files.push((from, format!("shared/f{i}")));
        }
        let fs = fs("job");
        let sizes = fs.upload_all(&files)?;
        assert_eq!(sizes, (0..20u64).collect::<Vec<_>>());
        assert_eq!(fs.read("shared/f7")?, vec![b'x'; 7]);
        // A local file that is not there: the error names it.
        files.push((dir.join("missing"), "shared/missing".into()));
        let e = fs.upload_all(&files).expect_err("missing file");
        assert!(e.to_string().contains("missing"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
        Ok(())
    }

    #[test]
    fn a_bucket_without_a_name_is_refused() {
        let e = ObjectFileSystem::s3("s3:///x").expect_err("no bucket");
        assert!(e.to_string().contains("no bucket"), "{e}");
    }
}
