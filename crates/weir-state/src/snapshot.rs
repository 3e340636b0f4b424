//! What one operator subtask's state looks like in a checkpoint, and the
//! framing every checkpoint file shares.
//!
//! A file is `magic (8) | format version (u16 LE) | payload length (u64 LE)
//! | xxh3-64 of the payload (u64 LE) | payload`, the payload being postcard.
//! Reading checks all four, so a truncated file or a flipped byte is an
//! error naming what was wrong, never garbage state.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::xxh3_64;

use crate::error::StateError;
use crate::key_group::{KeyGroup, KeyGroupRange};
use crate::operator_state::OperatorStateSnapshot;

/// Format version of checkpoint files written by this build.
pub const SNAPSHOT_FORMAT_VERSION: u16 = 1;

const MAGIC: &[u8; 8] = b"WEIRCHK\0";
const HEADER_LEN: usize = 8 + 2 + 8 + 8;

/// Frames `payload` with the magic, version, length and checksum.
pub fn frame(payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&SNAPSHOT_FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&xxh3_64(payload).to_le_bytes());
    out.extend_from_slice(payload);
    out
}

/// The payload of a framed file, after checking its header and checksum.
pub fn unframe(bytes: &[u8]) -> Result<&[u8], StateError> {
    let corrupt = |why: &str| StateError::Corrupt(why.to_string());
    if bytes.len() < HEADER_LEN || &bytes[..8] != MAGIC {
        return Err(corrupt("not a Weir checkpoint file (bad magic)"));
    }
    let version = u16::from_le_bytes([bytes[8], bytes[9]]);
    if version != SNAPSHOT_FORMAT_VERSION {
        return Err(StateError::Corrupt(format!(
            "format version {version}, this build reads {SNAPSHOT_FORMAT_VERSION}"
        )));
    }
    let word = |at: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&bytes[at..at + 8]);
        u64::from_le_bytes(b)
    };
    let (len, checksum) = (word(10), word(18));
    let payload = &bytes[HEADER_LEN..];
    if payload.len() as u64 != len {
        return Err(StateError::Corrupt(format!(
            "truncated: {} payload bytes, header says {len}",
            payload.len()
        )));
    }
    if xxh3_64(payload) != checksum {
        return Err(corrupt("checksum mismatch"));
    }
    Ok(payload)
}

/// Encodes `value` as a framed file.
pub fn encode_framed<T: Serialize>(value: &T) -> Result<Vec<u8>, StateError> {
    Ok(frame(&postcard::to_stdvec(value)?))
}

/// Decodes a framed file written by [`encode_framed`].
pub fn decode_framed<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, StateError> {
    Ok(postcard::from_bytes(unframe(bytes)?)?)
}

/// The entries of one keyed state in a snapshot: `(key group, key, value)`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyedStateSnapshot {
    /// The state's name.
    pub name: String,
    /// `(key group, encoded key, encoded value)`, by key group.
    pub entries: Vec<(u32, Vec<u8>, Vec<u8>)>,
}

/// A key-value store's own checkpoint on local disk: the directory and its
/// files, each with the name under which checkpoints share it (immutable
/// files, e.g. RocksDB's SST files) or `None` (files that change, copied
/// into each checkpoint).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NativeFiles {
    /// The directory holding the files; removed once they are stored.
    pub dir: std::path::PathBuf,
    /// `(file name in dir, shared name)`.
    pub files: Vec<(String, Option<String>)>,
}

/// One file of a key-value store in a checkpoint.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NativeFile {
    /// Its name in the store's directory.
    pub name: String,
    /// Where the checkpoint has it, relative to the checkpoint's directory.
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// xxh3-64 of its bytes.
    pub checksum: u64,
}

/// A key-value store's files in a checkpoint.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NativeState {
    /// State names in the order of the ids the store's keys use.
    pub states: Vec<String>,
    /// The files.
    pub files: Vec<NativeFile>,
    /// The key groups the store held `(first, last)`.
    pub key_groups: (u32, u32),
}

