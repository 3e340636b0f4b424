//! The operator that assigns timestamps and generates watermarks (Flink's
//! `TimestampsAndWatermarksOperator`).

use weir_runtime::element::{Control, StreamRecord, WatermarkStatus, MAX_WATERMARK};
use weir_runtime::operator::{Operator, Output, RuntimeContext};
use weir_runtime::time::SharedClock;
use weir_runtime::FunctionResult;

use super::{
    BoundedOutOfOrderness, GeneratorKind, TimestampKind, WatermarkGenerator, WatermarkOutput,
    WatermarkStrategy,
};

/// A strategy's generator, instantiated; the bounded kind kept apart so its
/// per-record call is static.
pub(crate) enum Generator<T> {
    Bounded(BoundedOutOfOrderness),
    None,
    Custom(Box<dyn WatermarkGenerator<T>>),
}

impl<T> Generator<T> {
    pub(crate) fn new(kind: &GeneratorKind<T>, ctx: &RuntimeContext) -> Self {
        match kind {
            GeneratorKind::Bounded(g) => Generator::Bounded(g.clone()),
            GeneratorKind::None => Generator::None,
            GeneratorKind::Custom(make) => Generator::Custom(make(ctx)),
        }
    }

    #[inline]
    pub(crate) fn on_event(&mut self, event: &T, timestamp: i64, out: &mut WatermarkOutput) {
        match self {
            Generator::Bounded(g) => g.observe(timestamp),
            Generator::None => {}
            Generator::Custom(g) => g.on_event(event, timestamp, out),
        }
    }

    pub(crate) fn on_periodic_emit(&mut self, out: &mut WatermarkOutput) {
        match self {
            Generator::Bounded(g) => WatermarkGenerator::<T>::on_periodic_emit(g, out),
            Generator::None => {}
            Generator::Custom(g) => g.on_periodic_emit(out),
        }
    }
}

/// The timestamp a strategy gives a record.
pub(crate) fn assign_timestamp<T>(
    kind: &TimestampKind<T>,
    value: &T,
    previous: i64,
    now: i64,
) -> i64 {
    match kind {
        TimestampKind::FromRecord => previous,
        TimestampKind::Ingestion => now,
        TimestampKind::Assigner(f) => f(value, previous),
    }
}

/// Flink's `IdlenessTimer`: idle once no record arrived during a full
/// timeout, measured from the first periodic check that saw no activity.
pub(crate) struct Idleness {
    timeout_ms: i64,
    pub activity: u64,
    last_seen_activity: u64,
    inactive_since: Option<i64>,
}

impl Idleness {
    pub(crate) fn new(timeout: std::time::Duration) -> Self {
        Idleness {
            timeout_ms: timeout.as_millis() as i64,
            activity: 0,
            last_seen_activity: 0,
            inactive_since: None,
        }
    }

    pub(crate) fn is_idle(&mut self, now: i64) -> bool {
        if self.activity != self.last_seen_activity {
            self.last_seen_activity = self.activity;
            self.inactive_since = None;
            return false;
        }
        match self.inactive_since {
            None => {
                self.inactive_since = Some(now);
                false
            }
            Some(since) => now - since > self.timeout_ms,
        }
    }
}

/// What an operator that generates watermarks keeps between records: the
/// strategy's generator, idleness and the watermark emitted so far.
struct Watermarking<T> {
    strategy: WatermarkStrategy<T>,
    generator: Generator<T>,
    idleness: Option<Idleness>,
    clock: Option<SharedClock>,
    interval_ms: i64,
    next_periodic: Option<i64>,
    current: i64,
    idle: bool,
}

impl<T> Watermarking<T> {
    fn new(strategy: WatermarkStrategy<T>) -> Self {
        Watermarking {
            strategy,
            generator: Generator::None,
            idleness: None,
            clock: None,
            interval_ms: 0,
            next_periodic: None,
            current: i64::MIN,
            idle: false,
        }
    }

