//! Event time and processing time: watermark strategies, timers, idleness,
//! processing-time windows on a manual clock.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use weir::prelude::*;
use weir::window::ProcessingTimeSessionWindows;
use weir_runtime::time::ManualClock;

use crate::{in_step_with, sorted};

/// Emits `after every event`: max_ts - bound - 1.
struct Punctuated {
    max: i64,
}

impl<T> WatermarkGenerator<T> for Punctuated {
    fn on_event(&mut self, _e: &T, ts: i64, out: &mut WatermarkOutput) {
        self.max = self.max.max(ts);
        out.emit_watermark(self.max - 1);
    }
    fn on_periodic_emit(&mut self, _out: &mut WatermarkOutput) {}
}

fn punctuated<T: 'static>() -> WatermarkStrategy<T> {
    WatermarkStrategy::for_generator(|_| Punctuated { max: i64::MIN + 1 })
}

/// Fires a timer 10 ms after each record's time; reports record and timer
/// events with the watermark it saw.
#[derive(Clone, Default)]
struct Delayed;

impl KeyedProcessFunction<String, (String, i64), String> for Delayed {
    fn process_element(
        &mut self,
        (key, ts): (String, i64),
        ctx: &mut ProcessContext<'_, String>,
        out: &mut Collector<'_, String>,
    ) -> FunctionResult {
        let mut timers = ctx.timer_service();
        timers.register_event_time_timer(ts + 10);
        // A duplicate registration fires once.
        timers.register_event_time_timer(ts + 10);
        if ts == 5 {
            // Registered, then deleted: never fires.
            timers.register_event_time_timer(1_000);
            timers.delete_event_time_timer(1_000);
        }
        out.collect(format!("record {key}@{ts}"));
        Ok(())
    }

    fn on_timer(
        &mut self,
        timestamp: i64,
        ctx: &mut ProcessContext<'_, String>,
        out: &mut Collector<'_, String>,
    ) -> FunctionResult {
        assert_eq!(ctx.time_domain(), Some(TimeDomain::EventTime));
        assert_eq!(ctx.timestamp(), Some(timestamp));
        out.collect(format!("timer {}@{timestamp}", ctx.get_current_key()));
        Ok(())
    }
}

#[test]
fn event_time_timers_fire_in_order_per_key_once() -> anyhow::Result<()> {
    let env = StreamExecutionEnvironment::new();
    env.set_auto_watermark_interval(Duration::ZERO);
    let out = env
        .from_elements(vec![
            ("a".to_string(), 5),
            ("b".to_string(), 7),
            ("a".to_string(), 12),
            ("a".to_string(), 30),
        ])
        .assign_timestamps_and_watermarks(
            punctuated().with_timestamp_assigner(|e: &(String, i64), _| e.1),
        )
        .key_by(|e| e.0.clone())
        .process(Delayed)
        .execute_and_collect()?;
    assert_eq!(
        out,
        vec![
            "record a@5",
            "record b@7",
            "record a@12",
            // Watermark 29 passes 15 and 17 (timers at ts + 10).
            "record a@30",
            "timer a@15",
            "timer b@17",
            "timer a@22",
            // The end of input fires the rest.
            "timer a@40",
        ]
    );
    Ok(())
}

/// Reports each record with its timestamp and the watermark before it.
fn with_time_and_watermark(stream: &DataStream<(String, i64)>) -> DataStream<String> {
    stream.process(
        |(key, _): (String, i64), ctx: &mut ProcessContext<'_>, out: &mut Collector<'_, String>| {
            out.collect(format!(
                "{key}@{} after {}",
                ctx.timestamp().unwrap_or(-1),
                ctx.current_watermark()
            ));
            Ok(())
        },
    )
}

#[test]
fn a_fused_filter_map_stamps_what_it_makes_and_watermarks_follow_what_it_drops(
) -> anyhow::Result<()> {
    let env = StreamExecutionEnvironment::new();
    env.set_auto_watermark_interval(Duration::ZERO);
    let made = env
        .from_elements(vec!["a 5", "no number", "x 30", "b 7", "c 40"])
        .filter_map_with_watermarks(
            |line: &'static str| {
                let (key, ts) = line.split_once(' ').unwrap_or_default();
                Ok(ts.parse().ok().map(|ts: i64| (key.to_string(), ts)))
            },
            punctuated().with_timestamp_assigner(|e: &(String, i64), _| e.1),
            |e: &mut (String, i64)| {
                e.0.make_ascii_uppercase();
                Ok(e.0 != "X")
            },
        );
    let out = with_time_and_watermark(&made).execute_and_collect()?;
    assert_eq!(
        out,
        vec![
            // Stamped from the record `make` made, changed by `keep`.
            "A@5 after -9223372036854775808",
            // "x 30" was dropped after the generator saw it: watermark 29.
            "B@7 after 29",
            "C@40 after 29",
        ]
    );
    Ok(())
}

