//! Window assigners: which windows a record belongs to (Flink's
//! `WindowAssigner` and its implementations).

use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use super::trigger::{EventTimeTrigger, NeverTrigger, ProcessingTimeTrigger, Trigger};
use super::{GlobalWindow, TimeWindow, Window};

/// What an assigner may read besides the record.
#[derive(Debug, Clone, Copy)]
pub struct AssignerContext {
    /// The current processing time in ms.
    pub current_processing_time: i64,
}

/// Assigns records to windows.
pub trait WindowAssigner<T>: Send + Sync + 'static {
    /// The windows this assigner makes.
    type W: Window;

    /// Appends the windows of `element` (event timestamp `timestamp`) to `out`.
    fn assign_windows(
        &self,
        element: &T,
        timestamp: i64,
        ctx: &AssignerContext,
        out: &mut Vec<Self::W>,
    );

    /// The trigger used when the user sets none.
    fn default_trigger(&self) -> Box<dyn Trigger<T, Self::W>>;

    /// Whether windows end by event time (lateness and watermarks apply).
    fn is_event_time(&self) -> bool;

    /// Whether windows merge (sessions).
    fn is_merging(&self) -> bool {
        false
    }

    /// Merges overlapping windows: calls `merge(windows, result)` for each
    /// group of two or more windows that become one.
    fn merge_windows(&self, _windows: &[Self::W], _merge: &mut dyn FnMut(Vec<Self::W>, Self::W)) {}

    /// Whether `merge_windows` merges exactly the time windows that
    /// intersect (inclusively) into their cover, as session windows do.
    /// Lets the operator merge without listing every live window.
    fn merges_by_intersection(&self) -> bool {
        false
    }

    /// For tumbling windows and event-time sliding windows: `(size, slide,
    /// offset)` in ms, which lets the operator keep state by window end.
    fn aligned(&self) -> Option<(i64, i64, i64)> {
        None
    }
}

fn ms(d: Duration) -> i64 {
    d.as_millis() as i64
}

/// Merges session windows that intersect (Flink's `TimeWindow.mergeWindows`).
fn merge_time_windows(windows: &[TimeWindow], merge: &mut dyn FnMut(Vec<TimeWindow>, TimeWindow)) {
    let mut sorted = windows.to_vec();
    sorted.sort_by_key(|w| w.start);
    let mut current: Option<(TimeWindow, Vec<TimeWindow>)> = None;
    for w in sorted {
        match &mut current {
            Some((cover, members)) if cover.intersects(&w) => {
                *cover = cover.cover(&w);
                members.push(w);
            }
            _ => {
                if let Some((cover, members)) = current.take() {
                    if members.len() > 1 {
                        merge(members, cover);
                    }
                }
                current = Some((w, vec![w]));
            }
        }
    }
    if let Some((cover, members)) = current {
        if members.len() > 1 {
            merge(members, cover);
        }
    }
}

macro_rules! tumbling {
    ($name:ident, $event_time:expr, $trigger:ident, $doc:literal) => {
        #[doc = $doc]
        #[derive(Debug, Clone, Copy)]
        pub struct $name {
            size: i64,
            offset: i64,
        }

        impl $name {
            /// Windows of `size`, aligned to the epoch.
            pub fn of(size: Duration) -> Self {
                Self::of_with_offset(size, Duration::ZERO)
            }

            /// Windows of `size`, shifted by `offset` (e.g. for time zones).
            pub fn of_with_offset(size: Duration, offset: Duration) -> Self {
                let size = ms(size).max(1);
                $name {
                    size,
                    offset: ms(offset) % size,
                }
            }

            /// Windows of `size`, shifted by a possibly negative `offset_ms`.
            pub fn of_with_offset_ms(size: Duration, offset_ms: i64) -> Self {
                let size = ms(size).max(1);
                $name {
                    size,
                    offset: offset_ms % size,
                }
            }
        }

        impl<T: 'static> WindowAssigner<T> for $name {
            type W = TimeWindow;

            #[inline]
            fn assign_windows(
                &self,
                _e: &T,
                ts: i64,
                ctx: &AssignerContext,
                out: &mut Vec<TimeWindow>,
            ) {
                let time = if $event_time {
                    ts
                } else {
                    ctx.current_processing_time
                };
                let start = TimeWindow::window_start(time, self.offset, self.size);
                out.push(TimeWindow::new(start, start + self.size));
            }

            fn default_trigger(&self) -> Box<dyn Trigger<T, TimeWindow>> {
                Box::new($trigger)
            }

            fn is_event_time(&self) -> bool {
                $event_time
            }

            fn aligned(&self) -> Option<(i64, i64, i64)> {
                Some((self.size, self.size, self.offset))
            }
        }
    };
}

