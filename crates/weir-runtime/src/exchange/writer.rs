//! The writer at the end of a chain: partitions records into per-channel
//! batches and sends them, blocking (back-pressure) when a channel is full.

use std::sync::Arc;

use crossbeam_channel::{select, Sender, TrySendError};

use super::{DrainWake, Partitioner};
use crate::cancel::CancelToken;
use crate::element::{Control, Message, StreamRecord};
use crate::error::TaskError;
use crate::graph::WriterContext;
use crate::metrics::{OperatorMetrics, TaskTimes};
use crate::operator::Downstream;

/// Writes records to the channels of one edge, batching per channel.
///
/// A batch is sent when it holds `batch_size` records, when the task's buffer
/// timeout asks for a flush, and before any control element (which then goes
/// to every channel).
pub struct ChannelWriter<T, P> {
    targets: Vec<Sender<Message<T>>>,
    buffers: Vec<Vec<StreamRecord<T>>>,
    partitioner: P,
    batch_size: usize,
    cancel: CancelToken,
    metrics: Arc<OperatorMetrics>,
    times: Arc<TaskTimes>,
    /// Per channel, the wake its consumer was handed (`None` where the
    /// channel had no room for it: blocking as before).
    wakes: Vec<Option<Arc<DrainWake>>>,
}

impl<T: Clone + Send + 'static, P: Partitioner<T>> ChannelWriter<T, P> {
    /// A writer to `targets`, routing by `partitioner`, with `ctx`'s batch
    /// size. Blocked sends are counted in `ctx.metrics` (of the operator
    /// producing the records) and timed in `ctx.times` (of its task).
    pub fn new(targets: Vec<Sender<Message<T>>>, partitioner: P, ctx: &WriterContext) -> Self {
        let (cancel, metrics, times) = (
            ctx.cancel.clone(),
            Arc::clone(&ctx.metrics),
            Arc::clone(&ctx.times),
        );
        let batch_size = ctx.batch_size.max(1);
        let buffers = targets
            .iter()
            .map(|_| Vec::with_capacity(batch_size))
            .collect();
        // Each channel's first message: this producer's wake.
        let wakes = targets
            .iter()
            .map(|target| {
                let wake = Arc::new(DrainWake::default());
                target
                    .try_send(Message::Wake(Arc::clone(&wake)))
                    .is_ok()
                    .then_some(wake)
            })
            .collect();
        ChannelWriter {
            targets,
            buffers,
            partitioner,
            batch_size,
            cancel,
            metrics,
            times,
            wakes,
        }
    }

    fn send_buffer(&mut self, idx: usize) -> Result<(), TaskError> {
        let batch = std::mem::replace(&mut self.buffers[idx], Vec::with_capacity(self.batch_size));
        self.send(idx, Message::Records(batch))
    }

    fn send(&self, idx: usize, message: Message<T>) -> Result<(), TaskError> {
        let target = &self.targets[idx];
        match target.try_send(message) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(message)) => {
                self.metrics.add_blocked_send();
                let waited = std::time::Instant::now();
                // Half a channel drained, then one send; blocking on it at
                // once would be woken for every batch taken.
                let mut message = message;
                if let Some(wake) = &self.wakes[idx] {
                    wake.wait(target, || self.cancel.is_cancelled());
                    message = match target.try_send(message) {
                        Ok(()) => {
                            self.times.add_backpressured(waited.elapsed());
                            return Ok(());
                        }
                        Err(TrySendError::Disconnected(_)) => return Err(TaskError::Cancelled),
                        Err(TrySendError::Full(message)) => message,
                    };
                }
                let sent = select! {
                    send(target, message) -> sent => sent.map_err(|_| TaskError::Cancelled),
                    recv(self.cancel.receiver()) -> _ => Err(TaskError::Cancelled),
                };
                self.times.add_backpressured(waited.elapsed());
                sent
            }
            // The consumer is gone: it failed or was cancelled.
            Err(TrySendError::Disconnected(_)) => Err(TaskError::Cancelled),
        }
    }

    fn send_all_buffers(&mut self) -> Result<(), TaskError> {
        for idx in 0..self.targets.len() {
            if !self.buffers[idx].is_empty() {
                self.send_buffer(idx)?;
            }
        }
        Ok(())
    }
}

impl<T: Clone + Send + 'static, P: Partitioner<T>> Downstream<T> for ChannelWriter<T, P> {
    fn push_batch(&mut self, batch: &mut Vec<StreamRecord<T>>) -> Result<(), TaskError> {
        let n = self.targets.len();
        if P::BROADCAST {
            for idx in 0..n {
                self.buffers[idx].extend_from_slice(batch);
                if self.buffers[idx].len() >= self.batch_size {
                    self.send_buffer(idx)?;
                }
            }
            batch.clear();
        } else if n == 1 {
            let buffer = &mut self.buffers[0];
            if buffer.is_empty() && batch.len() >= self.batch_size {
                // Hand the whole batch over without copying.
                std::mem::swap(buffer, batch);
            } else {
                buffer.append(batch);
            }
            if self.buffers[0].len() >= self.batch_size {
                self.send_buffer(0)?;
            }
        } else {
            for record in batch.drain(..) {
                let idx = self.partitioner.select(&record.value, n);
                let buffer = &mut self.buffers[idx];
                buffer.push(record);
                if buffer.len() >= self.batch_size {
                    let full = std::mem::replace(buffer, Vec::with_capacity(self.batch_size));
                    self.send(idx, Message::Records(full))?;
                }
            }
        }
        Ok(())
    }

    fn push_control(&mut self, control: Control) -> Result<(), TaskError> {
        self.send_all_buffers()?;
        for idx in 0..self.targets.len() {
            self.send(idx, Message::Control(control))?;
        }
        if control == Control::EndOfInput {
            // Nothing follows the end: let receivers see the disconnect too.
            self.targets.clear();
            self.buffers.clear();
        }
        Ok(())
    }

    fn flush_buffers(&mut self) -> Result<(), TaskError> {
        self.send_all_buffers()
    }
}
