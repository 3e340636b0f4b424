//! One side's kept rows of a join aggregation's key: packed as words, the
//! values' kinds held once for the list, while every row is the same few
//! number-like values (Nexmark q4's bids, a price and a time: 16 bytes a
//! row instead of a [`Held`] row's 24; its auction, three values in the
//! entry itself instead of an allocation of their own); row by row as the
//! join keeps them otherwise.
//!
//! A join aggregation joins only inner joins of insert-only sides, which
//! never read how many rows a kept row joined, so packed rows do not hold
//! it. The list saves as the list of [`Held`] rows it stands for (each
//! with a count of 0), so savepoints restore either way.

use std::mem::ManuallyDrop;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use smallvec::SmallVec;

use crate::join::{Held, Kept, KeptValues, Word};
use crate::value::{InputRows, Value};

/// The most values a packed row holds.
const WIDTH: usize = 4;

/// A side's kept rows; see the module documentation.
#[derive(Debug, Clone)]
pub(crate) enum KeptRows {
    /// Every row is `width` values of kinds `kinds` (`Word::Null` for a
    /// column that is NULL in every row so far), its words one after the
    /// other in `words`.
    Packed {
        kinds: [Word; WIDTH],
        width: u8,
        words: SmallVec<[i64; WIDTH]>,
    },
    /// Rows one by one: a list with a row that is not packed the same way
    /// as the others (a string, a NULL where the others hold a number,
    /// more values or none).
    Rows(SmallVec<[Held; 1]>),
}

impl Default for KeptRows {
    fn default() -> Self {
        KeptRows::Rows(SmallVec::new())
    }
}

/// The kinds and words of `values`, if they pack: one to [`WIDTH`] values,
/// each a word.
fn pack(values: &[Value]) -> Option<([Word; WIDTH], [i64; WIDTH])> {
    if values.is_empty() || values.len() > WIDTH {
        return None;
    }
    let (mut kinds, mut words) = ([Word::Null; WIDTH], [0; WIDTH]);
    for (i, v) in values.iter().enumerate() {
        (kinds[i], words[i]) = Word::of(v)?;
    }
    Some((kinds, words))
}

