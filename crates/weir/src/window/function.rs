//! Window functions: what a window's contents turn into.

use weir_runtime::element::StreamRecord;
use weir_runtime::operator::SideOutputs;
use weir_state::{KeyedStateStore, StateError};

use crate::functions::{Collector, FunctionResult, OutputTag, RuntimeContext};
use crate::window::Window;

/// Incremental aggregation with an accumulator (Flink's `AggregateFunction`).
/// A window holds one accumulator per key, never its elements.
pub trait AggregateFunction<T, Acc, O>: Send + 'static {
    /// A new, empty accumulator.
    fn create_accumulator(&mut self) -> Acc;
    /// Adds a record.
    fn add(&mut self, value: T, accumulator: &mut Acc);
    /// The result of an accumulator (which is kept: the window may fire again).
    fn get_result(&mut self, accumulator: &Acc) -> O;
    /// Merges two accumulators (for merging windows).
    fn merge(&mut self, a: Acc, b: Acc) -> Acc;
    /// Merges `from` into `into` in place, `from` kept (a sliding
    /// window's slices are merged into each window they belong to). By
    /// default, a copy of `from` is [`merge`](Self::merge)d; a function
    /// whose accumulators own memory can merge without the copy.
    fn merge_into(&mut self, into: &mut Acc, from: &Acc)
    where
        Acc: Clone,
    {
        let a = std::mem::replace(into, self.create_accumulator());
        *into = self.merge(a, from.clone());
    }
}

/// The contents of a window as a function sees them: its elements in
/// arrival order (or the single pre-aggregated value).
pub struct Elements<'a, T> {
    inner: ElementsInner<'a, T>,
}

enum ElementsInner<'a, T> {
    Records(std::slice::Iter<'a, StreamRecord<T>>),
    One(Option<&'a T>),
}

impl<'a, T> Elements<'a, T> {
    pub(crate) fn records(records: &'a [StreamRecord<T>]) -> Self {
        Elements {
            inner: ElementsInner::Records(records.iter()),
        }
    }

    pub(crate) fn one(value: &'a T) -> Self {
        Elements {
            inner: ElementsInner::One(Some(value)),
        }
    }
}

impl<'a, T> Iterator for Elements<'a, T> {
    type Item = &'a T;

    fn next(&mut self) -> Option<&'a T> {
        match &mut self.inner {
            ElementsInner::Records(it) => it.next().map(|r| &r.value),
            ElementsInner::One(v) => v.take(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = match &self.inner {
            ElementsInner::Records(it) => it.len(),
            ElementsInner::One(v) => usize::from(v.is_some()),
        };
        (n, Some(n))
    }
}

impl<T> ExactSizeIterator for Elements<'_, T> {}

impl<T> Clone for Elements<'_, T> {
    fn clone(&self) -> Self {
        Elements {
            inner: match &self.inner {
                ElementsInner::Records(it) => ElementsInner::Records(it.clone()),
                ElementsInner::One(v) => ElementsInner::One(*v),
            },
        }
    }
}

/// The keyed state a firing may use: the operator's store, and how to
/// point it at the firing's key (done on first use, so firings of
/// functions without state pay nothing).
pub(crate) struct WindowScope<'a> {
    pub store: &'a KeyedStateStore,
    pub set_key: &'a dyn Fn(&KeyedStateStore) -> Result<(), StateError>,
    /// Whether the window is a merging one (no per-window state, as in
    /// Flink).
    pub merging: bool,
    pub key_set: bool,
    pub namespace_set: bool,
}

/// What a process window function may see and keep (Flink's
/// `ProcessWindowFunction.Context`).
pub struct ProcessWindowContext<'a, W> {
    pub(crate) window: &'a W,
    pub(crate) watermark: i64,
    pub(crate) processing_time: i64,
    pub(crate) scope: Option<WindowScope<'a>>,
    pub(crate) sides: &'a mut SideOutputs,
    pub(crate) timestamp: i64,
}

impl<W> ProcessWindowContext<'_, W> {
    /// The window being emitted.
    pub fn window(&self) -> &W {
        self.window
    }

    /// The operator's watermark.
    pub fn current_watermark(&self) -> i64 {
        self.watermark
    }

    /// The current processing time.
    pub fn current_processing_time(&self) -> i64 {
        self.processing_time
    }

    /// Emits `value` to the side output `tag`.
    pub fn output<X: Send + 'static>(&mut self, tag: &OutputTag<X>, value: X) {
        self.sides.emit(
            tag.id(),
            StreamRecord::with_timestamp(value, self.timestamp),
        );
    }
}

