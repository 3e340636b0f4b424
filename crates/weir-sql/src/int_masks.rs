//! A set of integers each carrying a mask of up to 64 bits: the values
//! taken by the append-only `COUNT(DISTINCT …) FILTER (…)`s of one
//! integral column, a bit per call.
//!
//! The values such counts see are mostly ids handed out in order (a
//! bidder's, an auction's), and a set takes one of three forms:
//!
//! - **Singles**, where a set starts: each value and its mask in one
//!   `u32` (the value as its distance from a base the set's first value
//!   fixed), ascending. A set of ids far apart (a cold channel's bidders
//!   in q16, hundreds of them, each hundreds of ids from the next) takes
//!   4 bytes a value. The latest few wait in the set itself (see
//!   [`Recent`]) and join the others together.
//! - **Runs**, where singles would be larger (four values or more to a
//!   run, on average) or a value is too far from the base: the values of
//!   a run of consecutive integers share one 64-bit word, beside the
//!   run. With four calls, sixteen values to a word, and a set of a
//!   million ids is 62 500 words that stay in the caches where one entry
//!   per value would not.
//! - **A table** of runs, found by hashing the run, where values come in
//!   no order.
//!
//! Both forms in order serve ids that mostly arrive in order too (a bid's
//! auction is one of the latest hundred, its bidder one of the latest
//! thousand people): a value is the last one or a few before it, so a
//! lookup reads the array's tail. With thousands of groups (q16's
//! channels), each group's sets are read once in a while; a table's slot
//! for a new value was a line loaded from memory every time, where the
//! tail is one line, loaded ahead (see [`IntMasks::prefetch`]). And the
//! smaller each set, the less memory the sets fault in as they grow: q16's
//! 20 000 sets took 350 MiB as runs, a word per value.
//!
//! A value that would go further back than [`FAR`] entries from the end,
//! or values out of order often enough that moving the entries after them
//! costs more than a table would (see [`MOVED_PER_RUN`]), turn a set in
//! order into a table: the words each beside their run, found by linear
//! probing from a slot known from the run alone, so that a lookup waits
//! for one line, not for a control byte and then its entry as in a
//! general-purpose table.
//!
//! Saved as a map from each value to its mask, so state saved by any
//! form restores into the others.

use std::fmt;

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Integers and their masks (a value with an empty mask is not held).
#[derive(Debug, Clone, Default)]
pub(crate) struct IntMasks {
    slots: Slots,
    /// Entries in use (in a table, the slots whose word is not 0).
    used: usize,
    /// In order: how many entries inserts have moved back to make room.
    moved: usize,
    /// The bits of each value's mask, as a power of two: 0 for one bit (64
    /// values to a run's word) up to 6 for 64 bits (one value to a word).
    width: u32,
}

/// A set's entries, in one of its three forms.
#[derive(Debug, Clone)]
enum Slots {
    /// Each value's distance from `base` shifted left by the mask's bits,
    /// the mask below it: ascending by value, no mask 0. Only for masks
    /// of [`SINGLE_WIDTH_MAX`] or narrower. The latest are `recent`'s,
    /// each above every one of `values`.
    Singles {
        values: Vec<u32>,
        base: i64,
        recent: Recent,
    },
    /// Each run and its word (a value's run is the value shifted right by
    /// [`IntMasks::run_shift`], its place in the word the bits shifted
    /// out), ascending by run, no word 0.
    Runs(Vec<(i64, u64)>),
    /// Runs and their words placed by hashing the run: a power of two
    /// long, and a slot whose word is 0 is empty, since a run is held
    /// only once a value of it has bits.
    Table(Vec<(i64, u64)>),
}

impl Default for Slots {
    fn default() -> Slots {
        Slots::Singles {
            values: Vec::new(),
            base: 0,
            recent: Recent {
                entries: [0; RECENT],
                len: 0,
            },
        }
    }
}

/// How many singles a set keeps beside it, the latest (see [`Recent`]).
const RECENT: usize = 14;

/// A set's latest singles, ascending, held in the set itself rather than
/// at the end of its values: where the set is kept apart from its owner
/// (a `COUNT(DISTINCT)`'s, in a box loaded ahead of its group), a value
/// newer than those held is taken without reading or writing the values'
/// tail, a line of its own for each of thousands of sets (q16's channels),
/// and most often a miss. Once full, the oldest go to the values' end
/// together: a miss for many values, not one each. Empty only while the
/// set is (a set in singles never holds fewer than one here).
#[derive(Debug, Clone, Copy)]
struct Recent {
    entries: [u32; RECENT],
    len: u8,
}