/// Everything one operator subtask contributes to a checkpoint.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubtaskSnapshot {
    /// Keyed state, per state name.
    pub keyed: Vec<KeyedStateSnapshot>,
    /// Operator (list, union list, broadcast) state.
    pub operator: OperatorStateSnapshot,
    /// A source's position, if the operator is a replayable source.
    pub source_position: Option<Vec<u8>>,
    /// Keyed state as the store's own files (incremental RocksDB
    /// checkpoints), instead of entries in `keyed`.
    pub native: Option<NativeState>,
}

impl SubtaskSnapshot {
    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.keyed.iter().all(|s| s.entries.is_empty())
            && self.operator.lists.is_empty()
            && self.source_position.is_none()
            && self.native.is_none()
    }

    /// Adds the entries of one state (merged with entries of the same name).
    pub fn add_state(&mut self, state: KeyedStateSnapshot) {
        match self.keyed.iter_mut().find(|s| s.name == state.name) {
            Some(existing) => existing.entries.extend(state.entries),
            None => self.keyed.push(state),
        }
    }

    /// The keyed state of `snapshots` in the key groups of `range`, per
    /// state: what a subtask owning `range` restores, whatever the
    /// parallelism the snapshots were taken at.
    pub fn keyed_in<'a>(
        snapshots: impl IntoIterator<Item = &'a SubtaskSnapshot>,
        range: KeyGroupRange,
    ) -> Vec<KeyedStateSnapshot> {
        let mut out = SubtaskSnapshot::default();
        for snapshot in snapshots {
            for state in &snapshot.keyed {
                let entries: Vec<_> = state
                    .entries
                    .iter()
                    .filter(|(kg, _, _)| range.contains(KeyGroup(*kg)))
                    .cloned()
                    .collect();
                if !entries.is_empty() {
                    out.add_state(KeyedStateSnapshot {
                        name: state.name.clone(),
                        entries,
                    });
                }
            }
        }
        out.keyed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> SubtaskSnapshot {
        let mut s = SubtaskSnapshot::default();
        s.add_state(KeyedStateSnapshot {
            name: "count".into(),
            entries: vec![(3, vec![1], vec![9])],
        });
        s.add_state(KeyedStateSnapshot {
            name: "count".into(),
            entries: vec![(70, vec![2], vec![8])],
        });
        s.source_position = Some(vec![42]);
        s
    }

    #[test]
    fn a_framed_snapshot_reads_back() -> Result<(), StateError> {
        let bytes = encode_framed(&sample())?;
        assert_eq!(decode_framed::<SubtaskSnapshot>(&bytes)?, sample());
        Ok(())
    }

    #[test]
    fn truncation_and_flipped_bytes_are_detected() -> Result<(), StateError> {
        let bytes = encode_framed(&sample())?;
        let truncated = &bytes[..bytes.len() - 1];
        assert!(matches!(
            decode_framed::<SubtaskSnapshot>(truncated),
            Err(StateError::Corrupt(m)) if m.contains("truncated")
        ));
        let mut flipped = bytes.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 0x40;
        assert!(matches!(
            decode_framed::<SubtaskSnapshot>(&flipped),
            Err(StateError::Corrupt(m)) if m.contains("checksum")
        ));
        assert!(decode_framed::<SubtaskSnapshot>(b"short").is_err());
        Ok(())
    }

    #[test]
    fn keyed_state_is_picked_by_key_group_range() {
        let s = sample();
        assert_eq!(s.keyed.len(), 1, "entries of one state are merged");
        let low = SubtaskSnapshot::keyed_in([&s], KeyGroupRange { start: 0, end: 63 });
        let high = SubtaskSnapshot::keyed_in(
            [&s],
            KeyGroupRange {
                start: 64,
                end: 127,
            },
        );
        assert_eq!(low[0].entries, vec![(3, vec![1], vec![9])]);
        assert_eq!(high[0].entries, vec![(70, vec![2], vec![8])]);
        let none = SubtaskSnapshot::keyed_in([&s], KeyGroupRange { start: 4, end: 69 });
        assert!(none.is_empty());
    }
}
