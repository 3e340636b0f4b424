//! The heap backend's hash table: encoded keys to typed values, entries
//! inline in one array, open addressing with linear probing.
//!
//! Why not a general-purpose table: with millions of keys nearly every
//! lookup misses the caches, and the fix is to start loading a key's entry
//! a few records before it is needed ([`KeyTable::prefetch`]). Here the
//! entry a key most likely sits in is `slots[hash & mask]`, an address known
//! from the hash alone, so a prefetch costs no memory access of its own; a
//! table with separate control bytes (SwissTable) must read those first,
//! which is itself a miss. Each entry keeps its hash, so most mismatches are
//! settled without comparing keys, and growing never hashes a key again.

use crate::key_bytes::KeyBytes;

/// One stored value: its key, the key's hash, and when it was last touched
/// (the time-to-live stamp; 0 and unused without one).
#[derive(Clone)]
pub(crate) struct Entry<V> {
    pub hash: u64,
    pub key: KeyBytes,
    pub value: V,
    pub stamp: i64,
}

/// Encoded keys to values; see the module documentation.
#[derive(Clone)]
pub(crate) struct KeyTable<V> {
    slots: Vec<Option<Entry<V>>>,
    len: usize,
    /// Whether a key too long to sit inline was ever inserted: without
    /// one, [`KeyTable::prefetch_key_bytes`] has nothing to load and does
    /// not read a slot that may not have arrived yet.
    long_keys: bool,
}

impl<V> Default for KeyTable<V> {
    fn default() -> Self {
        KeyTable {
            slots: Vec::new(),
            len: 0,
            long_keys: false,
        }
    }
}

/// Slots of a table's first allocation.
const MIN_SLOTS: usize = 4;

impl<V> KeyTable<V> {
    /// Bytes of one slot (an entry, or an empty slot of the same size).
    pub const SLOT_BYTES: usize = std::mem::size_of::<Option<Entry<V>>>();

    /// Number of entries.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Number of slots (the table's size in entries, used or not).
    #[inline]
    pub fn slots(&self) -> usize {
        self.slots.len()
    }

    #[inline]
    fn mask(&self) -> usize {
        self.slots.len().wrapping_sub(1)
    }

    /// Where the probe for `hash` starts.
    #[inline]
    fn home(&self, hash: u64) -> usize {
        hash as usize & self.mask()
    }

    /// The slot holding `key` (hashed to `hash`), if any.
    #[inline]
    fn position(&self, hash: u64, key: &[u8]) -> Option<usize> {
        if self.len == 0 {
            return None;
        }
        let mask = self.mask();
        let mut i = hash as usize & mask;
        loop {
            match &self.slots[i] {
                None => return None,
                Some(e) if e.hash == hash && e.key.as_slice() == key => return Some(i),
                Some(_) => i = (i + 1) & mask,
            }
        }
    }

    /// The entry of `key` (hashed to `hash`).
    #[inline]
    pub fn find(&self, hash: u64, key: &[u8]) -> Option<&Entry<V>> {
        let i = self.position(hash, key)?;
        self.slots[i].as_ref()
    }

    /// The entry of `key` (hashed to `hash`), to change its value or stamp.
    #[inline]
    pub fn find_mut(&mut self, hash: u64, key: &[u8]) -> Option<&mut Entry<V>> {
        let i = self.position(hash, key)?;
        self.slots[i].as_mut()
    }

    /// Inserts a key known to be absent.
    #[inline]
    pub fn insert_unique(&mut self, entry: Entry<V>) {
        // At most three quarters full: probes stay short.
        if (self.len + 1) * 4 > self.slots.len() * 3 {
            self.grow();
        }
        self.long_keys |= matches!(entry.key, KeyBytes::Heap(_));
        self.place(entry);
        self.len += 1;
    }

    /// Puts `entry` in the first free slot of its probe sequence.
    #[inline]
    fn place(&mut self, entry: Entry<V>) {
        let mask = self.mask();
        let mut i = entry.hash as usize & mask;
        while self.slots[i].is_some() {
            i = (i + 1) & mask;
        }
        self.slots[i] = Some(entry);
    }

    fn grow(&mut self) {
        let size = (self.slots.len() * 2).max(MIN_SLOTS);
        let old = std::mem::replace(&mut self.slots, Vec::with_capacity(size));
        self.slots.resize_with(size, || None);
        for entry in old.into_iter().flatten() {
            self.place(entry);
        }
    }

    /// Removes and returns the entry of `key` (hashed to `hash`).
    pub fn remove(&mut self, hash: u64, key: &[u8]) -> Option<Entry<V>> {
        let i = self.position(hash, key)?;
        let removed = self.slots[i].take();
        self.len -= 1;
        self.close_gap(i);
        removed
    }

    /// Backward-shift deletion: moves later entries of the run after the
    /// freed slot `gap` back, so that no lookup stops early at the hole.
    fn close_gap(&mut self, mut gap: usize) {
        let mask = self.mask();
        let mut i = (gap + 1) & mask;
        while let Some(e) = &self.slots[i] {
            let home = self.home(e.hash);
            // The entry may move to the gap if its home is not in the
            // cyclic range (gap, i].
            if (i.wrapping_sub(home) & mask) >= (i.wrapping_sub(gap) & mask) {
                self.slots[gap] = self.slots[i].take();
                gap = i;
            }
            i = (i + 1) & mask;
        }
    }

