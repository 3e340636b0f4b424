//! Where checkpoints are written and how they are read back (Flink's
//! `CheckpointStorage`): a directory per job with one `chk-<n>/` per
//! checkpoint, on a local disk or an object store ([`crate::file_system`]),
//! or memory for tests.
//!
//! A checkpoint exists once its `_metadata` exists: state files are written
//! first, `_metadata` last and whole (on disk to a temporary name, then
//! renamed; on an object store one PUT), so a crash mid-checkpoint leaves
//! no half checkpoint that recovery could pick. Every file is framed with a version and checksum
//! ([`crate::snapshot`]); [`load_latest`] skips checkpoints that do not
//! verify and falls back to older ones.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::xxh3_64;

use crate::error::StateError;
pub use crate::file_system::strip_file_scheme;
use crate::file_system::{self, io_error, FileSystem, LocalFileSystem};
use crate::snapshot::{decode_framed, encode_framed, SubtaskSnapshot};

/// Name of the file that makes a checkpoint directory a checkpoint.
pub const METADATA_FILE: &str = "_metadata";

/// The directory, beside the `chk-<n>/` directories, of files shared by
/// incremental checkpoints.
pub const SHARED_DIR: &str = "shared";

/// One state file of a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateFile {
    /// The subtask that wrote it.
    pub subtask: u32,
    /// The key groups it covers (first, last), for keyed operators.
    pub key_groups: (u32, u32),
    /// File name, relative to the checkpoint's directory.
    pub file: String,
    /// Size in bytes.
    pub size: u64,
    /// xxh3-64 of the whole file.
    pub checksum: u64,
    /// Names of the shared files (incremental checkpoints) its state uses.
    pub shared: Vec<String>,
}

/// The state of one operator in a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperatorMetadata {
    /// The id operators are matched by on restore: the uid, or a hash of the
    /// operator's position in the job graph.
    pub id: String,
    /// The operator's name, for people.
    pub name: String,
    /// The parallelism it ran with.
    pub parallelism: u32,
    /// One file per subtask that had state.
    pub files: Vec<StateFile>,
}

/// The content of `_metadata`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointMetadata {
    /// The job that wrote it (32 hex digits).
    pub job_id: String,
    /// The checkpoint's number.
    pub checkpoint_id: u64,
    /// When it was triggered, in ms since the epoch.
    pub timestamp_ms: i64,
    /// Whether it is a savepoint.
    pub savepoint: bool,
    /// The job's number of key groups.
    pub max_parallelism: u32,
    /// Operators with state.
    pub operators: Vec<OperatorMetadata>,
}

impl CheckpointMetadata {
    /// Bytes in all state files.
    pub fn state_size(&self) -> u64 {
        self.operators
            .iter()
            .flat_map(|o| &o.files)
            .map(|f| f.size)
            .sum()
    }
}

/// A checkpoint read back and verified.
#[derive(Debug, Clone)]
pub struct LoadedCheckpoint {
    /// Its metadata.
    pub metadata: CheckpointMetadata,
    /// Where it was read from.
    pub location: String,
    /// Its directory on the local disk, from which the paths of stores'
    /// own files resolve: the checkpoint's own directory, or, for one on
    /// an object store, the temporary directory its store files were
    /// downloaded to.
    pub dir: Option<PathBuf>,
    /// Operator id → the snapshot of each subtask that had state.
    pub operators: HashMap<String, Vec<(u32, SubtaskSnapshot)>>,
    /// Keeps downloaded store files until the checkpoint is dropped.
    _downloaded: Option<Arc<DownloadDir>>,
}

