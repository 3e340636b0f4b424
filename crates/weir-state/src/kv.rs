//! Keyed state in a sorted key-value store, as bytes (the RocksDB backend).
//!
//! Layout of a store key: `state id (2 bytes, big endian) | key group
//! (2 bytes, big endian) | encoded key`, so one state's key-group range is
//! one contiguous scan. A value is the versioned encoding of `(ttl stamp,
//! value)`. List state keeps a key's whole list in one value; map state
//! keeps one store entry per map entry (see [`crate::map_layout`]).

use serde::de::{DeserializeOwned, IgnoredAny};
use serde::Serialize;

use crate::clock::SharedClock;
use crate::codec::{decode_value, encode_value_into};
use crate::descriptor::StateKind;
use crate::error::StateError;
use crate::key_group::{KeyGroup, KeyGroupRange};
use crate::map_layout::{entries_prefix, group_prefix, split_portable, PortableEntries};
use crate::snapshot::NativeFiles;
use crate::ttl::{StateTtlConfig, StateVisibility, UpdateType};
use crate::write_back::WriteBackCache;

/// Called for each entry of a scan, with its key and value.
pub type ScanFn<'a> = dyn FnMut(&[u8], &[u8]) -> Result<(), StateError> + 'a;

/// Called for each key of a [`KvStore::multi_get`], with its index and
/// value.
pub type MultiGetFn<'a> = dyn FnMut(usize, Option<&[u8]>) -> Result<(), StateError> + 'a;

/// Encoded `(key, value)` pairs.
pub(crate) type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

/// A store's own statistics (for RocksDB: memtable size, pending
/// compaction bytes, block cache use and hits), read when metrics are
/// scraped, never on the hot path; shareable with other threads.
pub trait StoreStatistics: Send + Sync {
    /// `(name, value)` pairs, names in Prometheus style
    /// (`rocksdb_cur_size_all_mem_tables`, after RocksDB's property names
    /// as Flink's RocksDB metrics); empty once the store is closed.
    fn read(&self) -> Vec<(&'static str, u64)>;
}

/// A sorted key-value store holding keyed state. By implementing this
/// trait, you promise that `scan_prefix` visits every key starting with the
/// prefix, in byte order.
pub trait KvStore: Send {
    /// The value of `key`.
    fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>, StateError>;
    /// The values of `keys`, which are in byte order and distinct: calls
    /// `f(i, value)` for the `i`-th. Stores that look up many keys faster
    /// together than one by one (sharing filter, index and block reads
    /// between neighbours) override this.
    fn multi_get(&mut self, keys: &[&[u8]], f: &mut MultiGetFn<'_>) -> Result<(), StateError> {
        for (i, key) in keys.iter().enumerate() {
            f(i, self.get(key)?.as_deref())?;
        }
        Ok(())
    }
    /// A handle to the store's own statistics, if it keeps any.
    fn statistics(&self) -> Option<std::sync::Arc<dyn StoreStatistics>> {
        None
    }
    /// Sets `key` to `value`.
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<(), StateError>;
    /// Removes `key`.
    fn delete(&mut self, key: &[u8]) -> Result<(), StateError>;
    /// Applies puts (`Some`) and deletes (`None`) together; stores with
    /// write batches override this.
    fn write_batch(&mut self, ops: &[(&[u8], Option<&[u8]>)]) -> Result<(), StateError> {
        for (key, value) in ops {
            match value {
                Some(v) => self.put(key, v)?,
                None => self.delete(key)?,
            }
        }
        Ok(())
    }

