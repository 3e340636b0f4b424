//! The two operators of a [`KeyedBundleFunction`]: [`BundleGatherOperator`]
//! ahead of the keyed exchange, where the records are made, and
//! [`KeyedBundleOperator`] after it, which hands each key's records of a
//! bundle to the function with the key's state. A batch is gathered by
//! key (at most `max_records` records a bundle) on whichever of the two
//! threads has time to spare: before the exchange while sends to the
//! keyed operator find its channel full, after it otherwise.

use std::hash::{BuildHasher, Hash};
use std::marker::PhantomData;
use std::ops::Range;
use std::sync::{Arc, Mutex};

use hashbrown::HashTable;
use serde::Serialize;
use weir_runtime::element::StreamRecord;
use weir_runtime::metrics::OperatorMetrics;
use weir_runtime::operator::{Operator, Output, RuntimeContext};
use weir_runtime::{FunctionError, FunctionResult};
use weir_state::{
    append_state_key, key_group_of_hash, operator_index_for_key_group, KeyedStateStore, StableHash,
    StateError,
};

use super::process::{
    keyed_context, set_current_encoded_key, set_current_key, set_prepared_encoded_key,
    set_prepared_key, store_to_prepare,
};
use super::KeySelector;
use crate::functions::{Collector, KeyedBundleFunction, ProcessContext, Upcoming};

/// One key of a gathered bundle.
#[derive(Clone)]
pub(crate) struct GatheredKey<K> {
    key: K,
    /// The key's [`StableHash::stable_hash`], computed where it was
    /// gathered: the exchange splits a bundle by it, and the keyed
    /// operator places the key's state by it.
    hash: u64,
    /// The last record's timestamp.
    timestamp: i64,
    /// How many of the bundle's records are this key's.
    len: usize,
    /// Where its encoding (as keyed state encodes keys) is in the bundle's
    /// `encoded`: encoded where it was gathered, so that the keyed
    /// operator's thread, the busier one, does not encode it again.
    encoded: Range<usize>,
}

/// What travels from [`BundleGatherOperator`] to [`KeyedBundleOperator`],
/// one of these a batch: the batch gathered by key, or as it came.
#[derive(Clone)]
pub(crate) enum Gathered<K, I> {
    /// A bundle: each key's records in arrival order, one key's after
    /// another, keys in the order of their first record.
    Keyed {
        keys: Vec<GatheredKey<K>>,
        records: Vec<I>,
        /// The keys' encodings, one after another.
        encoded: Vec<u8>,
        /// The keyed operator's subtask these keys belong to, once split.
        subtask: usize,
    },
    /// Records still to be gathered, by the keyed operator.
    Raw {
        records: Vec<StreamRecord<I>>,
        subtask: usize,
    },
}

impl<K: StableHash, I> Gathered<K, I> {
    /// The keyed operator's subtask this was split for.
    pub(crate) fn subtask(&self) -> usize {
        match self {
            Gathered::Keyed { subtask, .. } | Gathered::Raw { subtask, .. } => *subtask,
        }
    }

    /// Splits this into one for each subtask (of `parallelism`, key
    /// groups of `max_parallelism`) that owns some of its keys, each
    /// key's records still together and in order.
    pub(crate) fn split_by_subtask(
        self,
        parallelism: usize,
        max_parallelism: u32,
        key_of: &KeySelector<I, K>,
        mut each: impl FnMut(Gathered<K, I>),
    ) {
        let subtask_of = |hash: u64| {
            let group = key_group_of_hash(hash, max_parallelism);
            operator_index_for_key_group(max_parallelism, parallelism as u32, group) as usize
        };
        match self {
            Gathered::Keyed {
                keys,
                records,
                encoded,
                ..
            } => {
                /// One subtask's keys, records and keys' encodings.
                struct Part<K, I>(Vec<GatheredKey<K>>, Vec<I>, Vec<u8>);
                let mut parts: Vec<Part<K, I>> = (0..parallelism)
                    .map(|_| Part(Vec::new(), Vec::new(), Vec::new()))
                    .collect();
                let mut records = records.into_iter();
                for mut key in keys {
                    let Part(keys, to, bytes) = &mut parts[subtask_of(key.hash)];
                    to.extend(records.by_ref().take(key.len));
                    let start = bytes.len();
                    bytes.extend_from_slice(&encoded[key.encoded]);
                    key.encoded = start..bytes.len();
                    keys.push(key);
                }
                for (subtask, Part(keys, records, encoded)) in parts.into_iter().enumerate() {
                    if !keys.is_empty() {
                        each(Gathered::Keyed {
                            keys,
                            records,
                            encoded,
                            subtask,
                        });
                    }
                }
            }
            Gathered::Raw { records, .. } => {
                let mut parts: Vec<Vec<StreamRecord<I>>> =
                    (0..parallelism).map(|_| Vec::new()).collect();
                for record in records {
                    parts[subtask_of(key_of(&record.value).stable_hash())].push(record);
                }
                for (subtask, records) in parts.into_iter().enumerate() {
                    if !records.is_empty() {
                        each(Gathered::Raw { records, subtask });
                    }
                }
            }
        }
    }
}