impl Recent {
    /// The singles held, ascending.
    fn held(&self) -> &[u32] {
        &self.entries[..usize::from(self.len)]
    }
}

/// The widest masks singles hold (8 bits, with distances of 24): wider
/// ones leave too few bits for a value's distance from the base.
const SINGLE_WIDTH_MAX: u32 = 3;

/// Slots of a set's first table: four to a cache line.
const MIN_SLOTS: usize = 4;

/// How many entries back from the end a value of a set in order may go:
/// a value further back makes it a table (inserting it would move more
/// than 2 KiB of runs, and values that far back are not coming in order).
const FAR: usize = 128;

/// How many entries, per entry held (and [`MOVED_SLACK`] more), inserts
/// into a set in order may move in all before it becomes a table: values
/// in order move an entry or two now and then, values in no order half
/// the set each time, which a table's insert does not.
const MOVED_PER_RUN: usize = 4;
const MOVED_SLACK: usize = 256;

/// Why a value was not inserted into singles: the set must first become
/// runs (in order) or a table.
enum Outgrown {
    Runs,
    Table,
}

impl IntMasks {
    /// An empty set whose masks have `bits` bits.
    pub fn with_bits(bits: usize) -> IntMasks {
        let width = width_for(bits);
        IntMasks {
            slots: if width <= SINGLE_WIDTH_MAX {
                Slots::default()
            } else {
                Slots::Runs(Vec::new())
            },
            used: 0,
            moved: 0,
            width,
        }
    }

    /// How far a value is shifted to give its run.
    fn run_shift(&self) -> u32 {
        6 - self.width
    }

    /// The bits of one value's mask, low bits set.
    fn mask_bits(&self) -> u64 {
        u64::MAX >> (64 - (1u32 << self.width))
    }

    /// `value`'s run, and where its mask starts in the run's word.
    #[inline(always)]
    fn run_and_place(&self, value: i64) -> (i64, u32) {
        let run_shift = self.run_shift();
        let place = ((value & ((1 << run_shift) - 1)) as u32) << self.width;
        (value >> run_shift, place)
    }

    /// Asks the CPU to start loading where the lookups of `values` start,
    /// so that inserts a little later find them in cache: the tail of a
    /// set in order (its last line or two, whatever the values), or each
    /// value's slot of a table. A hint.
    #[inline(always)]
    pub fn prefetch(&self, values: impl Iterator<Item = i64>) {
        match &self.slots {
            Slots::Singles {
                values: held,
                base,
                recent,
            } => {
                // The values' tail only where an insert will reach it: a
                // value from before the latest, or the latest full.
                let Some(&first) = recent.held().first() else {
                    return;
                };
                let oldest = base + i64::from(first >> (1u32 << self.width));
                if usize::from(recent.len) == RECENT || values.into_iter().any(|v| v < oldest) {
                    prefetch_tail(held);
                }
            }
            Slots::Runs(runs) => prefetch_tail(runs),
            Slots::Table(slots) => {
                if !slots.is_empty() {
                    let run_shift = self.run_shift();
                    for v in values {
                        let slot: *const (i64, u64) = &slots[home(slots.len(), v >> run_shift)];
                        weir_state::prefetch_line(slot as usize);
                    }
                }
            }
        }
    }

    /// Sets the bits `mask` of `value`'s mask, and returns those of them
    /// that were not set.
    #[inline]
    pub fn insert(&mut self, value: i64, mask: u64) -> u64 {
        if mask == 0 {
            return 0;
        }
        if mask & !self.mask_bits() != 0 {
            self.widen(width_for(64 - mask.leading_zeros() as usize));
        }
        if let Slots::Singles { .. } = self.slots {
            match self.insert_single(value, mask) {
                Ok(new) => return new,
                Err(Outgrown::Runs) => self.make_runs(),
                Err(Outgrown::Table) => {
                    self.make_runs();
                    self.make_table();
                }
            }
        }
        if let Slots::Runs(_) = self.slots {
            match self.insert_in_order(value, mask) {
                Some(new) => return new,
                None => self.make_table(),
            }
        }
        // At most three quarters full, so that probes stay short.
        if let Slots::Table(slots) = &self.slots {
            if (self.used + 1) * 4 > slots.len() * 3 {
                self.grow();
            }
        }
        let (run, place) = self.run_and_place(value);
        let mask_bits = self.mask_bits();
        let Slots::Table(slots) = &mut self.slots else {
            unreachable!("a set not in order is a table");
        };
        let last = slots.len() - 1;
        let mut i = home(slots.len(), run);
        loop {
            let (held_run, word) = &mut slots[i];
            if *word == 0 {
                *held_run = run;
                *word = mask << place;
                self.used += 1;
                return mask;
            }
            if *held_run == run {
                return set_bits(word, place, mask, mask_bits);
            }
            i = (i + 1) & last;
        }
    }

