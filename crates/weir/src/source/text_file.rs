//! Lines of a text file (Flink's `readTextFile`), read once: a bounded source.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;

use crate::functions::{
    FunctionResult, RuntimeContext, SourceContext, SourceFunction, SourceStatus,
};

/// Emits each line of a file, without its line end.
#[derive(Debug)]
pub struct TextFileSource {
    path: PathBuf,
    reader: Option<BufReader<File>>,
    lines_read: u64,
}

impl Clone for TextFileSource {
    fn clone(&self) -> Self {
        TextFileSource::new(self.path.clone())
    }
}

impl TextFileSource {
    /// The lines of `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        TextFileSource {
            path: path.into(),
            reader: None,
            lines_read: 0,
        }
    }
}

impl SourceFunction<String> for TextFileSource {
    fn open(&mut self, _ctx: &RuntimeContext) -> FunctionResult {
        let file = File::open(&self.path)
            .map_err(|e| format!("cannot read text file '{}': {e}", self.path.display()))?;
        self.reader = Some(BufReader::with_capacity(256 * 1024, file));
        Ok(())
    }

    fn poll_next(&mut self, ctx: &mut SourceContext<'_, String>) -> FunctionResult<SourceStatus> {
        let Some(reader) = self.reader.as_mut() else {
            return Ok(SourceStatus::Finished);
        };
        while !ctx.is_full() {
            let mut line = String::new();
            let n = reader.read_line(&mut line).map_err(|e| {
                format!(
                    "reading '{}' after line {}: {e}",
                    self.path.display(),
                    self.lines_read
                )
            })?;
            if n == 0 {
                return Ok(SourceStatus::Finished);
            }
            if line.ends_with('\n') {
                line.pop();
                if line.ends_with('\r') {
                    line.pop();
                }
            }
            self.lines_read += 1;
            ctx.collect(line);
        }
        Ok(SourceStatus::More)
    }
}
