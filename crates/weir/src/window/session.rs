//! The window operator for event-time session windows with the default
//! trigger: each key's live sessions in a short list, merged directly.
//!
//! Flink's `WindowOperator` merges sessions through a `MergingWindowSet`,
//! state namespaces and per-window timers that are deleted and registered
//! again at every merge. For sessions with the event-time trigger the
//! outcome of all that is simple: a record's window merges with every live
//! session of its key that it touches; the merged session fires when the
//! watermark reaches its end (at once if it already has) and is dropped
//! `allowed_lateness` later. This operator does exactly that, with one
//! timer queue entry per scheduled firing (stale entries of sessions that
//! merged away are skipped when they come up). The property tests compare
//! it with the general operator.

use std::hash::Hash;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use weir_state::{KeyedStateStore, StableHash};

use weir_runtime::element::{StreamRecord, NO_TIMESTAMP};
use weir_runtime::metrics::OperatorMetrics;
use weir_runtime::operator::{Operator, Output, RuntimeContext};
use weir_runtime::time::{SharedClock, TimeQueue};
use weir_runtime::FunctionResult;

use super::assigner::{AssignerContext, WindowAssigner};
use super::operator::{emit_late, no_timestamp, with_context, Firing, Map, WindowLogic};
use super::Window;
use crate::functions::Collector;
use crate::operators::{KeySelector, OwnState, SavedWatermark};

struct Session<A> {
    id: u64,
    start: i64,
    end: i64,
    acc: A,
    /// Time of this session's firing entry in the queue, if it has one.
    fire_at: Option<i64>,
    /// Time of its cleanup entry, if it has one.
    cleanup_at: Option<i64>,
    /// The end the session last fired with from the queue.
    fired_end: Option<i64>,
}

impl<A> Session<A> {
    /// Whether a window `[start, end)` touches the session (inclusively:
    /// one ending where the other starts merges with it).
    fn touches(&self, start: i64, end: i64) -> bool {
        self.start <= end && self.end >= start
    }

    /// The queue entries the session lacks at `watermark`: the time of
    /// its firing, if it is still to come, and of its cleanup, if
    /// `lateness` keeps it past its firing.
    fn entries_missing(&self, watermark: i64, lateness: i64) -> (Option<i64>, Option<i64>) {
        let due = self.end - 1;
        let cleanup = due.saturating_add(lateness);
        let fire = (due > watermark && self.fire_at.is_none()).then_some(due);
        let clean =
            (lateness > 0 && cleanup != i64::MAX && self.cleanup_at.is_none()).then_some(cleanup);
        (fire, clean)
    }
}

/// One key's sessions as a checkpoint writes them ...
#[derive(Serialize)]
struct KeyOut<'a, A> {
    sessions: Vec<SessionOut<'a, A>>,
}

#[derive(Serialize)]
struct SessionOut<'a, A> {
    start: i64,
    end: i64,
    acc: &'a A,
    fire_at: Option<i64>,
    cleanup_at: Option<i64>,
    fired_end: Option<i64>,
}

/// ... and as a restore reads them.
#[derive(Deserialize)]
struct KeyIn<A> {
    sessions: Vec<SessionIn<A>>,
}

#[derive(Deserialize)]
struct SessionIn<A> {
    start: i64,
    end: i64,
    acc: A,
    fire_at: Option<i64>,
    cleanup_at: Option<i64>,
    fired_end: Option<i64>,
}

/// A queue entry: fire (`cleanup == false`) or clean up session `id` of
/// `key`. A session keeps at most one entry of each kind: when it grows by
/// merging, its entry comes up early and is moved to the new time then, so
/// the queue does not grow with every record.
struct Scheduled<K> {
    key: K,
    id: u64,
    cleanup: bool,
}

pub(crate) struct SessionWindowOperator<T, K, W, O, L: WindowLogic<K, W, T, O>> {
    key_of: KeySelector<T, K>,
    assigner: Arc<dyn WindowAssigner<T, W = W>>,
    logic: L,
    allowed_lateness: i64,
    late_tag: Option<String>,
    sessions: Map<K, Vec<Session<L::Acc>>>,
    state: Option<KeyedStateStore>,
    /// The entries, each carrying its key and session (kept in a map
    /// beside the queue, they cost a map insert and remove per session).
    queue: TimeQueue<Scheduled<K>>,
    /// Processing time as read once for a watermark's firings.
    now: Option<i64>,
    next_id: u64,
    watermark: i64,
    scratch: Vec<W>,
    metrics: Option<Arc<OperatorMetrics>>,
    clock: Option<SharedClock>,
    own: Option<OwnState>,
    saved_watermark: Option<SavedWatermark>,
    _out: std::marker::PhantomData<fn() -> O>,
}

