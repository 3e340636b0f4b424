//! Event strings that cost nothing to clone: a slice of the generator's
//! static text (names, cities, random letters), or a shared string read
//! from a file.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A string of an event.
#[derive(Clone)]
pub enum Text {
    /// Generated: part of the generator's static text.
    Static(&'static str),
    /// Read from elsewhere.
    Shared(Arc<str>),
}

impl Deref for Text {
    type Target = str;
    fn deref(&self) -> &str {
        match self {
            Text::Static(s) => s,
            Text::Shared(s) => s,
        }
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self)
    }
}

impl PartialEq for Text {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Eq for Text {}

/// Hashes the length, the first and the last eight bytes as one number:
/// equal texts hash alike (as `Eq` needs), and hashing a 100-byte `extra`
/// costs no more than a number. Generated texts differ in those bytes
/// (URLs end in their channel id).
impl Hash for Text {
    fn hash<H: Hasher>(&self, state: &mut H) {
        let b = self.as_bytes();
        let (head, tail) = match (b.first_chunk::<8>(), b.last_chunk::<8>()) {
            (Some(h), Some(t)) => (u64::from_le_bytes(*h), u64::from_le_bytes(*t)),
            // Shorter than eight bytes: all of them.
            _ => (b.iter().fold(0u64, |w, x| (w << 8) | u64::from(*x)), 0),
        };
        state.write_u64(head ^ tail.rotate_left(29) ^ (b.len() as u64).rotate_left(53));
    }
}

/// A text's stable hash is its string's: a key of a text routes and
/// restores as the same `String` key would.
impl weir::prelude::StableHash for Text {
    fn stable_hash(&self) -> u64 {
        (**self).stable_hash()
    }
}

impl PartialOrd for Text {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Text {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (**self).cmp(&**other)
    }
}

impl From<&'static str> for Text {
    fn from(s: &'static str) -> Self {
        Text::Static(s)
    }
}

impl Serialize for Text {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self)
    }
}

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Ok(Text::Shared(s.into()))
    }
}
