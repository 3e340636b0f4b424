//! Lines of a text file (Flink's `readTextFile`), read once: a bounded
//! source. Its position is the byte offset of the next line, so after a
//! failure it resumes where the restored checkpoint was taken.

use std::fs::File;
use std::io::{BufRead, BufReader, Seek, SeekFrom};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::decode_line;
use crate::functions::{
    FunctionResult, RuntimeContext, SourceContext, SourceFunction, SourceStatus,
};

/// Emits each line of a file, without its line end.
#[derive(Debug)]
pub struct TextFileSource {
    path: PathBuf,
    reader: Option<BufReader<File>>,
    lines_read: u64,
    offset: u64,
    rate: Option<f64>,
    started: Option<(Instant, u64)>,
    /// The bytes of the line being read.
    buffer: Vec<u8>,
    /// Lines that were not valid UTF-8.
    bad_lines: u64,
}

impl Clone for TextFileSource {
    fn clone(&self) -> Self {
        let mut source = TextFileSource::new(self.path.clone());
        source.rate = self.rate;
        source
    }
}

impl TextFileSource {
    /// The lines of `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        TextFileSource {
            path: path.into(),
            reader: None,
            lines_read: 0,
            offset: 0,
            rate: None,
            started: None,
            buffer: Vec::new(),
            bad_lines: 0,
        }
    }

    /// The file read.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// How many lines were read so far (each one emitted as a record), so
    /// that a wrapping source can name the line a record came from.
    pub fn lines_read(&self) -> u64 {
        self.lines_read
    }

    /// Emits at most `lines_per_second` (for demos and tests that need a
    /// job to be running when they interrupt it).
    pub fn with_rate_limit(mut self, lines_per_second: f64) -> Self {
        self.rate = (lines_per_second > 0.0).then_some(lines_per_second);
        self
    }

    /// How many lines this poll may emit under the rate limit.
    fn allowed(&mut self, wanted: usize) -> usize {
        let Some(rate) = self.rate else {
            return wanted;
        };
        let (since, base) = *self
            .started
            .get_or_insert((Instant::now(), self.lines_read));
        let allowed = (since.elapsed().as_secs_f64() * rate) as u64 + 1;
        let emitted = self.lines_read - base;
        let n = allowed.saturating_sub(emitted).min(wanted as u64) as usize;
        if n == 0 {
            std::thread::sleep(Duration::from_secs_f64(1.0 / rate).min(Duration::from_millis(20)));
        }
        n
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
        let budget = self.allowed(ctx.remaining().max(1));
        let Some(reader) = self.reader.as_mut() else {
            return Ok(SourceStatus::Finished);
        };
        for _ in 0..budget {
            self.buffer.clear();
            let n = reader.read_until(b'\n', &mut self.buffer).map_err(|e| {
                format!(
                    "reading '{}' after line {}: {e}",
                    self.path.display(),
                    self.lines_read
                )
            })?;
            if n == 0 {
                return Ok(SourceStatus::Finished);
            }
            self.offset += n as u64;
            let mut bytes = self.buffer.as_slice();
            if let Some(stripped) = bytes.strip_suffix(b"\n") {
                bytes = stripped.strip_suffix(b"\r").unwrap_or(stripped);
            }
            self.lines_read += 1;
            let origin = format_args!("'{}'", self.path.display());
            let line = decode_line(bytes, &origin, self.lines_read, &mut self.bad_lines);
            ctx.collect(line);
        }
        Ok(SourceStatus::More)
    }

    fn snapshot_position(&mut self, _checkpoint_id: u64) -> FunctionResult<Option<Vec<u8>>> {
        let mut position = self.offset.to_le_bytes().to_vec();
        position.extend_from_slice(&self.lines_read.to_le_bytes());
        Ok(Some(position))
    }

    fn restore_position(&mut self, position: &[u8]) -> FunctionResult {
        let word = |at: usize| -> FunctionResult<u64> {
            let bytes: [u8; 8] = position
                .get(at..at + 8)
                .and_then(|b| b.try_into().ok())
                .ok_or("text file position must be 16 bytes")?;
            Ok(u64::from_le_bytes(bytes))
        };
        self.offset = word(0)?;
        self.lines_read = word(8)?;
        if let Some(reader) = self.reader.as_mut() {
            reader.seek(SeekFrom::Start(self.offset)).map_err(|e| {
                format!(
                    "cannot resume '{}' at byte {}: {e}",
                    self.path.display(),
                    self.offset
                )
            })?;
        }
        Ok(())
    }
}
