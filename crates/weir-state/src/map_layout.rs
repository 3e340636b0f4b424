//! How map state lies in a sorted key-value store: one store entry per map
//! entry (as in Flink's RocksDB backend), so a large map is never read or
//! written whole; and how those entries convert to and from the portable
//! snapshot form, where a key's whole map is one value (the heap backend's
//! form), so snapshots move between backends and parallelisms.
//!
//! - Store key: `state id (u16 BE) | key group with bit 15 set (u16 BE) |
//!   key length (u16 BE) | key | map key (MessagePack)`. Key groups are
//!   below 2^15, so the set bit tells map entries from whole values
//!   without knowing the state's kind; the length keeps a key's entries
//!   together and lets a scan split them.
//! - Store value: version byte, then MessagePack of `(stamp, value)`.
//! - Portable value: version byte, then MessagePack of `(newest stamp,
//!   {map key: (stamp, value)})`, as the heap backend writes its
//!   `(stamp, HashMap<K, (i64, V)>)`.

use serde::de::IgnoredAny;
use serde::Deserialize;

use crate::codec::VALUE_FORMAT_VERSION;
use crate::error::StateError;
use crate::key_group::KeyGroup;
use crate::kv::{prefix, ttl_stamp};

/// Bit set in the key-group field of map entries.
const ENTRIES_FLAG: u16 = 0x8000;

/// Writes the store-key prefix of `key`'s map entries into `buf` (cleared).
pub(crate) fn entries_prefix(
    id: usize,
    key_group: KeyGroup,
    key: &[u8],
    buf: &mut Vec<u8>,
) -> Result<(), StateError> {
    let len = u16::try_from(key.len())
        .map_err(|_| StateError::Codec(format!("a key of {} bytes holds map state", key.len())))?;
    buf.clear();
    buf.extend_from_slice(&group_prefix(id, key_group));
    buf.extend_from_slice(&len.to_be_bytes());
    buf.extend_from_slice(key);
    Ok(())
}

/// The store-key prefix of all map entries of state `id` in `key_group`.
pub(crate) fn group_prefix(id: usize, key_group: KeyGroup) -> [u8; 4] {
    prefix(id, KeyGroup(key_group.0 | u32::from(ENTRIES_FLAG)))
}

/// The parts of a map entry's store key.
struct EntryKey<'a> {
    id: u16,
    key_group: u32,
    key: &'a [u8],
    map_key: &'a [u8],
}

/// The parts of a map entry's store key; `None` for a whole value's key.
fn split_entry_key(store_key: &[u8]) -> Result<Option<EntryKey<'_>>, StateError> {
    let Some(head) = store_key.get(..6) else {
        return Ok(None);
    };
    let kg = u16::from_be_bytes([head[2], head[3]]);
    if kg & ENTRIES_FLAG == 0 {
        return Ok(None);
    }
    let id = u16::from_be_bytes([head[0], head[1]]);
    let len = usize::from(u16::from_be_bytes([head[4], head[5]]));
    let bad = || StateError::Codec("truncated map entry key".into());
    let key = store_key.get(6..6 + len).ok_or_else(bad)?;
    let map_key = store_key.get(6 + len..).ok_or_else(bad)?;
    Ok(Some(EntryKey {
        id,
        key_group: u32::from(kg & !ENTRIES_FLAG),
        key,
        map_key,
    }))
}

/// One portable entry: state id, key group, key, value.
pub type PortableEntry = (u16, KeyGroup, Vec<u8>, Vec<u8>);

/// Turns a store's entries, in store order, into portable entries: whole
/// values pass through, a key's map entries become one map value.
#[derive(Default)]
pub struct PortableEntries {
    /// The key whose map is being gathered: id, key group, key.
    current: Option<(u16, u32, Vec<u8>)>,
    body: Vec<u8>,
    count: u32,
    newest: i64,
}

impl PortableEntries {
    /// Takes the next store entry; returns what is complete.
    pub fn push(
        &mut self,
        store_key: &[u8],
        value: &[u8],
        out: &mut Vec<PortableEntry>,
    ) -> Result<(), StateError> {
        let Some(EntryKey {
            id,
            key_group: kg,
            key,
            map_key,
        }) = split_entry_key(store_key)?
        else {
            self.finish(out);
            if let Some(head) = store_key.get(..4) {
                out.push((
                    u16::from_be_bytes([head[0], head[1]]),
                    KeyGroup(u32::from(u16::from_be_bytes([head[2], head[3]]))),
                    store_key[4..].to_vec(),
                    value.to_vec(),
                ));
            }
            return Ok(());
        };
        let same = self
            .current
            .as_ref()
            .is_some_and(|(i, g, k)| (*i, *g, k.as_slice()) == (id, kg, key));
        if !same {
            self.finish(out);
            self.current = Some((id, kg, key.to_vec()));
        }
        let entry = value
            .strip_prefix(&[VALUE_FORMAT_VERSION])
            .ok_or_else(|| StateError::Codec("map entry without its format version".into()))?;
        self.newest = self.newest.max(ttl_stamp(value)?);
        self.body.extend_from_slice(map_key);
        self.body.extend_from_slice(entry);
        self.count += 1;
        Ok(())
    }

    /// Completes the map being gathered, if any.
    pub fn finish(&mut self, out: &mut Vec<PortableEntry>) {
        let Some((id, kg, key)) = self.current.take() else {
            return;
        };
        let mut value = Vec::with_capacity(self.body.len() + 16);
        value.push(VALUE_FORMAT_VERSION);
        value.push(0x92); // an array of two: stamp, map
        write_i64(&mut value, self.newest);
        write_map_len(&mut value, self.count);
        value.append(&mut self.body);
        out.push((id, KeyGroup(kg), key, value));
        self.count = 0;
        self.newest = 0;
    }
}