    /// Calls `f(key, value)` for every key starting with `prefix`.
    fn scan_prefix(&mut self, prefix: &[u8], f: &mut ScanFn<'_>) -> Result<(), StateError>;

    /// The store's own checkpoint of everything written so far: its files
    /// in a new local directory (see [`NativeFiles`]); `None` if the store
    /// has no such thing, and snapshots read it out entry by entry.
    fn native_checkpoint(&mut self) -> Result<Option<NativeFiles>, StateError> {
        Ok(None)
    }

    /// Tells the store that values of state `state_id` (see
    /// [`stored_state_id`]) expire as `ttl` says, counted from their
    /// [`ttl_stamp`], so it may drop expired ones on its own. Stores
    /// without background work ignore it.
    fn expire_in_background(&mut self, state_id: u16, ttl: StateTtlConfig) {
        let _ = (state_id, ttl);
    }
}

/// The id of the state a stored key belongs to (its first two bytes).
pub fn stored_state_id(key: &[u8]) -> Option<u16> {
    key.get(..2).map(|b| u16::from_be_bytes([b[0], b[1]]))
}

/// The time-to-live stamp of a stored value (ms of processing time when it
/// was last written, or read with `OnReadAndWrite`).
pub fn ttl_stamp(value: &[u8]) -> Result<i64, StateError> {
    let (stamp, _): (i64, IgnoredAny) = decode_value(value)?;
    Ok(stamp)
}

pub(crate) struct KvTable {
    pub name: String,
    pub kind: StateKind,
    pub type_name: &'static str,
    pub ttl: Option<StateTtlConfig>,
    /// Whether a whole value of this state was read since the last
    /// [`preload`](KvBackend::finish_preload): the next batch's keys are
    /// then loaded for it ahead of their records.
    pub read_recently: bool,
    /// Restored from a store's own files and not declared yet: its id is
    /// fixed by the files, its type by the first declaration.
    pub restored: bool,
}

/// Keyed state of one operator subtask in a [`KvStore`].
pub(crate) struct KvBackend {
    pub store: Box<dyn KvStore>,
    pub range: KeyGroupRange,
    pub max_parallelism: u32,
    pub clock: SharedClock,
    pub key: Vec<u8>,
    pub key_group: KeyGroup,
    pub has_key: bool,
    /// The current key followed by the current namespace; namespaced
    /// handles use it instead of `key` (`scoped`).
    pub ns_key: Vec<u8>,
    pub has_ns: bool,
    pub scoped: bool,
    pub tables: Vec<KvTable>,
    db_key: Vec<u8>,
    /// Reused buffer of an encoded value.
    value_buf: Vec<u8>,
    cache: WriteBackCache,
    /// Store keys to preload for the batch being prepared, back to back,
    /// and where each ends.
    preload_keys: Vec<u8>,
    preload_ends: Vec<usize>,
    /// The cache's store reads when preloading was last considered.
    misses_seen: u64,
}

/// The store-key prefix of state `id`'s whole values in `key_group`.
pub(crate) fn prefix(id: usize, key_group: KeyGroup) -> [u8; 4] {
    let id = (id as u16).to_be_bytes();
    let kg = (key_group.0 as u16).to_be_bytes();
    [id[0], id[1], kg[0], kg[1]]
}

impl KvBackend {
    pub fn new(
        store: Box<dyn KvStore>,
        max_parallelism: u32,
        range: KeyGroupRange,
        clock: SharedClock,
        cache_capacity_bytes: usize,
    ) -> Self {
        KvBackend {
            store,
            range,
            max_parallelism,
            clock,
            key: Vec::with_capacity(64),
            key_group: KeyGroup(0),
            has_key: false,
            ns_key: Vec::with_capacity(64),
            has_ns: false,
            scoped: false,
            tables: Vec::new(),
            db_key: Vec::with_capacity(96),
            value_buf: Vec::with_capacity(64),
            cache: WriteBackCache::new(cache_capacity_bytes),
            preload_keys: Vec::new(),
            preload_ends: Vec::new(),
            misses_seen: 0,
        }
    }

    /// Whether to preload the next batch's values: the cache is on, some
    /// state's values are read record by record, and values had to be read
    /// from the store since this was last asked (once every value is
    /// cached, preparing keys would only cost).
    pub fn preload_pays(&mut self) -> bool {
        let misses = self.cache.misses();
        let pays = self.cache.enabled()
            && misses != self.misses_seen
            && self.tables.iter().any(|t| t.read_recently);
        self.misses_seen = misses;
        pays
    }