impl KeptRows {
    /// Number of rows.
    pub fn len(&self) -> usize {
        match self {
            KeptRows::Packed { width, words, .. } => words.len() / usize::from(*width),
            KeptRows::Rows(rows) => rows.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        match self {
            KeptRows::Packed { words, .. } => words.is_empty(),
            KeptRows::Rows(rows) => rows.is_empty(),
        }
    }

    /// Whether there is exactly one row (without the division [`len`]
    /// makes, for every row kept).
    ///
    /// [`len`]: KeptRows::len
    pub fn is_one(&self) -> bool {
        match self {
            KeptRows::Packed { width, words, .. } => words.len() == usize::from(*width),
            KeptRows::Rows(rows) => rows.len() == 1,
        }
    }

    /// Keeps `values` after the first `skip` (an input row made where
    /// `inputs` says, its buffer given back), which joined `matches` rows.
    pub fn push(&mut self, values: Vec<Value>, skip: usize, matches: u32, inputs: InputRows) {
        let mine = values.get(skip..).unwrap_or_default();
        let packed = pack(mine);
        match (&mut *self, packed) {
            (
                KeptRows::Packed {
                    kinds,
                    width,
                    words,
                },
                Some((k, w)),
            ) if k == *kinds && usize::from(*width) == mine.len() => {
                // Word by word: `extend_from_slice` copied a row's few
                // words with a call to `memmove`.
                for &word in &w[..mine.len()] {
                    words.push(word);
                }
                inputs.release(values);
            }
            (list, Some((kinds, w))) if list.is_empty() => {
                *list = KeptRows::Packed {
                    kinds,
                    width: mine.len() as u8,
                    words: w[..mine.len()].iter().copied().collect(),
                };
                inputs.release(values);
            }
            (list, _) => {
                // Unpacked first if packed.
                let mut rows = match std::mem::take(list) {
                    KeptRows::Rows(rows) => rows,
                    packed => {
                        let mut rows = SmallVec::with_capacity(packed.len() + 1);
                        packed.for_each(|values| rows.push(Held::from(kept(values))));
                        rows
                    }
                };
                rows.push(Held::after(values, skip, matches, inputs));
                *list = KeptRows::Rows(rows);
            }
        }
    }

    /// Calls `f` with each row's values, in the order they were kept,
    /// until it fails.
    #[inline]
    pub fn try_for_each<E>(&self, mut f: impl FnMut(&[Value]) -> Result<(), E>) -> Result<(), E> {
        match self {
            KeptRows::Packed {
                kinds,
                width,
                words,
            } => {
                // Stepped through, not cut into chunks, which divides.
                let width = usize::from(*width);
                let mut at = 0;
                while at + width <= words.len() {
                    let values = unpacked(kinds, &words[at..at + width]);
                    f(&values[..width])?;
                    at += width;
                }
                Ok(())
            }
            KeptRows::Rows(rows) => rows.iter().try_for_each(|r| r.with_values(&mut f)),
        }
    }

    fn for_each(&self, mut f: impl FnMut(&[Value])) {
        let _ = self.try_for_each(|values| {
            f(values);
            Ok::<(), ()>(())
        });
    }

    /// Keeps the rows whose values `keep` is true of, in order.
    pub fn retain(&mut self, mut keep: impl FnMut(&[Value]) -> bool) {
        match self {
            KeptRows::Packed {
                kinds,
                width,
                words,
            } => {
                let width = usize::from(*width);
                let mut kept = 0;
                for at in (0..words.len()).step_by(width) {
                    let values = unpacked(kinds, &words[at..at + width]);
                    if keep(&values[..width]) {
                        words.copy_within(at..at + width, kept);
                        kept += width;
                    }
                }
                words.truncate(kept);
            }
            KeptRows::Rows(rows) => rows.retain(|r| r.with_values(&mut keep)),
        }
    }
}

/// A packed row's words as its values (the first `row.len()` of those
/// returned), of kinds `kinds`. Not dropped: a word's value owns nothing
/// (numbers, times, booleans, NULL), and dropping four values checked
/// each one's kind, for every row joined.
#[inline(always)]
fn unpacked(kinds: &[Word; WIDTH], row: &[i64]) -> ManuallyDrop<[Value; WIDTH]> {
    let mut values = ManuallyDrop::new([Value::Null, Value::Null, Value::Null, Value::Null]);
    for (i, &w) in row.iter().enumerate() {
        values[i] = kinds[i].value(w);
    }
    values
}

/// `values` as a kept row that joined no row.
fn kept(values: &[Value]) -> Kept {
    Kept {
        values: values.iter().cloned().collect::<KeptValues>(),
        matches: 0,
    }
}

impl Serialize for KeptRows {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            KeptRows::Rows(rows) => rows.serialize(serializer),
            KeptRows::Packed { .. } => {
                let mut rows = Vec::with_capacity(self.len());
                self.for_each(|values| rows.push(kept(values)));
                serializer.collect_seq(rows)
            }
        }
    }
}

impl<'de> Deserialize<'de> for KeptRows {
    /// A saved list of rows, packed again if they pack alike.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<KeptRows, D::Error> {
        let rows = SmallVec::<[Held; 1]>::deserialize(deserializer)?;
        let mut list = KeptRows::default();
        for row in &rows {
            let values = row.with_values(<[Value]>::to_vec);
            list.push(values, 0, 0, InputRows::Local);
        }
        if matches!(list, KeptRows::Rows(_)) {
            // Not all alike: kept as saved, each with its count.
            return Ok(KeptRows::Rows(rows));
        }
        Ok(list)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(list: &KeptRows) -> Vec<Vec<Value>> {
        let mut all = Vec::new();
        list.for_each(|v| all.push(v.to_vec()));
        all
    }

