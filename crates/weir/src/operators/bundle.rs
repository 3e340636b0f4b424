//! The operator of a [`KeyedBundleFunction`]: each input batch grouped by
//! key, at most `max_records` records a bundle.

use std::hash::{BuildHasher, Hash};
use std::marker::PhantomData;

use hashbrown::HashTable;
use serde::Serialize;
use weir_runtime::element::StreamRecord;
use weir_runtime::operator::{Operator, Output, RuntimeContext};
use weir_runtime::FunctionResult;
use weir_state::{KeyedStateStore, StableHash};

use super::process::{keyed_context, set_current_key, set_prepared_key, store_to_prepare};
use super::KeySelector;
use crate::functions::{Collector, KeyedBundleFunction, ProcessContext, Upcoming};

/// One key's records of the bundle being gathered.
struct KeyRecords<K, I> {
    key: K,
    /// The last record's timestamp.
    timestamp: i64,
    records: Vec<I>,
}

pub(crate) struct KeyedBundleOperator<F, K, I, O> {
    f: F,
    key_of: KeySelector<I, K>,
    max_records: usize,
    watermark: i64,
    state: Option<KeyedStateStore>,
    /// Each key's place in `gathered`, for the bundle being gathered,
    /// found by the key's hash and compared with the key there: the key
    /// is held once, in `gathered`, not cloned into a map (a key of two
    /// strings is an allocation).
    places: HashTable<usize>,
    /// Hashes keys for `places` (as the other operators' tables do, not
    /// with SipHash: a key is hashed here once per record).
    hasher: foldhash::fast::RandomState,
    gathered: Vec<KeyRecords<K, I>>,
    /// Emptied record lists of earlier bundles, kept for their allocation.
    spare: Vec<Vec<I>>,
    _types: PhantomData<fn(I) -> O>,
}

impl<F, K, I, O> KeyedBundleOperator<F, K, I, O> {
    /// `max_records` is at least one.
    pub fn new(f: F, key_of: KeySelector<I, K>, max_records: usize) -> Self {
        KeyedBundleOperator {
            f,
            key_of,
            max_records: max_records.max(1),
            watermark: i64::MIN,
            state: None,
            places: HashTable::new(),
            hasher: foldhash::fast::RandomState::default(),
            gathered: Vec::new(),
            spare: Vec::new(),
            _types: PhantomData,
        }
    }
}

impl<F, K, I, O> KeyedBundleOperator<F, K, I, O>
where
    F: KeyedBundleFunction<K, I, O>,
    K: Clone + Eq + Hash + Serialize + StableHash,
    O: Send + 'static,
{
    /// Hands each key's gathered records to the function, keys in the
    /// order of their first record.
    fn finish_bundle(&mut self, out: &mut Output<O>) -> FunctionResult {
        self.places.clear();
        // With big state, the bundle's keys are prepared at once, so that
        // each key's state is loaded while the keys before it are
        // processed (a bundle of thousands of keys otherwise waits for
        // memory at each).
        let prepared = match store_to_prepare(&self.state, self.gathered.len())? {
            Some(store) => {
                store.prepare_keys(self.gathered.iter().map(|g| &g.key))?;
                true
            }
            None => false,
        };
        for i in 0..self.gathered.len() {
            if prepared {
                for distance in (1..=Upcoming::<I>::FARTHEST).rev() {
                    if let Some(next) = self.gathered.get(i + distance) {
                        self.f.look_ahead(&Upcoming {
                            index: i + distance,
                            distance,
                            records: &next.records,
                        })?;
                    }
                }
                set_prepared_key(&self.state, i, &self.gathered[i].key)?;
            } else {
                set_current_key(&self.state, &self.gathered[i].key)?;
            }
            let gathered = &mut self.gathered[i];
            let (collected, sides) = out.split();
            let mut ctx =
                ProcessContext::new(gathered.timestamp, self.watermark, &gathered.key, sides);
            self.f.process_bundle(
                &mut gathered.records,
                &mut ctx,
                &mut Collector::new(collected, gathered.timestamp),
            )?;
            let mut records = std::mem::take(&mut gathered.records);
            records.clear();
            self.spare.push(records);
            // A bundle of many keys makes results for each: handed on a
            // batch at a time, their rows are dropped, and their memory
            // reused, while still in the caches.
            out.flush_if_full()?;
        }
        self.gathered.clear();
        Ok(())
    }
}

impl<F, K, I, O> Operator for KeyedBundleOperator<F, K, I, O>
where
    F: KeyedBundleFunction<K, I, O>,
    K: Clone + Eq + Hash + Serialize + StableHash + Send + 'static,
    I: Send + 'static,
    O: Send + 'static,
{
    type In = I;
    type Out = O;

    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        let (ctx, store) = keyed_context(ctx)?;
        self.state = Some(store);
        self.f.open(&ctx)
    }

    fn process_batch(
        &mut self,
        input: &mut Vec<StreamRecord<I>>,
        out: &mut Output<O>,
    ) -> FunctionResult {
        let mut in_bundle = 0;
        // The place of the record before's key in `gathered`.
        let mut before: Option<usize> = None;
        for r in input.drain(..) {
            if in_bundle == self.max_records {
                self.finish_bundle(out)?;
                in_bundle = 0;
                before = None;
            }
            in_bundle += 1;
            let key = (self.key_of)(&r.value);
            // Runs of records of one key (a day's, an hour's) are common:
            // the key before is compared first, and such a record's key
            // is not hashed.
            let (places, hasher, all) = (&mut self.places, &self.hasher, &self.gathered);
            let place = match before.filter(|&p| all[p].key == key) {
                Some(p) => Ok(p),
                None => {
                    let hash = hasher.hash_one(&key);
                    match places.find(hash, |&p| all[p].key == key) {
                        Some(&p) => Ok(p),
                        None => Err(hash),
                    }
                }
            };
            let gathered = match place {
                Ok(place) => {
                    before = Some(place);
                    &mut self.gathered[place]
                }
                Err(hash) => {
                    places.insert_unique(hash, all.len(), |&p| hasher.hash_one(&all[p].key));
                    let records = self.spare.pop().unwrap_or_default();
                    self.gathered.push(KeyRecords {
                        key,
                        timestamp: r.timestamp,
                        records,
                    });
                    let last = self.gathered.len() - 1;
                    before = Some(last);
                    &mut self.gathered[last]
                }
            };
            gathered.timestamp = r.timestamp;
            gathered.records.push(r.value);
        }
        self.finish_bundle(out)
    }

    fn process_watermark(&mut self, watermark: i64, out: &mut Output<O>) -> FunctionResult {
        self.watermark = self.watermark.max(watermark);
        out.emit_watermark(watermark)?;
        Ok(())
    }

    fn snapshot_state(&mut self, checkpoint_id: u64) -> FunctionResult {
        self.f.snapshot_state(checkpoint_id)
    }

    fn close(&mut self) -> FunctionResult {
        self.f.close()
    }
}
