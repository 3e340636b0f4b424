//! `weir checkpoint inspect|list` and `weir savepoint --dispose`: reading
//! and deleting checkpoints and savepoints on disk or on an object store,
//! no job needed.

use weir_state::{LoadedCheckpoint, Redistribution};

/// Deletes a savepoint (a directory or an object store prefix) once its
/// metadata says it is a savepoint (a checkpoint belongs to its job and is
/// refused). A savepoint whose files no longer verify can still be
/// disposed.
pub(crate) fn dispose_savepoint(path: &std::path::Path) -> anyhow::Result<String> {
    use weir_state::checkpoint_storage::{directory_named, METADATA_FILE};
    use weir_state::snapshot::decode_framed;
    let given = path.to_string_lossy();
    let fs = weir_state::file_system::open(directory_named(&given).0)?;
    let bytes = fs
        .read(METADATA_FILE)
        .map_err(|e| anyhow::anyhow!("no savepoint here ({METADATA_FILE}: {e})"))?;
    let metadata: weir_state::CheckpointMetadata = decode_framed(&bytes)?;
    anyhow::ensure!(
        metadata.savepoint,
        "this is checkpoint {} of job {}, not a savepoint; its job's retention removes it",
        metadata.checkpoint_id,
        metadata.job_id
    );
    fs.remove_all("")?;
    Ok(shown(&*fs, ""))
}

/// How a path of `fs` is shown: a plain path on the local disk, else its
/// URI.
fn shown(fs: &dyn weir_state::file_system::FileSystem, path: &str) -> String {
    fs.local(path)
        .map_or_else(|| fs.uri(path), |p| p.display().to_string())
}

fn size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / f64::from(1 << 20)),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / f64::from(1 << 10)),
        b => format!("{b} B"),
    }
}

/// The report `inspect` prints.
pub(crate) fn describe(c: &LoadedCheckpoint) -> String {
    let m = &c.metadata;
    let mut out = format!(
        "{} {} of job {}\n  at {}\n  taken at {} ms since the epoch; max parallelism {}; {} of state files\n",
        if m.savepoint { "savepoint" } else { "checkpoint" },
        m.checkpoint_id,
        m.job_id,
        c.location,
        m.timestamp_ms,
        m.max_parallelism,
        size(m.state_size()),
    );
    let mut files = 0;
    for op in &m.operators {
        out += &format!(
            "  operator '{}' (id {}), parallelism {}\n",
            op.name, op.id, op.parallelism
        );
        let snapshots = c.operators.get(&op.id);
        for f in &op.files {
            files += 1;
            out += &format!(
                "    subtask {}: key groups {}-{}, {} ({}), checksum verified{}\n",
                f.subtask,
                f.key_groups.0,
                f.key_groups.1,
                f.file,
                size(f.size),
                if f.shared.is_empty() {
                    String::new()
                } else {
                    format!(", {} shared files", f.shared.len())
                }
            );
            let Some((_, s)) = snapshots.and_then(|v| v.iter().find(|(i, _)| *i == f.subtask))
            else {
                continue;
            };
            for state in &s.keyed {
                let shown = state.name.trim_start_matches("\u{1}weir/");
                let own = if shown.len() < state.name.len() {
                    " (the operator's own)"
                } else {
                    ""
                };
                out += &format!(
                    "      keyed state '{shown}'{own}: {} entries\n",
                    state.entries.len()
                );
            }
            for (name, (mode, elements)) in &s.operator.lists {
                let kind = match mode {
                    Redistribution::EvenSplit => "list",
                    Redistribution::Union => "union list",
                };
                out += &format!(
                    "      operator {kind} state '{}': {} elements\n",
                    name.trim_start_matches("\u{1}weir/"),
                    elements.len()
                );
            }
            if let Some(native) = &s.native {
                files += native.files.len();
                out += &format!(
                    "      key-value store files: {} (states {}), checksums verified\n",
                    native.files.len(),
                    native.states.join(", ")
                );
            }
            if let Some(p) = &s.source_position {
                out += &format!("      source position: {} bytes\n", p.len());
            }
        }
    }
    out += &format!("  {files} files verified\n");
    out
}

/// One checkpoint or savepoint found by [`list`].
pub(crate) struct Listed {
    /// A local path, or the URI of one on an object store.
    pub path: String,
    pub job_id: String,
    pub id: Option<u64>,
    pub savepoint: bool,
    pub time_ms: i64,
    pub bytes: u64,
    /// `None` while incomplete (no `_metadata`); else whether it verifies.
    pub verifies: Option<Result<(), String>>,
}

