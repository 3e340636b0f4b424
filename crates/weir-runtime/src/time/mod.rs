//! Processing time: the clock every task reads, and the ordered timer queue
//! that keyed operators fire their timers from.
//!
//! Event time needs no clock: it advances with watermarks. Processing time
//! comes from a [`Clock`], which tests replace with a [`ManualClock`] so that
//! processing-time windows, timers, periodic watermarks and idleness are
//! deterministic.

mod queue;
mod timers;

pub use queue::TimeQueue;
pub use timers::{Timer, TimerQueue};

pub use weir_state::{system_clock, Clock, ManualClock, SharedClock, SystemClock};
