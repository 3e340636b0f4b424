//! The keyed state of one operator subtask, as the operator and the user's
//! functions share it, and the typed handles functions use.

use std::collections::HashMap;
use std::hash::Hash;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::task_lock::{TaskLock, TaskLockGuard, TaskLockHold};

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::clock::{system_clock, SharedClock};
use crate::codec::encode_state_key;
use crate::descriptor::{
    AggregateFns, AggregatingStateDescriptor, ListStateDescriptor, MapStateDescriptor, ReduceFn,
    ReducingStateDescriptor, StateKind, StateValue, ValueStateDescriptor,
};
use crate::error::StateError;
use crate::heap::{DeferredState, HeapBackend, TypedTable};
use crate::key_group::{key_group_of_hash, KeyGroup, KeyGroupRange, StableHash};
use crate::kv::{KvBackend, KvStore};
use crate::snapshot::{KeyedStateSnapshot, NativeFiles};
use crate::ttl::{StateTtlConfig, StateVisibility, UpdateType};

/// Where the state lives: typed in memory, or as bytes in a key-value store.
enum Backend {
    Heap(HeapBackend),
    Kv(KvBackend),
}

struct Inner {
    backend: TaskLock<Backend>,
    /// The key-value store's statistics, if it keeps any.
    statistics: Option<Arc<dyn crate::kv::StoreStatistics>>,
    // Whether any state was registered: operators skip encoding the key of
    // every record for functions without state.
    in_use: AtomicBool,
    // Restored entries of states not declared yet: as in Flink, state comes
    // back when a function declares it.
    pending_restore: Mutex<Vec<KeyedStateSnapshot>>,
    // States declared through a namespaced view (cleared with a namespace).
    namespaced: Mutex<Vec<usize>>,
}

/// The store held by one thread: see [`KeyedStateStore::hold`].
pub struct StateHold<'a> {
    _hold: TaskLockHold<'a, Backend>,
}

/// The keyed state of one operator subtask (Flink's keyed state backend),
/// shared between the operator, which sets the current key for each record,
/// and the handles of the user's functions. All access happens on the
/// subtask's thread; the lock is never contended.
#[derive(Clone)]
pub struct KeyedStateStore {
    inner: Arc<Inner>,
    // Whether handles made through this view are scoped to the current
    // namespace as well as the current key.
    namespaced: bool,
}

/// One snapshot entry: the state's name, the key group, the encoded key and
/// the encoded value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateEntry {
    /// Name of the state.
    pub state: String,
    /// Key group of the key.
    pub key_group: KeyGroup,
    /// The key, encoded.
    pub key: Vec<u8>,
    /// The value, encoded (version byte first).
    pub value: Vec<u8>,
}

impl std::fmt::Debug for KeyedStateStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyedStateStore")
            .field("in_use", &self.in_use())
            .finish_non_exhaustive()
    }
}

impl KeyedStateStore {
    /// An in-memory store for the key groups `range` of `max_parallelism`,
    /// on the system clock.
    pub fn heap(max_parallelism: u32, range: KeyGroupRange) -> Self {
        Self::heap_with_clock(max_parallelism, range, system_clock())
    }

    /// An in-memory store whose TTL runs on `clock`.
    pub fn heap_with_clock(max_parallelism: u32, range: KeyGroupRange, clock: SharedClock) -> Self {
        Self::with_backend(Backend::Heap(HeapBackend::new(
            max_parallelism,
            range,
            clock,
        )))
    }

    /// A store keeping state as bytes in `store` (e.g. RocksDB).
    ///
    /// Recently used keys stay in a write-back cache of up to
    /// `cache_bytes` of keys and values in front of the store (0: none):
    /// reads of hot keys skip it, writes reach it in batches.
    pub fn kv(
        store: Box<dyn KvStore>,
        max_parallelism: u32,
        range: KeyGroupRange,
        clock: SharedClock,
        cache_bytes: usize,
    ) -> Self {
        Self::with_backend(Backend::Kv(KvBackend::new(
            store,
            max_parallelism,
            range,
            clock,
            cache_bytes,
        )))
    }

    /// A store over `store`, which was opened from a checkpoint's own files
    /// holding `states` (their names in id order).
    pub fn kv_restored(
        store: Box<dyn KvStore>,
        states: &[String],
        max_parallelism: u32,
        range: KeyGroupRange,
        clock: SharedClock,
        cache_bytes: usize,
    ) -> Self {
        let mut backend = KvBackend::new(store, max_parallelism, range, clock, cache_bytes);
        backend.reserve(states);
        Self::with_backend(Backend::Kv(backend))
    }

    /// The statistics of the key-value store under this state, if it keeps
    /// any (RocksDB does; the heap does not).
    pub fn statistics(&self) -> Option<Arc<dyn crate::kv::StoreStatistics>> {
        // Kept apart from the backend: a reporter's thread must not wait
        // for the subtask's hold on it.
        self.inner.statistics.clone()
    }

    fn with_backend(backend: Backend) -> Self {
        let statistics = match &backend {
            Backend::Kv(kv) => kv.store.statistics(),
            Backend::Heap(_) => None,
        };
        KeyedStateStore {
            inner: Arc::new(Inner {
                statistics,
                backend: TaskLock::new(backend),
                in_use: AtomicBool::new(false),
                pending_restore: Mutex::new(Vec::new()),
                namespaced: Mutex::new(Vec::new()),
            }),
            namespaced: false,
        }
    }

    /// A view of this store whose handles are scoped to the current key
    /// *and* the current namespace (see [`Self::set_current_namespace`]):
    /// what Flink's window operators use for window contents and
    /// per-window state, with the window as namespace. A namespaced state
    /// is stored under the key followed by the namespace, so it moves with
    /// its key's key group like any other keyed state.
    pub fn per_namespace(&self) -> KeyedStateStore {
        KeyedStateStore {
            inner: Arc::clone(&self.inner),
            namespaced: true,
        }
    }

    /// Makes `namespace` the current key's namespace for namespaced
    /// handles. Setting the key forgets it.
    pub fn set_current_namespace<N: Serialize + ?Sized>(
        &self,
        namespace: &N,
    ) -> Result<(), StateError> {
        match &mut *self.lock()? {
            Backend::Heap(h) => h.set_namespace(namespace),
            Backend::Kv(k) => k.set_namespace(namespace),
        }
    }

    /// Whether state lives as bytes in a key-value store (RocksDB) rather
    /// than typed in memory.
    pub fn is_key_value(&self) -> bool {
        self.lock()
            .map(|b| matches!(&*b, Backend::Kv(_)))
            .unwrap_or(false)
    }

    /// Whether any state was declared through a namespaced view.
    pub fn has_namespaced_states(&self) -> bool {
        self.inner
            .namespaced
            .lock()
            .map(|ids| !ids.is_empty())
            .unwrap_or(false)
    }

    /// Removes the current key's values of every namespaced state in the
    /// current namespace (a window is dropped).
    pub fn clear_current_namespace(&self) -> Result<(), StateError> {
        let ids = self
            .inner
            .namespaced
            .lock()
            .map_err(|_| StateError::Internal("namespace list poisoned".into()))?
            .clone();
        if ids.is_empty() {
            return Ok(());
        }
        let mut guard = self.lock()?;
        for id in ids {
            match &mut *guard {
                Backend::Heap(h) => {
                    if !(h.has_key && h.has_ns) {
                        return Err(no_namespace());
                    }
                    if let Some(t) = h.tables.get_mut(id) {
                        t.clear_key(h.group, h.ns_hash, &h.ns_key);
                    }
                }
                Backend::Kv(k) => {
                    k.enter_scope(true)?;
                    k.clear_current(id)?;
                }
            }
        }
        Ok(())
    }

