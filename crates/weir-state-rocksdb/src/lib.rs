//! The RocksDB keyed-state backend of Weir.
//!
//! The principal type is [`RocksDbStateBackend`]: options (block cache,
//! write buffers, local working directory) from which each keyed operator
//! subtask opens its own RocksDB instance, wrapped as a
//! [`KeyedStateStore`] with the same API as the
//! heap backend. State may be far larger than memory: RocksDB keeps it on
//! local disk, with memory bounded by the block cache and write buffers.
//!
//! This is the only crate of the workspace that links RocksDB, so the
//! state API cannot leak its types. It links Debian's `librocksdb-dev`
//! (see `.cargo/config.toml`) instead of compiling RocksDB's C++.
//!
//! ```no_run
//! use weir_state::{KeyGroupRange, ManualClock, ValueStateDescriptor};
//! use weir_state_rocksdb::RocksDbStateBackend;
//! # fn main() -> Result<(), weir_state::StateError> {
//! let backend = RocksDbStateBackend::new(std::env::temp_dir());
//! let store = backend.open(128, KeyGroupRange { start: 0, end: 127 }, std::sync::Arc::new(ManualClock::new(0)))?;
//! let count = store.value_state(&ValueStateDescriptor::<u64>::new("count"))?;
//! store.set_current_key("user-1")?;
//! count.update(1)?;
//! # Ok(())
//! # }
//! ```

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use rocksdb::compaction_filter::Decision;
use rocksdb::{
    BlockBasedOptions, Cache, ColumnFamilyDescriptor, Direction, IteratorMode, Options,
    WriteOptions, DB, DEFAULT_COLUMN_FAMILY_NAME,
};
use std::collections::HashMap;

use weir_state::snapshot::KeyedStateSnapshot;
use weir_state::{
    stored_state_id, ttl_stamp, Clock, KeyGroupRange, KeyedStateStore, KvStore, MultiGetFn,
    NativeFiles, NativeFormat, NativeRestore, PortableEntries, PortableEntry, ScanFn, SharedClock,
    StateBackend, StateError, StateTtlConfig, StoreStatistics,
};

/// Options of the RocksDB backend (Flink's `state.backend.rocksdb.*`).
#[derive(Debug, Clone)]
pub struct RocksDbStateBackend {
    /// Directory under which each subtask makes its instance's directory
    /// (Flink's `state.backend.rocksdb.localdir`).
    pub local_dir: PathBuf,
    /// Block cache size in bytes, per instance.
    pub block_cache_bytes: usize,
    /// Write buffer (memtable) size in bytes; two are kept.
    pub write_buffer_bytes: usize,
    /// Bytes of keys and values kept in a write-back cache in front of
    /// RocksDB (reads of hot keys skip RocksDB, writes go in batches); 0
    /// disables it.
    pub cache_bytes: usize,
    /// Whether RocksDB keeps its statistics (block cache hits and misses in
    /// the metrics; Flink's `state.backend.rocksdb.metrics.block-cache-hit`
    /// and `…-miss`, off by default as there: they cost a little on every
    /// read). Memtable size, pending compaction bytes and block cache use
    /// are always shown.
    pub statistics: bool,
}

impl RocksDbStateBackend {
    /// A backend working under `local_dir`, with 8 MiB of block cache,
    /// 4 MiB write buffers and a 64 MiB write-back cache per instance (about
    /// a million small values).
    pub fn new(local_dir: impl Into<PathBuf>) -> Self {
        RocksDbStateBackend {
            local_dir: local_dir.into(),
            block_cache_bytes: 8 << 20,
            write_buffer_bytes: 4 << 20,
            cache_bytes: 64 << 20,
            statistics: false,
        }
    }

    /// A fresh RocksDB instance as a bare [`KvStore`] (without the
    /// write-back cache and key groups that [`open`](Self::open) puts
    /// around it), for stores that wrap it.
    pub fn open_store(&self, clock: SharedClock) -> Result<RocksDbKvStore, StateError> {
        RocksDbKvStore::open(self, clock)
    }

