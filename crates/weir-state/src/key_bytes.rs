//! Encoded keys as stored in the heap backend: short keys (nearly all) kept
//! inline, so a lookup compares bytes without following a pointer.

use std::borrow::Borrow;
use std::hash::{Hash, Hasher};

const INLINE: usize = 22;

/// An encoded key; hashes and compares as the byte slice it holds.
#[derive(Clone)]
pub(crate) enum KeyBytes {
    Inline { len: u8, bytes: [u8; INLINE] },
    Heap(Box<[u8]>),
}

impl From<&[u8]> for KeyBytes {
    fn from(key: &[u8]) -> Self {
        if key.len() <= INLINE {
            let mut bytes = [0u8; INLINE];
            bytes[..key.len()].copy_from_slice(key);
            KeyBytes::Inline {
                len: key.len() as u8,
                bytes,
            }
        } else {
            KeyBytes::Heap(key.into())
        }
    }
}

impl KeyBytes {
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        match self {
            KeyBytes::Inline { len, bytes } => &bytes[..*len as usize],
            KeyBytes::Heap(b) => b,
        }
    }
}

impl Borrow<[u8]> for KeyBytes {
    #[inline]
    fn borrow(&self) -> &[u8] {
        self.as_slice()
    }
}

impl Hash for KeyBytes {
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        // Must hash exactly as `[u8]` does, for lookups by slice.
        self.as_slice().hash(state)
    }
}

impl PartialEq for KeyBytes {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for KeyBytes {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn inline_and_heap_keys_behave_as_slices() {
        let short: &[u8] = b"abc";
        let long: Vec<u8> = (0..40).collect();
        let mut m: HashMap<KeyBytes, u32> = HashMap::new();
        m.insert(short.into(), 1);
        m.insert(long.as_slice().into(), 2);
        assert_eq!(m.get(short), Some(&1));
        assert_eq!(m.get(long.as_slice()), Some(&2));
        assert_eq!(m.get(&b"abd"[..]), None);
        assert!(matches!(KeyBytes::from(short), KeyBytes::Inline { .. }));
        assert!(matches!(KeyBytes::from(long.as_slice()), KeyBytes::Heap(_)));
    }
}
