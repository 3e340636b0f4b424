//! Exchange between tasks: bounded channels, partitioners and the writer that
//! batches records per target channel.
//!
//! Each upstream subtask has one channel to each downstream subtask it is
//! connected to; channels are bounded (in batches), so a slow consumer
//! blocks its producers — back-pressure — instead of letting memory grow.

mod partitioner;
mod wake;
mod writer;

pub use partitioner::{
    BroadcastPartitioner, CustomPartitioner, ForwardPartitioner, KeyGroupPartitioner, Partitioner,
    RebalancePartitioner, ShufflePartitioner,
};
pub use wake::DrainWake;
pub use writer::ChannelWriter;

pub use crossbeam_channel::{Receiver, Sender};

use crate::element::Message;

/// A bounded channel between two subtasks, holding at most `capacity` batches.
pub fn channel<T>(capacity: usize) -> (Sender<Message<T>>, Receiver<Message<T>>) {
    crossbeam_channel::bounded(capacity.max(1))
}

/// Which downstream subtasks an upstream subtask sends to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectionPattern {
    /// Every upstream subtask to every downstream subtask.
    AllToAll,
    /// Upstream subtask `i` to a contiguous group of downstream subtasks
    /// (Flink's `POINTWISE`): forward and rescale.
    Pointwise,
}

impl ConnectionPattern {
    /// The downstream subtasks that upstream subtask `up` sends to, in order.
    pub fn targets(self, up: u32, up_parallelism: u32, down_parallelism: u32) -> Vec<u32> {
        match self {
            ConnectionPattern::AllToAll => (0..down_parallelism).collect(),
            ConnectionPattern::Pointwise => {
                let (up, n_up, n_down) = (
                    u64::from(up),
                    u64::from(up_parallelism),
                    u64::from(down_parallelism),
                );
                if n_up <= n_down {
                    let start = up * n_down / n_up;
                    let end = (up + 1) * n_down / n_up;
                    (start as u32..end as u32).collect()
                } else {
                    vec![(up * n_down / n_up) as u32]
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointwise_spreads_and_gathers_like_flink() {
        let p = ConnectionPattern::Pointwise;
        assert_eq!(p.targets(0, 2, 4), vec![0, 1]);
        assert_eq!(p.targets(1, 2, 4), vec![2, 3]);
        assert_eq!(p.targets(0, 4, 2), vec![0]);
        assert_eq!(p.targets(1, 4, 2), vec![0]);
        assert_eq!(p.targets(3, 4, 2), vec![1]);
        assert_eq!(p.targets(2, 3, 3), vec![2]);
        // Every downstream subtask is reached by some upstream subtask.
        for (n_up, n_down) in [(2, 5), (5, 2), (3, 7), (7, 3)] {
            let mut seen: Vec<u32> = (0..n_up).flat_map(|u| p.targets(u, n_up, n_down)).collect();
            seen.sort_unstable();
            seen.dedup();
            assert_eq!(seen, (0..n_down).collect::<Vec<_>>(), "{n_up}->{n_down}");
        }
    }
}
