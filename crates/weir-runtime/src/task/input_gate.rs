//! The input side of a task: the channels from upstream subtasks, read
//! fairly, with the watermark valve and barrier tracking applied.

use std::sync::Arc;

use crossbeam_channel::{Receiver, Select, TryRecvError};

use super::valve::{ValveOutput, WatermarkValve};
use crate::element::{Barrier, Control, Message, StreamRecord, WatermarkStatus};
use crate::error::TaskError;
use crate::exchange::DrainWake;
use crate::provenance::{ChannelProbe, SubtaskProbe};

/// What an input gate delivers to the task.
#[derive(Debug)]
pub enum GateEvent<T> {
    /// A batch of records.
    Records(Vec<StreamRecord<T>>),
    /// The input's combined watermark advanced.
    Watermark(i64),
    /// The input as a whole became idle or active.
    Status(WatermarkStatus),
    /// Every live channel delivered this barrier.
    Barrier(Barrier),
    /// Every channel ended.
    Finished,
}

/// All channels of one logical input of a task.
pub struct InputGate<T> {
    receivers: Vec<Receiver<Message<T>>>,
    // Per channel, its producer's wake, once the channel delivered it.
    wakes: Vec<Option<Arc<DrainWake>>>,
    ended: Vec<bool>,
    live: usize,
    next_poll: usize,
    valve: WatermarkValve,
    finished_reported: bool,
    // Barriers are forwarded once every live channel delivered them. With
    // alignment (exactly-once), a channel that delivered the pending
    // barrier is not read until the barrier is complete, so no record after
    // it reaches the snapshot; without, records keep flowing
    // (at-least-once).
    // With the time its first channel delivered it.
    pending_barrier: Option<(Barrier, Vec<bool>, std::time::Instant)>,
    aligned: bool,
    // Held by a two-input task aligning a barrier across its two gates.
    held: bool,
    // A second event produced by one message (a watermark and then the idle
    // status, when the last active channel goes idle).
    queued: Option<GateEvent<T>>,
    // Where the channels' watermarks are shown, and as which input.
    probe: Option<(Arc<SubtaskProbe>, usize)>,
}

impl<T> InputGate<T> {
    /// A gate over `receivers` (one per upstream subtask and edge) that
    /// does not align barriers.
    pub fn new(receivers: Vec<Receiver<Message<T>>>) -> Self {
        Self::with_alignment(receivers, false)
    }

    /// A gate that aligns barriers if `aligned` (exactly-once).
    pub fn with_alignment(receivers: Vec<Receiver<Message<T>>>, aligned: bool) -> Self {
        let n = receivers.len();
        InputGate {
            receivers,
            wakes: vec![None; n],
            ended: vec![false; n],
            live: n,
            next_poll: 0,
            valve: WatermarkValve::new(n),
            finished_reported: false,
            pending_barrier: None,
            aligned,
            held: false,
            queued: None,
            probe: None,
        }
    }

    /// Whether every channel has ended.
    pub fn is_finished(&self) -> bool {
        self.live == 0
    }

    /// The input's current watermark.
    pub fn watermark(&self) -> i64 {
        self.valve.current()
    }

    /// Whether every channel is idle.
    pub fn is_idle(&self) -> bool {
        self.valve.is_idle()
    }

    /// Stops (`true`) or resumes reading the whole gate: a two-input task
    /// holds the input that delivered a barrier until the other has too.
    pub fn hold(&mut self, held: bool) {
        self.held = held;
    }

    /// Whether channel `ch` is held back by barrier alignment.
    fn blocked(&self, ch: usize) -> bool {
        self.held
            || self.aligned
                && self
                    .pending_barrier
                    .as_ref()
                    .is_some_and(|(_, seen, _)| seen[ch])
    }

