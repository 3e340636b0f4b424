//! The heap backend: typed values in hash maps, one map per key group, so a
//! snapshot can be taken (and restored at another parallelism) key group by
//! key group. Reads and writes never serialize values; only the current key
//! is encoded, once per record, into a reused buffer.

use std::any::Any;
use std::collections::HashMap;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::codec::{decode_value, encode_value};
use crate::descriptor::StateKind;
use crate::error::StateError;
use crate::key_group::{KeyGroup, KeyGroupRange};

pub(crate) type Map<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// One registered state of a backend, its value type erased.
pub(crate) trait StateTable: Send {
    fn name(&self) -> &str;
    fn kind(&self) -> StateKind;
    fn type_name(&self) -> &'static str;
    fn as_any_mut(&mut self) -> &mut dyn Any;
    /// `(key bytes, value bytes)` of every key in key group offset `group`.
    fn snapshot_group(
        &self,
        group: usize,
        out: &mut Vec<(Vec<u8>, Vec<u8>)>,
    ) -> Result<(), StateError>;
    /// Puts back an entry written by `snapshot_group`.
    fn restore_entry(&mut self, group: usize, key: &[u8], value: &[u8]) -> Result<(), StateError>;
    /// Number of keys holding a value.
    fn len(&self) -> usize;
}

/// The values of one state, by key group (offset in the backend's range),
/// then by encoded key.
pub(crate) struct TypedTable<V> {
    name: String,
    kind: StateKind,
    pub groups: Vec<Map<Box<[u8]>, V>>,
}

impl<V> TypedTable<V> {
    pub fn new(name: &str, kind: StateKind, groups: usize) -> Self {
        TypedTable {
            name: name.to_string(),
            kind,
            groups: (0..groups).map(|_| Map::default()).collect(),
        }
    }
}

impl<V: Serialize + DeserializeOwned + Send + 'static> StateTable for TypedTable<V> {
    fn name(&self) -> &str {
        &self.name
    }
    fn kind(&self) -> StateKind {
        self.kind
    }
    fn type_name(&self) -> &'static str {
        std::any::type_name::<V>()
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
    fn snapshot_group(
        &self,
        group: usize,
        out: &mut Vec<(Vec<u8>, Vec<u8>)>,
    ) -> Result<(), StateError> {
        if let Some(map) = self.groups.get(group) {
            for (k, v) in map {
                out.push((k.to_vec(), encode_value(v)?));
            }
        }
        Ok(())
    }
    fn restore_entry(&mut self, group: usize, key: &[u8], value: &[u8]) -> Result<(), StateError> {
        let map = self.groups.get_mut(group).ok_or_else(|| {
            StateError::Internal(format!("key group offset {group} out of range"))
        })?;
        map.insert(key.into(), decode_value(value)?);
        Ok(())
    }
    fn len(&self) -> usize {
        self.groups.iter().map(Map::len).sum()
    }
}

/// Keyed state of one operator subtask, in memory.
pub(crate) struct HeapBackend {
    pub range: KeyGroupRange,
    pub max_parallelism: u32,
    pub key: Vec<u8>,
    pub group: usize,
    pub has_key: bool,
    pub tables: Vec<Box<dyn StateTable>>,
}

impl HeapBackend {
    pub fn new(max_parallelism: u32, range: KeyGroupRange) -> Self {
        HeapBackend {
            range,
            max_parallelism,
            key: Vec::with_capacity(64),
            group: 0,
            has_key: false,
            tables: Vec::new(),
        }
    }

    /// Registers (or finds) a state; returns its index.
    pub fn register<V: Serialize + DeserializeOwned + Send + 'static>(
        &mut self,
        name: &str,
        kind: StateKind,
    ) -> Result<usize, StateError> {
        if let Some(i) = self.tables.iter().position(|t| t.name() == name) {
            let t = &self.tables[i];
            if t.kind() != kind || t.type_name() != std::any::type_name::<V>() {
                return Err(StateError::Conflict {
                    name: name.to_string(),
                    existing: format!("{:?} of {}", t.kind(), t.type_name()),
                });
            }
            return Ok(i);
        }
        let groups = self.range.len() as usize;
        self.tables
            .push(Box::new(TypedTable::<V>::new(name, kind, groups)));
        Ok(self.tables.len() - 1)
    }

    /// Sets the current key (already encoded) and its key group.
    pub fn set_key(&mut self, key_group: KeyGroup) -> Result<(), StateError> {
        if !self.range.contains(key_group) {
            return Err(StateError::Internal(format!(
                "key group {key_group} is not in this subtask's range {}..={}",
                self.range.start, self.range.end
            )));
        }
        self.group = (key_group.0 - self.range.start) as usize;
        self.has_key = true;
        Ok(())
    }
}
