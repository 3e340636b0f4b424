//! Window joins and co-groups of two streams (Flink's `JoinedStreams` and
//! `CoGroupedStreams`).
//!
//! As in Flink, both are a window over the union of the two streams tagged
//! by side and keyed by the join key: each firing co-groups the window's
//! records of each side, and a join emits the cross product of the two
//! groups (nothing when a side is empty: an inner join).

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;

use super::{DataStream, Key};
use crate::functions::Collector;
use crate::window::{Elements, Trigger, WindowAssigner};

/// A record of the first or second stream of a co-group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum TaggedUnion<A, B> {
    /// From the first stream.
    One(A),
    /// From the second stream.
    Two(B),
}

type KeyFn<T, K> = Arc<dyn Fn(&T) -> K + Send + Sync>;

/// Marks a window join: `apply` pairs records (Flink's `JoinFunction`).
pub struct Join;

/// Marks a co-group: `apply` gets both sides' groups (Flink's
/// `CoGroupFunction`).
pub struct CoGroup;

/// `a.join(b)` or `a.co_group(b)`: pick the keys next.
pub struct JoinedStreams<A, B, M = Join> {
    first: DataStream<A>,
    second: DataStream<B>,
    _mode: std::marker::PhantomData<M>,
}

/// `a.join(b).where_(key_a)`: the second key next.
pub struct JoinWhere<A, B, K, M> {
    streams: JoinedStreams<A, B, M>,
    key1: KeyFn<A, K>,
}

/// `…equal_to(key_b)`: the window next.
pub struct JoinEqualTo<A, B, K, M> {
    streams: JoinedStreams<A, B, M>,
    key1: KeyFn<A, K>,
    key2: KeyFn<B, K>,
}

type TriggerFactory<A, B, W> =
    Arc<dyn Fn() -> Box<dyn Trigger<TaggedUnion<A, B>, W>> + Send + Sync>;

/// `…window(assigner)`: optional trigger and lateness, then the function.
pub struct JoinWindow<A, B, K, W, Asg, M> {
    streams: JoinedStreams<A, B, M>,
    key1: KeyFn<A, K>,
    key2: KeyFn<B, K>,
    assigner: Asg,
    trigger: Option<TriggerFactory<A, B, W>>,
    allowed_lateness: Duration,
}

impl<A: Clone + Send + Serialize + DeserializeOwned + 'static> DataStream<A> {
    /// Joins with `other` on a key within windows (an inner join).
    pub fn join<B: Clone + Send + Serialize + DeserializeOwned + 'static>(
        &self,
        other: &DataStream<B>,
    ) -> JoinedStreams<A, B, Join> {
        JoinedStreams {
            first: self.clone(),
            second: other.clone(),
            _mode: std::marker::PhantomData,
        }
    }

    /// Co-groups with `other` on a key within windows: each window gives
    /// both sides' records of a key, either side possibly empty.
    pub fn co_group<B: Clone + Send + Serialize + DeserializeOwned + 'static>(
        &self,
        other: &DataStream<B>,
    ) -> JoinedStreams<A, B, CoGroup> {
        JoinedStreams {
            first: self.clone(),
            second: other.clone(),
            _mode: std::marker::PhantomData,
        }
    }
}

impl<
        A: Clone + Send + Serialize + DeserializeOwned + 'static,
        B: Clone + Send + Serialize + DeserializeOwned + 'static,
        M,
    > JoinedStreams<A, B, M>
{
    /// The key of the first stream (`where` is a Rust keyword).
    pub fn where_<K: Key, F: Fn(&A) -> K + Send + Sync + 'static>(
        self,
        key: F,
    ) -> JoinWhere<A, B, K, M> {
        JoinWhere {
            streams: self,
            key1: Arc::new(key),
        }
    }
}

impl<
        A: Clone + Send + Serialize + DeserializeOwned + 'static,
        B: Clone + Send + Serialize + DeserializeOwned + 'static,
        K: Key,
        M,
    > JoinWhere<A, B, K, M>
{
    /// The key of the second stream.
    pub fn equal_to<F: Fn(&B) -> K + Send + Sync + 'static>(
        self,
        key: F,
    ) -> JoinEqualTo<A, B, K, M> {
        JoinEqualTo {
            streams: self.streams,
            key1: self.key1,
            key2: Arc::new(key),
        }
    }
}