    fn bid(price: i64, time: i64) -> Vec<Value> {
        vec![
            Value::Boolean(true),
            Value::BigInt(7),
            Value::BigInt(price),
            Value::Timestamp(time),
        ]
    }

    /// Rows of the same kinds stay packed; a row that is not (a NULL, a
    /// string) unpacks the list, every row still there in order.
    #[test]
    fn rows_alike_stay_packed_until_one_is_not() {
        let mut list = KeptRows::default();
        let mut expected = Vec::new();
        for i in 0..9 {
            list.push(bid(100 + i, 1_000 * i), 2, 0, InputRows::Local);
            expected.push(bid(100 + i, 1_000 * i)[2..].to_vec());
        }
        assert!(matches!(list, KeptRows::Packed { width: 2, .. }));
        assert_eq!(list.len(), 9);
        assert_eq!(rows(&list), expected);
        let null_price = vec![Value::Null, Value::Null, Value::Null, Value::Timestamp(5)];
        list.push(null_price.clone(), 2, 3, InputRows::Local);
        expected.push(null_price[2..].to_vec());
        assert!(matches!(list, KeptRows::Rows(_)));
        assert_eq!(rows(&list), expected);
        list.retain(|v| v[1] != Value::Timestamp(5) && v[0] != Value::BigInt(104));
        expected.retain(|v| v[1] != Value::Timestamp(5) && v[0] != Value::BigInt(104));
        assert_eq!(rows(&list), expected);
        assert_eq!(list.len(), 8);

        // Three values, one a string: row by row from the start.
        let mut auctions = KeptRows::default();
        let auction = vec![
            Value::BigInt(1),
            Value::Timestamp(10),
            Value::string("x"),
            Value::BigInt(3),
        ];
        auctions.push(auction.clone(), 1, 0, InputRows::Local);
        assert!(matches!(auctions, KeptRows::Rows(_)));
        assert_eq!(rows(&auctions), [auction[1..].to_vec()]);
    }

    #[test]
    fn packed_rows_retain_in_order() {
        let mut list = KeptRows::default();
        for i in 0..20 {
            list.push(
                vec![Value::Int(i), Value::Timestamp(i64::from(i)), Value::Null],
                0,
                0,
                InputRows::Local,
            );
        }
        assert!(matches!(list, KeptRows::Packed { width: 3, .. }));
        list.retain(|v| matches!(v[0], Value::Int(i) if i % 3 == 0));
        let kept: Vec<Value> = rows(&list).into_iter().map(|v| v[0].clone()).collect();
        assert_eq!(kept, (0..20).step_by(3).map(Value::Int).collect::<Vec<_>>());
    }

    /// A packed list saves as the rows one by one did, and either restores
    /// as the other.
    #[test]
    fn saves_as_the_rows_one_by_one() -> Result<(), weir_state::StateError> {
        let mut packed = KeptRows::default();
        let mut one_by_one: SmallVec<[Held; 1]> = SmallVec::new();
        for i in 0..5 {
            packed.push(bid(i, 10 * i), 2, 0, InputRows::Local);
            one_by_one.push(Held::after(bid(i, 10 * i), 2, 0, InputRows::Local));
        }
        assert!(matches!(packed, KeptRows::Packed { .. }));
        let saved = weir_state::encode_value(&packed)?;
        assert_eq!(saved, weir_state::encode_value(&one_by_one)?);
        let restored: KeptRows = weir_state::decode_value(&saved)?;
        assert!(matches!(restored, KeptRows::Packed { .. }));
        assert_eq!(rows(&restored), rows(&packed));

        // Rows that do not pack alike restore one by one, counts and all.
        one_by_one.push(Held::after(
            vec![Value::string("s")],
            0,
            4,
            InputRows::Local,
        ));
        let saved = weir_state::encode_value(&one_by_one)?;
        let restored: KeptRows = weir_state::decode_value(&saved)?;
        assert!(matches!(restored, KeptRows::Rows(_)));
        assert_eq!(weir_state::encode_value(&restored)?, saved);
        Ok(())
    }
}
