//! An ordered, de-duplicated queue of timers (Flink's internal timer service).
//!
//! Timers are `(timestamp, key, namespace)`; registering one twice keeps
//! one. They fire in timestamp order; among equal timestamps, in
//! registration order. Deleting is lazy: a deleted timer stays queued and
//! is skipped when it comes up. The set of live timers is what a
//! checkpoint snapshots.
//!
//! Timers wait in a [`TimeQueue`] (most are registered in time order and
//! cost no reordering). Each queued timer keeps its hash, so firing one
//! looks it up in the live set without hashing its key again.

use std::hash::{BuildHasher, Hash};

use hashbrown::HashTable;

use super::queue::TimeQueue;

/// A timer: fire at `timestamp` for `key` in `namespace` (e.g. a window).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Timer<K, N> {
    /// When it fires (event time: when the watermark reaches it).
    pub timestamp: i64,
    /// The key it was registered for.
    pub key: K,
    /// The namespace it was registered in.
    pub namespace: N,
}

/// Timers of one kind (event or processing time) of one operator.
#[derive(Debug, Clone)]
pub struct TimerQueue<K, N> {
    /// The timers by time and registration (deleted ones included until
    /// they come up).
    queue: TimeQueue<Queued<K, N>>,
    /// The timers that will fire, with their hashes.
    live: HashTable<(u64, Timer<K, N>)>,
    hasher: foldhash::fast::RandomState,
}

/// A queued timer (its time is the queue's) and its hash.
#[derive(Debug, Clone)]
struct Queued<K, N> {
    hash: u64,
    key: K,
    namespace: N,
}

impl<K: Clone + Eq + Hash, N: Clone + Eq + Hash> Default for TimerQueue<K, N> {
    fn default() -> Self {
        TimerQueue {
            queue: TimeQueue::new(),
            live: HashTable::new(),
            hasher: Default::default(),
        }
    }
}

impl<K: Clone + Eq + Hash, N: Clone + Eq + Hash> TimerQueue<K, N> {
    pub fn new() -> Self {
        Self::default()
    }

    fn hash_of(&self, timestamp: i64, key: &K, namespace: &N) -> u64 {
        self.hasher.hash_one((timestamp, key, namespace))
    }

    fn find(&self, hash: u64, timestamp: i64, key: &K, namespace: &N) -> bool {
        self.live
            .find(hash, is(hash, timestamp, key, namespace))
            .is_some()
    }

    /// Removes the timer from the live set: `false` if it was not there.
    fn remove_live(&mut self, hash: u64, timestamp: i64, key: &K, namespace: &N) -> bool {
        match self
            .live
            .find_entry(hash, is(hash, timestamp, key, namespace))
        {
            Ok(entry) => {
                entry.remove();
                true
            }
            Err(_) => false,
        }
    }

    /// Registers a timer; `false` if it was already registered.
    pub fn register(&mut self, timestamp: i64, key: K, namespace: N) -> bool {
        let hash = self.hash_of(timestamp, &key, &namespace);
        if self.find(hash, timestamp, &key, &namespace) {
            return false;
        }
        let timer = Timer {
            timestamp,
            key: key.clone(),
            namespace: namespace.clone(),
        };
        self.live.insert_unique(hash, (hash, timer), |(h, _)| *h);
        self.queue.push(
            timestamp,
            Queued {
                hash,
                key,
                namespace,
            },
        );
        true
    }

    /// Deletes a timer (it stays queued until it comes up, then is
    /// skipped).
    pub fn delete(&mut self, timestamp: i64, key: &K, namespace: &N) {
        let hash = self.hash_of(timestamp, key, namespace);
        self.remove_live(hash, timestamp, key, namespace);
    }

    /// Whether the timer is registered.
    pub fn contains(&self, timestamp: i64, key: &K, namespace: &N) -> bool {
        self.find(
            self.hash_of(timestamp, key, namespace),
            timestamp,
            key,
            namespace,
        )
    }

    /// The earliest live timer's timestamp.
    pub fn peek_timestamp(&mut self) -> Option<i64> {
        self.skip_deleted();
        self.earliest_hint()
    }

    /// The earliest timestamp queued, possibly of a deleted timer: a lower
    /// bound of the next firing, readable without `&mut`.
    pub fn earliest_hint(&self) -> Option<i64> {
        self.queue.peek().map(|(t, _)| t)
    }

    /// How many timers will fire, and a lower bound of the earliest (see
    /// [`earliest_hint`](Self::earliest_hint)).
    pub fn pending(&self) -> (u64, Option<i64>) {
        let count = self.live.len() as u64;
        (count, (count > 0).then(|| self.earliest_hint()).flatten())
    }

