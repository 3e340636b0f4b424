//! Window functions, triggers, evictors and lateness through whole jobs.
//! (Window semantics against Flink's own output are the golden tests of the
//! examples crate; these cover the API around them.)

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use proptest::prelude::*;
use weir::prelude::*;

use crate::sorted;

/// Runs `test` on an environment per state backend: the heap keeps window
/// contents in operator memory, RocksDB in the backend.
fn each_backend(
    test: impl Fn(StreamExecutionEnvironment) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    test(StreamExecutionEnvironment::new())?;
    #[cfg(feature = "rocksdb")]
    {
        let env = StreamExecutionEnvironment::new();
        let mut c = Configuration::new();
        c.set("state.backend.type", "rocksdb");
        env.configure(&c)?;
        test(env)?;
    }
    Ok(())
}

/// Event (key, timestamp, value) with punctuated watermarks `max - ooo - 1`.
fn events(
    env: &StreamExecutionEnvironment,
    input: Vec<(u8, i64, i64)>,
    ooo: i64,
) -> DataStream<(u8, i64, i64)> {
    struct Punctuated {
        max: i64,
        ooo: i64,
    }
    impl<T> WatermarkGenerator<T> for Punctuated {
        fn on_event(&mut self, _e: &T, ts: i64, out: &mut WatermarkOutput) {
            self.max = self.max.max(ts);
            out.emit_watermark(self.max - self.ooo - 1);
        }
        fn on_periodic_emit(&mut self, _out: &mut WatermarkOutput) {}
    }
    env.set_auto_watermark_interval(std::time::Duration::ZERO);
    env.from_collection(input)
        .assign_timestamps_and_watermarks(
            WatermarkStrategy::for_generator(move |_| Punctuated {
                max: i64::MIN + ooo + 1,
                ooo,
            })
            .with_timestamp_assigner(|e: &(u8, i64, i64), _| e.1),
        )
        // One generator sees every record, so lateness does not depend on the
        // parallelism of what follows.
        .set_parallelism(1)
}

#[derive(Clone)]
struct SumCount;

impl AggregateFunction<(u8, i64, i64), (i64, i64), (i64, i64)> for SumCount {
    fn create_accumulator(&mut self) -> (i64, i64) {
        (0, 0)
    }
    fn add(&mut self, v: (u8, i64, i64), acc: &mut (i64, i64)) {
        acc.0 += v.2;
        acc.1 += 1;
    }
    fn get_result(&mut self, acc: &(i64, i64)) -> (i64, i64) {
        *acc
    }
    fn merge(&mut self, a: (i64, i64), b: (i64, i64)) -> (i64, i64) {
        (a.0 + b.0, a.1 + b.1)
    }
}

type Row = (u8, i64, i64, i64, i64);

fn with_window<W: Window>(
    f: impl Fn(&W) -> (i64, i64) + Clone + Send + Sync + 'static,
) -> impl ProcessWindowFunction<(i64, i64), Row, u8, W> + Clone {
    move |k: &u8,
          ctx: &mut ProcessWindowContext<'_, W>,
          r: Elements<'_, (i64, i64)>,
          out: &mut Collector<'_, Row>| {
        let (start, end) = f(ctx.window());
        for (sum, count) in r {
            out.collect((*k, start, end, *sum, *count));
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Tumbling,
    Sliding,
    Session,
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        Just(Kind::Tumbling),
        Just(Kind::Sliding),
        Just(Kind::Session)
    ]
}

/// The default path: incremental aggregation (aligned windows keep state by
/// time slice).
fn run_incremental(input: Vec<(u8, i64, i64)>, p: u32, kind: Kind) -> Vec<Row> {
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(p);
    let keyed = events(&env, input, 50).key_by(|e| e.0);
    let f = with_window(|w: &TimeWindow| (w.start, w.end));
    let lateness = Duration::from_millis(20);
    let out = match kind {
        Kind::Tumbling => keyed
            .window(TumblingEventTimeWindows::of(Duration::from_millis(70)))
            .allowed_lateness(lateness)
            .aggregate_with(SumCount, f),
        Kind::Sliding => keyed
            .window(SlidingEventTimeWindows::of(
                Duration::from_millis(100),
                Duration::from_millis(40),
            ))
            .allowed_lateness(lateness)
            .aggregate_with(SumCount, f),
        Kind::Session => keyed
            .window(EventTimeSessionWindows::with_gap(Duration::from_millis(30)))
            .allowed_lateness(lateness)
            .aggregate_with(SumCount, f),
    };
    sorted(out.execute_and_collect().expect("the job runs"))
}