    /// [`IntMasks::insert`] into singles; `Err`, nothing changed, where
    /// the value is too far from the base or runs would now be smaller
    /// (the set becomes runs), or where making room would move more than
    /// [`FAR`] values, or more in all than [`MOVED_PER_RUN`] allows (it
    /// becomes a table).
    #[inline]
    fn insert_single(&mut self, value: i64, mask: u64) -> Result<u64, Outgrown> {
        let bits = 1u32 << self.width;
        let run_shift = self.run_shift();
        let Slots::Singles {
            values,
            base,
            recent,
        } = &mut self.slots
        else {
            unreachable!("inserting a single into another form");
        };
        if recent.len == 0 {
            // The first value sits a quarter of the way up the distances,
            // so that ids a little older than it still fit.
            *base = value.checked_sub(1 << (30 - bits)).ok_or(Outgrown::Runs)?;
        }
        let distance = value.checked_sub(*base).ok_or(Outgrown::Runs)?;
        if !(0..1i64 << (32 - bits)).contains(&distance) {
            return Err(Outgrown::Runs);
        }
        let entry = ((distance as u32) << bits) | mask as u32;
        let key = |e: &u32| i64::from(e >> bits);
        if recent
            .held()
            .first()
            .is_none_or(|first| key(first) <= distance)
        {
            // Among the latest, or after them.
            let held = usize::from(recent.len);
            let mut at = recent.held().partition_point(|e| key(e) < distance);
            if let Some(new) = add_to_single(&mut recent.entries[..held], at, bits, entry) {
                return Ok(new);
            }
            if held == RECENT {
                // Those below the new value (all but the last at most) go
                // to the values' end: every one of them is above the
                // values, and the new value above them.
                let moving = at.min(RECENT - 1);
                let n = values.len();
                if n + moving > values.capacity() && n >= 8 {
                    // The values are about to grow into more memory.
                    runs_would_be_smaller(values, *base, bits, run_shift)?;
                }
                values.extend_from_slice(&recent.entries[..moving]);
                recent.entries.copy_within(moving..RECENT, 0);
                at -= moving;
                recent.len -= moving as u8;
            }
            let held = usize::from(recent.len);
            recent.entries.copy_within(at..held, at + 1);
            recent.entries[at] = entry;
            recent.len += 1;
            self.used += 1;
            return Ok(mask);
        }
        let at = place_from_end(values, key, distance);
        if let Some(new) = add_to_single(values, at, bits, entry) {
            return Ok(new);
        }
        let n = values.len();
        let moved = moved_to_insert(self.moved, n, at).ok_or(Outgrown::Table)?;
        // Before the values grow into more memory: would runs hold them in
        // less? Counted as they grow, so at a cost of one read per value
        // held, in all.
        if n == values.capacity() && n >= 8 {
            runs_would_be_smaller(values, *base, bits, run_shift)?;
        }
        self.moved = moved;
        values.insert(at, entry);
        self.used += 1;
        Ok(mask)
    }

    /// [`IntMasks::insert`] into runs in order; `None`, nothing changed,
    /// where making room for the value's run would move more than [`FAR`]
    /// runs, or more in all than [`MOVED_PER_RUN`] allows.
    #[inline]
    fn insert_in_order(&mut self, value: i64, mask: u64) -> Option<u64> {
        let (run, place) = self.run_and_place(value);
        let mask_bits = self.mask_bits();
        let Slots::Runs(runs) = &mut self.slots else {
            unreachable!("inserting in order into another form");
        };
        let at = place_from_end(runs, |&(r, _)| r, run);
        if let Some((held_run, word)) = runs.get_mut(at) {
            if *held_run == run {
                return Some(set_bits(word, place, mask, mask_bits));
            }
        }
        self.moved = moved_to_insert(self.moved, runs.len(), at)?;
        runs.insert(at, (run, mask << place));
        self.used += 1;
        Some(mask)
    }

