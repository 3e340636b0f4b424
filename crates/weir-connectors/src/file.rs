//! Files of records in a format ([`crate::format`]: CSV, JSON lines): a
//! bounded source that decodes each line of a file, with a header line for
//! CSV if the format says so. A malformed line fails the job naming the
//! file, the line and what was wrong (the CSV field), or, with
//! [`FileSource::skip_malformed`], is skipped, counted and warned about.
//!
//! Positions are those of Weir's text file source, so a restored job goes
//! on at the line after the checkpoint. For the file sink, encode records
//! with [`RecordFormat::encode`] in a `map` before `FileSink`.

use std::io::BufRead;

use weir::functions::{
    FunctionResult, RuntimeContext, SourceContext, SourceFunction, SourceStatus,
};
use weir::source::TextFileSource;
use weir::StreamRecord;

use crate::format::RecordFormat;

/// A file of records; see the module docs.
pub struct FileSource<T, F> {
    lines: TextFileSource,
    format: F,
    skip_malformed: bool,
    skipped: u64,
    buffer: Vec<StreamRecord<String>>,
    _type: std::marker::PhantomData<fn() -> T>,
}

impl<T, F: Clone> Clone for FileSource<T, F> {
    fn clone(&self) -> Self {
        FileSource {
            lines: self.lines.clone(),
            format: self.format.clone(),
            skip_malformed: self.skip_malformed,
            skipped: 0,
            buffer: Vec::new(),
            _type: std::marker::PhantomData,
        }
    }
}

impl<T, F: RecordFormat<T>> FileSource<T, F> {
    /// The records of the file at `path`, one per line, in `format`.
    pub fn new(path: impl Into<std::path::PathBuf>, format: F) -> Self {
        FileSource {
            lines: TextFileSource::new(path),
            format,
            skip_malformed: false,
            skipped: 0,
            buffer: Vec::new(),
            _type: std::marker::PhantomData,
        }
    }

    /// Skips malformed lines, counting them and warning about the first
    /// ten, instead of failing the job (the default).
    pub fn skip_malformed(mut self) -> Self {
        self.skip_malformed = true;
        self
    }

    /// Reads at most `lines_per_second`.
    pub fn with_rate_limit(mut self, lines_per_second: f64) -> Self {
        self.lines = self.lines.with_rate_limit(lines_per_second);
        self
    }
}

impl<T: Send + 'static, F: RecordFormat<T>> SourceFunction<T> for FileSource<T, F> {
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.lines.open(ctx)?;
        if self.format.has_header() {
            let path = self.lines.path().to_path_buf();
            let file = std::fs::File::open(&path)
                .map_err(|e| format!("reading '{}': {e}", path.display()))?;
            let mut header = Vec::new();
            std::io::BufReader::new(file)
                .read_until(b'\n', &mut header)
                .map_err(|e| format!("reading '{}': {e}", path.display()))?;
            let header = String::from_utf8_lossy(&header);
            self.format
                .read_header(header.trim_end_matches(['\n', '\r']).as_bytes())
                .map_err(|why| format!("'{}' line 1 (the header): {why}", path.display()))?;
        }
        Ok(())
    }

    fn poll_next(&mut self, ctx: &mut SourceContext<'_, T>) -> FunctionResult<SourceStatus> {
        let before = self.lines.lines_read();
        self.buffer.clear();
        let status = self.lines.poll_next(&mut SourceContext::new(
            &mut self.buffer,
            ctx.remaining().max(1),
        ))?;
        for (i, record) in self.buffer.drain(..).enumerate() {
            let line = before + i as u64 + 1;
            if line == 1 && self.format.has_header() {
                continue;
            }
            match self.format.decode(record.value.as_bytes()) {
                Ok(value) => ctx.collect(value),
                Err(why) if self.skip_malformed => {
                    self.skipped += 1;
                    if self.skipped <= 10 {
                        tracing::warn!(
                            "skipping '{}' line {line}: {why}",
                            self.lines.path().display()
                        );
                    }
                }
                Err(why) => {
                    return Err(
                        format!("'{}' line {line}: {why}", self.lines.path().display()).into(),
                    )
                }
            }
        }
        Ok(status)
    }

    fn snapshot_position(&mut self, checkpoint_id: u64) -> FunctionResult<Option<Vec<u8>>> {
        self.lines.snapshot_position(checkpoint_id)
    }

    fn restore_position(&mut self, position: &[u8]) -> FunctionResult {
        self.lines.restore_position(position)
    }

    fn close(&mut self) -> FunctionResult {
        self.lines.close()
    }
}