/// MessagePack of an `i64`, as rmp-serde writes it.
fn write_i64(buf: &mut Vec<u8>, v: i64) {
    // Writing an integer into a vector cannot fail.
    let _ = rmp_serde::encode::write(buf, &v);
}

fn write_map_len(buf: &mut Vec<u8>, n: u32) {
    if n < 16 {
        buf.push(0x80 | n as u8);
    } else if let Ok(n) = u16::try_from(n) {
        buf.push(0xde);
        buf.extend_from_slice(&n.to_be_bytes());
    } else {
        buf.push(0xdf);
        buf.extend_from_slice(&n.to_be_bytes());
    }
}

/// Length of the MessagePack value at the start of `bytes`.
fn value_len(bytes: &[u8]) -> Result<usize, StateError> {
    let mut rest = bytes;
    let mut de = rmp_serde::Deserializer::new(&mut rest);
    IgnoredAny::deserialize(&mut de).map_err(|e| StateError::Codec(e.to_string()))?;
    drop(de);
    Ok(bytes.len() - rest.len())
}

/// A map entry of a portable map value: map key, store value.
pub(crate) type SplitEntry<'a> = (&'a [u8], Vec<u8>);

/// The map entries of a portable map value.
pub(crate) fn split_portable(value: &[u8]) -> Result<Vec<SplitEntry<'_>>, StateError> {
    let bad = |what: &str| StateError::Codec(format!("portable map value: {what}"));
    let body = match value.split_first() {
        Some((&VALUE_FORMAT_VERSION, body)) => body,
        Some((&found, _)) => {
            return Err(StateError::Version {
                found,
                expected: VALUE_FORMAT_VERSION,
            })
        }
        None => return Err(bad("empty")),
    };
    let body = body
        .strip_prefix(&[0x92])
        .ok_or_else(|| bad("not a pair"))?;
    let body = &body[value_len(body)?..];
    let (&marker, rest) = body.split_first().ok_or_else(|| bad("no map"))?;
    let (count, mut rest) = match marker {
        0x80..=0x8f => (usize::from(marker & 0x0f), rest),
        0xde if rest.len() >= 2 => (
            usize::from(u16::from_be_bytes([rest[0], rest[1]])),
            &rest[2..],
        ),
        0xdf if rest.len() >= 4 => (
            u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize,
            &rest[4..],
        ),
        _ => return Err(bad("no map")),
    };
    let mut out = Vec::with_capacity(count.min(1 << 16));
    for _ in 0..count {
        let k = value_len(rest)?;
        let (map_key, after) = rest.split_at(k);
        let v = value_len(after)?;
        let (entry, after) = after.split_at(v);
        let mut stored = Vec::with_capacity(entry.len() + 1);
        stored.push(VALUE_FORMAT_VERSION);
        stored.extend_from_slice(entry);
        out.push((map_key, stored));
        rest = after;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::codec::{decode_value, encode_value};

    /// A heap backend's map value splits into store entries and gathers
    /// back into the same bytes.
    #[test]
    fn portable_maps_split_and_gather_back() -> Result<(), StateError> {
        for n in [0usize, 1, 15, 16, 300] {
            let map: HashMap<String, (i64, Vec<u32>)> = (0..n)
                .map(|i| (format!("k{i}"), (i as i64 * 1000, vec![i as u32; i % 3])))
                .collect();
            let newest = (n.max(1) as i64 - 1) * 1000;
            let portable = encode_value(&(newest, &map))?;
            let entries = split_portable(&portable)?;
            assert_eq!(entries.len(), n);
            let mut prefix = Vec::new();
            entries_prefix(3, KeyGroup(77), b"key", &mut prefix)?;
            let mut sorted: Vec<(Vec<u8>, Vec<u8>)> = entries
                .into_iter()
                .map(|(k, v)| ([prefix.as_slice(), k].concat(), v))
                .collect();
            sorted.sort();
            let mut gather = PortableEntries::default();
            let mut out = Vec::new();
            for (k, v) in &sorted {
                gather.push(k, v, &mut out)?;
            }
            gather.finish(&mut out);
            if n == 0 {
                assert!(out.is_empty());
                continue;
            }
            assert_eq!(out.len(), 1);
            let (id, kg, key, value) = &out[0];
            assert_eq!((*id, *kg, key.as_slice()), (3, KeyGroup(77), &b"key"[..]));
            let back: (i64, HashMap<String, (i64, Vec<u32>)>) = decode_value(value)?;
            assert_eq!(back, (newest, map));
        }
        Ok(())
    }

    /// Whole values pass through; maps of two keys stay apart.
    #[test]
    fn whole_values_pass_and_keys_stay_apart() -> Result<(), StateError> {
        let mut gather = PortableEntries::default();
        let mut out = Vec::new();
        gather.push(&[0, 1, 0, 5, 9], b"whole", &mut out)?;
        for key in [&b"a"[..], b"b"] {
            let mut prefix = Vec::new();
            entries_prefix(1, KeyGroup(5), key, &mut prefix)?;
            prefix.extend_from_slice(&rmp_serde::to_vec(&1u8).unwrap_or_default());
            gather.push(&prefix, &encode_value(&(0i64, 2u8))?, &mut out)?;
        }
        gather.finish(&mut out);
        assert_eq!(out.len(), 3);
        assert_eq!(out[0], (1, KeyGroup(5), vec![9], b"whole".to_vec()));
        assert_eq!(
            (out[1].2.as_slice(), out[2].2.as_slice()),
            (&b"a"[..], &b"b"[..])
        );
        Ok(())
    }
}