    #[inline]
    fn lock(&self) -> Result<TaskLockGuard<'_, Backend>, StateError> {
        Ok(self.inner.backend.lock())
    }

    /// Holds the store for the calling thread until the hold drops, so
    /// that the state accesses meanwhile (a batch of records') take no
    /// atomic instruction each. Another thread reaching the store waits
    /// for the hold to end; in Weir's runtime only the subtask's own
    /// thread does (snapshots are taken on it and encoded from a copy,
    /// and the statistics are kept apart).
    #[inline]
    pub fn hold(&self) -> StateHold<'_> {
        StateHold {
            _hold: self.inner.backend.hold(),
        }
    }

    /// The time of the store's clock (TTL stamps).
    pub(crate) fn now_ms(&self) -> Result<i64, StateError> {
        Ok(match &*self.lock()? {
            Backend::Heap(h) => h.clock.now_ms(),
            Backend::Kv(k) => k.clock.now_ms(),
        })
    }

    /// Whether any state was declared.
    #[inline]
    pub fn in_use(&self) -> bool {
        self.inner.in_use.load(Ordering::Relaxed)
    }

    /// Makes `key` the key that handles read and write.
    pub fn set_current_key<K: Serialize + StableHash + ?Sized>(
        &self,
        key: &K,
    ) -> Result<(), StateError> {
        let hash = key.stable_hash();
        self.set_key_encoded_by(
            |max| key_group_of_hash(hash, max),
            |buf| encode_state_key(key, buf),
        )
    }

    /// [`set_current_key`](KeyedStateStore::set_current_key) for a key
    /// already encoded by [`encode_state_key`] (where it was made, on another
    /// thread), with its [`StableHash::stable_hash`].
    pub fn set_current_hashed_key(&self, encoded: &[u8], hash: u64) -> Result<(), StateError> {
        self.set_key_encoded_by(|max| key_group_of_hash(hash, max), copied(encoded))
    }

    /// Makes the current key the one `encode` writes into the buffer it is
    /// given, in the key group `group` gives for the store's maximum
    /// parallelism.
    #[inline]
    fn set_key_encoded_by(
        &self,
        group: impl FnOnce(u32) -> KeyGroup,
        encode: impl FnOnce(&mut Vec<u8>) -> Result<(), StateError>,
    ) -> Result<(), StateError> {
        let mut b = self.lock()?;
        match &mut *b {
            Backend::Heap(h) => {
                let kg = group(h.max_parallelism);
                encode(&mut h.key)?;
                h.set_key(kg)
            }
            Backend::Kv(k) => {
                let kg = group(k.max_parallelism);
                if !k.range.contains(kg) {
                    return Err(k.foreign_key_group(kg));
                }
                encode(&mut k.key)?;
                k.key_group = kg;
                k.has_key = true;
                k.has_ns = false;
                Ok(())
            }
        }
    }

    /// Whether preparing a batch's keys ([`prepare_keys`]) pays: a state
    /// on the heap is past the caches, or a key-value store's values are
    /// being read from the store rather than its cache. Otherwise setting
    /// each key in turn costs less.
    ///
    /// [`prepare_keys`]: KeyedStateStore::prepare_keys
    pub fn prefetch_pays(&self) -> Result<bool, StateError> {
        Ok(match &mut *self.lock()? {
            Backend::Heap(h) => h.refresh_prefetching(),
            Backend::Kv(k) => k.preload_pays(),
        })
    }

    /// Prepares the keys of the records of a batch, in order, before any is
    /// processed. On the heap each is encoded and hashed once, and what the
    /// states hold for it starts loading into cache, so that with big keyed
    /// state the lookups' memory accesses overlap instead of each record
    /// waiting for its own. In a key-value store the values of the states
    /// read record by record are read for all the keys at once, sorted, into
    /// the write-back cache. [`set_prepared_key`] then makes the `i`-th the
    /// current key.
    ///
    /// [`set_prepared_key`]: KeyedStateStore::set_prepared_key
    pub fn prepare_keys<'k, K: Serialize + StableHash + 'k>(
        &self,
        keys: impl IntoIterator<Item = &'k K>,
    ) -> Result<(), StateError> {
        self.prepare_hashed_keys(keys.into_iter().map(|k| (k, k.stable_hash())))
    }

    /// [`prepare_keys`](KeyedStateStore::prepare_keys) for keys whose
    /// [`StableHash::stable_hash`] was already computed (where they were
    /// made, on another thread): each key with its stable hash.
    pub fn prepare_hashed_keys<'k, K: Serialize + StableHash + 'k>(
        &self,
        keys: impl IntoIterator<Item = (&'k K, u64)>,
    ) -> Result<(), StateError> {
        match &mut *self.lock()? {
            Backend::Heap(h) => {
                h.clear_prepared();
                for (key, hash) in keys {
                    let kg = key_group_of_hash(hash, h.max_parallelism);
                    h.prepare(key, kg)?;
                }
                Ok(())
            }
            Backend::Kv(k) => {
                k.begin_preload();
                let mut encoded = Vec::new();
                for (key, hash) in keys {
                    let kg = key_group_of_hash(hash, k.max_parallelism);
                    encode_state_key(key, &mut encoded)?;
                    k.add_preload(&encoded, kg)?;
                }
                k.finish_preload()
            }
        }
    }

    /// [`prepare_keys`](KeyedStateStore::prepare_keys) for keys already
    /// encoded by [`encode_state_key`] where they were made, on another thread:
    /// each key's encoding with its [`StableHash::stable_hash`]. Encoding
    /// a key of strings was a tenth of a `GROUP BY`'s thread (q16).
    pub fn prepare_encoded_keys<'k>(
        &self,
        keys: impl IntoIterator<Item = (&'k [u8], u64)>,
    ) -> Result<(), StateError> {
        match &mut *self.lock()? {
            Backend::Heap(h) => {
                h.clear_prepared();
                for (encoded, hash) in keys {
                    h.prepare_encoded(encoded, key_group_of_hash(hash, h.max_parallelism));
                }
                Ok(())
            }
            Backend::Kv(k) => {
                k.begin_preload();
                for (encoded, hash) in keys {
                    k.add_preload(encoded, key_group_of_hash(hash, k.max_parallelism))?;
                }
                k.finish_preload()
            }
        }
    }

    /// Makes `key`, prepared as the `index`-th key by the last
    /// [`prepare_keys`](KeyedStateStore::prepare_keys), the current key.
    #[inline]
    pub fn set_prepared_key<K: Serialize + StableHash + ?Sized>(
        &self,
        index: usize,
        key: &K,
    ) -> Result<(), StateError> {
        if self.set_prepared(index)? {
            return Ok(());
        }
        self.set_current_key(key)
    }

    /// [`set_prepared_key`](KeyedStateStore::set_prepared_key) for a key
    /// prepared by [`prepare_encoded_keys`](KeyedStateStore::prepare_encoded_keys).
    #[inline]
    pub fn set_prepared_encoded_key(
        &self,
        index: usize,
        encoded: &[u8],
        hash: u64,
    ) -> Result<(), StateError> {
        if self.set_prepared(index)? {
            return Ok(());
        }
        self.set_current_hashed_key(encoded, hash)
    }

    /// Makes the `index`-th prepared key current, where the backend holds
    /// it (the heap's); `false` where the caller sets it.
    #[inline]
    fn set_prepared(&self, index: usize) -> Result<bool, StateError> {
        match &mut *self.lock()? {
            Backend::Heap(h) => h.set_prepared(index),
            Backend::Kv(_) => Ok(false),
        }
    }

    fn register<V: Serialize + DeserializeOwned + Clone + Send + 'static>(
        &self,
        name: &str,
        kind: StateKind,
        ttl: Option<StateTtlConfig>,
    ) -> Result<usize, StateError> {
        let id = match &mut *self.lock()? {
            Backend::Heap(h) => h.register::<V>(name, kind, ttl, self.namespaced)?,
            Backend::Kv(k) => k.register::<V>(name, kind, ttl)?,
        };
        self.inner.in_use.store(true, Ordering::Relaxed);
        if self.namespaced {
            let mut ids = self
                .inner
                .namespaced
                .lock()
                .map_err(|_| StateError::Internal("namespace list poisoned".into()))?;
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
        let restored = {
            let mut pending = self.pending_restore()?;
            pending
                .iter()
                .position(|s| s.name == name)
                .map(|at| pending.swap_remove(at))
        };
        if let Some(state) = restored {
            self.restore_state(&state)?;
        }
        Ok(id)
    }

    fn pending_restore(&self) -> Result<MutexGuard<'_, Vec<KeyedStateSnapshot>>, StateError> {
        self.inner
            .pending_restore
            .lock()
            .map_err(|_| StateError::Internal("restore list poisoned".into()))
    }

    /// Restores `states` (of this store's key groups) as they get declared,
    /// as Flink restores state lazily; entries of other key groups are
    /// ignored.
    pub fn restore_on_register(&self, states: Vec<KeyedStateSnapshot>) -> Result<(), StateError> {
        self.pending_restore()?.extend(states);
        Ok(())
    }

    /// Puts back every entry of `state`, which must be registered.
    fn restore_state(&self, state: &KeyedStateSnapshot) -> Result<(), StateError> {
        let missing = || StateError::Internal(format!("state '{}' not registered", state.name));
        match &mut *self.lock()? {
            Backend::Heap(h) => {
                let range = h.range;
                let table = h
                    .tables
                    .iter_mut()
                    .find(|t| t.name() == state.name)
                    .ok_or_else(missing)?;
                for (kg, key, value) in &state.entries {
                    if range.contains(KeyGroup(*kg)) {
                        table.restore_entry((kg - range.start) as usize, key, value)?;
                    }
                }
            }
            Backend::Kv(k) => {
                let id = k
                    .tables
                    .iter()
                    .position(|t| t.name == state.name)
                    .ok_or_else(missing)?;
                for (kg, key, value) in &state.entries {
                    if k.range.contains(KeyGroup(*kg)) {
                        k.restore(id, KeyGroup(*kg), key, value)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// A snapshot in two halves: what must happen now, on the task thread
    /// (the heap backend copies its typed tables; a key-value store is read
    /// out), and the encoding, which the returned closure does later on any
    /// thread. Restored state not declared again is kept.
    ///
    /// With `native`, a key-value store that can checkpoint its own files
    /// does so (incremental checkpoints), unless restored entries are still
    /// waiting for their state to be declared.
    pub fn snapshot_deferred(&self, native: bool) -> Result<DeferredSnapshot, StateError> {
        let pending: Vec<KeyedStateSnapshot> = self.pending_restore()?.clone();
        if native && pending.is_empty() {
            if let Backend::Kv(k) = &mut *self.lock()? {
                if let Some((files, states)) = k.native_snapshot()? {
                    return Ok(DeferredSnapshot::Native {
                        files,
                        states,
                        key_groups: (k.range.start, k.range.end),
                    });
                }
            }
        }
        let parts: Option<Vec<DeferredState>> = match &*self.lock()? {
            Backend::Heap(h) => {
                let now = h.clock.now_ms();
                Some(
                    h.tables
                        .iter()
                        .map(|t| t.copy_for_snapshot(h.range.start, now))
                        .collect(),
                )
            }
            Backend::Kv(_) => None,
        };
        let Some(parts) = parts else {
            // A key-value store's state is read out now (the lock above is
            // released: `snapshot` takes it again).
            let states = self.snapshot()?;
            return Ok(DeferredSnapshot::Encode(Box::new(move || Ok(states))));
        };
        Ok(DeferredSnapshot::Encode(Box::new(move || {
            let mut out = Vec::with_capacity(parts.len() + pending.len());
            for part in parts {
                out.push(part()?);
            }
            out.extend(pending);
            Ok(out)
        })))
    }

    /// Every entry of every key group this store owns, per state, for a
    /// checkpoint. Restored state not declared again is kept, so a
    /// checkpoint never loses state a later version may declare again.
    pub fn snapshot(&self) -> Result<Vec<KeyedStateSnapshot>, StateError> {
        let mut out = Vec::new();
        match &mut *self.lock()? {
            Backend::Heap(h) => {
                let now = h.clock.now_ms();
                let start = h.range.start;
                let mut pairs = Vec::new();
                for t in &h.tables {
                    let mut entries = Vec::with_capacity(t.len());
                    for group in 0..h.range.len() as usize {
                        pairs.clear();
                        t.snapshot_group(group, now, &mut pairs)?;
                        let kg = start + group as u32;
                        entries.extend(pairs.drain(..).map(|(k, v)| (kg, k, v)));
                    }
                    out.push(KeyedStateSnapshot {
                        name: t.name().to_string(),
                        entries,
                    });
                }
            }
            Backend::Kv(k) => {
                for id in 0..k.tables.len() {
                    let mut entries = Vec::new();
                    for kg in k.range.iter() {
                        entries.extend(
                            k.snapshot(id, kg)?
                                .into_iter()
                                .map(|(key, v)| (kg.0, key, v)),
                        );
                    }
                    out.push(KeyedStateSnapshot {
                        name: k.tables[id].name.clone(),
                        entries,
                    });
                }
            }
        }
        out.extend(self.pending_restore()?.iter().cloned());
        Ok(out)
    }

    /// A handle on the value state `desc`.
    pub fn value_state<T: StateValue>(
        &self,
        desc: &ValueStateDescriptor<T>,
    ) -> Result<ValueState<T>, StateError> {
        Ok(ValueState {
            handle: Handle::new(
                self.clone(),
                self.register::<T>(&desc.name, StateKind::Value, desc.ttl)?,
            ),
        })
    }

    /// A handle on the list state `desc`.
    pub fn list_state<T: StateValue>(
        &self,
        desc: &ListStateDescriptor<T>,
    ) -> Result<ListState<T>, StateError> {
        Ok(ListState {
            handle: Handle::new(
                self.clone(),
                self.register::<Vec<(i64, T)>>(&desc.name, StateKind::List, desc.ttl)?,
            ),
            ttl: ElementTtl { ttl: desc.ttl },
        })
    }

    /// A handle on the map state `desc`.
    pub fn map_state<K, V>(
        &self,
        desc: &MapStateDescriptor<K, V>,
    ) -> Result<MapState<K, V>, StateError>
    where
        K: StateValue + Hash + Eq,
        V: StateValue,
    {
        Ok(MapState {
            handle: Handle::new(
                self.clone(),
                self.register::<HashMap<K, (i64, V)>>(&desc.name, StateKind::Map, desc.ttl)?,
            ),
            ttl: ElementTtl { ttl: desc.ttl },
        })
    }

    /// A handle on the reducing state `desc`.
    pub fn reducing_state<T: StateValue>(
        &self,
        desc: &ReducingStateDescriptor<T>,
    ) -> Result<ReducingState<T>, StateError> {
        Ok(ReducingState {
            handle: Handle::new(
                self.clone(),
                self.register::<T>(&desc.name, StateKind::Reducing, desc.ttl)?,
            ),
            reduce: Arc::clone(&desc.reduce),
        })
    }

    /// A handle on the aggregating state `desc`.
    pub fn aggregating_state<In, Acc, Out>(
        &self,
        desc: &AggregatingStateDescriptor<In, Acc, Out>,
    ) -> Result<AggregatingState<In, Acc, Out>, StateError>
    where
        Acc: StateValue,
    {
        Ok(AggregatingState {
            handle: Handle::new(
                self.clone(),
                self.register::<Acc>(&desc.name, StateKind::Aggregating, desc.ttl)?,
            ),
            fns: desc.fns.clone(),
        })
    }

    /// Every entry of key group `key_group`, for a snapshot.
    pub fn snapshot_key_group(&self, key_group: KeyGroup) -> Result<Vec<StateEntry>, StateError> {
        let mut b = self.lock()?;
        let mut out = Vec::new();
        match &mut *b {
            Backend::Heap(h) => {
                if !h.range.contains(key_group) {
                    return Ok(out);
                }
                let group = (key_group.0 - h.range.start) as usize;
                let now = h.clock.now_ms();
                let mut pairs = Vec::new();
                for t in &h.tables {
                    pairs.clear();
                    t.snapshot_group(group, now, &mut pairs)?;
                    out.extend(pairs.drain(..).map(|(key, value)| StateEntry {
                        state: t.name().to_string(),
                        key_group,
                        key,
                        value,
                    }));
                }
            }
            Backend::Kv(k) => {
                if !k.range.contains(key_group) {
                    return Ok(out);
                }
                for id in 0..k.tables.len() {
                    let name = k.tables[id].name.clone();
                    for (key, value) in k.snapshot(id, key_group)? {
                        out.push(StateEntry {
                            state: name.clone(),
                            key_group,
                            key,
                            value,
                        });
                    }
                }
            }
        }
        Ok(out)
    }

    /// Puts back a snapshot entry. The state must be registered first (as
    /// in Flink, where state is restored lazily when declared).
    pub fn restore(&self, entry: &StateEntry) -> Result<(), StateError> {
        let missing = || StateError::Internal(format!("state '{}' not registered", entry.state));
        match &mut *self.lock()? {
            Backend::Heap(h) => {
                if !h.range.contains(entry.key_group) {
                    return Ok(());
                }
                let group = (entry.key_group.0 - h.range.start) as usize;
                let table = h
                    .tables
                    .iter_mut()
                    .find(|t| t.name() == entry.state)
                    .ok_or_else(missing)?;
                table.restore_entry(group, &entry.key, &entry.value)
            }
            Backend::Kv(k) => {
                if !k.range.contains(entry.key_group) {
                    return Ok(());
                }
                let id = k
                    .tables
                    .iter()
                    .position(|t| t.name == entry.state)
                    .ok_or_else(missing)?;
                k.restore(id, entry.key_group, &entry.key, &entry.value)
            }
        }
    }

    /// The keys (encoded, with their key groups) holding state `name`, for
    /// visiting every key (`apply_to_keyed_state`).
    pub fn keys_of(&self, name: &str) -> Result<Vec<(KeyGroup, Vec<u8>)>, StateError> {
        let mut out = Vec::new();
        match &mut *self.lock()? {
            Backend::Heap(h) => {
                let start = h.range.start;
                if let Some(t) = h.tables.iter().find(|t| t.name() == name) {
                    t.keys(&mut |group, key| {
                        out.push((KeyGroup(start + group as u32), key.to_vec()))
                    });
                }
            }
            Backend::Kv(k) => {
                if let Some(id) = k.tables.iter().position(|t| t.name == name) {
                    for kg in k.range.iter() {
                        for (key, _) in k.snapshot(id, kg)? {
                            out.push((kg, key));
                        }
                    }
                }
            }
        }
        Ok(out)
    }

    /// Makes the already encoded `key` of `key_group` the current key.
    pub fn set_current_encoded_key(
        &self,
        key_group: KeyGroup,
        key: &[u8],
    ) -> Result<(), StateError> {
        self.set_key_encoded_by(|_| key_group, copied(key))
    }

    /// Number of keys holding state `name`.
    pub fn len(&self, name: &str) -> Result<usize, StateError> {
        match &mut *self.lock()? {
            Backend::Heap(h) => Ok(h
                .tables
                .iter()
                .find(|t| t.name() == name)
                .map_or(0, |t| t.len())),
            Backend::Kv(k) => match k.tables.iter().position(|t| t.name == name) {
                Some(id) => k.len(id),
                None => Ok(0),
            },
        }
    }
}

/// The second half of [`KeyedStateStore::snapshot_deferred`].
pub enum DeferredSnapshot {
    /// Copied state, encoded by the closure.
    Encode(Box<dyn FnOnce() -> Result<Vec<KeyedStateSnapshot>, StateError> + Send>),
    /// The store's own files, to be stored as they are.
    Native {
        /// The files.
        files: NativeFiles,
        /// State names in id order.
        states: Vec<String>,
        /// The store's key groups.
        key_groups: (u32, u32),
    },
}

impl std::fmt::Debug for DeferredSnapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeferredSnapshot::Encode(_) => f.write_str("DeferredSnapshot::Encode"),
            DeferredSnapshot::Native { files, .. } => {
                write!(f, "DeferredSnapshot::Native({files:?})")
            }
        }
    }
}

impl DeferredSnapshot {
    /// The snapshot's states as entries. A store's own files are not
    /// entries: they must be stored as files (an error here).
    pub fn encode(self) -> Result<Vec<KeyedStateSnapshot>, StateError> {
        match self {
            DeferredSnapshot::Encode(f) => f(),
            DeferredSnapshot::Native { files, .. } => {
                let _ = std::fs::remove_dir_all(&files.dir);
                Err(StateError::Internal(
                    "a store's own checkpoint files cannot be encoded as entries".into(),
                ))
            }
        }
    }
}

/// The error of a namespaced handle used before a namespace was set.
fn no_namespace() -> StateError {
    StateError::NotKeyed("namespaced state used without a current namespace".into())
}

/// What every handle holds: the store and the state's index.
struct Handle<V> {
    store: KeyedStateStore,
    id: usize,
    _type: PhantomData<fn() -> V>,
}

impl<V> Clone for Handle<V> {
    fn clone(&self) -> Self {
        Handle {
            store: self.store.clone(),
            id: self.id,
            _type: PhantomData,
        }
    }
}

impl<V: Serialize + DeserializeOwned + Clone + Send + 'static> Handle<V> {
    fn new(store: KeyedStateStore, id: usize) -> Self {
        Handle {
            store,
            id,
            _type: PhantomData,
        }
    }

    /// The locked backend, scoped to the current namespace if this is a
    /// namespaced handle.
    #[inline]
    fn lock(&self) -> Result<TaskLockGuard<'_, Backend>, StateError> {
        self.store.lock()
    }

    /// Runs `f` on the current key's value, if any. No allocation.
    fn with<R>(&self, f: impl FnOnce(Option<&mut V>) -> R) -> Result<R, StateError> {
        let mut guard = self.lock()?;
        let b = match &mut *guard {
            Backend::Heap(h) => h,
            Backend::Kv(k) => {
                // The heap's cursor picks the key per access; a key-value
                // store builds store keys from this flag.
                k.enter_scope(self.store.namespaced)?;
                let mut value = k.read::<V>(self.id)?;
                return Ok(f(value.as_mut()));
            }
        };
        let (
            table,
            Cursor {
                group,
                key_hash,
                key,
                now,
            },
        ) = cursor::<V>(&mut *b, self.id, self.store.namespaced)?;
        Ok(f(table.read(group, key_hash, key, now)))
    }

    fn get(&self) -> Result<Option<V>, StateError>
    where
        V: Clone,
    {
        self.with(|slot| slot.cloned())
    }

    /// Sets the current key's value: one hash look-up when it has one.
    fn put(&self, value: V) -> Result<(), StateError> {
        self.modify_or_insert(|| value, |_| {}, true)
    }

    /// Changes the current key's value in place, inserting `init()` first
    /// when it has none; `replace` drops an existing value for `init()`.
    fn modify_or_insert(
        &self,
        init: impl FnOnce() -> V,
        f: impl FnOnce(&mut V),
        replace: bool,
    ) -> Result<(), StateError> {
        let mut guard = self.lock()?;
        let b = match &mut *guard {
            Backend::Heap(h) => h,
            Backend::Kv(k) => {
                k.enter_scope(self.store.namespaced)?;
                let value = match k.read::<V>(self.id)? {
                    Some(_) if replace => init(),
                    Some(mut v) => {
                        f(&mut v);
                        v
                    }
                    None => {
                        let mut v = init();
                        f(&mut v);
                        v
                    }
                };
                return k.write(self.id, &value);
            }
        };
        let (
            table,
            Cursor {
                group,
                key_hash,
                key,
                now,
            },
        ) = cursor::<V>(b, self.id, self.store.namespaced)?;
        match table.write(group, key_hash, key, now) {
            Some(v) if replace => *v = init(),
            Some(v) => f(v),
            None => {
                let mut v = init();
                f(&mut v);
                table.insert(group, key_hash, key.into(), v, now);
            }
        }
        Ok(())
    }

    /// Lets `f` change the current key's value where it is stored, if it
    /// has one; `None` (and `f` not called) if it has none.
    fn change_existing<R>(&self, f: impl FnOnce(&mut V) -> R) -> Result<Option<R>, StateError> {
        let mut guard = self.lock()?;
        let b = match &mut *guard {
            Backend::Heap(h) => h,
            Backend::Kv(k) => {
                k.enter_scope(self.store.namespaced)?;
                let Some(mut value) = k.read::<V>(self.id)? else {
                    return Ok(None);
                };
                let result = f(&mut value);
                k.write(self.id, &value)?;
                return Ok(Some(result));
            }
        };
        let (table, at) = cursor::<V>(b, self.id, self.store.namespaced)?;
        Ok(table.write(at.group, at.key_hash, at.key, at.now).map(f))
    }

    /// Lets `f` change the current key's value where it is stored (one
    /// hash look-up on the heap when the value stays), and does what it
    /// returns.
    fn change<R>(
        &self,
        f: impl FnOnce(Option<&mut V>) -> (ValueChange<V>, R),
    ) -> Result<R, StateError> {
        let mut guard = self.lock()?;
        let b = match &mut *guard {
            Backend::Heap(h) => h,
            Backend::Kv(k) => {
                k.enter_scope(self.store.namespaced)?;
                let mut old = k.read::<V>(self.id)?;
                let (change, result) = f(old.as_mut());
                match (change, old) {
                    (ValueChange::Keep, Some(kept)) => k.write(self.id, &kept)?,
                    (ValueChange::Set(new), _) => k.write(self.id, &new)?,
                    (ValueChange::Remove, Some(_)) => k.delete(self.id)?,
                    (ValueChange::Keep | ValueChange::Remove, None) => {}
                }
                return Ok(result);
            }
        };
        let (
            table,
            Cursor {
                group,
                key_hash,
                key,
                now,
            },
        ) = cursor::<V>(b, self.id, self.store.namespaced)?;
        // Each case handled where it arises: a change carried out of the
        // match is a copy of the whole value, made for every call.
        match table.write(group, key_hash, key, now) {
            Some(v) => {
                let (change, result) = f(Some(&mut *v));
                match change {
                    ValueChange::Keep => {}
                    ValueChange::Set(new) => *v = new,
                    ValueChange::Remove => drop(table.take(group, key_hash, key, now)),
                }
                Ok(result)
            }
            None => {
                let (change, result) = f(None);
                if let ValueChange::Set(new) = change {
                    table.insert(group, key_hash, key.into(), new, now);
                }
                Ok(result)
            }
        }
    }

    /// Replaces the current key's value by `f(old)` (the stored key is
    /// reused, so only a key's first value allocates).
    fn update(&self, f: impl FnOnce(Option<V>) -> Option<V>) -> Result<(), StateError> {
        let mut guard = self.lock()?;
        let b = match &mut *guard {
            Backend::Heap(h) => h,
            Backend::Kv(k) => {
                k.enter_scope(self.store.namespaced)?;
                let old = k.read::<V>(self.id)?;
                return match f(old) {
                    Some(new) => k.write(self.id, &new),
                    None => k.delete(self.id),
                };
            }
        };
        let (
            table,
            Cursor {
                group,
                key_hash,
                key,
                now,
            },
        ) = cursor::<V>(&mut *b, self.id, self.store.namespaced)?;
        let (stored_key, old) = match table.take(group, key_hash, key, now) {
            Some((k, v)) => (k, v),
            None => (key.into(), None),
        };
        if let Some(new) = f(old) {
            table.insert(group, key_hash, stored_key, new, now);
        }
        Ok(())
    }
}

