//! Operators of the broadcast state pattern: input 1 is the main stream,
//! input 2 the broadcast stream (every instance receives all of it).

use std::hash::Hash;
use std::marker::PhantomData;

use serde::de::DeserializeOwned;
use serde::Serialize;
use weir_runtime::element::{StreamRecord, NO_TIMESTAMP};
use weir_runtime::operator::{Output, RuntimeContext, TwoInputOperator};
use weir_runtime::time::SharedClock;
use weir_runtime::FunctionResult;
use weir_state::{KeyedStateStore, OperatorStateStore, StableHash};

use super::process::{keyed_context, set_current_key};
use super::{KeySelector, OwnState};
use crate::functions::{
    BroadcastContext, BroadcastProcessFunction, BroadcastStates, Collector,
    KeyedBroadcastProcessFunction, KeyedTimers, ReadOnlyContext,
};

pub(crate) struct KeyedBroadcastOperator<F, K, I, B, O> {
    f: F,
    key_of: KeySelector<I, K>,
    states: BroadcastStates,
    store: Option<KeyedStateStore>,
    timers: KeyedTimers<K>,
    clock: Option<SharedClock>,
    watermark: i64,
    checkpoint: Option<(OwnState, OperatorStateStore)>,
    _types: PhantomData<fn(I, B) -> O>,
}

impl<F, K: Clone + Eq + Hash, I, B, O> KeyedBroadcastOperator<F, K, I, B, O> {
    pub fn new(f: F, key_of: KeySelector<I, K>, names: &[String]) -> Self {
        KeyedBroadcastOperator {
            f,
            key_of,
            states: BroadcastStates::new(names),
            store: None,
            timers: KeyedTimers::default(),
            clock: None,
            watermark: i64::MIN,
            checkpoint: None,
            _types: PhantomData,
        }
    }

    fn now(&self) -> i64 {
        self.clock.as_ref().map_or(0, |c| c.now_ms())
    }
}

impl<F, K, I, B, O> TwoInputOperator for KeyedBroadcastOperator<F, K, I, B, O>
where
    F: KeyedBroadcastProcessFunction<K, I, B, O>,
    K: Clone + Eq + Hash + Serialize + DeserializeOwned + StableHash + Send + 'static,
    I: Send + 'static,
    B: Send + 'static,
    O: Send + 'static,
{
    type In1 = I;
    type In2 = B;
    type Out = O;

    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.clock = Some(ctx.clock.clone());
        let own = OwnState::new(ctx);
        self.timers.restore(&own)?;
        self.states.restore(&ctx.operator_state)?;
        self.checkpoint = Some((own, ctx.operator_state.clone()));
        let (ctx, store) = keyed_context(ctx)?;
        self.store = Some(store);
        self.f.open(&ctx)
    }

    fn snapshot_state(&mut self, _checkpoint_id: u64) -> FunctionResult {
        if let Some((own, operator_state)) = &self.checkpoint {
            self.timers.save(own)?;
            self.states.snapshot(operator_state)?;
        }
        Ok(())
    }

    fn process_batch1(
        &mut self,
        input: &mut Vec<StreamRecord<I>>,
        out: &mut Output<O>,
    ) -> FunctionResult {
        let now = self.now();
        let (records, sides) = out.split();
        for r in input.drain(..) {
            let key = (self.key_of)(&r.value);
            set_current_key(&self.store, &key)?;
            let mut ctx = ReadOnlyContext {
                states: &mut self.states,
                key: &key,
                timestamp: r.timestamp,
                watermark: self.watermark,
                processing_time: now,
                timers: Some(&mut self.timers),
                sides,
            };
            self.f
                .process_element(r.value, &mut ctx, &mut Collector::new(records, r.timestamp))?;
        }
        Ok(())
    }

    fn process_batch2(
        &mut self,
        input: &mut Vec<StreamRecord<B>>,
        out: &mut Output<O>,
    ) -> FunctionResult {
        let (records, sides) = out.split();
        for r in input.drain(..) {
            let mut ctx = BroadcastContext {
                states: &mut self.states,
                keyed: self.store.as_ref(),
                timestamp: r.timestamp,
                watermark: self.watermark,
                sides,
                _key: PhantomData,
            };
            self.f.process_broadcast_element(
                r.value,
                &mut ctx,
                &mut Collector::new(records, r.timestamp),
            )?;
        }
        Ok(())
    }

    fn process_watermark(&mut self, watermark: i64, out: &mut Output<O>) -> FunctionResult {
        self.watermark = self.watermark.max(watermark);
        let now = self.now();
        while let Some(timer) = self.timers.event.pop_due(watermark) {
            set_current_key(&self.store, &timer.key)?;
            let (records, sides) = out.split();
            let mut ctx = ReadOnlyContext {
                states: &mut self.states,
                key: &timer.key,
                timestamp: timer.timestamp,
                watermark: self.watermark,
                processing_time: now,
                timers: Some(&mut self.timers),
                sides,
            };
            self.f.on_timer(
                timer.timestamp,
                &mut ctx,
                &mut Collector::new(records, timer.timestamp),
            )?;
        }
        out.emit_watermark(watermark)?;
        Ok(())
    }

    fn processing_deadline(&self) -> Option<i64> {
        self.timers.processing.earliest_hint()
    }

    fn on_processing_time(&mut self, now: i64, out: &mut Output<O>) -> FunctionResult {
        while let Some(timer) = self.timers.processing.pop_due(now) {
            set_current_key(&self.store, &timer.key)?;
            let (records, sides) = out.split();
            let mut ctx = ReadOnlyContext {
                states: &mut self.states,
                key: &timer.key,
                timestamp: NO_TIMESTAMP,
                watermark: self.watermark,
                processing_time: now,
                timers: Some(&mut self.timers),
                sides,
            };
            self.f.on_timer(
                timer.timestamp,
                &mut ctx,
                &mut Collector::new(records, NO_TIMESTAMP),
            )?;
        }
        Ok(())
    }

    fn close(&mut self) -> FunctionResult {
        self.f.close()
    }
}