tumbling!(
    TumblingEventTimeWindows,
    true,
    EventTimeTrigger,
    "Fixed-size, non-overlapping event-time windows."
);
tumbling!(
    TumblingProcessingTimeWindows,
    false,
    ProcessingTimeTrigger,
    "Fixed-size, non-overlapping processing-time windows."
);

macro_rules! sliding {
    ($name:ident, $event_time:expr, $trigger:ident, $doc:literal) => {
        #[doc = $doc]
        #[derive(Debug, Clone, Copy)]
        pub struct $name {
            size: i64,
            slide: i64,
            offset: i64,
        }

        impl $name {
            /// Windows of `size` starting every `slide`.
            pub fn of(size: Duration, slide: Duration) -> Self {
                Self::of_with_offset(size, slide, Duration::ZERO)
            }

            /// Windows of `size` starting every `slide`, shifted by `offset`.
            pub fn of_with_offset(size: Duration, slide: Duration, offset: Duration) -> Self {
                let slide = ms(slide).max(1);
                $name {
                    size: ms(size).max(1),
                    slide,
                    offset: ms(offset) % slide,
                }
            }
        }

        impl<T: 'static> WindowAssigner<T> for $name {
            type W = TimeWindow;

            fn assign_windows(
                &self,
                _e: &T,
                ts: i64,
                ctx: &AssignerContext,
                out: &mut Vec<TimeWindow>,
            ) {
                let time = if $event_time {
                    ts
                } else {
                    ctx.current_processing_time
                };
                // Latest window first, as Flink lists them.
                let last_start = TimeWindow::window_start(time, self.offset, self.slide);
                let mut start = last_start;
                while start > time - self.size {
                    out.push(TimeWindow::new(start, start + self.size));
                    start -= self.slide;
                }
            }

            fn default_trigger(&self) -> Box<dyn Trigger<T, TimeWindow>> {
                Box::new($trigger)
            }

            fn is_event_time(&self) -> bool {
                $event_time
            }

            fn aligned(&self) -> Option<(i64, i64, i64)> {
                $event_time.then_some((self.size, self.slide, self.offset))
            }
        }
    };
}

sliding!(
    SlidingEventTimeWindows,
    true,
    EventTimeTrigger,
    "Fixed-size event-time windows that start every `slide` and may overlap."
);
sliding!(
    SlidingProcessingTimeWindows,
    false,
    ProcessingTimeTrigger,
    "Fixed-size processing-time windows that start every `slide`."
);

macro_rules! cumulative {
    ($name:ident, $event_time:expr, $trigger:ident, $doc:literal) => {
        #[doc = $doc]
        #[derive(Debug, Clone, Copy)]
        pub struct $name {
            max_size: i64,
            step: i64,
            offset: i64,
        }

        impl $name {
            /// Windows that all start where a window of `max_size` starts
            /// and end every `step` after it (`max_size` is rounded down to
            /// a multiple of `step`).
            pub fn of(max_size: Duration, step: Duration) -> Self {
                Self::of_with_offset(max_size, step, Duration::ZERO)
            }

            /// As [`of`](Self::of), the starts shifted by `offset`.
            pub fn of_with_offset(max_size: Duration, step: Duration, offset: Duration) -> Self {
                let step = ms(step).max(1);
                let max_size = (ms(max_size) / step).max(1) * step;
                $name {
                    max_size,
                    step,
                    offset: ms(offset) % max_size,
                }
            }
        }

        impl<T: 'static> WindowAssigner<T> for $name {
            type W = TimeWindow;

            fn assign_windows(
                &self,
                _e: &T,
                ts: i64,
                ctx: &AssignerContext,
                out: &mut Vec<TimeWindow>,
            ) {
                let time = if $event_time {
                    ts
                } else {
                    ctx.current_processing_time
                };
                // Every window of the element's cycle that ends after it,
                // the smallest first.
                let start = TimeWindow::window_start(time, self.offset, self.max_size);
                let first_end = start + ((time - start) / self.step + 1) * self.step;
                let mut end = first_end;
                while end <= start + self.max_size {
                    out.push(TimeWindow::new(start, end));
                    end += self.step;
                }
            }

            fn default_trigger(&self) -> Box<dyn Trigger<T, TimeWindow>> {
                Box::new($trigger)
            }

            fn is_event_time(&self) -> bool {
                $event_time
            }
        }
    };
}