/// Where the current key's value of one heap table is.
struct Cursor<'a> {
    group: usize,
    key_hash: u64,
    key: &'a [u8],
    now: i64,
}

/// The typed table `id` of a heap backend and the current key's position in
/// it (with the time, if the table has a time-to-live).
///
/// Inlined: returned through memory, its words were read back in wider
/// pieces than they were written in, a stall on every state access.
#[inline(always)]
fn cursor<V: 'static>(
    b: &mut HeapBackend,
    id: usize,
    namespaced: bool,
) -> Result<(&mut TypedTable<V>, Cursor<'_>), StateError> {
    let HeapBackend {
        key,
        key_hash,
        ns_key,
        ns_hash,
        has_ns,
        group,
        has_key,
        tables,
        clock,
        ..
    } = b;
    let (key, key_hash) = if namespaced {
        if !*has_ns {
            return Err(no_namespace());
        }
        (ns_key, ns_hash)
    } else {
        (key, key_hash)
    };
    if !*has_key {
        return Err(StateError::NotKeyed(format!("#{id}")));
    }
    let table = typed::<V>(tables, id)?;
    let now = if table.ttl.is_some() {
        clock.now_ms()
    } else {
        0
    };
    Ok((
        table,
        Cursor {
            group: *group,
            key_hash: *key_hash,
            key: key.as_slice(),
            now,
        },
    ))
}

