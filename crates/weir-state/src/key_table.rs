//! The heap backend's hash table: encoded keys to typed values, open
//! addressing with linear probing; entries inline in the probed array, or,
//! for large entries, in an array of their own that the probed slots index.
//!
//! Why not a general-purpose table: with millions of keys nearly every
//! lookup misses the caches, and the fix is to start loading a key's entry
//! a few records before it is needed ([`KeyTable::prefetch`]). Here the
//! entry a key most likely sits in is `slots[hash & mask]`, an address known
//! from the hash alone, so a prefetch costs no memory access of its own; a
//! table with separate control bytes (SwissTable) must read those first,
//! which is itself a miss. Each entry keeps its hash, so most mismatches are
//! settled without comparing keys, and growing never hashes a key again.
//!
//! Entries larger than [`INDEXED_ABOVE`] bytes (a join's rows and groups of
//! one key) are kept apart, packed in insertion order, with an index of
//! small slots (hash, position) probed instead: growing then moves 16-byte
//! slots, not whole entries, and the table's memory is its entries plus a
//! sixth, not two or three times them (every byte of it first written on
//! a page fault). A lookup then reads the slot and then the entry, and
//! the backend's second prefetch stage ([`KeyTable::prefetch_second`])
//! loads the entry once the slot is in cache.

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
    /// The entries, in the probed array (entries of at most
    /// [`INDEXED_ABOVE`] bytes; empty otherwise).
    slots: Vec<Option<Entry<V>>>,
    /// The probed array of the indexed layout (larger entries; empty
    /// otherwise), and the entries it points into.
    index: Vec<Slot>,
    entries: Vec<Entry<V>>,
    len: usize,
    /// Whether a key too long to sit inline was ever inserted: without
    /// one, [`KeyTable::prefetch_second`] has nothing to load and does
    /// not read a slot that may not have arrived yet.
    long_keys: bool,
}

impl<V> Default for KeyTable<V> {
    fn default() -> Self {
        KeyTable {
            slots: Vec::new(),
            index: Vec::new(),
            entries: Vec::new(),
            len: 0,
            long_keys: false,
        }
    }
}

/// Slots of a table's first allocation.
const MIN_SLOTS: usize = 4;

/// Entries (with their key and hash) larger than this many bytes are kept
/// apart from the probed slots; see the module documentation. Below it, a
/// lookup's one miss is worth more than what growing costs.
pub(crate) const INDEXED_ABOVE: usize = 160;

/// A probed slot of the indexed layout: an entry's hash and its position
/// in the entries, [`Slot::EMPTY`] where there is none.
#[derive(Clone, Copy)]
struct Slot {
    hash: u64,
    at: usize,
}

impl Slot {
    const EMPTY: Slot = Slot {
        hash: 0,
        at: usize::MAX,
    };

    #[inline]
    fn is_empty(&self) -> bool {
        self.at == usize::MAX
    }
}

impl Default for Slot {
    fn default() -> Self {
        Slot::EMPTY
    }
}

impl<V> KeyTable<V> {
    /// Whether entries sit apart from the probed slots.
    const INDEXED: bool = std::mem::size_of::<Option<Entry<V>>>() > INDEXED_ABOVE;

    /// Bytes of the table per slot, used or not: a slot holding an entry,
    /// or an index slot and the room for entries it stands for (the
    /// entries' array holds between half and all as many as the slots;
    /// three quarters of an entry, then).
    pub const SLOT_BYTES: usize = if Self::INDEXED {
        std::mem::size_of::<Slot>() + std::mem::size_of::<Entry<V>>() * 3 / 4
    } else {
        std::mem::size_of::<Option<Entry<V>>>()
    };

    /// Number of entries.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Number of slots (the table's size in entries, used or not).
    #[inline]
    pub fn slots(&self) -> usize {
        if Self::INDEXED {
            self.index.len()
        } else {
            self.slots.len()
        }
    }