/// The general path: every element kept, an explicit event-time trigger
/// (Flink's `WindowOperator` as is).
fn run_buffered(input: Vec<(u8, i64, i64)>, kind: Kind) -> Vec<Row> {
    let env = StreamExecutionEnvironment::new();
    let keyed = events(&env, input, 50).key_by(|e| e.0);
    let f = |k: &u8,
             ctx: &mut ProcessWindowContext<'_, TimeWindow>,
             e: Elements<'_, (u8, i64, i64)>,
             out: &mut Collector<'_, Row>| {
        let (sum, count) = e.fold((0, 0), |(s, c), v| (s + v.2, c + 1));
        out.collect((*k, ctx.window().start, ctx.window().end, sum, count));
        Ok(())
    };
    let lateness = Duration::from_millis(20);
    let out = match kind {
        Kind::Tumbling => keyed
            .window(TumblingEventTimeWindows::of(Duration::from_millis(70)))
            .trigger(EventTimeTrigger::create())
            .allowed_lateness(lateness)
            .process(f),
        Kind::Sliding => keyed
            .window(SlidingEventTimeWindows::of(
                Duration::from_millis(100),
                Duration::from_millis(40),
            ))
            .trigger(EventTimeTrigger::create())
            .allowed_lateness(lateness)
            .process(f),
        Kind::Session => keyed
            .window(EventTimeSessionWindows::with_gap(Duration::from_millis(30)))
            .trigger(EventTimeTrigger::create())
            .allowed_lateness(lateness)
            .process(f),
    };
    sorted(out.execute_and_collect().expect("the job runs"))
}

/// Flink's semantics of aligned event-time windows, computed plainly:
/// punctuated watermarks `max - 51` after each record; a record is dropped
/// for a window whose cleanup time (`end - 1 + lateness`) the watermark has
/// reached, and fires it again at once if its end passed; a watermark
/// fires windows whose end it passes and drops those it cleans up; the end
/// of input fires the rest. Rows `(key, start, end, sum, count)`, sorted.
fn model(input: &[(u8, i64, i64)], kind: Kind) -> Vec<Row> {
    use std::collections::BTreeMap;
    let windows = |ts: i64| -> Vec<(i64, i64)> {
        match kind {
            Kind::Tumbling => {
                let start = ts - ts.rem_euclid(70);
                vec![(start, start + 70)]
            }
            Kind::Sliding => {
                let mut out = Vec::new();
                let mut start = ts - ts.rem_euclid(40);
                while start > ts - 100 {
                    out.push((start, start + 100));
                    start -= 40;
                }
                out
            }
            Kind::Session => unreachable!("sessions merge: not modelled here"),
        }
    };
    let lateness = 20;
    type State = BTreeMap<(u8, i64, i64), (i64, i64)>;
    // The watermark moves from `from` to `to`: windows whose end it passes
    // fire; windows it cleans up go.
    fn advance(from: i64, to: i64, lateness: i64, state: &mut State, rows: &mut Vec<Row>) {
        for (&(k, start, end), &(sum, count)) in state.iter() {
            if from < end - 1 && end - 1 <= to {
                rows.push((k, start, end, sum, count));
            }
        }
        state.retain(|&(_, _, end), _| end - 1 + lateness > to);
    }
    let mut state = State::new();
    let mut rows = Vec::new();
    let (mut watermark, mut max_ts) = (i64::MIN, i64::MIN);
    for &(k, ts, v) in input {
        for (start, end) in windows(ts) {
            if end - 1 + lateness <= watermark {
                continue;
            }
            let acc = state.entry((k, start, end)).or_insert((0, 0));
            acc.0 += v;
            acc.1 += 1;
            if end - 1 <= watermark {
                rows.push((k, start, end, acc.0, acc.1));
            }
        }
        max_ts = max_ts.max(ts);
        if max_ts - 51 > watermark {
            advance(watermark, max_ts - 51, lateness, &mut state, &mut rows);
            watermark = max_ts - 51;
        }
    }
    advance(watermark, i64::MAX, lateness, &mut state, &mut rows);
    sorted(rows)
}

