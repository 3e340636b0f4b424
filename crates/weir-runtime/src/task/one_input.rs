//! The head of a task whose first operator has one input.

use super::{
    await_final_checkpoint, deliver_notices, wait_for_input, FlushTimer, GateEvent, InputGate,
    ProcessingTime, TaskHead, TaskSettings,
};
use crate::element::Control;
use crate::error::TaskError;
use crate::operator::Downstream;

/// Reads one input gate into a chain.
pub struct OneInputHead<T> {
    gate: InputGate<T>,
    chain: Box<dyn Downstream<T>>,
    settings: TaskSettings,
}

impl<T: Send + 'static> OneInputHead<T> {
    /// A head reading `gate` into `chain`.
    pub fn new(gate: InputGate<T>, chain: Box<dyn Downstream<T>>, settings: TaskSettings) -> Self {
        OneInputHead {
            gate,
            chain,
            settings,
        }
    }
}

impl<T: Send + 'static> TaskHead for OneInputHead<T> {
    fn run(mut self: Box<Self>, opened: &dyn Fn()) -> Result<(), TaskError> {
        let OneInputHead {
            gate,
            chain,
            settings,
        } = &mut *self;
        chain.open()?;
        opened();
        let mut flush = FlushTimer::new(settings.buffer_timeout);
        let mut time = ProcessingTime::new(settings.clock.clone());
        loop {
            if settings.cancel.is_cancelled() {
                return Err(TaskError::Cancelled);
            }
            let event = match gate.poll() {
                Ok(event) => event,
                Err(e) => {
                    // An upstream task ended without ending its stream: it
                    // failed, or stopped after a savepoint, whose notices
                    // may still be waiting here (sinks commit on them).
                    if deliver_notices(settings, &mut **chain)? {
                        return chain.close();
                    }
                    return Err(e);
                }
            };
            match event {
                Some(GateEvent::Records(mut batch)) => chain.push_batch(&mut batch)?,
                Some(GateEvent::Watermark(wm)) => chain.push_control(Control::Watermark(wm))?,
                Some(GateEvent::Status(status)) => {
                    chain.push_control(Control::WatermarkStatus(status))?
                }
                Some(GateEvent::Barrier(barrier)) => {
                    chain.push_control(Control::Barrier(barrier))?
                }
                Some(GateEvent::Finished) => break,
                None => {
                    let limit = time.wait_limit(flush.wait_limit());
                    wait_for_input(&[&*gate], settings, limit)?
                }
            }
            time.tick(chain)?;
            if deliver_notices(settings, &mut **chain)? {
                // Stopped after a savepoint: no end of input.
                return chain.close();
            }
            if flush.due() {
                chain.flush_buffers()?;
            }
        }
        chain.push_control(Control::EndOfInput)?;
        await_final_checkpoint(settings, |notice| chain.notify_checkpoint(notice))?;
        chain.close()
    }
}
