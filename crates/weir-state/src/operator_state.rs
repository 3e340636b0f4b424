//! Operator state (Flink's `OperatorStateStore`): state of a parallel
//! operator instance, not of a key — e.g. a source's offsets. It is a set
//! of named lists; on restore at another parallelism a list is either
//! split evenly over the new instances or, for a union list, given whole to
//! every instance.

use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex, MutexGuard};

use serde::{Deserialize, Serialize};

use crate::codec::{decode_value, encode_value};
use crate::descriptor::{ListStateDescriptor, StateValue};
use crate::error::StateError;

/// How a list is redistributed when the parallelism changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Redistribution {
    /// Elements are split evenly over the new instances (Flink's
    /// `getListState`).
    EvenSplit,
    /// Every new instance gets every element (Flink's `getUnionListState`).
    Union,
}

/// The snapshot of one instance's operator state: each list's elements,
/// encoded.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperatorStateSnapshot {
    /// Name → (redistribution, encoded elements).
    pub lists: BTreeMap<String, (Redistribution, Vec<Vec<u8>>)>,
}

impl OperatorStateSnapshot {
    /// The snapshots of `new_parallelism` instances made from the snapshots
    /// of all old instances: even-split lists are cut into contiguous, near
    /// equal parts in instance order; union lists go whole to everyone.
    pub fn redistribute(
        old: &[OperatorStateSnapshot],
        new_parallelism: usize,
    ) -> Vec<OperatorStateSnapshot> {
        let mut out = vec![OperatorStateSnapshot::default(); new_parallelism];
        let mut all: BTreeMap<&str, (Redistribution, Vec<&Vec<u8>>)> = BTreeMap::new();
        for snapshot in old {
            for (name, (mode, elements)) in &snapshot.lists {
                let entry = all.entry(name.as_str()).or_insert((*mode, Vec::new()));
                entry.1.extend(elements.iter());
            }
        }
        for (name, (mode, elements)) in all {
            for (i, target) in out.iter_mut().enumerate() {
                let part: Vec<Vec<u8>> = match mode {
                    Redistribution::Union => elements.iter().map(|e| (*e).clone()).collect(),
                    Redistribution::EvenSplit => {
                        let (n, p) = (elements.len(), new_parallelism);
                        elements[n * i / p..n * (i + 1) / p]
                            .iter()
                            .map(|e| (*e).clone())
                            .collect()
                    }
                };
                target.lists.insert(name.to_string(), (mode, part));
            }
        }
        out
    }
}

#[derive(Default)]
struct Inner {
    lists: BTreeMap<String, (Redistribution, Vec<Vec<u8>>)>,
    restored: Option<OperatorStateSnapshot>,
}

/// The operator state of one instance.
#[derive(Clone, Default)]
pub struct OperatorStateStore {
    inner: Arc<Mutex<Inner>>,
}

impl std::fmt::Debug for OperatorStateStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OperatorStateStore").finish_non_exhaustive()
    }
}

impl OperatorStateStore {
    /// An empty store (a fresh start).
    pub fn new() -> Self {
        Self::default()
    }

    /// A store restored from `snapshot` (already redistributed for this
    /// instance).
    pub fn restored(snapshot: OperatorStateSnapshot) -> Self {
        OperatorStateStore {
            inner: Arc::new(Mutex::new(Inner {
                lists: BTreeMap::new(),
                restored: Some(snapshot),
            })),
        }
    }

    fn lock(&self) -> Result<MutexGuard<'_, Inner>, StateError> {
        self.inner
            .lock()
            .map_err(|_| StateError::Internal("operator state poisoned by a panic".into()))
    }

    /// Whether this instance was restored (Flink's `isRestored`).
    pub fn is_restored(&self) -> bool {
        self.lock().map(|i| i.restored.is_some()).unwrap_or(false)
    }

    fn list<T: StateValue>(
        &self,
        desc: &ListStateDescriptor<T>,
        mode: Redistribution,
    ) -> Result<OperatorListState<T>, StateError> {
        let mut inner = self.lock()?;
        let name = desc.name().to_string();
        if let Some((existing, _)) = inner.lists.get(&name) {
            if *existing != mode {
                return Err(StateError::Conflict {
                    name,
                    existing: format!("{existing:?} operator list state"),
                });
            }
        } else {
            let elements = inner
                .restored
                .as_mut()
                .and_then(|r| r.lists.remove(&name))
                .map(|(_, e)| e)
                .unwrap_or_default();
            inner.lists.insert(name.clone(), (mode, elements));
        }
        Ok(OperatorListState {
            store: self.clone(),
            name,
            _type: PhantomData,
        })
    }

    /// A list split evenly over instances on rescale.
    pub fn get_list_state<T: StateValue>(
        &self,
        desc: &ListStateDescriptor<T>,
    ) -> Result<OperatorListState<T>, StateError> {
        self.list(desc, Redistribution::EvenSplit)
    }

    /// A list every instance gets whole on restore.
    pub fn get_union_list_state<T: StateValue>(
        &self,
        desc: &ListStateDescriptor<T>,
    ) -> Result<OperatorListState<T>, StateError> {
        self.list(desc, Redistribution::Union)
    }

    /// This instance's operator state, for a checkpoint. Restored lists no
    /// function declared again are kept, so a checkpoint taken before a
    /// function declares its state does not lose it.
    pub fn snapshot(&self) -> Result<OperatorStateSnapshot, StateError> {
        let inner = self.lock()?;
        let mut lists = inner.lists.clone();
        if let Some(restored) = &inner.restored {
            for (name, list) in &restored.lists {
                lists.entry(name.clone()).or_insert_with(|| list.clone());
            }
        }
        Ok(OperatorStateSnapshot { lists })
    }
}

