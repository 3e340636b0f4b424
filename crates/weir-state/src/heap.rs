//! The heap backend: typed values in hash tables, one per key group, so a
//! snapshot can be taken (and restored at another parallelism) key group by
//! key group. Reads and writes never serialize values; only the current key
//! is encoded and hashed, once per record, and every access of that record
//! reuses the hash.

use std::any::Any;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::clock::SharedClock;
use crate::codec::{decode_value, encode_value};
use crate::descriptor::StateKind;
use crate::error::StateError;
use crate::key_bytes::KeyBytes;
use crate::key_group::{KeyGroup, KeyGroupRange};
use crate::snapshot::KeyedStateSnapshot;
use crate::ttl::{StateTtlConfig, StateVisibility, UpdateType};

use std::hash::BuildHasher;

use hashbrown::HashTable;

/// The hash of encoded keys, fixed per backend.
pub(crate) type KeyHasher = foldhash::fast::RandomState;

/// One registered state of a backend, its value type erased.
pub(crate) trait StateTable: Send {
    fn name(&self) -> &str;
    fn kind(&self) -> StateKind;
    fn type_name(&self) -> &'static str;
    fn as_any_mut(&mut self) -> &mut dyn Any;
    /// `(key bytes, value bytes)` of every key in key group offset `group`
    /// (values with their TTL stamp); expired ones left out if configured.
    fn snapshot_group(
        &self,
        group: usize,
        now: i64,
        out: &mut Vec<(Vec<u8>, Vec<u8>)>,
    ) -> Result<(), StateError>;
    /// A copy of the table (typed, not encoded: cheap on the task thread)
    /// and how to encode it later, off the task thread, as the entries
    /// `snapshot_group` would give for key groups `first_key_group..`.
    fn copy_for_snapshot(&self, first_key_group: u32, now: i64) -> DeferredState;
    /// Puts back an entry written by `snapshot_group`.
    fn restore_entry(&mut self, group: usize, key: &[u8], value: &[u8]) -> Result<(), StateError>;
    /// Number of keys holding a value.
    fn len(&self) -> usize;
    /// Calls `f(group offset, encoded key)` for every key holding a value.
    fn keys(&self, f: &mut dyn FnMut(usize, &[u8]));
    /// Removes `key`'s value (hashed to `hash`) in key group offset `group`.
    fn clear_key(&mut self, group: usize, hash: u64, key: &[u8]);
}

/// The values of one state, by key group (offset in the backend's range),
/// then by encoded key.
pub(crate) struct TypedTable<V> {
    name: String,
    kind: StateKind,
    hasher: KeyHasher,
    pub ttl: Option<StateTtlConfig>,
    /// Per key group: key, value, and when the value was last touched (for
    /// TTL; unused without).
    pub groups: Vec<HashTable<(KeyBytes, V, i64)>>,
    /// Incremental TTL cleanup: the next key group to sweep, and how many
    /// entries accesses have paid for so far.
    cleanup_cursor: usize,
    cleanup_budget: usize,
}

impl<V> TypedTable<V> {
    pub fn new(
        name: &str,
        kind: StateKind,
        groups: usize,
        hasher: KeyHasher,
        ttl: Option<StateTtlConfig>,
    ) -> Self {
        TypedTable {
            name: name.to_string(),
            kind,
            hasher,
            ttl,
            groups: (0..groups).map(|_| HashTable::new()).collect(),
            cleanup_cursor: 0,
            cleanup_budget: 0,
        }
    }

    /// Whether an entry touched at `stamp` reads as absent at `now`.
    #[inline]
    fn hidden(&self, stamp: i64, now: i64) -> bool {
        self.ttl.is_some_and(|t| {
            t.visibility == StateVisibility::NeverReturnExpired && t.is_expired(stamp, now)
        })
    }

    /// The value of `key` (hashed to `hash`) in key group offset `group`,
    /// for reading: an expired value is dropped (unless visible), and with
    /// `OnReadAndWrite` reading restarts its time-to-live.
    #[inline]
    pub fn read(&mut self, group: usize, hash: u64, key: &[u8], now: i64) -> Option<&mut V> {
        self.access(group, hash, key, now, false)
    }

    /// The value of `key`, for changing it in place: an expired value is
    /// dropped (unless visible); the time-to-live restarts.
    #[inline]
    pub fn write(&mut self, group: usize, hash: u64, key: &[u8], now: i64) -> Option<&mut V> {
        self.access(group, hash, key, now, true)
    }