fn typed<V: 'static>(
    tables: &mut [Box<dyn crate::heap::StateTable>],
    id: usize,
) -> Result<&mut TypedTable<V>, StateError> {
    tables
        .get_mut(id)
        .and_then(|t| t.as_any_mut().downcast_mut::<TypedTable<V>>())
        .ok_or_else(|| StateError::Internal(format!("state {id} has another type")))
}

/// One value per key (Flink's `ValueState`).
pub struct ValueState<T> {
    handle: Handle<T>,
}

impl<T> Clone for ValueState<T> {
    fn clone(&self) -> Self {
        ValueState {
            handle: self.handle.clone(),
        }
    }
}

impl<T: StateValue> ValueState<T> {
    /// The current key's value, if any.
    pub fn value(&self) -> Result<Option<T>, StateError> {
        self.handle.get()
    }

    /// Calls `f` with the value of the key prepared `index`-th by the last
    /// [`KeyedStateStore::prepare_keys`], as held in memory, without
    /// making that key current: a function processing keys in order can
    /// look at a later key's value to start loading what it points to
    /// into cache. A hint, for reading only: the value may have expired,
    /// it is found by the key's 64-bit hash alone (another key's of the
    /// same hash, in one case in 2^64, would be read instead), and with a
    /// key-value backend, a namespaced state or an unprepared index, `f`
    /// is not called.
    #[inline]
    pub fn peek_prepared(&self, index: usize, f: impl FnOnce(&T)) -> Result<(), StateError> {
        // A namespaced state's table is not among those a key alone
        // finds: the backend shows nothing of it.
        if let Backend::Heap(h) = &*self.handle.lock()? {
            if let Some(value) = h.prepared_value::<T>(self.handle.id, index) {
                f(value);
            }
        }
        Ok(())
    }

