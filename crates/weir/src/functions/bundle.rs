//! Bundle functions: a keyed stream processed a bundle at a time, each
//! bundle the records of one key that arrived together.

use weir_runtime::operator::RuntimeContext;
use weir_runtime::FunctionResult;
use weir_state::{StateValue, ValueState};

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

    /// Called, when keyed state is big enough for its misses in the
    /// caches to matter, before each key of a bundle is processed: once
    /// for each of the next few keys (`upcoming.distance()` of them ahead,
    /// from [`Upcoming::FARTHEST`] down to 1), so that each key is seen at
    /// each distance once. The function may start loading what a later
    /// key's processing will read, one level of pointers per distance:
    /// what its state value points to, then what that points to. A hint:
    /// what it sees must not change what the function does.
    fn look_ahead(&self, _upcoming: &Upcoming<'_, I>) -> FunctionResult {
        Ok(())
    }

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

/// A key of the bundle being processed, some keys after the one about to
/// be (see [`KeyedBundleFunction::look_ahead`]).
pub struct Upcoming<'a, I> {
    pub(crate) index: usize,
    pub(crate) distance: usize,
    pub(crate) records: &'a [I],
}

impl<I> Upcoming<'_, I> {
    /// The most keys ahead a key is looked at.
    pub const FARTHEST: usize = 6;

    /// How many keys ahead of the one about to be processed this is.
    pub fn distance(&self) -> usize {
        self.distance
    }

    /// The key's records of the bundle, in arrival order.
    pub fn records(&self) -> &[I] {
        self.records
    }

    /// Calls `f` with the value `state` holds for this key, if it is held
    /// in memory (see [`ValueState::peek_prepared`]).
    #[inline]
    pub fn peek<T: StateValue>(&self, state: &ValueState<T>, f: impl FnOnce(&T)) -> FunctionResult {
        state.peek_prepared(self.index, f)?;
        Ok(())
    }
}
