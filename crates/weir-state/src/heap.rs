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
use crate::key_group::{KeyGroup, KeyGroupRange, StableHash};
use crate::snapshot::KeyedStateSnapshot;
use crate::ttl::{StateTtlConfig, StateVisibility, UpdateType};

use std::hash::BuildHasher;

use crate::key_locality::KeyLocality;
use crate::key_table::{Entry, KeyTable};

/// The hash of encoded keys, fixed per backend.
#[derive(Clone, Default)]
pub(crate) struct KeyHasher(foldhash::fast::RandomState);

impl KeyHasher {
    /// The hash of the encoded key `key`.
    ///
    /// A key is hashed just after it is encoded, from bytes written one or
    /// a few at a time. A general hash reads them back as wider words,
    /// and each such read waited for the writes under it to reach the
    /// cache (a failed store-to-load forwarding): two fifths of preparing
    /// a batch's keys on Nexmark q4. A key of up to eight bytes (nearly
    /// every integer key) is gathered a byte at a time into a word, which
    /// is hashed with its length.
    #[inline]
    pub fn hash_key(&self, key: &[u8]) -> u64 {
        if key.len() <= 8 {
            let word = key
                .iter()
                .enumerate()
                .fold(0u64, |w, (i, &b)| w | (u64::from(b) << (8 * i)));
            self.0.hash_one((word, key.len() as u8))
        } else {
            self.0.hash_one(key)
        }
    }
}

/// One registered state of a backend, its value type erased.
pub(crate) trait StateTable: Send {
    fn name(&self) -> &str;
    fn kind(&self) -> StateKind;
    fn type_name(&self) -> &'static str;
    fn as_any_mut(&mut self) -> &mut dyn Any;
    fn as_any(&self) -> &dyn Any;
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
    /// Starts loading into cache the entry a key hashed to `hash` in key
    /// group offset `group` most likely has (a hint: nothing changes).
    fn prefetch(&self, group: usize, hash: u64);
    /// Starts loading into cache what that entry points to: the entry
    /// itself where the table keeps entries apart from its slots, or the
    /// bytes of its key where they are kept apart from it; pays once the
    /// slot is in cache.
    fn prefetch_second(&self, group: usize, hash: u64);
    /// Whether the table is past the caches, so that prefetching pays (for
    /// one that fits, finding the address costs more than it saves).
    fn prefetch_pays(&self) -> bool;
}

/// How many records ahead of the one in process a key's entries are
/// prefetched: enough to cover a memory access with the work of the
/// records between, few enough that the lines stay in the first-level
/// cache. Prefetching a whole batch at once instead stalls on the CPU's
/// limit of outstanding misses, with no work to overlap.
const PREFETCH_DISTANCE: usize = 16;

/// Size of a state's tables (all key groups) from which prefetching pays:
/// tables past the second-level cache of a core.
const PREFETCH_MIN_BYTES: usize = 1 << 20;

