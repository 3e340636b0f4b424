//! Event time: timestamps and watermarks (Flink's `WatermarkStrategy`).
//!
//! A [`WatermarkStrategy`] says where a record's event timestamp comes from
//! (a timestamp assigner) and when watermarks are emitted (a
//! [`WatermarkGenerator`]): on events (punctuated), periodically on the
//! auto-watermark interval, or both. `with_idleness` marks a stream idle
//! when it has no records for a while, so it stops holding back the
//! watermark of the operators downstream.

mod operator;

pub use operator::ScanContext;
pub(crate) use operator::{
    assign_timestamp, Generator, Idleness, ScanWithWatermarksOperator,
    TimestampsAndWatermarksOperator,
};

use std::sync::Arc;
use std::time::Duration;

use crate::functions::RuntimeContext;

/// Where a generator sends watermarks and idleness (Flink's `WatermarkOutput`).
#[derive(Debug, Default)]
pub struct WatermarkOutput {
    pub(crate) watermark: Option<i64>,
    pub(crate) idle: Option<bool>,
}

impl WatermarkOutput {
    /// Emits a watermark: no record with a timestamp `<= watermark` is
    /// expected any more. Watermarks that do not advance are ignored.
    pub fn emit_watermark(&mut self, watermark: i64) {
        self.watermark = Some(self.watermark.map_or(watermark, |w| w.max(watermark)));
        self.idle = Some(false);
    }

    /// Marks the stream idle until the next record or watermark.
    pub fn mark_idle(&mut self) {
        self.idle = Some(true);
    }

    /// Marks the stream active again.
    pub fn mark_active(&mut self) {
        self.idle = Some(false);
    }
}

/// Decides when to emit watermarks (Flink's `WatermarkGenerator`).
pub trait WatermarkGenerator<T>: Send {
    /// Sees every record with its assigned timestamp; may emit (punctuated).
    fn on_event(&mut self, event: &T, timestamp: i64, output: &mut WatermarkOutput);

    /// Called every auto-watermark interval; may emit (periodic).
    fn on_periodic_emit(&mut self, output: &mut WatermarkOutput);
}

/// Watermarks trailing the largest timestamp seen by a fixed bound (Flink's
/// `BoundedOutOfOrdernessWatermarks`): `max_timestamp - bound - 1`, emitted
/// periodically.
#[derive(Debug, Clone)]
pub struct BoundedOutOfOrderness {
    max_timestamp: i64,
    /// How far the watermark trails the largest timestamp: `bound + 1`,
    /// or the delay of [`with_delay`](Self::with_delay).
    lag_ms: i64,
}

impl BoundedOutOfOrderness {
    /// A generator tolerating records up to `bound` out of order.
    pub fn new(bound: Duration) -> Self {
        Self::lagging(bound.as_millis() as i64 + 1)
    }

    /// A generator whose watermark is the largest timestamp less `delay`
    /// (Flink SQL's `WATERMARK FOR ts AS ts - INTERVAL …`, which has no
    /// DataStream generator's extra millisecond).
    pub fn with_delay(delay: Duration) -> Self {
        Self::lagging(delay.as_millis() as i64)
    }

    fn lagging(lag_ms: i64) -> Self {
        BoundedOutOfOrderness {
            // Flink's start value, so the first watermark is i64::MIN.
            max_timestamp: i64::MIN + lag_ms,
            lag_ms,
        }
    }

    /// The watermark this generator would emit now.
    pub fn current_watermark(&self) -> i64 {
        self.max_timestamp - self.lag_ms
    }

    #[inline]
    pub(crate) fn observe(&mut self, timestamp: i64) {
        self.max_timestamp = self.max_timestamp.max(timestamp);
    }
}

impl<T> WatermarkGenerator<T> for BoundedOutOfOrderness {
    fn on_event(&mut self, _event: &T, timestamp: i64, _output: &mut WatermarkOutput) {
        self.observe(timestamp);
    }

    fn on_periodic_emit(&mut self, output: &mut WatermarkOutput) {
        output.emit_watermark(self.current_watermark());
    }
}

type AssignerFn<T> = Arc<dyn Fn(&T, i64) -> i64 + Send + Sync>;
type GeneratorFactory<T> =
    Arc<dyn Fn(&RuntimeContext) -> Box<dyn WatermarkGenerator<T>> + Send + Sync>;

pub(crate) enum GeneratorKind<T> {
    /// Bounded out-of-orderness (monotonous = bound 0), or a watermark
    /// a delay behind the largest timestamp; kept apart from `Custom` so
    /// the per-record call is static.
    Bounded(BoundedOutOfOrderness),
    None,
    Custom(GeneratorFactory<T>),
}

pub(crate) enum TimestampKind<T> {
    /// Keep the record's timestamp (set by the source).
    FromRecord,
    /// The processing time when the record passes (ingestion time).
    Ingestion,
    /// A user function of the record and its previous timestamp.
    Assigner(AssignerFn<T>),
}

impl<T> Clone for GeneratorKind<T> {
    fn clone(&self) -> Self {
        match self {
            GeneratorKind::Bounded(g) => GeneratorKind::Bounded(g.clone()),
            GeneratorKind::None => GeneratorKind::None,
            GeneratorKind::Custom(f) => GeneratorKind::Custom(Arc::clone(f)),
        }
    }
}

