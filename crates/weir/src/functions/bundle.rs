//! Bundle functions: a keyed stream processed a bundle at a time, each
//! bundle the records of one key that arrived together.

use weir_runtime::operator::RuntimeContext;
use weir_runtime::FunctionResult;

use super::{Collector, ProcessContext};

/// Processes a keyed stream a bundle at a time (Flink's internal
/// `MapBundleFunction`, under its SQL mini-batch aggregations): the
/// records of a batch that arrived together are grouped by key, and each
/// key's records are handed over at once, in the order they arrived, with
/// keyed state pointing at that key. A function that folds a bundle into
/// one state access and one result does per key what a
/// [`KeyedProcessFunction`](super::KeyedProcessFunction) does per record.
///
/// A bundle holds records of one input batch only: no record waits for
/// later ones, no watermark or checkpoint barrier falls inside a bundle,
/// and nothing is held between bundles, so the function's state is whole
/// at every checkpoint.
pub trait KeyedBundleFunction<K, I, O>: Send + 'static {
    /// Called once per subtask before the first record.
    fn open(&mut self, _ctx: &RuntimeContext) -> FunctionResult {
        Ok(())
    }

    /// Processes `records`, one key's records of a bundle in arrival
    /// order (drained or not; the caller clears it).
    /// `ctx.get_current_key()` is their key and `ctx.timestamp()` the
    /// last one's timestamp.
    fn process_bundle(
        &mut self,
        records: &mut Vec<I>,
        ctx: &mut ProcessContext<'_, K>,
        out: &mut Collector<'_, O>,
    ) -> FunctionResult;

    /// A checkpoint barrier passed (see
    /// [`KeyedProcessFunction::snapshot_state`](super::KeyedProcessFunction::snapshot_state)).
    fn snapshot_state(&mut self, _checkpoint_id: u64) -> FunctionResult {
        Ok(())
    }

    /// Called once per subtask after the last record.
    fn close(&mut self) -> FunctionResult {
        Ok(())
    }
}