    fn open(&mut self, ctx: &RuntimeContext) {
        self.generator = Generator::new(&self.strategy.generator, ctx);
        self.idleness = self.strategy.idleness.map(Idleness::new);
        self.interval_ms = ctx.auto_watermark_interval.as_millis() as i64;
        if self.interval_ms > 0 {
            self.next_periodic = Some(ctx.clock.now_ms() + self.interval_ms);
        }
        self.clock = Some(ctx.clock.clone());
    }

    /// A batch of records arrived (the stream is active); the processing
    /// time to stamp ingestion-time records with.
    fn start_batch<O: Send + 'static>(&mut self, out: &mut Output<O>) -> FunctionResult<i64> {
        if let Some(idleness) = &mut self.idleness {
            idleness.activity += 1;
        }
        if self.idle {
            self.idle = false;
            out.forward_control(Control::WatermarkStatus(WatermarkStatus::Active))?;
        }
        Ok(match (&self.strategy.timestamps, &self.clock) {
            (TimestampKind::Ingestion, Some(clock)) => clock.now_ms(),
            _ => 0,
        })
    }

    /// Stamps `value` (which came with `previous`) and shows it to the
    /// generator, which writes to `wm` what it emits.
    #[inline]
    fn observe(&mut self, value: &T, previous: i64, now: i64, wm: &mut WatermarkOutput) -> i64 {
        let timestamp = assign_timestamp(&self.strategy.timestamps, value, previous, now);
        self.generator.on_event(value, timestamp, wm);
        timestamp
    }

    /// Applies what the generator wrote to `wm`, if anything, and clears it
    /// for the next record.
    #[inline]
    fn apply_emitted<O: Send + 'static>(
        &mut self,
        wm: &mut WatermarkOutput,
        out: &mut Output<O>,
    ) -> FunctionResult {
        // Each field is tested where it was written: the record path reads
        // nothing wider than the generator stored.
        if wm.watermark.is_some() || wm.idle.is_some() {
            self.apply(std::mem::take(wm), out)?;
        }
        Ok(())
    }

    fn apply<O: Send + 'static>(
        &mut self,
        wm: WatermarkOutput,
        out: &mut Output<O>,
    ) -> FunctionResult {
        if let Some(w) = wm.watermark {
            if self.idle {
                self.idle = false;
                out.forward_control(Control::WatermarkStatus(WatermarkStatus::Active))?;
            }
            if w > self.current {
                self.current = w;
                out.emit_watermark(w)?;
            }
        }
        match wm.idle {
            Some(true) if !self.idle => {
                self.idle = true;
                out.forward_control(Control::WatermarkStatus(WatermarkStatus::Idle))?;
            }
            Some(false) if self.idle => {
                self.idle = false;
                out.forward_control(Control::WatermarkStatus(WatermarkStatus::Active))?;
            }
            _ => {}
        }
        Ok(())
    }

    fn process_watermark<O: Send + 'static>(
        &mut self,
        watermark: i64,
        out: &mut Output<O>,
    ) -> FunctionResult {
        // Upstream watermarks are replaced by this operator's, except the
        // final one that ends the input (as in Flink).
        if watermark == MAX_WATERMARK && self.current != MAX_WATERMARK {
            self.current = MAX_WATERMARK;
            out.emit_watermark(MAX_WATERMARK)?;
        }
        Ok(())
    }

    fn on_processing_time<O: Send + 'static>(
        &mut self,
        now: i64,
        out: &mut Output<O>,
    ) -> FunctionResult {
        let mut wm = WatermarkOutput::default();
        let idle = self.idleness.as_mut().is_some_and(|i| i.is_idle(now));
        if idle {
            wm.mark_idle();
        } else {
            self.generator.on_periodic_emit(&mut wm);
        }
        // While idle, a periodic watermark must not wake the stream up.
        if self.idle && wm.watermark.is_some_and(|w| w <= self.current) {
            wm.watermark = None;
            wm.idle = None;
        }
        self.apply(wm, out)?;
        self.next_periodic = Some(now.saturating_add(self.interval_ms));
        Ok(())
    }
}

