//! A transactional file sink (Flink's `FileSink` in row format): each
//! subtask writes part files into one directory, and a part file becomes
//! visible only when the checkpoint after its last record completes.
//!
//! A part file is written as `.part-<subtask>-<n>.inprogress` (hidden: the
//! leading dot keeps readers and globs away), closed and synced when it
//! rolls or a checkpoint is taken (pending), and renamed to
//! `part-<subtask>-<n><suffix>` on commit. After a crash, the committed
//! files hold each result exactly once: pending files of the restored
//! checkpoint are committed, files written after it are abandoned (left
//! hidden) and their records replayed.

use std::fmt::Display;
use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::two_phase_commit::{TwoPhaseCommit, TwoPhaseCommitSink};
use crate::functions::{FunctionResult, RuntimeContext, SinkContext};

/// When a part file is closed and the next begins (Flink's
/// `DefaultRollingPolicy`); a checkpoint always closes the open one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RollingPolicy {
    /// Largest part file (128 MiB).
    pub max_part_size: u64,
    /// Longest a part file stays open (60 s).
    pub rollover_interval: Duration,
}

impl Default for RollingPolicy {
    fn default() -> Self {
        RollingPolicy {
            max_part_size: 128 << 20,
            rollover_interval: Duration::from_secs(60),
        }
    }
}

/// A part file of a transaction: where it is written and where it goes
/// on commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartFile {
    /// The hidden in-progress name.
    pub in_progress: PathBuf,
    /// The visible name after commit.
    pub committed: PathBuf,
}

/// The part files of one transaction.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartFiles {
    /// In the order written.
    pub files: Vec<PartFile>,
}

struct OpenPart {
    writer: BufWriter<File>,
    path: PathBuf,
    size: u64,
    opened: Instant,
}

/// The file system side of [`FileSink`]: rows as lines of `Display`.
pub struct RowFileWriter<T> {
    dir: PathBuf,
    policy: RollingPolicy,
    suffix: String,
    subtask: u32,
    next_part: u64,
    open: Option<OpenPart>,
    _type: std::marker::PhantomData<fn(T)>,
}

impl<T> Clone for RowFileWriter<T> {
    fn clone(&self) -> Self {
        RowFileWriter {
            dir: self.dir.clone(),
            policy: self.policy,
            suffix: self.suffix.clone(),
            subtask: 0,
            next_part: 0,
            open: None,
            _type: std::marker::PhantomData,
        }
    }
}

fn io(path: &Path, what: &str, e: std::io::Error) -> crate::functions::FunctionError {
    format!("file sink: {what} '{}': {e}", path.display()).into()
}

impl<T> RowFileWriter<T> {
    /// The number after the highest part of this subtask already in the
    /// directory (committed or not), so a restarted subtask never reuses a
    /// name.
    fn scan_next_part(&self) -> FunctionResult<u64> {
        let prefix = format!("part-{}-", self.subtask);
        let mut next = 0;
        let entries = fs::read_dir(&self.dir).map_err(|e| io(&self.dir, "listing", e))?;
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().to_string();
            let name = name.strip_prefix('.').unwrap_or(&name);
            let Some(rest) = name.strip_prefix(&prefix) else {
                continue;
            };
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            if let Ok(n) = digits.parse::<u64>() {
                next = next.max(n + 1);
            }
        }
        Ok(next)
    }

    /// Closes the open part file, flushed and synced to disk.
    fn close_part(&mut self) -> FunctionResult {
        if let Some(mut part) = self.open.take() {
            part.writer
                .flush()
                .map_err(|e| io(&part.path, "flushing", e))?;
            part.writer
                .get_ref()
                .sync_all()
                .map_err(|e| io(&part.path, "syncing", e))?;
        }
        Ok(())
    }

    fn start_part(&mut self, txn: &mut PartFiles) -> FunctionResult<&mut OpenPart> {
        let n = self.next_part;
        self.next_part += 1;
        let in_progress = self
            .dir
            .join(format!(".part-{}-{n}.inprogress", self.subtask));
        let committed = self
            .dir
            .join(format!("part-{}-{n}{}", self.subtask, self.suffix));
        let file = File::create(&in_progress).map_err(|e| io(&in_progress, "creating", e))?;
        txn.files.push(PartFile {
            in_progress: in_progress.clone(),
            committed,
        });
        Ok(self.open.insert(OpenPart {
            writer: BufWriter::with_capacity(64 * 1024, file),
            path: in_progress,
            size: 0,
            opened: Instant::now(),
        }))
    }
}

