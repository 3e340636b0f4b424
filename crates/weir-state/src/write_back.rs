//! The write-back cache in front of a [`KvStore`]: recently used values,
//! encoded, so reads of a warm key skip the store and writes reach it in
//! sorted batches.
//!
//! Each entry is one allocation holding the store key and the value, reused
//! when a new value has the same length (a counter's update allocates
//! nothing). The cache is bounded in bytes, counting per-entry overhead, so
//! the bound is real memory. When full, every dirty entry is written back
//! in one batch in key order, and only entries read or written since the
//! previous write-back stay, up to half the bound (a second-chance policy:
//! hot keys survive, a scan over more keys than fit does not push them out).

use hashbrown::HashTable;

use crate::error::StateError;
use crate::kv::KvStore;

/// Memory of an entry besides its key and value bytes: the table slot and
/// control byte at the table's usual load factor, the allocation's header
/// and rounding. Just after the table doubles its slots cost twice that,
/// so real memory can exceed the bound by about 30 % (documented).
pub(crate) const ENTRY_OVERHEAD: usize = 56;

/// Memory of a tracked key besides its bytes (the boxed slice's header in
/// the vector, the allocation's header and rounding).
const TRACKED_OVERHEAD: usize = 32;

/// Bytes of keys and values written back in one batch at most.
const WRITE_BACK_BATCH_BYTES: usize = 1 << 20;

const HAS_VALUE: u8 = 1;
const DIRTY: u8 = 2;
const REFERENCED: u8 = 4;

struct Entry {
    /// Store key, then value (empty when the key is known to be absent).
    data: Box<[u8]>,
    key_len: u32,
    flags: u8,
}

impl Entry {
    fn key(&self) -> &[u8] {
        &self.data[..self.key_len as usize]
    }

    fn value(&self) -> Option<&[u8]> {
        (self.flags & HAS_VALUE != 0).then(|| &self.data[self.key_len as usize..])
    }

    fn bytes(&self) -> usize {
        ENTRY_OVERHEAD + self.data.len()
    }

    fn new(key: &[u8], value: Option<&[u8]>, flags: u8) -> Self {
        let mut data = Vec::with_capacity(key.len() + value.map_or(0, <[u8]>::len));
        data.extend_from_slice(key);
        data.extend_from_slice(value.unwrap_or_default());
        Entry {
            data: data.into_boxed_slice(),
            key_len: key.len() as u32,
            flags: flags | if value.is_some() { HAS_VALUE } else { 0 },
        }
    }
}

/// A byte-bounded cache of encoded values in front of a store.
pub(crate) struct WriteBackCache {
    table: HashTable<Entry>,
    hasher: foldhash::fast::RandomState,
    bytes: usize,
    capacity: usize,
    dirty: usize,
    /// Keys of dirty entries written with [`write_tracked`]: their state is
    /// scanned by prefix, so they are written back before such a scan
    /// without writing back everything.
    ///
    /// [`write_tracked`]: WriteBackCache::write_tracked
    tracked: Vec<Box<[u8]>>,
    /// Memory of `tracked`, counted against the bound.
    tracked_bytes: usize,
    /// Values read from the store so far.
    misses: u64,
}

impl WriteBackCache {
    /// A cache of at most `capacity` bytes; 0 disables it (every access goes
    /// to the store).
    pub fn new(capacity: usize) -> Self {
        WriteBackCache {
            table: HashTable::new(),
            hasher: Default::default(),
            bytes: 0,
            capacity,
            dirty: 0,
            tracked: Vec::new(),
            tracked_bytes: 0,
            misses: 0,
        }
    }

    /// Values read from the store so far (with the cache off, every read).
    pub fn misses(&self) -> u64 {
        self.misses
    }

    pub fn enabled(&self) -> bool {
        self.capacity > 0
    }

    /// Bytes the cache accounts for.
    #[cfg(test)]
    pub fn bytes(&self) -> usize {
        self.bytes + self.tracked_bytes
    }