/// Where a job's checkpoints live. By implementing this trait, you promise
/// that a checkpoint listed by [`completed`](Self::completed) had all its
/// files written before its metadata.
pub trait CheckpointStorage: Send + Sync + fmt::Debug {
    /// Writes a state file of checkpoint `id`.
    fn write_file(&self, id: u64, name: &str, bytes: &[u8]) -> Result<(), StateError>;
    /// Writes checkpoint `id`'s metadata, atomically.
    fn write_metadata(&self, id: u64, bytes: &[u8]) -> Result<(), StateError>;
    /// Reads a file (or the metadata, as [`METADATA_FILE`]) of checkpoint `id`.
    fn read_file(&self, id: u64, name: &str) -> Result<Vec<u8>, StateError>;
    /// Ids of checkpoints with metadata, ascending.
    fn completed(&self) -> Result<Vec<u64>, StateError>;
    /// Deletes checkpoint `id` and its files.
    fn discard(&self, id: u64) -> Result<(), StateError>;
    /// Where checkpoint `id` is, for logs and results (`file:///…/chk-7`).
    fn location(&self, id: u64) -> String;
    /// Checks, before the job starts, that checkpoints can be written here
    /// (a directory that cannot be created or written fails the job before
    /// any record flows, not at its first or final checkpoint).
    fn prepare(&self) -> Result<(), StateError> {
        Ok(())
    }
    /// Removes the job's directory if nothing is left in it.
    fn remove_if_empty(&self) {}
    /// Stores the immutable file `from` as shared file `name` unless it is
    /// there already (incremental checkpoints); returns its path relative
    /// to a checkpoint's directory and the bytes copied (0 when it was
    /// there), or `None` if this storage shares no files.
    fn put_shared(&self, _name: &str, _from: &Path) -> Result<Option<(String, u64)>, StateError> {
        Ok(None)
    }
    /// [`put_shared`](Self::put_shared) for several `(name, from)` files at
    /// once (storages on object stores upload them concurrently); the
    /// results in order, or `None` if this storage shares no files.
    fn put_shared_all(
        &self,
        files: &[(String, PathBuf)],
    ) -> Result<Option<Vec<(String, u64)>>, StateError> {
        let mut stored = Vec::with_capacity(files.len());
        for (name, from) in files {
            match self.put_shared(name, from)? {
                Some(r) => stored.push(r),
                None => return Ok(None),
            }
        }
        Ok(Some(stored))
    }
    /// Whether [`put_shared`](Self::put_shared) stores files.
    fn shares_files(&self) -> bool {
        false
    }
    /// Deletes the shared files not named in `keep`.
    fn retain_shared(&self, _keep: &HashSet<String>) {}
    /// The directory of checkpoint `id`, if it is on disk.
    fn dir_of(&self, _id: u64) -> Option<PathBuf> {
        None
    }
}

/// Checkpoints as files on a [`FileSystem`]: `<dir>/chk-<n>/`, and the
/// files incremental checkpoints share in `<dir>/shared/` (the caller
/// includes the job id in `dir`, as Flink's `<checkpoint-dir>/<job-id>/`).
/// `dir` is a local directory or an object store prefix (`s3://…`).
#[derive(Debug)]
pub struct FsCheckpointStorage {
    fs: Arc<dyn FileSystem>,
    /// Shared files known to be stored, so each is looked up once.
    stored_shared: Mutex<HashSet<String>>,
}

impl Clone for FsCheckpointStorage {
    fn clone(&self) -> Self {
        FsCheckpointStorage::on(Arc::clone(&self.fs))
    }
}

impl FsCheckpointStorage {
    /// Storage under the local directory `dir`, created on first write.
    /// Accepts `file://` URIs.
    pub fn new(dir: impl AsRef<Path>) -> Self {
        Self::on(Arc::new(LocalFileSystem::new(dir.as_ref())))
    }

    /// Storage under `location`: a local path, `file://…` or `s3://…`.
    pub fn open(location: &str) -> Result<Self, StateError> {
        Ok(Self::on(file_system::open(location)?))
    }

    /// Storage on a file system the caller opened.
    pub fn on(fs: Arc<dyn FileSystem>) -> Self {
        FsCheckpointStorage {
            fs,
            stored_shared: Mutex::default(),
        }
    }

    /// The checkpoint directory of checkpoint `id` (its URI when it is not
    /// on the local disk).
    pub fn checkpoint_dir(&self, id: u64) -> PathBuf {
        let name = chk(id);
        self.fs
            .local(&name)
            .unwrap_or_else(|| PathBuf::from(self.fs.uri(&name)))
    }

