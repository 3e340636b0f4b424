//! An ordered, de-duplicated queue of timers (Flink's internal timer service).
//!
//! Timers are `(timestamp, key, namespace)`; registering one twice keeps
//! one. They fire in timestamp order; among equal timestamps, in
//! registration order. Deleting is lazy: a deleted timer stays in the heap
//! and is skipped when it comes up. The set of live timers is what a
//! checkpoint snapshots.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet};
use std::hash::Hash;

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
    /// Timers by time (and registration order), deleted ones included
    /// until they come up.
    heap: BinaryHeap<Reverse<Queued<K, N>>>,
    /// The timers that will fire.
    live: HashSet<Timer<K, N>, foldhash::fast::RandomState>,
    next_seq: u64,
}

/// A timer in the heap, ordered by time and then registration.
#[derive(Debug, Clone)]
struct Queued<K, N> {
    seq: u64,
    timer: Timer<K, N>,
}

impl<K, N> Queued<K, N> {
    fn order(&self) -> (i64, u64) {
        (self.timer.timestamp, self.seq)
    }
}

impl<K, N> PartialEq for Queued<K, N> {
    fn eq(&self, other: &Self) -> bool {
        self.order() == other.order()
    }
}

impl<K, N> Eq for Queued<K, N> {}

impl<K, N> PartialOrd for Queued<K, N> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl<K, N> Ord for Queued<K, N> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.order().cmp(&other.order())
    }
}

impl<K: Clone + Eq + Hash, N: Clone + Eq + Hash> Default for TimerQueue<K, N> {
    fn default() -> Self {
        TimerQueue {
            heap: BinaryHeap::new(),
            live: Default::default(),
            next_seq: 0,
        }
    }
}

impl<K: Clone + Eq + Hash, N: Clone + Eq + Hash> TimerQueue<K, N> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a timer; `false` if it was already registered.
    pub fn register(&mut self, timestamp: i64, key: K, namespace: N) -> bool {
        let timer = Timer {
            timestamp,
            key,
            namespace,
        };
        if self.live.contains(&timer) {
            return false;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Reverse(Queued {
            seq,
            timer: timer.clone(),
        }));
        self.live.insert(timer);
        true
    }

    /// Deletes a timer (it stays in the heap until it comes up, then is
    /// skipped).
    pub fn delete(&mut self, timestamp: i64, key: &K, namespace: &N) {
        let timer = Timer {
            timestamp,
            key: key.clone(),
            namespace: namespace.clone(),
        };
        self.live.remove(&timer);
    }

    /// Whether the timer is registered.
    pub fn contains(&self, timestamp: i64, key: &K, namespace: &N) -> bool {
        self.live.contains(&Timer {
            timestamp,
            key: key.clone(),
            namespace: namespace.clone(),
        })
    }

    /// The earliest live timer's timestamp.
    pub fn peek_timestamp(&mut self) -> Option<i64> {
        self.skip_deleted();
        self.earliest_hint()
    }

    /// The earliest timestamp in the queue, possibly of a deleted timer: a
    /// lower bound of the next firing, readable without `&mut`.
    pub fn earliest_hint(&self) -> Option<i64> {
        self.heap.peek().map(|Reverse(q)| q.timer.timestamp)
    }

    /// How many timers will fire, and a lower bound of the earliest (see
    /// [`earliest_hint`](Self::earliest_hint)).
    pub fn pending(&self) -> (u64, Option<i64>) {
        let count = self.live.len() as u64;
        (count, (count > 0).then(|| self.earliest_hint()).flatten())
    }

    /// Removes and returns the earliest timer with `timestamp <= time`.
    pub fn pop_due(&mut self, time: i64) -> Option<Timer<K, N>> {
        self.skip_deleted();
        if self.earliest_hint()? > time {
            return None;
        }
        let Reverse(q) = self.heap.pop()?;
        self.live.remove(&q.timer);
        Some(q.timer)
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
        self.live.iter()
    }

    /// Drops deleted timers from the top of the heap. A timer deleted and
    /// registered again is in the heap twice: the first to come up fires
    /// and leaves the set, so the second is skipped.
    fn skip_deleted(&mut self) {
        while let Some(Reverse(q)) = self.heap.peek() {
            if self.live.contains(&q.timer) {
                return;
            }
            self.heap.pop();
        }
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
