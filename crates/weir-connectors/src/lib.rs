//! Weir's connectors to external systems, outside the `weir` crate so that
//! the API links no client library. Each system is a module behind a
//! feature of its name:
//!
//! - [`postgres`]: sinks into PostgreSQL — idempotent upserts
//!   ([`postgres::PostgresSink::upsert`]) and exactly-once inserts by
//!   two-phase commit ([`postgres::PostgresSink::exactly_once`]) — and a
//!   throwaway local server for tests ([`postgres::LocalPostgres`]).
//! - `kafka`: a Kafka source and a sink (none, at-least-once, or
//!   exactly-once by transactions), and a throwaway local broker (tansu) for tests (feature `kafka`, which builds
//!   librdkafka).

pub mod file;
pub mod format;
#[cfg(feature = "kafka")]
pub mod kafka;

/// What a subtask owns alone but keeps in a mutex so that its sink or
/// source is `Sync`, as functions must be: reached through `&mut`, without
/// locking. A panic while it was borrowed cannot leave it half-written.
#[cfg(any(feature = "postgres", feature = "kafka"))]
pub(crate) fn unshared<T>(slot: &mut std::sync::Mutex<T>) -> &mut T {
    slot.get_mut()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
#[cfg(feature = "postgres")]
pub mod postgres;