    fn known_shared(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.stored_shared
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

fn chk(id: u64) -> String {
    format!("chk-{id}")
}

fn in_chk(id: u64, name: &str) -> String {
    format!("chk-{id}/{name}")
}

impl CheckpointStorage for FsCheckpointStorage {
    fn prepare(&self) -> Result<(), StateError> {
        self.fs.probe()
    }

    fn write_file(&self, id: u64, name: &str, bytes: &[u8]) -> Result<(), StateError> {
        self.fs.write(&in_chk(id, name), bytes)
    }

    fn write_metadata(&self, id: u64, bytes: &[u8]) -> Result<(), StateError> {
        // Written whole (renamed into place on disk; one PUT on object
        // stores), after every state file.
        self.fs.write(&in_chk(id, METADATA_FILE), bytes)
    }

    fn read_file(&self, id: u64, name: &str) -> Result<Vec<u8>, StateError> {
        self.fs.read(&in_chk(id, name))
    }

    fn completed(&self) -> Result<Vec<u64>, StateError> {
        let mut ids = Vec::new();
        for entry in self.fs.list("")? {
            let Some(id) = entry
                .name
                .strip_prefix("chk-")
                .and_then(|n| n.parse::<u64>().ok())
            else {
                continue;
            };
            if entry.is_dir && self.fs.exists(&in_chk(id, METADATA_FILE))? {
                ids.push(id);
            }
        }
        ids.sort_unstable();
        Ok(ids)
    }

    fn discard(&self, id: u64) -> Result<(), StateError> {
        self.fs.remove_all(&chk(id))
    }

    fn location(&self, id: u64) -> String {
        self.fs.uri(&chk(id))
    }

    fn remove_if_empty(&self) {
        // Fails (and keeps the directory) unless it is empty.
        self.fs.remove_if_empty(SHARED_DIR);
        self.fs.remove_if_empty("");
    }

    fn put_shared(&self, name: &str, from: &Path) -> Result<Option<(String, u64)>, StateError> {
        let stored = self.put_shared_all(&[(name.to_string(), from.to_path_buf())])?;
        Ok(stored.and_then(|mut s| s.pop()))
    }

    fn put_shared_all(
        &self,
        files: &[(String, PathBuf)],
    ) -> Result<Option<Vec<(String, u64)>>, StateError> {
        let mut uploads = Vec::new();
        let mut uploaded_at = Vec::new();
        for (i, (name, from)) in files.iter().enumerate() {
            let path = format!("{SHARED_DIR}/{name}");
            let known = self.known_shared().contains(name);
            if !known && !self.fs.exists(&path)? {
                uploads.push((from.clone(), path));
                uploaded_at.push(i);
            }
        }
        let mut copied = vec![0; files.len()];
        for (i, n) in uploaded_at.into_iter().zip(self.fs.upload_all(&uploads)?) {
            copied[i] = n;
        }
        let mut known = self.known_shared();
        Ok(Some(
            files
                .iter()
                .zip(copied)
                .map(|((name, _), n)| {
                    known.insert(name.clone());
                    (format!("../{SHARED_DIR}/{name}"), n)
                })
                .collect(),
        ))
    }

    fn shares_files(&self) -> bool {
        true
    }

    fn retain_shared(&self, keep: &HashSet<String>) {
        let Ok(entries) = self.fs.list(SHARED_DIR) else {
            return;
        };
        for entry in entries.into_iter().filter(|e| !e.is_dir) {
            if !keep.contains(&entry.name) {
                self.known_shared().remove(&entry.name);
                let _ = self.fs.remove(&format!("{SHARED_DIR}/{}", entry.name));
            }
        }
    }

    fn dir_of(&self, id: u64) -> Option<PathBuf> {
        self.fs.local(&chk(id))
    }
}

/// A savepoint: one self-contained directory (or object store prefix)
/// holding `_metadata` and every file it needs (shared files copied in,
/// referenced relatively), so it can be moved or copied anywhere and
/// restored.
#[derive(Debug, Clone)]
pub struct SavepointStorage {
    fs: Arc<dyn FileSystem>,
}

impl SavepointStorage {
    /// A savepoint written into the local directory `dir` (created on
    /// first write).
    pub fn new(dir: impl AsRef<Path>) -> Self {
        SavepointStorage {
            fs: Arc::new(LocalFileSystem::new(dir.as_ref())),
        }
    }

    /// A savepoint written to `location`: a local path, `file://…` or
    /// `s3://…`.
    pub fn open(location: &str) -> Result<Self, StateError> {
        Ok(SavepointStorage {
            fs: file_system::open(location)?,
        })
    }
}

impl CheckpointStorage for SavepointStorage {
    fn write_file(&self, _id: u64, name: &str, bytes: &[u8]) -> Result<(), StateError> {
        self.fs.write(name, bytes)
    }

    fn write_metadata(&self, _id: u64, bytes: &[u8]) -> Result<(), StateError> {
        self.fs.write(METADATA_FILE, bytes)
    }

    fn read_file(&self, _id: u64, name: &str) -> Result<Vec<u8>, StateError> {
        self.fs.read(name)
    }

    fn completed(&self) -> Result<Vec<u64>, StateError> {
        Ok(Vec::new())
    }

    fn discard(&self, _id: u64) -> Result<(), StateError> {
        self.fs.remove_all("")
    }

    fn location(&self, _id: u64) -> String {
        self.fs.uri("")
    }

    fn put_shared(&self, name: &str, from: &Path) -> Result<Option<(String, u64)>, StateError> {
        let copied = self.fs.upload(from, name)?;
        Ok(Some((name.to_string(), copied)))
    }

    fn put_shared_all(
        &self,
        files: &[(String, PathBuf)],
    ) -> Result<Option<Vec<(String, u64)>>, StateError> {
        let uploads: Vec<(PathBuf, String)> = files
            .iter()
            .map(|(name, from)| (from.clone(), name.clone()))
            .collect();
        let sizes = self.fs.upload_all(&uploads)?;
        Ok(Some(
            files
                .iter()
                .zip(sizes)
                .map(|((name, _), n)| (name.clone(), n))
                .collect(),
        ))
    }

    fn shares_files(&self) -> bool {
        true
    }

    fn dir_of(&self, _id: u64) -> Option<PathBuf> {
        self.fs.local("")
    }
}

/// Checkpoints in memory (Flink's `JobManagerCheckpointStorage`): for tests
/// and jobs that only need to survive task failures inside one process.
#[derive(Debug, Clone, Default)]
pub struct MemoryCheckpointStorage {
    files: Arc<Mutex<Checkpoints>>,
}

/// Checkpoint id → file name → bytes.
type Checkpoints = BTreeMap<u64, BTreeMap<String, Vec<u8>>>;

/// A checkpoint that failed verification, and why.
pub type Skipped = (u64, StateError);

impl MemoryCheckpointStorage {
    /// Empty storage.
    pub fn new() -> Self {
        Self::default()
    }

    fn with<R>(&self, f: impl FnOnce(&mut Checkpoints) -> R) -> Result<R, StateError> {
        let mut files = self
            .files
            .lock()
            .map_err(|_| StateError::Internal("checkpoint storage poisoned".into()))?;
        Ok(f(&mut files))
    }

    /// Changes a stored file in place (tests corrupt checkpoints with it).
    pub fn tamper(&self, id: u64, name: &str, f: impl FnOnce(&mut Vec<u8>)) -> bool {
        self.with(|files| {
            files
                .get_mut(&id)
                .and_then(|c| c.get_mut(name))
                .map(f)
                .is_some()
        })
        .unwrap_or(false)
    }
}

impl CheckpointStorage for MemoryCheckpointStorage {
    fn write_file(&self, id: u64, name: &str, bytes: &[u8]) -> Result<(), StateError> {
        self.with(|files| {
            files
                .entry(id)
                .or_default()
                .insert(name.to_string(), bytes.to_vec());
        })
    }

    fn write_metadata(&self, id: u64, bytes: &[u8]) -> Result<(), StateError> {
        self.write_file(id, METADATA_FILE, bytes)
    }

    fn read_file(&self, id: u64, name: &str) -> Result<Vec<u8>, StateError> {
        self.with(|files| files.get(&id).and_then(|c| c.get(name)).cloned())?
            .ok_or_else(|| StateError::Io {
                path: format!("memory:chk-{id}/{name}"),
                cause: std::io::ErrorKind::NotFound.into(),
            })
    }

    fn completed(&self) -> Result<Vec<u64>, StateError> {
        self.with(|files| {
            files
                .iter()
                .filter(|(_, c)| c.contains_key(METADATA_FILE))
                .map(|(id, _)| *id)
                .collect()
        })
    }

    fn discard(&self, id: u64) -> Result<(), StateError> {
        self.with(|files| {
            files.remove(&id);
        })
    }

    fn location(&self, id: u64) -> String {
        format!("memory:chk-{id}")
    }
}

/// Encodes metadata as the bytes of `_metadata`.
pub fn encode_metadata(metadata: &CheckpointMetadata) -> Result<Vec<u8>, StateError> {
    encode_framed(metadata)
}

/// A state file's metadata entry for `bytes`.
pub fn state_file(subtask: u32, key_groups: (u32, u32), file: String, bytes: &[u8]) -> StateFile {
    StateFile {
        subtask,
        key_groups,
        file,
        size: bytes.len() as u64,
        checksum: xxh3_64(bytes),
        shared: Vec::new(),
    }
}

/// Reads only the metadata of checkpoint `id`.
pub fn load_metadata(
    storage: &dyn CheckpointStorage,
    id: u64,
) -> Result<CheckpointMetadata, StateError> {
    decode_framed(&storage.read_file(id, METADATA_FILE)?)
}

/// Reads and verifies a checkpoint, given how to read its files by name
/// (relative to its directory). `dir` is its directory on the local disk;
/// without one, the files of stores' own snapshots are downloaded into a
/// temporary directory, kept while the loaded checkpoint is.
fn load_with(
    location: String,
    dir: Option<PathBuf>,
    read: impl Fn(&str) -> Result<Vec<u8>, StateError>,
) -> Result<LoadedCheckpoint, StateError> {
    let in_file = |name: &str, e: StateError| match e {
        StateError::Corrupt(why) => StateError::Corrupt(format!("{location}/{name}: {why}")),
        other => other,
    };
    let metadata: CheckpointMetadata =
        decode_framed(&read(METADATA_FILE)?).map_err(|e| in_file(METADATA_FILE, e))?;
    let mut operators = HashMap::new();
    let mut download: Option<DownloadDir> = None;
    for op in &metadata.operators {
        let mut subtasks = Vec::with_capacity(op.files.len());
        for f in &op.files {
            let bytes = read(&f.file)?;
            verify(&location, &f.file, &bytes, f.size, f.checksum)?;
            let snapshot: SubtaskSnapshot =
                decode_framed(&bytes).map_err(|e| in_file(&f.file, e))?;
            if let Some(native) = &snapshot.native {
                for file in &native.files {
                    let bytes = read(&file.path)?;
                    verify(&location, &file.path, &bytes, file.size, file.checksum)?;
                    if dir.is_none() {
                        let target = match &download {
                            Some(d) => d,
                            None => download.insert(DownloadDir::new()?),
                        };
                        target.put(&file.path, &bytes)?;
                    }
                }
            }
            subtasks.push((f.subtask, snapshot));
        }
        operators.insert(op.id.clone(), subtasks);
    }
    let dir = dir.or_else(|| download.as_ref().map(DownloadDir::checkpoint_dir));
    Ok(LoadedCheckpoint {
        metadata,
        location,
        dir,
        operators,
        _downloaded: download.map(Arc::new),
    })
}

fn verify(
    location: &str,
    name: &str,
    bytes: &[u8],
    size: u64,
    checksum: u64,
) -> Result<(), StateError> {
    if bytes.len() as u64 != size || xxh3_64(bytes) != checksum {
        return Err(StateError::Corrupt(format!(
            "{location}/{name}: size or checksum differs from the metadata"
        )));
    }
    Ok(())
}

/// A local copy of a remote checkpoint's store files, laid out as the
/// checkpoint storage lays them out (`chk/…`, `shared/…`) so that the
/// paths in the metadata resolve; deleted when dropped.
#[derive(Debug)]
struct DownloadDir {
    root: PathBuf,
}

impl DownloadDir {
    fn new() -> Result<Self, StateError> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let root = std::env::temp_dir().join(format!("weir-restore-{}-{n}", std::process::id()));
        let chk = root.join("chk");
        fs::create_dir_all(&chk).map_err(|e| io_error(&chk, e))?;
        Ok(DownloadDir { root })
    }

    fn checkpoint_dir(&self) -> PathBuf {
        self.root.join("chk")
    }

    fn put(&self, path: &str, bytes: &[u8]) -> Result<(), StateError> {
        let target = self
            .root
            .join(file_system::normalize(&format!("chk/{path}"))?);
        if let Some(parent) = target.parent() {
            fs::create_dir_all(parent).map_err(|e| io_error(parent, e))?;
        }
        fs::write(&target, bytes).map_err(|e| io_error(&target, e))
    }
}

impl Drop for DownloadDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.root);
    }
}