    /// Opens a fresh instance for one operator subtask's key groups.
    pub fn open(
        &self,
        max_parallelism: u32,
        range: KeyGroupRange,
        clock: SharedClock,
    ) -> Result<KeyedStateStore, StateError> {
        let store = RocksDbKvStore::open(self, clock.clone())?;
        Ok(KeyedStateStore::kv(
            Box::new(store),
            max_parallelism,
            range,
            clock,
            self.cache_bytes,
        ))
    }
}

impl RocksDbStateBackend {
    /// The backend as a [`StateBackend`] (`state.backend.type: rocksdb`),
    /// with incremental checkpoints of its own files.
    pub fn into_state_backend(self) -> StateBackend {
        let opener = self.clone();
        StateBackend::new("rocksdb", move |mp, range, clock| {
            opener.open(mp, range, clock)
        })
        .with_native_format(self)
    }
}

impl NativeFormat for RocksDbStateBackend {
    fn open(
        &self,
        restore: &NativeRestore,
        max_parallelism: u32,
        range: KeyGroupRange,
        clock: SharedClock,
    ) -> Result<KeyedStateStore, StateError> {
        let store = RocksDbKvStore::restore(self, clock.clone(), &restore.files)?;
        Ok(KeyedStateStore::kv_restored(
            Box::new(store),
            &restore.states,
            max_parallelism,
            range,
            clock,
            self.cache_bytes,
        ))
    }

    fn read(&self, restore: &NativeRestore) -> Result<Vec<KeyedStateSnapshot>, StateError> {
        let clock: SharedClock = Arc::new(weir_state::ManualClock::new(0));
        let store = RocksDbKvStore::restore(self, clock, &restore.files)?;
        let mut states: Vec<KeyedStateSnapshot> = restore
            .states
            .iter()
            .map(|name| KeyedStateSnapshot {
                name: name.clone(),
                entries: Vec::new(),
            })
            .collect();
        // Map entries come back as one portable map value per key.
        let mut gather = PortableEntries::default();
        let mut entries = Vec::new();
        let mut place = |entries: &mut Vec<PortableEntry>| {
            for (id, kg, key, value) in entries.drain(..) {
                if let Some(state) = states.get_mut(usize::from(id)) {
                    state.entries.push((kg.0, key, value));
                }
            }
        };
        for item in store.db()?.iterator(IteratorMode::Start) {
            let (k, v) = item.map_err(storage_error)?;
            gather.push(&k, &v, &mut entries)?;
            place(&mut entries);
        }
        gather.finish(&mut entries);
        place(&mut entries);
        Ok(states)
    }
}

fn storage_error(e: impl std::fmt::Display) -> StateError {
    StateError::Internal(format!("rocksdb: {e}"))
}

static INSTANCES: AtomicU64 = AtomicU64::new(0);

/// One RocksDB instance in its own directory, removed when dropped (state
/// outlives it only through checkpoints).
pub struct RocksDbKvStore {
    db: Option<Arc<DB>>,
    /// What the metrics read (a weak handle: it never keeps the instance
    /// open).
    statistics: Arc<RocksDbStatistics>,
    dir: PathBuf,
    write: WriteOptions,
    /// Time-to-live by state id, read by the compaction filter.
    ttls: Arc<RwLock<Vec<Option<StateTtlConfig>>>>,
    /// Names this instance's SST files are shared under in checkpoints:
    /// those it was restored from keep theirs; new ones get this prefix,
    /// unique to the instance, so equal file numbers of two instances
    /// never collide.
    shared_prefix: String,
    restored_shared: HashMap<String, String>,
    native_checkpoints: u64,
}

fn io_error(path: &Path, e: std::io::Error) -> StateError {
    StateError::Internal(format!("rocksdb files '{}': {e}", path.display()))
}

/// Puts `from` at `to`: a hard link when both are on one file system (SST
/// files never change), a copy otherwise.
fn link_or_copy(from: &Path, to: &Path) -> Result<(), StateError> {
    if std::fs::hard_link(from, to).is_err() {
        std::fs::copy(from, to).map_err(|e| io_error(from, e))?;
    }
    Ok(())
}