/// One key's records of the bundle being gathered.
struct KeyRecords<K, I> {
    key: K,
    /// Its [`StableHash::stable_hash`].
    hash: u64,
    /// The last record's timestamp.
    timestamp: i64,
    records: Vec<I>,
}

/// Gathers records by key into bundles of at most `max_records` records.
struct Gatherer<K, I> {
    key_of: KeySelector<I, K>,
    max_records: usize,
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
}

impl<K: Eq + Hash + StableHash, I> Gatherer<K, I> {
    /// `max_records` is at least one.
    fn new(key_of: KeySelector<I, K>, max_records: usize) -> Self {
        Gatherer {
            key_of,
            max_records: max_records.max(1),
            places: HashTable::new(),
            hasher: foldhash::fast::RandomState::default(),
            gathered: Vec::new(),
            spare: Vec::new(),
        }
    }

    /// Gathers `input` into bundles: `full` is called with each in
    /// `gathered` once full, and with the last one at the end, and takes
    /// it out ([`take`](Self::take) or [`recycle`](Self::recycle)).
    fn gather<E>(
        &mut self,
        input: impl Iterator<Item = StreamRecord<I>>,
        mut full: impl FnMut(&mut Self) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut in_bundle = 0;
        // The place of the record before's key in `gathered`.
        let mut before: Option<usize> = None;
        for r in input {
            if in_bundle == self.max_records {
                self.places.clear();
                full(self)?;
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
                        hash: key.stable_hash(),
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
        if self.gathered.is_empty() {
            return Ok(());
        }
        self.places.clear();
        full(self)
    }

    /// Empties the bundle's record lists into `spare`.
    fn recycle(&mut self) {
        for mut g in self.gathered.drain(..) {
            g.records.clear();
            self.spare.push(g.records);
        }
    }

    /// The bundle gathered so far, its keys' records laid one after
    /// another, in lists from `lists`.
    fn take(&mut self, lists: &Lists<K, I>) -> Result<Gathered<K, I>, StateError>
    where
        K: Serialize,
    {
        let len: usize = self.gathered.iter().map(|g| g.records.len()).sum();
        let mut keys = lists.keys.take(self.gathered.len());
        let mut records = lists.laid.take(len);
        let mut encoded = lists.encoded.take(0);
        for mut g in self.gathered.drain(..) {
            let start = encoded.len();
            if let Err(e) = append_state_key(&g.key, &mut encoded) {
                self.spare.push(g.records);
                return Err(e);
            }
            keys.push(GatheredKey {
                key: g.key,
                hash: g.hash,
                timestamp: g.timestamp,
                len: g.records.len(),
                encoded: start..encoded.len(),
            });
            records.append(&mut g.records);
            self.spare.push(g.records);
        }
        Ok(Gathered::Keyed {
            keys,
            records,
            encoded,
            subtask: 0,
        })
    }
}

/// Emptied lists, handed back by the operator that emptied them to the
/// one that fills them.
///
/// A list of a batch's size allocated anew each batch costs more than
/// its size suggests: an allocation that large sets the allocator
/// sorting all the small blocks freed since the last one.
pub(crate) struct Pool<T>(Arc<Mutex<Vec<Vec<T>>>>);

impl<T> Clone for Pool<T> {
    fn clone(&self) -> Self {
        Pool(Arc::clone(&self.0))
    }
}

impl<T> Default for Pool<T> {
    fn default() -> Self {
        Pool(Arc::default())
    }
}

impl<T> Pool<T> {
    /// The most lists kept.
    const KEPT: usize = 8;

    /// An empty list with room for `capacity`.
    fn take(&self, capacity: usize) -> Vec<T> {
        let mut list = self
            .0
            .lock()
            .ok()
            .and_then(|mut l| l.pop())
            .unwrap_or_default();
        // What the list still holds is dropped here, on the thread that
        // allocated it: a bundle's keys (of two columns or more, each an
        // allocation) dropped where they were used freed a thousand
        // blocks per batch into another thread's arena, on the thread
        // with the least time to spare.
        list.clear();
        list.reserve(capacity);
        list
    }

    /// Keeps `list`, if fewer than [`Self::KEPT`] are, to be emptied when
    /// it is taken again.
    fn give(&self, list: Vec<T>) {
        if let Ok(mut lists) = self.0.lock() {
            if lists.len() < Self::KEPT {
                lists.push(list);
            }
        }
    }
}

/// The lists a [`Gathered`] is made of, going round between the two
/// operators of one `process_bundles`.
pub(crate) struct Lists<K, I> {
    raw: Pool<StreamRecord<I>>,
    keys: Pool<GatheredKey<K>>,
    laid: Pool<I>,
    encoded: Pool<u8>,
}

impl<K, I> Clone for Lists<K, I> {
    fn clone(&self) -> Self {
        Lists {
            raw: self.raw.clone(),
            keys: self.keys.clone(),
            laid: self.laid.clone(),
            encoded: self.encoded.clone(),
        }
    }
}

impl<K, I> Default for Lists<K, I> {
    fn default() -> Self {
        Lists {
            raw: Pool::default(),
            keys: Pool::default(),
            laid: Pool::default(),
            encoded: Pool::default(),
        }
    }
}

/// Batches in a row that a send finding the keyed operator's channel full
/// has them gathered before the exchange.
const GATHER_AHEAD: u32 = 64;

/// Hands each batch on to the keyed exchange as one [`Gathered`]: gathered
/// by key here, on the thread that made the records, while the keyed
/// operator is the one that keeps the other waiting (a send of this
/// operator's found its channel full in the last [`GATHER_AHEAD`]
/// batches); as it came otherwise, for the keyed operator to gather.
/// Keying, hashing and gathering are a good part of what a bundle costs:
/// done where a core has time to spare, the job runs faster.
pub(crate) struct BundleGatherOperator<K, I> {
    gatherer: Gatherer<K, I>,
    lists: Lists<K, I>,
    /// Sends of this operator that found a channel full.
    metrics: Option<Arc<OperatorMetrics>>,
    /// Their count at the last batch.
    blocked: u64,
    /// Batches still to be gathered here.
    ahead: u32,
}

impl<K: Eq + Hash + StableHash, I> BundleGatherOperator<K, I> {
    /// `max_records` is at least one.
    pub fn new(key_of: KeySelector<I, K>, max_records: usize, lists: Lists<K, I>) -> Self {
        BundleGatherOperator {
            gatherer: Gatherer::new(key_of, max_records),
            lists,
            metrics: None,
            blocked: 0,
            ahead: 0,
        }
    }
}

impl<K, I> Operator for BundleGatherOperator<K, I>
where
    K: Clone + Eq + Hash + Serialize + StableHash + Send + 'static,
    I: Clone + Send + 'static,
{
    type In = I;
    type Out = Gathered<K, I>;

    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.metrics = Some(Arc::clone(&ctx.metrics));
        Ok(())
    }

    fn process_batch(
        &mut self,
        input: &mut Vec<StreamRecord<I>>,
        out: &mut Output<Gathered<K, I>>,
    ) -> FunctionResult {
        let Some(last) = input.last() else {
            return Ok(());
        };
        let timestamp = last.timestamp;
        let blocked = self.metrics.as_ref().map_or(0, |m| m.blocked_sends());
        if blocked != self.blocked {
            self.blocked = blocked;
            self.ahead = GATHER_AHEAD;
        }
        if self.ahead == 0 {
            // The batch itself goes, a list of its size left in its
            // place (an empty one would grow a record at a time).
            let records = std::mem::replace(input, self.lists.raw.take(input.len()));
            out.collect(StreamRecord::with_timestamp(
                Gathered::Raw {
                    records,
                    subtask: 0,
                },
                timestamp,
            ));
            return Ok(());
        }
        self.ahead -= 1;
        let lists = &self.lists;
        self.gatherer.gather(input.drain(..), |g| {
            out.collect(StreamRecord::with_timestamp(g.take(lists)?, timestamp));
            Ok::<(), FunctionError>(())
        })?;
        Ok(())
    }
}

/// A bundle's keys and their records, as the keyed operator hands them
/// to the function: the lists of the keys it gathered itself, or the
/// records of a [`Gathered::Keyed`] bundle laid one key after another.
trait KeysRecords<K, I> {
    fn keys(&self) -> usize;
    fn key(&self, i: usize) -> &K;
    /// Key `i`'s [`StableHash::stable_hash`].
    fn hash(&self, i: usize) -> u64;
    /// Key `i`'s encoding, where it was encoded before it came.
    fn encoded(&self, i: usize) -> Option<&[u8]>;
    /// The records of key `i + distance`, while key `i` is the next to be
    /// handed over.
    fn ahead(&self, i: usize, distance: usize) -> Option<&[I]>;
    /// Key `i`, its last record's timestamp and its records (asked for
    /// each key in turn).
    fn next(&mut self, i: usize) -> (&K, i64, &mut Vec<I>);
}

impl<K, I> KeysRecords<K, I> for Vec<KeyRecords<K, I>> {
    fn keys(&self) -> usize {
        self.len()
    }
    fn key(&self, i: usize) -> &K {
        &self[i].key
    }
    fn hash(&self, i: usize) -> u64 {
        self[i].hash
    }
    fn encoded(&self, _: usize) -> Option<&[u8]> {
        None
    }
    fn ahead(&self, i: usize, distance: usize) -> Option<&[I]> {
        self.get(i + distance).map(|g| g.records.as_slice())
    }
    fn next(&mut self, i: usize) -> (&K, i64, &mut Vec<I>) {
        let g = &mut self[i];
        (&g.key, g.timestamp, &mut g.records)
    }
}

/// A [`Gathered::Keyed`] bundle's keys, and its records not yet handed
/// over, moved a key's at a time into `records`.
struct Laid<'a, K, I> {
    keys: &'a [GatheredKey<K>],
    encoded: &'a [u8],
    rest: std::vec::Drain<'a, I>,
    records: &'a mut Vec<I>,
}

