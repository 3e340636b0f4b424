//! The lock around a subtask's keyed state backend.
//!
//! The backend is shared between the operator (which sets the current key)
//! and the handles of the user's functions, and every one of them runs on
//! the subtask's own thread: the lock is taken several times per record and
//! is never contended. A `std::sync::Mutex` pays an atomic read-modify-write
//! to lock *and* another to unlock; this lock pays one to lock and a plain
//! release store to unlock, which is measurable at millions of records per
//! second. Should another thread ever hold it (nothing does today), a waiter
//! spins briefly, then yields.
//!
//! Even that one atomic instruction waits for every store before it to
//! reach the cache, so a lookup taken right after a record's writes to
//! state waits for their cache misses. An operator that accesses state
//! for a whole batch of records holds the lock for the batch
//! ([`TaskLock::hold`]); while its thread holds it, each access only marks
//! the value lent, with plain loads and stores.

use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// A mutual-exclusion lock for data used from one thread at a time.
pub(crate) struct TaskLock<T> {
    locked: AtomicBool,
    /// The thread holding the lock through a [`TaskLockHold`] (its
    /// [`thread_token`]), 0 when none does. Only that thread ever finds
    /// its own token here.
    holder: AtomicU64,
    /// Whether a guard is out while a hold holds the lock; read and
    /// written by the holding thread only.
    lent: AtomicBool,
    value: UnsafeCell<T>,
}

/// A number of the calling thread's own, never 0: the address of a
/// thread-local of its own (no initialisation to check on each read, as a
/// counted id would need). A thread that ends leaves no hold behind (holds
/// live on its stack), so a later thread given the same address finds no
/// lock held in its name.
#[inline]
fn thread_token() -> u64 {
    thread_local! {
        static TOKEN: u8 = const { 0 };
    }
    TOKEN.with(|t| t as *const u8 as u64)
}

// SAFETY: the value is only reached through a guard, and at most one guard
// exists at a time (the `locked` flag, taken with acquire ordering and
// released with release ordering, as a mutex does), so sharing the lock
// between threads shares `T` only as a `Mutex<T>` would.
unsafe impl<T: Send> Sync for TaskLock<T> {}
// SAFETY: as for `Mutex<T>`: moving the lock moves the `T`.
unsafe impl<T: Send> Send for TaskLock<T> {}

impl<T> TaskLock<T> {
    pub fn new(value: T) -> Self {
        TaskLock {
            locked: AtomicBool::new(false),
            holder: AtomicU64::new(0),
            lent: AtomicBool::new(false),
            value: UnsafeCell::new(value),
        }
    }

    /// Waits until the lock is free, then holds it until the guard drops.
    /// Within a hold of this thread, lends the value instead.
    ///
    /// # Panics
    ///
    /// Within a hold, if a guard is already out (without a hold, taking a
    /// second guard on one thread would wait for ever).
    #[inline]
    pub fn lock(&self) -> TaskLockGuard<'_, T> {
        if self.holder.load(Ordering::Relaxed) == thread_token() {
            assert!(
                !self.lent.load(Ordering::Relaxed),
                "state reached again while in use"
            );
            self.lent.store(true, Ordering::Relaxed);
            return TaskLockGuard {
                lock: self,
                lent: true,
            };
        }
        self.acquire();
        TaskLockGuard {
            lock: self,
            lent: false,
        }
    }

    /// Holds the lock until the hold drops: the guards this thread takes
    /// meanwhile cost no atomic instruction. Within a hold, a no-op.
    #[inline]
    pub fn hold(&self) -> TaskLockHold<'_, T> {
        let me = thread_token();
        if self.holder.load(Ordering::Relaxed) == me {
            return TaskLockHold {
                lock: self,
                outer: false,
            };
        }
        self.acquire();
        self.holder.store(me, Ordering::Relaxed);
        TaskLockHold {
            lock: self,
            outer: true,
        }
    }

    #[inline]
    fn acquire(&self) {
        if self
            .locked
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            self.lock_contended();
        }
    }

    #[cold]
    fn lock_contended(&self) {
        let mut spins = 0u32;
        loop {
            if !self.locked.load(Ordering::Relaxed)
                && self
                    .locked
                    .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                return;
            }
            if spins < 100 {
                spins += 1;
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }
}