impl<T> Clone for TimestampKind<T> {
    fn clone(&self) -> Self {
        match self {
            TimestampKind::FromRecord => TimestampKind::FromRecord,
            TimestampKind::Ingestion => TimestampKind::Ingestion,
            TimestampKind::Assigner(f) => TimestampKind::Assigner(Arc::clone(f)),
        }
    }
}

/// How a stream gets event timestamps and watermarks.
pub struct WatermarkStrategy<T> {
    pub(crate) generator: GeneratorKind<T>,
    pub(crate) timestamps: TimestampKind<T>,
    pub(crate) idleness: Option<Duration>,
}

impl<T> Clone for WatermarkStrategy<T> {
    fn clone(&self) -> Self {
        WatermarkStrategy {
            generator: self.generator.clone(),
            timestamps: self.timestamps.clone(),
            idleness: self.idleness,
        }
    }
}

impl<T: 'static> WatermarkStrategy<T> {
    fn with_generator(generator: GeneratorKind<T>) -> Self {
        WatermarkStrategy {
            generator,
            timestamps: TimestampKind::FromRecord,
            idleness: None,
        }
    }

    /// Watermarks `max_timestamp - bound - 1`, emitted periodically.
    pub fn for_bounded_out_of_orderness(bound: Duration) -> Self {
        Self::with_generator(GeneratorKind::Bounded(BoundedOutOfOrderness::new(bound)))
    }

    /// Watermarks `max_timestamp - delay`, emitted periodically: Flink
    /// SQL's `WATERMARK FOR ts AS ts - INTERVAL '…'`.
    pub fn for_max_timestamp_less(delay: Duration) -> Self {
        Self::with_generator(GeneratorKind::Bounded(BoundedOutOfOrderness::with_delay(
            delay,
        )))
    }

    /// For timestamps that never decrease: bounded out-of-orderness of zero.
    pub fn for_monotonous_timestamps() -> Self {
        Self::for_bounded_out_of_orderness(Duration::ZERO)
    }

    /// Timestamps without watermarks: event-time windows fire only at the
    /// end of bounded input.
    pub fn no_watermarks() -> Self {
        Self::with_generator(GeneratorKind::None)
    }

    /// Ingestion time: each record gets the processing time at which it
    /// passes, and watermarks follow it (Flink's `IngestionTimeAssigner`
    /// with monotonous watermarks).
    pub fn for_ingestion_time() -> Self {
        WatermarkStrategy {
            timestamps: TimestampKind::Ingestion,
            ..Self::for_monotonous_timestamps()
        }
    }

    /// A user's generator, made per subtask by `make`.
    pub fn for_generator<G, F>(make: F) -> Self
    where
        G: WatermarkGenerator<T> + 'static,
        F: Fn(&RuntimeContext) -> G + Send + Sync + 'static,
    {
        Self::with_generator(GeneratorKind::Custom(Arc::new(move |ctx| {
            Box::new(make(ctx)) as Box<dyn WatermarkGenerator<T>>
        })))
    }

    /// Takes each record's timestamp from `f(record, previous_timestamp)`.
    pub fn with_timestamp_assigner<F>(mut self, f: F) -> Self
    where
        F: Fn(&T, i64) -> i64 + Send + Sync + 'static,
    {
        self.timestamps = TimestampKind::Assigner(Arc::new(f));
        self
    }

    /// Marks the stream idle after `timeout` of processing time without
    /// records (checked on the auto-watermark interval, as Flink does).
    pub fn with_idleness(mut self, timeout: Duration) -> Self {
        self.idleness = Some(timeout);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn emitted(mut g: BoundedOutOfOrderness, timestamps: &[i64]) -> Option<i64> {
        for &t in timestamps {
            g.observe(t);
        }
        let mut out = WatermarkOutput::default();
        WatermarkGenerator::<()>::on_periodic_emit(&mut g, &mut out);
        out.watermark
    }

    #[test]
    fn a_bound_trails_by_one_more_millisecond_than_a_delay() {
        let four = Duration::from_secs(4);
        let seen = [7_000, 10_000, 9_000];
        // The DataStream generator: `max - bound - 1`.
        assert_eq!(
            emitted(BoundedOutOfOrderness::new(four), &seen),
            Some(5_999)
        );
        assert_eq!(
            emitted(BoundedOutOfOrderness::new(Duration::ZERO), &seen),
            Some(9_999)
        );
        // SQL's `ts - INTERVAL '4' SECOND`: `max - delay`.
        assert_eq!(
            emitted(BoundedOutOfOrderness::with_delay(four), &seen),
            Some(6_000)
        );
        assert_eq!(
            emitted(BoundedOutOfOrderness::with_delay(Duration::ZERO), &seen),
            Some(10_000)
        );
        // Before any record, either is as low as a watermark goes.
        for g in [
            BoundedOutOfOrderness::new(four),
            BoundedOutOfOrderness::with_delay(four),
            BoundedOutOfOrderness::with_delay(Duration::ZERO),
        ] {
            assert_eq!(emitted(g, &[]), Some(i64::MIN));
        }
    }
}