/// Reads and verifies checkpoint `id` of `storage`.
pub fn load(storage: &dyn CheckpointStorage, id: u64) -> Result<LoadedCheckpoint, StateError> {
    load_with(storage.location(id), storage.dir_of(id), |name| {
        storage.read_file(id, name)
    })
}

/// The newest checkpoint of `storage` that verifies, and the newer ones
/// that did not (with why), newest first.
pub fn load_latest(
    storage: &dyn CheckpointStorage,
) -> Result<(Option<LoadedCheckpoint>, Vec<Skipped>), StateError> {
    let mut skipped = Vec::new();
    for id in storage.completed()?.into_iter().rev() {
        match load(storage, id) {
            Ok(c) => return Ok((Some(c), skipped)),
            Err(e) => skipped.push((id, e)),
        }
    }
    Ok((None, skipped))
}

/// The directory a checkpoint or savepoint is named by — itself, or the
/// directory of its `_metadata` — without trailing slashes, and whether
/// the `_metadata` file was named.
pub fn directory_named(location: &str) -> (&str, bool) {
    let trimmed = location.trim_end_matches('/');
    match trimmed.strip_suffix(METADATA_FILE) {
        Some(dir) => (dir.trim_end_matches('/'), true),
        None => (trimmed, false),
    }
}

