//! Tasks: one thread per parallel instance of a chain.
//!
//! A task's head reads its inputs — a source function, or the input gates of
//! one or two inputs — and pushes what it reads into the chain. Everything a
//! task does happens on its one thread: records, watermarks, barriers, the
//! buffer-timeout flush and cancellation, so user functions and their state
//! are never touched concurrently.

mod input_gate;
mod one_input;
mod source;
mod two_input;
mod valve;

pub use input_gate::{GateEvent, InputGate};
pub use one_input::OneInputHead;
pub use source::{SourceContext, SourceFunction, SourceHead, SourceStatus};
pub use two_input::TwoInputHead;
pub use valve::{ValveOutput, WatermarkValve};

use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Select};

use crate::cancel::CancelToken;
use crate::checkpoint::{CheckpointNotice, TaskMessage};
use crate::error::TaskError;
use crate::operator::{Downstream, Output};
use crate::time::SharedClock;

/// The longest a task blocks before looking at its timers again.
const MAX_WAIT: Duration = Duration::from_millis(50);

/// The loop of one task subtask, run on its own thread.
pub trait TaskHead: Send {
    /// Runs until the input ends (`Ok`), the job is cancelled or something
    /// fails; calls `opened` once its operators opened (Flink's task
    /// switching from INITIALIZING to RUNNING).
    fn run(self: Box<Self>, opened: &dyn Fn()) -> Result<(), TaskError>;
}

/// Settings every task of a job shares.
#[derive(Debug, Clone)]
pub struct TaskSettings {
    /// Records per batch sent over a channel.
    pub batch_size: usize,
    /// How long a partially filled batch may wait before it is sent: `None`
    /// waits until full (Flink's `-1`), zero sends after every input batch.
    pub buffer_timeout: Option<Duration>,
    /// Cancellation of the job.
    pub cancel: CancelToken,
    /// The job's processing-time clock.
    pub clock: SharedClock,
    /// Messages from the checkpoint coordinator (with checkpointing on).
    pub mailbox: Option<Receiver<TaskMessage>>,
    /// Whether input gates align barriers (exactly-once checkpoints).
    pub aligned: bool,
    /// Where the task's waiting time is counted.
    pub times: std::sync::Arc<crate::metrics::TaskTimes>,
    /// Where the task shows its inputs' watermarks.
    pub probe: std::sync::Arc<crate::provenance::SubtaskProbe>,
}

impl TaskSettings {
    /// The next message in the task's mailbox, if any.
    fn next_message(&self) -> Option<TaskMessage> {
        self.mailbox.as_ref().and_then(|m| m.try_recv().ok())
    }
}

/// After the task's input ended and its operators reported their final
/// state: waits until the coordinator took the job's final checkpoint
/// (handing `notify` the notices on the way), so that two-phase-commit
/// sinks commit the last results before they close. Without
/// checkpointing there is nothing to wait for.
fn await_final_checkpoint(
    settings: &TaskSettings,
    mut notify: impl FnMut(CheckpointNotice) -> Result<(), TaskError>,
) -> Result<(), TaskError> {
    let Some(mailbox) = &settings.mailbox else {
        return Ok(());
    };
    loop {
        let mut select = Select::new();
        let mail = select.recv(mailbox);
        select.recv(settings.cancel.receiver());
        let op = select.select();
        if op.index() != mail {
            // Cancelled (the token's channel only ever disconnects).
            let _ = op.recv(settings.cancel.receiver());
            return Err(TaskError::Cancelled);
        }
        match op.recv(mailbox) {
            Ok(TaskMessage::Complete(id)) => notify(CheckpointNotice::Complete(id))?,
            Ok(TaskMessage::Aborted(id)) => notify(CheckpointNotice::Aborted(id))?,
            Ok(TaskMessage::Trigger(_) | TaskMessage::TriggerStop { .. }) => {}
            Ok(TaskMessage::Final(_) | TaskMessage::Terminate) | Err(_) => return Ok(()),
        }
    }
}

