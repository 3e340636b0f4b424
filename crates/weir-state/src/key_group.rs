//! Key groups: which key belongs to which group, and which group to which subtask.
//!
//! The formulas are Flink's (`KeyGroupRangeAssignment`): a key's group is its
//! hash modulo the maximum parallelism, and groups are spread over subtasks in
//! contiguous ranges. The hash is ours and is part of the savepoint format:
//! xxh3 (64 bit) with the fixed seed [`KEY_HASH_SEED`] over the little-endian
//! bytes of the key, so it is the same in every run, version and machine.

use std::fmt;

use xxhash_rust::xxh3::xxh3_64_with_seed;

/// Seed of the key hash. Changing it changes every key's group and breaks
/// every savepoint ever written: never change it.
pub const KEY_HASH_SEED: u64 = 0x5745_4952_4b47_0001; // "WEIRKG" + format 1

/// Default number of key groups, as in Flink for small jobs.
pub const DEFAULT_MAX_PARALLELISM: u32 = 128;

/// Upper bound of `max_parallelism` (Flink's `UPPER_BOUND_MAX_PARALLELISM`).
pub const MAX_MAX_PARALLELISM: u32 = 1 << 15;

/// Index of a key group, in `0..max_parallelism`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KeyGroup(pub u32);

impl fmt::Display for KeyGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// An inclusive range of key groups owned by one subtask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyGroupRange {
    /// First key group of the range.
    pub start: u32,
    /// Last key group of the range (inclusive).
    pub end: u32,
}

impl KeyGroupRange {
    /// Whether `kg` lies in this range.
    pub fn contains(&self, kg: KeyGroup) -> bool {
        self.start <= kg.0 && kg.0 <= self.end
    }

    /// Number of key groups in the range.
    pub fn len(&self) -> u32 {
        if self.end < self.start {
            0
        } else {
            self.end - self.start + 1
        }
    }

    /// Whether the range holds no key group.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The key groups of the range, in order.
    pub fn iter(&self) -> impl Iterator<Item = KeyGroup> {
        (self.start..=self.end).map(KeyGroup)
    }
}

/// A hash that never changes: the basis of key-group assignment.
///
/// By implementing this trait, you promise that `stable_hash` depends only on
/// the value (never on addresses, random seeds or the platform) and that
/// values equal under `Eq` hash equally. Implement it for your own key types
/// by combining the hashes of their fields with [`StableHash::combine`].
pub trait StableHash {
    /// The value's 64-bit stable hash.
    fn stable_hash(&self) -> u64;

    /// Combines field hashes, in order, into one (xxh3 of their
    /// little-endian bytes). Used for tuples; use it for your structs too.
    fn combine(parts: &[u64]) -> u64
    where
        Self: Sized,
    {
        combine_hashes(parts)
    }

    /// For a key type: writes the bytes keyed state stores the key under
    /// (its postcard encoding, byte for byte) after what `buf` holds,
    /// where the type writes them more cheaply than serde can, and returns
    /// `true`; returns `false`, with `buf` as it was, where it does not
    /// (the default), and serde writes them. Encoding a key through serde
    /// costs more than looking it up in a table in cache: a type keying
    /// most records of a job may want its own.
    #[inline]
    fn append_key_bytes(&self, buf: &mut Vec<u8>) -> bool {
        let _ = buf;
        false
    }
}

fn hash_bytes(bytes: &[u8]) -> u64 {
    xxh3_64_with_seed(bytes, KEY_HASH_SEED)
}

fn combine_hashes(parts: &[u64]) -> u64 {
    let mut bytes = [0u8; 64];
    if parts.len() <= 8 {
        for (i, p) in parts.iter().enumerate() {
            bytes[i * 8..i * 8 + 8].copy_from_slice(&p.to_le_bytes());
        }
        hash_bytes(&bytes[..parts.len() * 8])
    } else {
        let v: Vec<u8> = parts.iter().flat_map(|p| p.to_le_bytes()).collect();
        hash_bytes(&v)
    }
}

macro_rules! stable_hash_int {
    ($($t:ty),*) => {$(
        impl StableHash for $t {
            #[inline]
            fn stable_hash(&self) -> u64 {
                hash_bytes(&self.to_le_bytes())
            }
        }
    )*};
}
stable_hash_int!(u8, u16, u32, u64, u128, i8, i16, i32, i64, i128);

impl StableHash for usize {
    /// Hashed as a `u64` so that 32- and 64-bit machines agree.
    fn stable_hash(&self) -> u64 {
        (*self as u64).stable_hash()
    }
}