pub(crate) struct BroadcastOperator<F, I, B, O> {
    f: F,
    states: BroadcastStates,
    watermark: i64,
    operator_state: Option<OperatorStateStore>,
    _types: PhantomData<fn(I, B) -> O>,
}

impl<F, I, B, O> BroadcastOperator<F, I, B, O> {
    pub fn new(f: F, names: &[String]) -> Self {
        BroadcastOperator {
            f,
            states: BroadcastStates::new(names),
            watermark: i64::MIN,
            operator_state: None,
            _types: PhantomData,
        }
    }
}

impl<F, I, B, O> TwoInputOperator for BroadcastOperator<F, I, B, O>
where
    F: BroadcastProcessFunction<I, B, O>,
    I: Send + 'static,
    B: Send + 'static,
    O: Send + 'static,
{
    type In1 = I;
    type In2 = B;
    type Out = O;

    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.states.restore(&ctx.operator_state)?;
        self.operator_state = Some(ctx.operator_state.clone());
        self.f.open(ctx)
    }

    fn snapshot_state(&mut self, _checkpoint_id: u64) -> FunctionResult {
        if let Some(operator_state) = &self.operator_state {
            self.states.snapshot(operator_state)?;
        }
        Ok(())
    }

    fn process_batch1(
        &mut self,
        input: &mut Vec<StreamRecord<I>>,
        out: &mut Output<O>,
    ) -> FunctionResult {
        let (records, sides) = out.split();
        for r in input.drain(..) {
            let mut ctx = ReadOnlyContext {
                states: &mut self.states,
                key: &(),
                timestamp: r.timestamp,
                watermark: self.watermark,
                processing_time: 0,
                timers: None,
                sides,
            };
            self.f
                .process_element(r.value, &mut ctx, &mut Collector::new(records, r.timestamp))?;
        }
        Ok(())
    }

    fn process_batch2(
        &mut self,
        input: &mut Vec<StreamRecord<B>>,
        out: &mut Output<O>,
    ) -> FunctionResult {
        let (records, sides) = out.split();
        for r in input.drain(..) {
            let mut ctx = BroadcastContext {
                states: &mut self.states,
                keyed: None,
                timestamp: r.timestamp,
                watermark: self.watermark,
                sides,
                _key: PhantomData,
            };
            self.f.process_broadcast_element(
                r.value,
                &mut ctx,
                &mut Collector::new(records, r.timestamp),
            )?;
        }
        Ok(())
    }

    fn process_watermark(&mut self, watermark: i64, out: &mut Output<O>) -> FunctionResult {
        self.watermark = self.watermark.max(watermark);
        out.emit_watermark(watermark)?;
        Ok(())
    }

    fn close(&mut self) -> FunctionResult {
        self.f.close()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use weir_runtime::testing::{runtime_context, HarnessOutput};
    use weir_state::{MapStateDescriptor, ValueState, ValueStateDescriptor};

    use super::*;
    use crate::functions::FunctionResult;

    fn thresholds() -> MapStateDescriptor<String, i64> {
        MapStateDescriptor::new("thresholds")
    }

    /// Alerts when a reading exceeds its sensor's threshold; counts alerts
    /// per sensor in keyed state; a `reset` rule zeroes every count.
    #[derive(Clone, Default)]
    struct Alerts {
        count: Option<ValueState<u32>>,
    }

    impl KeyedBroadcastProcessFunction<String, (String, i64), (String, i64), String> for Alerts {
        fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
            self.count = Some(ctx.get_state(&ValueStateDescriptor::new("alerts"))?);
            Ok(())
        }

        fn process_element(
            &mut self,
            (sensor, value): (String, i64),
            ctx: &mut ReadOnlyContext<'_, String>,
            out: &mut Collector<'_, String>,
        ) -> FunctionResult {
            let limit = ctx
                .get_broadcast_state(&thresholds())?
                .get(&sensor)
                .copied();
            if limit.is_some_and(|l| value > l) {
                let count = self.count.as_ref().ok_or("not opened")?;
                let n = count.value()?.unwrap_or(0) + 1;
                count.update(n)?;
                out.collect(format!(
                    "{sensor}:{value}>{} #{n}",
                    limit.unwrap_or_default()
                ));
            }
            Ok(())
        }

        fn process_broadcast_element(
            &mut self,
            (sensor, limit): (String, i64),
            ctx: &mut BroadcastContext<'_, String>,
            _out: &mut Collector<'_, String>,
        ) -> FunctionResult {
            if sensor == "reset" {
                ctx.apply_to_keyed_state(
                    &ValueStateDescriptor::<u32>::new("alerts"),
                    |_key, state| {
                        state.clear()?;
                        Ok(())
                    },
                )?;
            } else {
                ctx.get_broadcast_state(&thresholds())?
                    .insert(sensor, limit);
            }
            Ok(())
        }
    }

    fn op() -> KeyedBroadcastOperator<Alerts, String, (String, i64), (String, i64), String> {
        let key_of: KeySelector<(String, i64), String> = Arc::new(|r: &(String, i64)| r.0.clone());
        KeyedBroadcastOperator::new(Alerts::default(), key_of, &["thresholds".to_string()])
    }

    fn rec<T>(v: T) -> Vec<StreamRecord<T>> {
        vec![StreamRecord::new(v)]
    }

    #[test]
    fn rules_from_the_broadcast_side_apply_to_keyed_records() -> FunctionResult {
        let mut op = op();
        let mut h = HarnessOutput::new();
        op.open(&runtime_context("rules"))?;
        op.process_batch1(&mut rec(("a".to_string(), 100)), &mut h.output)?;
        assert!(h.take_values().is_empty(), "no rule yet");
        op.process_batch2(&mut rec(("a".to_string(), 50)), &mut h.output)?;
        op.process_batch2(&mut rec(("b".to_string(), 10)), &mut h.output)?;
        op.process_batch1(&mut rec(("a".to_string(), 60)), &mut h.output)?;
        op.process_batch1(&mut rec(("a".to_string(), 40)), &mut h.output)?;
        op.process_batch1(&mut rec(("b".to_string(), 11)), &mut h.output)?;
        op.process_batch1(&mut rec(("a".to_string(), 70)), &mut h.output)?;
        assert_eq!(
            h.take_values(),
            vec!["a:60>50 #1", "b:11>10 #1", "a:70>50 #2"]
        );
        // A reset visits every key's keyed state.
        op.process_batch2(&mut rec(("reset".to_string(), 0)), &mut h.output)?;
        op.process_batch1(&mut rec(("a".to_string(), 99)), &mut h.output)?;
        op.process_batch1(&mut rec(("b".to_string(), 99)), &mut h.output)?;
        assert_eq!(h.take_values(), vec!["a:99>50 #1", "b:99>10 #1"]);
        Ok(())
    }

    #[test]
    fn a_broadcast_state_the_stream_does_not_carry_is_an_error() -> FunctionResult {
        let key_of: KeySelector<(String, i64), String> = Arc::new(|r: &(String, i64)| r.0.clone());
        let mut op: KeyedBroadcastOperator<Alerts, String, (String, i64), (String, i64), String> =
            KeyedBroadcastOperator::new(Alerts::default(), key_of, &["other".to_string()]);
        let mut h = HarnessOutput::new();
        op.open(&runtime_context("rules"))?;
        assert!(op
            .process_batch2(&mut rec(("a".to_string(), 1)), &mut h.output)
            .is_err());
        Ok(())
    }
}
