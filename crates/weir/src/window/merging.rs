//! Which session window's state holds which window's contents (Flink's
//! `MergingWindowSet`), for one key.
//!
//! When windows merge, their contents are merged into the state of one of
//! them (the "state window"), so merging never moves the bulk of the data.

use super::Window;

/// One merge that adding a window caused: `merged` windows became `result`;
/// contents of `merged_state_windows` go into `state_window`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Merge<W> {
    pub result: W,
    pub merged: Vec<W>,
    pub state_window: W,
    pub merged_state_windows: Vec<W>,
}

/// The live windows of one key and their state windows.
#[derive(Debug, Clone)]
pub(crate) struct MergingWindowSet<W> {
    mapping: Vec<(W, W)>,
}

impl<W: Window> Default for MergingWindowSet<W> {
    fn default() -> Self {
        MergingWindowSet {
            mapping: Vec::new(),
        }
    }
}

impl<W: Window> MergingWindowSet<W> {
    /// The state window of `window`, if it is live.
    pub fn state_window(&self, window: &W) -> Option<&W> {
        self.mapping
            .iter()
            .find(|(w, _)| w == window)
            .map(|(_, s)| s)
    }

    /// Forgets `window` (it was cleaned up or is late).
    pub fn retire_window(&mut self, window: &W) {
        self.mapping.retain(|(w, _)| w != window);
    }

    /// `(window, state window)` of every live window, for a checkpoint.
    pub fn mapping(&self) -> &[(W, W)] {
        &self.mapping
    }

    /// The set a checkpoint's [`mapping`](Self::mapping) describes.
    pub fn from_mapping(mapping: Vec<(W, W)>) -> Self {
        MergingWindowSet { mapping }
    }

    /// Whether no window is live.
    pub fn is_empty(&self) -> bool {
        self.mapping.is_empty()
    }

    fn remove(&mut self, window: &W) -> Option<W> {
        let pos = self.mapping.iter().position(|(w, _)| w == window)?;
        Some(self.mapping.swap_remove(pos).1)
    }

    fn insert(&mut self, window: W, state_window: W) {
        self.retire_window(&window);
        self.mapping.push((window, state_window));
    }

    /// [`add_window`](Self::add_window) for assigners that merge
    /// intersecting time windows: when the new window touches at most one
    /// live window — nearly always — the outcome is computed directly, with
    /// the same result as the general path; otherwise it falls back to it.
    pub fn add_time_window(
        &mut self,
        new_window: W,
        merge_windows: impl FnOnce(&[W], &mut dyn FnMut(Vec<W>, W)),
    ) -> (W, Vec<Merge<W>>) {
        let Some((ns, ne)) = new_window.time_bounds() else {
            return self.add_window(new_window, merge_windows);
        };
        let mut touching = None;
        for (i, (w, _)) in self.mapping.iter().enumerate() {
            let Some((s, e)) = w.time_bounds() else {
                return self.add_window(new_window, merge_windows);
            };
            if s <= ne && e >= ns {
                if touching.is_some() {
                    return self.add_window(new_window, merge_windows);
                }
                touching = Some((i, s, e));
            }
        }
        let Some((i, s, e)) = touching else {
            self.insert(new_window.clone(), new_window.clone());
            return (new_window, Vec::new());
        };
        let (start, end) = (s.min(ns), e.max(ne));
        if (start, end) == (s, e) {
            // The live window covers the new one: nothing merges.
            return (self.mapping[i].0.clone(), Vec::new());
        }
        let Some(result) = W::from_time_window(start, end) else {
            return self.add_window(new_window, merge_windows);
        };
        let (old, state_window) = self.mapping.swap_remove(i);
        self.mapping.push((result.clone(), state_window.clone()));
        let merge = Merge {
            result: result.clone(),
            merged: vec![old],
            state_window,
            merged_state_windows: Vec::new(),
        };
        (result, vec![merge])
    }