    /// Removes and returns the earliest timer with `timestamp <= time`.
    pub fn pop_due(&mut self, time: i64) -> Option<Timer<K, N>> {
        loop {
            let (timestamp, q) = self.queue.pop_due(time)?;
            if self.remove_live(q.hash, timestamp, &q.key, &q.namespace) {
                return Some(Timer {
                    timestamp,
                    key: q.key,
                    namespace: q.namespace,
                });
            }
        }
    }

    /// Number of live timers.
    pub fn len(&self) -> usize {
        self.live.len()
    }

    /// Whether no timer is live.
    pub fn is_empty(&self) -> bool {
        self.live.is_empty()
    }

    /// The live timers, in no particular order (for snapshots).
    pub fn iter(&self) -> impl Iterator<Item = &Timer<K, N>> {
        self.live.iter().map(|(_, t)| t)
    }

    /// Drops deleted timers from the front of the queue. A timer deleted
    /// and registered again is queued twice: the first to come up fires
    /// and leaves the set, so the second is skipped.
    fn skip_deleted(&mut self) {
        while let Some((timestamp, q)) = self.queue.peek() {
            if self.find(q.hash, timestamp, &q.key, &q.namespace) {
                return;
            }
            self.queue.pop();
        }
    }
}

/// Whether a live entry is the timer `(timestamp, key, namespace)`,
/// hashed to `hash`.
fn is<'a, K: Eq, N: Eq>(
    hash: u64,
    timestamp: i64,
    key: &'a K,
    namespace: &'a N,
) -> impl Fn(&(u64, Timer<K, N>)) -> bool + 'a {
    move |(h, t)| {
        *h == hash && t.timestamp == timestamp && t.key == *key && t.namespace == *namespace
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fires_in_time_order_without_duplicates() {
        let mut q = TimerQueue::new();
        assert!(q.register(30, "a", 0));
        assert!(q.register(10, "b", 0));
        assert!(!q.register(30, "a", 0), "duplicate");
        assert!(q.register(10, "a", 1));
        assert_eq!(q.len(), 3);
        assert_eq!(q.pop_due(5), None);
        let fired: Vec<_> = std::iter::from_fn(|| q.pop_due(100))
            .map(|t| (t.timestamp, t.key, t.namespace))
            .collect();
        assert_eq!(fired, vec![(10, "b", 0), (10, "a", 1), (30, "a", 0)]);
        assert!(q.is_empty());
    }

    /// Timers registered in time order and out of it (the run and the
    /// heap) fire as one queue: by time, then registration.
    #[test]
    fn timers_in_and_out_of_order_fire_by_time_then_registration() {
        let mut q = TimerQueue::new();
        let mut model: Vec<(i64, u64, u32)> = Vec::new();
        let mut state = 7u64;
        let mut next = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            state >> 33
        };
        let mut fired = Vec::new();
        let mut expected = Vec::new();
        let mut watermark = 0i64;
        for seq in 0..5000u64 {
            // Mostly the current or next window's end, sometimes an earlier one.
            let t = watermark + [10, 10, 20, 5, 1][next() as usize % 5];
            let key = (next() % 40) as u32;
            let new = !model.iter().any(|&(mt, _, mk)| mt == t && mk == key);
            assert_eq!(q.register(t, key, ()), new);
            if new {
                model.push((t, seq, key));
            }
            if next() % 50 == 0 {
                watermark += 7;
                while let Some(timer) = q.pop_due(watermark) {
                    fired.push((timer.timestamp, timer.key));
                }
                model.sort();
                let due = model.partition_point(|&(mt, _, _)| mt <= watermark);
                expected.extend(model.drain(..due).map(|(t, _, k)| (t, k)));
                assert_eq!(q.len(), model.len());
            }
        }
        assert_eq!(fired, expected);
        assert!(fired.len() > 1000, "{} fired", fired.len());
    }

    #[test]
    fn deleted_timers_do_not_fire_and_can_come_back() {
        let mut q = TimerQueue::new();
        q.register(10, 1u32, ());
        q.register(20, 2u32, ());
        q.delete(10, &1, &());
        assert!(!q.contains(10, &1, &()));
        assert_eq!(q.peek_timestamp(), Some(20));
        q.register(10, 1, ());
        assert_eq!(q.pop_due(100).map(|t| t.key), Some(1));
        assert_eq!(q.pop_due(100).map(|t| t.key), Some(2));
        assert_eq!(q.pop_due(100), None);
    }
}
