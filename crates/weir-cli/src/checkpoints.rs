//! `weir checkpoint inspect` and `weir savepoint --dispose`: reading and
//! deleting checkpoints and savepoints on disk, no job needed.

use weir_state::{LoadedCheckpoint, Redistribution};

/// Deletes a savepoint's directory once its metadata says it is a savepoint
/// (a checkpoint directory belongs to its job and is refused). A savepoint
/// whose files no longer verify can still be disposed.
pub(crate) fn dispose_savepoint(path: &std::path::Path) -> anyhow::Result<String> {
    use weir_state::checkpoint_storage::{strip_file_scheme, METADATA_FILE};
    use weir_state::snapshot::decode_framed;
    let path = strip_file_scheme(path);
    let dir = if path.is_dir() {
        path
    } else {
        path.parent()
            .map(std::path::Path::to_path_buf)
            .unwrap_or_default()
    };
    let bytes = std::fs::read(dir.join(METADATA_FILE))
        .map_err(|e| anyhow::anyhow!("no savepoint here ({METADATA_FILE}: {e})"))?;
    let metadata: weir_state::CheckpointMetadata = decode_framed(&bytes)?;
    anyhow::ensure!(
        metadata.savepoint,
        "this is checkpoint {} of job {}, not a savepoint; its job's retention removes it",
        metadata.checkpoint_id,
        metadata.job_id
    );
    std::fs::remove_dir_all(&dir)?;
    Ok(dir.display().to_string())
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
