//! The state one operator subtask registers for checkpoints, and its line
//! to the coordinator.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use crossbeam_channel::Sender;
use weir_state::snapshot::KeyedStateSnapshot;
use weir_state::{
    CheckpointStorage, DeferredSnapshot, KeyedStateStore, NativeFile, NativeFiles, NativeRestore,
    NativeState, StateError, SubtaskSnapshot,
};
use xxhash_rust::xxh3::xxh3_64;

use super::CoordinatorMessage;
use crate::element::Barrier;

/// Prefix of the names under which operators keep their own keyed state
/// (timers, window contents) in a snapshot, apart from user state names.
pub const INTERNAL_STATE_PREFIX: &str = "\u{1}weir/";

/// `(key group, encoded key, encoded value)` of one state.
pub type StateEntries = Vec<(u32, Vec<u8>, Vec<u8>)>;

#[derive(Default)]
struct Inner {
    keyed: Option<KeyedStateStore>,
    restored_keyed: Vec<KeyedStateSnapshot>,
    restored_internal: Vec<KeyedStateSnapshot>,
    internal: BTreeMap<String, StateEntries>,
    restored_position: Option<Vec<u8>>,
    restored_native: Option<NativeRestore>,
}

/// The keyed store an operator subtask opened, and what a restore brought
/// for it. Shared by the clones of the subtask's `RuntimeContext`.
#[derive(Clone, Default)]
pub struct SubtaskState {
    inner: Arc<Mutex<Inner>>,
}

impl std::fmt::Debug for SubtaskState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubtaskState").finish_non_exhaustive()
    }
}

impl SubtaskState {
    /// State restored from a checkpoint: keyed entries of this subtask's key
    /// groups and, for a source, its position.
    pub fn restored(keyed: Vec<KeyedStateSnapshot>, position: Option<Vec<u8>>) -> Self {
        let (internal, user): (Vec<_>, Vec<_>) = keyed
            .into_iter()
            .partition(|s| s.name.starts_with(INTERNAL_STATE_PREFIX));
        SubtaskState {
            inner: Arc::new(Mutex::new(Inner {
                restored_keyed: user,
                restored_internal: internal,
                restored_position: position,
                ..Inner::default()
            })),
        }
    }

    /// The restored entries of the operator's own state `name` (timers,
    /// window contents), once.
    pub fn take_restored_internal(&self, name: &str) -> Result<StateEntries, StateError> {
        let full = format!("{INTERNAL_STATE_PREFIX}{name}");
        let mut inner = self.lock()?;
        Ok(
            match inner.restored_internal.iter().position(|s| s.name == full) {
                Some(at) => inner.restored_internal.swap_remove(at).entries,
                None => Vec::new(),
            },
        )
    }

    /// Sets the operator's own state `name` for the snapshot being taken
    /// (called from `Operator::snapshot_state`).
    pub fn set_internal(&self, name: &str, entries: StateEntries) -> Result<(), StateError> {
        let full = format!("{INTERNAL_STATE_PREFIX}{name}");
        self.lock()?.internal.insert(full, entries);
        Ok(())
    }

    fn lock(&self) -> Result<MutexGuard<'_, Inner>, StateError> {
        self.inner
            .lock()
            .map_err(|_| StateError::Internal("subtask state poisoned by a panic".into()))
    }

    /// Sets the store's own files to open the keyed store from.
    pub fn restore_native(&self, native: NativeRestore) -> Result<(), StateError> {
        self.lock()?.restored_native = Some(native);
        Ok(())
    }

    /// The store's own files to open the keyed store from, once.
    pub fn take_native(&self) -> Result<Option<NativeRestore>, StateError> {
        Ok(self.lock()?.restored_native.take())
    }

    /// Registers the subtask's keyed store, handing it the restored entries.
    pub fn register_keyed(&self, store: &KeyedStateStore) -> Result<(), StateError> {
        let mut inner = self.lock()?;
        store.restore_on_register(std::mem::take(&mut inner.restored_keyed))?;
        inner.keyed = Some(store.clone());
        Ok(())
    }

    /// The restored source position, once.
    pub fn take_position(&self) -> Result<Option<Vec<u8>>, StateError> {
        Ok(self.lock()?.restored_position.take())
    }

    /// The keyed part of a snapshot. Restored entries never handed to a
    /// store (the operator opened no keyed state) are kept, so they survive.
    pub fn snapshot_keyed(&self, into: &mut TakenSnapshot, native: bool) -> Result<(), StateError> {
        let mut inner = self.lock()?;
        match &inner.keyed {
            Some(store) => into.keyed = Some(store.snapshot_deferred(native)?),
            None => inner
                .restored_keyed
                .iter()
                .for_each(|s| into.base.add_state(s.clone())),
        }
        for s in &inner.restored_internal {
            into.base.add_state(s.clone());
        }
        for (name, entries) in std::mem::take(&mut inner.internal) {
            into.base.add_state(KeyedStateSnapshot { name, entries });
        }
        Ok(())
    }
}

/// A subtask's snapshot as the task thread takes it: the keyed store's part
/// still to be encoded, which the coordinator does (off the task thread).
#[derive(Debug, Default)]
pub struct TakenSnapshot {
    pub(crate) base: SubtaskSnapshot,
    pub(crate) keyed: Option<DeferredSnapshot>,
}