impl<T, K, W, O, L> SessionWindowOperator<T, K, W, O, L>
where
    T: Send + 'static,
    K: Hash + Eq + Clone + Send + Serialize + StableHash + 'static,
    W: Window,
    O: Send + 'static,
    L: WindowLogic<K, W, T, O>,
{
    pub fn new(
        key_of: KeySelector<T, K>,
        assigner: Arc<dyn WindowAssigner<T, W = W>>,
        logic: L,
        allowed_lateness: i64,
        late_tag: Option<String>,
    ) -> Self {
        SessionWindowOperator {
            key_of,
            assigner,
            logic,
            allowed_lateness,
            late_tag,
            sessions: Map::default(),
            state: None,
            queue: TimeQueue::new(),
            now: None,
            next_id: 0,
            watermark: i64::MIN,
            scratch: Vec::new(),
            metrics: None,
            clock: None,
            own: None,
            saved_watermark: None,
            _out: std::marker::PhantomData,
        }
    }

    fn schedule(&mut self, time: i64, key: &K, id: u64, cleanup: bool) {
        self.queue.push(
            time,
            Scheduled {
                key: key.clone(),
                id,
                cleanup,
            },
        );
    }

    /// Processing time for a firing: read once per watermark.
    fn now(&self) -> i64 {
        self.now.unwrap_or_else(|| self.clock_now())
    }

    fn clock_now(&self) -> i64 {
        self.clock.as_ref().map_or(0, |c| c.now_ms())
    }

    /// Fires or cleans up every session whose queue entry is due at
    /// `watermark`.
    fn fire_due(&mut self, watermark: i64, out: &mut Output<O>) -> FunctionResult {
        while let Some((_, entry)) = self.queue.pop_due(watermark) {
            self.on_scheduled(entry, out)?;
            out.flush_if_full()?;
        }
        Ok(())
    }

    /// Makes sure session `index` of `key` has the queue entries it needs.
    fn ensure_scheduled(&mut self, key: &K, index: usize) {
        let lateness = self.allowed_lateness;
        let watermark = self.watermark;
        let Some(session) = self.sessions.get_mut(key).and_then(|l| l.get_mut(index)) else {
            return;
        };
        let id = session.id;
        let (fire, clean) = session.entries_missing(watermark, lateness);
        if fire.is_some() {
            session.fire_at = fire;
        }
        if clean.is_some() {
            session.cleanup_at = clean;
        }
        if let Some(time) = fire {
            self.schedule(time, key, id, false);
        }
        if let Some(time) = clean {
            self.schedule(time, key, id, true);
        }
    }

    fn emit(&mut self, key: &K, index: usize, out: &mut Output<O>) -> FunctionResult {
        let now = self.now();
        let Some(list) = self.sessions.get_mut(key) else {
            return Ok(());
        };
        let Some(session) = list.get_mut(index) else {
            return Ok(());
        };
        let window =
            W::from_time_window(session.start, session.end).ok_or("sessions are time windows")?;
        let timestamp = session.end - 1;
        if out.has_pending_side_records() {
            out.flush()?;
        }
        let (records, sides) = out.split();
        let firing = Firing {
            merging: true,
            watermark: self.watermark,
            now,
        };
        let logic = &mut self.logic;
        let acc = &session.acc;
        with_context(self.state.as_ref(), firing, key, &window, sides, |ctx| {
            logic.emit(key, acc, ctx, &mut Collector::new(records, timestamp))
        })??;
        Ok(())
    }

    fn on_late(&mut self, record: StreamRecord<T>, out: &mut Output<O>) -> FunctionResult {
        emit_late(
            self.late_tag.as_deref(),
            self.metrics.as_deref(),
            record,
            out,
        )
    }

    fn process_record(&mut self, record: StreamRecord<T>, out: &mut Output<O>) -> FunctionResult {
        let ts = record.timestamp;
        let mut windows = std::mem::take(&mut self.scratch);
        windows.clear();
        let ctx = AssignerContext {
            current_processing_time: 0,
        };
        self.assigner
            .assign_windows(&record.value, ts, &ctx, &mut windows);
        let bounds = windows.first().and_then(Window::time_bounds);
        self.scratch = windows;
        let Some((mut start, mut end)) = bounds else {
            return Err("session windows are time windows".into());
        };
        let key = (self.key_of)(&record.value);
        // Most keys have one live session at a time: room for one (a `Vec`
        // would make room for four on its first push).
        let list = self
            .sessions
            .entry(key.clone())
            .or_insert_with(|| Vec::with_capacity(1));
        // The common case: the window touches exactly one live session,
        // which grows where it is (moved out and back, a session's
        // accumulators were copied twice per record).
        let mut touching = list
            .iter()
            .enumerate()
            .filter(|(_, s)| s.touches(start, end))
            .map(|(i, _)| i);
        let (first, second) = (touching.next(), touching.next());
        if let (Some(index), None) = (first, second) {
            let session = &mut list[index];
            session.start = session.start.min(start);
            session.end = session.end.max(end);
            let end = session.end;
            // Not due and with its queue entries (the session was live and
            // grew): nothing more to do, and the key is not looked up
            // again.
            let settled = end - 1 > self.watermark
                && session.entries_missing(self.watermark, self.allowed_lateness) == (None, None);
            self.logic.add(&mut session.acc, record);
            if settled {
                return Ok(());
            }
            return self.after_add(&key, index, end, out);
        }
        // Merge every live session the new window touches (inclusively).
        let mut merged: Option<Session<L::Acc>> = None;
        // From the first session the window touches (none: nothing to
        // merge); the ones before it stay.
        let mut i = first.unwrap_or(list.len());
        while i < list.len() {
            if list[i].touches(start, end) {
                let s = list.swap_remove(i);
                start = start.min(s.start);
                end = end.max(s.end);
                merged = Some(match merged {
                    None => s,
                    Some(mut m) => {
                        self.logic.merge(&mut m.acc, s.acc);
                        // The absorbed session's queue entries carry its id
                        // and go stale; only the survivor's entries count.
                        m
                    }
                });
            } else {
                i += 1;
            }
        }
        let cleanup = (end - 1).saturating_add(self.allowed_lateness);
        if merged.is_none() && cleanup <= self.watermark {
            // Alone and past its cleanup time: the record is late.
            if list.is_empty() {
                self.sessions.remove(&key);
            }
            if ts.saturating_add(self.allowed_lateness) <= self.watermark {
                return self.on_late(record, out);
            }
            return Ok(());
        }
        let id = self.next_id;
        let mut session = merged.unwrap_or_else(|| {
            self.next_id += 1;
            Session {
                id,
                start,
                end,
                acc: self.logic.create(),
                fire_at: None,
                cleanup_at: None,
                fired_end: None,
            }
        });
        session.start = start;
        session.end = end;
        self.logic.add(&mut session.acc, record);
        list.push(session);
        let index = list.len() - 1;
        self.after_add(&key, index, end, out)
    }

    /// After a record went into the key's session at `index`, now ending
    /// at `end`: fires it if it is already due (a late record within the
    /// allowed lateness), and schedules its firing and cleanup.
    fn after_add(
        &mut self,
        key: &K,
        index: usize,
        end: i64,
        out: &mut Output<O>,
    ) -> FunctionResult {
        if end - 1 <= self.watermark {
            if let Some(s) = self.sessions.get_mut(key).and_then(|l| l.get_mut(index)) {
                s.fired_end = Some(end);
            }
            self.emit(key, index, out)?;
        }
        self.ensure_scheduled(key, index);
        Ok(())
    }

    fn on_scheduled(&mut self, entry: Scheduled<K>, out: &mut Output<O>) -> FunctionResult {
        let Some(index) = self
            .sessions
            .get(&entry.key)
            .and_then(|list| list.iter().position(|s| s.id == entry.id))
        else {
            // The session was merged into another or dropped.
            return Ok(());
        };
        let lateness = self.allowed_lateness;
        let Some(session) = self
            .sessions
            .get_mut(&entry.key)
            .and_then(|l| l.get_mut(index))
        else {
            return Ok(());
        };
        let due = session.end - 1;
        let cleanup = due.saturating_add(lateness);
        if entry.cleanup {
            session.cleanup_at = None;
        } else {
            session.fire_at = None;
        }
        // Whatever entry comes up, a session whose end is due fires once
        // for that end before anything else (an entry made before the
        // session grew comes up early; a stale cleanup entry must not drop
        // a session that still has to fire).
        if due <= self.watermark && session.fired_end != Some(session.end) {
            session.fired_end = Some(session.end);
            self.emit(&entry.key, index, out)?;
        }
        if cleanup <= self.watermark {
            return self.drop_session(&entry.key, index, out);
        }
        self.ensure_scheduled(&entry.key, index);
        Ok(())
    }

    fn drop_session(&mut self, key: &K, index: usize, out: &mut Output<O>) -> FunctionResult {
        let Some(list) = self.sessions.get_mut(key) else {
            return Ok(());
        };
        let session = list.swap_remove(index);
        if list.is_empty() {
            self.sessions.remove(key);
        }
        let window =
            W::from_time_window(session.start, session.end).ok_or("sessions are time windows")?;
        let (_, sides) = out.split();
        let firing = Firing {
            merging: true,
            watermark: self.watermark,
            now: self.now(),
        };
        let logic = &mut self.logic;
        with_context(self.state.as_ref(), firing, key, &window, sides, |ctx| {
            logic.clear(ctx)
        })??;
        Ok(())
    }
}