impl RocksDbKvStore {
    fn new_dir(backend: &RocksDbStateBackend) -> Result<(PathBuf, String), StateError> {
        let n = INSTANCES.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let id = format!("{}-{n}-{nanos:08x}", std::process::id());
        let dir = backend.local_dir.join(format!("weir-rocksdb-{id}"));
        std::fs::create_dir_all(&dir).map_err(|e| io_error(&dir, e))?;
        Ok((dir, id))
    }

    fn open(backend: &RocksDbStateBackend, clock: SharedClock) -> Result<Self, StateError> {
        let (dir, id) = Self::new_dir(backend)?;
        Self::open_in(backend, clock, dir, id)
    }

    /// An instance over the files of a checkpoint (`(name, path)`).
    fn restore(
        backend: &RocksDbStateBackend,
        clock: SharedClock,
        files: &[(String, PathBuf)],
    ) -> Result<Self, StateError> {
        let (dir, id) = Self::new_dir(backend)?;
        let mut restored_shared = HashMap::new();
        for (name, path) in files {
            link_or_copy(path, &dir.join(name))?;
            if name.ends_with(".sst") {
                if let Some(shared) = path.file_name() {
                    restored_shared.insert(name.clone(), shared.to_string_lossy().to_string());
                }
            }
        }
        let mut store = Self::open_in(backend, clock, dir, id)?;
        store.restored_shared = restored_shared;
        Ok(store)
    }

    fn open_in(
        backend: &RocksDbStateBackend,
        clock: SharedClock,
        dir: PathBuf,
        id: String,
    ) -> Result<Self, StateError> {
        let cache = Cache::new_lru_cache(backend.block_cache_bytes).map_err(storage_error)?;
        let mut table = BlockBasedOptions::default();
        table.set_block_cache(&cache);
        // State access is point look-ups: bloom filters skip files that
        // cannot hold the key.
        table.set_bloom_filter(10.0, false);
        let mut opts = Options::default();
        opts.create_if_missing(true);
        if backend.statistics {
            opts.enable_statistics();
        }
        opts.set_block_based_table_factory(&table);

        opts.set_write_buffer_size(backend.write_buffer_bytes);
        opts.set_max_write_buffer_number(2);
        // Most reads with many keys miss the memtables; a bloom filter over
        // their keys lets those reads skip the skip-list search.
        opts.set_memtable_whole_key_filtering(true);
        opts.set_memtable_prefix_bloom_ratio(0.1);
        let ttls: Arc<RwLock<Vec<Option<StateTtlConfig>>>> = Arc::default();
        let filter_ttls = Arc::clone(&ttls);
        opts.set_compaction_filter("weir-ttl", move |_level: u32, key: &[u8], value: &[u8]| {
            if expired(&filter_ttls, clock.as_ref(), key, value) {
                Decision::Remove
            } else {
                Decision::Keep
            }
        });
        // Opened with its default column family named, so that a handle to
        // it exists for batched multi-gets.
        let default_cf = ColumnFamilyDescriptor::new(DEFAULT_COLUMN_FAMILY_NAME, opts.clone());
        let db =
            Arc::new(DB::open_cf_descriptors(&opts, &dir, [default_cf]).map_err(storage_error)?);
        let statistics = Arc::new(RocksDbStatistics {
            db: Arc::downgrade(&db),
            cache,
            options: backend.statistics.then_some(opts),
        });
        let mut write = WriteOptions::default();
        // Durability comes from checkpoints, as in Flink: no write-ahead log.
        write.disable_wal(true);
        Ok(RocksDbKvStore {
            db: Some(db),
            statistics,
            dir,
            write,
            ttls,
            shared_prefix: id,
            restored_shared: HashMap::new(),
            native_checkpoints: 0,
        })
    }

    fn db(&self) -> Result<&DB, StateError> {
        self.db
            .as_deref()
            .ok_or_else(|| StateError::Internal("rocksdb instance closed".into()))
    }