#[test]
fn a_scan_stamps_a_stand_in_and_makes_only_the_records_it_keeps() -> anyhow::Result<()> {
    let env = StreamExecutionEnvironment::new();
    env.set_auto_watermark_interval(Duration::ZERO);
    let made = env
        .from_elements(vec!["a 5", "x 30", "b 7", "c 40", "no number", "d 41"])
        .scan_with_watermarks(
            |line: &'static str, ctx: &mut ScanContext<'_, (String, i64)>| {
                let (key, ts) = line.split_once(' ').unwrap_or_default();
                let Ok(ts) = ts.parse::<i64>() else {
                    return Ok(());
                };
                // "d" is emitted unstamped: it is stamped as it leaves.
                if key != "d" {
                    // The stand-in holds the time only; the key is read
                    // after.
                    ctx.stamp(&(String::new(), ts));
                }
                if key != "x" {
                    ctx.collect((key.to_uppercase(), ts));
                }
                Ok(())
            },
            punctuated().with_timestamp_assigner(|e: &(String, i64), _| e.1),
        );
    let out = with_time_and_watermark(&made).execute_and_collect()?;
    assert_eq!(
        out,
        vec![
            "A@5 after -9223372036854775808",
            // "x 30" was stamped and dropped: watermark 29.
            "B@7 after 29",
            "C@40 after 29",
            "D@41 after 39",
        ]
    );
    Ok(())
}

#[test]
fn a_fused_filter_map_fails_the_job_with_the_error_of_its_step() {
    let env = StreamExecutionEnvironment::new();
    env.from_elements(vec![1_i64, 2, 3])
        .filter_map_with_watermarks(
            |n: i64| Ok(Some(n)),
            WatermarkStrategy::for_monotonous_timestamps().with_timestamp_assigner(|n, _| *n),
            |n: &mut i64| {
                if *n == 2 {
                    return Err("two is not allowed".into());
                }
                Ok(true)
            },
        )
        .print();
    let err = env.execute("fused").expect_err("the job fails");
    assert!(format!("{err:#}").contains("two is not allowed"), "{err:#}");
}

#[test]
fn timers_outside_a_keyed_stream_fail_the_job() {
    let env = StreamExecutionEnvironment::new();
    env.from_elements(vec![1i64])
        .process(
            |_x: i64, ctx: &mut ProcessContext<'_>, _out: &mut Collector<'_, i64>| {
                ctx.timer_service().register_event_time_timer(10);
                Ok(())
            },
        )
        .add_sink(DiscardingSink);
    let err = env
        .execute("timers")
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("only supported on keyed streams"), "{err}");
}

/// Emits `0..=last`, record `i` at processing time `i` ms of a manual
/// clock, one record a poll, counting what it emitted.
#[derive(Clone)]
struct TickingNumbers {
    clock: ManualClock,
    next: i64,
    last: i64,
    emitted: Arc<std::sync::atomic::AtomicI64>,
}

impl SourceFunction<i64> for TickingNumbers {
    fn poll_next(&mut self, ctx: &mut SourceContext<'_, i64>) -> FunctionResult<SourceStatus> {
        if self.next > self.last {
            return Ok(SourceStatus::Finished);
        }
        self.clock.set(self.next);
        ctx.collect(self.next);
        self.emitted
            .store(self.next + 1, std::sync::atomic::Ordering::SeqCst);
        self.next += 1;
        Ok(SourceStatus::More)
    }
}