/// Reads a checkpoint or savepoint from a path or URI (`file://`, `s3://`):
/// its directory or its `_metadata` file, as Flink's `-s`; or a job's
/// checkpoint directory holding `chk-<n>/` directories, of which the
/// newest that verifies is taken (the others' problems are returned); or a
/// checkpoint directory of several jobs' directories: the newest of them
/// all.
pub fn load_path(path: &Path) -> Result<(LoadedCheckpoint, Vec<Skipped>), StateError> {
    let given = path.to_string_lossy();
    let not_one = || StateError::NotACheckpoint(given.to_string());
    let (trimmed, metadata_named) = directory_named(&given);
    let fs = file_system::open(trimmed)?;
    if fs.exists(METADATA_FILE)? {
        // One checkpoint of a job's directory: read through the job's
        // storage, where the shared files it refers to are.
        let (parent, name) = trimmed.rsplit_once('/').unwrap_or(("", trimmed));
        if let Some(id) = name.strip_prefix("chk-").and_then(|n| n.parse().ok()) {
            let storage = FsCheckpointStorage::open(if parent.is_empty() { "." } else { parent })?;
            return load(&storage, id).map(|c| (c, Vec::new()));
        }
        return load_dir(&*fs).map(|c| (c, Vec::new()));
    }
    if metadata_named {
        return Err(not_one());
    }
    let storage = FsCheckpointStorage::on(Arc::clone(&fs));
    if !storage.completed()?.is_empty() {
        return newest_of(&storage);
    }
    // A checkpoint directory holding several jobs' directories (every run
    // of a job gets a new id): the newest checkpoint of them all.
    let mut newest: Option<(LoadedCheckpoint, Vec<Skipped>)> = None;
    for entry in fs.list("")?.into_iter().filter(|e| e.is_dir) {
        let job = FsCheckpointStorage::open(&file_system::join(trimmed, &entry.name))?;
        if job.completed().map(|ids| ids.is_empty()).unwrap_or(true) {
            continue;
        }
        let (candidate, skipped) = newest_of(&job)?;
        let newer = newest
            .as_ref()
            .is_none_or(|(best, _)| candidate.metadata.timestamp_ms > best.metadata.timestamp_ms);
        if newer {
            newest = Some((candidate, skipped));
        }
    }
    newest.ok_or_else(not_one)
}