impl<T: Display + Send + 'static> TwoPhaseCommit<T> for RowFileWriter<T> {
    type Txn = PartFiles;

    fn name(&self) -> String {
        "FileSink".into()
    }

    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        fs::create_dir_all(&self.dir).map_err(|e| io(&self.dir, "creating", e))?;
        self.subtask = ctx.subtask_index;
        self.next_part = self.scan_next_part()?;
        Ok(())
    }

    fn begin_transaction(&mut self) -> FunctionResult<PartFiles> {
        Ok(PartFiles::default())
    }

    fn invoke(&mut self, txn: &mut PartFiles, value: T, _ctx: &SinkContext) -> FunctionResult {
        let roll = self.open.as_ref().is_some_and(|p| {
            p.size >= self.policy.max_part_size
                || p.opened.elapsed() >= self.policy.rollover_interval
        });
        if roll {
            self.close_part()?;
        }
        let part = match self.open.take() {
            Some(part) => self.open.insert(part),
            None => self.start_part(txn)?,
        };
        let line = format!("{value}\n");
        part.writer
            .write_all(line.as_bytes())
            .map_err(|e| io(&part.path, "writing", e))?;
        part.size += line.len() as u64;
        Ok(())
    }

    fn pre_commit(&mut self, _txn: &mut PartFiles, _checkpoint_id: u64) -> FunctionResult {
        self.close_part()
    }

    fn commit(&mut self, txn: PartFiles) -> FunctionResult {
        for part in txn.files {
            match fs::rename(&part.in_progress, &part.committed) {
                Ok(()) => {}
                // Committed before (commit is repeated after a restore).
                Err(_) if part.committed.exists() => {}
                Err(e) => return Err(io(&part.in_progress, "committing", e)),
            }
        }
        if let Ok(dir) = File::open(&self.dir) {
            let _ = dir.sync_all();
        }
        Ok(())
    }

    fn abort(&mut self, txn: PartFiles) -> FunctionResult {
        if self
            .open
            .as_ref()
            .is_some_and(|o| txn.files.iter().any(|f| f.in_progress == o.path))
        {
            self.open = None;
        }
        for part in txn.files {
            match fs::remove_file(&part.in_progress) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(io(&part.in_progress, "removing", e))
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn close(&mut self) -> FunctionResult {
        // An open part file here belongs to a transaction that was never
        // committed: it stays hidden.
        self.open = None;
        Ok(())
    }
}

/// The transactional file sink: `FileSink::for_row_format(dir)`.
pub type FileSink<T> = TwoPhaseCommitSink<RowFileWriter<T>, T>;

impl<T: Display + Send + 'static> TwoPhaseCommitSink<RowFileWriter<T>, T> {
    /// Writes each record's `Display` form as a line into part files in
    /// `dir` (Flink's `FileSink.forRowFormat` with a string encoder).
    pub fn for_row_format(dir: impl Into<PathBuf>) -> Self {
        TwoPhaseCommitSink::new(RowFileWriter {
            dir: dir.into(),
            policy: RollingPolicy::default(),
            suffix: String::new(),
            subtask: 0,
            next_part: 0,
            open: None,
            _type: std::marker::PhantomData,
        })
    }

    /// Rolls part files by `policy` (besides at every checkpoint).
    pub fn with_rolling_policy(self, policy: RollingPolicy) -> Self {
        let mut system = self.system().clone();
        system.policy = policy;
        TwoPhaseCommitSink::new(system)
    }

    /// Ends committed part file names with `suffix` (e.g. `.txt`).
    pub fn with_part_suffix(self, suffix: &str) -> Self {
        let mut system = self.system().clone();
        system.suffix = suffix.to_string();
        TwoPhaseCommitSink::new(system)
    }
}