pub(crate) struct TimestampsAndWatermarksOperator<T> {
    marks: Watermarking<T>,
}

impl<T> TimestampsAndWatermarksOperator<T> {
    pub fn new(strategy: WatermarkStrategy<T>) -> Self {
        TimestampsAndWatermarksOperator {
            marks: Watermarking::new(strategy),
        }
    }
}

impl<T: Send + 'static> Operator for TimestampsAndWatermarksOperator<T> {
    type In = T;
    type Out = T;

    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.marks.open(ctx);
        Ok(())
    }

    fn process_batch(
        &mut self,
        input: &mut Vec<StreamRecord<T>>,
        out: &mut Output<T>,
    ) -> FunctionResult {
        if input.is_empty() {
            return Ok(());
        }
        let now = self.marks.start_batch(out)?;
        let marks = &mut self.marks;
        match &mut marks.generator {
            // The common cases stay free of per-record dynamic calls to the
            // generator, and stamp records in place: the batch is handed on
            // as it is.
            Generator::Bounded(_) | Generator::None => {
                match &marks.strategy.timestamps {
                    TimestampKind::FromRecord => {}
                    TimestampKind::Ingestion => input.iter_mut().for_each(|r| r.timestamp = now),
                    TimestampKind::Assigner(f) => {
                        for r in input.iter_mut() {
                            r.timestamp = f(&r.value, r.timestamp);
                        }
                    }
                }
                if let Generator::Bounded(g) = &mut marks.generator {
                    if let Some(max) = input.iter().map(|r| r.timestamp).max() {
                        g.observe(max);
                    }
                }
                let records = out.records();
                if records.is_empty() {
                    std::mem::swap(records, input);
                } else {
                    records.append(input);
                }
            }
            Generator::Custom(_) => {
                let records = std::mem::take(input);
                let mut wm = WatermarkOutput::default();
                for mut r in records {
                    r.timestamp = marks.observe(&r.value, r.timestamp, now, &mut wm);
                    out.collect(r);
                    // A punctuated watermark follows the record that caused it.
                    marks.apply_emitted(&mut wm, out)?;
                }
            }
        }
        Ok(())
    }

    fn process_watermark(&mut self, watermark: i64, out: &mut Output<T>) -> FunctionResult {
        self.marks.process_watermark(watermark, out)
    }

    fn processing_deadline(&self) -> Option<i64> {
        self.marks.next_periodic
    }

    fn on_processing_time(&mut self, now: i64, out: &mut Output<T>) -> FunctionResult {
        self.marks.on_processing_time(now, out)
    }
}

/// A scan step's hold on the record it is taking: [`ScanContext::stamp`]
/// shows a value to the strategy's timestamp assigner and watermark
/// generator, and [`ScanContext::collect`] emits a record. A step that
/// decides from a few of a record's fields whether to make it at all
/// stamps a stand-in holding those fields, so that the generator sees
/// every record, kept or not.
pub struct ScanContext<'a, M: Send + 'static> {
    marks: &'a mut Watermarking<M>,
    out: &'a mut Output<M>,
    wm: &'a mut WatermarkOutput,
    previous: i64,
    now: i64,
    timestamp: Option<i64>,
}

impl<M: Send + 'static> ScanContext<'_, M> {
    /// Assigns `value` its timestamp and shows it to the watermark
    /// generator: what the step emits next gets this timestamp.
    #[inline]
    pub fn stamp(&mut self, value: &M) -> i64 {
        let timestamp = self.marks.observe(value, self.previous, self.now, self.wm);
        self.timestamp = Some(timestamp);
        timestamp
    }