    #[inline]
    fn access(
        &mut self,
        group: usize,
        hash: u64,
        key: &[u8],
        now: i64,
        write: bool,
    ) -> Option<&mut V> {
        let Some(ttl) = self.ttl else {
            return self.groups[group]
                .find_mut(hash, |e| e.0.as_slice() == key)
                .map(|e| &mut e.1);
        };
        if ttl.cleanup_in_background && ttl.incremental_cleanup_size > 0 {
            self.clean_up_incrementally(ttl, now);
        }
        let hidden = match self.groups[group].find(hash, |e| e.0.as_slice() == key) {
            None => return None,
            Some(e) => self.hidden(e.2, now),
        };
        if hidden {
            self.remove(group, hash, key);
            return None;
        }
        let entry = self.groups[group].find_mut(hash, |e| e.0.as_slice() == key)?;
        if write || ttl.update_type == UpdateType::OnReadAndWrite {
            entry.2 = now;
        }
        Some(&mut entry.1)
    }

    /// Pays for `incremental_cleanup_size` entries; sweeps the next key
    /// group of expired values once the budget covers it.
    fn clean_up_incrementally(&mut self, ttl: StateTtlConfig, now: i64) {
        self.cleanup_budget = self
            .cleanup_budget
            .saturating_add(ttl.incremental_cleanup_size);
        let Some(table) = self.groups.get_mut(self.cleanup_cursor) else {
            return;
        };
        if self.cleanup_budget < table.len() {
            return;
        }
        self.cleanup_budget -= table.len();
        table.retain(|e| !ttl.is_expired(e.2, now));
        self.cleanup_cursor = (self.cleanup_cursor + 1) % self.groups.len();
    }

    /// Removes `key`, returning the stored key (to reuse) and its value, or
    /// `None` for the value if it had expired (and is not visible).
    #[inline]
    pub fn take(
        &mut self,
        group: usize,
        hash: u64,
        key: &[u8],
        now: i64,
    ) -> Option<(KeyBytes, Option<V>)> {
        let (k, v, stamp) = self.remove(group, hash, key)?;
        let hidden = self.hidden(stamp, now);
        Some((k, (!hidden).then_some(v)))
    }

    #[inline]
    fn remove(&mut self, group: usize, hash: u64, key: &[u8]) -> Option<(KeyBytes, V, i64)> {
        match self.groups[group].find_entry(hash, |e| e.0.as_slice() == key) {
            Ok(entry) => Some(entry.remove().0),
            Err(_) => None,
        }
    }

    /// Inserts a key known to be absent, touched at `now`.
    #[inline]
    pub fn insert(&mut self, group: usize, hash: u64, key: KeyBytes, value: V, now: i64) {
        let hasher = &self.hasher;
        self.groups[group]
            .insert_unique(hash, (key, value, now), |e| hasher.hash_one(e.0.as_slice()));
    }
}

/// Encodes one state's copied table into snapshot entries.
pub(crate) type DeferredState = Box<dyn FnOnce() -> Result<KeyedStateSnapshot, StateError> + Send>;

impl<V: Serialize + DeserializeOwned + Clone + Send + 'static> StateTable for TypedTable<V> {
    fn name(&self) -> &str {
        &self.name
    }
    fn kind(&self) -> StateKind {
        self.kind
    }
    fn type_name(&self) -> &'static str {
        std::any::type_name::<V>()
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
    fn snapshot_group(
        &self,
        group: usize,
        now: i64,
        out: &mut Vec<(Vec<u8>, Vec<u8>)>,
    ) -> Result<(), StateError> {
        let skip_expired = self.ttl.filter(|t| t.cleanup_full_snapshot);
        if let Some(table) = self.groups.get(group) {
            for (k, v, stamp) in table {
                if skip_expired.is_some_and(|t| t.is_expired(*stamp, now)) {
                    continue;
                }
                out.push((k.as_slice().to_vec(), encode_value(&(*stamp, v))?));
            }
        }
        Ok(())
    }
    fn copy_for_snapshot(&self, first_key_group: u32, now: i64) -> DeferredState {
        let groups = self.groups.clone();
        let skip_expired = self.ttl.filter(|t| t.cleanup_full_snapshot);
        let name = self.name.clone();
        Box::new(move || {
            let mut entries = Vec::new();
            for (offset, table) in groups.iter().enumerate() {
                let kg = first_key_group + offset as u32;
                for (k, v, stamp) in table {
                    if skip_expired.is_some_and(|t| t.is_expired(*stamp, now)) {
                        continue;
                    }
                    entries.push((kg, k.as_slice().to_vec(), encode_value(&(*stamp, v))?));
                }
            }
            Ok(KeyedStateSnapshot { name, entries })
        })
    }

    fn restore_entry(&mut self, group: usize, key: &[u8], value: &[u8]) -> Result<(), StateError> {
        if group >= self.groups.len() {
            return Err(StateError::Internal(format!(
                "key group offset {group} out of range"
            )));
        }
        let hash = self.hasher.hash_one(key);
        let (stamp, value): (i64, V) = decode_value(value)?;
        self.remove(group, hash, key);
        self.insert(group, hash, key.into(), value, stamp);
        Ok(())
    }
    fn len(&self) -> usize {
        self.groups.iter().map(HashTable::len).sum()
    }
    fn keys(&self, f: &mut dyn FnMut(usize, &[u8])) {
        for (group, table) in self.groups.iter().enumerate() {
            for (k, _, _) in table {
                f(group, k.as_slice());
            }
        }
    }
    fn clear_key(&mut self, group: usize, hash: u64, key: &[u8]) {
        self.remove(group, hash, key);
    }
}