    #[inline]
    fn mask(&self) -> usize {
        self.slots().wrapping_sub(1)
    }

    /// Where the probe for `hash` starts.
    #[inline]
    fn home(&self, hash: u64) -> usize {
        hash as usize & self.mask()
    }

    /// The slot holding `key` (hashed to `hash`), if any.
    #[inline]
    fn position(&self, hash: u64, key: &[u8]) -> Option<usize> {
        self.probe(hash, |e| e.key.as_slice() == key)
    }

    /// The first slot of `hash`'s probe whose entry has that hash and
    /// `matches`, if any.
    #[inline(always)]
    fn probe(&self, hash: u64, matches: impl Fn(&Entry<V>) -> bool) -> Option<usize> {
        if self.len == 0 {
            return None;
        }
        let mask = self.mask();
        let mut i = hash as usize & mask;
        if Self::INDEXED {
            loop {
                let slot = self.index[i];
                if slot.is_empty() {
                    return None;
                }
                if slot.hash == hash && matches(&self.entries[slot.at]) {
                    return Some(i);
                }
                i = (i + 1) & mask;
            }
        }
        loop {
            match &self.slots[i] {
                None => return None,
                Some(e) if e.hash == hash && matches(e) => return Some(i),
                Some(_) => i = (i + 1) & mask,
            }
        }
    }

    /// The entry whose key hashes to `hash`, its key not compared: for a
    /// hint (a look ahead at a later key's value), where comparing waited
    /// for a long key's bytes, and where an entry of another key with the
    /// same 64-bit hash would only load the wrong lines.
    #[inline]
    pub fn find_by_hash(&self, hash: u64) -> Option<&Entry<V>> {
        self.entry_at(self.probe(hash, |_| true)?)
    }

    /// The entry of `key` (hashed to `hash`).
    #[inline]
    pub fn find(&self, hash: u64, key: &[u8]) -> Option<&Entry<V>> {
        self.entry_at(self.position(hash, key)?)
    }

    /// The entry of slot `i`.
    #[inline(always)]
    fn entry_at(&self, i: usize) -> Option<&Entry<V>> {
        if Self::INDEXED {
            return self.entries.get(self.index[i].at);
        }
        self.slots[i].as_ref()
    }

    /// The entry of `key` (hashed to `hash`), to change its value or stamp.
    #[inline]
    pub fn find_mut(&mut self, hash: u64, key: &[u8]) -> Option<&mut Entry<V>> {
        let i = self.position(hash, key)?;
        if Self::INDEXED {
            return self.entries.get_mut(self.index[i].at);
        }
        self.slots[i].as_mut()
    }

    /// Inserts a key known to be absent.
    #[inline]
    pub fn insert_unique(&mut self, entry: Entry<V>) {
        // At most three quarters full: probes stay short.
        if (self.len + 1) * 4 > self.slots() * 3 {
            self.grow();
        }
        self.long_keys |= matches!(entry.key, KeyBytes::Heap(_));
        self.place(entry);
        self.len += 1;
    }

    /// Puts `entry` in the first free slot of its probe sequence (in the
    /// indexed layout, at the end of the entries and its slot there).
    #[inline]
    fn place(&mut self, entry: Entry<V>) {
        if Self::INDEXED {
            let slot = Slot {
                hash: entry.hash,
                at: self.entries.len(),
            };
            self.entries.push(entry);
            put_slot(&mut self.index, slot);
            return;
        }
        let i = free_slot(&self.slots, entry.hash, self.mask(), Option::is_none);
        self.slots[i] = Some(entry);
    }

    fn grow(&mut self) {
        let size = (self.slots() * 2).max(MIN_SLOTS);
        if Self::INDEXED {
            // Only the slots move; each keeps its entry's hash.
            let old = std::mem::replace(&mut self.index, vec![Slot::EMPTY; size]);
            for slot in old.into_iter().filter(|s| !s.is_empty()) {
                put_slot(&mut self.index, slot);
            }
            return;
        }
        let old = std::mem::replace(&mut self.slots, Vec::with_capacity(size));
        self.slots.resize_with(size, || None);
        for entry in old.into_iter().flatten() {
            self.place(entry);
        }
    }

