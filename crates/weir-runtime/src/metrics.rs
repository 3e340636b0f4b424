//! Per-operator counters, shared by the operator's subtasks.
//!
//! Counters are updated once per batch, never per record, so they cost
//! nothing measurable on the hot path.

use std::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use weir_state::StoreStatistics;

use crate::provenance::SubtaskProbe;

/// A subtask's state store statistics as read: `(subtask, [(name, value)])`.
pub type SubtaskStoreStatistics = (u32, Vec<(&'static str, u64)>);

/// A store's statistics handle (opaque to `Debug`).
#[derive(Clone)]
struct StoreHandle(Arc<dyn StoreStatistics>);

impl std::fmt::Debug for StoreHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StoreStatistics")
    }
}

/// Where one task (a chain of operators at one subtask index) spent its
/// time waiting: for input (idle) and for room in a full output channel
/// (back-pressured). Measured only when the task actually waits, so the
/// hot path pays nothing; busy time is the rest.
#[derive(Debug, Default)]
pub struct TaskTimes {
    idle_ns: AtomicU64,
    backpressured_ns: AtomicU64,
}

impl TaskTimes {
    /// Adds time spent waiting for input.
    pub fn add_idle(&self, d: Duration) {
        self.idle_ns
            .fetch_add(d.as_nanos() as u64, Ordering::Relaxed);
    }

    /// Adds time spent waiting for a full output channel.
    pub fn add_backpressured(&self, d: Duration) {
        self.backpressured_ns
            .fetch_add(d.as_nanos() as u64, Ordering::Relaxed);
    }

    /// Total time idle so far.
    pub fn idle(&self) -> Duration {
        Duration::from_nanos(self.idle_ns.load(Ordering::Relaxed))
    }

    /// Total time back-pressured so far.
    pub fn backpressured(&self) -> Duration {
        Duration::from_nanos(self.backpressured_ns.load(Ordering::Relaxed))
    }
}

/// `subtask`'s entry of `slots`, made on first use.
fn subtask_slot<T: Default>(slots: &RwLock<Vec<Arc<T>>>, subtask: u32) -> Arc<T> {
    let i = subtask as usize;
    if let Some(t) = slots.read().ok().and_then(|v| v.get(i).cloned()) {
        return t;
    }
    let mut slots = slots
        .write()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    while slots.len() <= i {
        slots.push(Arc::default());
    }
    Arc::clone(&slots[i])
}

/// Stores `watermark` as `subtask`'s, growing the slots on first use;
/// whether it differs from the value before.
fn store_watermark(slots: &RwLock<Vec<AtomicI64>>, subtask: u32, watermark: i64) -> bool {
    let i = subtask as usize;
    if let Ok(slots) = slots.read() {
        if let Some(slot) = slots.get(i) {
            return slot.swap(watermark, Ordering::Relaxed) != watermark;
        }
    }
    if let Ok(mut slots) = slots.write() {
        while slots.len() <= i {
            slots.push(AtomicI64::new(i64::MIN));
        }
        return slots[i].swap(watermark, Ordering::Relaxed) != watermark;
    }
    false
}

/// Each subtask's watermark, `None` before its first.
fn read_watermarks(slots: &RwLock<Vec<AtomicI64>>) -> Vec<Option<i64>> {
    slots
        .read()
        .map(|slots| {
            slots
                .iter()
                .map(|s| Some(s.load(Ordering::Relaxed)).filter(|w| *w != i64::MIN))
                .collect()
        })
        .unwrap_or_default()
}

/// Records in and out of one operator subtask. Aligned to a cache line of
/// its own: subtasks count on different threads.
#[derive(Debug)]
#[repr(align(64))]
pub struct SubtaskCounts {
    records_in: AtomicU64,
    records_out: AtomicU64,
    /// Pending event-time timers, and the earliest (`i64::MAX`: none);
    /// `u64::MAX` timers: the operator keeps none.
    timers: AtomicU64,
    earliest_timer: AtomicI64,
    /// The last watermark the subtask emitted (Flink's
    /// `currentOutputWatermark`; `i64::MIN` before the first).
    output_watermark: AtomicI64,
}

