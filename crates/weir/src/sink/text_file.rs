//! Writing records as lines of text (Flink's `writeAsText`).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::marker::PhantomData;
use std::path::PathBuf;

use weir_runtime::element::StreamRecord;

use super::print_format::{PrintFormat, Printed};
use crate::functions::{FunctionResult, RuntimeContext, SinkContext, SinkFunction};

/// Writes each record's print form ([`PrintFormat`]: as `print()` shows
/// it) as a line. With parallelism 1 the
/// sink writes the file `path`; with more, `path` is a directory holding one
/// file per subtask named `1`, `2`, … (Flink's layout). Existing files are
/// overwritten.
pub struct TextFileSink<T> {
    path: PathBuf,
    writer: Option<BufWriter<File>>,
    file: PathBuf,
    _type: PhantomData<fn(T)>,
}

impl<T> Clone for TextFileSink<T> {
    fn clone(&self) -> Self {
        TextFileSink::new(self.path.clone())
    }
}

impl<T> TextFileSink<T> {
    /// A sink writing to `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        TextFileSink {
            path: path.into(),
            writer: None,
            file: PathBuf::new(),
            _type: PhantomData,
        }
    }

    fn writer(&mut self) -> FunctionResult<&mut BufWriter<File>> {
        self.writer
            .as_mut()
            .ok_or_else(|| "text file sink used before open".into())
    }
}

impl<T: PrintFormat + Send + 'static> SinkFunction<T> for TextFileSink<T> {
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.file = if ctx.parallelism > 1 {
            std::fs::create_dir_all(&self.path)
                .map_err(|e| format!("cannot create directory '{}': {e}", self.path.display()))?;
            self.path.join((ctx.subtask_index + 1).to_string())
        } else {
            self.path.clone()
        };
        let file = File::create(&self.file)
            .map_err(|e| format!("cannot create '{}': {e}", self.file.display()))?;
        self.writer = Some(BufWriter::with_capacity(256 * 1024, file));
        Ok(())
    }

    fn invoke(&mut self, value: T, _ctx: &SinkContext) -> FunctionResult {
        writeln!(self.writer()?, "{}", Printed(&value))?;
        Ok(())
    }

    fn invoke_batch(
        &mut self,
        batch: &mut Vec<StreamRecord<T>>,
        _watermark: i64,
    ) -> FunctionResult {
        let file = self.file.clone();
        let writer = self.writer()?;
        for record in batch.drain(..) {
            writeln!(writer, "{}", Printed(&record.value))
                .map_err(|e| format!("writing '{}': {e}", file.display()))?;
        }
        Ok(())
    }

    fn finish(&mut self) -> FunctionResult {
        let file = self.file.clone();
        self.writer()?
            .flush()
            .map_err(|e| format!("writing '{}': {e}", file.display()))?;
        Ok(())
    }
}
