//! RocksDB holding more state than its memory limits.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use weir_state::{
    KeyGroupRange, KeyedStateStore, KvStore, ManualClock, MapStateDescriptor, ScanFn, StateError,
    ValueStateDescriptor,
};
use weir_state_rocksdb::RocksDbStateBackend;

#[test]
fn state_far_larger_than_the_memory_limits_reads_back() -> Result<(), StateError> {
    const KEYS: u64 = 40_000;
    const VALUE_BYTES: usize = 2_000;
    let mut backend = RocksDbStateBackend::new(std::env::temp_dir());
    backend.block_cache_bytes = 1 << 20;
    backend.write_buffer_bytes = 1 << 20;
    backend.cache_bytes = 1 << 20;
    let store = backend.open(
        128,
        KeyGroupRange { start: 0, end: 127 },
        Arc::new(ManualClock::new(0)),
    )?;
    let blob = store.value_state(&ValueStateDescriptor::<String>::new("blob"))?;
    let value = |k: u64| format!("{k:08}{}", "x".repeat(VALUE_BYTES - 8));
    // 40,000 × 2 KB = 80 MB of state against 1 MiB of block cache, two
    // 1 MiB write buffers and a 1 MiB write-back cache: most of it lives
    // only on disk.
    for k in 0..KEYS {
        store.set_current_key(&k)?;
        blob.update(value(k))?;
    }
    for k in (0..KEYS).rev() {
        store.set_current_key(&k)?;
        let v = blob.value()?;
        assert_eq!(
            v.as_deref().map(|s| &s[..8]),
            Some(format!("{k:08}").as_str()),
            "key {k}"
        );
        assert_eq!(v.map(|s| s.len()), Some(VALUE_BYTES));
    }
    assert_eq!(store.len("blob")?, KEYS as usize);
    Ok(())
}

fn small_store() -> Result<KeyedStateStore, StateError> {
    let mut backend = RocksDbStateBackend::new(std::env::temp_dir());
    backend.block_cache_bytes = 1 << 20;
    backend.write_buffer_bytes = 1 << 20;
    backend.cache_bytes = 1 << 20;
    backend.open(
        128,
        KeyGroupRange { start: 0, end: 127 },
        Arc::new(ManualClock::new(0)),
    )
}

/// A store that counts what is read through it.
struct Counting {
    inner: weir_state_rocksdb::RocksDbKvStore,
    largest_read: Arc<AtomicUsize>,
    scans: Arc<AtomicUsize>,
}

impl KvStore for Counting {
    fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>, StateError> {
        let value = self.inner.get(key)?;
        let len = value.as_ref().map_or(0, Vec::len);
        self.largest_read.fetch_max(len, Ordering::Relaxed);
        Ok(value)
    }
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<(), StateError> {
        self.inner.put(key, value)
    }
    fn delete(&mut self, key: &[u8]) -> Result<(), StateError> {
        self.inner.delete(key)
    }
    fn write_batch(&mut self, ops: &[(&[u8], Option<&[u8]>)]) -> Result<(), StateError> {
        self.inner.write_batch(ops)
    }
    fn scan_prefix(&mut self, prefix: &[u8], f: &mut ScanFn<'_>) -> Result<(), StateError> {
        self.scans.fetch_add(1, Ordering::Relaxed);
        self.inner.scan_prefix(prefix, f)
    }
}

/// A map far larger than RocksDB's memory limits is stored and read entry
/// by entry: a get or put of one entry reads one entry (never the whole
/// map, nor a scan of it).
#[test]
fn a_map_larger_than_the_memory_limits_is_used_entry_by_entry() -> Result<(), StateError> {
    const ENTRIES: u64 = 50_000;
    let mut backend = RocksDbStateBackend::new(std::env::temp_dir());
    backend.block_cache_bytes = 1 << 20;
    backend.write_buffer_bytes = 1 << 20;
    let clock: weir_state::SharedClock = Arc::new(ManualClock::new(0));
    let (largest_read, scans) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let counting = Counting {
        inner: backend.open_store(Arc::clone(&clock))?,
        largest_read: Arc::clone(&largest_read),
        scans: Arc::clone(&scans),
    };
    // A 1 MiB write-back cache in front, as the backend has.
    let store = KeyedStateStore::kv(
        Box::new(counting),
        128,
        KeyGroupRange { start: 0, end: 127 },
        clock,
        1 << 20,
    );
    let map = store.map_state(&MapStateDescriptor::<u64, String>::new("big"))?;
    store.set_current_key("one key")?;
    let value = |i: u64| format!("{i:08}{}", "y".repeat(992));
    for i in 0..ENTRIES {
        map.put(i, value(i))?;
    }
    let scans_before = scans.load(Ordering::Relaxed);
    for i in (0..ENTRIES).step_by(97) {
        assert_eq!(map.get(&i)?, Some(value(i)), "entry {i}");
        map.put(i, "changed".into())?;
    }
    assert_eq!(map.get(&97)?, Some("changed".to_string()));
    assert_eq!(map.get(&98)?, Some(value(98)));
    // 50 MB of map, and no read of more than one entry (1 KB and its
    // framing), no scan, for any get or put.
    let largest = largest_read.load(Ordering::Relaxed);
    assert!(largest > 0, "the gets reached RocksDB");
    assert!(largest < 2_048, "one read of {largest} bytes");
    assert_eq!(scans.load(Ordering::Relaxed), scans_before);
    assert_eq!(map.keys()?.len(), ENTRIES as usize);
    store.set_current_key("another key")?;
    assert!(map.is_empty()?);
    Ok(())
}

/// Map snapshots are portable: RocksDB's per-entry maps restore into the
/// heap backend and back, with their entries and per-entry stamps.
#[test]
fn map_snapshots_move_between_backends() -> Result<(), StateError> {
    use weir_state::KeyGroup;
    let desc = || MapStateDescriptor::<String, Vec<u32>>::new("m");
    let rocks = small_store()?;
    let m = rocks.map_state(&desc())?;
    for k in 0..50u32 {
        rocks.set_current_key(&k)?;
        for i in 0..k % 4 {
            m.put(format!("e{i}"), vec![k, i])?;
        }
    }
    let heap = KeyedStateStore::heap(128, KeyGroupRange { start: 0, end: 127 });
    let hm = heap.map_state(&desc())?;
    let again = small_store()?;
    let am = again.map_state(&desc())?;
    for kg in 0..128 {
        for entry in rocks.snapshot_key_group(KeyGroup(kg))? {
            heap.restore(&entry)?;
        }
    }
    for kg in 0..128 {
        for entry in heap.snapshot_key_group(KeyGroup(kg))? {
            again.restore(&entry)?;
        }
    }
    for k in 0..50u32 {
        let expected: Vec<(String, Vec<u32>)> =
            (0..k % 4).map(|i| (format!("e{i}"), vec![k, i])).collect();
        for (store, map) in [(&heap, &hm), (&again, &am)] {
            store.set_current_key(&k)?;
            let mut entries = map.entries()?;
            entries.sort();
            assert_eq!(entries, expected, "key {k}");
        }
    }
    Ok(())
}
