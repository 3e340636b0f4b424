//! A set of integers each carrying a mask of up to 64 bits, packed by runs
//! of consecutive integers: the values taken by the append-only
//! `COUNT(DISTINCT …) FILTER (…)`s of one integral column, a bit per call.
//!
//! The values such counts see are mostly ids handed out in order (a
//! bidder's, an auction's), so the values of a run share one 64-bit word:
//! with four calls, sixteen values to a word, and a set of a million ids
//! is 62 500 words that stay in the caches where one entry per value
//! would not. Values far apart take a word each.
//!
//! A set starts as its runs in order, one after another. Ids handed out
//! in order mostly arrive in order too (a bid's auction is one of the
//! latest hundred, its bidder one of the latest thousand people), so a
//! value's run is the last one or a few before it: a lookup reads the
//! array's tail, which the set's last insert left in the caches. With
//! thousands of groups (q16's channels), each group's sets are read
//! once in a while, and a table's slot for a new value was a line loaded
//! from memory every time, where the tail is a line already there.
//!
//! A value that would go further back than [`FAR`] runs from the end,
//! or values out of order often enough that moving the runs after them
//! costs more than a table would (see [`MOVED_PER_RUN`]), turn the set
//! into a table: the words each beside their run, found by
//! linear probing from a slot known from the run alone. A set of values
//! far apart is then out of the caches, and a lookup waits for one line,
//! not for a control byte and then its entry as in a general-purpose
//! table; [`IntMasks::prefetch`] can start loading that line (or, in
//! order, the tail) before the value is inserted.
//!
//! Saved as a map from each value to its mask, so state saved by either
//! form restores into the other.

use std::fmt;

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Integers and their masks (a value with an empty mask is not held).
#[derive(Debug, Clone, Default)]
pub(crate) struct IntMasks {
    /// Each run and its word (a value's run is the value shifted right by
    /// [`IntMasks::run_shift`], its place in the word the bits shifted
    /// out). In order: the runs held, ascending, each word not 0. As a
    /// table: a power of two long, or empty, and a slot whose word is 0 is
    /// empty, since a run is held only once a value of it has bits.
    slots: Vec<(i64, u64)>,
    /// Whether `slots` is a table rather than the runs in order.
    table: bool,
    /// Slots in use.
    used: usize,
    /// In order: how many runs inserts have moved back to make room.
    moved: usize,
    /// The bits of each value's mask, as a power of two: 0 for one bit (64
    /// values to a word) up to 6 for 64 bits (one value to a word).
    width: u32,
}

/// Slots of a set's first table: four to a cache line.
const MIN_SLOTS: usize = 4;

/// How many runs back from the end a value of a set in order may go: a
/// value further back makes it a table (inserting it would move more
/// than 2 KiB, and values that far back are not coming in order).
const FAR: usize = 128;

/// How many runs, per run held (and [`MOVED_SLACK`] more), inserts into a
/// set in order may move in all before it becomes a table: values in
/// order move a run or two now and then, values in no order half the set
/// each time, which a table's insert does not.
const MOVED_PER_RUN: usize = 4;
const MOVED_SLACK: usize = 256;

