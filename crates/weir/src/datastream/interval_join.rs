//! Interval joins of two keyed streams (Flink's `KeyedStream.intervalJoin`):
//! a record `a` of the first stream meets every record `b` of the second
//! with the same key and `a.ts + lower <= b.ts <= a.ts + upper`.

use std::sync::Arc;

use weir_runtime::graph::NodeFactory;

use super::{ConnectedStreams, DataStream, Key, KeyedStream};
use crate::functions::{Collector, FunctionResult};
use crate::operators::IntervalJoinOperator;

/// The timestamps of a joined pair (Flink's `ProcessJoinFunction.Context`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessJoinContext {
    /// Timestamp of the first stream's record.
    pub left_timestamp: i64,
    /// Timestamp of the second stream's record.
    pub right_timestamp: i64,
}

impl ProcessJoinContext {
    /// The result's timestamp: the later of the two.
    pub fn timestamp(&self) -> i64 {
        self.left_timestamp.max(self.right_timestamp)
    }
}

/// `a.interval_join(b)`: set the bounds next.
pub struct IntervalJoin<A, B, K> {
    left: KeyedStream<A, K>,
    right: KeyedStream<B, K>,
}

/// `a.interval_join(b).between(lower, upper)`.
pub struct IntervalJoined<A, B, K> {
    join: IntervalJoin<A, B, K>,
    lower_ms: i64,
    upper_ms: i64,
    lower_exclusive: bool,
    upper_exclusive: bool,
}

impl<A: Clone + Send + 'static, K: Key> KeyedStream<A, K>
where
    A: serde::Serialize + serde::de::DeserializeOwned,
{
    /// Joins with `other` by key within a time interval around each record.
    pub fn interval_join<
        B: Clone + Send + serde::Serialize + serde::de::DeserializeOwned + 'static,
    >(
        &self,
        other: &KeyedStream<B, K>,
    ) -> IntervalJoin<A, B, K> {
        IntervalJoin {
            left: self.clone(),
            right: other.clone(),
        }
    }
}

impl<A, B, K: Key> IntervalJoin<A, B, K>
where
    A: Clone + Send + serde::Serialize + serde::de::DeserializeOwned + 'static,
    B: Clone + Send + serde::Serialize + serde::de::DeserializeOwned + 'static,
{
    /// Joins `a` with every `b` where `a.ts + lower_ms <= b.ts <= a.ts + upper_ms`
    /// (bounds in ms, may be negative; `lower_ms <= upper_ms`).
    pub fn between(self, lower_ms: i64, upper_ms: i64) -> IntervalJoined<A, B, K> {
        IntervalJoined {
            join: self,
            lower_ms,
            upper_ms,
            lower_exclusive: false,
            upper_exclusive: false,
        }
    }
}

impl<A, B, K: Key> IntervalJoined<A, B, K>
where
    A: Clone + Send + serde::Serialize + serde::de::DeserializeOwned + 'static,
    B: Clone + Send + serde::Serialize + serde::de::DeserializeOwned + 'static,
{
    /// Excludes `b.ts == a.ts + lower`.
    pub fn lower_bound_exclusive(mut self) -> Self {
        self.lower_exclusive = true;
        self
    }

    /// Excludes `b.ts == a.ts + upper`.
    pub fn upper_bound_exclusive(mut self) -> Self {
        self.upper_exclusive = true;
        self
    }

    /// Calls `f(a, b, ctx, out)` for every joined pair (Flink's
    /// `ProcessJoinFunction`); results carry the later timestamp.
    pub fn process<O, F>(self, f: F) -> DataStream<O>
    where
        O: Clone + Send + 'static,
        F: FnMut(&A, &B, &ProcessJoinContext, &mut Collector<'_, O>) -> FunctionResult
            + Clone
            + Send
            + Sync
            + 'static,
    {
        let env = self.join.left.as_stream().env().clone();
        // As Flink: the bounds are checked as given; exclusive bounds may
        // then leave an empty range (`between(5, 5)` with one exclusive),
        // which joins nothing.
        if self.lower_ms > self.upper_ms {
            env.record_error(format!(
                "interval join: lower bound {} ms is above upper bound {} ms",
                self.lower_ms, self.upper_ms
            ));
        }
        let lower = self
            .lower_ms
            .saturating_add(i64::from(self.lower_exclusive));
        let upper = self
            .upper_ms
            .saturating_sub(i64::from(self.upper_exclusive));
        let (k1, k2) = (
            self.join.left.key_selector(),
            self.join.right.key_selector(),
        );
        let factory = NodeFactory::two_input(move |_| {
            IntervalJoinOperator::new(Arc::clone(&k1), Arc::clone(&k2), lower, upper, f.clone())
        });
        ConnectedStreams::new(
            self.join.left.as_stream().clone(),
            self.join.right.as_stream().clone(),
        )
        .add("Interval Join", factory)
    }
}
