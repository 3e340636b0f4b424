//! Rolling reduce on a keyed stream: emits the reduced value for every record.

use std::collections::HashMap;
use std::hash::Hash;

use serde::de::DeserializeOwned;
use serde::Serialize;
use weir_runtime::element::StreamRecord;
use weir_runtime::operator::{Operator, Output, RuntimeContext};
use weir_runtime::FunctionResult;
use weir_state::StableHash;

use super::{KeySelector, OwnState};
use crate::functions::ReduceFunction;

/// Flink's `StreamGroupedReduceOperator`: one value per key; each record is
/// folded into its key's value and the new value is emitted with the
/// record's timestamp. The values live in the operator (typed, no state
/// backend look-up per record) and go into checkpoints by key group.
pub(crate) struct KeyedReduceOperator<F, K, T> {
    f: F,
    key_of: KeySelector<T, K>,
    // `None` only while the reduce function runs; a panic there leaves the
    // key as if it had no value, never a half-written one.
    values: HashMap<K, Option<T>, foldhash::fast::RandomState>,
    own: Option<OwnState>,
}

impl<F, K, T> KeyedReduceOperator<F, K, T> {
    pub fn new(f: F, key_of: KeySelector<T, K>) -> Self {
        KeyedReduceOperator {
            f,
            key_of,
            values: HashMap::default(),
            own: None,
        }
    }
}

impl<F, K, T> Operator for KeyedReduceOperator<F, K, T>
where
    F: ReduceFunction<T>,
    K: Hash + Eq + Send + Serialize + DeserializeOwned + StableHash + 'static,
    T: Clone + Send + Serialize + DeserializeOwned + 'static,
{
    type In = T;
    type Out = T;

    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        let own = OwnState::new(ctx);
        self.values.extend(
            own.restore::<K, T>("reduce")?
                .into_iter()
                .map(|(k, v)| (k, Some(v))),
        );
        self.own = Some(own);
        Ok(())
    }

    fn snapshot_state(&mut self, _checkpoint_id: u64) -> FunctionResult {
        if let Some(own) = &self.own {
            own.save(
                "reduce",
                self.values
                    .iter()
                    .filter_map(|(k, v)| v.as_ref().map(|v| (k, v))),
            )?;
        }
        Ok(())
    }

    fn process_batch(
        &mut self,
        input: &mut Vec<StreamRecord<T>>,
        out: &mut Output<T>,
    ) -> FunctionResult {
        let records = out.records();
        records.reserve(input.len());
        for r in input.drain(..) {
            let key = (self.key_of)(&r.value);
            let value = match self.values.get_mut(&key) {
                Some(slot) => {
                    let reduced = match slot.take() {
                        Some(acc) => self.f.reduce(acc, r.value),
                        None => r.value,
                    };
                    *slot = Some(reduced.clone());
                    reduced
                }
                None => {
                    self.values.insert(key, Some(r.value.clone()));
                    r.value
                }
            };
            records.push(StreamRecord {
                value,
                timestamp: r.timestamp,
            });
        }
        Ok(())
    }
}