    /// Starts collecting the keys of a batch to preload.
    pub fn begin_preload(&mut self) {
        self.preload_keys.clear();
        self.preload_ends.clear();
    }

    /// Adds `key` (encoded) in `key_group` to the batch to preload: its
    /// store key for each state read since the last preload.
    pub fn add_preload(&mut self, key: &[u8], key_group: KeyGroup) -> Result<(), StateError> {
        if !self.range.contains(key_group) {
            return Err(self.foreign_key_group(key_group));
        }
        for (id, t) in self.tables.iter().enumerate() {
            if t.read_recently {
                self.preload_keys.extend_from_slice(&prefix(id, key_group));
                self.preload_keys.extend_from_slice(key);
                self.preload_ends.push(self.preload_keys.len());
            }
        }
        Ok(())
    }

    /// Reads the values of the collected keys that are not cached from the
    /// store, sorted and together, into the cache: the batch's records then
    /// find them there instead of each waiting for its own read.
    pub fn finish_preload(&mut self) -> Result<(), StateError> {
        for t in &mut self.tables {
            t.read_recently = false;
        }
        let mut start = 0;
        let mut keys: Vec<&[u8]> = Vec::with_capacity(self.preload_ends.len());
        for &end in &self.preload_ends {
            keys.push(&self.preload_keys[start..end]);
            start = end;
        }
        self.cache.preload(&mut *self.store, &mut keys)
    }

    /// The error for a key outside this subtask's key groups.
    pub fn foreign_key_group(&self, key_group: KeyGroup) -> StateError {
        StateError::Internal(format!(
            "key group {key_group} is not in this subtask's range {}..={}",
            self.range.start, self.range.end
        ))
    }

    /// Writes every dirty cached value back to the store, so that it holds
    /// all state (before a scan or the store's own checkpoint).
    pub fn flush(&mut self) -> Result<(), StateError> {
        self.cache.write_back(&mut *self.store)
    }

    pub fn register<V>(
        &mut self,
        name: &str,
        kind: StateKind,
        ttl: Option<StateTtlConfig>,
    ) -> Result<usize, StateError> {
        let type_name = std::any::type_name::<V>();
        if let Some(i) = self.tables.iter().position(|t| t.name == name) {
            if self.tables[i].restored {
                if let Some(ttl) = ttl.filter(|t| t.cleanup_in_background) {
                    self.store.expire_in_background(i as u16, ttl);
                }
                let t = &mut self.tables[i];
                (t.kind, t.type_name, t.ttl, t.restored) = (kind, type_name, ttl, false);
                return Ok(i);
            }
            let t = &self.tables[i];
            if t.kind != kind || t.type_name != type_name {
                return Err(StateError::Conflict {
                    name: name.to_string(),
                    existing: format!("{:?} of {}", t.kind, t.type_name),
                });
            }
            return Ok(i);
        }
        if self.tables.len() >= usize::from(u16::MAX) {
            return Err(StateError::Internal(
                "too many states in one operator".into(),
            ));
        }
        let id = self.tables.len();
        if let Some(ttl) = ttl.filter(|t| t.cleanup_in_background) {
            self.store.expire_in_background(id as u16, ttl);
        }
        self.tables.push(KvTable {
            name: name.to_string(),
            kind,
            type_name,
            ttl,
            restored: false,
            read_recently: false,
        });
        Ok(id)
    }

    /// States whose ids the store's restored files fixed, in id order.
    pub fn reserve(&mut self, states: &[String]) {
        for name in states {
            self.tables.push(KvTable {
                name: name.clone(),
                kind: StateKind::Value,
                type_name: "",
                ttl: None,
                restored: true,
                read_recently: false,
            });
        }
    }

    /// The store's own checkpoint, after writing back the cache; with the
    /// state names in id order.
    pub fn native_snapshot(&mut self) -> Result<Option<(NativeFiles, Vec<String>)>, StateError> {
        self.flush()?;
        Ok(self
            .store
            .native_checkpoint()?
            .map(|files| (files, self.tables.iter().map(|t| t.name.clone()).collect())))
    }

