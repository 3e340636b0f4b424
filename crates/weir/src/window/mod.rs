//! Windows: splitting a stream into finite buckets (Flink's windowing).
//!
//! A [`WindowAssigner`] puts each record into windows, a [`Trigger`] decides
//! when a window's contents are emitted (and purged), an optional
//! [`Evictor`] drops elements before or after the window function runs, and
//! the window function turns the contents into results: incrementally
//! (`reduce`, `aggregate`: one accumulator per key and window) or over all
//! elements (`process`, `apply`).
//!
//! Semantics follow Flink's `WindowOperator`: windows are `[start, end)` and
//! results carry the timestamp `end - 1`; an event-time window fires when
//! the watermark reaches `end - 1`; with allowed lateness a late record
//! re-fires its window at once, and state is dropped at
//! `end - 1 + allowed_lateness`; records whose windows are all past that are
//! late (side output or dropped and counted). Session windows merge when
//! they touch. See `docs/design/windows.md`.

mod aligned;
mod assigner;
mod by_backend;
mod evictor;
mod function;
mod logic;
mod merging;
mod operator;
mod session;
mod stream;
mod trigger;
mod window_map;

pub use crate::state_slot::StateSlot;
pub use assigner::{
    AssignerContext, CumulativeEventTimeWindows, CumulativeProcessingTimeWindows,
    DynamicEventTimeSessionWindows, DynamicProcessingTimeSessionWindows, EventTimeSessionWindows,
    GlobalWindows, ProcessingTimeSessionWindows, SlidingEventTimeWindows,
    SlidingProcessingTimeWindows, TumblingEventTimeWindows, TumblingProcessingTimeWindows,
    WindowAssigner,
};
pub use evictor::{CountEvictor, DeltaEvictor, Evictor, EvictorContext, TimeEvictor};
pub use function::{
    AggregateFunction, Elements, ProcessWindowContext, ProcessWindowFunction, WindowFunction,
};
pub use stream::{AllWindowedStream, WindowedStream};
pub use trigger::{
    ContinuousEventTimeTrigger, ContinuousProcessingTimeTrigger, CountTrigger, EventTimeTrigger,
    NeverTrigger, ProcessingTimeTrigger, PurgingTrigger, Trigger, TriggerContext, TriggerResult,
    TriggerState,
};

use std::fmt::Debug;
use std::hash::Hash;

use serde::de::DeserializeOwned;
use serde::Serialize;

/// A window: a bucket of records with a last timestamp. Windows are
/// serializable because open windows go into checkpoints.
///
/// By implementing this trait, you promise that `max_timestamp` is the
/// largest timestamp of a record that belongs to the window.
pub trait Window:
    Clone + Eq + Hash + Debug + Send + Sync + Serialize + DeserializeOwned + 'static
{
    /// The largest timestamp in the window; results carry it.
    fn max_timestamp(&self) -> i64;

    /// The time window `[start, end)` as this type, if it is a time window
    /// (lets operators for aligned time windows stay generic).
    #[doc(hidden)]
    fn from_time_window(_start: i64, _end: i64) -> Option<Self> {
        None
    }

    /// `(start, end)` if this is a time window.
    #[doc(hidden)]
    fn time_bounds(&self) -> Option<(i64, i64)> {
        None
    }
}

/// A time window `[start, end)` in ms (Flink's `TimeWindow`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct TimeWindow {
    /// First ms in the window.
    pub start: i64,
    /// First ms after the window.
    pub end: i64,
}

impl TimeWindow {
    /// The window `[start, end)`.
    pub fn new(start: i64, end: i64) -> Self {
        TimeWindow { start, end }
    }

    /// Whether the windows overlap or touch (Flink's `intersects`:
    /// inclusive at both ends, so sessions exactly a gap apart merge).
    pub fn intersects(&self, other: &TimeWindow) -> bool {
        self.start <= other.end && self.end >= other.start
    }

    /// The smallest window covering both.
    pub fn cover(&self, other: &TimeWindow) -> TimeWindow {
        TimeWindow::new(self.start.min(other.start), self.end.max(other.end))
    }

    /// The start of the window of `size` (shifted by `offset`) that holds
    /// `timestamp` (Flink's `getWindowStartWithOffset`).
    #[inline]
    pub fn window_start(timestamp: i64, offset: i64, size: i64) -> i64 {
        let remainder = (timestamp - offset).rem_euclid(size);
        timestamp - remainder
    }
}

impl Window for TimeWindow {
    #[inline]
    fn max_timestamp(&self) -> i64 {
        self.end - 1
    }

    fn from_time_window(start: i64, end: i64) -> Option<Self> {
        Some(TimeWindow::new(start, end))
    }

    fn time_bounds(&self) -> Option<(i64, i64)> {
        Some((self.start, self.end))
    }
}

impl std::fmt::Display for TimeWindow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TimeWindow{{start={}, end={}}}", self.start, self.end)
    }
}

crate::print_with_display!(TimeWindow);

/// The one window of [`GlobalWindows`]: everything, never ending.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Default,
    serde::Serialize,
    serde::Deserialize,
)]
pub struct GlobalWindow;

impl Window for GlobalWindow {
    fn max_timestamp(&self) -> i64 {
        i64::MAX
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn window_start_matches_flink_for_negatives_and_offsets() {
        assert_eq!(TimeWindow::window_start(0, 0, 10_000), 0);
        assert_eq!(TimeWindow::window_start(9_999, 0, 10_000), 0);
        assert_eq!(TimeWindow::window_start(-1, 0, 10_000), -10_000);
        assert_eq!(TimeWindow::window_start(-10_000, 0, 10_000), -10_000);
        assert_eq!(TimeWindow::window_start(7, 3, 5), 3);
        assert_eq!(TimeWindow::window_start(2, 3, 5), -2);
    }

    proptest! {
        #[test]
        fn window_start_contains_timestamp(ts in -1_000_000_000i64..1_000_000_000, size in 1i64..100_000, offset in -50_000i64..50_000) {
            let start = TimeWindow::window_start(ts, offset, size);
            prop_assert!(start <= ts && ts < start + size);
            prop_assert_eq!((start - offset).rem_euclid(size), 0);
        }
    }
}