impl<K, I> KeysRecords<K, I> for Laid<'_, K, I> {
    fn keys(&self) -> usize {
        self.keys.len()
    }
    fn key(&self, i: usize) -> &K {
        &self.keys[i].key
    }
    fn hash(&self, i: usize) -> u64 {
        self.keys[i].hash
    }
    fn encoded(&self, i: usize) -> Option<&[u8]> {
        self.encoded.get(self.keys[i].encoded.clone())
    }
    fn ahead(&self, i: usize, distance: usize) -> Option<&[I]> {
        let len = self.keys.get(i + distance)?.len;
        let start: usize = self.keys[i..i + distance].iter().map(|k| k.len).sum();
        self.rest.as_slice().get(start..start + len)
    }
    fn next(&mut self, i: usize) -> (&K, i64, &mut Vec<I>) {
        let key = &self.keys[i];
        self.records.clear();
        self.records.extend(self.rest.by_ref().take(key.len));
        (&key.key, key.timestamp, self.records)
    }
}

/// The function, and what it needs to be handed a bundle's keys.
struct Handing<F, I, O> {
    f: F,
    watermark: i64,
    state: Option<KeyedStateStore>,
    _types: PhantomData<fn(I) -> O>,
}

impl<F, I, O: Send + 'static> Handing<F, I, O> {
    /// Hands each key of `bundle` its records, with its state.
    fn hand<K, B>(&mut self, bundle: &mut B, out: &mut Output<O>) -> FunctionResult
    where
        F: KeyedBundleFunction<K, I, O>,
        K: Serialize + StableHash,
        B: KeysRecords<K, I>,
    {
        // With big state, the bundle's keys are prepared at once, so that
        // each key's state is loaded while the keys before it are
        // processed (a bundle of thousands of keys otherwise waits for
        // memory at each). A bundle gathered ahead of the exchange has
        // every key encoded already.
        let encoded = bundle.keys() > 0 && bundle.encoded(0).is_some();
        let prepared = match store_to_prepare(&self.state, bundle.keys())? {
            Some(store) if encoded => {
                store.prepare_encoded_keys(
                    (0..bundle.keys()).filter_map(|i| Some((bundle.encoded(i)?, bundle.hash(i)))),
                )?;
                true
            }
            Some(store) => {
                store.prepare_hashed_keys(
                    (0..bundle.keys()).map(|i| (bundle.key(i), bundle.hash(i))),
                )?;
                true
            }
            None => false,
        };
        for i in 0..bundle.keys() {
            if prepared {
                for distance in (1..=Upcoming::<I>::FARTHEST).rev() {
                    if let Some(records) = bundle.ahead(i, distance) {
                        self.f.look_ahead(&Upcoming {
                            index: i + distance,
                            distance,
                            records,
                        })?;
                    }
                }
                match bundle.encoded(i) {
                    Some(key) => set_prepared_encoded_key(&self.state, i, key, bundle.hash(i))?,
                    None => set_prepared_key(&self.state, i, bundle.key(i))?,
                }
            } else {
                match bundle.encoded(i) {
                    Some(key) => set_current_encoded_key(&self.state, key, bundle.hash(i))?,
                    None => set_current_key(&self.state, bundle.key(i))?,
                }
            }
            let (key, timestamp, records) = bundle.next(i);
            let (collected, sides) = out.split();
            let mut ctx = ProcessContext::new(timestamp, self.watermark, key, sides);
            self.f
                .process_bundle(records, &mut ctx, &mut Collector::new(collected, timestamp))?;
            records.clear();
            // A bundle of many keys makes results for each: handed on a
            // batch at a time, their rows are dropped, and their memory
            // reused, while still in the caches.
            out.flush_if_full()?;
        }
        Ok(())
    }
}

