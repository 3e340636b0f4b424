//! Where checkpoint and savepoint files live, seen through the few
//! operations checkpoints need (Flink's `FileSystem`): a local directory
//! (plain paths and `file://` URIs) or an object store bucket (`s3://`,
//! with the `object-store` feature).
//!
//! Object stores have no directories and no rename. Everything above this
//! module is written for that: a file is written whole or not at all, a
//! directory exists while a file under it does, and a checkpoint becomes
//! one by its `_metadata` being written last.

mod local;
#[cfg(feature = "object-store")]
mod local_s3;
#[cfg(feature = "object-store")]
mod object;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::StateError;

pub(crate) use local::io_error;
pub use local::{strip_file_scheme, LocalFileSystem};
#[cfg(feature = "object-store")]
pub use local_s3::{LocalS3, LocalS3Error};
#[cfg(feature = "object-store")]
pub use object::{configure_s3, configure_s3_bucket, ObjectFileSystem, S3Options};

/// One entry of a directory listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its name in the directory.
    pub name: String,
    /// Whether it is a directory (a prefix, on object stores).
    pub is_dir: bool,
    /// Size in bytes (0 for directories).
    pub size: u64,
    /// Last modified, in ms since the epoch (0 when unknown).
    pub modified_ms: i64,
}

/// A tree of files under a root. Paths are relative to the root, `/`
/// separated; `..` components are resolved before use.
pub trait FileSystem: Send + Sync + fmt::Debug {
    /// Writes `bytes` to `path` whole: readers see the file complete or
    /// not at all. Parent directories are created.
    fn write(&self, path: &str, bytes: &[u8]) -> Result<(), StateError>;
    /// Stores the local file `from` as `path`, whole; returns its size.
    fn upload(&self, from: &Path, path: &str) -> Result<u64, StateError>;
    /// Stores several local files, each as [`upload`](Self::upload)
    /// would; their sizes, in order. Object stores upload them
    /// concurrently.
    fn upload_all(&self, files: &[(PathBuf, String)]) -> Result<Vec<u64>, StateError> {
        files
            .iter()
            .map(|(from, path)| self.upload(from, path))
            .collect()
    }
    /// The bytes of `path` (an [`StateError::Io`] of kind `NotFound` if it
    /// is not there).
    fn read(&self, path: &str) -> Result<Vec<u8>, StateError>;
    /// Whether the file `path` exists.
    fn exists(&self, path: &str) -> Result<bool, StateError>;
    /// The entries directly under directory `dir` (`""` for the root);
    /// empty when it does not exist.
    fn list(&self, dir: &str) -> Result<Vec<Entry>, StateError>;
    /// Deletes the file `path`; a missing file is not an error.
    fn remove(&self, path: &str) -> Result<(), StateError>;
    /// Deletes directory `dir` and everything under it; a missing
    /// directory is not an error.
    fn remove_all(&self, dir: &str) -> Result<(), StateError>;
    /// Removes the empty directory `dir` (no-op where directories do not
    /// exist on their own); fails if it is not empty.
    fn remove_if_empty(&self, _dir: &str) {}
    /// The URI of `path`, for logs and results (`file:///…`, `s3://…`).
    fn uri(&self, path: &str) -> String;
    /// `path` on the local disk, if this file system is local.
    fn local(&self, _path: &str) -> Option<PathBuf> {
        None
    }
    /// Checks that files can be written here (a probe file written and
    /// deleted), so that a bad location fails a job before it starts.
    fn probe(&self) -> Result<(), StateError> {
        let probe = ".weir-write-probe";
        self.write(probe, b"")?;
        self.remove(probe)
    }
}

/// Whether `location` names an object store (`s3://…`) rather than a local
/// path.
pub fn is_remote(location: &str) -> bool {
    scheme(location).is_some_and(|s| s != "file")
}

fn scheme(location: &str) -> Option<&str> {
    let (scheme, _) = location.split_once("://")?;
    (!scheme.is_empty()
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '+'))
    .then_some(scheme)
}

/// The file system rooted at `location`: a local path or `file://` URI, or
/// `s3://bucket/prefix` (credentials and endpoint from [`configure_s3`] and
/// the standard AWS environment variables).
pub fn open(location: &str) -> Result<Arc<dyn FileSystem>, StateError> {
    match scheme(location) {
        None | Some("file") => Ok(Arc::new(LocalFileSystem::new(Path::new(location)))),
        #[cfg(feature = "object-store")]
        Some("s3" | "s3a" | "s3p") => Ok(Arc::new(ObjectFileSystem::s3(location)?)),
        #[cfg(not(feature = "object-store"))]
        Some("s3" | "s3a" | "s3p") => Err(StateError::Location(format!(
            "{location}: checkpoints on S3 need Weir built with the `s3` feature \
             (weir = {{ features = [\"s3\"] }})"
        ))),
        Some(other) => Err(StateError::Location(format!(
            "{location}: unknown file system scheme '{other}://' (supported: plain paths, \
             file://, s3://)"
        ))),
    }
}

/// `location` with `child` appended as a path component.
pub fn join(location: &str, child: &str) -> String {
    if location.is_empty() {
        child.to_string()
    } else if location.ends_with('/') {
        format!("{location}{child}")
    } else {
        format!("{location}/{child}")
    }
}

/// `path` with `.` and `..` components resolved and empty ones dropped
/// (`chk-3/../shared/x` → `shared/x`). `..` above the root is an error.
pub fn normalize(path: &str) -> Result<String, StateError> {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err(StateError::Internal(format!(
                        "path {path} leaves its checkpoint storage"
                    )));
                }
            }
            p => parts.push(p),
        }
    }
    Ok(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_resolve_parent_components() {
        assert_eq!(
            normalize("chk-3/../shared/x").ok().as_deref(),
            Some("shared/x")
        );
        assert_eq!(normalize("/a//./b/").ok().as_deref(), Some("a/b"));
        assert!(normalize("../x").is_err());
    }

    #[test]
    fn schemes_are_told_apart() {
        assert!(is_remote("s3://bucket/x"));
        assert!(!is_remote("file:///tmp/x"));
        assert!(!is_remote("/tmp/x"));
        assert!(!is_remote("relative/dir"));
        assert!(open("gs2://bucket").is_err());
        assert_eq!(join("s3://b/p", "job"), "s3://b/p/job");
        assert_eq!(join("s3://b/", "job"), "s3://b/job");
    }
}
