//! Cancellation of a running job, seen by every blocking point of every task.
//!
//! A [`CancelSource`] owns the only sender of a channel that never carries a
//! message; cancelling drops it, which disconnects every [`CancelToken`]'s
//! receiver at once. A task blocked in a `select` on its inputs or on a full
//! output channel therefore wakes immediately, without polling.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crossbeam_channel::{Receiver, Sender};

/// Cancels a job: held by the job client.
#[derive(Debug, Clone)]
pub struct CancelSource {
    flag: Arc<AtomicBool>,
    sender: Arc<Mutex<Option<Sender<()>>>>,
    receiver: Receiver<()>,
}

/// Observes cancellation: held by every task.
#[derive(Debug, Clone)]
pub struct CancelToken {
    flag: Arc<AtomicBool>,
    receiver: Receiver<()>,
}

impl CancelSource {
    /// A source that has not been cancelled.
    pub fn new() -> Self {
        let (sender, receiver) = crossbeam_channel::bounded(0);
        CancelSource {
            flag: Arc::new(AtomicBool::new(false)),
            sender: Arc::new(Mutex::new(Some(sender))),
            receiver,
        }
    }

    /// A token observing this source.
    pub fn token(&self) -> CancelToken {
        CancelToken {
            flag: Arc::clone(&self.flag),
            receiver: self.receiver.clone(),
        }
    }

    /// Cancels; idempotent.
    pub fn cancel(&self) {
        self.flag.store(true, Ordering::Release);
        // A poisoned lock only means another thread panicked while cancelling;
        // the sender is still there to drop.
        let mut guard = self
            .sender
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        guard.take();
    }

    /// Whether [`cancel`](Self::cancel) was called.
    pub fn is_cancelled(&self) -> bool {
        self.flag.load(Ordering::Acquire)
    }
}

impl Default for CancelSource {
    fn default() -> Self {
        Self::new()
    }
}

impl CancelToken {
    /// Whether the job was cancelled.
    #[inline]
    pub fn is_cancelled(&self) -> bool {
        self.flag.load(Ordering::Acquire)
    }

    /// A receiver that becomes ready (disconnected) on cancellation, for use
    /// in `select`.
    pub fn receiver(&self) -> &Receiver<()> {
        &self.receiver
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn cancel_wakes_a_blocked_receiver() {
        let source = CancelSource::new();
        let token = source.token();
        let t = std::thread::spawn(move || token.receiver().recv().is_err());
        std::thread::sleep(Duration::from_millis(20));
        source.cancel();
        assert!(t.join().unwrap_or(false));
        assert!(source.is_cancelled());
    }
}
