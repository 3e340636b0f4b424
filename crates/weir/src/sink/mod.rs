//! Built-in sinks: print, text files, collecting into memory, discarding,
//! and exactly-once sinks: the two-phase-commit and write-ahead-log
//! frameworks and the transactional file sink built on the first.
//! Sinks of external systems (PostgreSQL, Redis, Kafka) live in
//! `weir-connectors`.

mod collect;
mod file;
mod print;
mod print_format;
mod text_file;
mod two_phase_commit;
mod write_ahead;

pub use collect::CollectSink;
pub use file::{FileSink, PartFile, PartFiles, RollingPolicy, RowFileWriter};
pub use print::{PrintSink, PrintTarget};
pub use print_format::{PrintFormat, Printed};
pub use text_file::TextFileSink;
pub use two_phase_commit::{TwoPhaseCommit, TwoPhaseCommitSink};
pub use weir_runtime::checkpoint::FINAL_SNAPSHOT;
pub use write_ahead::{WriteAheadSink, WriteAheadWriter};

use weir_runtime::element::StreamRecord;

use crate::functions::{FunctionResult, SinkContext, SinkFunction};

/// Drops every record (Flink's `DiscardingSink`), for benchmarks.
#[derive(Debug, Clone, Copy, Default)]
pub struct DiscardingSink;

impl<T: Send + 'static> SinkFunction<T> for DiscardingSink {
    fn invoke(&mut self, _value: T, _ctx: &SinkContext) -> FunctionResult {
        Ok(())
    }

    #[inline]
    fn invoke_batch(
        &mut self,
        batch: &mut Vec<StreamRecord<T>>,
        _watermark: i64,
    ) -> FunctionResult {
        batch.clear();
        Ok(())
    }
}