impl Default for SubtaskCounts {
    fn default() -> Self {
        SubtaskCounts {
            records_in: AtomicU64::new(0),
            records_out: AtomicU64::new(0),
            timers: AtomicU64::new(u64::MAX),
            earliest_timer: AtomicI64::new(i64::MAX),
            output_watermark: AtomicI64::new(i64::MIN),
        }
    }
}

impl SubtaskCounts {
    /// Adds `n` records received.
    #[inline]
    pub fn add_in(&self, n: usize) {
        self.records_in.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// Adds `n` records emitted.
    #[inline]
    pub fn add_out(&self, n: usize) {
        self.records_out.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// Records received so far.
    pub fn records_in(&self) -> u64 {
        self.records_in.load(Ordering::Relaxed)
    }

    /// Records emitted so far.
    pub fn records_out(&self) -> u64 {
        self.records_out.load(Ordering::Relaxed)
    }

    /// Records a watermark the subtask emitted.
    #[inline]
    pub fn set_output_watermark(&self, watermark: i64) {
        self.output_watermark.store(watermark, Ordering::Relaxed);
    }

    /// Records the operator's pending event-time timers: `count`, the
    /// earliest at `earliest`. Called once per batch and watermark.
    #[inline]
    pub fn set_timers(&self, count: u64, earliest: Option<i64>) {
        self.timers.store(count, Ordering::Relaxed);
        self.earliest_timer
            .store(earliest.unwrap_or(i64::MAX), Ordering::Relaxed);
    }

    /// The pending event-time timers and the earliest, if the operator
    /// keeps timers.
    pub fn timers(&self) -> Option<(u64, Option<i64>)> {
        let count = self.timers.load(Ordering::Relaxed);
        let earliest = self.earliest_timer.load(Ordering::Relaxed);
        (count != u64::MAX).then_some((count, (earliest != i64::MAX).then_some(earliest)))
    }
}

/// Counters of one operator, summed over its subtasks.
#[derive(Debug, Default)]
pub struct OperatorMetrics {
    /// Records in and out by subtask (over all attempts); the operator's
    /// counts are their sums.
    counts: RwLock<Vec<Arc<SubtaskCounts>>>,
    blocked_sends: AtomicU64,
    late_records_dropped: AtomicU64,
    /// Subtasks of the current attempt whose task opened.
    running: AtomicU32,
    /// For a vertex that heads tasks: each subtask's watermark provenance
    /// in the current attempt.
    probes: RwLock<Vec<Arc<SubtaskProbe>>>,
    /// Each subtask's state store statistics (RocksDB's), if it has any.
    stores: RwLock<Vec<Option<StoreHandle>>>,
    /// The input watermark of each subtask (Flink's
    /// `currentInputWatermark`), `i64::MIN` before the first.
    watermarks: RwLock<Vec<AtomicI64>>,
    /// When each subtask's input watermark last advanced (wall clock, ms).
    watermark_advanced: RwLock<Vec<AtomicI64>>,
    /// The waiting times of the tasks this operator heads, by subtask
    /// (over all attempts).
    task_times: RwLock<Vec<Arc<TaskTimes>>>,
}

impl OperatorMetrics {
    /// The record counters of `subtask`: hot paths keep the handle and
    /// count into it without a lock.
    pub fn subtask_counts(&self, subtask: u32) -> Arc<SubtaskCounts> {
        subtask_slot(&self.counts, subtask)
    }

    /// Records in and out of each subtask so far.
    pub fn subtask_records(&self) -> Vec<(u64, u64)> {
        self.counts
            .read()
            .map(|v| {
                v.iter()
                    .map(|c| (c.records_in(), c.records_out()))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Counts one send that had to wait for a full channel (back-pressure).
    #[inline]
    pub fn add_blocked_send(&self) {
        self.blocked_sends.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts `n` late records dropped (no late side output was set).
    #[inline]
    pub fn add_late_dropped(&self, n: u64) {
        self.late_records_dropped.fetch_add(n, Ordering::Relaxed);
    }

    /// Late records dropped so far (Flink's `numLateRecordsDropped`).
    pub fn late_records_dropped(&self) -> u64 {
        self.late_records_dropped.load(Ordering::Relaxed)
    }

    /// A subtask's task opened its operators and runs.
    pub fn subtask_running(&self) {
        self.running.fetch_add(1, Ordering::Relaxed);
    }

    /// A new attempt starts: no subtask runs yet.
    pub fn reset_running(&self) {
        self.running.store(0, Ordering::Relaxed);
    }

    /// Subtasks of the current attempt that opened.
    pub fn running_subtasks(&self) -> u32 {
        self.running.load(Ordering::Relaxed)
    }

    /// Records received so far.
    pub fn records_in(&self) -> u64 {
        self.subtask_records().iter().map(|(i, _)| i).sum()
    }

    /// Records emitted so far.
    pub fn records_out(&self) -> u64 {
        self.subtask_records().iter().map(|(_, o)| o).sum()
    }

    /// Records the input watermark of `subtask`.
    pub fn set_watermark(&self, subtask: u32, watermark: i64) {
        if store_watermark(&self.watermarks, subtask, watermark) {
            let now = crate::provenance::wall_clock_ms();
            store_watermark(&self.watermark_advanced, subtask, now);
        }
    }

    /// When each subtask's input watermark last advanced (wall clock ms),
    /// `None` before its first.
    pub fn subtask_watermark_advanced(&self) -> Vec<Option<i64>> {
        read_watermarks(&self.watermark_advanced)
    }

    /// The last watermark each subtask emitted, `None` before its first.
    pub fn subtask_output_watermarks(&self) -> Vec<Option<i64>> {
        self.counts
            .read()
            .map(|v| {
                v.iter()
                    .map(|c| {
                        Some(c.output_watermark.load(Ordering::Relaxed)).filter(|w| *w != i64::MIN)
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The lowest input watermark of the subtasks that have one, as Flink
    /// shows a vertex's watermark.
    pub fn watermark(&self) -> Option<i64> {
        let slots = self.watermarks.read().ok()?;
        slots.iter().map(|s| s.load(Ordering::Relaxed)).min()
    }

    /// The waiting times of the task this operator heads at `subtask`.
    pub fn task_times(&self, subtask: u32) -> Arc<TaskTimes> {
        subtask_slot(&self.task_times, subtask)
    }

    /// The waiting times of each subtask's task, if this operator heads
    /// tasks (empty otherwise).
    pub fn subtask_times(&self) -> Vec<Arc<TaskTimes>> {
        self.task_times
            .read()
            .map(|v| v.clone())
            .unwrap_or_default()
    }

    /// The input watermark of each subtask, `None` before its first.
    pub fn subtask_watermarks(&self) -> Vec<Option<i64>> {
        read_watermarks(&self.watermarks)
    }

    /// Sets the watermark provenance of the task this operator heads at
    /// `subtask` (once per attempt).
    pub fn set_probe(&self, subtask: u32, probe: Arc<SubtaskProbe>) {
        let i = subtask as usize;
        let mut slots = self
            .probes
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        while slots.len() <= i {
            slots.push(Arc::default());
        }
        slots[i] = probe;
    }

    /// The watermark provenance of each subtask's task (empty unless this
    /// operator heads tasks).
    pub fn probes(&self) -> Vec<Arc<SubtaskProbe>> {
        self.probes.read().map(|v| v.clone()).unwrap_or_default()
    }

    /// Each subtask's pending event-time timers and the earliest (`None`
    /// for operators without timers).
    pub fn subtask_timers(&self) -> Vec<Option<(u64, Option<i64>)>> {
        self.counts
            .read()
            .map(|v| v.iter().map(|c| c.timers()).collect())
            .unwrap_or_default()
    }

    /// Shows `subtask`'s state store statistics.
    pub fn set_store_statistics(&self, subtask: u32, statistics: Arc<dyn StoreStatistics>) {
        let i = subtask as usize;
        let mut slots = self
            .stores
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        while slots.len() <= i {
            slots.push(None);
        }
        slots[i] = Some(StoreHandle(statistics));
    }

    /// Each subtask's state store statistics, read now: `(subtask,
    /// [(name, value)])` for the subtasks whose store keeps any.
    pub fn store_statistics(&self) -> Vec<SubtaskStoreStatistics> {
        let Ok(slots) = self.stores.read() else {
            return Vec::new();
        };
        slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| Some((i as u32, s.as_ref()?.0.read())))
            .filter(|(_, read)| !read.is_empty())
            .collect()
    }

    /// Sends that waited on a full output channel so far.
    pub fn blocked_sends(&self) -> u64 {
        self.blocked_sends.load(Ordering::Relaxed)
    }
}