#[test]
fn bounded_out_of_orderness_emits_periodically_on_the_clock() -> anyhow::Result<()> {
    // Record i has timestamp i ms and comes at i ms of processing time.
    // The generator's watermark (max - 100 - 1) goes out every 200 ms of
    // processing time: 1099 at 1200 ms, which fires [0, 1000) while the
    // source is still running, long before the end of input.
    let clock = ManualClock::new(0);
    let env = in_step_with(&clock)?;
    env.set_auto_watermark_interval(Duration::from_millis(200));
    let emitted = Arc::new(std::sync::atomic::AtomicI64::new(0));
    let source = TickingNumbers {
        clock,
        next: 0,
        last: 2000,
        emitted: Arc::clone(&emitted),
    };
    let out = env
        .add_source(source, "ticking")
        .assign_timestamps_and_watermarks(
            WatermarkStrategy::for_bounded_out_of_orderness(Duration::from_millis(100))
                .with_timestamp_assigner(|x: &i64, _| *x),
        )
        .window_all(TumblingEventTimeWindows::of(Duration::from_secs(1)))
        .reduce(|a: i64, b: i64| a + b)
        .map(move |sum: i64| (sum, emitted.load(std::sync::atomic::Ordering::SeqCst)))
        .execute_and_collect()?;
    let sums: Vec<i64> = out.iter().map(|(sum, _)| *sum).collect();
    assert_eq!(sums, vec![(0..1000).sum::<i64>(), (1000..2000).sum(), 2000]);
    // Fired by the periodic watermark of 1200 ms, when 1201 records were out.
    let (_, fired_at) = out[0];
    assert!(
        (1100..=1300).contains(&fired_at),
        "fired after {fired_at} records"
    );
    Ok(())
}

/// A source that moves a manual clock before each record, one record per
/// poll, so the chained operators see a known processing time.
#[derive(Clone)]
struct ClockedSource {
    clock: ManualClock,
    script: Vec<(i64, &'static str)>,
    next: usize,
}

impl SourceFunction<String> for ClockedSource {
    fn poll_next(&mut self, ctx: &mut SourceContext<'_, String>) -> FunctionResult<SourceStatus> {
        let Some((time, key)) = self.script.get(self.next) else {
            return Ok(SourceStatus::Finished);
        };
        self.clock.set(*time);
        ctx.collect(key.to_string());
        self.next += 1;
        Ok(SourceStatus::More)
    }
}

/// Records of `script` from a [`ClockedSource`] on a job whose clock it
/// moves.
fn clocked(script: Vec<(i64, &'static str)>) -> anyhow::Result<DataStream<String>> {
    let clock = ManualClock::new(0);
    let env = in_step_with(&clock)?;
    Ok(env.add_source(
        ClockedSource {
            clock,
            script,
            next: 0,
        },
        "clocked",
    ))
}

#[test]
fn processing_time_windows_follow_the_manual_clock() -> anyhow::Result<()> {
    let records = clocked(vec![
        (1_000, "a"),
        (3_000, "b"),
        (4_000, "a"),
        (6_000, "a"),
        (12_000, "b"),
    ])?;
    let out = records
        .map(|k: String| (k, 1i64))
        .key_by(|(k, _)| k.clone())
        .window(TumblingProcessingTimeWindows::of(Duration::from_secs(5)))
        .process(
            |k: &String,
             ctx: &mut ProcessWindowContext<'_, TimeWindow>,
             e: Elements<'_, (String, i64)>,
             out: &mut Collector<'_, String>| {
                out.collect(format!(
                    "{k} {}..{} {}",
                    ctx.window().start,
                    ctx.window().end,
                    e.len()
                ));
                Ok(())
            },
        )
        .execute_and_collect()?;
    // [0,5000) fires when the clock passes 4999 (at the record of 6000, which
    // already belongs to [5000,10000)); the rest fire at the end of input.
    assert_eq!(
        sorted(out),
        vec![
            "a 0..5000 2",
            "a 5000..10000 1",
            "b 0..5000 1",
            "b 10000..15000 1"
        ]
    );
    Ok(())
}

#[test]
fn processing_time_sessions_close_after_the_gap() -> anyhow::Result<()> {
    let records = clocked(vec![(1_000, "x"), (2_000, "y"), (9_000, "z"), (9_500, "w")])?;
    let out = records
        .window_all(ProcessingTimeSessionWindows::with_gap(Duration::from_secs(
            5,
        )))
        .apply(
            |w: &TimeWindow, e: Elements<'_, String>, out: &mut Collector<'_, String>| {
                out.collect(format!(
                    "{}..{} {}",
                    w.start,
                    w.end,
                    e.cloned().collect::<Vec<_>>().join("")
                ));
            },
        )
        .execute_and_collect()?;
    assert_eq!(out, vec!["1000..7000 xy", "9000..14500 zw"]);
    Ok(())
}

#[derive(Clone, Default)]
struct Ticker {
    seen: Arc<Mutex<Vec<String>>>,
}

impl KeyedProcessFunction<String, String, String> for Ticker {
    fn process_element(
        &mut self,
        value: String,
        ctx: &mut ProcessContext<'_, String>,
        _out: &mut Collector<'_, String>,
    ) -> FunctionResult {
        let now = ctx.timer_service().current_processing_time();
        ctx.timer_service()
            .register_processing_time_timer(now + 500);
        self.seen
            .lock()
            .map_err(|_| "poisoned")?
            .push(format!("{value}@{now}"));
        Ok(())
    }