    /// Puts the store key of the current key's value of state `id` in
    /// `db_key`.
    fn set_db_key(&mut self, id: usize) -> Result<(), StateError> {
        if !self.has_key {
            return Err(StateError::NotKeyed(format!("#{id}")));
        }
        self.db_key.clear();
        self.db_key.extend_from_slice(&prefix(id, self.key_group));
        let key = if self.scoped { &self.ns_key } else { &self.key };
        self.db_key.extend_from_slice(key);
        Ok(())
    }

    /// The current key's value of state `id`, applying TTL: a hidden expired
    /// value is deleted and reads as `None`; with `OnReadAndWrite` a read
    /// restarts the value's life.
    pub fn read<V: Serialize + DeserializeOwned>(
        &mut self,
        id: usize,
    ) -> Result<Option<V>, StateError> {
        let scoped = self.scoped;
        let ttl = match self.tables.get_mut(id) {
            Some(t) => {
                t.read_recently |= !scoped;
                t.ttl
            }
            None => None,
        };
        self.set_db_key(id)?;
        let Some((stamp, value)) =
            self.cache
                .read(&mut *self.store, &self.db_key, |bytes| match bytes {
                    Some(b) => decode_value::<(i64, V)>(b).map(Some),
                    None => Ok(None),
                })??
        else {
            return Ok(None);
        };
        if let Some(ttl) = ttl {
            let now = self.clock.now_ms();
            if ttl.is_expired(stamp, now) && ttl.visibility == StateVisibility::NeverReturnExpired {
                self.cache.write(&mut *self.store, &self.db_key, None)?;
                return Ok(None);
            }
            if ttl.update_type == UpdateType::OnReadAndWrite && !ttl.is_expired(stamp, now) {
                encode_value_into(&(now, &value), &mut self.value_buf)?;
                self.cache
                    .write(&mut *self.store, &self.db_key, Some(&self.value_buf))?;
            }
        }
        Ok(Some(value))
    }

    /// Sets the current key's value of state `id`.
    pub fn write<V: Serialize>(&mut self, id: usize, value: &V) -> Result<(), StateError> {
        let now = if self.tables.get(id).and_then(|t| t.ttl).is_some() {
            self.clock.now_ms()
        } else {
            0
        };
        encode_value_into(&(now, value), &mut self.value_buf)?;
        self.set_db_key(id)?;
        self.cache
            .write(&mut *self.store, &self.db_key, Some(&self.value_buf))
    }

    /// Removes the current key's value of state `id`.
    pub fn delete(&mut self, id: usize) -> Result<(), StateError> {
        self.set_db_key(id)?;
        self.cache.write(&mut *self.store, &self.db_key, None)
    }

    /// Removes the current key's value, or all its entries, of state `id`.
    pub fn clear_current(&mut self, id: usize) -> Result<(), StateError> {
        if self.is_map(id) {
            self.map_clear(id)
        } else {
            self.delete(id)
        }
    }

    /// Makes the access about to happen use the current key alone, or
    /// (`namespaced`) the current key and namespace.
    #[inline]
    pub fn enter_scope(&mut self, namespaced: bool) -> Result<(), StateError> {
        if namespaced && !(self.has_key && self.has_ns) {
            return Err(StateError::NotKeyed(
                "namespaced state used without a current namespace".into(),
            ));
        }
        self.scoped = namespaced;
        Ok(())
    }

    /// Makes `namespace` the current key's namespace.
    pub fn set_namespace<N: Serialize + ?Sized>(
        &mut self,
        namespace: &N,
    ) -> Result<(), StateError> {
        crate::heap::key_and_namespace(&self.key, namespace, &mut self.ns_key)?;
        self.has_ns = true;
        Ok(())
    }