/// Every checkpoint (`<job>/chk-<n>`) and savepoint (`savepoint-…`, or any
/// directory with a `_metadata`) under `root` (a directory or an object
/// store prefix), newest first; complete ones are verified (sizes and
/// checksums of every file).
pub(crate) fn list(root: &std::path::Path) -> anyhow::Result<Vec<Listed>> {
    use weir_state::checkpoint_storage::{load_path, METADATA_FILE};
    use weir_state::file_system::join;
    use weir_state::snapshot::decode_framed;
    let given = root.to_string_lossy();
    let location = given.trim_end_matches('/');
    let fs = weir_state::file_system::open(location)?;
    if let Some(local) = fs.local("") {
        anyhow::ensure!(local.is_dir(), "{} is not a directory", local.display());
    }
    let last = |path: &str| -> String {
        let path = if path.is_empty() { location } else { path };
        path.rsplit('/').next().unwrap_or_default().to_string()
    };
    let mut found = Vec::new();
    let mut dirs = vec![(String::new(), 0)];
    while let Some((dir, depth)) = dirs.pop() {
        let name = last(&dir);
        let chk_id = name
            .strip_prefix("chk-")
            .and_then(|n| n.parse::<u64>().ok());
        let entries = fs.list(&dir)?;
        let bytes = entries.iter().filter(|e| !e.is_dir).map(|e| e.size).sum();
        let shown = shown(&*fs, &dir);
        if entries.iter().any(|e| !e.is_dir && e.name == METADATA_FILE) {
            let metadata = fs
                .read(&join(&dir, METADATA_FILE))
                .and_then(|b| decode_framed::<weir_state::CheckpointMetadata>(&b));
            let entry = match metadata {
                Ok(m) => Listed {
                    job_id: m.job_id.clone(),
                    id: Some(m.checkpoint_id),
                    savepoint: m.savepoint,
                    time_ms: m.timestamp_ms,
                    bytes,
                    verifies: Some(
                        load_path(std::path::Path::new(&fs.uri(&dir)))
                            .map(|_| ())
                            .map_err(|e| e.to_string()),
                    ),
                    path: shown,
                },
                Err(e) => Listed {
                    job_id: String::new(),
                    id: chk_id,
                    savepoint: !name.starts_with("chk-"),
                    time_ms: 0,
                    bytes,
                    verifies: Some(Err(format!("unreadable {METADATA_FILE}: {e}"))),
                    path: shown,
                },
            };
            found.push(entry);
            continue;
        }
        if let Some(id) = chk_id {
            // Begun, never completed (or still being written): as old as
            // its newest file.
            let time_ms = entries
                .iter()
                .map(|e| e.modified_ms)
                .max()
                .filter(|t| *t > 0)
                .or_else(|| {
                    let meta = std::fs::metadata(fs.local(&dir)?).ok()?;
                    let since = meta.modified().ok()?.duration_since(std::time::UNIX_EPOCH);
                    Some(since.ok()?.as_millis() as i64)
                })
                .unwrap_or(0);
            let parent = dir.rsplit_once('/').map_or("", |(p, _)| p);
            found.push(Listed {
                job_id: last(parent),
                id: Some(id),
                savepoint: false,
                time_ms,
                bytes,
                verifies: None,
                path: shown,
            });
            continue;
        }
        // Checkpoint roots hold job directories, which hold `chk-<n>`.
        if depth < 3 {
            for entry in entries.iter().filter(|e| e.is_dir && e.name != "shared") {
                dirs.push((join(&dir, &entry.name), depth + 1));
            }
        }
    }
    found.sort_by_key(|e| std::cmp::Reverse((e.time_ms, e.id)));
    Ok(found)
}

/// The table `weir checkpoint list` prints.
pub(crate) fn describe_list(entries: &[Listed]) -> String {
    let mut out = String::from(
        "JOB ID                            ID      KIND        TIME                 SIZE       STATE\n",
    );
    for e in entries {
        let state = match &e.verifies {
            None => "incomplete".to_string(),
            Some(Ok(())) => "complete, verifies".to_string(),
            Some(Err(why)) => format!("complete, does not verify: {why}"),
        };
        out += &format!(
            "{:<33} {:<7} {:<11} {:<20} {:<10} {state}\n  {}\n",
            if e.job_id.is_empty() { "?" } else { &e.job_id },
            e.id.map_or("?".to_string(), |id| id.to_string()),
            if e.savepoint {
                "savepoint"
            } else {
                "checkpoint"
            },
            crate::jobs::local_date(e.time_ms),
            size(e.bytes),
            e.path
        );
    }
    out
}