impl<'a, W: Window> ProcessWindowContext<'a, W> {
    fn scope(&mut self) -> Result<&mut WindowScope<'a>, StateError> {
        let scope = self
            .scope
            .as_mut()
            .ok_or_else(|| StateError::NotKeyed("window state outside a keyed window".into()))?;
        if !scope.key_set {
            (scope.set_key)(scope.store)?;
            scope.key_set = true;
        }
        Ok(scope)
    }

    /// Keyed state of this key *in this window* (Flink's `windowState()`):
    /// declare states on it with descriptors, as on the runtime context.
    /// It lives across firings of the window and is dropped with the
    /// window (after [`ProcessWindowFunction::clear`]). Merging windows
    /// (sessions) have none, as in Flink: an error.
    ///
    /// ```ignore
    /// let firings = ctx.window_state()?.value_state(&ValueStateDescriptor::<u32>::new("firings"))?;
    /// firings.update(firings.value()?.unwrap_or(0) + 1)?;
    /// ```
    pub fn window_state(&mut self) -> Result<KeyedStateStore, StateError> {
        let window = self.window;
        let scope = self.scope()?;
        if scope.merging {
            return Err(StateError::Internal(
                "per-window state is not available with merging windows (sessions)".into(),
            ));
        }
        if !scope.namespace_set {
            scope.store.set_current_namespace(window)?;
            scope.namespace_set = true;
        }
        Ok(scope.store.per_namespace())
    }

    /// Whether this firing used per-window state.
    pub(crate) fn uses_window_state(&self) -> bool {
        self.scope.as_ref().is_some_and(|s| s.namespace_set)
    }

    /// Keyed state of this key across all its windows (Flink's
    /// `globalState()`), the same state the runtime context's descriptors
    /// give.
    pub fn global_state(&mut self) -> Result<KeyedStateStore, StateError> {
        Ok(self.scope()?.store.clone())
    }
}

/// Processes a whole window with context (Flink's `ProcessWindowFunction`).
pub trait ProcessWindowFunction<T, O, K, W>: Send + 'static {
    /// Called once per subtask before the first window.
    fn open(&mut self, _ctx: &RuntimeContext) -> FunctionResult {
        Ok(())
    }

    /// Emits the results of one firing of `ctx.window()` for `key`.
    fn process(
        &mut self,
        key: &K,
        ctx: &mut ProcessWindowContext<'_, W>,
        elements: Elements<'_, T>,
        out: &mut Collector<'_, O>,
    ) -> FunctionResult;

    /// A window is dropped: clean up its window state beyond the default.
    fn clear(&mut self, _ctx: &mut ProcessWindowContext<'_, W>) -> FunctionResult {
        Ok(())
    }
}

impl<T, O, K, W, F> ProcessWindowFunction<T, O, K, W> for F
where
    F: FnMut(
            &K,
            &mut ProcessWindowContext<'_, W>,
            Elements<'_, T>,
            &mut Collector<'_, O>,
        ) -> FunctionResult
        + Send
        + 'static,
{
    fn process(
        &mut self,
        key: &K,
        ctx: &mut ProcessWindowContext<'_, W>,
        elements: Elements<'_, T>,
        out: &mut Collector<'_, O>,
    ) -> FunctionResult {
        self(key, ctx, elements, out)
    }
}

/// Emits the results of a window from key, window and contents (Flink's
/// `WindowFunction`, used with `apply`).
pub trait WindowFunction<T, O, K, W>: Send + 'static {
    /// Emits the results of one firing.
    fn apply(&mut self, key: &K, window: &W, elements: Elements<'_, T>, out: &mut Collector<'_, O>);
}

impl<T, O, K, W, F> WindowFunction<T, O, K, W> for F
where
    F: FnMut(&K, &W, Elements<'_, T>, &mut Collector<'_, O>) + Send + 'static,
{
    fn apply(
        &mut self,
        key: &K,
        window: &W,
        elements: Elements<'_, T>,
        out: &mut Collector<'_, O>,
    ) {
        self(key, window, elements, out)
    }
}