    /// The instance's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// Whether a stored value of a state with a time-to-live has expired.
/// Undecodable values are kept: reading them reports the error.
fn expired(
    ttls: &RwLock<Vec<Option<StateTtlConfig>>>,
    clock: &dyn Clock,
    key: &[u8],
    value: &[u8],
) -> bool {
    let Some(id) = stored_state_id(key) else {
        return false;
    };
    let ttl = match ttls.read() {
        Ok(ttls) => ttls.get(usize::from(id)).copied().flatten(),
        Err(_) => None,
    };
    match (ttl, ttl_stamp(value)) {
        (Some(ttl), Ok(stamp)) => ttl.is_expired(stamp, clock.now_ms()),
        _ => false,
    }
}

impl Drop for RocksDbKvStore {
    fn drop(&mut self) {
        // Close before deleting the files.
        self.db.take();
        let _ = std::fs::remove_dir_all(&self.dir);
        // Local checkpoints the coordinator did not store (the job ended
        // or the checkpoint was aborted first).
        for n in 1..=self.native_checkpoints {
            let _ = std::fs::remove_dir_all(format!("{}-chk-{n}", self.dir.display()));
        }
    }
}

/// An instance's statistics, read by the metrics (see [`StoreStatistics`]).
struct RocksDbStatistics {
    db: std::sync::Weak<DB>,
    cache: Cache,
    /// The options the instance was opened with, when they keep RocksDB's
    /// statistics.
    options: Option<Options>,
}

impl StoreStatistics for RocksDbStatistics {
    fn read(&self) -> Vec<(&'static str, u64)> {
        let Some(db) = self.db.upgrade() else {
            return Vec::new();
        };
        let property = |name: &str| db.property_int_value(name).ok().flatten().unwrap_or(0);
        let mut read = vec![
            (
                "rocksdb_cur_size_all_mem_tables",
                property("rocksdb.cur-size-all-mem-tables"),
            ),
            (
                "rocksdb_estimate_pending_compaction_bytes",
                property("rocksdb.estimate-pending-compaction-bytes"),
            ),
            (
                "rocksdb_estimate_num_keys",
                property("rocksdb.estimate-num-keys"),
            ),
            ("rocksdb_block_cache_usage", self.cache.get_usage() as u64),
        ];
        if let Some(text) = self.options.as_ref().and_then(Options::get_statistics) {
            read.push((
                "rocksdb_block_cache_hit",
                ticker(&text, "rocksdb.block.cache.hit"),
            ));
            read.push((
                "rocksdb_block_cache_miss",
                ticker(&text, "rocksdb.block.cache.miss"),
            ));
        }
        read
    }
}

/// A ticker's count in RocksDB's statistics text
/// (`rocksdb.block.cache.hit COUNT : 12`).
fn ticker(text: &str, name: &str) -> u64 {
    text.lines()
        .find_map(|line| {
            line.strip_prefix(name)?
                .trim()
                .strip_prefix("COUNT :")?
                .trim()
                .parse()
                .ok()
        })
        .unwrap_or(0)
}

impl KvStore for RocksDbKvStore {
    fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>, StateError> {
        self.db()?.get(key).map_err(storage_error)
    }

    fn multi_get(&mut self, keys: &[&[u8]], f: &mut MultiGetFn<'_>) -> Result<(), StateError> {
        let db = self.db()?;
        let cf = db
            .cf_handle(DEFAULT_COLUMN_FAMILY_NAME)
            .ok_or_else(|| StateError::Internal("rocksdb default column family missing".into()))?;
        // Sorted input lets RocksDB walk each file's filter, index and data
        // blocks once for all the keys that fall into them.
        let values = db.batched_multi_get_cf(cf, keys, true);
        for (i, value) in values.into_iter().enumerate() {
            f(i, value.map_err(storage_error)?.as_deref())?;
        }
        Ok(())
    }

    fn statistics(&self) -> Option<Arc<dyn StoreStatistics>> {
        let statistics: Arc<dyn StoreStatistics> = self.statistics.clone();
        Some(statistics)
    }

    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<(), StateError> {
        self.db()?
            .put_opt(key, value, &self.write)
            .map_err(storage_error)
    }

    fn delete(&mut self, key: &[u8]) -> Result<(), StateError> {
        self.db()?
            .delete_opt(key, &self.write)
            .map_err(storage_error)
    }