/// Access to the locked value; unlocks when dropped (also while unwinding
/// from a panic: the state a failed task leaves behind is discarded with
/// its attempt, so there is nothing to poison).
pub(crate) struct TaskLockGuard<'a, T> {
    lock: &'a TaskLock<T>,
    /// Lent within a hold (dropping it ends the loan, not the hold).
    lent: bool,
}

/// The lock held by one thread for a run of accesses; released when
/// dropped (by the outermost hold).
pub struct TaskLockHold<'a, T> {
    lock: &'a TaskLock<T>,
    outer: bool,
}

impl<T> Drop for TaskLockHold<'_, T> {
    #[inline]
    fn drop(&mut self) {
        if self.outer {
            // Guards never outlive the accesses that take them, which all
            // end before their hold can drop.
            debug_assert!(!self.lock.lent.load(Ordering::Relaxed));
            self.lock.holder.store(0, Ordering::Relaxed);
            self.lock.locked.store(false, Ordering::Release);
        }
    }
}

impl<T> Deref for TaskLockGuard<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: this guard holds the lock: no other reference exists.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> DerefMut for TaskLockGuard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: this guard holds the lock: no other reference exists.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for TaskLockGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        if self.lent {
            self.lock.lent.store(false, Ordering::Relaxed);
        } else {
            self.lock.locked.store(false, Ordering::Release);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// Runs `work` on `counter` on four threads at once, then returns
    /// what the counter holds.
    fn on_four_threads(work: fn(&TaskLock<u64>)) -> u64 {
        let counter = Arc::new(TaskLock::new(0u64));
        let start = Arc::new(std::sync::Barrier::new(4));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let (counter, start) = (Arc::clone(&counter), Arc::clone(&start));
                std::thread::spawn(move || {
                    start.wait();
                    work(&counter);
                })
            })
            .collect();
        for t in threads {
            t.join().expect("thread");
        }
        // Released: no holder is left, and the lock is free.
        assert_eq!(counter.holder.load(Ordering::Relaxed), 0);
        assert!(!counter.locked.load(Ordering::Relaxed));
        let total = *counter.lock();
        total
    }

    #[test]
    fn excludes_other_threads() {
        // Increments that are not atomic (read, then write) lose updates
        // unless the lock really excludes the other threads.
        let total = on_four_threads(|counter| {
            for _ in 0..200_000 {
                let mut c = counter.lock();
                let read = *c;
                // Widen the window between the read and the write.
                for _ in 0..10 {
                    std::hint::spin_loop();
                }
                *c = std::hint::black_box(read) + 1;
            }
        });
        assert_eq!(total, 800_000);
    }

    /// Within a hold, guards are lent without the atomic instruction,
    /// and another thread waits for the hold to end: increments made
    /// under holds on four threads are all kept.
    #[test]
    fn a_hold_excludes_other_threads_and_lends_guards() {
        let total = on_four_threads(|counter| {
            for _ in 0..2_000 {
                let _hold = counter.hold();
                let _inner = counter.hold();
                for _ in 0..20 {
                    let read = *counter.lock();
                    std::hint::spin_loop();
                    *counter.lock() = std::hint::black_box(read) + 1;
                }
            }
        });
        assert_eq!(total, 160_000);
    }

    /// A second guard on the holding thread would alias the first: it
    /// panics (without a hold it would wait for ever).
    #[test]
    fn a_second_guard_within_a_hold_panics() {
        // Unwinding ends the loan and the hold.
        let lock = after_a_panic(|held| {
            let _hold = held.hold();
            let _first = held.lock();
            let _second = held.lock();
        });
        assert_eq!(*lock.lock(), 1);
    }

    #[test]
    fn a_panic_while_locked_unlocks() {
        let lock = after_a_panic(|held| {
            let _guard = held.lock();
            panic!("while locked");
        });
        assert_eq!(*lock.lock(), 1);
    }

    /// A lock of 1 after `work` on it panicked on a thread of its own.
    fn after_a_panic(work: fn(&TaskLock<i32>)) -> Arc<TaskLock<i32>> {
        let lock = Arc::new(TaskLock::new(1));
        let held = Arc::clone(&lock);
        let result = std::thread::spawn(move || work(&held)).join();
        assert!(result.is_err());
        lock
    }
}