/// Puts `key` followed by the encoded `namespace` in `out`, reusing its
/// allocation (both backends store namespaced values under this).
pub(crate) fn key_and_namespace<N: Serialize + ?Sized>(
    key: &[u8],
    namespace: &N,
    out: &mut Vec<u8>,
) -> Result<(), StateError> {
    out.clear();
    out.extend_from_slice(key);
    crate::codec::append_key(namespace, out)
}

/// Keyed state of one operator subtask, in memory.
pub(crate) struct HeapBackend {
    pub range: KeyGroupRange,
    pub max_parallelism: u32,
    pub key: Vec<u8>,
    pub key_hash: u64,
    pub hasher: KeyHasher,
    pub clock: SharedClock,
    pub group: usize,
    pub has_key: bool,
    /// The current key followed by the current namespace, and its hash,
    /// which namespaced handles use instead of `key`.
    pub ns_key: Vec<u8>,
    pub ns_hash: u64,
    pub has_ns: bool,
    pub tables: Vec<Box<dyn StateTable>>,
}

impl HeapBackend {
    pub fn new(max_parallelism: u32, range: KeyGroupRange, clock: SharedClock) -> Self {
        HeapBackend {
            clock,
            range,
            max_parallelism,
            key: Vec::with_capacity(64),
            key_hash: 0,
            hasher: KeyHasher::default(),
            group: 0,
            has_key: false,
            ns_key: Vec::with_capacity(64),
            ns_hash: 0,
            has_ns: false,
            tables: Vec::new(),
        }
    }

    /// Registers (or finds) a state; returns its index.
    pub fn register<V: Serialize + DeserializeOwned + Clone + Send + 'static>(
        &mut self,
        name: &str,
        kind: StateKind,
        ttl: Option<StateTtlConfig>,
    ) -> Result<usize, StateError> {
        if let Some(i) = self.tables.iter().position(|t| t.name() == name) {
            let t = &self.tables[i];
            if t.kind() != kind || t.type_name() != std::any::type_name::<V>() {
                return Err(StateError::Conflict {
                    name: name.to_string(),
                    existing: format!("{:?} of {}", t.kind(), t.type_name()),
                });
            }
            return Ok(i);
        }
        let groups = self.range.len() as usize;
        self.tables.push(Box::new(TypedTable::<V>::new(
            name,
            kind,
            groups,
            self.hasher.clone(),
            ttl,
        )));
        Ok(self.tables.len() - 1)
    }

    /// Sets the current key (already encoded) and its key group.
    pub fn set_key(&mut self, key_group: KeyGroup) -> Result<(), StateError> {
        if !self.range.contains(key_group) {
            return Err(StateError::Internal(format!(
                "key group {key_group} is not in this subtask's range {}..={}",
                self.range.start, self.range.end
            )));
        }
        self.group = (key_group.0 - self.range.start) as usize;
        self.key_hash = self.hasher.hash_one(self.key.as_slice());
        self.has_key = true;
        self.has_ns = false;
        Ok(())
    }

    /// Makes `namespace` the current key's namespace.
    pub fn set_namespace<N: Serialize + ?Sized>(
        &mut self,
        namespace: &N,
    ) -> Result<(), StateError> {
        key_and_namespace(&self.key, namespace, &mut self.ns_key)?;
        self.ns_hash = self.hasher.hash_one(self.ns_key.as_slice());
        self.has_ns = true;
        Ok(())
    }
}
