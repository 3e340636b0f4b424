//! Weir's connectors to external systems, outside the `weir` crate so that
//! the API links no client library. Each system is a module behind a
//! feature of its name:
//!
//! - [`postgres`]: sinks into PostgreSQL — idempotent upserts
//!   ([`postgres::PostgresSink::upsert`]) and exactly-once inserts by
//!   two-phase commit ([`postgres::PostgresSink::exactly_once`]) — and a
//!   throwaway local server for tests ([`postgres::LocalPostgres`]).

#[cfg(feature = "postgres")]
pub mod postgres;