    /// Entries cached.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.table.len()
    }

    fn hash(&self, key: &[u8]) -> u64 {
        use std::hash::BuildHasher;
        self.hasher.hash_one(key)
    }

    /// Runs `f` on the value of `key`, from the cache or else from the store
    /// (and then caches it).
    pub fn read<R>(
        &mut self,
        store: &mut dyn KvStore,
        key: &[u8],
        f: impl FnOnce(Option<&[u8]>) -> R,
    ) -> Result<R, StateError> {
        if !self.enabled() {
            self.misses += 1;
            return Ok(f(store.get(key)?.as_deref()));
        }
        let hash = self.hash(key);
        if let Some(e) = self.table.find_mut(hash, |e| e.key() == key) {
            e.flags |= REFERENCED;
            return Ok(f(e.value()));
        }
        self.misses += 1;
        let value = store.get(key)?;
        let r = f(value.as_deref());
        self.insert(store, hash, Entry::new(key, value.as_deref(), 0))?;
        Ok(r)
    }

    /// Reads the values of those of `keys` that are not cached from the
    /// store in one [`multi_get`](KvStore::multi_get), in byte order, and
    /// caches them as just used, so that they survive an eviction until
    /// their records come. `keys` is left sorted and without the cached.
    pub fn preload(
        &mut self,
        store: &mut dyn KvStore,
        keys: &mut Vec<&[u8]>,
    ) -> Result<(), StateError> {
        if !self.enabled() {
            return Ok(());
        }
        keys.retain(|k| {
            let hash = self.hash(k);
            self.table.find(hash, |e| e.key() == *k).is_none()
        });
        if keys.is_empty() {
            return Ok(());
        }
        keys.sort_unstable();
        keys.dedup();
        let mut loaded = Vec::with_capacity(keys.len());
        store.multi_get(keys, &mut |i, value| {
            loaded.push(Entry::new(keys[i], value, REFERENCED));
            Ok(())
        })?;
        self.misses += loaded.len() as u64;
        for entry in loaded {
            let hash = self.hash(entry.key());
            self.insert(store, hash, entry)?;
        }
        Ok(())
    }

    /// Sets (`Some`) or deletes (`None`) the value of `key`; the store sees
    /// it when the entry is written back.
    pub fn write(
        &mut self,
        store: &mut dyn KvStore,
        key: &[u8],
        value: Option<&[u8]>,
    ) -> Result<(), StateError> {
        self.set(store, key, value).map(|_| ())
    }

    /// [`write`](Self::write), remembering the key for
    /// [`write_back_tracked`](Self::write_back_tracked).
    pub fn write_tracked(
        &mut self,
        store: &mut dyn KvStore,
        key: &[u8],
        value: Option<&[u8]>,
    ) -> Result<(), StateError> {
        if self.set(store, key, value)? {
            self.tracked_bytes += TRACKED_OVERHEAD + key.len();
            self.tracked.push(key.into());
        }
        Ok(())
    }

    /// Sets or deletes the value of `key` in the cache (in the store when
    /// the cache is disabled); whether the entry turned dirty.
    fn set(
        &mut self,
        store: &mut dyn KvStore,
        key: &[u8],
        value: Option<&[u8]>,
    ) -> Result<bool, StateError> {
        if !self.enabled() {
            match value {
                Some(v) => store.put(key, v)?,
                None => store.delete(key)?,
            }
            return Ok(false);
        }
        let hash = self.hash(key);
        if let Some(e) = self.table.find_mut(hash, |e| e.key() == key) {
            let turned_dirty = e.flags & DIRTY == 0;
            if turned_dirty {
                self.dirty += 1;
            }
            let new_len = key.len() + value.map_or(0, <[u8]>::len);
            if e.data.len() == new_len {
                e.data[key.len()..].copy_from_slice(value.unwrap_or_default());
                e.flags = REFERENCED | DIRTY | if value.is_some() { HAS_VALUE } else { 0 };
            } else {
                self.bytes -= e.bytes();
                *e = Entry::new(key, value, REFERENCED | DIRTY);
                self.bytes += e.bytes();
            }
            return Ok(turned_dirty);
        }
        self.insert(store, hash, Entry::new(key, value, DIRTY))?;
        // After the insert: it may have written back (and counted) the rest.
        self.dirty += 1;
        Ok(true)
    }

    /// Writes back the dirty entries written with
    /// [`write_tracked`](Self::write_tracked).
    pub fn write_back_tracked(&mut self, store: &mut dyn KvStore) -> Result<(), StateError> {
        if self.tracked.is_empty() {
            return Ok(());
        }
        type Op = (Box<[u8]>, Option<Vec<u8>>);
        let mut ops: Vec<Op> = Vec::with_capacity(self.tracked.len());
        self.tracked_bytes = 0;
        for key in std::mem::take(&mut self.tracked) {
            let hash = self.hash(&key);
            if let Some(e) = self.table.find_mut(hash, |e| e.key() == &*key) {
                if e.flags & DIRTY != 0 {
                    e.flags &= !DIRTY;
                    self.dirty -= 1;
                    ops.push((key, e.value().map(<[u8]>::to_vec)));
                }
            }
        }
        ops.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        write_in_batches(store, ops.iter().map(|(k, v)| (&**k, v.as_deref())))
    }

    fn insert(
        &mut self,
        store: &mut dyn KvStore,
        hash: u64,
        entry: Entry,
    ) -> Result<(), StateError> {
        if self.bytes + self.tracked_bytes + entry.bytes() > self.capacity {
            self.evict(store)?;
        }
        self.bytes += entry.bytes();
        let hasher = &self.hasher;
        self.table.insert_unique(hash, entry, |e| {
            use std::hash::BuildHasher;
            hasher.hash_one(e.key())
        });
        Ok(())
    }

    /// Writes every dirty entry back to the store, in key order (a sorted
    /// store inserts each next to the previous one), and marks them clean.
    pub fn write_back(&mut self, store: &mut dyn KvStore) -> Result<(), StateError> {
        self.tracked.clear();
        self.tracked_bytes = 0;
        if self.dirty == 0 {
            return Ok(());
        }
        let mut ops: Vec<&mut Entry> = self
            .table
            .iter_mut()
            .filter(|e| e.flags & DIRTY != 0)
            .collect();
        ops.sort_unstable_by(|a, b| a.key().cmp(b.key()));
        write_in_batches(store, ops.iter().map(|e| (e.key(), e.value())))?;
        for e in ops {
            e.flags &= !DIRTY;
        }
        self.dirty = 0;
        Ok(())
    }

    /// Writes back, then keeps only entries used since the last eviction,
    /// up to half the bound.
    fn evict(&mut self, store: &mut dyn KvStore) -> Result<(), StateError> {
        self.write_back(store)?;
        let keep = self.capacity / 2;
        let mut kept = 0;
        self.table.retain(|e| {
            let used = e.flags & REFERENCED != 0;
            e.flags &= !REFERENCED;
            if used && kept + e.bytes() <= keep {
                kept += e.bytes();
                true
            } else {
                false
            }
        });
        self.bytes = kept;
        Ok(())
    }
}