    /// Singles made runs in order (what they hold, the same).
    fn make_runs(&mut self) {
        let Slots::Singles {
            values,
            base,
            recent,
        } = std::mem::take(&mut self.slots)
        else {
            return;
        };
        let bits = 1u32 << self.width;
        let mask_bits = self.mask_bits();
        let mut runs: Vec<(i64, u64)> = Vec::with_capacity(values.len() + RECENT);
        for entry in values.into_iter().chain(recent.held().iter().copied()) {
            let value = base + i64::from(entry >> bits);
            let (run, place) = self.run_and_place(value);
            let mask = u64::from(entry) & mask_bits;
            match runs.last_mut() {
                Some((last, word)) if *last == run => *word |= mask << place,
                _ => runs.push((run, mask << place)),
            }
        }
        self.used = runs.len();
        self.moved = 0;
        self.slots = Slots::Runs(runs);
    }

    /// Runs in order placed in a table (see [`IntMasks::grow`]).
    fn make_table(&mut self) {
        let Slots::Runs(runs) = std::mem::take(&mut self.slots) else {
            return;
        };
        let mut size = MIN_SLOTS;
        while runs.len() * 4 > size * 3 {
            size *= 2;
        }
        self.slots = Slots::Table(place(runs, size));
    }

    /// A table twice as long (or the first one), each run placed again.
    fn grow(&mut self) {
        if let Slots::Table(old) = std::mem::take(&mut self.slots) {
            let size = (old.len() * 2).max(MIN_SLOTS);
            self.slots = Slots::Table(place(old, size));
        }
    }

    /// Each value and its mask, in no order.
    pub fn iter(&self) -> impl Iterator<Item = (i64, u64)> + '_ {
        let run_shift = self.run_shift();
        let bits = 1u32 << self.width;
        let mask_bits = self.mask_bits();
        let none: &[u32] = &[];
        let (singles, latest, base, runs) = match &self.slots {
            Slots::Singles {
                values,
                base,
                recent,
            } => (&values[..], recent.held(), *base, &[][..]),
            Slots::Runs(runs) | Slots::Table(runs) => (none, none, 0, &runs[..]),
        };
        let singles = (singles.iter().chain(latest))
            .map(move |&e| (base + i64::from(e >> bits), u64::from(e) & mask_bits));
        let runs = (runs.iter())
            .filter(|&&(_, word)| word != 0)
            .flat_map(move |&(run, word)| {
                (0..(64 / bits))
                    .map(move |place| (place, (word >> (place * bits)) & mask_bits))
                    .filter(|&(_, mask)| mask != 0)
                    .map(move |(place, mask)| ((run << run_shift) | i64::from(place), mask))
            });
        singles.chain(runs)
    }

    /// How many values are held.
    pub fn len(&self) -> usize {
        self.iter().count()
    }

    /// Every value of `other` added with its mask.
    pub fn merge(&mut self, other: &IntMasks) {
        for (value, mask) in other.iter() {
            self.insert(value, mask);
        }
    }

    /// The same set with masks of `2^width` bits.
    fn widen(&mut self, width: u32) {
        let mut wider = IntMasks::with_bits(1 << width);
        for (value, mask) in self.iter() {
            wider.insert(value, mask);
        }
        *self = wider;
    }
}

/// Where in `entries`, ascending by `key` (by one at least from entry to
/// entry), the entry of key `target` is or goes: the first whose key is
/// not below it, searched from the end. It is no further back than the
/// last key's distance from the target: there, where the entries before
/// it hold every key (a set of many values), or else searched back from
/// the end over spans doubling from one entry.
#[inline(always)]
fn place_from_end<T>(entries: &[T], key: impl Fn(&T) -> i64, target: i64) -> usize {
    let n = entries.len();
    let Some(last) = entries.last() else {
        return 0;
    };
    let last = key(last);
    if last < target {
        return n;
    }
    let back = usize::try_from(last.wrapping_sub(target) as u64).unwrap_or(usize::MAX);
    let floor = (n - 1).saturating_sub(back);
    if key(&entries[floor]) >= target {
        return floor;
    }
    let (mut low, mut high, mut step) = (n - 1, n - 1, 1);
    while low > floor && key(&entries[low]) > target {
        high = low;
        low = low.saturating_sub(step).max(floor);
        step *= 2;
    }
    low + entries[low..=high].partition_point(|e| key(e) < target)
}