cumulative!(
    CumulativeEventTimeWindows,
    true,
    EventTimeTrigger,
    "Event-time windows that grow by `step` from a common start up to \
     `max_size` (Flink SQL's `CUMULATE`): an element is in every window of \
     its cycle that ends after it."
);
cumulative!(
    CumulativeProcessingTimeWindows,
    false,
    ProcessingTimeTrigger,
    "Processing-time windows that grow by `step` from a common start up \
     to `max_size`."
);

macro_rules! session {
    ($name:ident, $dynamic:ident, $event_time:expr, $trigger:ident, $doc:literal) => {
        #[doc = $doc]
        #[derive(Debug, Clone, Copy)]
        pub struct $name {
            gap: i64,
        }

        impl $name {
            /// Sessions that close after `gap` without records.
            pub fn with_gap(gap: Duration) -> Self {
                $name {
                    gap: ms(gap).max(1),
                }
            }

            /// Sessions whose gap `f` computes from each record.
            pub fn with_dynamic_gap<T, F>(f: F) -> $dynamic<T>
            where
                F: Fn(&T) -> Duration + Send + Sync + 'static,
            {
                $dynamic {
                    gap: Arc::new(f),
                    _type: PhantomData,
                }
            }
        }

        impl<T: 'static> WindowAssigner<T> for $name {
            type W = TimeWindow;

            fn assign_windows(
                &self,
                _e: &T,
                ts: i64,
                ctx: &AssignerContext,
                out: &mut Vec<TimeWindow>,
            ) {
                let time = if $event_time {
                    ts
                } else {
                    ctx.current_processing_time
                };
                out.push(TimeWindow::new(time, time + self.gap));
            }

            fn default_trigger(&self) -> Box<dyn Trigger<T, TimeWindow>> {
                Box::new($trigger)
            }

            fn is_event_time(&self) -> bool {
                $event_time
            }

            fn is_merging(&self) -> bool {
                true
            }

            fn merge_windows(
                &self,
                windows: &[TimeWindow],
                merge: &mut dyn FnMut(Vec<TimeWindow>, TimeWindow),
            ) {
                merge_time_windows(windows, merge)
            }

            fn merges_by_intersection(&self) -> bool {
                true
            }
        }

        #[doc = concat!("[`", stringify!($name), "`] with a gap computed per record.")]
        pub struct $dynamic<T> {
            gap: Arc<dyn Fn(&T) -> Duration + Send + Sync>,
            _type: PhantomData<fn(&T)>,
        }

        impl<T> Clone for $dynamic<T> {
            fn clone(&self) -> Self {
                $dynamic {
                    gap: Arc::clone(&self.gap),
                    _type: PhantomData,
                }
            }
        }

        impl<T: 'static> WindowAssigner<T> for $dynamic<T> {
            type W = TimeWindow;

            fn assign_windows(
                &self,
                e: &T,
                ts: i64,
                ctx: &AssignerContext,
                out: &mut Vec<TimeWindow>,
            ) {
                let time = if $event_time {
                    ts
                } else {
                    ctx.current_processing_time
                };
                let gap = ms((self.gap)(e)).max(1);
                out.push(TimeWindow::new(time, time + gap));
            }

            fn default_trigger(&self) -> Box<dyn Trigger<T, TimeWindow>> {
                Box::new($trigger)
            }

            fn is_event_time(&self) -> bool {
                $event_time
            }

            fn is_merging(&self) -> bool {
                true
            }

            fn merge_windows(
                &self,
                windows: &[TimeWindow],
                merge: &mut dyn FnMut(Vec<TimeWindow>, TimeWindow),
            ) {
                merge_time_windows(windows, merge)
            }

            fn merges_by_intersection(&self) -> bool {
                true
            }
        }
    };
}

