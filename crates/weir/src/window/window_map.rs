//! One key's windows in the general window operator: most keys have one
//! or a few open windows, so a short vector searched in order holds them
//! in a single small allocation (a hash map's first allocation is four
//! slots of a whole entry); a key with many windows (long sliding windows
//! over a key-value backend) moves to a hash map.

use std::hash::Hash;

use super::operator::Map;

/// Windows up to which a key keeps a vector.
const FEW: usize = 16;

/// Map from window to `E`.
pub(crate) enum WindowMap<W, E> {
    Few(Vec<(W, E)>),
    Many(Map<W, E>),
}

impl<W, E> Default for WindowMap<W, E> {
    fn default() -> Self {
        WindowMap::Few(Vec::new())
    }
}

impl<W: Eq + Hash, E> WindowMap<W, E> {
    pub fn get(&self, w: &W) -> Option<&E> {
        match self {
            WindowMap::Few(v) => v.iter().find(|(k, _)| k == w).map(|(_, e)| e),
            WindowMap::Many(m) => m.get(w),
        }
    }

    pub fn get_mut(&mut self, w: &W) -> Option<&mut E> {
        match self {
            WindowMap::Few(v) => v.iter_mut().find(|(k, _)| k == w).map(|(_, e)| e),
            WindowMap::Many(m) => m.get_mut(w),
        }
    }

    /// The entry of `w`, created empty if missing.
    pub fn entry_or_default(&mut self, w: W) -> &mut E
    where
        E: Default,
    {
        if let WindowMap::Few(v) = self {
            if v.len() >= FEW && !v.iter().any(|(k, _)| *k == w) {
                let all = std::mem::take(v);
                *self = WindowMap::Many(all.into_iter().collect());
            }
        }
        match self {
            WindowMap::Few(v) => {
                let at = match v.iter().position(|(k, _)| *k == w) {
                    Some(at) => at,
                    None => {
                        // One slot at first: most keys never get a second.
                        if v.capacity() == 0 {
                            v.reserve_exact(1);
                        }
                        v.push((w, E::default()));
                        v.len() - 1
                    }
                };
                &mut v[at].1
            }
            WindowMap::Many(m) => m.entry(w).or_default(),
        }
    }

    pub fn remove(&mut self, w: &W) -> Option<E> {
        match self {
            WindowMap::Few(v) => {
                let at = v.iter().position(|(k, _)| k == w)?;
                Some(v.swap_remove(at).1)
            }
            WindowMap::Many(m) => m.remove(w),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            WindowMap::Few(v) => v.len(),
            WindowMap::Many(m) => m.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn iter(&self) -> Box<dyn Iterator<Item = (&W, &E)> + '_> {
        match self {
            WindowMap::Few(v) => Box::new(v.iter().map(|(w, e)| (w, e))),
            WindowMap::Many(m) => Box::new(m.iter()),
        }
    }
}

impl<W: Eq + Hash, E> FromIterator<(W, E)> for WindowMap<W, E> {
    fn from_iter<I: IntoIterator<Item = (W, E)>>(iter: I) -> Self {
        let v: Vec<(W, E)> = iter.into_iter().collect();
        if v.len() > FEW {
            WindowMap::Many(v.into_iter().collect())
        } else {
            WindowMap::Few(v)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn behaves_as_a_map_through_the_switch_to_a_hash_map() {
        let mut m: WindowMap<u32, u32> = WindowMap::default();
        for w in 0..40u32 {
            *m.entry_or_default(w) += w;
            *m.entry_or_default(w) += 1;
            assert_eq!(m.len(), w as usize + 1);
        }
        assert!(matches!(m, WindowMap::Many(_)));
        for w in 0..40u32 {
            assert_eq!(m.get(&w), Some(&(w + 1)));
        }
        assert_eq!(m.remove(&7), Some(8));
        assert_eq!(m.get(&7), None);
        let mut few: WindowMap<u32, u32> = (0..3).map(|w| (w, w)).collect();
        assert!(matches!(few, WindowMap::Few(_)));
        *few.get_mut(&2).expect("present") = 9;
        let mut all: Vec<_> = few.iter().map(|(w, e)| (*w, *e)).collect();
        all.sort();
        assert_eq!(all, [(0, 0), (1, 1), (2, 9)]);
        assert_eq!(few.remove(&0), Some(0));
        assert_eq!(few.remove(&0), None);
        assert!(!few.is_empty());
    }
}