/// Hands each key's records of each bundle to the function, keys in the
/// order of their first record, with the key's state; gathers the batches
/// that come as they were made.
pub(crate) struct KeyedBundleOperator<F, K, I, O> {
    handing: Handing<F, I, O>,
    gatherer: Gatherer<K, I>,
    lists: Lists<K, I>,
    /// The records of a [`Gathered::Keyed`] bundle's key being handed over
    /// (the function takes a list it may drain), kept for its allocation.
    records: Vec<I>,
}

impl<F, K: Eq + Hash + StableHash, I, O> KeyedBundleOperator<F, K, I, O> {
    /// `max_records` is at least one.
    pub fn new(f: F, key_of: KeySelector<I, K>, max_records: usize, lists: Lists<K, I>) -> Self {
        KeyedBundleOperator {
            lists,
            handing: Handing {
                f,
                watermark: i64::MIN,
                state: None,
                _types: PhantomData,
            },
            gatherer: Gatherer::new(key_of, max_records),
            records: Vec::new(),
        }
    }
}

impl<F, K, I, O> Operator for KeyedBundleOperator<F, K, I, O>
where
    F: KeyedBundleFunction<K, I, O>,
    K: Clone + Eq + Hash + Serialize + StableHash + Send + 'static,
    I: Send + 'static,
    O: Send + 'static,
{
    type In = Gathered<K, I>;
    type Out = O;

    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        let (ctx, store) = keyed_context(ctx)?;
        self.handing.state = Some(store);
        self.handing.f.open(&ctx)
    }

    fn process_batch(
        &mut self,
        input: &mut Vec<StreamRecord<Gathered<K, I>>>,
        out: &mut Output<O>,
    ) -> FunctionResult {
        let handing = &mut self.handing;
        for r in input.drain(..) {
            match r.value {
                Gathered::Keyed {
                    keys,
                    mut records,
                    encoded,
                    ..
                } => {
                    let mut laid = Laid {
                        keys: &keys,
                        encoded: &encoded,
                        rest: records.drain(..),
                        records: &mut self.records,
                    };
                    handing.hand(&mut laid, out)?;
                    drop(laid);
                    self.lists.keys.give(keys);
                    self.lists.laid.give(records);
                    self.lists.encoded.give(encoded);
                }
                Gathered::Raw { mut records, .. } => {
                    self.gatherer.gather(records.drain(..), |g| {
                        let handed = handing.hand(&mut g.gathered, out);
                        g.recycle();
                        handed
                    })?;
                    self.lists.raw.give(records);
                }
            }
        }
        Ok(())
    }

    fn process_watermark(&mut self, watermark: i64, out: &mut Output<O>) -> FunctionResult {
        self.handing.watermark = self.handing.watermark.max(watermark);
        out.emit_watermark(watermark)?;
        Ok(())
    }

    fn snapshot_state(&mut self, checkpoint_id: u64) -> FunctionResult {
        self.handing.f.snapshot_state(checkpoint_id)
    }

    fn close(&mut self) -> FunctionResult {
        self.handing.f.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use weir_runtime::testing::{runtime_context, HarnessOutput};
    use weir_state::{assign_to_key_group, ValueState, ValueStateDescriptor};

    /// Records (key, sequence number) stamped with their sequence number.
    fn records(keys: &[u32]) -> Vec<StreamRecord<(u32, u32)>> {
        keys.iter()
            .zip(0..)
            .map(|(&k, i)| StreamRecord::with_timestamp((k, i), i64::from(i)))
            .collect()
    }

    fn gather_op(
        max_records: usize,
    ) -> (BundleGatherOperator<u32, (u32, u32)>, Arc<OperatorMetrics>) {
        let mut op = BundleGatherOperator::new(
            Arc::new(|r: &(u32, u32)| r.0),
            max_records,
            Lists::default(),
        );
        let metrics = Arc::new(OperatorMetrics::default());
        op.metrics = Some(Arc::clone(&metrics));
        (op, metrics)
    }

    /// A bundle's keys, each with its records' sequence numbers and its
    /// timestamp.
    fn keyed(g: Gathered<u32, (u32, u32)>) -> Vec<(u32, Vec<u32>, i64)> {
        let Gathered::Keyed { keys, records, .. } = g else {
            panic!("not gathered");
        };
        let mut records = records.into_iter();
        keys.into_iter()
            .map(|k| {
                let seqs: Vec<u32> = records.by_ref().take(k.len).map(|r| r.1).collect();
                assert!(seqs.len() == k.len, "key {} short of records", k.key);
                // Its state is placed by this hash where it is processed.
                assert_eq!(k.hash, k.key.stable_hash(), "key {}'s hash", k.key);
                (k.key, seqs, k.timestamp)
            })
            .collect()
    }

    #[test]
    fn a_list_given_back_with_its_items_is_taken_again_empty() {
        let pool = Pool::<String>::default();
        pool.give(vec!["a key".to_string(), "another".to_string()]);
        let list = pool.take(10);
        assert!(list.is_empty(), "taken with {list:?}");
        assert!(list.capacity() >= 10);
    }

    #[test]
    fn batches_are_gathered_ahead_only_while_the_keyed_operator_keeps_them_waiting(
    ) -> FunctionResult {
        let (mut op, metrics) = gather_op(100);
        let mut h = HarnessOutput::new();
        let keys = [7, 3, 7, 5, 3, 7];
        // No send found the channel full: the batch goes as it came.
        op.process_batch(&mut records(&keys), &mut h.output)?;
        match h.take_values().as_slice() {
            [Gathered::Raw { records, .. }] => {
                let came: Vec<u32> = records.iter().map(|r| r.value.0).collect();
                assert_eq!(came, keys);
            }
            _ => panic!("one batch, not gathered, expected"),
        }
        // One did: the next GATHER_AHEAD batches are gathered here, each
        // key's records together, keys in the order they first came.
        metrics.add_blocked_send();
        for _ in 0..GATHER_AHEAD {
            op.process_batch(&mut records(&keys), &mut h.output)?;
            let mut out = h.take_values();
            assert_eq!(out.len(), 1);
            assert_eq!(
                keyed(out.remove(0)),
                [(7, vec![0, 2, 5], 5), (3, vec![1, 4], 4), (5, vec![3], 3)]
            );
        }
        op.process_batch(&mut records(&keys), &mut h.output)?;
        assert!(matches!(h.take_values().as_slice(), [Gathered::Raw { .. }]));
        Ok(())
    }

    #[test]
    fn a_gathered_batch_is_cut_into_bundles_of_at_most_max_records() -> FunctionResult {
        let (mut op, metrics) = gather_op(4);
        let mut h = HarnessOutput::new();
        metrics.add_blocked_send();
        op.process_batch(&mut records(&[1, 1, 2, 1, 1, 2, 2, 2, 3, 1]), &mut h.output)?;
        let bundles: Vec<_> = h.take_values().into_iter().map(keyed).collect();
        assert_eq!(
            bundles,
            [
                vec![(1, vec![0, 1, 3], 3), (2, vec![2], 2)],
                vec![(1, vec![4], 4), (2, vec![5, 6, 7], 7)],
                vec![(3, vec![8], 8), (1, vec![9], 9)],
            ]
        );
        Ok(())
    }

    #[test]
    fn a_batch_split_between_subtasks_sends_each_key_to_its_own() {
        let key_of: KeySelector<(u32, u32), u32> = Arc::new(|r: &(u32, u32)| r.0);
        let keys: Vec<u32> = (0..200).map(|i| i * 7 % 23).collect();
        let max_parallelism = 128;
        let subtask_of = |k: u32| {
            let group = assign_to_key_group(&k, max_parallelism);
            operator_index_for_key_group(max_parallelism, 3, group) as usize
        };
        let mut gatherer = Gatherer::new(Arc::clone(&key_of), 1000);
        let mut bundles = Vec::new();
        gatherer
            .gather(records(&keys).into_iter(), |g| {
                bundles.push(g.take(&Lists::default()).map_err(|_| ())?);
                Ok::<(), ()>(())
            })
            .ok();
        let raw = Gathered::Raw {
            records: records(&keys),
            subtask: 0,
        };
        for whole in [bundles.remove(0), raw] {
            let mut seen: std::collections::HashMap<u32, Vec<u32>> = Default::default();
            let mut subtasks = Vec::new();
            whole.split_by_subtask(3, max_parallelism, &key_of, |part| {
                let subtask = part.subtask();
                subtasks.push(subtask);
                let records: Vec<(u32, u32)> = match part {
                    Gathered::Keyed {
                        records,
                        keys,
                        encoded,
                        ..
                    } => {
                        for k in keys {
                            let mut expected = Vec::new();
                            weir_state::encode_key(&k.key, &mut expected).ok();
                            assert_eq!(encoded[k.encoded], expected, "key {}'s encoding", k.key);
                        }
                        records
                    }
                    Gathered::Raw { records, .. } => records.into_iter().map(|r| r.value).collect(),
                };
                for (k, seq) in records {
                    assert_eq!(subtask_of(k), subtask, "key {k}");
                    seen.entry(k).or_default().push(seq);
                }
            });
            assert_eq!(subtasks, [0, 1, 2], "one part per subtask, in order");
            for (k, seqs) in seen {
                let expected: Vec<u32> = (0..)
                    .zip(&keys)
                    .filter(|p| *p.1 == k)
                    .map(|p| p.0)
                    .collect();
                assert_eq!(seqs, expected, "key {k}");
            }
        }
    }

    /// Emits each key's records of a bundle: key, sequence numbers, and
    /// the key's count of records so far, kept in keyed state.
    #[derive(Clone, Default)]
    struct Tally(Option<ValueState<u64>>);

    impl KeyedBundleFunction<u32, (u32, u32), (u32, Vec<u32>, u64)> for Tally {
        fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
            self.0 = Some(ctx.get_state(&ValueStateDescriptor::new("count"))?);
            Ok(())
        }

        fn process_bundle(
            &mut self,
            records: &mut Vec<(u32, u32)>,
            ctx: &mut ProcessContext<'_, u32>,
            out: &mut Collector<'_, (u32, Vec<u32>, u64)>,
        ) -> FunctionResult {
            let count = self.0.as_ref().ok_or("not opened")?;
            let n = count.value()?.unwrap_or(0) + records.len() as u64;
            count.update(n)?;
            let seqs = records.drain(..).map(|r| r.1).collect();
            out.collect((*ctx.get_current_key(), seqs, n));
            Ok(())
        }
    }

    /// The same batches, gathered before the exchange or after it, are
    /// the same bundles with the same state (with state past a megabyte,
    /// so that keys are prepared and looked at ahead).
    #[test]
    fn batches_gathered_on_either_side_make_the_same_bundles() -> FunctionResult {
        let key_of: KeySelector<(u32, u32), u32> = Arc::new(|r: &(u32, u32)| r.0);
        // Each batch of 1024 has 512 keys, twice each, 40 000 keys in all.
        let keys: Vec<u32> = (0..120_000u32)
            .map(|i| (i / 1024 * 512 + i % 512).wrapping_mul(0x9E37_79B9) % 40_000)
            .collect();
        let mut each_way = Vec::new();
        for ahead in [false, true] {
            let mut op = KeyedBundleOperator::new(
                Tally::default(),
                Arc::clone(&key_of),
                1000,
                Lists::default(),
            );
            op.open(&runtime_context("bundles"))?;
            let mut h = HarnessOutput::new();
            let mut gatherer = Gatherer::new(Arc::clone(&key_of), 1000);
            for batch in keys.chunks(1024) {
                let mut records = records(batch);
                let mut input = Vec::new();
                if ahead {
                    gatherer.gather(records.drain(..), |g| {
                        input.push(StreamRecord::new(g.take(&Lists::default())?));
                        Ok::<(), FunctionError>(())
                    })?;
                } else {
                    input.push(StreamRecord::new(Gathered::Raw {
                        records,
                        subtask: 0,
                    }));
                }
                op.process_batch(&mut input, &mut h.output)?;
            }
            each_way.push(h.take_values());
        }
        let records: usize = each_way[0].iter().map(|b| b.1.len()).sum();
        assert_eq!(records, keys.len());
        assert!(each_way[0].len() < keys.len() * 2 / 3, "bundled");
        assert_eq!(each_way[0], each_way[1]);
        Ok(())
    }

    /// A key of a bundle laid one key after another is shown each later
    /// key's records as a key's own list would show them.
    #[test]
    fn a_laid_bundle_shows_later_keys_their_own_records() {
        let key_of: KeySelector<(u32, u32), u32> = Arc::new(|r: &(u32, u32)| r.0);
        let keys: Vec<u32> = (0..500u32).map(|i| i * i % 37).collect();
        let mut lists = Gatherer::new(Arc::clone(&key_of), 1000);
        lists
            .gather(records(&keys).into_iter(), |_| Ok::<(), ()>(()))
            .ok();
        let lists = std::mem::take(&mut lists.gathered);
        let mut laying = Gatherer::new(Arc::clone(&key_of), 1000);
        let mut laid = None;
        laying
            .gather(records(&keys).into_iter(), |g| {
                laid = Some(g.take(&Lists::default()).map_err(|_| ())?);
                Ok::<(), ()>(())
            })
            .ok();
        let Some(Gathered::Keyed {
            keys,
            mut records,
            encoded,
            ..
        }) = laid
        else {
            panic!("not gathered");
        };
        let mut scratch = Vec::new();
        let mut laid = Laid {
            keys: &keys,
            encoded: &encoded,
            rest: records.drain(..),
            records: &mut scratch,
        };
        assert_eq!(laid.keys(), lists.keys());
        for i in 0..lists.keys() {
            for distance in 1..=Upcoming::<()>::FARTHEST + 1 {
                assert_eq!(
                    laid.ahead(i, distance),
                    lists.ahead(i, distance),
                    "key {i}, {distance} ahead"
                );
            }
            let mut expected = Vec::new();
            weir_state::encode_key(&lists[i].key, &mut expected).ok();
            assert_eq!(laid.encoded(i), Some(expected.as_slice()), "key {i}");
            assert_eq!(lists.encoded(i), None, "key {i}, gathered where used");
            assert_eq!(laid.next(i).2, &lists[i].records, "key {i}");
        }
    }
}