/// Writes sorted puts and deletes in batches of about a memtable's worth
/// or less: one batch goes into one memtable whole, however big.
fn write_in_batches<'a>(
    store: &mut dyn KvStore,
    ops: impl Iterator<Item = (&'a [u8], Option<&'a [u8]>)>,
) -> Result<(), StateError> {
    let mut batch = Vec::new();
    let mut batch_bytes = 0;
    for (key, value) in ops {
        batch_bytes += key.len() + value.map_or(0, <[u8]>::len);
        batch.push((key, value));
        if batch_bytes >= WRITE_BACK_BATCH_BYTES {
            store.write_batch(&batch)?;
            batch.clear();
            batch_bytes = 0;
        }
    }
    if !batch.is_empty() {
        store.write_batch(&batch)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::kv::ScanFn;

    /// A sorted store counting the reads that reach it.
    #[derive(Default)]
    struct Store {
        map: BTreeMap<Vec<u8>, Vec<u8>>,
        gets: usize,
        /// The keys of each multi-get.
        multi_gets: Vec<Vec<Vec<u8>>>,
    }

    impl KvStore for Store {
        fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>, StateError> {
            self.gets += 1;
            Ok(self.map.get(key).cloned())
        }
        fn multi_get(
            &mut self,
            keys: &[&[u8]],
            f: &mut crate::kv::MultiGetFn<'_>,
        ) -> Result<(), StateError> {
            self.multi_gets
                .push(keys.iter().map(|k| k.to_vec()).collect());
            for (i, key) in keys.iter().enumerate() {
                f(i, self.map.get(*key).map(Vec::as_slice))?;
            }
            Ok(())
        }
        fn put(&mut self, key: &[u8], value: &[u8]) -> Result<(), StateError> {
            self.map.insert(key.to_vec(), value.to_vec());
            Ok(())
        }
        fn delete(&mut self, key: &[u8]) -> Result<(), StateError> {
            self.map.remove(key);
            Ok(())
        }
        fn scan_prefix(&mut self, _: &[u8], _: &mut ScanFn<'_>) -> Result<(), StateError> {
            Ok(())
        }
    }

    fn key(i: u32) -> [u8; 4] {
        i.to_be_bytes()
    }

    /// A key used between two evictions survives the second one; a scan of
    /// more keys than fit goes through without pushing it out.
    #[test]
    fn hot_keys_survive_a_scan() -> Result<(), StateError> {
        let mut store = Store::default();
        let cap = 100 * (ENTRY_OVERHEAD + 8);
        let mut cache = WriteBackCache::new(cap);
        cache.write(&mut store, &key(0), Some(b"hot!"))?;
        for i in 1..2_000 {
            cache.write(&mut store, &key(i), Some(b"cold"))?;
            // The hot key is read all along.
            assert_eq!(
                cache.read(&mut store, &key(0), |v| v.map(<[u8]>::to_vec))?,
                Some(b"hot!".to_vec())
            );
            assert!(cache.bytes() <= cap);
        }
        assert_eq!(store.gets, 0, "the hot key was evicted");
        // Every cold value reached the store or is still cached.
        cache.write_back(&mut store)?;
        assert_eq!(store.map.len(), 2_000);
        Ok(())
    }

    /// A preload reads only the keys not cached, each once, sorted, in one
    /// multi-get; their records then find them cached (absent ones too),
    /// and a dirty cached value is not overwritten by the store's.
    #[test]
    fn preload_reads_the_uncached_keys_together() -> Result<(), StateError> {
        let mut store = Store::default();
        for i in 0..8 {
            store.put(&key(i), &[i as u8])?;
        }
        let mut cache = WriteBackCache::new(1 << 20);
        cache.write(&mut store, &key(3), Some(b"new"))?;
        let wanted = [key(5), key(3), key(1), key(5), key(42)];
        let mut keys: Vec<&[u8]> = wanted.iter().map(|k| &k[..]).collect();
        cache.preload(&mut store, &mut keys)?;
        assert_eq!(
            store.multi_gets,
            vec![vec![key(1).to_vec(), key(5).to_vec(), key(42).to_vec()]]
        );
        assert_eq!(cache.misses(), 3);
        for (k, v) in [(1, Some(vec![1])), (5, Some(vec![5])), (42, None)] {
            assert_eq!(
                cache.read(&mut store, &key(k), |v| v.map(<[u8]>::to_vec))?,
                v
            );
        }
        assert_eq!(
            cache.read(&mut store, &key(3), |v| v.map(<[u8]>::to_vec))?,
            Some(b"new".to_vec())
        );
        assert_eq!(store.gets, 0);
        // Everything wanted is cached now: nothing more to read.
        let mut keys: Vec<&[u8]> = wanted.iter().map(|k| &k[..]).collect();
        cache.preload(&mut store, &mut keys)?;
        assert_eq!(store.multi_gets.len(), 1);
        Ok(())
    }

    /// Updates of equal length reuse the entry; a delete is written back as
    /// a delete; a known-absent key is not read from the store twice.
    #[test]
    fn updates_deletes_and_absent_keys() -> Result<(), StateError> {
        let mut store = Store::default();
        store.put(&key(1), b"old")?;
        let mut cache = WriteBackCache::new(1 << 20);
        assert!(cache.read(&mut store, &key(2), |v| v.is_none())?);
        assert!(cache.read(&mut store, &key(2), |v| v.is_none())?);
        assert_eq!(store.gets, 1);
        cache.write(&mut store, &key(1), Some(b"new"))?;
        cache.write(&mut store, &key(1), Some(b"newer"))?;
        assert_eq!(store.map.get(&key(1)[..]), Some(&b"old".to_vec()));
        cache.write_back(&mut store)?;
        assert_eq!(store.map.get(&key(1)[..]), Some(&b"newer".to_vec()));
        cache.write(&mut store, &key(1), None)?;
        cache.write_back(&mut store)?;
        assert!(store.map.is_empty());
        assert!(cache.read(&mut store, &key(1), |v| v.is_none())?);
        Ok(())
    }

    /// Tracked writes reach the store on their own; other dirty entries
    /// wait; the tracked keys count against the bound.
    #[test]
    fn tracked_writes_are_written_back_alone() -> Result<(), StateError> {
        let mut store = Store::default();
        let cap = 20 * (ENTRY_OVERHEAD + 8);
        let mut cache = WriteBackCache::new(cap);
        cache.write(&mut store, &key(1), Some(b"plain"))?;
        cache.write_tracked(&mut store, &key(2), Some(b"map"))?;
        cache.write_tracked(&mut store, &key(2), Some(b"map2"))?;
        assert_eq!(cache.tracked.len(), 1);
        cache.write_back_tracked(&mut store)?;
        assert_eq!(store.map.get(&key(2)[..]), Some(&b"map2".to_vec()));
        assert!(!store.map.contains_key(&key(1)[..]));
        for i in 10..1_000 {
            cache.write_tracked(&mut store, &key(i), Some(b"v"))?;
            assert!(cache.bytes() <= cap + ENTRY_OVERHEAD + TRACKED_OVERHEAD + 8);
        }
        cache.write_back(&mut store)?;
        assert_eq!(store.map.len(), 992);
        Ok(())
    }
}