/// A list of operator state.
pub struct OperatorListState<T> {
    store: OperatorStateStore,
    name: String,
    _type: PhantomData<fn() -> T>,
}

impl<T> Clone for OperatorListState<T> {
    /// Another handle on the same list.
    fn clone(&self) -> Self {
        OperatorListState {
            store: self.store.clone(),
            name: self.name.clone(),
            _type: PhantomData,
        }
    }
}

impl<T: StateValue> OperatorListState<T> {
    fn with<R>(
        &self,
        f: impl FnOnce(&mut Vec<Vec<u8>>) -> Result<R, StateError>,
    ) -> Result<R, StateError> {
        let mut inner = self.store.lock()?;
        let (_, elements) = inner.lists.get_mut(&self.name).ok_or_else(|| {
            StateError::Internal(format!("operator state '{}' vanished", self.name))
        })?;
        f(elements)
    }

    /// The elements.
    pub fn get(&self) -> Result<Vec<T>, StateError> {
        self.with(|e| e.iter().map(|b| decode_value(b)).collect())
    }

    /// Appends an element.
    pub fn add(&self, value: T) -> Result<(), StateError> {
        self.with(|e| {
            e.push(encode_value(&value)?);
            Ok(())
        })
    }

    /// Replaces the elements.
    pub fn update(&self, values: Vec<T>) -> Result<(), StateError> {
        self.with(|e| {
            *e = values.iter().map(encode_value).collect::<Result<_, _>>()?;
            Ok(())
        })
    }

    /// Removes every element.
    pub fn clear(&self) -> Result<(), StateError> {
        self.with(|e| {
            e.clear();
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three source instances each keep the offsets of their partitions
    /// (even-split) and a shared watermark list (union).
    fn three_instances() -> Result<Vec<OperatorStateSnapshot>, StateError> {
        (0..3u64)
            .map(|i| {
                let store = OperatorStateStore::new();
                assert!(!store.is_restored());
                let offsets =
                    store.get_list_state(&ListStateDescriptor::<(u64, u64)>::new("offsets"))?;
                offsets.update(vec![(i * 2, 100 + i), (i * 2 + 1, 200 + i)])?;
                let marks =
                    store.get_union_list_state(&ListStateDescriptor::<u64>::new("marks"))?;
                marks.add(i)?;
                store.snapshot()
            })
            .collect()
    }

    #[test]
    fn even_split_lists_are_divided_and_union_lists_copied_on_rescale() -> Result<(), StateError> {
        let old = three_instances()?;
        let new = OperatorStateSnapshot::redistribute(&old, 2);
        let mut all_offsets = Vec::new();
        for snapshot in new {
            let store = OperatorStateStore::restored(snapshot);
            assert!(store.is_restored());
            let offsets = store
                .get_list_state(&ListStateDescriptor::<(u64, u64)>::new("offsets"))?
                .get()?;
            assert_eq!(offsets.len(), 3, "6 partitions over 2 instances");
            all_offsets.extend(offsets);
            let marks = store
                .get_union_list_state(&ListStateDescriptor::<u64>::new("marks"))?
                .get()?;
            assert_eq!(
                marks,
                vec![0, 1, 2],
                "every instance gets the whole union list"
            );
        }
        all_offsets.sort_unstable();
        assert_eq!(
            all_offsets,
            vec![(0, 100), (1, 200), (2, 101), (3, 201), (4, 102), (5, 202)]
        );
        Ok(())
    }

    #[test]
    fn scaling_out_leaves_some_instances_empty() -> Result<(), StateError> {
        let new = OperatorStateSnapshot::redistribute(&three_instances()?, 8);
        let sizes: Vec<usize> = new
            .iter()
            .map(|s| s.lists.get("offsets").map_or(0, |(_, e)| e.len()))
            .collect();
        assert_eq!(sizes.iter().sum::<usize>(), 6);
        assert!(sizes.iter().all(|&n| n <= 1));
        Ok(())
    }

    #[test]
    fn a_list_cannot_change_its_redistribution() -> Result<(), StateError> {
        let store = OperatorStateStore::new();
        store.get_list_state(&ListStateDescriptor::<u8>::new("x"))?;
        assert!(store
            .get_union_list_state(&ListStateDescriptor::<u8>::new("x"))
            .is_err());
        Ok(())
    }
}
