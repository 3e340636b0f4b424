//! Waking a producer when its consumer has drained half their channel.
//!
//! A producer that finds its channel full would block on it, and its
//! consumer would wake it as soon as one batch is taken: once per batch,
//! each time a futex wake and two context switches, a tenth of a
//! two-thread pipeline's time when the producer is the faster. Instead
//! the producer waits ([`DrainWake::wait`]) until the consumer, having
//! taken a batch, sees the channel at most half full
//! ([`DrainWake::taken`]): one wake per half a channel, and the consumer
//! still has half a channel of batches to work on meanwhile.
//!
//! The producer hands its wake to the consumer as the first message of
//! the channel ([`Message::Wake`](crate::element::Message::Wake)).

use std::sync::atomic::{fence, AtomicBool, Ordering};
use std::sync::OnceLock;
use std::thread::Thread;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};

/// How long a producer waits for half a channel before it blocks on the
/// channel as before (a consumer aligning a barrier, or one slower than a
/// batch per this long).
const WAIT_AT_MOST: Duration = Duration::from_millis(if cfg!(test) { 200 } else { 10 });

/// How long a producer parks before it looks at the channel again: a
/// missed wake costs at most this (in tests, all the wait: a missed wake
/// shows).
const PARK: Duration = if cfg!(test) {
    WAIT_AT_MOST
} else {
    Duration::from_millis(1)
};

/// One channel's wake: set by its producer while it waits, read by its
/// consumer after each batch.
#[derive(Debug, Default)]
pub struct DrainWake {
    waiting: AtomicBool,
    producer: OnceLock<Thread>,
    /// How often the producer was woken.
    #[cfg(test)]
    pub(crate) woken: std::sync::atomic::AtomicU32,
}

impl DrainWake {
    /// Called by the producer (on its own thread) with `sender`'s channel
    /// full: returns once the consumer has drained it to half (or it has
    /// waited 10 ms, or `cancelled` says so).
    pub fn wait<T>(&self, sender: &Sender<T>, cancelled: impl Fn() -> bool) {
        let half = sender.capacity().unwrap_or(1) / 2;
        let producer = self.producer.get_or_init(std::thread::current);
        debug_assert_eq!(producer.id(), std::thread::current().id());
        let deadline = Instant::now() + WAIT_AT_MOST;
        loop {
            self.waiting.store(true, Ordering::SeqCst);
            // Pairs with the consumer's fence: either it sees `waiting`,
            // or this sees the batch it took.
            fence(Ordering::SeqCst);
            if sender.len() <= half || cancelled() || Instant::now() >= deadline {
                self.waiting.store(false, Ordering::SeqCst);
                return;
            }
            std::thread::park_timeout(PARK);
        }
    }

    /// Whether the producer is waiting.
    #[cfg(test)]
    pub(crate) fn is_waiting(&self) -> bool {
        self.waiting.load(Ordering::SeqCst)
    }

    /// Called by the consumer after taking a batch from `receiver`: wakes
    /// a waiting producer once the channel is at most half full.
    #[inline]
    pub fn taken<T>(&self, receiver: &Receiver<T>) {
        fence(Ordering::SeqCst);
        if self.waiting.load(Ordering::Relaxed)
            && receiver.len() <= receiver.capacity().unwrap_or(1) / 2
            && self.waiting.swap(false, Ordering::SeqCst)
        {
            #[cfg(test)]
            self.woken.fetch_add(1, Ordering::SeqCst);
            if let Some(producer) = self.producer.get() {
                producer.unpark();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A producer waiting on a full channel is woken once, when the
    /// consumer has taken half of it, not for every batch.
    #[test]
    fn a_producer_waits_for_half_a_channel() {
        let (tx, rx) = crossbeam_channel::bounded::<u32>(8);
        for i in 0..8 {
            tx.try_send(i).expect("room");
        }
        let wake = Arc::new(DrainWake::default());
        let waiter = {
            let wake = Arc::clone(&wake);
            std::thread::spawn(move || {
                let started = Instant::now();
                wake.wait(&tx, || false);
                (tx.len(), started.elapsed())
            })
        };
        // Taken one at a time, each after a pause long enough for a
        // producer woken early to be seen going on.
        while !wake.waiting.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
        for _ in 0..4 {
            std::thread::sleep(Duration::from_millis(2));
            rx.try_recv().expect("a batch");
            wake.taken(&rx);
        }
        let (left, waited) = waiter.join().expect("the producer");
        assert_eq!(left, 4, "went on at {left} batches queued");
        assert_eq!(wake.woken.load(Ordering::SeqCst), 1);
        assert!(waited < WAIT_AT_MOST, "woken, not timed out: {waited:?}");
    }

    /// A consumer that takes nothing leaves the producer to block on the
    /// channel after at most `WAIT_AT_MOST`; a cancelled one at once.
    #[test]
    fn a_producer_gives_up_waiting() {
        let (tx, _rx) = crossbeam_channel::bounded::<u32>(2);
        tx.try_send(0).expect("room");
        tx.try_send(1).expect("room");
        let wake = DrainWake::default();
        let started = Instant::now();
        wake.wait(&tx, || false);
        assert!(started.elapsed() >= WAIT_AT_MOST);
        let started = Instant::now();
        wake.wait(&tx, || true);
        assert!(started.elapsed() < WAIT_AT_MOST);
        assert!(!wake.waiting.load(Ordering::SeqCst));
    }
}
