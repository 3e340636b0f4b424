//! How keys, namespaces and values become bytes.
//!
//! - Keys and namespaces: postcard — compact, deterministic (equal keys give
//!   equal bytes, which RocksDB's key layout needs) and specified.
//! - Values: a format version byte, then MessagePack with structs written as
//!   maps of field names. Postcard cannot evolve structs (it writes fields
//!   positionally and fails on a missing one), so values use a
//!   self-describing encoding.
//!
//! Evolution rules for value types: a field may be **added** if it carries
//! `#[serde(default)]` (old bytes read with the default); a field may be
//! **removed** (old bytes' extra field is ignored); fields may be reordered.
//! Renaming a field or changing its type is a breaking change: use a new
//! state name.

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::StateError;
use crate::key_group::StableHash;

/// The format version written in front of every value.
pub const VALUE_FORMAT_VERSION: u8 = 1;

/// Writes `key` into `buf` (cleared first), reusing its allocation.
pub fn encode_key<K: Serialize + ?Sized>(key: &K, buf: &mut Vec<u8>) -> Result<(), StateError> {
    buf.clear();
    append_key(key, buf)
}

/// [`encode_key`] for a key of keyed state: written by the key type where
/// it writes its own bytes ([`StableHash::append_key_bytes`]).
#[inline]
pub fn encode_state_key<K: Serialize + StableHash + ?Sized>(
    key: &K,
    buf: &mut Vec<u8>,
) -> Result<(), StateError> {
    buf.clear();
    append_state_key(key, buf)
}

/// [`append_key`] for a key of keyed state: written by the key type where
/// it writes its own bytes ([`StableHash::append_key_bytes`]).
#[inline]
pub fn append_state_key<K: Serialize + StableHash + ?Sized>(
    key: &K,
    buf: &mut Vec<u8>,
) -> Result<(), StateError> {
    if key.append_key_bytes(buf) {
        return Ok(());
    }
    append_key(key, buf)
}

/// Writes `key` after what `buf` holds (a namespace after its key, a
/// bundle's key after the keys before it).
#[inline]
pub fn append_key<K: Serialize + ?Sized>(key: &K, buf: &mut Vec<u8>) -> Result<(), StateError> {
    // Into the buffer where it is: a buffer moved into the serializer and
    // returned from it in a `Result` was read back in other widths than
    // it was stored in, a stall on every key of every state access.
    postcard::serialize_with_flavor(key, Append(buf))?;
    Ok(())
}

/// Postcard's output: the end of a borrowed buffer.
struct Append<'a>(&'a mut Vec<u8>);

impl postcard::ser_flavors::Flavor for Append<'_> {
    type Output = ();

    #[inline]
    fn try_extend(&mut self, data: &[u8]) -> postcard::Result<()> {
        // Most pieces are varints of a few bytes: copied a byte at a time
        // they cost less than a call to `memcpy` each.
        if data.len() <= 10 {
            self.0.reserve(data.len());
            for &b in data {
                self.0.push(b);
            }
            return Ok(());
        }
        self.0.extend_from_slice(data);
        Ok(())
    }

    #[inline]
    fn try_push(&mut self, data: u8) -> postcard::Result<()> {
        self.0.push(data);
        Ok(())
    }

    fn finalize(self) -> postcard::Result<()> {
        Ok(())
    }
}

/// A key from bytes written by [`encode_key`].
pub fn decode_key<K: DeserializeOwned>(bytes: &[u8]) -> Result<K, StateError> {
    Ok(postcard::from_bytes(bytes)?)
}

/// A value as bytes: version byte, then MessagePack (structs as maps).
pub fn encode_value<V: Serialize + ?Sized>(value: &V) -> Result<Vec<u8>, StateError> {
    let mut bytes = Vec::new();
    encode_value_into(value, &mut bytes)?;
    Ok(bytes)
}

/// Writes `value` as [`encode_value`] does into `buf` (cleared first),
/// reusing its allocation.
pub fn encode_value_into<V: Serialize + ?Sized>(
    value: &V,
    buf: &mut Vec<u8>,
) -> Result<(), StateError> {
    buf.clear();
    buf.push(VALUE_FORMAT_VERSION);
    let mut ser = rmp_serde::Serializer::new(&mut *buf).with_struct_map();
    value
        .serialize(&mut ser)
        .map_err(|e| StateError::Codec(e.to_string()))
}

/// A value from bytes written by [`encode_value`].
pub fn decode_value<V: DeserializeOwned>(bytes: &[u8]) -> Result<V, StateError> {
    match bytes.split_first() {
        Some((&VALUE_FORMAT_VERSION, rest)) => {
            rmp_serde::from_slice(rest).map_err(|e| StateError::Codec(e.to_string()))
        }
        Some((&found, _)) => Err(StateError::Version {
            found,
            expected: VALUE_FORMAT_VERSION,
        }),
        None => Err(StateError::Codec("empty value".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[test]
    fn values_round_trip_with_a_version_byte() {
        let bytes = encode_value(&(7u32, "x".to_string())).unwrap();
        assert_eq!(bytes[0], VALUE_FORMAT_VERSION);
        let back: (u32, String) = decode_value(&bytes).unwrap();
        assert_eq!(back, (7, "x".to_string()));
        let mut future = bytes.clone();
        future[0] = 99;
        assert!(matches!(
            decode_value::<(u32, String)>(&future),
            Err(StateError::Version { found: 99, .. })
        ));
    }

    #[test]
    fn keys_reuse_the_buffer() {
        let mut buf = Vec::with_capacity(64);
        encode_key(&"abc", &mut buf).unwrap();
        let first = buf.clone();
        encode_key(&"abc", &mut buf).unwrap();
        assert_eq!(buf, first);
        assert!(buf.capacity() >= 64);
    }

    #[derive(Serialize, Deserialize, PartialEq, Debug)]
    struct V1 {
        count: u64,
    }

    #[derive(Serialize, Deserialize, PartialEq, Debug)]
    struct V2 {
        count: u64,
        #[serde(default)]
        label: Option<String>,
    }

    #[test]
    fn an_added_defaulted_field_reads_old_bytes_and_a_removed_one_is_ignored() {
        let old = encode_value(&V1 { count: 3 }).unwrap();
        let new: V2 = decode_value(&old).unwrap();
        assert_eq!(
            new,
            V2 {
                count: 3,
                label: None
            }
        );
        let newer = encode_value(&V2 {
            count: 4,
            label: Some("x".into()),
        })
        .unwrap();
        let back: V1 = decode_value(&newer).unwrap();
        assert_eq!(back, V1 { count: 4 });
    }
}