impl StableHash for isize {
    fn stable_hash(&self) -> u64 {
        (*self as i64).stable_hash()
    }
}

impl StableHash for bool {
    fn stable_hash(&self) -> u64 {
        hash_bytes(&[*self as u8])
    }
}

impl StableHash for char {
    fn stable_hash(&self) -> u64 {
        (*self as u32).stable_hash()
    }
}

impl StableHash for str {
    #[inline]
    fn stable_hash(&self) -> u64 {
        hash_bytes(self.as_bytes())
    }
}

impl StableHash for String {
    #[inline]
    fn stable_hash(&self) -> u64 {
        self.as_str().stable_hash()
    }
}

impl StableHash for [u8] {
    fn stable_hash(&self) -> u64 {
        hash_bytes(self)
    }
}

impl<T: StableHash + ?Sized> StableHash for &T {
    #[inline]
    fn stable_hash(&self) -> u64 {
        (**self).stable_hash()
    }
    #[inline]
    fn append_key_bytes(&self, buf: &mut Vec<u8>) -> bool {
        (**self).append_key_bytes(buf)
    }
}

impl<T: StableHash + ?Sized> StableHash for Box<T> {
    fn stable_hash(&self) -> u64 {
        (**self).stable_hash()
    }
    #[inline]
    fn append_key_bytes(&self, buf: &mut Vec<u8>) -> bool {
        (**self).append_key_bytes(buf)
    }
}

impl<T: StableHash + ?Sized> StableHash for std::sync::Arc<T> {
    fn stable_hash(&self) -> u64 {
        (**self).stable_hash()
    }
    #[inline]
    fn append_key_bytes(&self, buf: &mut Vec<u8>) -> bool {
        (**self).append_key_bytes(buf)
    }
}

impl<T: StableHash> StableHash for Option<T> {
    fn stable_hash(&self) -> u64 {
        match self {
            None => combine_hashes(&[0]),
            Some(v) => combine_hashes(&[1, v.stable_hash()]),
        }
    }
}

impl<T: StableHash> StableHash for Vec<T> {
    fn stable_hash(&self) -> u64 {
        let parts: Vec<u64> = self.iter().map(StableHash::stable_hash).collect();
        combine_hashes(&parts)
    }
}

impl StableHash for () {
    fn stable_hash(&self) -> u64 {
        combine_hashes(&[])
    }
}

macro_rules! stable_hash_tuple {
    ($($name:ident : $idx:tt),+) => {
        impl<$($name: StableHash),+> StableHash for ($($name,)+) {
            fn stable_hash(&self) -> u64 {
                combine_hashes(&[$(self.$idx.stable_hash()),+])
            }
        }
    };
}
stable_hash_tuple!(A: 0);
stable_hash_tuple!(A: 0, B: 1);
stable_hash_tuple!(A: 0, B: 1, C: 2);
stable_hash_tuple!(A: 0, B: 1, C: 2, D: 3);
stable_hash_tuple!(A: 0, B: 1, C: 2, D: 3, E: 4);
stable_hash_tuple!(A: 0, B: 1, C: 2, D: 3, E: 4, F: 5);

/// The key group of `key` (Flink's `assignToKeyGroup`).
#[inline]
pub fn assign_to_key_group<K: StableHash + ?Sized>(key: &K, max_parallelism: u32) -> KeyGroup {
    key_group_of_hash(key.stable_hash(), max_parallelism)
}

/// The key group of a key whose [`StableHash::stable_hash`] is `hash`, as
/// [`assign_to_key_group`] gives it: for a key hashed once where it was
/// made, and placed in a group where it is used.
#[inline]
pub fn key_group_of_hash(hash: u64, max_parallelism: u32) -> KeyGroup {
    // The same value as `%`: a mask for the usual power-of-two maximum
    // parallelism, because a division costs more than the rest of a
    // record's trip through a keyed exchange.
    if max_parallelism.is_power_of_two() {
        KeyGroup((hash & u64::from(max_parallelism - 1)) as u32)
    } else {
        KeyGroup((hash % u64::from(max_parallelism)) as u32)
    }
}

/// The subtask that owns `key_group` (Flink's `computeOperatorIndexForKeyGroup`):
/// `key_group * parallelism / max_parallelism`.
#[inline]
pub fn operator_index_for_key_group(
    max_parallelism: u32,
    parallelism: u32,
    key_group: KeyGroup,
) -> u32 {
    let scaled = u64::from(key_group.0) * u64::from(parallelism);
    if max_parallelism.is_power_of_two() {
        (scaled >> max_parallelism.trailing_zeros()) as u32
    } else {
        (scaled / u64::from(max_parallelism)) as u32
    }
}

