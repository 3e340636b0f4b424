//! Exactly-once into systems without transactions, by a write-ahead log
//! (Flink's `GenericWriteAheadSink`): records are kept in the sink's state
//! until the checkpoint after them completes, then written. A failure after
//! the checkpoint completed but before the write finished writes them
//! again on the next completion, so the writer must be idempotent (e.g.
//! upserts keyed by a deterministic id: the checkpoint id, subtask and
//! position, or a key of the record itself).

use weir_runtime::checkpoint::FINAL_SNAPSHOT;
use weir_state::{ListStateDescriptor, OperatorListState, StateValue};

use crate::functions::{FunctionResult, RuntimeContext, SinkContext, SinkFunction};

/// Where a [`WriteAheadSink`] writes.
///
/// By implementing this trait, you promise that writing the same
/// `(checkpoint_id, subtask, values)` twice leaves the system as writing it
/// once.
pub trait WriteAheadWriter<T>: Send + 'static {
    /// Called once per subtask, before anything else.
    fn open(&mut self, _ctx: &RuntimeContext) -> FunctionResult {
        Ok(())
    }
    /// Writes the records that arrived before checkpoint `checkpoint_id`,
    /// in order. The records after the last checkpoint of a subtask whose
    /// input ended come with `FINAL_SNAPSHOT` (`u64::MAX`); at the end of a
    /// job without checkpoints, with 0.
    fn send_values(&mut self, values: &[T], checkpoint_id: u64) -> FunctionResult;
    /// Called once per subtask at the end.
    fn close(&mut self) -> FunctionResult {
        Ok(())
    }
}

/// A sink that writes through a [`WriteAheadWriter`] once each checkpoint
/// completes.
pub struct WriteAheadSink<W, T> {
    writer: W,
    buffer: Vec<T>,
    pending: Vec<(u64, Vec<T>)>,
    state: Option<OperatorListState<(u64, Vec<T>)>>,
    checkpointing: bool,
}

impl<W: Clone, T> Clone for WriteAheadSink<W, T> {
    fn clone(&self) -> Self {
        WriteAheadSink::new(self.writer.clone())
    }
}

impl<W, T> WriteAheadSink<W, T> {
    /// A sink writing through `writer`.
    pub fn new(writer: W) -> Self {
        WriteAheadSink {
            writer,
            buffer: Vec::new(),
            pending: Vec::new(),
            state: None,
            checkpointing: false,
        }
    }
}

impl<W: WriteAheadWriter<T>, T: StateValue> SinkFunction<T> for WriteAheadSink<W, T> {
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.writer.open(ctx)?;
        self.checkpointing = ctx.is_checkpointing();
        let state = ctx
            .operator_state
            .get_list_state(&ListStateDescriptor::new("\u{1}weir/write-ahead-log"))?;
        // Batches of a restored checkpoint may or may not have been
        // written: they are written (again) on the next completion.
        self.pending = state.get()?;
        self.state = Some(state);
        Ok(())
    }

    fn invoke(&mut self, value: T, _ctx: &SinkContext) -> FunctionResult {
        self.buffer.push(value);
        Ok(())
    }

    fn snapshot_state(&mut self, checkpoint_id: u64) -> FunctionResult {
        if !self.buffer.is_empty() {
            self.pending
                .push((checkpoint_id, std::mem::take(&mut self.buffer)));
        }
        if let Some(state) = &self.state {
            state.update(self.pending.clone())?;
        }
        Ok(())
    }

    fn notify_checkpoint_complete(&mut self, checkpoint_id: u64) -> FunctionResult {
        let (done, keep): (Vec<_>, Vec<_>) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|(id, _)| *id <= checkpoint_id || *id == FINAL_SNAPSHOT);
        self.pending = keep;
        for (id, values) in done {
            self.writer.send_values(&values, id)?;
        }
        Ok(())
    }

    fn finish(&mut self) -> FunctionResult {
        if !self.checkpointing && !self.buffer.is_empty() {
            let values = std::mem::take(&mut self.buffer);
            self.writer.send_values(&values, 0)?;
        }
        Ok(())
    }

    fn close(&mut self) -> FunctionResult {
        self.writer.close()
    }
}
