//! Collecting a bounded stream's records into memory (`execute_and_collect`).

use std::sync::{Arc, Mutex};

use weir_runtime::element::StreamRecord;

use crate::functions::{FunctionResult, SinkContext, SinkFunction};

/// Appends every record to a shared vector.
pub struct CollectSink<T> {
    out: Arc<Mutex<Vec<T>>>,
}

impl<T> Clone for CollectSink<T> {
    fn clone(&self) -> Self {
        CollectSink {
            out: Arc::clone(&self.out),
        }
    }
}

impl<T> CollectSink<T> {
    /// A sink appending to `out`.
    pub fn new(out: Arc<Mutex<Vec<T>>>) -> Self {
        CollectSink { out }
    }
}

impl<T: Send + 'static> SinkFunction<T> for CollectSink<T> {
    fn invoke(&mut self, value: T, _ctx: &SinkContext) -> FunctionResult {
        self.out
            .lock()
            .map_err(|_| "collect sink poisoned")?
            .push(value);
        Ok(())
    }

    fn invoke_batch(
        &mut self,
        batch: &mut Vec<StreamRecord<T>>,
        _watermark: i64,
    ) -> FunctionResult {
        let mut out = self.out.lock().map_err(|_| "collect sink poisoned")?;
        out.extend(batch.drain(..).map(|r| r.value));
        Ok(())
    }
}