    /// Sets the current key's value.
    pub fn update(&self, value: T) -> Result<(), StateError> {
        self.handle.put(value)
    }

    /// Removes the current key's value.
    pub fn clear(&self) -> Result<(), StateError> {
        self.handle.update(|_| None)
    }

    /// Replaces the current key's value by `f(old value)` in one access
    /// (`None` removes it): no copy of the old value is made.
    pub fn update_with(&self, f: impl FnOnce(Option<T>) -> Option<T>) -> Result<(), StateError> {
        self.handle.update(f)
    }

    /// Lets `f` change the current key's value where it is stored (`None`
    /// when there is none) and say what becomes of it, returning `f`'s
    /// result. On the heap a value that stays is neither moved nor copied
    /// and is found once; a key-value backend reads it and writes it back.
    pub fn update_in_place<R>(
        &self,
        f: impl FnOnce(Option<&mut T>) -> (ValueChange<T>, R),
    ) -> Result<R, StateError> {
        self.handle.change(f)
    }

    /// Lets `f` change the current key's value where it is stored, if the
    /// key has one, returning `f`'s result (`None`, `f` not called, if it
    /// has none). [`update_in_place`](ValueState::update_in_place) for a
    /// value that is never replaced or removed: with nothing to hand back,
    /// a large value costs no copy of `f`'s result on every call.
    pub fn update_existing<R>(&self, f: impl FnOnce(&mut T) -> R) -> Result<Option<R>, StateError> {
        self.handle.change_existing(f)
    }
}

