//! Items queued by time: taken in time order, and among equal times in
//! the order they were queued.
//!
//! Most items are queued in time order (a window's end, then the next
//! window's; a session's end, a gap after its last record): those join a
//! first-in-first-out run, costing no reordering to queue or to take;
//! only an item earlier than the run's last goes to a heap.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// A queue of items, each at a time.
#[derive(Debug, Clone)]
pub struct TimeQueue<T> {
    /// Items each no earlier than the one before, in the order queued.
    run: VecDeque<Entry<T>>,
    /// The items queued earlier than the run's last, by time and order.
    heap: BinaryHeap<Reverse<Entry<T>>>,
    next_seq: u64,
}

/// An item at `time`, ordered by time and then by when it was queued.
#[derive(Debug, Clone)]
struct Entry<T> {
    time: i64,
    seq: u64,
    item: T,
}

impl<T> Entry<T> {
    fn order(&self) -> (i64, u64) {
        (self.time, self.seq)
    }
}

impl<T> PartialEq for Entry<T> {
    fn eq(&self, other: &Self) -> bool {
        self.order() == other.order()
    }
}

impl<T> Eq for Entry<T> {}

impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl<T> Ord for Entry<T> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.order().cmp(&other.order())
    }
}

impl<T> Default for TimeQueue<T> {
    fn default() -> Self {
        TimeQueue {
            run: VecDeque::new(),
            heap: BinaryHeap::new(),
            next_seq: 0,
        }
    }
}

impl<T> TimeQueue<T> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Queues `item` at `time`.
    pub fn push(&mut self, time: i64, item: T) {
        let entry = Entry {
            time,
            seq: self.next_seq,
            item,
        };
        self.next_seq += 1;
        match self.run.back() {
            Some(last) if last.time > time => self.heap.push(Reverse(entry)),
            _ => self.run.push_back(entry),
        }
    }

    /// The earliest item and its time.
    pub fn peek(&self) -> Option<(i64, &T)> {
        let first = if self.first_in_heap() {
            self.heap.peek().map(|Reverse(e)| e)
        } else {
            self.run.front()
        };
        first.map(|e| (e.time, &e.item))
    }

    /// Takes the earliest item and its time.
    pub fn pop(&mut self) -> Option<(i64, T)> {
        let first = if self.first_in_heap() {
            self.heap.pop().map(|Reverse(e)| e)
        } else {
            self.run.pop_front()
        };
        first.map(|e| (e.time, e.item))
    }

    /// Takes the earliest item if its time is at most `time`.
    pub fn pop_due(&mut self, time: i64) -> Option<(i64, T)> {
        if self.peek()?.0 > time {
            return None;
        }
        self.pop()
    }

    /// How many items are queued.
    pub fn len(&self) -> usize {
        self.run.len() + self.heap.len()
    }

    /// Whether no item is queued.
    pub fn is_empty(&self) -> bool {
        self.run.is_empty() && self.heap.is_empty()
    }

    /// Whether the earliest item is the heap's top (else the run's first,
    /// if any).
    fn first_in_heap(&self) -> bool {
        match (self.run.front(), self.heap.peek()) {
            (Some(r), Some(Reverse(h))) => h < r,
            (r, _) => r.is_none(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Items queued in time order and out of it (the run and the heap)
    /// come out as one queue: by time, then the order queued.
    #[test]
    fn items_in_and_out_of_order_come_by_time_then_order_queued() {
        let mut q = TimeQueue::new();
        for (t, item) in [
            (10, 'a'),
            (20, 'b'),
            (5, 'c'),
            (20, 'd'),
            (10, 'e'),
            (30, 'f'),
        ] {
            q.push(t, item);
        }
        assert_eq!(q.len(), 6);
        assert_eq!(q.pop_due(4), None);
        assert_eq!(q.peek(), Some((5, &'c')));
        let due: Vec<_> = std::iter::from_fn(|| q.pop_due(20)).collect();
        assert_eq!(due, [(5, 'c'), (10, 'a'), (10, 'e'), (20, 'b'), (20, 'd')]);
        assert_eq!(q.pop(), Some((30, 'f')));
        assert!(q.is_empty());
    }
}
