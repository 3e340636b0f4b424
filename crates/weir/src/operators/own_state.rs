//! The state operators keep in their own structures (timers, rolling
//! aggregates, window contents, join buffers) and how it goes into a
//! checkpoint: one entry per key, filed under the key's group, so a restore
//! at another parallelism hands each subtask the keys it now owns; and the
//! operator's event-time watermark.
//!
//! Flink restarts operators at watermark `MIN`, so a window that fired
//! before the checkpoint can fire again when replayed records arrive.
//! Weir's event-time operators restore their watermark with their state:
//! replayed records are judged late or on time exactly as they were before
//! the failure, and windows fire once.

use serde::de::DeserializeOwned;
use serde::Serialize;
use weir_runtime::checkpoint::SubtaskState;
use weir_runtime::operator::RuntimeContext;
use weir_state::{
    assign_to_key_group, decode_key, decode_value, encode_state_key, encode_value,
    ListStateDescriptor, OperatorListState, StableHash, StateError,
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
            .map(|(_, key, value)| Ok((decode_key(&key)?, decode_value(&value)?)))
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
            encode_state_key(key, &mut bytes)?;
            entries.push((
                assign_to_key_group(key, self.max_parallelism).0,
                bytes,
                encode_value(&value)?,
            ));
        }
        self.state.set_internal(name, entries)
    }
}

/// The operator's watermark, kept in union operator state (on restore at
/// another parallelism every subtask takes the smallest, which never makes
/// an on-time record late).
pub(crate) struct SavedWatermark {
    list: OperatorListState<i64>,
}

impl SavedWatermark {
    /// Opens the saved watermark; returns it and the restored value
    /// (`i64::MIN` on a fresh start).
    pub fn open(ctx: &RuntimeContext) -> Result<(Self, i64), StateError> {
        let list = ctx
            .operator_state
            .get_union_list_state(&ListStateDescriptor::<i64>::new("\u{1}weir/watermark"))?;
        let restored = list.get()?.into_iter().min().unwrap_or(i64::MIN);
        Ok((SavedWatermark { list }, restored))
    }

    /// Records `watermark` for the checkpoint being taken.
    pub fn save(&self, watermark: i64) -> Result<(), StateError> {
        self.list.update(vec![watermark])
    }
}