/// What [`ValueState::update_in_place`] does with the current key's value
/// once its function has run.
#[derive(Debug)]
pub enum ValueChange<T> {
    /// Keep the value, as the function left it (nothing when there was
    /// none).
    Keep,
    /// Set this value.
    Set(T),
    /// Remove the value.
    Remove,
}

/// Per-element time-to-live of lists and maps (Flink tracks each list
/// element and map entry): elements carry the time they were last written
/// (or read, with `OnReadAndWrite`); without a time-to-live the stamp is 0
/// and never read.
#[derive(Clone, Copy)]
struct ElementTtl {
    ttl: Option<StateTtlConfig>,
}

impl ElementTtl {
    fn now(&self, store: &KeyedStateStore) -> Result<i64, StateError> {
        match self.ttl {
            Some(_) => store.now_ms(),
            None => Ok(0),
        }
    }

    /// Whether an element stamped `stamp` is hidden at `now`.
    fn hidden(&self, stamp: i64, now: i64) -> bool {
        self.ttl.is_some_and(|t| {
            t.visibility == StateVisibility::NeverReturnExpired && t.is_expired(stamp, now)
        })
    }

    /// Whether an element stamped `stamp` is gone for good at `now`
    /// (dropped when the collection is written).
    fn expired(&self, stamp: i64, now: i64) -> bool {
        self.ttl.is_some_and(|t| t.is_expired(stamp, now))
    }

    /// Whether reads restart an element's life.
    fn touch_on_read(&self) -> bool {
        self.ttl
            .is_some_and(|t| t.update_type == UpdateType::OnReadAndWrite)
    }
}

/// A list per key (Flink's `ListState`).
pub struct ListState<T> {
    handle: Handle<Vec<(i64, T)>>,
    ttl: ElementTtl,
}

impl<T> Clone for ListState<T> {
    fn clone(&self) -> Self {
        ListState {
            handle: self.handle.clone(),
            ttl: self.ttl,
        }
    }
}

impl<T: StateValue> ListState<T> {
    /// The current key's list (empty if none), without expired elements.
    pub fn get(&self) -> Result<Vec<T>, StateError> {
        let now = self.ttl.now(&self.handle.store)?;
        let ttl = self.ttl;
        if ttl.touch_on_read() {
            let mut out = Vec::new();
            self.handle.update(|old| {
                let mut list = old?;
                list.retain(|(stamp, _)| !ttl.expired(*stamp, now));
                for (stamp, v) in &mut list {
                    *stamp = now;
                    out.push(v.clone());
                }
                (!list.is_empty()).then_some(list)
            })?;
            return Ok(out);
        }
        self.handle.with(|slot| {
            slot.map(|l| {
                l.iter()
                    .filter(|(stamp, _)| !ttl.hidden(*stamp, now))
                    .map(|(_, v)| v.clone())
                    .collect()
            })
            .unwrap_or_default()
        })
    }

    /// Calls `f` on each of the current key's elements (without expired
    /// ones), in order, where they are stored: nothing is copied, as
    /// [`get`](Self::get) copies the whole list. `f` runs with the state
    /// locked, so it must not use state itself.
    pub fn for_each(&self, mut f: impl FnMut(&T)) -> Result<(), StateError> {
        if self.ttl.touch_on_read() {
            // Reading restarts the elements' lives: a write, done by `get`.
            self.get()?.iter().for_each(f);
            return Ok(());
        }
        let now = self.ttl.now(&self.handle.store)?;
        let ttl = self.ttl;
        self.handle.with(|slot| {
            for (stamp, v) in slot.into_iter().flatten() {
                if !ttl.hidden(*stamp, now) {
                    f(v);
                }
            }
        })
    }

    /// Appends a value.
    pub fn add(&self, value: T) -> Result<(), StateError> {
        self.add_is_first(value).map(|_| ())
    }