/// How many entries inserts into a set in order of `n` entries will have
/// moved, `moved` so far, once one is inserted at `at`; `None` where that
/// would move more than [`FAR`] entries, or more in all than
/// [`MOVED_PER_RUN`] allows.
#[inline(always)]
fn moved_to_insert(moved: usize, n: usize, at: usize) -> Option<usize> {
    let moving = n - at;
    let moved = moved + moving;
    (moving <= FAR && moved <= MOVED_PER_RUN * n + MOVED_SLACK).then_some(moved)
}

/// `Err` where singles `values` (from `base`, masks `bits` wide) would
/// take less memory as runs (of values `run_shift` bits wide): four
/// values or more to a run, on average. A read of every value, so asked
/// only as the values are about to grow into more memory.
fn runs_would_be_smaller(
    values: &[u32],
    base: i64,
    bits: u32,
    run_shift: u32,
) -> Result<(), Outgrown> {
    let run = |e: &u32| (base + i64::from(e >> bits)) >> run_shift;
    let runs = 1 + values
        .windows(2)
        .filter(|w| run(&w[0]) != run(&w[1]))
        .count();
    if runs * 4 <= values.len() {
        return Err(Outgrown::Runs);
    }
    Ok(())
}

/// Starts loading the last 64 bytes of `entries` (a line, or the ends of
/// two): the last entry and those just before it. A hint.
#[inline(always)]
fn prefetch_tail<T>(entries: &[T]) {
    if let Some(last) = entries.last() {
        let last = last as *const T as usize;
        weir_state::prefetch_line(last);
        if std::mem::size_of_val(entries) >= 64 {
            weir_state::prefetch_line(last + std::mem::size_of::<T>() - 64);
        }
    }
}