impl<
        A: Clone + Send + Serialize + DeserializeOwned + 'static,
        B: Clone + Send + Serialize + DeserializeOwned + 'static,
        K: Key,
        M,
    > JoinEqualTo<A, B, K, M>
{
    /// The windows within which records meet.
    pub fn window<Asg: WindowAssigner<TaggedUnion<A, B>>>(
        self,
        assigner: Asg,
    ) -> JoinWindow<A, B, K, Asg::W, Asg, M> {
        JoinWindow {
            streams: self.streams,
            key1: self.key1,
            key2: self.key2,
            assigner,
            trigger: None,
            allowed_lateness: Duration::ZERO,
        }
    }
}

impl<A, B, K, W, Asg, M> JoinWindow<A, B, K, W, Asg, M>
where
    A: Clone + Send + Serialize + DeserializeOwned + 'static,
    B: Clone + Send + Serialize + DeserializeOwned + 'static,
    K: Key,
    W: crate::window::Window,
    Asg: WindowAssigner<TaggedUnion<A, B>, W = W>,
{
    /// Replaces the window's default trigger.
    pub fn trigger<Tr: Trigger<TaggedUnion<A, B>, W> + Clone + Sync>(
        mut self,
        trigger: Tr,
    ) -> Self {
        self.trigger = Some(Arc::new(move || Box::new(trigger.clone())));
        self
    }

    /// Allowed lateness of the windows.
    pub fn allowed_lateness(mut self, lateness: Duration) -> Self {
        self.allowed_lateness = lateness;
        self
    }

    fn co_group_with<O, F>(self, f: F) -> DataStream<O>
    where
        O: Clone + Send + 'static,
        F: FnMut(&K, Vec<&A>, Vec<&B>, &mut Collector<'_, O>) + Clone + Send + Sync + 'static,
    {
        let (key1, key2) = (self.key1, self.key2);
        let tagged = self
            .streams
            .first
            .map(|a: A| TaggedUnion::<A, B>::One(a))
            .union(&[self.streams.second.map(|b: B| TaggedUnion::<A, B>::Two(b))]);
        let keyed = tagged.key_by(move |t: &TaggedUnion<A, B>| match t {
            TaggedUnion::One(a) => key1(a),
            TaggedUnion::Two(b) => key2(b),
        });
        let mut windowed = keyed
            .window(self.assigner)
            .allowed_lateness(self.allowed_lateness);
        if let Some(make) = self.trigger {
            windowed = windowed.with_trigger_factory(make);
        }
        let mut f = f;
        windowed.apply(
            move |k: &K,
                  _w: &W,
                  elements: Elements<'_, TaggedUnion<A, B>>,
                  out: &mut Collector<'_, O>| {
                let (mut ones, mut twos) = (Vec::new(), Vec::new());
                for e in elements {
                    match e {
                        TaggedUnion::One(a) => ones.push(a),
                        TaggedUnion::Two(b) => twos.push(b),
                    }
                }
                f(k, ones, twos, out);
            },
        )
    }
}

impl<A, B, K, W, Asg> JoinWindow<A, B, K, W, Asg, Join>
where
    A: Clone + Send + Serialize + DeserializeOwned + 'static,
    B: Clone + Send + Serialize + DeserializeOwned + 'static,
    K: Key,
    W: crate::window::Window,
    Asg: WindowAssigner<TaggedUnion<A, B>, W = W>,
{
    /// Emits `f(a, b)` for every pair of records with equal keys in a window.
    pub fn apply<O, F>(self, f: F) -> DataStream<O>
    where
        O: Clone + Send + 'static,
        F: FnMut(&A, &B) -> O + Clone + Send + Sync + 'static,
    {
        let mut f = f;
        self.co_group_with(
            move |_k: &K, ones: Vec<&A>, twos: Vec<&B>, out: &mut Collector<'_, O>| {
                for a in &ones {
                    for b in &twos {
                        out.collect(f(a, b));
                    }
                }
            },
        )
    }
}

impl<A, B, K, W, Asg> JoinWindow<A, B, K, W, Asg, CoGroup>
where
    A: Clone + Send + Serialize + DeserializeOwned + 'static,
    B: Clone + Send + Serialize + DeserializeOwned + 'static,
    K: Key,
    W: crate::window::Window,
    Asg: WindowAssigner<TaggedUnion<A, B>, W = W>,
{
    /// Calls `f(key, first_side, second_side, out)` once per key and window;
    /// either side may be empty.
    pub fn apply<O, F>(self, f: F) -> DataStream<O>
    where
        O: Clone + Send + 'static,
        F: FnMut(&K, Vec<&A>, Vec<&B>, &mut Collector<'_, O>) + Clone + Send + Sync + 'static,
    {
        self.co_group_with(f)
    }
}
