//! Processing time: the clock that TTL, timers and processing-time windows
//! read. It lives here, in the lowest crate that needs it (state TTL), and
//! the runtime re-exports it.

use std::fmt;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// A source of processing time, in ms since the epoch.
///
/// By implementing this trait, you promise that `now_ms` never goes
/// backwards.
pub trait Clock: Send + Sync + fmt::Debug {
    /// The current processing time in ms.
    fn now_ms(&self) -> i64;
}

/// The clock shared by the tasks of a job.
pub type SharedClock = Arc<dyn Clock>;

/// The machine's wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0)
    }
}

/// A clock that moves only when told to: for tests.
#[derive(Debug, Clone, Default)]
pub struct ManualClock {
    now: Arc<AtomicI64>,
}

impl ManualClock {
    /// A clock showing `now_ms`.
    pub fn new(now_ms: i64) -> Self {
        ManualClock {
            now: Arc::new(AtomicI64::new(now_ms)),
        }
    }

    /// Moves the clock to `now_ms` (never backwards).
    pub fn set(&self, now_ms: i64) {
        self.now.fetch_max(now_ms, Ordering::SeqCst);
    }

    /// Moves the clock forward by `delta_ms`.
    pub fn advance(&self, delta_ms: i64) {
        self.now.fetch_add(delta_ms.max(0), Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.now.load(Ordering::SeqCst)
    }
}

/// The system clock as a [`SharedClock`].
pub fn system_clock() -> SharedClock {
    Arc::new(SystemClock)
}