/// The slot of a table `len` slots long (not 0) where a run's probe
/// starts: the run's high product bits, which spread consecutive runs
/// over the table.
#[inline(always)]
fn home(len: usize, run: i64) -> usize {
    let product = (run as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (product >> (64 - len.trailing_zeros())) as usize
}

/// `runs` (words of 0 left out) placed in a new table of `size` slots.
fn place(runs: Vec<(i64, u64)>, size: usize) -> Vec<(i64, u64)> {
    let mut slots = vec![(0, 0); size];
    let last = size - 1;
    for (run, word) in runs.into_iter().filter(|&(_, word)| word != 0) {
        let mut i = home(size, run);
        while slots[i].1 != 0 {
            i = (i + 1) & last;
        }
        slots[i] = (run, word);
    }
    slots
}

/// Two sets are equal when they hold the same values with the same masks,
/// whatever their form and layout.
impl PartialEq for IntMasks {
    fn eq(&self, other: &IntMasks) -> bool {
        let mut mine: Vec<(i64, u64)> = self.iter().collect();
        let mut theirs: Vec<(i64, u64)> = other.iter().collect();
        mine.sort_unstable();
        theirs.sort_unstable();
        mine == theirs
    }
}

/// Where single `at` of `singles` (masks `bits` wide) holds the value of
/// `entry`, the bits of `entry`'s mask set in it, and those of them that
/// were not set before; `None` where it holds another value, or is past
/// the end.
#[inline(always)]
fn add_to_single(singles: &mut [u32], at: usize, bits: u32, entry: u32) -> Option<u64> {
    let single = singles.get_mut(at)?;
    if *single >> bits != entry >> bits {
        return None;
    }
    let mask = entry & !(u32::MAX << bits);
    let had = *single & mask;
    *single |= mask;
    Some(u64::from(mask & !had))
}

/// Sets the bits `mask` of the mask at `place` in a run's `word` (masks
/// `mask_bits` wide), and returns those of them that were not set.
#[inline(always)]
fn set_bits(word: &mut u64, place: u32, mask: u64, mask_bits: u64) -> u64 {
    let held = (*word >> place) & mask_bits;
    *word |= mask << place;
    mask & !held
}

/// The width (see [`IntMasks::width`]) that holds masks of `bits` bits.
fn width_for(bits: usize) -> u32 {
    bits.clamp(1, 64).next_power_of_two().trailing_zeros()
}

impl Serialize for IntMasks {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.len()))?;
        for (value, mask) in self.iter() {
            map.serialize_entry(&value, &mask)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for IntMasks {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<IntMasks, D::Error> {
        struct Masks;
        impl<'de> Visitor<'de> for Masks {
            type Value = IntMasks;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a map of integers to masks")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<IntMasks, A::Error> {
                let mut masks = IntMasks::default();
                while let Some((value, mask)) = map.next_entry::<i64, u64>()? {
                    masks.insert(value, mask);
                }
                Ok(masks)
            }
        }
        deserializer.deserialize_map(Masks)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::aggregate::IntHash;

    impl IntMasks {
        fn is_table(&self) -> bool {
            matches!(self.slots, Slots::Table(_))
        }

        /// Whether the set is in order, each entry after the one before.
        fn ascending(&self) -> bool {
            let bits = 1u32 << self.width;
            match &self.slots {
                Slots::Singles { values, recent, .. } => {
                    let all: Vec<u32> = values.iter().chain(recent.held()).copied().collect();
                    all.windows(2).all(|w| w[0] >> bits < w[1] >> bits)
                }
                Slots::Runs(runs) => runs.windows(2).all(|w| w[0].0 < w[1].0),
                Slots::Table(_) => false,
            }
        }

        /// The bytes the set's entries take (not counting spare capacity).
        fn entry_bytes(&self) -> usize {
            match &self.slots {
                Slots::Singles { values, recent, .. } => {
                    std::mem::size_of_val(&values[..]) + std::mem::size_of_val(recent.held())
                }
                Slots::Runs(slots) | Slots::Table(slots) => std::mem::size_of_val(&slots[..]),
            }
        }
    }

    /// A xorshift generator of test values from `seed`.
    fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
        move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        }
    }

    /// Random values (runs, negatives, extremes) with random masks against
    /// a map of each value's mask.
    #[test]
    fn values_keep_their_masks_at_any_width() {
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        for bits in [1, 3, 4, 16, 64] {
            let mut masks = IntMasks::with_bits(bits);
            let mut model: HashMap<i64, u64> = HashMap::new();
            for i in 0..20_000 {
                let value = match next() % 4 {
                    0 => (next() % 300) as i64 - 150,
                    1 => 1_000_000 + (next() % 5000) as i64,
                    2 => next() as i64,
                    _ => [i64::MIN, i64::MAX, -1, 0][(next() % 4) as usize],
                };
                // Late on, a mask wider than the set's (which widens it).
                let width = if i == 15_000 { 64 } else { bits };
                let mask = next() & (u64::MAX >> (64 - width));
                let held = model.get(&value).copied().unwrap_or(0);
                assert_eq!(masks.insert(value, mask), mask & !held, "{value} {mask:#x}");
                if held | mask != 0 {
                    model.insert(value, held | mask);
                }
            }
            let read: HashMap<i64, u64> = masks.iter().collect();
            assert_eq!(read, model, "{bits} bits");
            assert_eq!(masks.len(), model.len());
        }
    }

    /// Values in no order make a table while the set is still small: each
    /// would move half the runs of a set in order.
    #[test]
    fn values_in_no_order_make_a_table_early() {
        let mut masks = IntMasks::with_bits(1);
        let mut model = std::collections::HashSet::new();
        for i in 0..100i64 {
            // Far apart, each its own run, in no order.
            let value = (i * 7919) % 100 * 1000;
            assert_eq!(masks.insert(value, 1), u64::from(model.insert(value)));
        }
        assert!(masks.is_table(), "100 values in no order left in order");
        assert_eq!(masks.len(), model.len());
    }

    /// Ids mostly in order (each now and then one from a little way back,
    /// as bids name recent auctions), dense and sparse: the set stays in
    /// order and holds each value's mask; a value from far back makes it
    /// a table that still does.
    #[test]
    fn values_in_order_stay_in_order_until_one_comes_from_far_back() {
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
        for gap in [1i64, 3, 40, 5000] {
            let mut masks = IntMasks::with_bits(4);
            let mut model: HashMap<i64, u64> = HashMap::new();
            let check = |masks: &mut IntMasks, model: &mut HashMap<i64, u64>, value, mask| {
                let held = model.get(&value).copied().unwrap_or(0);
                assert_eq!(masks.insert(value, mask), mask & !held, "{gap}: {value}");
                model.insert(value, held | mask);
            };
            let top0 = -20_000i64 + gap;
            let mut top = -20_000i64;
            for i in 0..6000 {
                top += gap;
                // One in four a little way back, as a bid's bidder is one
                // of the latest thousand people: in a dense set, among
                // runs held (never more than 100 runs back); in a sparse
                // one, a few runs back.
                let back = match (i % 4, gap < 16) {
                    (3, true) => (next() % 1500) as i64 / gap,
                    (3, false) => (next() % 4) as i64,
                    _ => 0,
                };
                check(
                    &mut masks,
                    &mut model,
                    (top - back * gap).max(top0),
                    1 << (next() % 4),
                );
            }
            assert!(!masks.is_table(), "{gap}: made a table of values in order");
            assert!(masks.ascending(), "{gap}");
            assert_eq!(masks.iter().collect::<HashMap<_, _>>(), model, "{gap}");
            // The first value again changes nothing; one before it, now
            // far back, makes a table.
            check(&mut masks, &mut model, -20_000 + gap, 0b1111);
            check(&mut masks, &mut model, -1_000_000, 0b0100);
            assert!(masks.is_table(), "{gap}");
            for _ in 0..2000 {
                top += gap;
                check(
                    &mut masks,
                    &mut model,
                    top - (next() % 1000) as i64,
                    1 << (next() % 4),
                );
            }
            assert_eq!(masks.iter().collect::<HashMap<_, _>>(), model, "{gap}");
            assert_eq!(masks.len(), model.len());
        }
    }

    /// Sets of the same values and masks are equal, whatever the order
    /// they were inserted in (and so where they sit in the table).
    #[test]
    fn sets_are_equal_by_their_values_not_their_layout() {
        let values: Vec<i64> = (0..500).map(|i| i * 97 - 20_000).collect();
        let mut forward = IntMasks::with_bits(4);
        let mut backward = IntMasks::with_bits(4);
        for &v in &values {
            forward.insert(v, 1 + (v as u64 & 7));
        }
        for &v in values.iter().rev() {
            backward.insert(v, 1 + (v as u64 & 7));
        }
        assert_eq!(forward, backward);
        backward.insert(values[3], 0b1000);
        assert_ne!(forward, backward);
    }

    #[test]
    fn consecutive_values_share_words() {
        let mut masks = IntMasks::with_bits(4);
        for v in 1000..2000 {
            masks.insert(v, 0b1010);
        }
        // Sixteen values of four bits to a word.
        assert!(matches!(masks.slots, Slots::Runs(_)), "{:?}", masks.slots);
        assert!(masks.used <= 1000 / 16 + 1, "{}", masks.used);
        assert_eq!(masks.len(), 1000);
    }

    /// Values far apart (q16's cold channels: hundreds of ids between a
    /// set's values) stay singles, 4 bytes each, a quarter of a run's;
    /// one too far from the first makes runs of them, all still held.
    #[test]
    fn values_far_apart_take_four_bytes_each() {
        let mut masks = IntMasks::with_bits(4);
        let mut model: HashMap<i64, u64> = HashMap::new();
        for i in 0..800i64 {
            // Now and then one a little older than the last.
            let value = 5_000_000 + i * 400 - if i % 3 == 2 { 600 } else { 0 };
            let mask = 1 << (i % 4);
            let held = model.get(&value).copied().unwrap_or(0);
            assert_eq!(masks.insert(value, mask), mask & !held);
            model.insert(value, held | mask);
        }
        assert!(matches!(masks.slots, Slots::Singles { .. }));
        assert!(masks.ascending());
        assert_eq!(masks.entry_bytes(), 4 * model.len());
        assert_eq!(masks.iter().collect::<HashMap<_, _>>(), model);
        // 2^28 above the first value does not fit a distance: runs.
        masks.insert(5_000_000 + (1 << 28), 0b0010);
        model.insert(5_000_000 + (1 << 28), 0b0010);
        assert!(matches!(masks.slots, Slots::Runs(_)));
        assert!(masks.ascending());
        assert_eq!(masks.iter().collect::<HashMap<_, _>>(), model);
        assert_eq!(masks.len(), model.len());
    }

    /// Values in order are taken among the latest, held beside the set: the
    /// values' array is written only when those are full, the oldest of
    /// them together. A value between the latest, or from before them, or
    /// one held again with another bit, is taken where it belongs.
    #[test]
    fn the_latest_values_wait_beside_the_set_and_move_together() {
        let mut masks = IntMasks::with_bits(4);
        let mut model: HashMap<i64, u64> = HashMap::new();
        let mut check = |masks: &mut IntMasks, value: i64, mask: u64| {
            let held = model.get(&value).copied().unwrap_or(0);
            assert_eq!(masks.insert(value, mask), mask & !held, "{value}");
            model.insert(value, held | mask);
            assert!(masks.ascending(), "{value}");
            assert_eq!(masks.iter().collect::<HashMap<_, _>>(), model, "{value}");
        };
        let parts = |masks: &IntMasks| match &masks.slots {
            Slots::Singles { values, recent, .. } => (values.len(), usize::from(recent.len)),
            other => panic!("not singles: {other:?}"),
        };
        let mut lengths = Vec::new();
        for i in 0..100i64 {
            check(&mut masks, 1_000_000 + i * 400, 1 << (i % 4));
            lengths.push(parts(&masks));
        }
        // The first RECENT wait; then every RECENT - 1 more, all but the
        // latest move.
        for (i, &(values, recent)) in lengths.iter().enumerate() {
            let beyond = i.saturating_sub(RECENT - 1);
            let moved = beyond.div_ceil(RECENT - 1) * (RECENT - 1);
            assert_eq!(
                (values, recent),
                (moved, i + 1 - moved),
                "after {} values",
                i + 1
            );
        }
        let latest = 1_000_000 + 99 * 400;
        // Full, and one goes between the latest: those below it move.
        while parts(&masks).1 < RECENT {
            let next = masks.iter().map(|(v, _)| v).max().unwrap_or(0) + 400;
            check(&mut masks, next, 0b0001);
        }
        let (values, _) = parts(&masks);
        check(&mut masks, latest + 200, 0b0010);
        assert!(parts(&masks).0 > values, "{:?}", parts(&masks));
        // From before the latest: among the values.
        check(&mut masks, latest - 30 * 400 + 1, 0b0100);
        // Held, with another bit, whether among the latest or the values.
        check(&mut masks, latest + 200, 0b1010);
        check(&mut masks, 1_000_000, 0b1111);
        assert!(matches!(masks.slots, Slots::Singles { .. }));
        assert_eq!(masks.len(), model.len());
        let json = serde_json::to_string(&masks).unwrap();
        assert_eq!(serde_json::from_str::<IntMasks>(&json).unwrap(), masks);
    }

    /// Saved as the map of values to masks the set once was, and read back
    /// from it whatever the width.
    #[test]
    fn saved_as_a_map_of_values_to_masks() {
        let mut masks = IntMasks::with_bits(4);
        for (v, m) in [(7, 1), (8, 0b1001), (-3, 0b100), (1 << 40, 0b10)] {
            masks.insert(v, m);
        }
        let json = serde_json::to_string(&masks).unwrap();
        let as_map: HashMap<i64, u64> = serde_json::from_str(&json).unwrap();
        assert_eq!(
            as_map,
            HashMap::from([(7, 1), (8, 9), (-3, 4), (1 << 40, 2)])
        );
        let map_json = serde_json::to_string(&as_map).unwrap();
        let read: IntMasks = serde_json::from_str(&map_json).unwrap();
        assert_eq!(read.iter().collect::<HashMap<_, _>>(), as_map);
        // The widest mask read decides the width: 4 bits, not 1.
        assert_eq!(read.width, 2);
    }

    /// In the state codec, the set and the map it was saved as before are
    /// the same bytes, either way.
    #[test]
    fn state_saved_as_a_map_restores_as_a_set_and_back() {
        let map: HashMap<i64, u64, IntHash> = (0..1000)
            .map(|i| (1000 + i * 3, 1 + (i as u64 % 15)))
            .chain([(-7, 8), (i64::MAX, 1)])
            .collect();
        let saved = weir_state::encode_value(&map).unwrap();
        let masks: IntMasks = weir_state::decode_value(&saved).unwrap();
        assert_eq!(
            masks.iter().collect::<HashMap<_, _>>(),
            map.iter().map(|(&v, &m)| (v, m)).collect()
        );
        let saved = weir_state::encode_value(&masks).unwrap();
        let back: HashMap<i64, u64, IntHash> = weir_state::decode_value(&saved).unwrap();
        assert_eq!(back, map);
    }
}