fn stream() -> impl Strategy<Value = Vec<(u8, i64, i64)>> {
    // Timestamps drift upwards with disorder and the odd very late record.
    proptest::collection::vec((0u8..4, 0i64..60, 0i64..100, any::<bool>()), 1..120).prop_map(|v| {
        let mut t = 0;
        v.into_iter()
            .map(|(k, step, value, late)| {
                t += step;
                let ts = if late { t - 200 } else { t - step / 2 };
                (k, ts, value)
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn incremental_aggregate_equals_process_over_all_elements(input in stream(), kind in kind()) {
        let incremental = run_incremental(input.clone(), 1, kind);
        // The first record is never late: some window always fires.
        prop_assert!(!incremental.is_empty());
        if !matches!(kind, Kind::Session) {
            prop_assert_eq!(&incremental, &model(&input, kind));
        }
        prop_assert_eq!(incremental, run_buffered(input, kind));
    }

    #[test]
    fn keyed_windows_give_the_same_results_at_parallelism_1_and_4(input in stream(), kind in kind()) {
        // With punctuated watermarks from one source subtask, lateness is
        // decided identically at any parallelism of the window operator.
        let parallel = run_incremental(input.clone(), 4, kind);
        prop_assert!(!parallel.is_empty());
        if !matches!(kind, Kind::Session) {
            prop_assert_eq!(&parallel, &model(&input, kind));
        }
        prop_assert_eq!(parallel, run_incremental(input, 1, kind));
    }
}

#[test]
fn late_records_without_a_side_output_are_counted() -> anyhow::Result<()> {
    let env = StreamExecutionEnvironment::new();
    events(
        &env,
        vec![(1, 100, 1), (1, 20_000, 2), (1, 50, 3), (2, 60, 4)],
        0,
    )
    .key_by(|e| e.0)
    .window(TumblingEventTimeWindows::of(Duration::from_secs(10)))
    .reduce(|a: (u8, i64, i64), b: (u8, i64, i64)| (a.0, a.1, a.2 + b.2))
    .add_sink(DiscardingSink);
    let result = env.execute("late")?;
    assert_eq!(result.num_late_records_dropped(), 2);
    assert_eq!(
        result
            .operator("Window")
            .map(|o| o.num_late_records_dropped),
        Some(2)
    );
    Ok(())
}

/// Records never stamped have no event time: an event-time window fails
/// the job and says what is missing (Flink: "Record has Long.MIN_VALUE
/// timestamp"), whether its windows are tumbling (the aligned operator),
/// sliding with a process function or sessions (the general one).
#[test]
fn records_without_timestamps_fail_an_event_time_window() {
    type Event = (u8, i64, i64);
    type Reduce = fn(Event, Event) -> Event;
    type Job = fn(&DataStream<Event>, Reduce);
    let reduce = |a: Event, b: Event| (a.0, a.1, a.2 + b.2);
    let jobs: [(&str, Job); 3] = [
        ("tumbling", |s, f| {
            s.key_by(|e| e.0)
                .window(TumblingEventTimeWindows::of(Duration::from_secs(10)))
                .reduce(f)
                .add_sink(DiscardingSink);
        }),
        ("sliding", |s, f| {
            s.key_by(|e| e.0)
                .window(SlidingEventTimeWindows::of(
                    Duration::from_secs(10),
                    Duration::from_secs(5),
                ))
                .trigger(CountTrigger::of(1))
                .reduce(f)
                .add_sink(DiscardingSink);
        }),
        ("session", |s, f| {
            s.key_by(|e| e.0)
                .window(EventTimeSessionWindows::with_gap(Duration::from_secs(1)))
                .reduce(f)
                .add_sink(DiscardingSink);
        }),
    ];
    for (name, job) in jobs {
        let env = StreamExecutionEnvironment::new();
        let unstamped = env.from_elements(vec![(1_u8, 100_i64, 1_i64), (1, 200, 2)]);
        job(&unstamped, reduce);
        let e = env.execute(name).expect_err("no timestamps");
        assert!(
            format!("{e:#}").contains("a record without a timestamp reached an event-time window"),
            "{name}: {e:#}"
        );
    }
}

#[test]
fn windows_with_offsets_and_negative_timestamps() -> anyhow::Result<()> {
    let env = StreamExecutionEnvironment::new();
    let out = events(
        &env,
        vec![(0, -1, 1), (0, 1_999, 2), (0, 2_000, 4), (0, -10_001, 8)],
        100_000,
    )
    .key_by(|e| e.0)
    .window(TumblingEventTimeWindows::of_with_offset(
        Duration::from_secs(10),
        Duration::from_secs(2),
    ))
    .aggregate_with(SumCount, with_window(|w: &TimeWindow| (w.start, w.end)))
    .execute_and_collect()?;
    assert_eq!(
        out,
        vec![
            (0, -18_000, -8_000, 8, 1),
            (0, -8_000, 2_000, 3, 2),
            (0, 2_000, 12_000, 4, 1)
        ]
    );
    Ok(())
}

#[test]
fn time_evictor_keeps_the_newest_elements_of_each_firing() -> anyhow::Result<()> {
    each_backend(|env| {
        let out = events(&env, (0..10).map(|i| (0u8, i * 1_000, i)).collect(), 0)
            .key_by(|e| e.0)
            .window(GlobalWindows::create())
            .trigger(CountTrigger::of(5))
            .evictor(TimeEvictor::of(Duration::from_millis(2_500)))
            .reduce(|a: (u8, i64, i64), b: (u8, i64, i64)| (a.0, b.1, a.2 + b.2))
            .execute_and_collect()?;
        // After 5 records (t = 0..4 s) the evictor keeps t > 1.5 s: 2 + 3 + 4;
        // after 10, t > 6.5 s: 7 + 8 + 9.
        assert_eq!(out.iter().map(|e| e.2).collect::<Vec<_>>(), vec![9, 24]);
        Ok(())
    })
}

#[test]
fn delta_evictor_and_count_trigger() -> anyhow::Result<()> {
    each_backend(|env| {
        let out = env
            .from_elements(vec![1i64, 2, 50, 51, 52, 3, 53])
            .count_window_all(1)
            .evictor(DeltaEvictor::of(10.0, |a: &i64, b: &i64| {
                (b - a).abs() as f64
            }))
            .apply(
                |_w: &GlobalWindow, e: Elements<'_, i64>, out: &mut Collector<'_, String>| {
                    out.collect(e.map(|v| v.to_string()).collect::<Vec<_>>().join(" "));
                },
            )
            .execute_and_collect()?;
        // Count window of 1 fires and purges on every record; the evictor drops
        // nothing then. The purge keeps each window to its own record.
        assert_eq!(out, vec!["1", "2", "50", "51", "52", "3", "53"]);
        // The same environment (and backend) builds the next job.
        let out = env
            .from_elements(vec![1i64, 2, 50, 51, 3, 52])
            .window_all(GlobalWindows::create())
            .trigger(CountTrigger::of(2))
            .evictor(DeltaEvictor::of(10.0, |a: &i64, b: &i64| {
                (b - a).abs() as f64
            }))
            .apply(
                |_w: &GlobalWindow, e: Elements<'_, i64>, out: &mut Collector<'_, String>| {
                    out.collect(e.map(|v| v.to_string()).collect::<Vec<_>>().join(" "));
                },
            )
            .execute_and_collect()?;
        // Every 2 records, elements 10 or more from the newest are evicted; the
        // rest stay for the next firing.
        assert_eq!(out, vec!["1 2", "50 51", "50 51 52"]);
        Ok(())
    })
}

#[test]
fn continuous_event_time_trigger_fires_early_results() -> anyhow::Result<()> {
    let env = StreamExecutionEnvironment::new();
    let out = events(&env, (0..10).map(|i| (0u8, i * 1_000, 1)).collect(), 0)
        .key_by(|e| e.0)
        .window(TumblingEventTimeWindows::of(Duration::from_secs(10)))
        .trigger(ContinuousEventTimeTrigger::of(Duration::from_secs(3)))
        .aggregate(SumCount)
        .execute_and_collect()?;
    // Early firings at 3 s, 6 s and 9 s, each when the record one second
    // later raises the watermark past it (that record already counted),
    // then the window's end at the end of input.
    assert_eq!(
        out.iter().map(|r| r.1).collect::<Vec<_>>(),
        vec![5, 8, 10, 10]
    );
    Ok(())
}

#[test]
fn process_window_functions_keep_window_and_global_state() -> anyhow::Result<()> {
    each_backend(|env| {
        let late = OutputTag::<String>::new("audit");
        let tag = late.clone();
        let out = events(
            &env,
            vec![(1, 1_000, 1), (1, 11_000, 2), (1, 5_000, 3), (1, 30_000, 4)],
            0,
        )
        .key_by(|e| e.0)
        .window(TumblingEventTimeWindows::of(Duration::from_secs(10)))
        .allowed_lateness(Duration::from_secs(5))
        .process(
            move |_k: &u8,
                  ctx: &mut ProcessWindowContext<'_, TimeWindow>,
                  e: Elements<'_, (u8, i64, i64)>,
                  out: &mut Collector<'_, String>| {
                let firings = ctx
                    .window_state()?
                    .value_state(&ValueStateDescriptor::<u32>::new("firings"))?;
                let total = ctx
                    .global_state()?
                    .value_state(&ValueStateDescriptor::<u32>::new("total"))?;
                let firing = firings.value()?.unwrap_or(0) + 1;
                firings.update(firing)?;
                let total = total.value()?.unwrap_or(0) + 1;
                ctx.global_state()?
                    .value_state(&ValueStateDescriptor::<u32>::new("total"))?
                    .update(total)?;
                let sum: i64 = e.map(|v| v.2).sum();
                ctx.output(&tag, format!("fired {}", ctx.window().start));
                out.collect(format!(
                    "{} sum {sum} firing {firing} total {total}",
                    ctx.window().start
                ));
                Ok(())
            },
        );
        let audit = Arc::new(AtomicI64::new(0));
        let counter = Arc::clone(&audit);
        out.get_side_output(&late).add_sink(move |_s: String| {
            counter.fetch_add(1, Ordering::SeqCst);
            Ok(())
        });
        let out = out.execute_and_collect()?;
        assert_eq!(
            out,
            vec![
                "0 sum 1 firing 1 total 1",
                // The late record (5 s) re-fires window 0: its second firing.
                "0 sum 4 firing 2 total 2",
                "10000 sum 2 firing 1 total 3",
                "30000 sum 4 firing 1 total 4",
            ]
        );
        assert_eq!(audit.load(Ordering::SeqCst), 4);
        Ok(())
    })
}

#[test]
fn count_windows_per_key_in_parallel() -> anyhow::Result<()> {
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(3);
    let out = env
        .from_sequence(1, 20)
        // One source subtask: each key's records arrive in order.
        .set_parallelism(1)
        .key_by(|x: &i64| x % 2)
        .count_window(4)
        .reduce(|a: i64, b: i64| a + b)
        .execute_and_collect()?;
    // Odd: 1+3+5+7, 9+..+15; even: 2+4+6+8, 10+..+16; 17, 19, 18, 20 never fire.
    assert_eq!(sorted(out), vec![16, 20, 48, 52]);
    Ok(())
}

#[test]
fn event_time_sessions_with_dynamic_gaps() -> anyhow::Result<()> {
    each_backend(|env| {
        // The value is the record's gap: sessions close `value` ms after it.
        let out = events(
            &env,
            vec![
                (0, 0, 100),
                (0, 50, 100),
                (1, 0, 5),
                (1, 10, 5),
                (0, 1_000, 10),
                (0, 1_005, 10),
            ],
            2_000,
        )
        .key_by(|e| e.0)
        .window(EventTimeSessionWindows::with_dynamic_gap(
            |e: &(u8, i64, i64)| Duration::from_millis(e.2 as u64),
        ))
        .aggregate_with(SumCount, with_window(|w: &TimeWindow| (w.start, w.end)))
        .execute_and_collect()?;
        assert_eq!(
            sorted(out),
            vec![
                (0, 0, 150, 200, 2),
                (0, 1_000, 1_015, 20, 2),
                (1, 0, 5, 5, 1),
                (1, 10, 15, 5, 1),
            ]
        );
        Ok(())
    })
}

#[test]
fn a_purging_trigger_empties_the_window_at_each_firing() -> anyhow::Result<()> {
    let run = |purging: bool| -> anyhow::Result<Vec<i64>> {
        let env = StreamExecutionEnvironment::new();
        let windows = env.from_sequence(1, 5).window_all(GlobalWindows::create());
        let windows = if purging {
            windows.trigger(PurgingTrigger::of(CountTrigger::of(2)))
        } else {
            windows.trigger(CountTrigger::of(2))
        };
        Ok(windows
            .reduce(|a: i64, b: i64| a + b)
            .execute_and_collect()?)
    };
    // Every second record fires; purged, each firing sums its own two.
    assert_eq!(run(true)?, vec![1 + 2, 3 + 4]);
    assert_eq!(run(false)?, vec![1 + 2, 1 + 2 + 3 + 4]);
    Ok(())
}

/// A user's trigger: fires (and purges) on a negative value, a punctuation
/// that closes the key's batch.
#[derive(Clone)]
struct OnPunctuation;

impl<W: Window> Trigger<(u8, i64, i64), W> for OnPunctuation {
    fn on_element(
        &mut self,
        element: &(u8, i64, i64),
        _timestamp: i64,
        _window: &W,
        ctx: &mut TriggerContext<'_>,
    ) -> TriggerResult {
        *ctx.state::<u64>() += 1;
        if element.2 < 0 {
            TriggerResult::FireAndPurge
        } else {
            TriggerResult::Continue
        }
    }
    fn on_event_time(&mut self, _: i64, _: &W, _: &mut TriggerContext<'_>) -> TriggerResult {
        TriggerResult::Continue
    }
    fn on_processing_time(&mut self, _: i64, _: &W, _: &mut TriggerContext<'_>) -> TriggerResult {
        TriggerResult::Continue
    }
    fn clear(&mut self, _window: &W, ctx: &mut TriggerContext<'_>) {
        ctx.clear_state();
    }
}

/// A user's assigner: each record in the window of its hundred and in the
/// window of its thousand (nested tumbling windows), by event time.
#[derive(Clone)]
struct HundredsAndThousands;

impl<T: 'static> WindowAssigner<T> for HundredsAndThousands {
    type W = TimeWindow;

    fn assign_windows(&self, _e: &T, ts: i64, _ctx: &AssignerContext, out: &mut Vec<TimeWindow>) {
        for size in [100, 1_000] {
            let start = ts - ts.rem_euclid(size);
            out.push(TimeWindow::new(start, start + size));
        }
    }

    fn default_trigger(&self) -> Box<dyn Trigger<T, TimeWindow>> {
        Box::new(EventTimeTrigger::create())
    }

    fn is_event_time(&self) -> bool {
        true
    }
}

#[test]
fn user_triggers_and_assigners_run_in_a_job() -> anyhow::Result<()> {
    each_backend(|env| {
        let input = vec![(0, 10, 1), (0, 150, 2), (0, 990, 4), (1, 20, 8)];
        let out = events(&env, input, 5_000)
            .key_by(|e| e.0)
            .window(HundredsAndThousands)
            .aggregate_with(SumCount, with_window(|w: &TimeWindow| (w.start, w.end)))
            .execute_and_collect()?;
        assert_eq!(
            sorted(out),
            vec![
                (0, 0, 100, 1, 1),
                (0, 0, 1_000, 7, 3),
                (0, 100, 200, 2, 1),
                (0, 900, 1_000, 4, 1),
                (1, 0, 100, 8, 1),
                (1, 0, 1_000, 8, 1),
            ]
        );

        let input = vec![
            (0, 1, 1),
            (1, 2, 10),
            (0, 3, 2),
            (0, 4, -1),
            (0, 5, 4),
            (1, 6, -1),
        ];
        let out = events(&env, input, 0)
            .key_by(|e| e.0)
            .window(GlobalWindows::create())
            .trigger(OnPunctuation)
            .reduce(|a: (u8, i64, i64), b: (u8, i64, i64)| (a.0, b.1, a.2 + b.2))
            .execute_and_collect()?;
        // Each punctuation emits the key's batch (itself included); key 0's
        // last record waits for a punctuation that never comes.
        assert_eq!(sorted(out), vec![(0, 4, 2), (1, 6, 9)]);
        Ok(())
    })
}
