//! Sink functions: where records leave the job.

use weir_runtime::element::{StreamRecord, NO_TIMESTAMP};

use super::{FunctionResult, RuntimeContext};

/// What a sink may ask about the record it writes.
#[derive(Debug, Clone, Copy)]
pub struct SinkContext {
    timestamp: i64,
    watermark: i64,
}

impl SinkContext {
    /// A context for one record (what the runtime passes; public for
    /// tests that drive a sink directly).
    pub fn new(timestamp: i64, watermark: i64) -> Self {
        SinkContext {
            timestamp,
            watermark,
        }
    }

    /// The record's event timestamp, if it has one.
    pub fn timestamp(&self) -> Option<i64> {
        (self.timestamp != NO_TIMESTAMP).then_some(self.timestamp)
    }

    /// The sink's current watermark.
    pub fn current_watermark(&self) -> i64 {
        self.watermark
    }
}

/// The name of type `S` without its path and type parameters
/// (`weir::sink::CollectSink<u64>` → `CollectSink`).
pub(crate) fn short_type_name<S: ?Sized>() -> String {
    let full = std::any::type_name::<S>();
    let plain = full.split('<').next().unwrap_or(full);
    plain.rsplit("::").next().unwrap_or(plain).to_string()
}

/// Writes records out of the job (Flink's `SinkFunction`).
pub trait SinkFunction<T>: Send + 'static {
    /// The sink's name in the job graph, in errors and in the REST API
    /// when the program gives it none (`add_sink` without `.name(..)`):
    /// the kind of sink it is, by default its type's name.
    fn default_name(&self) -> String {
        short_type_name::<Self>()
    }

    /// Called once per subtask before the first record.
    fn open(&mut self, _ctx: &RuntimeContext) -> FunctionResult {
        Ok(())
    }

    /// Writes one record.
    fn invoke(&mut self, value: T, ctx: &SinkContext) -> FunctionResult;

    /// Writes a batch; override to write a batch at once (one lock, one
    /// syscall). `watermark` is the sink's current watermark.
    fn invoke_batch(&mut self, batch: &mut Vec<StreamRecord<T>>, watermark: i64) -> FunctionResult {
        for record in batch.drain(..) {
            let ctx = SinkContext::new(record.timestamp, watermark);
            self.invoke(record.value, &ctx)?;
        }
        Ok(())
    }

    /// A new watermark reached the sink (Flink's `writeWatermark`).
    fn write_watermark(&mut self, _watermark: i64) -> FunctionResult {
        Ok(())
    }

    /// Called at the end of input, before `close`: write out what is buffered.
    fn finish(&mut self) -> FunctionResult {
        Ok(())
    }

    /// A checkpoint barrier passed: move what the function keeps in its
    /// own fields into its operator or keyed state (Flink's
    /// `CheckpointedFunction::snapshotState`). State declared in `open`
    /// is restored before `open` runs; `ctx.is_restored()` tells.
    fn snapshot_state(&mut self, _checkpoint_id: u64) -> FunctionResult {
        Ok(())
    }
    /// Checkpoint `checkpoint_id` completed (Flink's `CheckpointListener`).
    fn notify_checkpoint_complete(&mut self, _checkpoint_id: u64) -> FunctionResult {
        Ok(())
    }
    /// Checkpoint `checkpoint_id` was aborted (Flink's
    /// `CheckpointListener::notifyCheckpointAborted`).
    fn notify_checkpoint_aborted(&mut self, _checkpoint_id: u64) -> FunctionResult {
        Ok(())
    }
    /// Called once per subtask after the last record.
    fn close(&mut self) -> FunctionResult {
        Ok(())
    }
}

impl<T, F: FnMut(T) -> FunctionResult + Send + 'static> SinkFunction<T> for F {
    fn invoke(&mut self, value: T, _ctx: &SinkContext) -> FunctionResult {
        self(value)
    }
}