    /// Puts the store key of the current key's entry `map_key` of map state
    /// `id` in `db_key`.
    fn set_entry_key<K: Serialize + ?Sized>(
        &mut self,
        id: usize,
        map_key: &K,
    ) -> Result<(), StateError> {
        if !self.has_key {
            return Err(StateError::NotKeyed(format!("#{id}")));
        }
        let key = if self.scoped { &self.ns_key } else { &self.key };
        entries_prefix(id, self.key_group, key, &mut self.db_key)?;
        encode_map_key(map_key, &mut self.db_key)
    }

    /// The current key's entry `map_key` of map state `id`: its stamp and
    /// value.
    pub fn map_get<K: Serialize + ?Sized, V: DeserializeOwned>(
        &mut self,
        id: usize,
        map_key: &K,
    ) -> Result<Option<(i64, V)>, StateError> {
        self.set_entry_key(id, map_key)?;
        self.cache.read(&mut *self.store, &self.db_key, |bytes| {
            bytes.map(decode_value::<(i64, V)>).transpose()
        })?
    }

    /// Sets the current key's entry `map_key` of map state `id`.
    pub fn map_put<K: Serialize + ?Sized, V: Serialize>(
        &mut self,
        id: usize,
        map_key: &K,
        stamp: i64,
        value: &V,
    ) -> Result<(), StateError> {
        encode_value_into(&(stamp, value), &mut self.value_buf)?;
        self.set_entry_key(id, map_key)?;
        self.cache
            .write_tracked(&mut *self.store, &self.db_key, Some(&self.value_buf))
    }

    /// Removes the current key's entry `map_key` of map state `id`.
    pub fn map_remove<K: Serialize + ?Sized>(
        &mut self,
        id: usize,
        map_key: &K,
    ) -> Result<(), StateError> {
        self.set_entry_key(id, map_key)?;
        self.cache
            .write_tracked(&mut *self.store, &self.db_key, None)
    }

    /// Every entry of the current key's map state `id`: key, stamp, value.
    pub fn map_entries<K: DeserializeOwned, V: DeserializeOwned>(
        &mut self,
        id: usize,
    ) -> Result<Vec<(K, i64, V)>, StateError> {
        let mut out = Vec::new();
        self.scan_map(id, &mut |map_key, v| {
            let map_key: K =
                rmp_serde::from_slice(map_key).map_err(|e| StateError::Codec(e.to_string()))?;
            let (stamp, value): (i64, V) = decode_value(v)?;
            out.push((map_key, stamp, value));
            Ok(())
        })?;
        Ok(out)
    }

    /// Removes the current key's whole map state `id`.
    pub fn map_clear(&mut self, id: usize) -> Result<(), StateError> {
        let mut map_keys = Vec::new();
        self.scan_map(id, &mut |map_key, _| {
            map_keys.push(map_key.to_vec());
            Ok(())
        })?;
        let prefix_len = self.db_key.len();
        for map_key in map_keys {
            self.db_key.truncate(prefix_len);
            self.db_key.extend_from_slice(&map_key);
            self.cache
                .write_tracked(&mut *self.store, &self.db_key, None)?;
        }
        Ok(())
    }

    /// Calls `f(map key, store value)` for every entry of the current key's
    /// map state `id`, after writing back the map entries written since the
    /// last such scan; leaves the entries' store-key prefix in `db_key`.
    fn scan_map(&mut self, id: usize, f: &mut ScanFn<'_>) -> Result<(), StateError> {
        if !self.has_key {
            return Err(StateError::NotKeyed(format!("#{id}")));
        }
        self.cache.write_back_tracked(&mut *self.store)?;
        let key = if self.scoped { &self.ns_key } else { &self.key };
        entries_prefix(id, self.key_group, key, &mut self.db_key)?;
        let prefix = &self.db_key;
        self.store
            .scan_prefix(prefix, &mut |k, v| f(&k[prefix.len()..], v))
    }

    fn is_map(&self, id: usize) -> bool {
        self.tables
            .get(id)
            .is_some_and(|t| t.kind == StateKind::Map)
    }

