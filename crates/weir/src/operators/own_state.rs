//! The keyed state operators keep in their own structures (timers, rolling
//! aggregates, window contents) and how it goes into a checkpoint: one entry
//! per key, filed under the key's group, so a restore at another
//! parallelism hands each subtask the keys it now owns.

use serde::de::DeserializeOwned;
use serde::Serialize;
use weir_runtime::checkpoint::SubtaskState;
use weir_runtime::operator::RuntimeContext;
use weir_state::{
    assign_to_key_group, decode_key, decode_value, encode_key, encode_value, StableHash,
    StateEntry, StateError,
};

/// An operator's line to the checkpoint for the state it keeps itself.
#[derive(Clone, Debug, Default)]
pub(crate) struct OwnState {
    state: SubtaskState,
    max_parallelism: u32,
}

impl OwnState {
    /// The operator subtask's, from its context in `open`.
    pub fn new(ctx: &RuntimeContext) -> Self {
        OwnState {
            state: ctx.subtask_state.clone(),
            max_parallelism: ctx.max_parallelism,
        }
    }

    /// What a restore brought for `name`: `(key, value)` per key.
    pub fn restore<K: DeserializeOwned, V: DeserializeOwned>(
        &self,
        name: &str,
    ) -> Result<Vec<(K, V)>, StateError> {
        self.state
            .take_restored_internal(name)?
            .into_iter()
            .map(|e| Ok((decode_key(&e.key)?, decode_value(&e.value)?)))
            .collect()
    }

    /// Writes `name` for the checkpoint being taken: one value per key.
    pub fn save<'a, K, V>(
        &self,
        name: &str,
        items: impl IntoIterator<Item = (&'a K, V)>,
    ) -> Result<(), StateError>
    where
        K: Serialize + StableHash + 'a,
        V: Serialize,
    {
        let mut entries = Vec::new();
        for (key, value) in items {
            let mut bytes = Vec::new();
            encode_key(key, &mut bytes)?;
            entries.push(StateEntry {
                state: String::new(),
                key_group: assign_to_key_group(key, self.max_parallelism),
                key: bytes,
                value: encode_value(&value)?,
            });
        }
        self.state.set_internal(name, entries)
    }
}