impl IntMasks {
    /// An empty set whose masks have `bits` bits.
    pub fn with_bits(bits: usize) -> IntMasks {
        IntMasks {
            slots: Vec::new(),
            table: false,
            used: 0,
            moved: 0,
            width: width_for(bits),
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

    /// The slot a run's probe starts at (`slots` is not empty): the run's
    /// high product bits, which spread consecutive runs over the table.
    #[inline(always)]
    fn home(&self, run: i64) -> usize {
        let product = (run as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        (product >> (64 - self.slots.len().trailing_zeros())) as usize
    }

    /// Asks the CPU to start loading where the lookups of `values` start,
    /// so that inserts a little later find them in cache: the tail of a
    /// set in order (its last four runs, whatever the values), or each
    /// value's slot of a table. A hint.
    #[inline(always)]
    pub fn prefetch(&self, values: impl Iterator<Item = i64>) {
        if self.table {
            values.for_each(|v| self.prefetch_slot(v));
        } else if let Some(last) = self.slots.last() {
            let last = last as *const (i64, u64) as usize;
            weir_state::prefetch_line(last);
            if self.slots.len() >= 4 {
                weir_state::prefetch_line(last - 3 * std::mem::size_of::<(i64, u64)>());
            }
        }
    }

    /// Starts loading the slot of a table where `value`'s lookup starts.
    #[inline(always)]
    fn prefetch_slot(&self, value: i64) {
        if self.slots.is_empty() {
            return;
        }
        let slot: *const (i64, u64) = &self.slots[self.home(value >> self.run_shift())];
        weir_state::prefetch_line(slot as usize);
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
        if !self.table {
            match self.insert_in_order(value, mask) {
                Some(new) => return new,
                None => self.make_table(),
            }
        }
        // At most three quarters full, so that probes stay short.
        if (self.used + 1) * 4 > self.slots.len() * 3 {
            self.grow();
        }
        let (run, place) = self.run_and_place(value);
        let mask_bits = self.mask_bits();
        let last = self.slots.len() - 1;
        let mut i = self.home(run);
        loop {
            let (held_run, word) = &mut self.slots[i];
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

    /// [`IntMasks::insert`] into a set in order; `None`, nothing changed,
    /// where making room for the value's run would move more than [`FAR`]
    /// runs, or more in all than [`MOVED_PER_RUN`] allows.
    #[inline]
    fn insert_in_order(&mut self, value: i64, mask: u64) -> Option<u64> {
        let (run, place) = self.run_and_place(value);
        let mask_bits = self.mask_bits();
        let n = self.slots.len();
        // Where the run is or goes. Runs ascend by one at least from slot
        // to slot, so it is no further back than the last run's distance
        // from it: there, where the runs before it are all held (a set
        // of many values), or else searched back from the end over spans
        // doubling from one run.
        let at = match self.slots.last() {
            None => 0,
            Some(&(last, _)) if last < run => n,
            Some(&(last, _)) => {
                let back = usize::try_from(last.wrapping_sub(run) as u64).unwrap_or(usize::MAX);
                let floor = (n - 1).saturating_sub(back);
                if self.slots[floor].0 >= run {
                    floor
                } else {
                    let (mut low, mut high, mut step) = (n - 1, n - 1, 1);
                    while low > floor && self.slots[low].0 > run {
                        high = low;
                        low = low.saturating_sub(step).max(floor);
                        step *= 2;
                    }
                    low + self.slots[low..=high].partition_point(|&(r, _)| r < run)
                }
            }
        };
        if let Some((held_run, word)) = self.slots.get_mut(at) {
            if *held_run == run {
                return Some(set_bits(word, place, mask, mask_bits));
            }
        }
        let moving = n - at;
        let moved = self.moved + moving;
        if moving > FAR || moved > MOVED_PER_RUN * n + MOVED_SLACK {
            return None;
        }
        self.moved = moved;
        self.slots.insert(at, (run, mask << place));
        self.used += 1;
        Some(mask)
    }

    /// The runs in order placed in a table (see [`IntMasks::grow`]).
    fn make_table(&mut self) {
        let runs = std::mem::take(&mut self.slots);
        self.table = true;
        let mut size = MIN_SLOTS;
        while runs.len() * 4 > size * 3 {
            size *= 2;
        }
        self.place(runs, size);
    }

    /// Twice the slots (or the first ones), each run placed again.
    fn grow(&mut self) {
        let old = std::mem::take(&mut self.slots);
        let size = (old.len() * 2).max(MIN_SLOTS);
        self.place(old, size);
    }

    /// `runs` (words of 0 left out) placed in a new table of `size` slots.
    fn place(&mut self, runs: Vec<(i64, u64)>, size: usize) {
        self.slots = vec![(0, 0); size];
        let last = size - 1;
        for (run, word) in runs.into_iter().filter(|&(_, word)| word != 0) {
            let mut i = self.home(run);
            while self.slots[i].1 != 0 {
                i = (i + 1) & last;
            }
            self.slots[i] = (run, word);
        }
    }

    /// Each value and its mask, in no order.
    pub fn iter(&self) -> impl Iterator<Item = (i64, u64)> + '_ {
        let run_shift = self.run_shift();
        let bits = 1u32 << self.width;
        let mask_bits = self.mask_bits();
        (self.slots.iter())
            .filter(|&&(_, word)| word != 0)
            .flat_map(move |&(run, word)| {
                (0..(64 / bits))
                    .map(move |place| (place, (word >> (place * bits)) & mask_bits))
                    .filter(|&(_, mask)| mask != 0)
                    .map(move |(place, mask)| ((run << run_shift) | i64::from(place), mask))
            })
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

/// Two sets are equal when they hold the same values with the same masks,
/// whatever their tables' layout.
impl PartialEq for IntMasks {
    fn eq(&self, other: &IntMasks) -> bool {
        let mut mine: Vec<(i64, u64)> = self.iter().collect();
        let mut theirs: Vec<(i64, u64)> = other.iter().collect();
        mine.sort_unstable();
        theirs.sort_unstable();
        mine == theirs
    }
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
        assert!(masks.table, "100 values in no order left in order");
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
            assert!(!masks.table, "{gap}: made a table of values in order");
            assert_eq!(masks.used, masks.slots.len());
            assert!(masks.slots.windows(2).all(|w| w[0].0 < w[1].0), "{gap}");
            assert_eq!(masks.iter().collect::<HashMap<_, _>>(), model, "{gap}");
            // The first value again changes nothing; one before it, now
            // far back, makes a table.
            check(&mut masks, &mut model, -20_000 + gap, 0b1111);
            check(&mut masks, &mut model, -1_000_000, 0b0100);
            assert!(masks.table, "{gap}");
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
        assert!(masks.used <= 1000 / 16 + 1, "{}", masks.used);
        assert_eq!(masks.len(), 1000);
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