    /// Every entry, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = &Entry<V>> {
        self.slots.iter().flatten()
    }

    /// Keeps the entries for which `keep` is true.
    pub fn retain(&mut self, mut keep: impl FnMut(&Entry<V>) -> bool) {
        if self.iter().all(&mut keep) {
            return;
        }
        let size = self.slots.len();
        let old = std::mem::replace(&mut self.slots, Vec::with_capacity(size));
        self.slots.resize_with(size, || None);
        self.len = 0;
        for entry in old.into_iter().flatten() {
            if keep(&entry) {
                self.place(entry);
                self.len += 1;
            }
        }
    }

    /// Asks the CPU to start loading the slot where `hash`'s probe starts,
    /// so that a lookup a few records later finds it in cache: with big
    /// state nearly every access misses the caches, and prefetches let
    /// several misses overlap. A hint; nothing changes.
    #[inline(always)]
    pub fn prefetch(&self, hash: u64) {
        if self.slots.is_empty() {
            return;
        }
        let slot: *const Option<Entry<V>> = &self.slots[self.home(hash)];
        let first = slot as usize;
        // An entry may straddle two cache lines: load both.
        let last = first + Self::SLOT_BYTES - 1;
        prefetch_line(first);
        if last / 64 != first / 64 {
            prefetch_line(last);
        }
    }

    /// Asks the CPU to start loading the bytes of the key in the slot
    /// where `hash`'s probe starts, when they are not inline: the second
    /// step after [`KeyTable::prefetch`], once the slot is in cache (a
    /// key's lookup compares its bytes, a miss of its own when they sit
    /// apart). A hint; nothing changes.
    #[inline(always)]
    pub fn prefetch_key_bytes(&self, hash: u64) {
        if !self.long_keys || self.slots.is_empty() {
            return;
        }
        if let Some(e) = &self.slots[self.home(hash)] {
            if e.hash == hash {
                if let KeyBytes::Heap(bytes) = &e.key {
                    prefetch_line(bytes.as_ptr() as usize);
                }
            }
        }
    }
}

/// Asks the CPU to start loading the cache line at `address`, so that a
/// read of it a little later does not wait for memory. A hint: it neither
/// faults nor changes anything, whatever the address.
#[inline(always)]
pub fn prefetch_line(address: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint; it neither faults nor reads into the
    // program, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(address as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = address;
}

/// Asks the CPU to start loading every cache line of `values` (see
/// [`prefetch_line`]).
#[inline]
pub fn prefetch_slice<T>(values: &[T]) {
    let start = values.as_ptr() as usize;
    let end = start + std::mem::size_of_val(values);
    for line in (start & !63..end).step_by(64) {
        prefetch_line(line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn entry(hash: u64, key: &[u8], value: u32) -> Entry<u32> {
        Entry {
            hash,
            key: key.into(),
            value,
            stamp: 0,
        }
    }

    #[test]
    fn behaves_as_a_map_under_random_inserts_and_removes() {
        // Few distinct hashes, so that runs are long and collide across the
        // wrap-around: the cases backward-shift deletion must get right.
        let mut table = KeyTable::default();
        let mut model: HashMap<Vec<u8>, u32> = HashMap::new();
        let mut removed_some = 0;
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        for step in 0..20_000u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let k = (x >> 20) % 300;
            let key = k.to_le_bytes().to_vec();
            // Homes near the start, and near the end (runs that wrap).
            let hash = if k % 2 == 0 { k % 37 } else { u64::MAX - k % 5 };
            match x % 4 {
                0 => {
                    let removed = table.remove(hash, &key).map(|e| e.value);
                    assert_eq!(removed, model.remove(&key), "step {step}");
                    removed_some += usize::from(removed.is_some());
                }
                1 | 2 => match table.find_mut(hash, &key) {
                    Some(e) => {
                        e.value = step;
                        *model.get_mut(&key).expect("in model") = step;
                    }
                    None => {
                        assert!(!model.contains_key(&key));
                        table.insert_unique(entry(hash, &key, step));
                        model.insert(key, step);
                    }
                },
                _ => {
                    let found = table.find(hash, &key).map(|e| e.value);
                    assert_eq!(found, model.get(&key).copied(), "step {step}");
                }
            }
            assert_eq!(table.len(), model.len());
        }
        assert!(removed_some > 1000, "{removed_some} removals");
        let mut all: Vec<(Vec<u8>, u32)> = table
            .iter()
            .map(|e| (e.key.as_slice().to_vec(), e.value))
            .collect();
        all.sort();
        let mut expected: Vec<(Vec<u8>, u32)> = model.into_iter().collect();
        expected.sort();
        assert_eq!(all, expected);
    }

    #[test]
    fn retain_keeps_what_it_is_told_and_lookups_still_work() {
        let mut table = KeyTable::default();
        for i in 0..1000u32 {
            let key = i.to_le_bytes();
            table.insert_unique(entry(u64::from(i % 16), &key, i));
        }
        table.retain(|e| e.value % 3 == 0);
        assert_eq!(table.len(), 334);
        for i in 0..1000u32 {
            let found = table
                .find(u64::from(i % 16), &i.to_le_bytes())
                .map(|e| e.value);
            assert_eq!(found, (i % 3 == 0).then_some(i));
        }
    }

    #[test]
    fn stays_at_most_three_quarters_full() {
        let mut table = KeyTable::default();
        for i in 0..10_000u64 {
            table.insert_unique(entry(
                i.wrapping_mul(0x9E37_79B9_7F4A_7C15),
                &i.to_le_bytes(),
                0,
            ));
            assert!(table.len() * 4 <= table.slots() * 3);
        }
        assert_eq!(table.slots(), 16_384);
    }
}
