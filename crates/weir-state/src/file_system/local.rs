//! A directory on the local disk as a [`FileSystem`].

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::{normalize, Entry, FileSystem};
use crate::error::StateError;

/// Files under a local directory. Writes go to a temporary name, are
/// synced, and renamed into place, so a file is never seen half written.
#[derive(Debug, Clone)]
pub struct LocalFileSystem {
    root: PathBuf,
}

pub(crate) fn io_error(path: &Path, cause: std::io::Error) -> StateError {
    StateError::Io {
        path: path.display().to_string(),
        cause,
    }
}

/// `file:///a/b` → `/a/b`; other paths unchanged.
pub fn strip_file_scheme(path: &Path) -> PathBuf {
    match path.to_str().and_then(|s| s.strip_prefix("file://")) {
        Some(rest) => PathBuf::from(rest),
        None => path.to_path_buf(),
    }
}

impl LocalFileSystem {
    /// The files under `root` (a path or `file://` URI, made absolute so
    /// that URIs name the same place wherever they are read).
    pub fn new(root: &Path) -> Self {
        let root = strip_file_scheme(root);
        LocalFileSystem {
            root: std::path::absolute(&root).unwrap_or(root),
        }
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn path(&self, path: &str) -> Result<PathBuf, StateError> {
        let relative = normalize(path)?;
        Ok(if relative.is_empty() {
            self.root.clone()
        } else {
            self.root.join(relative)
        })
    }

    fn write_with(
        &self,
        path: &str,
        fill: impl FnOnce(&mut fs::File, &Path) -> Result<u64, StateError>,
    ) -> Result<u64, StateError> {
        let target = self.path(path)?;
        let dir = target.parent().unwrap_or(&self.root).to_path_buf();
        fs::create_dir_all(&dir).map_err(|e| io_error(&dir, e))?;
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = dir.join(format!(".{name}.inprogress"));
        let written = (|| {
            let mut f = fs::File::create(&tmp).map_err(|e| io_error(&tmp, e))?;
            let n = fill(&mut f, &tmp)?;
            f.sync_all().map_err(|e| io_error(&tmp, e))?;
            fs::rename(&tmp, &target).map_err(|e| io_error(&target, e))?;
            Ok(n)
        })();
        if written.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        // The rename is durable once the directory entry is.
        if let Ok(d) = fs::File::open(&dir) {
            let _ = d.sync_all();
        }
        written
    }
}

impl FileSystem for LocalFileSystem {
    fn write(&self, path: &str, bytes: &[u8]) -> Result<(), StateError> {
        self.write_with(path, |f, tmp| {
            f.write_all(bytes).map_err(|e| io_error(tmp, e))?;
            Ok(bytes.len() as u64)
        })
        .map(|_| ())
    }

    fn upload(&self, from: &Path, path: &str) -> Result<u64, StateError> {
        self.write_with(path, |f, _| {
            let mut src = fs::File::open(from).map_err(|e| io_error(from, e))?;
            std::io::copy(&mut src, f).map_err(|e| io_error(from, e))
        })
    }

    fn read(&self, path: &str) -> Result<Vec<u8>, StateError> {
        let p = self.path(path)?;
        fs::read(&p).map_err(|e| io_error(&p, e))
    }

    fn exists(&self, path: &str) -> Result<bool, StateError> {
        Ok(self.path(path)?.is_file())
    }

    fn list(&self, dir: &str) -> Result<Vec<Entry>, StateError> {
        let p = self.path(dir)?;
        let entries = match fs::read_dir(&p) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => return Ok(Vec::new()),
            Err(e) => return Err(io_error(&p, e)),
        };
        let mut out = Vec::new();
        for entry in entries.flatten() {
            let Ok(meta) = entry.metadata() else { continue };
            let name = entry.file_name().to_string_lossy().into_owned();
            // Files being written are not there yet.
            if name.ends_with(".inprogress") {
                continue;
            }
            out.push(Entry {
                name,
                is_dir: meta.is_dir(),
                size: if meta.is_dir() { 0 } else { meta.len() },
                modified_ms: meta
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_millis() as i64),
            });
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    fn remove(&self, path: &str) -> Result<(), StateError> {
        let p = self.path(path)?;
        match fs::remove_file(&p) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io_error(&p, e)),
            _ => Ok(()),
        }
    }

    fn remove_all(&self, dir: &str) -> Result<(), StateError> {
        let p = self.path(dir)?;
        match fs::remove_dir_all(&p) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io_error(&p, e)),
            _ => Ok(()),
        }
    }

    fn remove_if_empty(&self, dir: &str) {
        if let Ok(p) = self.path(dir) {
            let _ = fs::remove_dir(p);
        }
    }

    fn uri(&self, path: &str) -> String {
        match self.path(path) {
            Ok(p) => format!("file://{}", p.display()),
            Err(_) => format!("file://{}/{path}", self.root.display()),
        }
    }

    fn local(&self, path: &str) -> Option<PathBuf> {
        self.path(path).ok()
    }

    fn probe(&self) -> Result<(), StateError> {
        fs::create_dir_all(&self.root).map_err(|e| io_error(&self.root, e))?;
        let probe = ".weir-write-probe";
        self.write(probe, b"")?;
        self.remove(probe)
    }
}