impl TakenSnapshot {
    /// The whole snapshot, encoded. A store's own files are stored in
    /// `storage` for checkpoint `checkpoint_id`: immutable ones shared (and
    /// named in the returned list), the others under `prefix`; the bytes
    /// those files added to the storage are counted in `written`.
    pub fn complete(
        self,
        storage: &dyn CheckpointStorage,
        checkpoint_id: u64,
        prefix: &str,
        upload: &mut Upload<'_>,
    ) -> Result<SubtaskSnapshot, StateError> {
        let Some(DeferredSnapshot::Native {
            files,
            states,
            key_groups,
        }) = self.keyed
        else {
            return self.complete_in_memory();
        };
        let mut snapshot = self.base;
        let stored = store_native(storage, checkpoint_id, prefix, &files, upload);
        let _ = std::fs::remove_dir_all(&files.dir);
        snapshot.native = Some(NativeState {
            states,
            files: stored?,
            key_groups,
        });
        Ok(snapshot)
    }

    /// Drops the snapshot, removing a store's local checkpoint files.
    pub fn discard(self) {
        if let Some(DeferredSnapshot::Native { files, .. }) = self.keyed {
            let _ = std::fs::remove_dir_all(&files.dir);
        }
    }

    /// The snapshot with its keyed part encoded as entries (storages
    /// without shared files, final snapshots).
    pub fn complete_in_memory(self) -> Result<SubtaskSnapshot, StateError> {
        let mut snapshot = self.base;
        if let Some(keyed) = self.keyed {
            for state in keyed.encode()? {
                snapshot.add_state(state);
            }
        }
        Ok(snapshot)
    }
}

/// Sizes and checksums of shared files already stored, so that each file
/// is read for its checksum once.
#[derive(Debug, Default)]
pub struct SharedFiles {
    checksums: HashMap<String, (u64, u64)>,
}

fn read_file(path: &Path) -> Result<Vec<u8>, StateError> {
    std::fs::read(path).map_err(|e| StateError::Io {
        path: path.display().to_string(),
        cause: e,
    })
}

/// Stores a store's own files for a checkpoint, listing where each is.
fn store_native(
    storage: &dyn CheckpointStorage,
    checkpoint_id: u64,
    prefix: &str,
    files: &NativeFiles,
    upload: &mut Upload<'_>,
) -> Result<Vec<NativeFile>, StateError> {
    // The shared files first, all at once: a storage on an object store
    // uploads them concurrently.
    let shared: Vec<(String, std::path::PathBuf)> = files
        .files
        .iter()
        .filter_map(|(name, shared)| Some((shared.clone()?, files.dir.join(name))))
        .collect();
    let mut put = storage
        .put_shared_all(&shared)?
        .ok_or_else(|| StateError::Internal("the checkpoint storage shares no files".into()))?
        .into_iter();
    let mut stored = Vec::with_capacity(files.files.len());
    for (name, shared_name) in &files.files {
        let path = files.dir.join(name);
        let file = match shared_name {
            Some(shared_name) => {
                let (reference, copied) = put.next().ok_or_else(|| {
                    StateError::Internal("the storage stored fewer shared files than given".into())
                })?;
                *upload.written += copied;
                upload.shared.push(shared_name.clone());
                let (size, checksum) = match upload.files.checksums.get(shared_name) {
                    Some(known) => *known,
                    None => {
                        let bytes = read_file(&path)?;
                        let sum = (bytes.len() as u64, xxh3_64(&bytes));
                        upload.files.checksums.insert(shared_name.clone(), sum);
                        sum
                    }
                };
                NativeFile {
                    name: name.clone(),
                    path: reference,
                    size,
                    checksum,
                }
            }
            None => {
                let bytes = read_file(&path)?;
                let private = format!("{prefix}-{name}");
                storage.write_file(checkpoint_id, &private, &bytes)?;
                *upload.written += bytes.len() as u64;
                NativeFile {
                    name: name.clone(),
                    path: private,
                    size: bytes.len() as u64,
                    checksum: xxh3_64(&bytes),
                }
            }
        };
        stored.push(file);
    }
    Ok(stored)
}

/// What storing a snapshot's files records: bytes written, the shared
/// files it uses, and the checksums known across checkpoints.
pub struct Upload<'a> {
    /// Bytes added to the storage.
    pub written: &'a mut u64,
    /// Shared files the snapshot uses.
    pub shared: Vec<String>,
    /// Checksums of shared files seen before.
    pub files: &'a mut SharedFiles,
}

/// How an operator subtask acknowledges checkpoints.
#[derive(Debug, Clone)]
pub struct CheckpointPort {
    pub(crate) to_coordinator: Sender<CoordinatorMessage>,
    /// Whether keyed stores checkpoint their own files (the storage
    /// shares files between checkpoints).
    pub(crate) native: bool,
    pub(crate) operator: usize,
    pub(crate) subtask: u32,
}

impl CheckpointPort {
    /// Acknowledges `barrier` with `snapshot`.
    pub(crate) fn acknowledge(
        &self,
        barrier: &Barrier,
        snapshot: TakenSnapshot,
        pause: std::time::Duration,
    ) {
        // The coordinator is gone only when the job ends: nothing to tell.
        let _ = self.to_coordinator.send(CoordinatorMessage::Ack {
            checkpoint_id: barrier.checkpoint_id,
            operator: self.operator,
            subtask: self.subtask,
            snapshot: Box::new(snapshot),
            pause,
            alignment: barrier.alignment,
        });
    }

    /// Reports the subtask's final state.
    pub(crate) fn finished(&self, snapshot: SubtaskSnapshot) {
        let _ = self.to_coordinator.send(CoordinatorMessage::Finished {
            operator: self.operator,
            subtask: self.subtask,
            snapshot: Box::new(snapshot),
        });
    }

    /// Declines `barrier`'s checkpoint.
    pub(crate) fn decline(&self, barrier: &Barrier, reason: String) {
        let _ = self.to_coordinator.send(CoordinatorMessage::Decline {
            checkpoint_id: barrier.checkpoint_id,
            reason,
        });
    }
}
