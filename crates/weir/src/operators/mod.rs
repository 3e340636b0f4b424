//! Runtime operators that run user functions.
//!
//! Each operator adapts one kind of user function to the runtime's
//! [`Operator`](weir_runtime::operator::Operator) trait, looping over a batch
//! with the function called statically, so the compiler can inline it.

mod basic;
mod broadcast;
mod bundle;
mod co;
mod interval_join;
mod own_state;
mod process;
mod reduce;
mod sink;

pub(crate) use basic::{FilterOperator, FlatMapOperator, MapOperator};
pub(crate) use broadcast::{BroadcastOperator, KeyedBroadcastOperator};
pub(crate) use bundle::{BundleGatherOperator, Gathered, KeyedBundleOperator, Lists};
pub(crate) use co::{CoFlatMapOperator, CoMapOperator, CoProcessOperator};
pub(crate) use interval_join::IntervalJoinOperator;
pub(crate) use own_state::{OwnState, SavedWatermark};
pub(crate) use process::{KeyedProcessOperator, ProcessOperator};
pub(crate) use reduce::KeyedReduceOperator;
pub(crate) use sink::SinkOperator;

/// Extracts a key from a record: shared by the partitioner and the keyed
/// operators of one `KeyedStream`.
pub(crate) type KeySelector<T, K> = std::sync::Arc<dyn Fn(&T) -> K + Send + Sync>;