    /// As [`stamp`](Self::stamp), with a `timestamp` the step read itself:
    /// the strategy's assigner is not called (a step that knows where its
    /// records keep their time saves a dynamic call per record).
    #[inline]
    pub fn stamp_as(&mut self, value: &M, timestamp: i64) {
        self.marks.generator.on_event(value, timestamp, self.wm);
        self.timestamp = Some(timestamp);
    }

    /// The last watermark this scan emitted (`i64::MIN` before the
    /// first). An operator after it combines its inputs' watermarks by
    /// their minimum, so while none of them is idle its watermark is this
    /// one or an earlier one: a record this scan finds later than it is
    /// late there too. (An idle input is left out of the minimum, which
    /// may then pass this scan's watermark.)
    #[inline]
    pub fn watermark(&self) -> i64 {
        self.marks.current
    }

    /// Emits the value in `taken`, taken out of it where it lies (`None`
    /// is left there) and copied a word at a time
    /// ([`StreamRecord::push_taken`]), as [`collect`](Self::collect)
    /// emits a value: for a value a call returned, which a plain move
    /// reads back in wider pieces than were stored and stalls on.
    #[inline(always)]
    pub fn collect_taken(&mut self, taken: &mut Option<M>) {
        let timestamp = match (self.timestamp, taken.as_ref()) {
            (_, None) => return,
            (Some(t), _) => t,
            (None, Some(value)) => self.stamp(value),
        };
        self.out.collect_taken(taken, timestamp);
    }

    /// Emits `value` with the timestamp last stamped for this input
    /// record, or stamps `value` itself if nothing was.
    #[inline]
    pub fn collect(&mut self, value: M) {
        let timestamp = match self.timestamp {
            Some(t) => t,
            None => self.stamp(&value),
        };
        self.out.collect(StreamRecord { value, timestamp });
    }
}

/// A scan step, timestamps and watermarks record by record in one
/// operator: the step takes each input record with a [`ScanContext`], in
/// which it stamps what it makes (or a stand-in of it) and emits records.
/// The generator sees everything stamped, including what the step then
/// drops.
pub(crate) struct ScanWithWatermarksOperator<I, M, S> {
    scan: S,
    marks: Watermarking<M>,
    _input: std::marker::PhantomData<fn(I)>,
}

impl<I, M, S> ScanWithWatermarksOperator<I, M, S> {
    pub fn new(scan: S, strategy: WatermarkStrategy<M>) -> Self {
        ScanWithWatermarksOperator {
            scan,
            marks: Watermarking::new(strategy),
            _input: std::marker::PhantomData,
        }
    }
}

impl<I, M, S> Operator for ScanWithWatermarksOperator<I, M, S>
where
    I: Send + 'static,
    M: Send + 'static,
    S: FnMut(I, &mut ScanContext<'_, M>) -> FunctionResult + Send + 'static,
{
    type In = I;
    type Out = M;

    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.marks.open(ctx);
        Ok(())
    }

    fn process_batch(
        &mut self,
        input: &mut Vec<StreamRecord<I>>,
        out: &mut Output<M>,
    ) -> FunctionResult {
        if input.is_empty() {
            return Ok(());
        }
        let now = self.marks.start_batch(out)?;
        let mut wm = WatermarkOutput::default();
        for r in input.drain(..) {
            (self.scan)(
                r.value,
                &mut ScanContext {
                    marks: &mut self.marks,
                    out,
                    wm: &mut wm,
                    previous: r.timestamp,
                    now,
                    timestamp: None,
                },
            )?;
            // A punctuated watermark follows the record that caused it.
            self.marks.apply_emitted(&mut wm, out)?;
        }
        Ok(())
    }

    fn process_watermark(&mut self, watermark: i64, out: &mut Output<M>) -> FunctionResult {
        self.marks.process_watermark(watermark, out)
    }

    fn processing_deadline(&self) -> Option<i64> {
        self.marks.next_periodic
    }

    fn on_processing_time(&mut self, now: i64, out: &mut Output<M>) -> FunctionResult {
        self.marks.on_processing_time(now, out)
    }
}
