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

/// An environment on the manual `clock`, its keyed exchanges chained: a
/// test source that moves the clock as it emits then runs in step with
/// the operators that read the clock. Split into tasks (the default where
/// a core would be idle), the source runs ahead of them, as a real clock
/// runs ahead of a pipeline.
pub fn in_step_with(
    clock: &weir_runtime::time::ManualClock,
) -> anyhow::Result<weir::prelude::StreamExecutionEnvironment> {
    let env = weir::prelude::StreamExecutionEnvironment::new();
    env.set_clock(std::sync::Arc::new(clock.clone()));
    let mut config = weir::prelude::Configuration::new();
    config.set(weir::config::keys::CHAIN_KEYED_EXCHANGES, "true");
    env.configure(&config)?;
    Ok(env)
}

/// Sorts a vector, for comparing multisets of results.
pub fn sorted<T: Ord>(mut v: Vec<T>) -> Vec<T> {
    v.sort();
    v
}