/// Hands the checkpoint notices waiting in the mailbox to `chain`;
/// `true` when the task is to end now (stop with savepoint).
fn deliver_notices<T>(
    settings: &TaskSettings,
    chain: &mut dyn Downstream<T>,
) -> Result<bool, TaskError> {
    while let Some(message) = settings.next_message() {
        match message {
            TaskMessage::Complete(id) => chain.notify_checkpoint(CheckpointNotice::Complete(id))?,
            TaskMessage::Aborted(id) => chain.notify_checkpoint(CheckpointNotice::Aborted(id))?,
            TaskMessage::Terminate => return Ok(true),
            // Only sources are triggered; `Final` comes after the input
            // ended, when the task waits for it.
            TaskMessage::Trigger(_) | TaskMessage::TriggerStop { .. } | TaskMessage::Final(_) => {}
        }
    }
    Ok(false)
}

/// When to next hand processing time to the chain: the earliest deadline
/// anything in it asked for.
struct ProcessingTime {
    clock: SharedClock,
    deadline: Option<i64>,
}

impl ProcessingTime {
    fn new(clock: SharedClock) -> Self {
        ProcessingTime {
            clock,
            deadline: None,
        }
    }

    /// Fires what is due in `target`, then re-reads the deadline.
    fn tick(&mut self, target: &mut impl TimeDriven) -> Result<(), TaskError> {
        self.deadline = target.deadline();
        if let Some(d) = self.deadline {
            let now = self.clock.now_ms();
            if now >= d {
                target.advance(now)?;
                self.deadline = target.deadline();
            }
        }
        Ok(())
    }

    /// How long the task may block before the next deadline.
    fn wait_limit(&self, other: Duration) -> Duration {
        match self.deadline {
            Some(d) => {
                let ms = (d - self.clock.now_ms()).clamp(0, i64::MAX) as u64;
                other.min(Duration::from_millis(ms))
            }
            None => other,
        }
    }
}

/// When to send partially filled output buffers.
struct FlushTimer {
    interval: Option<Duration>,
    next: Instant,
}

impl FlushTimer {
    fn new(interval: Option<Duration>) -> Self {
        FlushTimer {
            interval,
            next: Instant::now() + interval.unwrap_or(MAX_WAIT),
        }
    }

    /// Whether a flush is due now; if so, schedules the next one.
    fn due(&mut self) -> bool {
        match self.interval {
            None => false,
            Some(d) if d.is_zero() => true,
            Some(d) => {
                let now = Instant::now();
                if now >= self.next {
                    self.next = now + d;
                    true
                } else {
                    false
                }
            }
        }
    }

    /// How long the task may block waiting for input.
    fn wait_limit(&self) -> Duration {
        match self.interval {
            None => MAX_WAIT,
            Some(_) => self
                .next
                .saturating_duration_since(Instant::now())
                .min(MAX_WAIT),
        }
    }
}

/// Something that takes processing time: a chain, an output.
trait TimeDriven {
    fn deadline(&self) -> Option<i64>;
    fn advance(&mut self, now: i64) -> Result<(), TaskError>;
}

impl<T> TimeDriven for Box<dyn Downstream<T>> {
    fn deadline(&self) -> Option<i64> {
        self.processing_deadline()
    }
    fn advance(&mut self, now: i64) -> Result<(), TaskError> {
        self.advance_processing_time(now)
    }
}

impl<T: Send + 'static> TimeDriven for Output<T> {
    fn deadline(&self) -> Option<i64> {
        self.processing_deadline()
    }
    fn advance(&mut self, now: i64) -> Result<(), TaskError> {
        self.advance_processing_time(now)
    }
}

/// Something a task can block on.
trait Waitable {
    fn register<'a>(&'a self, select: &mut Select<'a>) -> usize;
}

impl<T> Waitable for InputGate<T> {
    fn register<'a>(&'a self, select: &mut Select<'a>) -> usize {
        InputGate::register(self, select)
    }
}

/// Blocks until an input has something, the job is cancelled, or `timeout`.
fn wait_for_input(
    inputs: &[&dyn Waitable],
    settings: &TaskSettings,
    timeout: Duration,
) -> Result<(), TaskError> {
    let cancel = &settings.cancel;
    let mut select = Select::new();
    for input in inputs {
        input.register(&mut select);
    }
    select.recv(cancel.receiver());
    let waited = std::time::Instant::now();
    let _ = select.ready_timeout(timeout);
    settings.times.add_idle(waited.elapsed());
    if cancel.is_cancelled() {
        return Err(TaskError::Cancelled);
    }
    Ok(())
}
