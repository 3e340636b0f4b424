//! State descriptors: the name and type of a piece of keyed state (Flink's
//! `*StateDescriptor`). A function declares its state with a descriptor in
//! `open` and gets a handle scoped to the current key.

use std::marker::PhantomData;
use std::sync::Arc;

use crate::ttl::StateTtlConfig;

/// What every state value must be: storable in a snapshot or RocksDB, and
/// movable between threads.
pub trait StateValue:
    serde::Serialize + serde::de::DeserializeOwned + Clone + Send + 'static
{
}
impl<T: serde::Serialize + serde::de::DeserializeOwned + Clone + Send + 'static> StateValue for T {}

/// The kinds of keyed state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateKind {
    /// One value per key.
    Value,
    /// A list per key.
    List,
    /// A map per key.
    Map,
    /// One value per key, folded by a reduce function.
    Reducing,
    /// One accumulator per key, folded by an aggregate function.
    Aggregating,
}

/// Declares a `ValueState<T>`.
pub struct ValueStateDescriptor<T> {
    pub(crate) name: String,
    pub(crate) ttl: Option<StateTtlConfig>,
    _type: PhantomData<fn() -> T>,
}

impl<T> ValueStateDescriptor<T> {
    /// A value state called `name` (unique within the operator).
    pub fn new(name: impl Into<String>) -> Self {
        ValueStateDescriptor {
            name: name.into(),
            ttl: None,
            _type: PhantomData,
        }
    }

    /// The state's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Lets values expire (Flink's `enableTimeToLive`).
    pub fn enable_time_to_live(mut self, ttl: StateTtlConfig) -> Self {
        self.ttl = Some(ttl);
        self
    }
}

/// Declares a `ListState<T>`.
pub struct ListStateDescriptor<T> {
    pub(crate) name: String,
    pub(crate) ttl: Option<StateTtlConfig>,
    _type: PhantomData<fn() -> T>,
}

impl<T> ListStateDescriptor<T> {
    /// A list state called `name`.
    pub fn new(name: impl Into<String>) -> Self {
        ListStateDescriptor {
            name: name.into(),
            ttl: None,
            _type: PhantomData,
        }
    }

    /// The state's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Lets values expire (Flink's `enableTimeToLive`).
    pub fn enable_time_to_live(mut self, ttl: StateTtlConfig) -> Self {
        self.ttl = Some(ttl);
        self
    }
}

/// Declares a `MapState<K, V>`.
pub struct MapStateDescriptor<K, V> {
    pub(crate) name: String,
    pub(crate) ttl: Option<StateTtlConfig>,
    _type: PhantomData<fn() -> (K, V)>,
}

impl<K, V> MapStateDescriptor<K, V> {
    /// A map state called `name`.
    pub fn new(name: impl Into<String>) -> Self {
        MapStateDescriptor {
            name: name.into(),
            ttl: None,
            _type: PhantomData,
        }
    }

    /// The state's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Lets values expire (Flink's `enableTimeToLive`).
    pub fn enable_time_to_live(mut self, ttl: StateTtlConfig) -> Self {
        self.ttl = Some(ttl);
        self
    }
}

pub(crate) type ReduceFn<T> = Arc<dyn Fn(T, T) -> T + Send + Sync>;

/// Declares a `ReducingState<T>`: values added are folded with `reduce`.
pub struct ReducingStateDescriptor<T> {
    pub(crate) name: String,
    pub(crate) ttl: Option<StateTtlConfig>,
    pub(crate) reduce: ReduceFn<T>,
}

impl<T> ReducingStateDescriptor<T> {
    /// A reducing state called `name` folding with `reduce(accumulated, new)`.
    pub fn new(
        name: impl Into<String>,
        reduce: impl Fn(T, T) -> T + Send + Sync + 'static,
    ) -> Self {
        ReducingStateDescriptor {
            name: name.into(),
            ttl: None,
            reduce: Arc::new(reduce),
        }
    }

    /// The state's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Lets values expire (Flink's `enableTimeToLive`).
    pub fn enable_time_to_live(mut self, ttl: StateTtlConfig) -> Self {
        self.ttl = Some(ttl);
        self
    }
}

type AddFn<In, Acc> = Arc<dyn Fn(In, &mut Acc) + Send + Sync>;

/// How an aggregating state folds inputs into an accumulator and reads it.
pub(crate) struct AggregateFns<In, Acc, Out> {
    pub create: Arc<dyn Fn() -> Acc + Send + Sync>,
    pub add: AddFn<In, Acc>,
    pub result: Arc<dyn Fn(&Acc) -> Out + Send + Sync>,
}

impl<In, Acc, Out> Clone for AggregateFns<In, Acc, Out> {
    fn clone(&self) -> Self {
        AggregateFns {
            create: Arc::clone(&self.create),
            add: Arc::clone(&self.add),
            result: Arc::clone(&self.result),
        }
    }
}

/// Declares an `AggregatingState<In, Out>` with accumulator `Acc`.
pub struct AggregatingStateDescriptor<In, Acc, Out> {
    pub(crate) name: String,
    pub(crate) ttl: Option<StateTtlConfig>,
    pub(crate) fns: AggregateFns<In, Acc, Out>,
}

impl<In, Acc, Out> AggregatingStateDescriptor<In, Acc, Out> {
    /// An aggregating state called `name`: a new key starts from
    /// `create()`, `add(input, &mut acc)` folds, `result(&acc)` reads.
    pub fn new(
        name: impl Into<String>,
        create: impl Fn() -> Acc + Send + Sync + 'static,
        add: impl Fn(In, &mut Acc) + Send + Sync + 'static,
        result: impl Fn(&Acc) -> Out + Send + Sync + 'static,
    ) -> Self {
        AggregatingStateDescriptor {
            name: name.into(),
            ttl: None,
            fns: AggregateFns {
                create: Arc::new(create),
                add: Arc::new(add),
                result: Arc::new(result),
            },
        }
    }

    /// The state's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Lets values expire (Flink's `enableTimeToLive`).
    pub fn enable_time_to_live(mut self, ttl: StateTtlConfig) -> Self {
        self.ttl = Some(ttl);
        self
    }
}