    /// `(key, value)` of every key of state `id` in `key_group`, maps in
    /// their portable form (see [`crate::map_layout`]).
    pub fn snapshot(&mut self, id: usize, key_group: KeyGroup) -> Result<Pairs, StateError> {
        let skip = self
            .tables
            .get(id)
            .and_then(|t| t.ttl)
            .filter(|t| t.cleanup_full_snapshot);
        let now = self.clock.now_ms();
        let expired = |v: &[u8]| -> Result<bool, StateError> {
            Ok(match skip {
                Some(ttl) => ttl.is_expired(ttl_stamp(v)?, now),
                None => false,
            })
        };
        // The store must hold every value before it is scanned.
        self.flush()?;
        if self.is_map(id) {
            let mut gather = PortableEntries::default();
            let mut entries = Vec::new();
            self.store
                .scan_prefix(&group_prefix(id, key_group), &mut |k, v| {
                    if !expired(v)? {
                        gather.push(k, v, &mut entries)?;
                    }
                    Ok(())
                })?;
            gather.finish(&mut entries);
            return Ok(entries.into_iter().map(|(_, _, k, v)| (k, v)).collect());
        }
        let mut out = Vec::new();
        self.store
            .scan_prefix(&prefix(id, key_group), &mut |k, v| {
                if !expired(v)? {
                    out.push((k[4..].to_vec(), v.to_vec()));
                }
                Ok(())
            })?;
        Ok(out)
    }

    /// Puts back an entry of state `id` (a map in its portable form).
    pub fn restore(
        &mut self,
        id: usize,
        key_group: KeyGroup,
        key: &[u8],
        value: &[u8],
    ) -> Result<(), StateError> {
        let mut db_key = Vec::with_capacity(key.len() + 16);
        if self.is_map(id) {
            entries_prefix(id, key_group, key, &mut db_key)?;
            let len = db_key.len();
            for (map_key, stored) in split_portable(value)? {
                db_key.truncate(len);
                db_key.extend_from_slice(map_key);
                self.cache
                    .write_tracked(&mut *self.store, &db_key, Some(&stored))?;
            }
            return Ok(());
        }
        db_key.extend_from_slice(&prefix(id, key_group));
        db_key.extend_from_slice(key);
        self.cache.write(&mut *self.store, &db_key, Some(value))
    }