    /// Adds the live channels to `select`; returns how many were added.
    pub fn register<'a>(&'a self, select: &mut Select<'a>) -> usize {
        let mut added = 0;
        for (ch, (rx, ended)) in self.receivers.iter().zip(&self.ended).enumerate() {
            if !ended && !self.blocked(ch) {
                select.recv(rx);
                added += 1;
            }
        }
        added
    }

    /// The next event without blocking, reading channels round robin,
    /// except that of channels with messages waiting, one whose watermark
    /// is behind all the others' is read first: channels fed at different
    /// rates stay close in event time. `Ok(None)`: nothing available now.
    pub fn poll(&mut self) -> Result<Option<GateEvent<T>>, TaskError> {
        if let Some(event) = self.queued.take() {
            return Ok(Some(event));
        }
        if self.held {
            return Ok(None);
        }
        if self.live == 0 {
            return Ok(self.report_finished());
        }
        let n = self.receivers.len();
        if let Some(ch) = self.behind() {
            self.next_poll = ch;
        }
        for step in 0..n {
            let ch = (self.next_poll + step) % n;
            if self.ended[ch] || self.blocked(ch) {
                continue;
            }
            match self.receivers[ch].try_recv() {
                Ok(message) => {
                    if let Some(wake) = &self.wakes[ch] {
                        wake.taken(&self.receivers[ch]);
                    }
                    self.next_poll = (ch + 1) % n;
                    if let Some(event) = self.on_message(ch, message) {
                        return Ok(Some(event));
                    }
                    if self.live == 0 {
                        return Ok(self.report_finished());
                    }
                }
                Err(TryRecvError::Empty) => {}
                // The sender vanished without ending its stream: it failed.
                Err(TryRecvError::Disconnected) => return Err(TaskError::Cancelled),
            }
        }
        Ok(None)
    }

    /// The channel to read first: of the channels with messages waiting
    /// (not ended, not held back by a barrier), the one whose watermark
    /// is behind all the others', if each of them has delivered one.
    ///
    /// Read round robin, a channel whose source makes its records faster
    /// runs ahead in event time as far as the job lasts: a join's side
    /// of few rows (Nexmark's auctions, one in sixteen records) was read
    /// whole in the first seventh of q4, and each auction's entry had
    /// left the caches by the time its bids came. Read this way, the
    /// channels stay within about a batch of each other in event time.
    /// Which records come first is not defined between channels, so
    /// results are the same; a channel without watermarks is read round
    /// robin, as before.
    fn behind(&self) -> Option<usize> {
        let mut lowest: Option<(usize, i64)> = None;
        let mut tied = false;
        for (ch, rx) in self.receivers.iter().enumerate() {
            if self.ended[ch] || self.blocked(ch) || rx.is_empty() {
                continue;
            }
            let wm = self.valve.channel_watermark(ch);
            if wm == i64::MIN {
                return None;
            }
            match lowest {
                Some((_, low)) if wm > low => {}
                Some((_, low)) if wm == low => tied = true,
                _ => {
                    lowest = Some((ch, wm));
                    tied = false;
                }
            }
        }
        lowest.filter(|_| !tied).map(|(ch, _)| ch)
    }

    fn report_finished(&mut self) -> Option<GateEvent<T>> {
        if self.finished_reported {
            None
        } else {
            self.finished_reported = true;
            Some(GateEvent::Finished)
        }
    }

    /// Shows what each channel delivers in `probe`, as input `input` of
    /// its task.
    pub fn with_probe(mut self, probe: Arc<SubtaskProbe>, input: usize) -> Self {
        self.probe = Some((probe, input));
        self
    }

    fn probe_channel(&self, ch: usize) -> Option<&ChannelProbe> {
        let (probe, input) = self.probe.as_ref()?;
        probe.channel(*input, ch)
    }

    fn on_message(&mut self, ch: usize, message: Message<T>) -> Option<GateEvent<T>> {
        match message {
            Message::Records(batch) => Some(GateEvent::Records(batch)),
            Message::Wake(wake) => {
                self.wakes[ch] = Some(wake);
                None
            }
            Message::Control(Control::Watermark(wm)) => {
                if let Some(c) = self.probe_channel(ch) {
                    c.on_watermark(wm);
                }
                let out = self.valve.on_watermark(ch, wm);
                self.valve_event(out)
            }
            Message::Control(Control::WatermarkStatus(status)) => {
                if let Some(c) = self.probe_channel(ch) {
                    c.on_idle(status == WatermarkStatus::Idle);
                }
                let out = self.valve.on_status(ch, status);
                self.valve_event(out)
            }
            Message::Control(Control::EndOfInput) => {
                self.ended[ch] = true;
                self.live -= 1;
                if let Some(c) = self.probe_channel(ch) {
                    c.on_end();
                }
                if let Some(event) = self.check_barrier_complete() {
                    return Some(event);
                }
                let out = self.valve.on_end(ch);
                self.valve_event(out)
            }
            Message::Control(Control::Barrier(barrier)) => {
                match &mut self.pending_barrier {
                    Some((pending, seen, _)) if pending.checkpoint_id == barrier.checkpoint_id => {
                        seen[ch] = true;
                    }
                    // A newer barrier supersedes an incomplete older one.
                    Some((pending, _, _)) if pending.checkpoint_id > barrier.checkpoint_id => {}
                    _ => {
                        let mut seen = vec![false; self.receivers.len()];
                        seen[ch] = true;
                        self.pending_barrier = Some((barrier, seen, std::time::Instant::now()));
                    }
                }
                self.check_barrier_complete()
            }
        }
    }

    fn valve_event(&mut self, out: ValveOutput) -> Option<GateEvent<T>> {
        match (out.watermark, out.status) {
            (Some(wm), status) => {
                self.queued = status.map(GateEvent::Status);
                Some(GateEvent::Watermark(wm))
            }
            (None, Some(status)) => Some(GateEvent::Status(status)),
            (None, None) => None,
        }
    }

    fn check_barrier_complete(&mut self) -> Option<GateEvent<T>> {
        let (_, seen, _) = self.pending_barrier.as_ref()?;
        let complete = seen.iter().zip(&self.ended).all(|(s, e)| *s || *e);
        if complete {
            self.pending_barrier.take().map(|(mut barrier, _, first)| {
                barrier.alignment = first.elapsed();
                GateEvent::Barrier(barrier)
            })
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::element::BarrierKind;

    fn barrier(id: u64) -> Message<u64> {
        Message::Control(Control::Barrier(Barrier {
            checkpoint_id: id,
            timestamp_ms: 0,
            kind: BarrierKind::Checkpoint,
            alignment: Duration::ZERO,
        }))
    }

    /// The records of all channels, in the order the gate gives them.
    fn records_read(gate: &mut InputGate<i64>) -> Vec<i64> {
        let mut read = Vec::new();
        while let Ok(Some(event)) = gate.poll() {
            if let GateEvent::Records(batch) = event {
                read.extend(batch.into_iter().map(|r| r.value));
            }
        }
        read
    }

    /// Of channels with records waiting, the one behind in event time is
    /// read first; without watermarks on every such channel, round robin.
    #[test]
    fn the_channel_behind_in_event_time_is_read_first() {
        // Each channel's watermark read first, then three batches each.
        let channels = |watermarks: [Option<i64>; 2]| {
            let (tx0, rx0) = crossbeam_channel::unbounded();
            let (tx1, rx1) = crossbeam_channel::unbounded();
            let txs = [(tx0, 100), (tx1, 10)];
            for ((tx, _), wm) in txs.iter().zip(watermarks) {
                if let Some(wm) = wm {
                    tx.send(Message::Control(Control::Watermark(wm)))
                        .expect("send");
                }
            }
            let mut gate = InputGate::new(vec![rx0, rx1]);
            assert!(records_read(&mut gate).is_empty());
            for (tx, first) in &txs {
                for v in *first..first + 3 {
                    tx.send(Message::Records(vec![StreamRecord::new(v)]))
                        .expect("send");
                }
            }
            gate
        };
        assert_eq!(
            records_read(&mut channels([Some(100), Some(10)])),
            [10, 11, 12, 100, 101, 102]
        );
        assert_eq!(
            records_read(&mut channels([Some(5), Some(10)])),
            [100, 101, 102, 10, 11, 12]
        );
        for watermarks in [[None, Some(10)], [Some(10), Some(10)]] {
            assert_eq!(
                records_read(&mut channels(watermarks)),
                [100, 10, 101, 11, 102, 12],
                "{watermarks:?}"
            );
        }
    }

    #[test]
    fn an_aligned_barrier_holds_its_channel_and_reports_how_long_it_waited() {
        let (tx0, rx0) = crossbeam_channel::unbounded();
        let (tx1, rx1) = crossbeam_channel::unbounded();
        let mut gate = InputGate::with_alignment(vec![rx0, rx1], true);
        tx0.send(barrier(7)).expect("send");
        tx0.send(Message::Records(vec![StreamRecord::new(1)]))
            .expect("send");
        assert!(matches!(gate.poll(), Ok(None)), "waits for channel 1");
        // Channel 0 is held: its record stays behind the barrier.
        assert!(matches!(gate.poll(), Ok(None)));
        std::thread::sleep(Duration::from_millis(20));
        tx1.send(barrier(7)).expect("send");
        match gate.poll() {
            Ok(Some(GateEvent::Barrier(b))) => {
                assert_eq!(b.checkpoint_id, 7);
                assert!(
                    b.alignment >= Duration::from_millis(20),
                    "{:?}",
                    b.alignment
                );
            }
            _ => panic!("the barrier is released once both channels delivered it"),
        }
        assert!(matches!(gate.poll(), Ok(Some(GateEvent::Records(_)))));
    }

    /// The producer's wake, its channel's first message, is not a record
    /// or event; the gate keeps it and wakes the producer through it once
    /// the channel is half drained.
    #[test]
    fn a_gate_wakes_its_waiting_producer_through_the_wake_it_was_handed() {
        let (tx, rx) = crossbeam_channel::bounded(4);
        let wake = Arc::new(DrainWake::default());
        tx.try_send(Message::Wake(Arc::clone(&wake))).expect("room");
        for i in 0..3 {
            tx.try_send(Message::Records(vec![StreamRecord::new(i)]))
                .expect("room");
        }
        let producer = {
            let wake = Arc::clone(&wake);
            std::thread::spawn(move || {
                wake.wait(&tx, || false);
                tx.len()
            })
        };
        while !wake.is_waiting() {
            std::thread::yield_now();
        }
        let mut gate = InputGate::new(vec![rx]);
        let mut taken = Vec::new();
        while taken.len() < 3 {
            match gate.poll() {
                Ok(Some(GateEvent::Records(batch))) => {
                    taken.extend(batch.into_iter().map(|r| r.value))
                }
                Ok(Some(other)) => panic!("{other:?}"),
                Ok(None) => {}
                Err(e) => panic!("{e}"),
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        assert_eq!(taken, [0, 1, 2]);
        assert!(producer.join().expect("the producer") <= 2);
        assert_eq!(wake.woken.load(std::sync::atomic::Ordering::SeqCst), 1);
    }
}
