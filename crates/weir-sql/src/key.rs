//! The key of a keyed SQL operator (a group, a window's group, a
//! partition): the values of a row's key columns.
//!
//! Most keys are one column, held inline, so keying a row allocates
//! nothing and hashing or comparing a key touches no second cache line. A
//! key serialises and stably hashes as the list of its values, exactly as
//! a `Vec<Value>` does: state and key groups do not depend on how it is
//! held.

use std::ops::Deref;

use serde::{Deserialize, Serialize};
use weir::prelude::StableHash;

use crate::value::{append_key_piece, Value, KEY_PIECE};

/// The values of a row's key columns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RowKey {
    /// One key column (never held as `Many`, so equal keys are equal
    /// variants).
    One(Value),
    /// None, or two or more (boxed, not a `Vec`: a key is three words, not
    /// four, in every table of window and group state).
    Many(Box<[Value]>),
}

const _: () = assert!(
    std::mem::size_of::<RowKey>() == 24,
    "a key is as wide as one value"
);

impl RowKey {
    /// The key of a row's `values` whose key columns are `columns`, in
    /// order.
    #[inline]
    pub fn at(values: &[Value], columns: &[usize]) -> RowKey {
        match columns {
            [one] => RowKey::One(values[*one].clone()),
            many => RowKey::Many(many.iter().map(|&i| values[i].clone()).collect()),
        }
    }
}

impl From<Vec<Value>> for RowKey {
    fn from(mut values: Vec<Value>) -> RowKey {
        match values.len() {
            1 => RowKey::One(values.pop().unwrap_or(Value::Null)),
            _ => RowKey::Many(values.into_boxed_slice()),
        }
    }
}

impl std::hash::Hash for RowKey {
    /// The values alone: one column is never held as `Many`, so equal
    /// keys are the same variant without hashing which.
    #[inline]
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        match self {
            RowKey::One(v) => v.hash(state),
            RowKey::Many(values) => values.hash(state),
        }
    }
}

impl Deref for RowKey {
    type Target = [Value];

    fn deref(&self) -> &[Value] {
        match self {
            RowKey::One(v) => std::slice::from_ref(v),
            RowKey::Many(values) => values,
        }
    }
}

impl Serialize for RowKey {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(s)
    }
}

impl<'de> Deserialize<'de> for RowKey {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<RowKey, D::Error> {
        Vec::<Value>::deserialize(d).map(RowKey::from)
    }
}

impl StableHash for RowKey {
    fn stable_hash(&self) -> u64 {
        match self {
            RowKey::One(v) => Value::combine(&[v.stable_hash()]),
            // Most keys are a few columns: their hashes sit on the stack
            // (collected into a `Vec`, each key hashed was an allocation).
            RowKey::Many(values) if values.len() <= 8 => {
                let mut parts = [0u64; 8];
                for (part, v) in parts.iter_mut().zip(values.iter()) {
                    *part = v.stable_hash();
                }
                Value::combine(&parts[..values.len()])
            }
            RowKey::Many(values) => Value::combine(
                &values
                    .iter()
                    .map(StableHash::stable_hash)
                    .collect::<Vec<_>>(),
            ),
        }
    }