/// The key groups owned by subtask `operator_index`
/// (Flink's `computeKeyGroupRangeForOperatorIndex`).
pub fn key_group_range_for_operator(
    max_parallelism: u32,
    parallelism: u32,
    operator_index: u32,
) -> KeyGroupRange {
    let (mp, p, i) = (
        u64::from(max_parallelism),
        u64::from(parallelism),
        u64::from(operator_index),
    );
    let start = (i * mp).div_ceil(p);
    let end = ((i + 1) * mp - 1) / p;
    KeyGroupRange {
        start: start as u32,
        end: end as u32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Pins the hash and the assignment of known keys. If this test fails, the
    /// savepoint format has changed: every existing savepoint would restore
    /// keys into the wrong subtask.
    #[test]
    fn known_keys_have_pinned_groups_and_subtasks() {
        let cases: [(u64, u32, u32); 4] = [
            ("hello".stable_hash(), 94, 2),
            (42i64.stable_hash(), 113, 3),
            (7u64.stable_hash(), 89, 2),
            (("a", 1i32).stable_hash(), 34, 1),
        ];
        let hashes = [
            0x085b_cf93_1ce3_175e,
            0xedc6_6734_1fd6_a171,
            0x4470_6714_0776_a759,
            0x59d3_5f9f_715f_f3a2,
        ];
        for (i, (hash, kg, subtask)) in cases.into_iter().enumerate() {
            assert_eq!(hash, hashes[i], "hash of case {i}");
            assert_eq!((hash % 128) as u32, kg, "key group of case {i}");
            assert_eq!(
                operator_index_for_key_group(128, 4, KeyGroup(kg)),
                subtask,
                "subtask of case {i} at parallelism 4"
            );
        }
        assert_eq!(assign_to_key_group("hello", 128), KeyGroup(94));
        assert_eq!(assign_to_key_group(&("a", 1i32), 128), KeyGroup(34));
    }

    #[test]
    fn string_and_str_hash_alike() {
        assert_eq!("abc".stable_hash(), String::from("abc").stable_hash());
        assert_eq!((&"abc").stable_hash(), "abc".stable_hash());
    }

    #[test]
    fn ranges_match_flink_examples() {
        // 128 key groups over 3 subtasks: Flink gives [0,42], [43,85], [86,127].
        assert_eq!(
            key_group_range_for_operator(128, 3, 0),
            KeyGroupRange { start: 0, end: 42 }
        );
        assert_eq!(
            key_group_range_for_operator(128, 3, 1),
            KeyGroupRange { start: 43, end: 85 }
        );
        assert_eq!(
            key_group_range_for_operator(128, 3, 2),
            KeyGroupRange {
                start: 86,
                end: 127
            }
        );
    }

    proptest! {
        #[test]
        fn ranges_partition_key_groups_consistently(mp in 1u32..=4096, p_seed in 1u32..=4096) {
            let p = 1 + p_seed % mp;
            let mut next = 0;
            for i in 0..p {
                let r = key_group_range_for_operator(mp, p, i);
                prop_assert_eq!(r.start, next);
                for kg in r.iter() {
                    prop_assert_eq!(operator_index_for_key_group(mp, p, kg), i);
                }
                next = r.end + 1;
            }
            prop_assert_eq!(next, mp);
        }

        #[test]
        fn key_group_in_bounds(key in any::<i64>(), mp in 1u32..=MAX_MAX_PARALLELISM) {
            prop_assert!(assign_to_key_group(&key, mp).0 < mp);
        }

        /// The mask and shift for powers of two are Flink's `%` and `/`.
        #[test]
        fn powers_of_two_take_the_same_groups_and_subtasks(
            key in any::<u64>(),
            shift in 0u32..=15,
            p_seed in 1u32..=32768,
        ) {
            let mp = 1u32 << shift;
            let kg = assign_to_key_group(&key, mp);
            prop_assert_eq!(u64::from(kg.0), key.stable_hash() % u64::from(mp));
            let p = 1 + p_seed % mp;
            prop_assert_eq!(
                u64::from(operator_index_for_key_group(mp, p, kg)),
                u64::from(kg.0) * u64::from(p) / u64::from(mp)
            );
        }
    }
}
