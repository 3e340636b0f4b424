//! Printing records, formatted as Flink's `print()` does.

use std::io::Write;
use std::marker::PhantomData;

use weir_runtime::element::StreamRecord;

use super::print_format::{PrintFormat, Printed};
use crate::functions::{FunctionResult, RuntimeContext, SinkContext, SinkFunction};

/// Standard output or standard error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrintTarget {
    /// `print()`.
    Stdout,
    /// `print_to_err()`.
    Stderr,
}

/// Prints each record on its own line. As Flink's `PrintSinkFunction`, a
/// line starts with the subtask number (1-based) when the sink runs with
/// parallelism above 1, and with the prefix if one is given:
/// `value`, `3> value`, `prefix> value`, `prefix:3> value`.
pub struct PrintSink<T> {
    target: PrintTarget,
    prefix: Option<String>,
    line_start: String,
    line: String,
    _type: PhantomData<fn(T)>,
}

impl<T> Clone for PrintSink<T> {
    fn clone(&self) -> Self {
        PrintSink::new(self.target, self.prefix.clone())
    }
}

impl<T> PrintSink<T> {
    /// A sink printing to `target`, with an optional `prefix`.
    pub fn new(target: PrintTarget, prefix: Option<String>) -> Self {
        PrintSink {
            target,
            prefix,
            line_start: String::new(),
            line: String::new(),
            _type: PhantomData,
        }
    }
}

/// The start of each printed line for subtask `index` of `parallelism`.
pub(crate) fn line_start(prefix: Option<&str>, index: u32, parallelism: u32) -> String {
    match (prefix, parallelism > 1) {
        (Some(p), true) => format!("{p}:{}> ", index + 1),
        (Some(p), false) => format!("{p}> "),
        (None, true) => format!("{}> ", index + 1),
        (None, false) => String::new(),
    }
}

impl<T: PrintFormat + Send + 'static> SinkFunction<T> for PrintSink<T> {
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.line_start = line_start(self.prefix.as_deref(), ctx.subtask_index, ctx.parallelism);
        Ok(())
    }

    fn invoke(&mut self, value: T, _ctx: &SinkContext) -> FunctionResult {
        let mut batch = vec![StreamRecord::new(value)];
        self.invoke_batch(&mut batch, i64::MIN)
    }

    fn invoke_batch(
        &mut self,
        batch: &mut Vec<StreamRecord<T>>,
        _watermark: i64,
    ) -> FunctionResult {
        use std::fmt::Write as _;
        self.line.clear();
        for record in batch.drain(..) {
            writeln!(self.line, "{}{}", self.line_start, Printed(&record.value))?;
        }
        // One write per batch, under one lock, so lines of parallel subtasks
        // never interleave mid-line.
        let written = match self.target {
            PrintTarget::Stdout => std::io::stdout().lock().write_all(self.line.as_bytes()),
            PrintTarget::Stderr => std::io::stderr().lock().write_all(self.line.as_bytes()),
        };
        match written {
            // A closed pipe (`| head`) is not the job's failure.
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
            other => Ok(other?),
        }
    }

    fn finish(&mut self) -> FunctionResult {
        match self.target {
            PrintTarget::Stdout => std::io::stdout().flush()?,
            PrintTarget::Stderr => std::io::stderr().flush()?,
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::line_start;

    #[test]
    fn line_starts_follow_flink() {
        assert_eq!(line_start(None, 0, 1), "");
        assert_eq!(line_start(None, 2, 4), "3> ");
        assert_eq!(line_start(Some("late"), 0, 1), "late> ");
        assert_eq!(line_start(Some("late"), 1, 2), "late:2> ");
    }
}
