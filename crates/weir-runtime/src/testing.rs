//! Test harness: drive an operator directly, without threads, and see what
//! it emits (records and control elements, in order).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::element::{Control, StreamRecord};
use crate::error::TaskError;
use crate::metrics::OperatorMetrics;
use crate::operator::{Downstream, Output, SideOutputs};

/// What reached the end of a harness, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Emitted<T> {
    /// A record.
    Record(StreamRecord<T>),
    /// A control element.
    Control(Control),
}

/// A downstream hop that remembers everything it receives.
pub struct Collecting<T> {
    seen: Arc<Mutex<Vec<Emitted<T>>>>,
    largest: Arc<AtomicUsize>,
}

impl<T: Send> Downstream<T> for Collecting<T> {
    fn push_batch(&mut self, batch: &mut Vec<StreamRecord<T>>) -> Result<(), TaskError> {
        self.largest.fetch_max(batch.len(), Ordering::Relaxed);
        let mut seen = self
            .seen
            .lock()
            .map_err(|_| TaskError::Internal("harness poisoned".into()))?;
        seen.extend(batch.drain(..).map(Emitted::Record));
        Ok(())
    }

    fn push_control(&mut self, control: Control) -> Result<(), TaskError> {
        let mut seen = self
            .seen
            .lock()
            .map_err(|_| TaskError::Internal("harness poisoned".into()))?;
        seen.push(Emitted::Control(control));
        Ok(())
    }
}

/// An [`Output`] whose emissions can be inspected.
pub struct HarnessOutput<T> {
    /// Give this to the operator.
    pub output: Output<T>,
    seen: Arc<Mutex<Vec<Emitted<T>>>>,
    largest: Arc<AtomicUsize>,
}

impl<T: Send + 'static> HarnessOutput<T> {
    /// A fresh output with no side outputs.
    pub fn new() -> Self {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let largest = Arc::new(AtomicUsize::new(0));
        let next = Box::new(Collecting {
            seen: Arc::clone(&seen),
            largest: Arc::clone(&largest),
        });
        HarnessOutput {
            output: Output::new(
                next,
                SideOutputs::default(),
                Arc::new(OperatorMetrics::default()),
            ),
            seen,
            largest,
        }
    }

    /// The most records the operator handed on at once.
    pub fn largest_batch(&self) -> usize {
        self.largest.load(Ordering::Relaxed)
    }

    /// Everything emitted so far (flushing the operator's buffer first),
    /// and forgets it.
    pub fn take(&mut self) -> Vec<Emitted<T>> {
        // A failed flush can only be a poisoned harness lock; nothing to add.
        let _ = self.output.flush();
        match self.seen.lock() {
            Ok(mut seen) => std::mem::take(&mut *seen),
            Err(_) => Vec::new(),
        }
    }

    /// The values of the records emitted so far, and forgets everything.
    pub fn take_values(&mut self) -> Vec<T> {
        self.take()
            .into_iter()
            .filter_map(|e| match e {
                Emitted::Record(r) => Some(r.value),
                Emitted::Control(_) => None,
            })
            .collect()
    }
}

impl<T: Send + 'static> Default for HarnessOutput<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// A runtime context for driving one operator directly: subtask 0 of 1,
/// 128 key groups, heap state, a manual clock at 0, no checkpoints.
pub fn runtime_context(operator_name: &str) -> crate::operator::RuntimeContext {
    crate::operator::RuntimeContext {
        job_id: "0".repeat(32),
        restored_checkpoint: None,
        operator_name: operator_name.into(),
        task_name: operator_name.into(),
        heads_task: true,
        subtask_index: 0,
        parallelism: 1,
        max_parallelism: 128,
        attempt_number: 0,
        clock: Arc::new(weir_state::ManualClock::new(0)),
        auto_watermark_interval: std::time::Duration::ZERO,
        metrics: Arc::new(OperatorMetrics::default()),
        keyed_state: None,
        state_backend: weir_state::StateBackend::heap(),
        operator_state: weir_state::OperatorStateStore::new(),
        subtask_state: Default::default(),
        checkpoint: None,
        probe: Arc::default(),
    }
}