    /// Adds `new_window`, merging it with live windows as `merge_windows`
    /// says (Flink's `addWindow`). Returns the window the new element belongs
    /// to and the merges to carry out, in order.
    pub fn add_window(
        &mut self,
        new_window: W,
        merge_windows: impl FnOnce(&[W], &mut dyn FnMut(Vec<W>, W)),
    ) -> (W, Vec<Merge<W>>) {
        let mut windows: Vec<W> = self.mapping.iter().map(|(w, _)| w.clone()).collect();
        windows.push(new_window.clone());
        let mut groups: Vec<(W, Vec<W>)> = Vec::new();
        merge_windows(&windows, &mut |members, result| {
            groups.push((result, members))
        });

        let mut result_window = new_window.clone();
        let mut merged_new_window = false;
        let mut merges = Vec::new();
        let no_merges = groups.is_empty();
        for (result, mut merged) in groups {
            if let Some(pos) = merged.iter().position(|w| *w == new_window) {
                merged.remove(pos);
                merged_new_window = true;
                result_window = result.clone();
            }
            // The state of the result lives in the state window of one of
            // the windows it absorbs.
            let Some(state_window) = merged.first().and_then(|w| self.state_window(w)).cloned()
            else {
                continue;
            };
            let mut merged_state_windows: Vec<W> =
                merged.iter().filter_map(|w| self.remove(w)).collect();
            self.insert(result.clone(), state_window.clone());
            merged_state_windows.retain(|w| *w != state_window);
            // A window merged only into itself (it already covered the new
            // one) has nothing to merge.
            if !(merged.len() == 1 && merged[0] == result) {
                merges.push(Merge {
                    result,
                    merged,
                    state_window,
                    merged_state_windows,
                });
            }
        }
        if no_merges || (result_window == new_window && !merged_new_window) {
            self.insert(result_window.clone(), result_window.clone());
        }
        (result_window, merges)
    }
}

#[cfg(test)]
mod tests {
    use super::super::TimeWindow;
    use super::*;
    use crate::window::{EventTimeSessionWindows, WindowAssigner};
    use std::time::Duration;

    fn add(
        set: &mut MergingWindowSet<TimeWindow>,
        start: i64,
        end: i64,
    ) -> (TimeWindow, Vec<Merge<TimeWindow>>) {
        let assigner = EventTimeSessionWindows::with_gap(Duration::from_secs(1));
        set.add_window(TimeWindow::new(start, end), |ws, cb| {
            WindowAssigner::<u8>::merge_windows(&assigner, ws, cb)
        })
    }

    #[test]
    fn a_new_window_alone_is_its_own_state_window() {
        let mut set = MergingWindowSet::default();
        let (w, merges) = add(&mut set, 0, 1000);
        assert_eq!(w, TimeWindow::new(0, 1000));
        assert!(merges.is_empty());
        assert_eq!(set.state_window(&w), Some(&w));
    }

    #[test]
    fn a_bridging_window_merges_two_sessions_into_one_state() {
        let mut set = MergingWindowSet::default();
        add(&mut set, 0, 1000);
        add(&mut set, 3000, 4000);
        let (w, merges) = add(&mut set, 1500, 2500);
        // [0,1000) and [1500,2500) do not touch: no merge yet.
        assert_eq!(w, TimeWindow::new(1500, 2500));
        assert!(merges.is_empty());
        let (w, merges) = add(&mut set, 900, 3100);
        assert_eq!(w, TimeWindow::new(0, 4000));
        assert_eq!(merges.len(), 1);
        let m = &merges[0];
        assert_eq!(m.result, w);
        assert_eq!(m.merged.len(), 3, "{m:?}");
        assert_eq!(m.merged_state_windows.len(), 2);
        assert_eq!(set.state_window(&w), Some(&m.state_window));
    }

    #[test]
    fn a_window_inside_a_session_merges_into_it_silently() {
        let mut set = MergingWindowSet::default();
        add(&mut set, 0, 5000);
        let (w, merges) = add(&mut set, 1000, 2000);
        assert_eq!(w, TimeWindow::new(0, 5000));
        assert!(merges.is_empty());
    }

    proptest::proptest! {
        #[test]
        fn the_fast_path_agrees_with_the_general_one(windows in proptest::collection::vec((0i64..200, 1i64..40), 1..30)) {
            let assigner = EventTimeSessionWindows::with_gap(Duration::from_secs(1));
            let mut fast = MergingWindowSet::default();
            let mut slow = MergingWindowSet::default();
            for (start, len) in windows {
                let w = TimeWindow::new(start, start + len);
                let a = fast.add_time_window(w, |ws, cb| WindowAssigner::<u8>::merge_windows(&assigner, ws, cb));
                let b = slow.add_window(w, |ws, cb| WindowAssigner::<u8>::merge_windows(&assigner, ws, cb));
                proptest::prop_assert_eq!(a.0, b.0);
                let shape = |ms: &[Merge<TimeWindow>]| ms.iter().map(|m| (m.result, { let mut v = m.merged.clone(); v.sort(); v }, m.merged_state_windows.len())).collect::<Vec<_>>();
                proptest::prop_assert_eq!(shape(&a.1), shape(&b.1));
                let mut fm: Vec<_> = fast.mapping.iter().map(|(w, _)| *w).collect();
                let mut sm: Vec<_> = slow.mapping.iter().map(|(w, _)| *w).collect();
                fm.sort();
                sm.sort();
                proptest::prop_assert_eq!(fm, sm);
            }
        }
    }
}