    /// Appends a value; whether it is the key's first (the key had no
    /// list), as a caller that keeps one timer per key's list asks.
    pub fn add_is_first(&self, value: T) -> Result<bool, StateError> {
        let now = self.ttl.now(&self.handle.store)?;
        let mut first = false;
        self.handle.modify_or_insert(
            Vec::new,
            |l| {
                first = l.is_empty();
                l.push((now, value));
            },
            false,
        )?;
        Ok(first)
    }

    /// Keeps the current key's elements for which `keep` is true, in
    /// order, where they are stored (nothing is copied, as with
    /// [`get`](Self::get) and [`update`](Self::update)); expired elements
    /// go too. `keep` runs with the state locked, so it must not use state
    /// itself.
    pub fn retain(&self, mut keep: impl FnMut(&T) -> bool) -> Result<(), StateError> {
        let now = self.ttl.now(&self.handle.store)?;
        let ttl = self.ttl;
        self.handle.change(|list| match list {
            Some(list) => {
                list.retain(|(stamp, v)| !ttl.expired(*stamp, now) && keep(v));
                if list.is_empty() {
                    (ValueChange::Remove, ())
                } else {
                    (ValueChange::Keep, ())
                }
            }
            None => (ValueChange::Keep, ()),
        })
    }

    /// Appends values.
    pub fn add_all(&self, values: impl IntoIterator<Item = T>) -> Result<(), StateError> {
        let now = self.ttl.now(&self.handle.store)?;
        let ttl = self.ttl;
        self.handle.update(|old| {
            let mut list = old.unwrap_or_default();
            list.retain(|(stamp, _)| !ttl.expired(*stamp, now));
            list.extend(values.into_iter().map(|v| (now, v)));
            (!list.is_empty()).then_some(list)
        })
    }

    /// Replaces the list (an empty list clears it).
    pub fn update(&self, values: Vec<T>) -> Result<(), StateError> {
        let now = self.ttl.now(&self.handle.store)?;
        self.handle.update(|_| {
            (!values.is_empty()).then(|| values.into_iter().map(|v| (now, v)).collect())
        })
    }

    /// Removes the current key's list.
    pub fn clear(&self) -> Result<(), StateError> {
        self.handle.update(|_| None)
    }

    /// Removes the current key's list and returns its elements (without
    /// expired ones): [`get`](Self::get) then [`clear`](Self::clear),
    /// without copying them.
    pub fn take(&self) -> Result<Vec<T>, StateError> {
        let now = self.ttl.now(&self.handle.store)?;
        let ttl = self.ttl;
        let mut out = Vec::new();
        self.handle.update(|old| {
            if let Some(list) = old {
                out = (list.into_iter())
                    .filter(|(stamp, _)| !ttl.hidden(*stamp, now))
                    .map(|(_, v)| v)
                    .collect();
            }
            None
        })?;
        Ok(out)
    }
}

/// A map per key (Flink's `MapState`).
pub struct MapState<K, V> {
    handle: Handle<HashMap<K, (i64, V)>>,
    ttl: ElementTtl,
}

impl<K, V> Clone for MapState<K, V> {
    fn clone(&self) -> Self {
        MapState {
            handle: self.handle.clone(),
            ttl: self.ttl,
        }
    }
}

impl<K: StateValue + Hash + Eq, V: StateValue> MapState<K, V> {
    /// Runs `f` with a key-value backend (which keeps one store entry per
    /// map entry) and the state's id; `None` on the heap backend.
    fn on_kv<R>(
        &self,
        f: impl FnOnce(&mut KvBackend, usize) -> Result<R, StateError>,
    ) -> Result<Option<R>, StateError> {
        match &mut *self.handle.lock()? {
            Backend::Kv(k) => {
                k.enter_scope(self.handle.store.namespaced)?;
                f(k, self.handle.id).map(Some)
            }
            Backend::Heap(_) => Ok(None),
        }
    }

    /// The live entries, as `f` wants them; with `OnReadAndWrite` the
    /// entries read start a new life.
    fn read<R>(&self, f: impl Fn(&K, &V) -> Option<R>) -> Result<Vec<R>, StateError> {
        let now = self.ttl.now(&self.handle.store)?;
        let ttl = self.ttl;
        let kv = self.on_kv(|kv, id| {
            let mut out = Vec::new();
            for (key, stamp, value) in kv.map_entries::<K, V>(id)? {
                if ttl.touch_on_read() {
                    if ttl.expired(stamp, now) {
                        kv.map_remove(id, &key)?;
                    } else if let Some(r) = f(&key, &value) {
                        kv.map_put(id, &key, now, &value)?;
                        out.push(r);
                    }
                } else if !ttl.hidden(stamp, now) {
                    out.extend(f(&key, &value));
                }
            }
            Ok(out)
        })?;
        if let Some(out) = kv {
            return Ok(out);
        }
        if ttl.touch_on_read() {
            let mut out = Vec::new();
            self.handle.update(|old| {
                let mut map = old?;
                map.retain(|_, (stamp, _)| !ttl.expired(*stamp, now));
                for (k, (stamp, v)) in &mut map {
                    if let Some(r) = f(k, v) {
                        *stamp = now;
                        out.push(r);
                    }
                }
                (!map.is_empty()).then_some(map)
            })?;
            return Ok(out);
        }
        self.handle.with(|slot| {
            slot.map(|m| {
                m.iter()
                    .filter(|(_, (stamp, _))| !ttl.hidden(*stamp, now))
                    .filter_map(|(k, (_, v))| f(k, v))
                    .collect()
            })
            .unwrap_or_default()
        })
    }

    /// The value under `key` in the current key's map.
    pub fn get(&self, key: &K) -> Result<Option<V>, StateError> {
        let now = self.ttl.now(&self.handle.store)?;
        let ttl = self.ttl;
        let kv = self.on_kv(|kv, id| {
            let Some((stamp, value)) = kv.map_get::<K, V>(id, key)? else {
                return Ok(None);
            };
            if ttl.touch_on_read() {
                if ttl.expired(stamp, now) {
                    kv.map_remove(id, key)?;
                    return Ok(None);
                }
                kv.map_put(id, key, now, &value)?;
            } else if ttl.hidden(stamp, now) {
                kv.map_remove(id, key)?;
                return Ok(None);
            }
            Ok(Some(value))
        })?;
        if let Some(value) = kv {
            return Ok(value);
        }
        if self.ttl.ttl.is_none() {
            return self
                .handle
                .with(|slot| slot.and_then(|m| m.get(key).map(|(_, v)| v.clone())));
        }
        Ok(self
            .read(|k, v| (k == key).then(|| v.clone()))?
            .into_iter()
            .next())
    }

    /// Puts `value` under `key`.
    pub fn put(&self, key: K, value: V) -> Result<(), StateError> {
        let now = self.ttl.now(&self.handle.store)?;
        if self
            .on_kv(|kv, id| kv.map_put(id, &key, now, &value))?
            .is_some()
        {
            return Ok(());
        }
        self.handle.modify_or_insert(
            HashMap::new,
            |m| {
                m.insert(key, (now, value));
            },
            false,
        )
    }

    /// Puts every entry.
    pub fn put_all(&self, entries: impl IntoIterator<Item = (K, V)>) -> Result<(), StateError> {
        let now = self.ttl.now(&self.handle.store)?;
        if matches!(&*self.handle.lock()?, Backend::Kv(_)) {
            for (key, value) in entries {
                self.on_kv(|kv, id| kv.map_put(id, &key, now, &value))?;
            }
            return Ok(());
        }
        self.handle.update(|old| {
            let mut map = old.unwrap_or_default();
            map.extend(entries.into_iter().map(|(k, v)| (k, (now, v))));
            Some(map)
        })
    }

