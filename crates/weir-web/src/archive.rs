//! Jobs that ended stay visible (Flink's HistoryServer): when a job ends,
//! its REST answers (overview, job, plan, vertices, checkpoints,
//! exceptions, configuration, watermark diagnosis) are written to one
//! file per job in the archive directory (`jobmanager.archive.fs.dir`),
//! in Flink's archive format `{"archive": [{"path", "json"}]}`; the
//! history server serves that directory read-only, and `weir list -a`
//! lists it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::api::JobSummary;

/// How many archives the directory keeps (the oldest go first).
pub const RETAINED_JOBS: usize = 100;

/// Why an archive could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    /// The directory or a file could not be used.
    #[error("job archive {path}: {cause}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        cause: std::io::Error,
    },
    /// A file is not an archive.
    #[error("job archive {path}: not an archive ({why})")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        why: String,
    },
}

/// One archived REST answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ArchivedAnswer {
    /// The request path, without query.
    pub path: String,
    /// The answer's JSON, as text (Flink's format).
    pub json: String,
}

/// A job's archive.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct JobArchive {
    /// Its answers.
    pub archive: Vec<ArchivedAnswer>,
}

impl JobArchive {
    /// The answer archived for `path`, parsed.
    pub fn answer(&self, path: &str) -> Option<Value> {
        self.archive
            .iter()
            .find(|a| a.path == path)
            .and_then(|a| serde_json::from_str(&a.json).ok())
    }

    /// The job's summary (from its `/jobs/overview`).
    pub fn summary(&self) -> Option<JobSummary> {
        let overview = self.answer("/jobs/overview")?;
        serde_json::from_value(overview["jobs"][0].clone()).ok()
    }
}

/// The default archive directory: `$XDG_DATA_HOME/weir/completed-jobs`,
/// else `~/.local/share/weir/completed-jobs`, else under the temp dir.
pub fn default_dir() -> PathBuf {
    let data = std::env::var_os("XDG_DATA_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(|h| PathBuf::from(h).join(".local").join("share"))
        })
        .unwrap_or_else(std::env::temp_dir);
    data.join("weir").join("completed-jobs")
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ArchiveError + '_ {
    move |cause| ArchiveError::Io {
        path: path.to_path_buf(),
        cause,
    }
}

/// Writes `archive` as job `job_id`'s in `dir` (atomically: a temp file
/// renamed), then drops the oldest archives beyond [`RETAINED_JOBS`].
pub fn write(dir: &Path, job_id: &str, archive: &JobArchive) -> Result<PathBuf, ArchiveError> {
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let path = dir.join(job_id);
    let temp = dir.join(format!(".{job_id}.tmp"));
    let text = serde_json::to_vec(archive).map_err(|e| ArchiveError::Malformed {
        path: path.clone(),
        why: e.to_string(),
    })?;
    std::fs::write(&temp, text).map_err(io(&temp))?;
    std::fs::rename(&temp, &path).map_err(io(&path))?;
    let mut archives: Vec<(std::time::SystemTime, PathBuf)> = std::fs::read_dir(dir)
        .map_err(io(dir))?
        .filter_map(Result::ok)
        .filter(|e| is_job_id(&e.file_name().to_string_lossy()))
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    if archives.len() > RETAINED_JOBS {
        archives.sort();
        for (_, old) in &archives[..archives.len() - RETAINED_JOBS] {
            let _ = std::fs::remove_file(old);
        }
    }
    Ok(path)
}

fn is_job_id(name: &str) -> bool {
    name.len() == 32 && name.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Job `job_id`'s archive in `dir`, if there is one.
pub fn read(dir: &Path, job_id: &str) -> Result<Option<JobArchive>, ArchiveError> {
    if !is_job_id(job_id) {
        return Ok(None);
    }
    let path = dir.join(job_id.to_ascii_lowercase());
    let text = match std::fs::read(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(&path)(e)),
    };
    serde_json::from_slice(&text)
        .map(Some)
        .map_err(|e| ArchiveError::Malformed {
            path,
            why: e.to_string(),
        })
}

/// Every archived job in `dir`, newest start first (none if the directory
/// does not exist); files that are not archives are skipped.
pub fn list(dir: &Path) -> Result<Vec<JobSummary>, ArchiveError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io(dir)(e)),
    };
    let mut jobs: Vec<JobSummary> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            read(dir, &name).ok().flatten()?.summary()
        })
        .collect();
    jobs.sort_by_key(|j| std::cmp::Reverse(j.start_time));
    Ok(jobs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("weir-archive-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    fn archive_of(jid: &str, start: i64) -> JobArchive {
        let overview = serde_json::json!({ "jobs": [{
            "jid": jid, "name": "n", "state": "FINISHED",
            "start-time": start, "end-time": start + 5, "duration": 5,
        }]});
        JobArchive {
            archive: vec![ArchivedAnswer {
                path: "/jobs/overview".into(),
                json: overview.to_string(),
            }],
        }
    }

    #[test]
    fn archives_are_listed_newest_first_and_read_back() {
        let dir = temp("list");
        let (a, b) = ("a".repeat(32), "b".repeat(32));
        write(&dir, &a, &archive_of(&a, 1)).expect("written");
        write(&dir, &b, &archive_of(&b, 2)).expect("written");
        std::fs::write(dir.join("notes.txt"), "not an archive").expect("written");
        let jobs = list(&dir).expect("listed");
        let ids: Vec<&str> = jobs.iter().map(|j| j.jid.as_str()).collect();
        assert_eq!(ids, [b.as_str(), a.as_str()]);
        let read_back = read(&dir, &a).expect("read").expect("found");
        assert_eq!(read_back.summary().expect("summary").state, "FINISHED");
        assert!(read(&dir, &"c".repeat(32)).expect("read").is_none());
        assert!(read(&dir, "../etc/passwd").expect("read").is_none());
        assert!(list(&dir.join("missing")).expect("listed").is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn only_the_newest_archives_are_kept() {
        let dir = temp("retained");
        for i in 0..RETAINED_JOBS + 3 {
            let jid = format!("{i:032x}");
            write(&dir, &jid, &archive_of(&jid, i as i64)).expect("written");
        }
        assert_eq!(list(&dir).expect("listed").len(), RETAINED_JOBS);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
