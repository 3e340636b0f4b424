//! State for the Weir stream processor.
//!
//! The principal concept in this crate is the **key group**: the unit in which
//! keyed state is partitioned, stored and snapshotted. Every key maps to one of
//! `max_parallelism` key groups by a hash that is fixed forever (see
//! [`StableHash`]), and each parallel subtask owns a contiguous
//! [`KeyGroupRange`]. Because key groups, not subtasks, are what a snapshot
//! records, a job can later be restored at a different parallelism.
//!
//! ```
//! use weir_state::{assign_to_key_group, operator_index_for_key_group, StableHash};
//!
//! let kg = assign_to_key_group(&"user-42", 128);
//! let subtask = operator_index_for_key_group(128, 4, kg);
//! assert!(subtask < 4);
//! assert_eq!("user-42".stable_hash(), String::from("user-42").stable_hash());
//! ```
//!
//! Keyed and operator state backends (heap and RocksDB) build on this crate.

pub mod allocator;
pub mod checkpoint_storage;
mod clock;
mod codec;
#[cfg(any(test, feature = "conformance"))]
pub mod conformance;
mod descriptor;
mod error;
pub mod file_system;
mod heap;
mod key_bytes;
mod key_group;
mod key_locality;
mod key_table;
mod kv;
mod map_layout;
mod operator_state;
pub mod snapshot;
mod store;
mod task_lock;
mod ttl;
mod write_back;

pub use checkpoint_storage::{
    CheckpointMetadata, CheckpointStorage, FsCheckpointStorage, LoadedCheckpoint,
    MemoryCheckpointStorage, SavepointStorage,
};
pub use clock::{system_clock, Clock, ManualClock, SharedClock, SystemClock};
pub use codec::{
    append_key, append_state_key, decode_key, decode_value, encode_key, encode_state_key,
    encode_value, VALUE_FORMAT_VERSION,
};
pub use descriptor::{
    AggregatingStateDescriptor, ListStateDescriptor, MapStateDescriptor, ReducingStateDescriptor,
    StateKind, StateValue, ValueStateDescriptor,
};
pub use error::StateError;
pub use key_group::{
    assign_to_key_group, key_group_of_hash, key_group_range_for_operator,
    operator_index_for_key_group, KeyGroup, KeyGroupRange, StableHash, DEFAULT_MAX_PARALLELISM,
    KEY_HASH_SEED, MAX_MAX_PARALLELISM,
};
pub use key_table::{
    prefetch_line, prefetch_line_for_write, prefetch_range_for_write, prefetch_slice,
};
pub use kv::{stored_state_id, ttl_stamp, KvStore, MultiGetFn, ScanFn, StoreStatistics};
pub use map_layout::{PortableEntries, PortableEntry};
pub use operator_state::{
    OperatorListState, OperatorStateSnapshot, OperatorStateStore, Redistribution,
};
pub use snapshot::{NativeFile, NativeFiles, NativeState, SubtaskSnapshot};
pub use store::{
    AggregatingState, DeferredSnapshot, KeyedStateStore, ListState, MapState, NativeFormat,
    NativeRestore, ReducingState, StateBackend, StateEntry, StateHold, ValueChange, ValueState,
};
pub use ttl::{StateTtlConfig, StateTtlConfigBuilder, StateVisibility, UpdateType};