impl<T, K, W, O, L> Operator for SessionWindowOperator<T, K, W, O, L>
where
    T: Send + 'static,
    K: Hash + Eq + Clone + Send + Serialize + DeserializeOwned + StableHash + 'static,
    W: Window,
    O: Send + 'static,
    L: WindowLogic<K, W, T, O>,
{
    type In = T;
    type Out = O;

    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.metrics = Some(Arc::clone(&ctx.metrics));
        self.clock = Some(ctx.clock.clone());
        let own = OwnState::new(ctx);
        for (key, k) in own.restore::<K, KeyIn<L::Acc>>("sessions")? {
            let mut list = Vec::with_capacity(k.sessions.len());
            for s in k.sessions {
                let id = self.next_id;
                self.next_id += 1;
                if let Some(t) = s.fire_at {
                    self.schedule(t, &key, id, false);
                }
                if let Some(t) = s.cleanup_at {
                    self.schedule(t, &key, id, true);
                }
                list.push(Session {
                    id,
                    start: s.start,
                    end: s.end,
                    acc: s.acc,
                    fire_at: s.fire_at,
                    cleanup_at: s.cleanup_at,
                    fired_end: s.fired_end,
                });
            }
            if !list.is_empty() {
                self.sessions.insert(key, list);
            }
        }
        self.own = Some(own);
        let (saved, watermark) = SavedWatermark::open(ctx)?;
        self.watermark = watermark;
        self.saved_watermark = Some(saved);
        let (keyed_ctx, state) = ctx.open_keyed_state()?;
        self.state = Some(state);
        self.logic.open(&keyed_ctx)
    }

    fn snapshot_state(&mut self, _checkpoint_id: u64) -> FunctionResult {
        let (Some(own), Some(saved)) = (&self.own, &self.saved_watermark) else {
            return Ok(());
        };
        let mut keys: Map<&K, KeyOut<'_, L::Acc>> = Map::default();
        for (k, list) in &self.sessions {
            let mut sessions = Vec::with_capacity(list.len());
            for s in list {
                sessions.push(SessionOut {
                    start: s.start,
                    end: s.end,
                    acc: &s.acc,
                    fire_at: s.fire_at,
                    cleanup_at: s.cleanup_at,
                    fired_end: s.fired_end,
                });
            }
            keys.insert(k, KeyOut { sessions });
        }
        own.save("sessions", keys)?;
        saved.save(self.watermark)?;
        Ok(())
    }

    fn process_batch(
        &mut self,
        input: &mut Vec<StreamRecord<T>>,
        out: &mut Output<O>,
    ) -> FunctionResult {
        for record in input.drain(..) {
            // Sessions of event time only come here.
            if record.timestamp == NO_TIMESTAMP {
                return Err(no_timestamp());
            }
            self.process_record(record, out)?;
        }
        Ok(())
    }

    fn pending_event_timers(&self) -> Option<(u64, Option<i64>)> {
        // The queue may still hold entries of sessions that merged; its
        // head is a lower bound of the next firing.
        let count = self.queue.len() as u64;
        let earliest = self.queue.peek().map(|(time, _)| time);
        Some((count, earliest.filter(|_| count > 0)))
    }

    fn process_watermark(&mut self, watermark: i64, out: &mut Output<O>) -> FunctionResult {
        self.watermark = self.watermark.max(watermark);
        if self.queue.peek().is_some_and(|(time, _)| time <= watermark) {
            self.now = Some(self.clock_now());
            let fired = self.fire_due(watermark, out);
            self.now = None;
            fired?;
        }
        out.emit_watermark(watermark)?;
        Ok(())
    }
}