session!(
    EventTimeSessionWindows,
    DynamicEventTimeSessionWindows,
    true,
    EventTimeTrigger,
    "Event-time sessions: each record opens `[ts, ts + gap)`; touching windows merge."
);
session!(
    ProcessingTimeSessionWindows,
    DynamicProcessingTimeSessionWindows,
    false,
    ProcessingTimeTrigger,
    "Processing-time sessions."
);

/// One window holding everything (Flink's `GlobalWindows`); it never fires
/// unless given a trigger (count windows use `CountTrigger`).
#[derive(Debug, Clone, Copy, Default)]
pub struct GlobalWindows;

impl GlobalWindows {
    /// The assigner.
    pub fn create() -> Self {
        GlobalWindows
    }
}

impl<T: 'static> WindowAssigner<T> for GlobalWindows {
    type W = GlobalWindow;

    fn assign_windows(
        &self,
        _e: &T,
        _ts: i64,
        _ctx: &AssignerContext,
        out: &mut Vec<GlobalWindow>,
    ) {
        out.push(GlobalWindow);
    }

    fn default_trigger(&self) -> Box<dyn Trigger<T, GlobalWindow>> {
        Box::new(NeverTrigger::<GlobalWindow>::create())
    }

    fn is_event_time(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn windows<A: WindowAssigner<u8, W = TimeWindow>>(a: &A, ts: i64) -> Vec<(i64, i64)> {
        let mut out = Vec::new();
        let ctx = AssignerContext {
            current_processing_time: 0,
        };
        a.assign_windows(&0, ts, &ctx, &mut out);
        out.iter().map(|w| (w.start, w.end)).collect()
    }

    #[test]
    fn tumbling_with_offset() {
        let a = TumblingEventTimeWindows::of_with_offset(
            Duration::from_secs(10),
            Duration::from_secs(2),
        );
        assert_eq!(windows(&a, 1_999), vec![(-8_000, 2_000)]);
        assert_eq!(windows(&a, 2_000), vec![(2_000, 12_000)]);
    }

    #[test]
    fn sliding_lists_every_window_latest_first() {
        let a = SlidingEventTimeWindows::of(Duration::from_secs(10), Duration::from_secs(5));
        assert_eq!(windows(&a, 7_000), vec![(5_000, 15_000), (0, 10_000)]);
        assert_eq!(windows(&a, -1), vec![(-5_000, 5_000), (-10_000, 0)]);
        let a = SlidingEventTimeWindows::of(Duration::from_secs(60), Duration::from_secs(1));
        assert_eq!(windows(&a, 0).len(), 60);
    }

    #[test]
    fn cumulative_windows_share_a_start_and_grow_by_step() {
        let a = CumulativeEventTimeWindows::of(Duration::from_secs(10), Duration::from_secs(2));
        assert_eq!(
            windows(&a, 3_000),
            vec![(0, 4_000), (0, 6_000), (0, 8_000), (0, 10_000)]
        );
        // The last millisecond of a step is in that step's window.
        assert_eq!(windows(&a, 3_999)[0], (0, 4_000));
        assert_eq!(windows(&a, 9_999), vec![(0, 10_000)]);
        assert_eq!(windows(&a, 10_000)[0], (10_000, 12_000));
        assert_eq!(windows(&a, -1), vec![(-10_000, 0)]);
        let shifted = CumulativeEventTimeWindows::of_with_offset(
            Duration::from_secs(10),
            Duration::from_secs(5),
            Duration::from_secs(1),
        );
        assert_eq!(windows(&shifted, 0), vec![(-9_000, 1_000)]);
    }

    #[test]
    fn sessions_merge_when_touching() {
        let a = EventTimeSessionWindows::with_gap(Duration::from_secs(1));
        let ws = [
            TimeWindow::new(10_000, 11_000),
            TimeWindow::new(11_000, 12_000),
            TimeWindow::new(12_001, 13_001),
        ];
        let mut merges = Vec::new();
        WindowAssigner::<u8>::merge_windows(&a, &ws, &mut |members, result| {
            merges.push((members, result))
        });
        assert_eq!(
            merges,
            vec![(vec![ws[0], ws[1]], TimeWindow::new(10_000, 12_000))]
        );
    }
}