    /// Removes and returns the entry of `key` (hashed to `hash`).
    pub fn remove(&mut self, hash: u64, key: &[u8]) -> Option<Entry<V>> {
        let i = self.position(hash, key)?;
        self.len -= 1;
        let mask = self.mask();
        if !Self::INDEXED {
            let removed = self.slots[i].take();
            close_gap(&mut self.slots, i, mask, |s| s.as_ref().map(|e| e.hash));
            return removed;
        }
        let at = std::mem::replace(&mut self.index[i], Slot::EMPTY).at;
        close_gap(&mut self.index, i, mask, |s| {
            (!s.is_empty()).then_some(s.hash)
        });
        let removed = self.entries.swap_remove(at);
        // The last entry moved into the hole: its slot follows it.
        if let Some(moved) = self.entries.get(at) {
            let last = self.entries.len();
            let mut j = self.home(moved.hash);
            while self.index[j].at != last {
                j = (j + 1) & mask;
            }
            self.index[j].at = at;
        }
        Some(removed)
    }

    /// Every entry, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = &Entry<V>> {
        // One of the two is empty.
        self.slots.iter().flatten().chain(&self.entries)
    }

    /// Keeps the entries for which `keep` is true.
    pub fn retain(&mut self, mut keep: impl FnMut(&Entry<V>) -> bool) {
        if self.iter().all(&mut keep) {
            return;
        }
        if Self::INDEXED {
            self.entries.retain(|e| keep(e));
            self.len = self.entries.len();
            self.index.fill(Slot::EMPTY);
            for (at, e) in self.entries.iter().enumerate() {
                put_slot(&mut self.index, Slot { hash: e.hash, at });
            }
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
        if Self::INDEXED {
            // A slot of 16 bytes, 16-aligned: one line.
            if let Some(slot) = self.index.get(self.home(hash)) {
                prefetch_line(slot as *const Slot as usize);
            }
            return;
        }
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

    /// The second step after [`KeyTable::prefetch`], once the slot is in
    /// cache: asks the CPU to start loading what the slot where `hash`'s
    /// probe starts points to. In the indexed layout, its entry, every
    /// line of it (the first and last alone left a row's reads of the
    /// fields between to miss: 1.5 % of q4's rate); otherwise
    /// the bytes of its key, when they are not inline (a key's lookup
    /// compares its bytes, a miss of its own when they sit apart). A hint;
    /// nothing changes.
    #[inline(always)]
    pub fn prefetch_second(&self, hash: u64) {
        if Self::INDEXED {
            let Some(slot) = self.index.get(self.home(hash)) else {
                return;
            };
            if slot.hash == hash {
                if let Some(e) = self.entries.get(slot.at) {
                    prefetch_slice(std::slice::from_ref(e));
                }
            }
            return;
        }
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

/// The first slot of `slots` with no entry (`empty`) in the probe
/// sequence of `hash`.
#[inline]
fn free_slot<T>(slots: &[T], hash: u64, mask: usize, empty: impl Fn(&T) -> bool) -> usize {
    let mut i = hash as usize & mask;
    while !empty(&slots[i]) {
        i = (i + 1) & mask;
    }
    i
}

/// Puts `slot` in the first empty place of its probe sequence in `index`
/// (not empty, a power of two long).
#[inline]
fn put_slot(index: &mut [Slot], slot: Slot) {
    let i = free_slot(index, slot.hash, index.len() - 1, Slot::is_empty);
    index[i] = slot;
}

/// Backward-shift deletion: moves later slots of the run after the freed
/// slot `gap` back, so that no lookup stops early at the hole. `hash` is
/// the hash of a slot's entry, `None` for an empty slot.
fn close_gap<T: Default>(
    slots: &mut [T],
    mut gap: usize,
    mask: usize,
    hash: impl Fn(&T) -> Option<u64>,
) {
    let mut i = (gap + 1) & mask;
    while let Some(h) = hash(&slots[i]) {
        let home = h as usize & mask;
        // The entry may move to the gap if its home is not in the cyclic
        // range (gap, i].
        if (i.wrapping_sub(home) & mask) >= (i.wrapping_sub(gap) & mask) {
            slots[gap] = std::mem::take(&mut slots[i]);
            gap = i;
        }
        i = (i + 1) & mask;
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

/// Asks the CPU to start loading the cache line at `address` to be
/// written (`prefetchw`): besides loading it, the other cores' copies of
/// it are invalidated ahead of the write, which otherwise waits for that
/// round trip (a line last read by another core, as a row's buffer handed
/// back by the thread that read the row). A hint, as [`prefetch_line`];
/// a no-op on CPUs without the instruction, which decode it as one.
#[inline(always)]
pub fn prefetch_line_for_write(address: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `prefetchw` is a hint; it neither faults nor changes memory,
    // registers or flags, whatever the address. (`_mm_prefetch` with
    // `_MM_HINT_ET0` emits a read prefetch on the baseline target.)
    unsafe {
        std::arch::asm!(
            "prefetchw [{}]",
            in(reg) address,
            options(nostack, preserves_flags, readonly)
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = address;
}

/// Asks the CPU to start loading every cache line of `values` (see
/// [`prefetch_line`]).
#[inline]
pub fn prefetch_slice<T>(values: &[T]) {
    let start = values.as_ptr() as usize;
    each_line(start, std::mem::size_of_val(values), prefetch_line);
}

/// [`prefetch_line_for_write`] for every cache line of the `bytes` bytes
/// at `start` (memory about to be written, which need not hold values
/// yet).
#[inline]
pub fn prefetch_range_for_write(start: usize, bytes: usize) {
    each_line(start, bytes, prefetch_line_for_write);
}

/// `prefetch` for the address of every cache line of the `bytes` bytes at
/// `start`.
#[inline(always)]
fn each_line(start: usize, bytes: usize, prefetch: impl Fn(usize)) {
    for line in (start & !63..start + bytes).step_by(64) {
        prefetch(line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// A prefetch, for reading or writing, is a hint: it neither faults on
    /// an address that is not mapped nor changes what it points at.
    #[test]
    fn prefetches_neither_fault_nor_change_memory() {
        let line = [7u8; 64];
        for address in [0, 8, usize::MAX - 63, line.as_ptr() as usize] {
            prefetch_line(address);
            prefetch_line_for_write(address);
        }
        assert_eq!(line, [7u8; 64]);
    }

    /// A value of a test table: held inline as itself, or (`Wide`) in an
    /// entry large enough to be kept apart from the slots.
    trait TestValue: Clone {
        fn of(n: u32) -> Self;
        fn get(&self) -> u32;
    }

    impl TestValue for u32 {
        fn of(n: u32) -> Self {
            n
        }
        fn get(&self) -> u32 {
            *self
        }
    }

    #[derive(Clone)]
    struct Wide([u32; 48]);

    impl TestValue for Wide {
        fn of(n: u32) -> Self {
            Wide([n; 48])
        }
        fn get(&self) -> u32 {
            // Every word, so that an entry mixed up with another shows.
            assert!(self.0.iter().all(|&w| w == self.0[0]), "a torn value");
            self.0[0]
        }
    }

    // Each layout is tested where it is meant to be used.
    const _: () = assert!(!KeyTable::<u32>::INDEXED && KeyTable::<Wide>::INDEXED);

    fn entry<V: TestValue>(hash: u64, key: &[u8], value: u32) -> Entry<V> {
        Entry {
            hash,
            key: key.into(),
            value: V::of(value),
            stamp: 0,
        }
    }

    #[test]
    fn behaves_as_a_map_under_random_inserts_and_removes() {
        behaves_as_a_map::<u32>();
        behaves_as_a_map::<Wide>();
    }

    fn behaves_as_a_map<V: TestValue>() {
        // Few distinct hashes, so that runs are long and collide across the
        // wrap-around: the cases backward-shift deletion must get right.
        let mut table = KeyTable::<V>::default();
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
                    let removed = table.remove(hash, &key).map(|e| e.value.get());
                    assert_eq!(removed, model.remove(&key), "step {step}");
                    removed_some += usize::from(removed.is_some());
                }
                1 | 2 => match table.find_mut(hash, &key) {
                    Some(e) => {
                        e.value = V::of(step);
                        *model.get_mut(&key).expect("in model") = step;
                    }
                    None => {
                        assert!(!model.contains_key(&key));
                        table.insert_unique(entry(hash, &key, step));
                        model.insert(key, step);
                    }
                },
                _ => {
                    let found = table.find(hash, &key).map(|e| e.value.get());
                    assert_eq!(found, model.get(&key).copied(), "step {step}");
                }
            }
            assert_eq!(table.len(), model.len());
        }
        assert!(removed_some > 1000, "{removed_some} removals");
        let mut all: Vec<(Vec<u8>, u32)> = table
            .iter()
            .map(|e| (e.key.as_slice().to_vec(), e.value.get()))
            .collect();
        all.sort();
        let mut expected: Vec<(Vec<u8>, u32)> = model.into_iter().collect();
        expected.sort();
        assert_eq!(all, expected);
    }

    #[test]
    fn retain_keeps_what_it_is_told_and_lookups_still_work() {
        retain_keeps::<u32>();
        retain_keeps::<Wide>();
    }

    fn retain_keeps<V: TestValue>() {
        let mut table = KeyTable::<V>::default();
        for i in 0..1000u32 {
            let key = i.to_le_bytes();
            table.insert_unique(entry(u64::from(i % 16), &key, i));
        }
        table.retain(|e| e.value.get() % 3 == 0);
        assert_eq!(table.len(), 334);
        assert_eq!(table.iter().count(), 334);
        for i in 0..1000u32 {
            let found = table
                .find(u64::from(i % 16), &i.to_le_bytes())
                .map(|e| e.value.get());
            assert_eq!(found, (i % 3 == 0).then_some(i));
        }
    }

    /// Found by hash alone, an entry is the one its key finds (each key's
    /// hash its own); a hash held by no key finds none, and of keys sharing
    /// a hash, one of them.
    #[test]
    fn found_by_hash_alone_an_entry_is_its_keys() {
        found_by_hash::<u32>();
        found_by_hash::<Wide>();
    }

    fn found_by_hash<V: TestValue>() {
        let mut table = KeyTable::<V>::default();
        assert!(table.find_by_hash(7).is_none());
        let hash = |i: u64| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        for i in 0..2000u64 {
            table.insert_unique(entry(hash(i), &i.to_le_bytes(), i as u32));
        }
        for i in 0..2000u64 {
            let by_key = table.find(hash(i), &i.to_le_bytes()).map(|e| e.value.get());
            assert_eq!(by_key, Some(i as u32));
            assert_eq!(table.find_by_hash(hash(i)).map(|e| e.value.get()), by_key);
        }
        assert!(table.find_by_hash(2).is_none());
        table.insert_unique(entry(2, b"one", 1));
        table.insert_unique(entry(2, b"two", 2));
        let shared = table.find_by_hash(2).map(|e| e.value.get());
        assert!(matches!(shared, Some(1 | 2)), "{shared:?}");
    }

    #[test]
    fn stays_at_most_three_quarters_full() {
        stays_three_quarters_full::<u32>();
        stays_three_quarters_full::<Wide>();
    }

    fn stays_three_quarters_full<V: TestValue>() {
        let mut table = KeyTable::<V>::default();
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
