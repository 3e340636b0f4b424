//! User functions: the traits a job's code implements.
//!
//! Each trait mirrors a Flink interface (`MapFunction`, `ProcessFunction`, …)
//! and carries `open`/`close` with a [`RuntimeContext`], as Flink's rich
//! functions do. Closures implement the one-method traits directly, so
//! `stream.map(|x| x * 2)` and `stream.map(MyRichMapper::default())` both work.
//!
//! Every parallel subtask runs its own clone of the function, so functions
//! are `Clone`, and a function's fields are its private per-subtask state.

mod broadcast;
mod bundle;
mod collector;
mod process;
mod sink;

pub(crate) use broadcast::BroadcastStates;
pub use broadcast::{
    BroadcastContext, BroadcastProcessFunction, KeyedBroadcastProcessFunction, ReadOnlyContext,
};
pub use bundle::{KeyedBundleFunction, Upcoming};
pub use collector::Collector;
pub(crate) use process::KeyedTimers;
pub use process::{
    CoProcessFunction, KeyedProcessFunction, OutputTag, ProcessContext, ProcessFunction,
    TimeDomain, TimerService,
};
pub(crate) use sink::short_type_name;
pub use sink::{SinkContext, SinkFunction};
pub use weir_runtime::error::{FunctionError, FunctionResult};
pub use weir_runtime::operator::RuntimeContext;
pub use weir_runtime::task::{SourceContext, SourceFunction, SourceStatus};

/// One record in, one record out (Flink's `MapFunction`).
pub trait MapFunction<I, O>: Send + 'static {
    /// Called once per subtask before the first record.
    fn open(&mut self, _ctx: &RuntimeContext) -> FunctionResult {
        Ok(())
    }
    /// Transforms one record.
    fn map(&mut self, value: I) -> O;
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

impl<I, O, F: FnMut(I) -> O + Send + 'static> MapFunction<I, O> for F {
    #[inline]
    fn map(&mut self, value: I) -> O {
        self(value)
    }
}

/// Keeps the records for which it returns `true` (Flink's `FilterFunction`).
pub trait FilterFunction<T>: Send + 'static {
    /// Called once per subtask before the first record.
    fn open(&mut self, _ctx: &RuntimeContext) -> FunctionResult {
        Ok(())
    }
    /// Whether to keep `value`.
    fn filter(&mut self, value: &T) -> bool;
    /// A checkpoint barrier passed (see [`MapFunction::snapshot_state`]).
    fn snapshot_state(&mut self, _checkpoint_id: u64) -> FunctionResult {
        Ok(())
    }
    /// Checkpoint `checkpoint_id` completed (Flink's `CheckpointListener`).
    fn notify_checkpoint_complete(&mut self, _checkpoint_id: u64) -> FunctionResult {
        Ok(())
    }
    /// Checkpoint `checkpoint_id` was aborted.
    fn notify_checkpoint_aborted(&mut self, _checkpoint_id: u64) -> FunctionResult {
        Ok(())
    }
    /// Called once per subtask after the last record.
    fn close(&mut self) -> FunctionResult {
        Ok(())
    }
}

impl<T, F: FnMut(&T) -> bool + Send + 'static> FilterFunction<T> for F {
    #[inline]
    fn filter(&mut self, value: &T) -> bool {
        self(value)
    }
}

/// One record in, any number out (Flink's `FlatMapFunction`).
pub trait FlatMapFunction<I, O>: Send + 'static {
    /// Called once per subtask before the first record.
    fn open(&mut self, _ctx: &RuntimeContext) -> FunctionResult {
        Ok(())
    }
    /// Emits the records `value` turns into.
    fn flat_map(&mut self, value: I, out: &mut Collector<'_, O>);
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

impl<I, O, F: FnMut(I, &mut Collector<'_, O>) + Send + 'static> FlatMapFunction<I, O> for F {
    #[inline]
    fn flat_map(&mut self, value: I, out: &mut Collector<'_, O>) {
        self(value, out)
    }
}

/// Combines two values of a key into one (Flink's `ReduceFunction`). The
/// first argument is the value so far, the second the new record.
pub trait ReduceFunction<T>: Send + 'static {
    /// Combines `accumulated` with `value`.
    fn reduce(&mut self, accumulated: T, value: T) -> T;
}

impl<T, F: FnMut(T, T) -> T + Send + 'static> ReduceFunction<T> for F {
    #[inline]
    fn reduce(&mut self, accumulated: T, value: T) -> T {
        self(accumulated, value)
    }
}
