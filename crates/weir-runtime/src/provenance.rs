//! Where each subtask's watermark comes from: what every input channel of
//! a task last delivered (watermark, idle, ended, when it last advanced),
//! what a source subtask last emitted and when it last had records, and
//! the state of each split of a split source. Written by the task loops on
//! watermarks and status changes (rare next to records) and by sources once
//! per poll; read by the job view to answer "why does this window not
//! fire?" (see `cluster::diagnosis`).

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Mutex;

/// Wall-clock milliseconds since the epoch.
pub fn wall_clock_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// What one input channel of a task last delivered.
#[derive(Debug)]
pub struct ChannelProbe {
    upstream_vertex: usize,
    upstream_subtask: u32,
    watermark: AtomicI64,
    idle: AtomicBool,
    ended: AtomicBool,
    /// When its watermark last advanced (or the channel was created).
    advanced_ms: AtomicI64,
}

impl ChannelProbe {
    /// A channel from `upstream_subtask` of vertex `upstream_vertex`.
    pub fn new(upstream_vertex: usize, upstream_subtask: u32) -> Self {
        ChannelProbe {
            upstream_vertex,
            upstream_subtask,
            watermark: AtomicI64::new(i64::MIN),
            idle: AtomicBool::new(false),
            ended: AtomicBool::new(false),
            advanced_ms: AtomicI64::new(wall_clock_ms()),
        }
    }

    /// A watermark arrived.
    pub fn on_watermark(&self, watermark: i64) {
        if watermark > self.watermark.load(Ordering::Relaxed) {
            self.watermark.store(watermark, Ordering::Relaxed);
            self.advanced_ms.store(wall_clock_ms(), Ordering::Relaxed);
        }
    }

    /// The channel became idle (`true`) or active.
    pub fn on_idle(&self, idle: bool) {
        self.idle.store(idle, Ordering::Relaxed);
    }

    /// The channel ended.
    pub fn on_end(&self) {
        self.ended.store(true, Ordering::Relaxed);
    }

    /// Its current state.
    pub fn snapshot(&self) -> ChannelState {
        ChannelState {
            upstream_vertex: self.upstream_vertex,
            upstream_subtask: self.upstream_subtask,
            watermark: self.watermark.load(Ordering::Relaxed),
            idle: self.idle.load(Ordering::Relaxed),
            ended: self.ended.load(Ordering::Relaxed),
            advanced_ms: self.advanced_ms.load(Ordering::Relaxed),
        }
    }
}

/// A channel's state as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelState {
    /// The vertex the channel comes from (index in the job's vertices).
    pub upstream_vertex: usize,
    /// The subtask of that vertex.
    pub upstream_subtask: u32,
    /// The last watermark it delivered (`i64::MIN`: none yet).
    pub watermark: i64,
    /// Whether it is idle.
    pub idle: bool,
    /// Whether it ended.
    pub ended: bool,
    /// When its watermark last advanced, ms since the epoch.
    pub advanced_ms: i64,
}

/// One split of a split source, as the source reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitState {
    /// Its name (e.g. `orders-7` for partition 7 of topic `orders`), or
    /// its index.
    pub name: String,
    /// Its watermark (`i64::MIN`: none yet).
    pub watermark: i64,
    /// Whether it is idle (`with_idleness`).
    pub idle: bool,
    /// Whether it has no more records.
    pub finished: bool,
    /// When it last had a record, ms since the epoch.
    pub last_record_ms: Option<i64>,
}

/// What a source subtask last emitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceState {
    /// The watermark it emitted (`i64::MIN`: none; a watermark assigner
    /// chained after it may emit them instead).
    pub watermark: i64,
    /// Whether it marked itself idle.
    pub idle: bool,
    /// When its watermark last advanced.
    pub advanced_ms: Option<i64>,
    /// When it last emitted a record (filled in by
    /// [`SubtaskProbe::source`]).
    pub last_record_ms: Option<i64>,
    /// Its splits, for a split source.
    pub splits: Vec<SplitState>,
}

impl Default for SourceState {
    fn default() -> Self {
        SourceState {
            watermark: i64::MIN,
            idle: false,
            advanced_ms: None,
            last_record_ms: None,
            splits: Vec::new(),
        }
    }
}

/// The provenance of one task subtask: its inputs' channels (by input),
/// and for a source what it emitted.
#[derive(Debug, Default)]
pub struct SubtaskProbe {
    inputs: Vec<Vec<ChannelProbe>>,
    source: Mutex<SourceState>,
    /// When the source last emitted records (0: never); an atomic, as it
    /// is written once per poll.
    last_record_ms: AtomicI64,
}

impl SubtaskProbe {
    /// A probe over `inputs`' channels (none for a source).
    pub fn new(inputs: Vec<Vec<ChannelProbe>>) -> Self {
        SubtaskProbe {
            inputs,
            source: Mutex::default(),
            last_record_ms: AtomicI64::new(0),
        }
    }

    /// Channel `channel` of input `input` (0 or 1).
    pub fn channel(&self, input: usize, channel: usize) -> Option<&ChannelProbe> {
        self.inputs.get(input)?.get(channel)
    }

    /// The channels of every input, as read now.
    pub fn inputs(&self) -> Vec<Vec<ChannelState>> {
        self.inputs
            .iter()
            .map(|channels| channels.iter().map(ChannelProbe::snapshot).collect())
            .collect()
    }

    /// Updates what the source emitted.
    pub fn update_source(&self, f: impl FnOnce(&mut SourceState)) {
        if let Ok(mut state) = self.source.lock() {
            f(&mut state);
        }
    }

    /// The source emitted records just now.
    #[inline]
    pub fn on_records(&self) {
        self.last_record_ms
            .store(wall_clock_ms(), Ordering::Relaxed);
    }

    /// The source emitted `watermark`.
    pub fn on_source_watermark(&self, watermark: i64) {
        self.update_source(|s| {
            s.watermark = watermark;
            s.advanced_ms = Some(wall_clock_ms());
        });
    }

    /// The source became idle (`true`) or active.
    pub fn on_source_idle(&self, idle: bool) {
        self.update_source(|s| s.idle = idle);
    }

    /// What the source emitted (the default for other tasks).
    pub fn source(&self) -> SourceState {
        let mut state = self.source.lock().map(|s| s.clone()).unwrap_or_default();
        let last = self.last_record_ms.load(Ordering::Relaxed);
        state.last_record_ms = (last > 0).then_some(last);
        state
    }
}