    fn write_batch(&mut self, ops: &[(&[u8], Option<&[u8]>)]) -> Result<(), StateError> {
        let mut batch = rocksdb::WriteBatch::default();
        for (key, value) in ops {
            match value {
                Some(v) => batch.put(key, v),
                None => batch.delete(key),
            }
        }
        self.db()?
            .write_opt(batch, &self.write)
            .map_err(storage_error)
    }

    fn expire_in_background(&mut self, state_id: u16, ttl: StateTtlConfig) {
        if let Ok(mut ttls) = self.ttls.write() {
            let id = usize::from(state_id);
            if ttls.len() <= id {
                ttls.resize(id + 1, None);
            }
            ttls[id] = Some(ttl);
        }
    }

    fn scan_prefix(&mut self, prefix: &[u8], f: &mut ScanFn<'_>) -> Result<(), StateError> {
        let db = self.db()?;
        for item in db.iterator(IteratorMode::From(prefix, Direction::Forward)) {
            let (k, v) = item.map_err(storage_error)?;
            if !k.starts_with(prefix) {
                break;
            }
            f(&k, &v)?;
        }
        Ok(())
    }

    /// RocksDB's checkpoint: memtables flushed, SST files hard-linked into
    /// a new directory (cheap on the task thread), small mutable files
    /// copied.
    fn native_checkpoint(&mut self) -> Result<Option<NativeFiles>, StateError> {
        self.native_checkpoints += 1;
        let dir = PathBuf::from(format!(
            "{}-chk-{}",
            self.dir.display(),
            self.native_checkpoints
        ));
        let _ = std::fs::remove_dir_all(&dir);
        rocksdb::checkpoint::Checkpoint::new(self.db()?)
            .and_then(|c| c.create_checkpoint(&dir))
            .map_err(storage_error)?;
        let mut files = Vec::new();
        for entry in std::fs::read_dir(&dir).map_err(|e| io_error(&dir, e))? {
            let entry = entry.map_err(|e| io_error(&dir, e))?;
            let name = entry.file_name().to_string_lossy().to_string();
            let shared = name.ends_with(".sst").then(|| {
                self.restored_shared
                    .get(&name)
                    .cloned()
                    .unwrap_or_else(|| format!("{}-{name}", self.shared_prefix))
            });
            files.push((name, shared));
        }
        Ok(Some(NativeFiles { dir, files }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted(mut states: Vec<KeyedStateSnapshot>) -> Vec<KeyedStateSnapshot> {
        states.sort_by(|a, b| a.name.cmp(&b.name));
        for s in &mut states {
            s.entries.sort();
        }
        states
    }

    /// A store's own checkpoint opens as a store with the same state (the
    /// same ids for the same names, whatever order they are declared in
    /// again), reads back as the same entries, and a second checkpoint
    /// shares the first one's unchanged SST files under the same names.
    #[test]
    fn native_checkpoints_restore_and_share_files() -> Result<(), StateError> {
        use weir_state::{DeferredSnapshot, MapStateDescriptor, ValueStateDescriptor};
        let backend = RocksDbStateBackend::new(std::env::temp_dir());
        let range = KeyGroupRange { start: 0, end: 127 };
        let clock: SharedClock = Arc::new(weir_state::ManualClock::new(0));
        let store = backend.open(128, range, clock.clone())?;
        let v = store.value_state(&ValueStateDescriptor::<u64>::new("v"))?;
        let m = store.map_state(&MapStateDescriptor::<String, u8>::new("m"))?;
        for k in 0..2_000u64 {
            store.set_current_key(&k)?;
            v.update(k)?;
            m.put(format!("e{}", k % 3), 1)?;
        }
        let expected = sorted(store.snapshot()?);
        let DeferredSnapshot::Native { files, states, .. } = store.snapshot_deferred(true)? else {
            panic!("rocksdb takes native snapshots");
        };
        assert_eq!(states, vec!["v".to_string(), "m".to_string()]);
        let restore = NativeRestore {
            files: files
                .files
                .iter()
                .map(|(name, _)| (name.clone(), files.dir.join(name)))
                .collect(),
            states,
        };
        assert_eq!(sorted(backend.read(&restore)?), expected);
        let reopened = NativeFormat::open(&backend, &restore, 128, range, clock)?;
        // Declared in the other order: ids come from the files.
        let m2 = reopened.map_state(&MapStateDescriptor::<String, u8>::new("m"))?;
        let v2 = reopened.value_state(&ValueStateDescriptor::<u64>::new("v"))?;
        reopened.set_current_key(&1234u64)?;
        assert_eq!(v2.value()?, Some(1234));
        assert_eq!(m2.get(&"e1".to_string())?, Some(1));
        assert_eq!(sorted(reopened.snapshot()?), expected);
        // Nothing changed: a second checkpoint of the first store shares
        // every SST file of the first under the same name.
        let DeferredSnapshot::Native { files: again, .. } = store.snapshot_deferred(true)? else {
            panic!("native");
        };
        let shared = |f: &NativeFiles| -> Vec<String> {
            let mut v: Vec<String> = f.files.iter().filter_map(|(_, s)| s.clone()).collect();
            v.sort();
            v
        };
        assert!(!shared(&files).is_empty());
        assert_eq!(shared(&files), shared(&again));
        let _ = std::fs::remove_dir_all(&files.dir);
        let _ = std::fs::remove_dir_all(&again.dir);
        Ok(())
    }

    fn open(max_parallelism: u32, range: KeyGroupRange, clock: SharedClock) -> KeyedStateStore {
        let backend = RocksDbStateBackend::new(std::env::temp_dir());
        match backend.open(max_parallelism, range, clock) {
            Ok(store) => store,
            Err(e) => panic!("cannot open rocksdb: {e}"),
        }
    }

    fn open_uncached(
        max_parallelism: u32,
        range: KeyGroupRange,
        clock: SharedClock,
    ) -> KeyedStateStore {
        let mut backend = RocksDbStateBackend::new(std::env::temp_dir());
        backend.cache_bytes = 0;
        match backend.open(max_parallelism, range, clock) {
            Ok(store) => store,
            Err(e) => panic!("cannot open rocksdb: {e}"),
        }
    }

    fn open_tiny_cache(
        max_parallelism: u32,
        range: KeyGroupRange,
        clock: SharedClock,
    ) -> KeyedStateStore {
        let mut backend = RocksDbStateBackend::new(std::env::temp_dir());
        // A cache that fills after a few keys: exercises write-back.
        backend.cache_bytes = 64;
        match backend.open(max_parallelism, range, clock) {
            Ok(store) => store,
            Err(e) => panic!("cannot open rocksdb: {e}"),
        }
    }

    #[test]
    fn compaction_drops_expired_values_of_states_with_a_time_to_live() -> Result<(), StateError> {
        let clock = Arc::new(weir_state::ManualClock::new(0));
        let backend = RocksDbStateBackend::new(std::env::temp_dir());
        let mut store = RocksDbKvStore::open(&backend, clock.clone())?;
        store.expire_in_background(
            0,
            StateTtlConfig::new_builder(std::time::Duration::from_secs(1)).build(),
        );
        let value = |stamp: i64| weir_state::encode_value(&(stamp, 7u64));
        // State 0 has a 1 s time-to-live, state 1 none.
        store.put(b"\0\0\0\0old", &value(0)?)?;
        store.put(b"\0\0\0\0new", &value(1_500)?)?;
        store.put(b"\0\x01\0\0old", &value(0)?)?;
        store.put(b"\0\0\0\0bad", b"not a value")?;
        clock.set(2_000);
        store.db()?.compact_range(None::<&[u8]>, None::<&[u8]>);
        assert_eq!(store.get(b"\0\0\0\0old")?, None);
        assert_eq!(store.get(b"\0\0\0\0new")?, Some(value(1_500)?));
        assert_eq!(store.get(b"\0\x01\0\0old")?, Some(value(0)?));
        assert!(store.get(b"\0\0\0\0bad")?.is_some());
        Ok(())
    }

    weir_state::keyed_state_conformance!(rocksdb, super::open);
    weir_state::keyed_state_conformance!(rocksdb_uncached, super::open_uncached);
    weir_state::keyed_state_conformance!(rocksdb_tiny_cache, super::open_tiny_cache);
}
