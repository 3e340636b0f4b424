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

use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};

/// A mutual-exclusion lock for data used from one thread at a time.
pub(crate) struct TaskLock<T> {
    locked: AtomicBool,
    value: UnsafeCell<T>,
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
            value: UnsafeCell::new(value),
        }
    }

    /// Waits until the lock is free, then holds it until the guard drops.
    #[inline]
    pub fn lock(&self) -> TaskLockGuard<'_, T> {
        if self
            .locked
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            self.lock_contended();
        }
        TaskLockGuard { lock: self }
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
        self.lock.locked.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn excludes_other_threads() {
        // Increments that are not atomic (read, then write) lose updates
        // unless the lock really excludes the other threads.
        let counter = Arc::new(TaskLock::new(0u64));
        let start = Arc::new(std::sync::Barrier::new(4));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let (counter, start) = (Arc::clone(&counter), Arc::clone(&start));
                std::thread::spawn(move || {
                    start.wait();
                    for _ in 0..200_000 {
                        let mut c = counter.lock();
                        let read = *c;
                        // Widen the window between the read and the write.
                        for _ in 0..10 {
                            std::hint::spin_loop();
                        }
                        *c = std::hint::black_box(read) + 1;
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("thread");
        }
        assert_eq!(*counter.lock(), 800_000);
    }

    #[test]
    fn a_panic_while_locked_unlocks() {
        let lock = Arc::new(TaskLock::new(1));
        let held = Arc::clone(&lock);
        let result = std::thread::spawn(move || {
            let _guard = held.lock();
            panic!("while locked");
        })
        .join();
        assert!(result.is_err());
        assert_eq!(*lock.lock(), 1);
    }
}
