//! Whether the keys a keyed operator is processing are ones it processed
//! a short while ago: an estimate the heap backend uses to decide whether
//! prefetching the keys of a batch pays.
//!
//! A state past the caches is not enough: a job whose records go to a few
//! hundred keys at a time (Nexmark's bids go to the last hundred or so
//! auctions) finds their entries in cache however big the state, and
//! preparing and prefetching each key then only costs (Nexmark q4 ran
//! about 5 % faster without; a million keys read at random, twice as
//! fast with). A small table of recent keys' hashes tells the two apart:
//! a key whose hash is still in its slot was seen among roughly the last
//! [`SLOTS`] keys, whose entries a core's caches hold.

/// Slots of the table of recent hashes: about as many keys as a core's
/// second-level cache holds the entries of (a few hundred bytes each),
/// in a table small enough (4 KiB) to stay in the first-level cache.
const SLOTS: usize = 2048;

/// How many keys an estimate is made from.
const SAMPLE: u32 = 512;

/// Recently seen keys, by a part of their hash, and how many of the keys
/// seen since the last estimate were among them.
#[derive(Debug)]
pub(crate) struct KeyLocality {
    /// Each slot holds 16 bits of the hash of the last key that fell into
    /// it (never 0: 0 is an empty slot).
    recent: Box<[u16; SLOTS]>,
    seen: u32,
    found: u32,
    /// The last estimate: most keys were seen recently.
    local: bool,
}

impl Default for KeyLocality {
    fn default() -> Self {
        KeyLocality {
            recent: Box::new([0; SLOTS]),
            seen: 0,
            found: 0,
            local: false,
        }
    }
}

impl KeyLocality {
    /// Notes a key about to be processed, by its hash.
    #[inline]
    pub fn observe(&mut self, hash: u64) {
        // Mixed first: for small integer keys (the usual ids) no few bits
        // of the hash are spread as evenly as random ones, and keys that
        // share a slot look new; the product's top bits are.
        let mixed = hash.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let slot = (mixed >> (64 - SLOTS.trailing_zeros())) as usize;
        let tag = (mixed >> 16) as u16 | 1;
        let held = &mut self.recent[slot];
        self.found += u32::from(*held == tag);
        *held = tag;
        self.seen += 1;
    }

    /// Whether at least half the keys seen lately had been seen shortly
    /// before: estimated again once [`SAMPLE`] keys have been seen since
    /// the last estimate, the last one until then.
    ///
    /// Half, not nearly all: two recent keys that share a slot both look
    /// new, so keys going round a few hundred are found only three times
    /// in four or so; keys spread over more than the table holds are
    /// found a few times in a hundred.
    pub fn mostly_recent(&mut self) -> bool {
        if self.seen >= SAMPLE {
            self.local = self.found * 2 >= self.seen;
            self.seen = 0;
            self.found = 0;
        }
        self.local
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::heap::KeyHasher;

    fn seen(locality: &mut KeyLocality, keys: impl IntoIterator<Item = u64>) -> bool {
        let hasher = KeyHasher::default();
        for k in keys {
            locality.observe(hasher.hash_key(&k.to_le_bytes()));
        }
        locality.mostly_recent()
    }

    /// Keys going round a couple of hundred are recent; keys spread over
    /// a million, or new ones, are not; the estimate follows a change.
    /// (The hasher's seed differs from run to run: these hold for any.)
    #[test]
    fn keys_going_round_a_few_hundred_are_recent_and_spread_ones_are_not() {
        let mut l = KeyLocality::default();
        assert!(!l.mostly_recent(), "nothing seen yet");
        assert!(seen(&mut l, (0..10_000).map(|i| i % 200)));
        // Bids: half to one hot key, half to one of the last hundred.
        let bids = (0..10_000u64).map(|i| {
            if i % 2 == 0 {
                i / 100 * 100
            } else {
                i / 100 + i % 97
            }
        });
        assert!(seen(&mut l, bids));
        let spread = (0..10_000u64).map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) % 1_000_000);
        assert!(!seen(&mut l, spread));
        assert!(!seen(&mut l, 1_000_000..1_010_000), "new keys");
        assert!(seen(&mut l, (0..10_000).map(|i| i % 50)));
    }

    /// The estimate holds until a whole sample has been seen since the
    /// last one.
    #[test]
    fn an_estimate_waits_for_a_whole_sample() {
        let mut l = KeyLocality::default();
        assert!(seen(&mut l, (0..1_000).map(|i| i % 10)));
        assert!(seen(&mut l, 5_000..5_000 + u64::from(SAMPLE) - 1));
        assert!(!seen(&mut l, [9_999]));
    }
}