    fn on_timer(
        &mut self,
        timestamp: i64,
        ctx: &mut ProcessContext<'_, String>,
        out: &mut Collector<'_, String>,
    ) -> FunctionResult {
        assert_eq!(ctx.time_domain(), Some(TimeDomain::ProcessingTime));
        assert_eq!(ctx.timestamp(), None);
        out.collect(format!("{} fired {timestamp}", ctx.get_current_key()));
        Ok(())
    }
}

#[test]
fn processing_time_timers_fire_from_the_clock() -> anyhow::Result<()> {
    let records = clocked(vec![(100, "a"), (200, "b"), (700, "a")])?;
    let ticker = Ticker::default();
    let seen = Arc::clone(&ticker.seen);
    let out = records
        .key_by(|k: &String| k.clone())
        .process(ticker)
        .execute_and_collect()?;
    // a's timer at 600 fires when the clock reaches 700; the rest at the end.
    assert_eq!(out[0], "a fired 600");
    assert_eq!(
        sorted(out[1..].to_vec()),
        vec!["a fired 1200", "b fired 700"]
    );
    assert_eq!(
        *seen.lock().map_err(|_| anyhow::anyhow!("poisoned"))?,
        vec!["a@100", "b@200", "a@700"]
    );
    Ok(())
}

/// Subtask 0 emits ascending timestamps then goes quiet without ending;
/// subtask 1 never emits anything.
#[derive(Clone)]
struct TwoPartitions {
    emitted: Arc<AtomicBool>,
    subtask: u32,
    next: i64,
}

impl SourceFunction<i64> for TwoPartitions {
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.subtask = ctx.subtask_index;
        Ok(())
    }

    fn poll_next(&mut self, ctx: &mut SourceContext<'_, i64>) -> FunctionResult<SourceStatus> {
        if self.subtask == 0 && self.next <= 25_000 {
            ctx.collect_with_timestamp(self.next, self.next);
            self.next += 1_000;
            if self.next > 25_000 {
                self.emitted.store(true, Ordering::SeqCst);
            }
        } else {
            std::thread::sleep(Duration::from_millis(2));
        }
        Ok(SourceStatus::More)
    }
}