/// The values of one state, by key group (offset in the backend's range),
/// then by encoded key.
pub(crate) struct TypedTable<V> {
    name: String,
    kind: StateKind,
    hasher: KeyHasher,
    pub ttl: Option<StateTtlConfig>,
    /// Per key group: key, value, and when the value was last touched (for
    /// TTL; unused without).
    groups: Vec<KeyTable<V>>,
    /// Incremental TTL cleanup: the next key group to sweep, and how many
    /// entries accesses have paid for so far.
    cleanup_cursor: usize,
    cleanup_budget: usize,
    /// Slots of all key groups' tables.
    slots: usize,
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
            groups: (0..groups).map(|_| KeyTable::default()).collect(),
            cleanup_cursor: 0,
            cleanup_budget: 0,
            slots: 0,
        }
    }

    /// Whether an entry touched at `stamp` reads as absent at `now`.
    #[inline]
    fn hidden(&self, stamp: i64, now: i64) -> bool {
        self.ttl.is_some_and(|t| {
            t.visibility == StateVisibility::NeverReturnExpired && t.is_expired(stamp, now)
        })
    }

    /// The value of the key hashed to `hash` in key group offset `group`
    /// as it is held, expired or not, its time-to-live left alone: found
    /// by the hash alone (see [`KeyTable::find_by_hash`]), for a hint.
    #[inline]
    pub fn peek(&self, group: usize, hash: u64) -> Option<&V> {
        self.groups.get(group)?.find_by_hash(hash).map(|e| &e.value)
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

    #[inline(always)]
    fn access(
        &mut self,
        group: usize,
        hash: u64,
        key: &[u8],
        now: i64,
        write: bool,
    ) -> Option<&mut V> {
        match self.ttl {
            None => self.groups[group].find_mut(hash, key).map(|e| &mut e.value),
            Some(ttl) => self.access_expiring(ttl, group, hash, key, now, write),
        }
    }

    /// `access` of a state with a time-to-live. Kept out of line: inlined,
    /// it made `access` too large to inline into more than one caller,
    /// and states without a time-to-live paid for it.
    #[inline(never)]
    fn access_expiring(
        &mut self,
        ttl: StateTtlConfig,
        group: usize,
        hash: u64,
        key: &[u8],
        now: i64,
        write: bool,
    ) -> Option<&mut V> {
        if ttl.cleanup_in_background && ttl.incremental_cleanup_size > 0 {
            self.clean_up_incrementally(ttl, now);
        }
        let hidden = match self.groups[group].find(hash, key) {
            None => return None,
            Some(e) => self.hidden(e.stamp, now),
        };
        if hidden {
            self.remove(group, hash, key);
            return None;
        }
        let entry = self.groups[group].find_mut(hash, key)?;
        if write || ttl.update_type == UpdateType::OnReadAndWrite {
            entry.stamp = now;
        }
        Some(&mut entry.value)
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
        table.retain(|e| !ttl.is_expired(e.stamp, now));
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
        let e = self.remove(group, hash, key)?;
        let hidden = self.hidden(e.stamp, now);
        Some((e.key, (!hidden).then_some(e.value)))
    }

    #[inline]
    fn remove(&mut self, group: usize, hash: u64, key: &[u8]) -> Option<Entry<V>> {
        self.groups[group].remove(hash, key)
    }

    /// Inserts a key known to be absent, touched at `now`.
    #[inline]
    pub fn insert(&mut self, group: usize, hash: u64, key: KeyBytes, value: V, now: i64) {
        let table = &mut self.groups[group];
        let before = table.slots();
        table.insert_unique(Entry {
            hash,
            key,
            value,
            stamp: now,
        });
        // Tables only grow when inserting.
        self.slots += table.slots() - before;
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
    fn as_any(&self) -> &dyn Any {
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
            for e in table.iter() {
                if skip_expired.is_some_and(|t| t.is_expired(e.stamp, now)) {
                    continue;
                }
                out.push((
                    e.key.as_slice().to_vec(),
                    encode_value(&(e.stamp, &e.value))?,
                ));
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
                for e in table.iter() {
                    if skip_expired.is_some_and(|t| t.is_expired(e.stamp, now)) {
                        continue;
                    }
                    entries.push((
                        kg,
                        e.key.as_slice().to_vec(),
                        encode_value(&(e.stamp, &e.value))?,
                    ));
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
        let hash = self.hasher.hash_key(key);
        let (stamp, value): (i64, V) = decode_value(value)?;
        self.remove(group, hash, key);
        self.insert(group, hash, key.into(), value, stamp);
        Ok(())
    }
    fn len(&self) -> usize {
        self.groups.iter().map(KeyTable::len).sum()
    }
    fn keys(&self, f: &mut dyn FnMut(usize, &[u8])) {
        for (group, table) in self.groups.iter().enumerate() {
            for e in table.iter() {
                f(group, e.key.as_slice());
            }
        }
    }
    fn clear_key(&mut self, group: usize, hash: u64, key: &[u8]) {
        self.remove(group, hash, key);
    }
    #[inline]
    fn prefetch(&self, group: usize, hash: u64) {
        if let Some(table) = self.groups.get(group) {
            table.prefetch(hash);
        }
    }
    #[inline]
    fn prefetch_second(&self, group: usize, hash: u64) {
        if let Some(table) = self.groups.get(group) {
            table.prefetch_second(hash);
        }
    }
    fn prefetch_pays(&self) -> bool {
        self.slots * KeyTable::<V>::SLOT_BYTES >= PREFETCH_MIN_BYTES
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
    /// The tables declared without a namespace: the ones a key alone finds
    /// (namespaced ones are hashed with their namespace).
    keyed_tables: Vec<usize>,
    /// The keys of the batch being processed, encoded and hashed once.
    prepared: PreparedKeys,
    /// Whether the batch's keys are prefetched (a state is big, and the
    /// keys are not ones whose entries the caches still hold).
    prefetching: bool,
    /// Which keys were processed lately: whether the caches likely hold
    /// the entries of the keys to come.
    locality: KeyLocality,
}

/// Keys encoded back to back, with their key group and hash.
#[derive(Default)]
struct PreparedKeys {
    bytes: Vec<u8>,
    keys: Vec<PreparedKey>,
}

struct PreparedKey {
    key_group: KeyGroup,
    hash: u64,
    start: usize,
    end: usize,
}

/// From how many keys a backend's tables are freed on a thread of their
/// own: below it, freeing them takes less than a millisecond or so.
const FREED_APART: usize = 100_000;

impl Drop for HeapBackend {
    /// Large tables are freed on a thread of their own, so that an
    /// operator (and its job) ends without waiting for millions of small
    /// frees: a regular join's rows kept for ever took a fifth of a
    /// bounded Nexmark q3's run to free. They hold memory only (no files,
    /// no connections), so nothing can observe when they are freed but
    /// the process's size. (Flink's heap state is left to its garbage
    /// collector in the same way.)
    fn drop(&mut self) {
        let keys: usize = self.tables.iter().map(|t| t.len()).sum();
        if keys < FREED_APART {
            return;
        }
        let tables = std::mem::take(&mut self.tables);
        // Without a thread (the system is out of them), they are freed here.
        let _ = std::thread::Builder::new()
            .name("weir-state-free".into())
            .spawn(move || drop(tables));
    }
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
            keyed_tables: Vec::new(),
            prepared: PreparedKeys::default(),
            prefetching: false,
            locality: KeyLocality::default(),
        }
    }

    /// Registers (or finds) a state; returns its index.
    pub fn register<V: Serialize + DeserializeOwned + Clone + Send + 'static>(
        &mut self,
        name: &str,
        kind: StateKind,
        ttl: Option<StateTtlConfig>,
        namespaced: bool,
    ) -> Result<usize, StateError> {
        let id = self.register_table::<V>(name, kind, ttl)?;
        if !namespaced && !self.keyed_tables.contains(&id) {
            self.keyed_tables.push(id);
        }
        Ok(id)
    }

    fn register_table<V: Serialize + DeserializeOwned + Clone + Send + 'static>(
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
        let hash = self.hasher.hash_key(self.key.as_slice());
        self.set_key_hashed(key_group, hash)
    }

    /// Sets the current key (already encoded), its key group and its hash.
    #[inline]
    fn set_key_hashed(&mut self, key_group: KeyGroup, hash: u64) -> Result<(), StateError> {
        if !self.range.contains(key_group) {
            return Err(StateError::Internal(format!(
                "key group {key_group} is not in this subtask's range {}..={}",
                self.range.start, self.range.end
            )));
        }
        self.group = (key_group.0 - self.range.start) as usize;
        self.key_hash = hash;
        self.locality.observe(hash);
        self.has_key = true;
        self.has_ns = false;
        Ok(())
    }

    /// Encodes and hashes `key` (in `key_group`) as the key of a record
    /// soon to be processed, and starts loading the values it has in the
    /// states declared without a namespace into cache. `set_prepared` makes
    /// it the current key later without encoding or hashing it again.
    #[inline]
    pub fn prepare<K: Serialize + StableHash + ?Sized>(
        &mut self,
        key: &K,
        key_group: KeyGroup,
    ) -> Result<(), StateError> {
        let start = self.prepared.bytes.len();
        crate::codec::append_state_key(key, &mut self.prepared.bytes)?;
        let hash = self.hasher.hash_key(&self.prepared.bytes[start..]);
        self.push_prepared(start, key_group, hash);
        Ok(())
    }

    /// [`HeapBackend::prepare`] for a key already encoded (where it was
    /// made, on another thread).
    #[inline]
    pub fn prepare_encoded(&mut self, encoded: &[u8], key_group: KeyGroup) {
        let start = self.prepared.bytes.len();
        self.prepared.bytes.extend_from_slice(encoded);
        // Hashed where it was read from, not from its copy just written.
        let hash = self.hasher.hash_key(encoded);
        self.push_prepared(start, key_group, hash);
    }

    /// Records the key encoded in `prepared.bytes` from `start` on as the
    /// next prepared key.
    #[inline]
    fn push_prepared(&mut self, start: usize, key_group: KeyGroup, hash: u64) {
        self.prepared.keys.push(PreparedKey {
            key_group,
            hash,
            start,
            end: self.prepared.bytes.len(),
        });
        // The first keys' entries start loading now, each later one while
        // the key `PREFETCH_DISTANCE` before it is processed.
        if self.prefetching && self.prepared.keys.len() <= PREFETCH_DISTANCE {
            self.prefetch(self.prepared.keys.len() - 1);
        }
    }

    /// Starts loading prepared key `index`'s entries into cache.
    #[inline]
    fn prefetch(&self, index: usize) {
        self.prefetch_with(index, |table, group, hash| table.prefetch(group, hash));
    }

    /// Starts loading what prepared key `index`'s slots point to (entries
    /// kept apart from their slots, long keys' bytes) into cache: half the
    /// distance of [`HeapBackend::prefetch`] ahead, when the slots have
    /// arrived.
    #[inline]
    fn prefetch_second(&self, index: usize) {
        self.prefetch_with(index, |table, group, hash| {
            table.prefetch_second(group, hash)
        });
    }

    #[inline(always)]
    fn prefetch_with(&self, index: usize, f: impl Fn(&dyn StateTable, usize, u64)) {
        let Some((group, p)) = self.prepared_in_range(index) else {
            return;
        };
        for &id in &self.keyed_tables {
            if let Some(table) = self.tables.get(id) {
                f(table.as_ref(), group, p.hash);
            }
        }
    }

    /// Prepared key `index` and its key group's offset in the backend's
    /// range, if it is prepared and in the range.
    #[inline(always)]
    fn prepared_in_range(&self, index: usize) -> Option<(usize, &PreparedKey)> {
        let p = self.prepared.keys.get(index)?;
        self.range
            .contains(p.key_group)
            .then(|| ((p.key_group.0 - self.range.start) as usize, p))
    }

    /// The value prepared key `index` has in state `id` (one declared
    /// without a namespace), as it is held (see [`TypedTable::peek`]),
    /// without making the key current: for looking ahead at what a later
    /// key's processing will read. Found by the key's hash alone: looking
    /// ahead at thousands of keys a batch, comparing a long key's bytes
    /// waited for them (q16's 27-byte keys: 7 % of its rate), and another
    /// key of the same 64-bit hash would only have its lines loaded.
    #[inline]
    pub fn prepared_value<V: 'static>(&self, id: usize, index: usize) -> Option<&V> {
        if !self.keyed_tables.contains(&id) {
            return None;
        }
        let (group, p) = self.prepared_in_range(index)?;
        let table = self
            .tables
            .get(id)?
            .as_any()
            .downcast_ref::<TypedTable<V>>()?;
        table.peek(group, p.hash)
    }

    /// Forgets the prepared keys (a new batch begins).
    pub fn clear_prepared(&mut self) {
        self.prepared.bytes.clear();
        self.prepared.keys.clear();
    }

    /// Whether prefetching pays: a state declared without a namespace is
    /// past the caches, and the keys lately processed were not mostly
    /// ones processed shortly before (whose entries the caches hold, see
    /// [`KeyLocality`]). Remembered for the batch about to be prepared.
    pub fn refresh_prefetching(&mut self) -> bool {
        let recent = self.locality.mostly_recent();
        self.prefetching = !recent
            && self
                .keyed_tables
                .iter()
                .any(|&id| self.tables.get(id).is_some_and(|t| t.prefetch_pays()));
        self.prefetching
    }

    /// Makes prepared key `index` the current key; `false` if there is none.
    #[inline]
    pub fn set_prepared(&mut self, index: usize) -> Result<bool, StateError> {
        if self.prefetching {
            self.prefetch(index + PREFETCH_DISTANCE);
            self.prefetch_second(index + PREFETCH_DISTANCE / 2);
        }
        let Some(p) = self.prepared.keys.get(index) else {
            return Ok(false);
        };
        let (key_group, hash) = (p.key_group, p.hash);
        self.key.clear();
        self.key
            .extend_from_slice(&self.prepared.bytes[p.start..p.end]);
        self.set_key_hashed(key_group, hash)?;
        Ok(true)
    }

    /// Makes `namespace` the current key's namespace.
    pub fn set_namespace<N: Serialize + ?Sized>(
        &mut self,
        namespace: &N,
    ) -> Result<(), StateError> {
        key_and_namespace(&self.key, namespace, &mut self.ns_key)?;
        self.ns_hash = self.hasher.hash_key(self.ns_key.as_slice());
        self.has_ns = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A short key is hashed from its bytes and its length: keys that
    /// differ only in trailing zero bytes hash apart, and a key hashes
    /// alike wherever it is hashed (a table and its backend share one
    /// hasher).
    #[test]
    fn short_keys_hash_by_their_bytes_and_length() {
        let hasher = KeyHasher::default();
        let copy = hasher.clone();
        let keys: [&[u8]; 7] = [
            &[],
            &[0],
            &[0, 0],
            &[1, 2],
            &[1, 2, 0],
            &[1, 2, 3, 4, 5, 6, 7, 8],
            &[1, 2, 3, 4, 5, 6, 7, 8, 0],
        ];
        let hashes: Vec<u64> = keys.iter().map(|k| hasher.hash_key(k)).collect();
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(copy.hash_key(k), hashes[i], "{k:?}");
            for j in 0..i {
                assert_ne!(hashes[i], hashes[j], "{k:?} and {:?}", keys[j]);
            }
        }
    }

    fn filled<V: Serialize + DeserializeOwned + Clone + Send + 'static>(
        keys: u64,
        value: V,
    ) -> TypedTable<V> {
        let mut table = TypedTable::new("s", StateKind::Value, 1, KeyHasher::default(), None);
        for k in 0..keys {
            let key = KeyBytes::from(&k.to_le_bytes()[..]);
            table.insert(0, k, key, value.clone(), 0);
        }
        table
    }

    /// A prepared key's value is seen without making it the current key;
    /// a key without one, an index not prepared and a namespaced state
    /// show nothing.
    #[test]
    fn prepared_keys_values_are_peeked_at_without_changing_the_key() -> Result<(), StateError> {
        use crate::{KeyGroupRange, KeyedStateStore, ValueStateDescriptor};
        let s = KeyedStateStore::heap(128, KeyGroupRange { start: 0, end: 127 });
        let v = s.value_state(&ValueStateDescriptor::<String>::new("v"))?;
        let windows = s.per_namespace();
        let w = windows.value_state(&ValueStateDescriptor::<u64>::new("w"))?;
        for key in ["a", "b"] {
            s.set_current_key(key)?;
            v.update(key.repeat(3))?;
            s.set_current_namespace(&1u64)?;
            w.update(9)?;
        }
        s.set_current_key("a")?;
        s.prepare_keys(["b", "c", "a"].iter())?;
        let peeked = |index| -> Result<Option<String>, StateError> {
            let mut seen = None;
            v.peek_prepared(index, |value| seen = Some(value.clone()))?;
            Ok(seen)
        };
        assert_eq!(peeked(0)?.as_deref(), Some("bbb"));
        assert_eq!(peeked(1)?, None, "c has no value");
        assert_eq!(peeked(2)?.as_deref(), Some("aaa"));
        assert_eq!(peeked(3)?, None, "not prepared");
        let mut called = false;
        w.peek_prepared(0, |_| called = true)?;
        assert!(!called, "a namespaced state is not peeked at");
        assert_eq!(
            v.value()?.as_deref(),
            Some("aaa"),
            "the current key is still a"
        );
        Ok(())
    }

    /// A state past the caches is prefetched for keys spread over it, not
    /// for keys going round a few (whose entries the caches hold).
    #[test]
    fn prefetching_pays_for_spread_keys_not_for_recent_ones() -> Result<(), StateError> {
        use crate::{KeyGroupRange, KeyedStateStore, ValueStateDescriptor};
        let s = KeyedStateStore::heap(128, KeyGroupRange { start: 0, end: 127 });
        let v = s.value_state(&ValueStateDescriptor::<[u64; 16]>::new("v"))?;
        for k in 0..20_000u64 {
            s.set_current_key(&k)?;
            v.update([k; 16])?;
        }
        assert!(s.prefetch_pays()?, "new keys");
        for k in (0..2_000u64).map(|i| i % 100) {
            s.set_current_key(&k)?;
        }
        assert!(!s.prefetch_pays()?, "keys going round a hundred");
        for k in (0..2_000u64).map(|i| i * 7_919 % 20_000) {
            s.set_current_key(&k)?;
        }
        assert!(s.prefetch_pays()?, "keys spread over the state");
        Ok(())
    }

    #[test]
    fn prefetching_pays_from_a_tables_size_in_bytes_not_its_key_count() {
        // The same 5 000 keys: with 8-byte values the table fits a core's
        // second-level cache, with 128-byte values (a SQL group's key and
        // accumulators are of that order) it does not.
        assert!(!filled(5_000, 0u64).prefetch_pays());
        assert!(filled(5_000, [0u64; 16]).prefetch_pays());
    }
}