/// The newest checkpoint of `storage` that verifies.
fn newest_of(
    storage: &FsCheckpointStorage,
) -> Result<(LoadedCheckpoint, Vec<Skipped>), StateError> {
    let (latest, skipped) = load_latest(storage)?;
    match latest {
        Some(c) => Ok((c, skipped)),
        None => Err(skipped.into_iter().next().map_or_else(
            || StateError::Corrupt("no checkpoint verifies".into()),
            |(_, e)| e,
        )),
    }
}

/// A savepoint (or one checkpoint) whose files are directly in `fs`'s root.
fn load_dir(fs: &dyn FileSystem) -> Result<LoadedCheckpoint, StateError> {
    load_with(fs.uri(""), fs.local(""), |name| fs.read(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metadata(id: u64, files: Vec<StateFile>) -> CheckpointMetadata {
        CheckpointMetadata {
            job_id: "00".repeat(16),
            checkpoint_id: id,
            timestamp_ms: 1,
            savepoint: false,
            max_parallelism: 128,
            operators: vec![OperatorMetadata {
                id: "op".into(),
                name: "Map".into(),
                parallelism: 1,
                files,
            }],
        }
    }

    fn write_checkpoint(storage: &dyn CheckpointStorage, id: u64) -> Result<(), StateError> {
        let snapshot = SubtaskSnapshot {
            source_position: Some(id.to_le_bytes().to_vec()),
            ..Default::default()
        };
        let bytes = encode_framed(&snapshot)?;
        storage.write_file(id, "op-0", &bytes)?;
        let file = state_file(0, (0, 127), "op-0".into(), &bytes);
        storage.write_metadata(id, &encode_metadata(&metadata(id, vec![file]))?)
    }

    impl FsCheckpointStorage {
        /// Truncates checkpoint `id`'s state file.
        fn tamper_fs(&self, id: u64) -> bool {
            fs::write(self.checkpoint_dir(id).join("op-0"), b"x").is_ok()
        }
    }

    fn position(c: &LoadedCheckpoint) -> Option<Vec<u8>> {
        c.operators["op"][0].1.source_position.clone()
    }

    #[test]
    fn the_newest_verified_checkpoint_wins() -> Result<(), StateError> {
        let storage = MemoryCheckpointStorage::new();
        write_checkpoint(&storage, 1)?;
        write_checkpoint(&storage, 2)?;
        // Files of a checkpoint whose metadata never came are ignored.
        storage.write_file(3, "op-0", b"partial")?;
        let (latest, skipped) = load_latest(&storage)?;
        let latest = latest.ok_or_else(|| StateError::Internal("none".into()))?;
        assert_eq!(latest.metadata.checkpoint_id, 2);
        assert_eq!(position(&latest), Some(2u64.to_le_bytes().to_vec()));
        assert!(skipped.is_empty());
        Ok(())
    }

    #[test]
    fn a_corrupt_checkpoint_is_skipped_for_the_previous_one() -> Result<(), StateError> {
        let storage = MemoryCheckpointStorage::new();
        write_checkpoint(&storage, 1)?;
        write_checkpoint(&storage, 2)?;
        write_checkpoint(&storage, 3)?;
        assert!(storage.tamper(3, "op-0", |b| b.truncate(b.len() - 2)));
        assert!(storage.tamper(2, METADATA_FILE, |b| {
            let at = b.len() / 2;
            b[at] ^= 1;
        }));
        let (latest, skipped) = load_latest(&storage)?;
        assert_eq!(latest.map(|c| c.metadata.checkpoint_id), Some(1));
        let ids: Vec<u64> = skipped.iter().map(|(id, _)| *id).collect();
        assert_eq!(ids, vec![3, 2]);
        assert!(
            skipped[0].1.to_string().contains("op-0"),
            "{}",
            skipped[0].1
        );
        assert!(
            skipped[1].1.to_string().contains(METADATA_FILE),
            "{}",
            skipped[1].1
        );
        Ok(())
    }

    #[test]
    fn files_on_disk_round_trip_and_load_by_path() -> Result<(), StateError> {
        let dir = std::env::temp_dir().join(format!("weir-chk-{}", std::process::id()));
        let storage = FsCheckpointStorage::new(format!("file://{}", dir.display()));
        write_checkpoint(&storage, 5)?;
        assert_eq!(storage.completed()?, vec![5]);
        write_checkpoint(&storage, 6)?;
        assert!(storage.tamper_fs(6));
        let (by_dir, _) = load_path(&storage.checkpoint_dir(5))?;
        let (by_file, _) = load_path(&storage.checkpoint_dir(5).join(METADATA_FILE))?;
        assert_eq!(position(&by_dir), position(&by_file));
        assert_eq!(by_dir.metadata.checkpoint_id, 5);
        // The job's directory: the newest checkpoint that verifies (6 is
        // corrupt).
        let (latest, skipped) = load_path(&dir)?;
        assert_eq!(latest.metadata.checkpoint_id, 5);
        assert_eq!(skipped.len(), 1);
        storage.discard(6)?;
        assert!(!storage
            .checkpoint_dir(5)
            .join("_metadata.inprogress")
            .exists());
        storage.discard(5)?;
        assert!(storage.completed()?.is_empty());
        let _ = fs::remove_dir_all(&dir);
        Ok(())
    }

    #[test]
    fn a_directory_of_jobs_gives_the_newest_checkpoint_of_them_all() -> Result<(), StateError> {
        let root = std::env::temp_dir().join(format!("weir-chk-jobs-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let older = FsCheckpointStorage::new(root.join("aaaa"));
        let newer = FsCheckpointStorage::new(root.join("bbbb"));
        // The newer job has the lower checkpoint id: time decides, not ids
        // nor directory names.
        let write = |storage: &FsCheckpointStorage, id: u64, timestamp_ms: i64| {
            let mut meta = metadata(id, Vec::new());
            meta.timestamp_ms = timestamp_ms;
            storage.write_metadata(id, &encode_metadata(&meta)?)
        };
        write(&newer, 2, 2_000)?;
        write(&older, 9, 1_000)?;
        let (loaded, _) = load_path(&root)?;
        assert_eq!(loaded.metadata.checkpoint_id, 2);
        assert!(loaded.location.contains("bbbb"), "{}", loaded.location);
        let _ = fs::remove_dir_all(&root);
        Ok(())
    }

    #[test]
    fn what_is_no_checkpoint_is_named_as_such() {
        let dir = std::env::temp_dir().join(format!("weir-chk-none-{}", std::process::id()));
        fs::create_dir_all(dir.join("empty-subdir")).expect("dir");
        let file = dir.join("notes.txt");
        fs::write(&file, b"x").expect("file");
        for path in [dir.join("missing"), file, dir.clone()] {
            let err = load_path(&path).err().map(|e| e.to_string());
            let wanted = format!("not a checkpoint or savepoint: {}", path.display());
            assert!(
                err.as_deref().is_some_and(|e| e.starts_with(&wanted)),
                "{err:?}"
            );
        }
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn locations_are_absolute_uris() {
        let here = std::env::current_dir().expect("working directory");
        let savepoint = SavepointStorage::new("sp/savepoint-1").location(1);
        assert_eq!(
            savepoint,
            format!("file://{}", here.join("sp/savepoint-1").display())
        );
        let checkpoint = FsCheckpointStorage::new("chk/job").location(3);
        assert_eq!(
            checkpoint,
            format!("file://{}", here.join("chk/job/chk-3").display())
        );
    }
}