    /// Removes `key`.
    pub fn remove(&self, key: &K) -> Result<(), StateError> {
        if self.on_kv(|kv, id| kv.map_remove(id, key))?.is_some() {
            return Ok(());
        }
        self.handle.update(|old| {
            let mut map = old?;
            map.remove(key);
            (!map.is_empty()).then_some(map)
        })
    }

    /// Whether `key` is present (and live).
    pub fn contains(&self, key: &K) -> Result<bool, StateError> {
        Ok(self.get(key)?.is_some())
    }

    /// The entries of the current key's map (in no particular order).
    pub fn entries(&self) -> Result<Vec<(K, V)>, StateError> {
        self.read(|k, v| Some((k.clone(), v.clone())))
    }

    /// The keys of the current key's map.
    pub fn keys(&self) -> Result<Vec<K>, StateError> {
        self.read(|k, _| Some(k.clone()))
    }

    /// The values of the current key's map.
    pub fn values(&self) -> Result<Vec<V>, StateError> {
        self.read(|_, v| Some(v.clone()))
    }

    /// Whether the current key's map has no live entry.
    pub fn is_empty(&self) -> Result<bool, StateError> {
        Ok(self.read(|_, _| Some(()))?.is_empty())
    }

    /// Removes the current key's map.
    pub fn clear(&self) -> Result<(), StateError> {
        if self.on_kv(|kv, id| kv.map_clear(id))?.is_some() {
            return Ok(());
        }
        self.handle.update(|_| None)
    }
}

/// One value per key, folded by a reduce function (Flink's `ReducingState`).
pub struct ReducingState<T> {
    handle: Handle<T>,
    reduce: ReduceFn<T>,
}

impl<T> Clone for ReducingState<T> {
    fn clone(&self) -> Self {
        ReducingState {
            handle: self.handle.clone(),
            reduce: Arc::clone(&self.reduce),
        }
    }
}

impl<T: StateValue> ReducingState<T> {
    /// The folded value.
    pub fn get(&self) -> Result<Option<T>, StateError> {
        self.handle.get()
    }

    /// Folds `value` in.
    pub fn add(&self, value: T) -> Result<(), StateError> {
        let reduce = &self.reduce;
        self.handle.update(|old| {
            Some(match old {
                Some(acc) => reduce(acc, value),
                None => value,
            })
        })
    }

    /// Removes the current key's value.
    pub fn clear(&self) -> Result<(), StateError> {
        self.handle.update(|_| None)
    }
}

/// One accumulator per key (Flink's `AggregatingState`).
pub struct AggregatingState<In, Acc, Out> {
    handle: Handle<Acc>,
    fns: AggregateFns<In, Acc, Out>,
}

impl<In, Acc, Out> Clone for AggregatingState<In, Acc, Out> {
    fn clone(&self) -> Self {
        AggregatingState {
            handle: self.handle.clone(),
            fns: self.fns.clone(),
        }
    }
}

impl<In, Acc: StateValue, Out> AggregatingState<In, Acc, Out> {
    /// The result of the current key's accumulator.
    pub fn get(&self) -> Result<Option<Out>, StateError> {
        let result = &self.fns.result;
        self.handle.with(|slot| slot.map(|acc| result(acc)))
    }

    /// Adds an input.
    pub fn add(&self, value: In) -> Result<(), StateError> {
        let fns = &self.fns;
        self.handle
            .modify_or_insert(|| (fns.create)(), |acc| (fns.add)(value, acc), false)
    }

    /// Removes the current key's accumulator.
    pub fn clear(&self) -> Result<(), StateError> {
        self.handle.update(|_| None)
    }
}

type OpenFn =
    dyn Fn(u32, KeyGroupRange, SharedClock) -> Result<KeyedStateStore, StateError> + Send + Sync;

/// Files of a store's own checkpoint to restore from, and the state names
/// in id order.
#[derive(Debug, Clone)]
pub struct NativeRestore {
    /// `(file name in the store's directory, where the checkpoint has it)`.
    pub files: Vec<(String, std::path::PathBuf)>,
    /// State names in id order.
    pub states: Vec<String>,
}

/// How a backend with its own checkpoint files opens and reads them.
pub trait NativeFormat: Send + Sync {
    /// Opens a store from the files, for exactly the key groups they hold.
    fn open(
        &self,
        restore: &NativeRestore,
        max_parallelism: u32,
        range: KeyGroupRange,
        clock: SharedClock,
    ) -> Result<KeyedStateStore, StateError>;
    /// Reads every entry of the files (for a restore at another
    /// parallelism).
    fn read(&self, restore: &NativeRestore) -> Result<Vec<KeyedStateSnapshot>, StateError>;
}

/// Which keyed-state backend a job uses (Flink's `state.backend.type`): a
/// named way to open a [`KeyedStateStore`] for each keyed operator subtask.
#[derive(Clone)]
pub struct StateBackend {
    name: &'static str,
    open: Arc<OpenFn>,
    native: Option<Arc<dyn NativeFormat>>,
    heap: bool,
}

impl std::fmt::Debug for StateBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StateBackend({})", self.name)
    }
}

impl Default for StateBackend {
    fn default() -> Self {
        Self::heap()
    }
}

impl StateBackend {
    /// Typed state in memory (Flink's `hashmap`), the default.
    pub fn heap() -> Self {
        let mut backend = Self::new("hashmap", |mp, range, clock| {
            Ok(KeyedStateStore::heap_with_clock(mp, range, clock))
        });
        backend.heap = true;
        backend
    }

    /// Whether this backend keeps state typed in memory (operators may then
    /// keep their own state in memory too: the same trade-off).
    pub fn is_heap(&self) -> bool {
        self.heap
    }

    /// A backend called `name` opening stores with `open(max_parallelism,
    /// key_groups, clock)`.
    pub fn new(
        name: &'static str,
        open: impl Fn(u32, KeyGroupRange, SharedClock) -> Result<KeyedStateStore, StateError>
            + Send
            + Sync
            + 'static,
    ) -> Self {
        StateBackend {
            name,
            open: Arc::new(open),
            native: None,
            heap: false,
        }
    }

    /// The backend, able to checkpoint and restore its stores' own files.
    pub fn with_native_format(mut self, format: impl NativeFormat + 'static) -> Self {
        self.native = Some(Arc::new(format));
        self
    }

    /// How the backend's own files are opened, if it has them.
    pub fn native_format(&self) -> Option<&Arc<dyn NativeFormat>> {
        self.native.as_ref()
    }

    /// The backend's name (`hashmap`, `rocksdb`).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Opens the store of one operator subtask.
    pub fn open(
        &self,
        max_parallelism: u32,
        range: KeyGroupRange,
        clock: SharedClock,
    ) -> Result<KeyedStateStore, StateError> {
        (self.open)(max_parallelism, range, clock)
    }
}

/// Writes `encoded` as the key's encoding, for a key encoded elsewhere.
#[inline]
fn copied(encoded: &[u8]) -> impl FnOnce(&mut Vec<u8>) -> Result<(), StateError> + '_ {
    move |buf| {
        buf.clear();
        buf.extend_from_slice(encoded);
        Ok(())
    }
}