    /// As a `Vec<Value>` serialises (the count, then each value): keying
    /// a row through serde took more than looking its key up.
    #[inline]
    fn append_key_bytes(&self, buf: &mut Vec<u8>) -> bool {
        let start = buf.len();
        if let RowKey::One(v) = self {
            // Most keys: one number, written with its count at once.
            let mut piece = [0u8; KEY_PIECE];
            piece[0] = 1;
            if let Some(len) = v.number_key_piece(&mut piece, 1) {
                append_key_piece(buf, &piece, len);
                return true;
            }
        }
        crate::value::push_varint(buf, self.len() as u64);
        if self.iter().all(|v| v.append_key_bytes(buf)) {
            return true;
        }
        buf.truncate(start);
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The key of a row of key columns alone.
    fn of(values: &[Value]) -> RowKey {
        RowKey::at(values, &(0..values.len()).collect::<Vec<_>>())
    }

    fn keys() -> Vec<Vec<Value>> {
        vec![
            vec![],
            vec![Value::BigInt(7)],
            vec![Value::string("a")],
            vec![Value::Null],
            vec![Value::Int(1), Value::string("b")],
            (0..8).map(Value::BigInt).collect(),
            (0..9).map(Value::BigInt).collect(),
        ]
    }

    #[test]
    fn a_key_hashes_and_serialises_as_its_values() {
        for values in keys() {
            let key = of(&values);
            assert_eq!(&*key, &values[..]);
            assert_eq!(key.stable_hash(), values.stable_hash(), "{values:?}");
            // The same text as the values': the same bytes in state.
            let bytes = json(&key);
            assert_eq!(bytes, json(&values), "{values:?}");
            let back: RowKey = serde_json::from_slice(&bytes).expect("a key reads back");
            assert_eq!(back, key);
        }
    }

    /// A key writes its own bytes for state, and they are serde's, byte
    /// for byte: state written either way reads back either way, and
    /// keys land in the same RocksDB rows.
    #[test]
    fn a_key_writes_the_bytes_serde_writes() {
        let text = |n: usize| Value::string(&"é".repeat(n));
        let mut values = vec![
            Value::Null,
            Value::Boolean(false),
            Value::Boolean(true),
            Value::Double(-0.0),
            Value::Double(1.5e300),
            Value::Double(f64::NAN),
            text(0),
            text(3),
            text(64),
            text(9000),
            Value::decimal(12345, 2),
            Value::Bytes(vec![1u8, 2, 3].into()),
        ];
        for n in [
            0,
            1,
            -1,
            63,
            -64,
            64,
            -65,
            8191,
            1 << 20,
            i64::MAX,
            i64::MIN,
        ] {
            let small = i32::try_from(n).unwrap_or(if n < 0 { i32::MIN } else { i32::MAX });
            values.push(Value::BigInt(n));
            values.push(Value::Timestamp(n));
            values.push(Value::TimestampLtz(n));
            values.push(Value::Interval(n));
            values.push(Value::Int(small));
            values.push(Value::Date(small));
        }
        let mut keys: Vec<Vec<Value>> = values.iter().map(|v| vec![v.clone()]).collect();
        keys.extend(self::keys());
        keys.push(values.clone());
        keys.push(values[..10].to_vec());
        for key in keys.into_iter().map(RowKey::from) {
            // After bytes already there, as a namespace follows its key.
            let (mut own, mut serde) = (vec![9u8], vec![9u8]);
            weir_state::append_state_key(&key, &mut own).expect("a key encodes");
            weir_state::append_key(&key, &mut serde).expect("a key encodes");
            assert_eq!(own, serde, "{key:?}");
        }
        // Decimals and bytes are serde's to write: the key says so, and
        // leaves what it started on as it was.
        let mut buf = vec![9u8];
        let mixed = RowKey::from(vec![Value::BigInt(1), Value::decimal(1, 0)]);
        assert!(!mixed.append_key_bytes(&mut buf));
        assert_eq!(buf, [9]);
        assert!(RowKey::from(vec![Value::BigInt(1)]).append_key_bytes(&mut buf));
    }

    #[test]
    fn equal_values_make_equal_keys() {
        let one = of(&[Value::BigInt(3)]);
        assert_eq!(one, RowKey::from(vec![Value::BigInt(3)]));
        assert!(matches!(one, RowKey::One(_)));
        assert_ne!(one, of(&[Value::BigInt(4)]));
        // Key columns anywhere in a row, in key order.
        let row = [Value::Int(1), Value::string("b"), Value::BigInt(3)];
        assert_eq!(RowKey::at(&row, &[2]), one);
        assert_eq!(
            RowKey::at(&row, &[2, 0]),
            RowKey::Many(Box::new([Value::BigInt(3), Value::Int(1)]))
        );
    }

    /// Equal keys hash alike (a key made from a row and one read back
    /// from state meet in one map); values of different types, or
    /// different values, hash apart.
    #[test]
    fn equal_keys_hash_alike_and_different_ones_apart() {
        use std::hash::BuildHasher;
        let hasher = std::hash::BuildHasherDefault::<std::hash::DefaultHasher>::default();
        let hash = |k: &RowKey| hasher.hash_one(k);
        for values in keys() {
            let a = of(&values);
            let b = RowKey::from(values.clone());
            assert_eq!(hash(&a), hash(&b), "{values:?}");
        }
        let numbers = [
            Value::Null,
            Value::Boolean(true),
            Value::Int(1),
            Value::BigInt(1),
            Value::Double(1.0),
            Value::Date(1),
            Value::Timestamp(1),
            Value::TimestampLtz(1),
            Value::Interval(1),
            Value::decimal(1, 0),
            Value::string("1"),
            Value::BigInt(2),
        ];
        let hashes: std::collections::BTreeSet<u64> = numbers
            .iter()
            .map(|v| hash(&of(std::slice::from_ref(v))))
            .collect();
        assert_eq!(hashes.len(), numbers.len());
    }

    fn json<T: Serialize + ?Sized>(v: &T) -> Vec<u8> {
        serde_json::to_vec(v).expect("a key serialises")
    }
}
