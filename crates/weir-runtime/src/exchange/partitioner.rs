//! Partitioners: which of a writer's target channels a record goes to.

use weir_state::{assign_to_key_group, operator_index_for_key_group, StableHash};

/// Chooses a target channel for each record.
///
/// By implementing this trait, you promise that `select` returns an index
/// below `n` (the writer's number of target channels).
pub trait Partitioner<T>: Send + 'static {
    /// Whether every record goes to every channel (then `select` is unused).
    const BROADCAST: bool = false;

    /// The target channel of `value`, in `0..n`.
    fn select(&mut self, value: &T, n: usize) -> usize;
}

/// One target: the same subtask index downstream.
#[derive(Debug, Default, Clone)]
pub struct ForwardPartitioner;

impl<T> Partitioner<T> for ForwardPartitioner {
    #[inline]
    fn select(&mut self, _value: &T, _n: usize) -> usize {
        0
    }
}

/// Round robin over the targets (rebalance and rescale).
#[derive(Debug, Clone)]
pub struct RebalancePartitioner {
    next: usize,
}

impl RebalancePartitioner {
    /// Starts at `start` (the subtask index, so that subtasks do not all
    /// begin with the same target; Flink starts at a random one).
    pub fn new(start: usize) -> Self {
        RebalancePartitioner { next: start }
    }
}

impl<T> Partitioner<T> for RebalancePartitioner {
    #[inline]
    fn select(&mut self, _value: &T, n: usize) -> usize {
        self.next = (self.next + 1) % n;
        self.next
    }
}

/// Uniformly random targets (xorshift; the sequence is seeded per subtask).
#[derive(Debug, Clone)]
pub struct ShufflePartitioner {
    state: u64,
}

impl ShufflePartitioner {
    /// A shuffle seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        ShufflePartitioner {
            state: seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1,
        }
    }
}

impl<T> Partitioner<T> for ShufflePartitioner {
    #[inline]
    fn select(&mut self, _value: &T, n: usize) -> usize {
        let mut x = self.state;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.state = x;
        (x % n as u64) as usize
    }
}

/// Every record to every target.
#[derive(Debug, Default, Clone)]
pub struct BroadcastPartitioner;

impl<T> Partitioner<T> for BroadcastPartitioner {
    const BROADCAST: bool = true;

    fn select(&mut self, _value: &T, _n: usize) -> usize {
        0
    }
}

/// Hash partitioning by key group (`key_by`): the record goes to the subtask
/// that owns its key's key group.
#[derive(Clone)]
pub struct KeyGroupPartitioner<F> {
    key_of: F,
    max_parallelism: u32,
}

impl<F> KeyGroupPartitioner<F> {
    /// Partitions by the key `key_of` extracts, over `max_parallelism` key groups.
    pub fn new(key_of: F, max_parallelism: u32) -> Self {
        KeyGroupPartitioner {
            key_of,
            max_parallelism,
        }
    }
}

impl<T, K, F> Partitioner<T> for KeyGroupPartitioner<F>
where
    F: Fn(&T) -> K + Send + 'static,
    K: StableHash,
{
    #[inline]
    fn select(&mut self, value: &T, n: usize) -> usize {
        let key_group = assign_to_key_group(&(self.key_of)(value), self.max_parallelism);
        operator_index_for_key_group(self.max_parallelism, n as u32, key_group) as usize
    }
}

/// A user's partitioner over a key (`partition_custom`).
#[derive(Clone)]
pub struct CustomPartitioner<F, P> {
    key_of: F,
    partition: P,
}

impl<F, P> CustomPartitioner<F, P> {
    /// Sends each record to `partition(key_of(record), n)`, modulo `n`.
    pub fn new(key_of: F, partition: P) -> Self {
        CustomPartitioner { key_of, partition }
    }
}

impl<T, K, F, P> Partitioner<T> for CustomPartitioner<F, P>
where
    F: Fn(&T) -> K + Send + 'static,
    P: Fn(&K, usize) -> usize + Send + 'static,
{
    #[inline]
    fn select(&mut self, value: &T, n: usize) -> usize {
        (self.partition)(&(self.key_of)(value), n) % n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rebalance_cycles_through_all_targets() {
        let mut p = RebalancePartitioner::new(1);
        let picks: Vec<usize> = (0..6)
            .map(|_| Partitioner::<u8>::select(&mut p, &0, 3))
            .collect();
        assert_eq!(picks, vec![2, 0, 1, 2, 0, 1]);
    }

    #[test]
    fn key_group_partitioner_agrees_with_the_formulas() {
        let mut p = KeyGroupPartitioner::new(|s: &&'static str| *s, 128);
        // "hello" is in key group 94, which subtask 2 of 4 owns.
        assert_eq!(p.select(&"hello", 4), 2);
        assert_eq!(p.select(&"hello", 1), 0);
    }

    #[test]
    fn shuffle_stays_in_range_and_reaches_every_target() {
        let mut p = ShufflePartitioner::new(7);
        let mut seen = [0usize; 5];
        for _ in 0..1000 {
            seen[Partitioner::<u8>::select(&mut p, &0, 5)] += 1;
        }
        assert!(seen.iter().all(|&c| c > 100), "{seen:?}");
    }
}