    /// Number of keys of state `id`.
    pub fn len(&mut self, id: usize) -> Result<usize, StateError> {
        self.flush()?;
        let mut n = 0;
        let id_prefix = (id as u16).to_be_bytes();
        let is_map = self.is_map(id);
        let mut gather = PortableEntries::default();
        let mut maps = Vec::new();
        self.store.scan_prefix(&id_prefix, &mut |k, v| {
            if is_map {
                gather.push(k, v, &mut maps)?;
                // Only the count is wanted.
                n += maps.len();
                maps.clear();
            } else {
                n += 1;
            }
            Ok(())
        })?;
        gather.finish(&mut maps);
        Ok(n + maps.len())
    }
}

/// Writes a map key after `buf`'s contents as MessagePack (structs as
/// maps), as the portable form of a map writes it.
fn encode_map_key<K: Serialize + ?Sized>(key: &K, buf: &mut Vec<u8>) -> Result<(), StateError> {
    let mut ser = rmp_serde::Serializer::new(buf).with_struct_map();
    key.serialize(&mut ser)
        .map_err(|e| StateError::Codec(e.to_string()))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use super::*;
    use crate::clock::ManualClock;
    use crate::write_back::ENTRY_OVERHEAD;

    /// A sorted in-memory store that records the time-to-live it is told.
    #[derive(Default)]
    struct MemStore(BTreeMap<Vec<u8>, Vec<u8>>, Arc<Mutex<Vec<(u16, i64)>>>);

    impl KvStore for MemStore {
        fn expire_in_background(&mut self, state_id: u16, ttl: StateTtlConfig) {
            if let Ok(mut told) = self.1.lock() {
                told.push((state_id, ttl.ttl.as_millis() as i64));
            }
        }
        fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>, StateError> {
            Ok(self.0.get(key).cloned())
        }
        fn put(&mut self, key: &[u8], value: &[u8]) -> Result<(), StateError> {
            self.0.insert(key.to_vec(), value.to_vec());
            Ok(())
        }
        fn delete(&mut self, key: &[u8]) -> Result<(), StateError> {
            self.0.remove(key);
            Ok(())
        }
        fn scan_prefix(&mut self, prefix: &[u8], f: &mut ScanFn<'_>) -> Result<(), StateError> {
            for (k, v) in self.0.range(prefix.to_vec()..) {
                if !k.starts_with(prefix) {
                    break;
                }
                f(k, v)?;
            }
            Ok(())
        }
    }

    fn backend(cache_bytes: usize) -> KvBackend {
        KvBackend::new(
            Box::<MemStore>::default(),
            128,
            KeyGroupRange { start: 0, end: 127 },
            Arc::new(ManualClock::new(0)),
            cache_bytes,
        )
    }

    #[test]
    fn states_with_a_time_to_live_are_announced_to_the_store() -> Result<(), StateError> {
        let store = MemStore::default();
        let told = Arc::clone(&store.1);
        let mut b = KvBackend::new(
            Box::new(store),
            128,
            KeyGroupRange { start: 0, end: 127 },
            Arc::new(ManualClock::new(0)),
            0,
        );
        let ttl = StateTtlConfig::new_builder(Duration::from_secs(3));
        b.register::<u64>("plain", StateKind::Value, None)?;
        b.register::<u64>("expiring", StateKind::Value, Some(ttl.build()))?;
        b.register::<u64>(
            "kept",
            StateKind::Value,
            Some(ttl.disable_cleanup_in_background().build()),
        )?;
        assert_eq!(
            *told
                .lock()
                .map_err(|_| StateError::Internal("poisoned".into()))?,
            vec![(1, 3_000)]
        );
        Ok(())
    }

    fn set_key(b: &mut KvBackend, k: u64) {
        b.key.clear();
        b.key.extend_from_slice(&k.to_be_bytes());
        b.key_group = KeyGroup((k % 128) as u32);
        b.has_key = true;
    }

    #[test]
    fn blind_writes_keep_the_cache_within_its_bound() -> Result<(), StateError> {
        let cap = 16 << 10;
        let mut b = backend(cap);
        let id = b.register::<u64>("count", StateKind::Value, None)?;
        let mut peak = 0;
        for k in 0..20_000u64 {
            set_key(&mut b, k);
            b.write(id, &k)?;
            peak = peak.max(b.cache.bytes());
        }
        assert!(peak <= cap, "cache grew to {peak} bytes");
        assert!(b.cache.len() * ENTRY_OVERHEAD <= cap);
        // Every value survives eviction and write-back.
        for k in 0..20_000u64 {
            set_key(&mut b, k);
            assert_eq!(b.read::<u64>(id)?, Some(k));
        }
        Ok(())
    }

    /// A map is stored one store entry per map entry: a put writes one
    /// entry, not the map.
    #[test]
    fn map_entries_are_stored_one_by_one() -> Result<(), StateError> {
        let mut b = backend(0);
        let id = b.register::<()>("m", StateKind::Map, None)?;
        set_key(&mut b, 7);
        for i in 0..1_000u32 {
            b.map_put(id, &i, 0, &format!("v{i}"))?;
        }
        set_key(&mut b, 8);
        b.map_put(id, &0u32, 0, &"other key".to_string())?;
        set_key(&mut b, 7);
        b.map_put(id, &5u32, 0, &"five".to_string())?;
        assert_eq!(b.map_get::<u32, String>(id, &5)?, Some((0, "five".into())));
        assert_eq!(b.map_entries::<u32, String>(id)?.len(), 1_000);
        assert_eq!(b.len(id)?, 2);
        let mut stored = 0;
        b.store
            .scan_prefix(&(id as u16).to_be_bytes(), &mut |_, v| {
                stored += 1;
                assert!(v.len() < 32, "a stored value of {} bytes", v.len());
                Ok(())
            })?;
        assert_eq!(stored, 1_001);
        Ok(())
    }
}