/// Runs the two-partition job, moving the manual clock forward, until a
/// window result arrives or `budget` of real time passes; returns results.
fn run_two_partitions(idleness: Option<Duration>, budget: Duration) -> anyhow::Result<Vec<i64>> {
    let clock = ManualClock::new(0);
    let env = StreamExecutionEnvironment::new();
    env.set_clock(Arc::new(clock.clone()));
    env.set_parallelism(2);
    let emitted = Arc::new(AtomicBool::new(false));
    let mut strategy = WatermarkStrategy::for_bounded_out_of_orderness(Duration::ZERO);
    if let Some(timeout) = idleness {
        strategy = strategy.with_idleness(timeout);
    }
    let results = Arc::new(Mutex::new(Vec::new()));
    let sink_results = Arc::clone(&results);
    env.from_source(
        TwoPartitions {
            emitted: Arc::clone(&emitted),
            subtask: 0,
            next: 0,
        },
        strategy,
        "two partitions",
    )
    .window_all(TumblingEventTimeWindows::of(Duration::from_secs(10)))
    .reduce(|a: i64, b: i64| a + b)
    .add_sink(move |sum: i64| {
        sink_results.lock().map_err(|_| "poisoned")?.push(sum);
        Ok(())
    })
    .set_parallelism(1);
    let client = env.execute_async("idleness")?;
    let start = Instant::now();
    let ticks = AtomicU64::new(0);
    while start.elapsed() < budget {
        if emitted.load(Ordering::SeqCst) {
            clock.advance(100);
            ticks.fetch_add(1, Ordering::Relaxed);
        }
        if !results
            .lock()
            .map_err(|_| anyhow::anyhow!("poisoned"))?
            .is_empty()
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    client.cancel();
    let _ = client.wait();
    let out = results
        .lock()
        .map_err(|_| anyhow::anyhow!("poisoned"))?
        .clone();
    Ok(out)
}

#[test]
fn an_idle_partition_does_not_hold_back_windows() -> anyhow::Result<()> {
    let out = run_two_partitions(Some(Duration::from_secs(1)), Duration::from_secs(30))?;
    // The first window [0, 10000) holds 0, 1000, …, 9000.
    assert_eq!(out.first(), Some(&45_000), "{out:?}");
    Ok(())
}

#[test]
fn without_idleness_an_empty_partition_holds_windows_back() -> anyhow::Result<()> {
    // Whatever the clock does, the silent partition's watermark stays at the
    // minimum, so no window can fire while the job runs.
    let out = run_two_partitions(None, Duration::from_secs(2))?;
    assert!(out.is_empty(), "{out:?}");
    Ok(())
}

/// Passes records through and fails the job if the watermark it sees ever
/// goes back (the invariant every operator relies on).
#[derive(Clone, Default)]
struct MonotonicWatermarks {
    last: i64,
}

impl ProcessFunction<(u8, i64), (u8, i64)> for MonotonicWatermarks {
    fn open(&mut self, _ctx: &RuntimeContext) -> FunctionResult {
        self.last = i64::MIN;
        Ok(())
    }

    fn process_element(
        &mut self,
        value: (u8, i64),
        ctx: &mut ProcessContext<'_>,
        out: &mut Collector<'_, (u8, i64)>,
    ) -> FunctionResult {
        let wm = ctx.current_watermark();
        if wm < self.last {
            return Err(format!("watermark went back from {} to {wm}", self.last).into());
        }
        self.last = wm;
        out.collect(value);
        Ok(())
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 12, ..Default::default() })]

    #[test]
    fn watermarks_never_regress_through_a_parallel_pipeline(
        input in proptest::collection::vec((0u8..8, 0i64..10_000), 1..300),
        p in 1u32..5,
    ) {
        let env = StreamExecutionEnvironment::new();
        env.set_parallelism(p).set_auto_watermark_interval(Duration::ZERO);
        let out = env
            .from_collection(input.clone())
            .rebalance()
            .assign_timestamps_and_watermarks(
                punctuated().with_timestamp_assigner(|e: &(u8, i64), _| e.1),
            )
            .process(MonotonicWatermarks::default())
            .key_by(|e| e.0)
            .as_stream()
            .process(MonotonicWatermarks::default())
            .rebalance()
            .process(MonotonicWatermarks::default())
            .execute_and_collect();
        let out = out.map_err(|e| proptest::test_runner::TestCaseError::fail(e.to_string()))?;
        proptest::prop_assert_eq!(sorted(out), sorted(input));
    }
}

/// Two splits in one source subtask: split 0 runs ahead to 30 s, split 1
/// stops at 5 s and, if `finish`, says it is done.
#[derive(Clone)]
struct TwoSplits {
    finish: bool,
    done: Arc<AtomicBool>,
    step: i64,
}

impl SplitSourceFunction<i64> for TwoSplits {
    fn poll_next(&mut self, ctx: &mut SplitContext<'_, i64>) -> FunctionResult<SourceStatus> {
        if self.step <= 30 {
            ctx.collect_with_timestamp(0, self.step, self.step * 1_000);
            if self.step <= 5 {
                ctx.collect_with_timestamp(1, 100 + self.step, self.step * 1_000);
            }
            if self.step == 5 && self.finish {
                ctx.finish_split(1);
            }
            self.step += 1;
        } else {
            self.done.store(true, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(2));
        }
        Ok(SourceStatus::More)
    }
}

