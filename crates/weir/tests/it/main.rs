//! Integration tests of the public API: one binary for the crate, so the
//! 2-core CI links it once.

mod api;
mod checkpoints;
mod config;
mod diagnosis;
mod joins;
#[cfg(feature = "s3")]
mod object_storage;
mod partitioning;
mod rest;
mod runtime;
mod sinks;
mod sources;
mod state;
mod time;
mod windows;

/// Sorts a vector, for comparing multisets of results.
pub fn sorted<T: Ord>(mut v: Vec<T>) -> Vec<T> {
    v.sort();
    v
}