fn run_two_splits(finish: bool) -> anyhow::Result<Vec<i64>> {
    let env = StreamExecutionEnvironment::new();
    env.set_auto_watermark_interval(Duration::ZERO);
    let done = Arc::new(AtomicBool::new(false));
    let results = Arc::new(Mutex::new(Vec::new()));
    let sink_results = Arc::clone(&results);
    env.from_split_source(
        TwoSplits {
            finish,
            done: Arc::clone(&done),
            step: 0,
        },
        punctuated(),
        "two splits",
    )
    .set_parallelism(1)
    .window_all(TumblingEventTimeWindows::of(Duration::from_secs(10)))
    .reduce(|a: i64, b: i64| a + b)
    .add_sink(move |sum: i64| {
        sink_results.lock().map_err(|_| "poisoned")?.push(sum);
        Ok(())
    });
    let client = env.execute_async("splits")?;
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(20) {
        let got = results
            .lock()
            .map_err(|_| anyhow::anyhow!("poisoned"))?
            .len();
        if got >= 2
            || (done.load(Ordering::SeqCst)
                && start.elapsed() > Duration::from_millis(300)
                && !finish)
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    client.cancel();
    let _ = client.wait();
    let out = results
        .lock()
        .map_err(|_| anyhow::anyhow!("poisoned"))?
        .clone();
    Ok(out)
}

#[test]
fn a_lagging_split_holds_the_watermark_back() -> anyhow::Result<()> {
    // Split 0 alone would fire [0, 10 s) and [10 s, 20 s); split 1 stopped
    // at 5 s, so the source's watermark stays at 4.999 s.
    assert!(run_two_splits(false)?.is_empty());
    Ok(())
}

#[test]
fn a_finished_split_stops_holding_the_watermark_back() -> anyhow::Result<()> {
    let out = run_two_splits(true)?;
    // [0, 10 s): split 0's 0..=9 plus split 1's 100..=105.
    let first: i64 = (0..=9).sum::<i64>() + (100..=105).sum::<i64>();
    assert_eq!(out.first(), Some(&first), "{out:?}");
    assert_eq!(out.get(1), Some(&(10..=19).sum::<i64>()), "{out:?}");
    Ok(())
}

#[test]
fn ingestion_time_stamps_records_with_the_sources_clock() -> anyhow::Result<()> {
    let records = clocked(vec![
        (1_000, "a"),
        (3_000, "b"),
        (6_000, "c"),
        (12_000, "d"),
    ])?;
    let out = records
        .assign_timestamps_and_watermarks(WatermarkStrategy::for_ingestion_time())
        .window_all(TumblingEventTimeWindows::of(Duration::from_secs(5)))
        .apply(
            |w: &TimeWindow, e: Elements<'_, String>, out: &mut Collector<'_, String>| {
                let keys: Vec<String> = e.cloned().collect();
                out.collect(format!("{}..{} {}", w.start, w.end, keys.join("")));
            },
        )
        .execute_and_collect()?;
    // Event time is the processing time each record entered the job.
    assert_eq!(out, vec!["0..5000 ab", "5000..10000 c", "10000..15000 d"]);
    Ok(())
}

#[test]
fn a_continuous_processing_time_trigger_fires_on_the_clock() -> anyhow::Result<()> {
    let records = clocked(vec![
        (1_000, "a"),
        (3_000, "b"),
        (6_000, "c"),
        (12_000, "d"),
    ])?;
    let out = records
        .window_all(GlobalWindows::create())
        .trigger(ContinuousProcessingTimeTrigger::of(Duration::from_secs(5)))
        .apply(
            |_w: &GlobalWindow, e: Elements<'_, String>, out: &mut Collector<'_, String>| {
                out.collect(e.cloned().collect::<Vec<_>>().join(""));
            },
        )
        .execute_and_collect()?;
    // Timers at 5 s and 10 s of processing time (the first record's time
    // rounded up to the interval, then every interval); each fires when the
    // clock has passed it, after the record that moved the clock, and
    // keeps the contents. The end of input fires the pending 15 s timer
    // once (as every processing-time timer then), not the ones it goes on
    // registering.
    assert_eq!(out, vec!["abc", "abcd", "abcd"]);
    Ok(())
}

#[test]
fn a_processing_time_trigger_fires_event_time_windows_by_the_clock() -> anyhow::Result<()> {
    let records = clocked(vec![
        (1_000, "a"),
        (3_000, "b"),
        (6_000, "c"),
        (11_000, "d"),
    ])?;
    // Records stamped 0 ms of event time, no watermark before the end: only
    // the clock can fire their window (at its end, 10 s, in processing
    // time), which it does once it passed 10 s.
    let out = records
        .assign_timestamps_and_watermarks(
            WatermarkStrategy::no_watermarks().with_timestamp_assigner(|_: &String, _| 0),
        )
        .window_all(TumblingEventTimeWindows::of(Duration::from_secs(10)))
        .trigger(ProcessingTimeTrigger::create())
        .apply(
            |w: &TimeWindow, e: Elements<'_, String>, out: &mut Collector<'_, String>| {
                out.collect(format!("{}..{} {}", w.start, w.end, e.len()));
            },
        )
        .execute_and_collect()?;
    assert_eq!(out, vec!["0..10000 4"]);
    Ok(())
}
