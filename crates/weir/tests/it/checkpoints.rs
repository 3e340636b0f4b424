//! Checkpoints and recovery through whole jobs: a task fails mid-stream,
//! the job restarts from its latest checkpoint, and the keyed state counts
//! every record exactly once.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use weir::prelude::*;
use weir::sink::{CollectSink, FileSink, RollingPolicy, WriteAheadSink, WriteAheadWriter};
use weir::{CheckpointStorage, MemoryCheckpointStorage};

pub(crate) const KEYS: u64 = 40;

/// When a function injects its failure: at the first record from `at` on
/// that comes after a checkpoint completed, in the first attempt only. A
/// failure at a fixed record could come before any checkpoint on a slow
/// machine, and the restart would then restore nothing.
#[derive(Clone, Copy, Debug)]
struct FailAfterCheckpoint {
    at: Option<u64>,
    checkpointed: bool,
}

impl FailAfterCheckpoint {
    fn at(at: Option<u64>) -> Self {
        FailAfterCheckpoint {
            at,
            checkpointed: false,
        }
    }

    fn open(&mut self, ctx: &RuntimeContext) {
        if ctx.attempt_number > 0 {
            self.at = None;
        }
        // Without checkpointing there is nothing to wait for.
        self.checkpointed = !ctx.is_checkpointing();
    }

    fn fail_now(&self, record: u64) -> bool {
        self.checkpointed && self.at.is_some_and(|at| record >= at)
    }
}

/// Counts records per key in a `ValueState` and emits `(key, count)`;
/// fails once, after a checkpoint (see [`FailAfterCheckpoint`]).
#[derive(Clone)]
struct CountingThatFails {
    count: Option<ValueState<u64>>,
    fail: FailAfterCheckpoint,
}

impl CountingThatFails {
    fn new(fail_at: Option<u64>) -> Self {
        CountingThatFails {
            count: None,
            fail: FailAfterCheckpoint::at(fail_at),
        }
    }
}

impl MapFunction<u64, (u64, u64)> for CountingThatFails {
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.count = Some(ctx.get_state(&ValueStateDescriptor::<u64>::new("count"))?);
        self.fail.open(ctx);
        Ok(())
    }

    fn notify_checkpoint_complete(&mut self, _checkpoint_id: u64) -> FunctionResult {
        self.fail.checkpointed = true;
        Ok(())
    }

    fn map(&mut self, i: u64) -> (u64, u64) {
        if self.fail.fail_now(i) {
            panic!("injected failure at record {i}");
        }
        let state = self.count.as_ref().expect("opened");
        let n = state.value().expect("readable").unwrap_or(0) + 1;
        state.update(n).expect("writable");
        (i % KEYS, n)
    }
}

struct Run {
    counts: BTreeMap<u64, Vec<u64>>,
    result: JobExecutionResult,
}

pub(crate) fn counting_job(
    env: &StreamExecutionEnvironment,
    records: u64,
    rate: f64,
    fail_at: Option<u64>,
) -> Arc<Mutex<Vec<(u64, u64)>>> {
    let out = Arc::new(Mutex::new(Vec::new()));
    env.add_parallel_source(
        GeneratorSource::new(records, |i| i).with_rate_limit(rate),
        "numbers",
    )
    .uid("numbers")
    .key_by(|i| i % KEYS)
    .map(CountingThatFails::new(fail_at))
    .uid("count")
    .add_sink(CollectSink::new(Arc::clone(&out)))
    .set_parallelism(1);
    out
}

fn run(env: &StreamExecutionEnvironment, records: u64, fail_at: Option<u64>) -> Run {
    // A second of input: time for checkpoints before the failure.
    let out = counting_job(env, records, records as f64, fail_at);
    let result = env.execute("counting").expect("job recovers");
    let mut counts: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for (k, n) in out.lock().expect("sink lock").drain(..) {
        counts.entry(k).or_default().push(n);
    }
    Run { counts, result }
}

fn checkpointing(p: u32, mode: CheckpointingMode) -> StreamExecutionEnvironment {
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(p)
        .enable_checkpointing_with_mode(Duration::from_millis(40), mode)
        .set_restart_strategy(RestartStrategy::fixed_delay(1, Duration::ZERO));
    env
}

/// Every key counted to its full total (no loss) and, if `exact`, no
/// count went past it (nothing counted twice).
fn assert_counts(run: &Run, records: u64, exact: bool) {
    let per_key = records / KEYS;
    assert_eq!(run.counts.len() as u64, KEYS);
    for (key, counts) in &run.counts {
        let max = counts.iter().copied().max().unwrap_or(0);
        if exact {
            assert_eq!(max, per_key, "key {key} counted {max}, expected {per_key}");
        } else {
            assert!(max >= per_key, "key {key} lost records: {max} < {per_key}");
        }
        // The sink is not transactional, so a restart may repeat outputs,
        // but every count from 1 to the total appears.
        let mut seen = counts.clone();
        seen.sort_unstable();
        seen.dedup();
        assert!(
            (1..=per_key).all(|n| seen.binary_search(&n).is_ok()),
            "key {key} skipped a count"
        );
    }
}

fn assert_recovered(run: &Run) {
    assert_eq!(
        run.result.restarts, 1,
        "{:?}",
        run.result.recovered_failures
    );
    assert!(run.result.recovered_failures[0].contains("injected failure"));
    assert!(
        run.result.checkpoints.restored.is_some(),
        "the restart did not restore a checkpoint: {:?}",
        run.result.checkpoints
    );
}

#[test]
fn exactly_once_state_survives_a_failure_at_parallelism_1() {
    let records = 40_000;
    let run = run(
        &checkpointing(1, CheckpointingMode::ExactlyOnce),
        records,
        Some(20_000),
    );
    assert_recovered(&run);
    assert_counts(&run, records, true);
}

#[test]
fn exactly_once_state_survives_a_failure_at_parallelism_2() {
    let records = 40_000;
    // Subtask 0 of the source emits 0..20 000, subtask 1 the rest.
    let run = run(
        &checkpointing(2, CheckpointingMode::ExactlyOnce),
        records,
        Some(30_001),
    );
    assert_recovered(&run);
    assert_counts(&run, records, true);
}

#[test]
fn at_least_once_loses_nothing() {
    let records = 40_000;
    let run = run(
        &checkpointing(2, CheckpointingMode::AtLeastOnce),
        records,
        Some(10_000),
    );
    assert_recovered(&run);
    assert_counts(&run, records, false);
}

/// Two inputs of very different speed: the even numbers arrive at once,
/// the odd ones behind a slow operator, so a barrier reaches the counting
/// operator on the fast input long before the slow one. Without alignment
/// the fast input's records after the barrier would be in the snapshot and
/// counted again after the restart. With `connect` the inputs meet in a
/// two-input operator (alignment across its two input gates) instead of
/// a union (one gate with channels of both).
fn skewed_inputs(mode: CheckpointingMode, connect: bool) -> Run {
    let per_input = 20_000u64;
    let env = checkpointing(1, mode);
    env.set_max_parallelism(128);
    let out = Arc::new(Mutex::new(Vec::new()));
    let fast = env
        .add_parallel_source(
            GeneratorSource::new(per_input, |i| 2 * i).with_rate_limit(40_000.0),
            "even",
        )
        .uid("even");
    let slow = env
        .add_parallel_source(
            GeneratorSource::new(per_input, |i| 2 * i + 1).with_rate_limit(40_000.0),
            "odd",
        )
        .uid("odd")
        .map(|v: u64| {
            if v % 64 == 1 {
                std::thread::sleep(Duration::from_millis(1));
            }
            v
        })
        .disable_chaining()
        .uid("slow");
    let both = if connect {
        fast.connect(&slow).map(|even: u64| even, |odd: u64| odd)
    } else {
        fast.union(&[slow])
    };
    both.key_by(|i| i % KEYS)
        .map(CountingThatFails::new(Some(2 * 12_000)))
        .uid("count")
        .add_sink(CollectSink::new(Arc::clone(&out)))
        .set_parallelism(1);
    let result = env.execute("skewed").expect("job recovers");
    let mut counts: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for (k, n) in out.lock().expect("sink lock").drain(..) {
        counts.entry(k).or_default().push(n);
    }
    Run { counts, result }
}

#[test]
fn alignment_holds_the_fast_input_until_the_slow_one_has_the_barrier() {
    let run = skewed_inputs(CheckpointingMode::ExactlyOnce, false);
    assert_recovered(&run);
    assert_counts(&run, 40_000, true);
}

#[test]
fn alignment_holds_across_the_two_inputs_of_connect() {
    let run = skewed_inputs(CheckpointingMode::ExactlyOnce, true);
    assert_recovered(&run);
    assert_counts(&run, 40_000, true);
}

#[test]
fn skewed_inputs_lose_nothing_at_least_once() {
    let run = skewed_inputs(CheckpointingMode::AtLeastOnce, false);
    assert_recovered(&run);
    assert_counts(&run, 40_000, false);
}

#[cfg(feature = "rocksdb")]
#[test]
fn exactly_once_state_survives_a_failure_on_rocksdb() {
    let records = 40_000;
    for files in [false, true] {
        let env = checkpointing(2, CheckpointingMode::ExactlyOnce);
        let dir = temp_dir("rocksdb-failure");
        let mut c = Configuration::new();
        c.set("state.backend.type", "rocksdb");
        if files {
            // Checkpoints as RocksDB's own files (incremental), restored by
            // opening them; in memory they are entries.
            c.set("execution.checkpointing.dir", dir.display().to_string());
        }
        env.configure(&c).expect("rocksdb backend");
        let run = run(&env, records, Some(10_007));
        assert_recovered(&run);
        assert_counts(&run, records, true);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn without_checkpointing_a_failure_fails_the_job() {
    let env = StreamExecutionEnvironment::new();
    counting_job(&env, 1_000, 1e9, Some(10));
    let err = env.execute("counting").expect_err("no restart strategy");
    assert!(err.to_string().contains("injected failure"), "{err}");
}

#[test]
fn restarts_end_when_the_strategy_says_so() {
    let env = checkpointing(1, CheckpointingMode::ExactlyOnce);
    // Fails in every attempt: `fail_at` survives because the function is
    // told it is a restart only through `attempt_number`, so use a fresh
    // failure each time via a shared counter.
    let failures = Arc::new(Mutex::new(0u32));
    let seen = Arc::clone(&failures);
    env.from_sequence(0, 999)
        .map(move |i: i64| {
            if i == 500 {
                *seen.lock().expect("lock") += 1;
                panic!("always fails");
            }
            i
        })
        .add_sink(DiscardingSink);
    let err = env.execute("always failing").expect_err("gives up");
    assert!(err.to_string().contains("always fails"), "{err}");
    // The first run and one restart (fixed-delay, 1 attempt).
    assert_eq!(*failures.lock().expect("lock"), 2);
}

/// The largest count each key reached.
pub(crate) fn max_per_key<'a>(counts: impl Iterator<Item = &'a (u64, u64)>) -> BTreeMap<u64, u64> {
    let mut max: BTreeMap<u64, u64> = BTreeMap::new();
    for (k, n) in counts {
        let m = max.entry(*k).or_default();
        *m = (*m).max(*n);
    }
    max
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("weir-it-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// The directory of the newest completed checkpoint under `root`.
fn newest_checkpoint(root: &Path) -> Option<PathBuf> {
    let mut found: Vec<(u64, PathBuf)> = Vec::new();
    for job in std::fs::read_dir(root).ok()?.flatten() {
        for chk in std::fs::read_dir(job.path()).ok()?.flatten() {
            let name = chk.file_name().to_string_lossy().to_string();
            if let Some(n) = name.strip_prefix("chk-").and_then(|n| n.parse().ok()) {
                if chk.path().join("_metadata").is_file() {
                    found.push((n, chk.path()));
                }
            }
        }
    }
    found.into_iter().max().map(|(_, p)| p)
}

/// Checkpoints every `interval` into `dir`, kept when the job is cancelled.
fn retain_checkpoints(env: &StreamExecutionEnvironment, dir: &Path, interval: &str) {
    let mut c = Configuration::new();
    c.set("execution.checkpointing.interval", interval)
        .set("execution.checkpointing.dir", dir.display().to_string())
        .set(
            "execution.checkpointing.externalized-checkpoint-retention",
            "RETAIN_ON_CANCELLATION",
        );
    env.configure(&c).expect("config");
}

/// Starts `env`'s job, lets it run until a checkpoint is retained under
/// `dir` and `linger` longer, cancels it, and returns that checkpoint.
fn cancel_after_a_checkpoint(
    env: &StreamExecutionEnvironment,
    dir: &Path,
    linger: Duration,
) -> PathBuf {
    let client = env.execute_async("first").expect("starts");
    let deadline = Instant::now() + Duration::from_secs(20);
    while newest_checkpoint(dir).is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(linger);
    client.cancel();
    assert!(client.wait().is_err(), "cancelled");
    newest_checkpoint(dir).expect("a checkpoint was retained")
}

#[test]
fn a_retained_checkpoint_resumes_a_cancelled_job() {
    let dir = temp_dir("retained");
    let records = 30_000;
    // First run: slow enough to be cancelled part-way.
    let env = StreamExecutionEnvironment::new();
    retain_checkpoints(&env, &dir, "30 ms");
    // Slow: the cancel must come while input remains (15 s of it), even
    // when a loaded machine delays the first checkpoint by seconds.
    let first = counting_job(&env, records, 2_000.0, None);
    let checkpoint = cancel_after_a_checkpoint(&env, &dir, Duration::from_millis(100));
    let before = first.lock().expect("lock").len() as u64;
    assert!(before < records, "cancelled before the end");

    // Second run: a new job from that checkpoint finishes the count.
    let env = StreamExecutionEnvironment::new();
    retain_checkpoints(&env, &dir, "30 ms");
    env.set_from_savepoint(&checkpoint);
    let second = counting_job(&env, records, 1e9, None);
    let result = env.execute("second").expect("resumes");
    assert!(result.checkpoints.restored.is_some());
    let resumed = second.lock().expect("lock");
    let max = max_per_key(resumed.iter());
    assert!((resumed.len() as u64) < records, "it did not start over");
    assert_eq!(max.len() as u64, KEYS, "every key counted on: {max:?}");
    assert!(max.values().all(|m| *m == records / KEYS), "{max:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn restoring_a_corrupt_checkpoint_names_the_bad_file() {
    let dir = temp_dir("corrupt");
    let chk = dir.join("chk-1");
    std::fs::create_dir_all(&chk).expect("dir");
    std::fs::write(chk.join("_metadata"), b"not a checkpoint").expect("write");
    let env = StreamExecutionEnvironment::new();
    env.set_from_savepoint(&chk);
    counting_job(&env, 10, 1e9, None);
    let err = env.execute("restore").expect_err("corrupt");
    assert!(err.to_string().contains("_metadata"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn restoring_from_what_is_no_checkpoint_says_so() {
    let dir = temp_dir("no-checkpoint");
    std::fs::create_dir_all(&dir).expect("dir");
    let file = dir.join("passwd");
    std::fs::write(&file, b"root:x:0:0").expect("write");
    for path in [dir.join("missing"), file] {
        let env = StreamExecutionEnvironment::new();
        env.set_from_savepoint(&path);
        counting_job(&env, 10, 1e9, None);
        let err = env
            .execute("restore")
            .expect_err("no checkpoint")
            .to_string();
        let wanted = format!(
            "--from-savepoint: not a checkpoint or savepoint: {}",
            path.display()
        );
        assert!(err.contains(&wanted), "{err}");
        assert!(!err.contains("/_metadata"), "{err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn state_of_an_unknown_operator_is_refused_unless_allowed() {
    let dir = temp_dir("unclaimed");
    let env = StreamExecutionEnvironment::new();
    retain_checkpoints(&env, &dir, "20 ms");
    counting_job(&env, 1_000_000, 20_000.0, None);
    let checkpoint = cancel_after_a_checkpoint(&env, &dir, Duration::ZERO);

    // The same job with the counting operator's uid changed.
    let job = |allow: bool| {
        let env = StreamExecutionEnvironment::new();
        env.set_from_savepoint(&checkpoint)
            .set_allow_non_restored_state(allow);
        env.from_sequence(0, 9)
            .uid("numbers-v2")
            .add_sink(DiscardingSink);
        env.execute("second")
    };
    let err = job(false).expect_err("unclaimed state");
    assert!(err.to_string().contains("does not have"), "{err}");
    assert!(
        err.to_string().contains("-n / --allow-non-restored-state"),
        "{err}"
    );
    job(true).expect("allowed to drop it");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Passes records through; fails once, after a checkpoint (see
/// [`FailAfterCheckpoint`]).
#[derive(Clone)]
struct FailOnce(FailAfterCheckpoint);

impl MapFunction<u64, u64> for FailOnce {
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.0.open(ctx);
        Ok(())
    }

    fn notify_checkpoint_complete(&mut self, _checkpoint_id: u64) -> FunctionResult {
        self.0.checkpointed = true;
        Ok(())
    }

    fn map(&mut self, i: u64) -> u64 {
        if self.0.fail_now(i) {
            panic!("injected failure at record {i}");
        }
        i
    }
}

/// A source that, in the first attempt, stops after `hold` records of its
/// subtask until a checkpoint taken after them has completed, so that a
/// failure injected later always restores a checkpoint holding state,
/// however slow the machine is (without the hold, a bounded input can end
/// before the first checkpoint completes, and then nothing fails).
#[derive(Clone)]
struct HoldForCheckpoint<S> {
    inner: S,
    hold: u64,
    emitted: u64,
    /// The first checkpoint taken while holding.
    taken: Option<u64>,
    released: bool,
}

impl<S> HoldForCheckpoint<S> {
    fn new(inner: S, hold: u64) -> Self {
        HoldForCheckpoint {
            inner,
            hold,
            emitted: 0,
            taken: None,
            released: false,
        }
    }
}

impl<T: Send + 'static, S: SourceFunction<T>> SourceFunction<T> for HoldForCheckpoint<S> {
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.released = ctx.attempt_number > 0 || !ctx.is_checkpointing();
        self.inner.open(ctx)
    }

    fn poll_next(&mut self, ctx: &mut SourceContext<'_, T>) -> FunctionResult<SourceStatus> {
        if !self.released && self.emitted >= self.hold {
            std::thread::sleep(Duration::from_millis(2));
            return Ok(SourceStatus::More);
        }
        let before = ctx.remaining();
        let status = self.inner.poll_next(ctx)?;
        self.emitted += before.saturating_sub(ctx.remaining()) as u64;
        Ok(status)
    }

    fn snapshot_position(&mut self, checkpoint_id: u64) -> FunctionResult<Option<Vec<u8>>> {
        if self.emitted >= self.hold && self.taken.is_none() {
            self.taken = Some(checkpoint_id);
        }
        self.inner.snapshot_position(checkpoint_id)
    }

    fn restore_position(&mut self, position: &[u8]) -> FunctionResult {
        self.inner.restore_position(position)
    }

    fn notify_checkpoint_complete(&mut self, checkpoint_id: u64) -> FunctionResult {
        if self.taken.is_some_and(|taken| checkpoint_id >= taken) {
            self.released = true;
        }
        self.inner.notify_checkpoint_complete(checkpoint_id)
    }
}

/// `0..records` from a parallel source, through a map that fails once at
/// the first record from `at` on after a checkpoint completed; each source
/// subtask holds after 5 000 records until a checkpoint completes.
fn failing_numbers(env: &StreamExecutionEnvironment, records: u64, at: u64) -> DataStream<u64> {
    env.add_parallel_source(
        HoldForCheckpoint::new(
            GeneratorSource::new(records, |i| i).with_rate_limit(records as f64),
            5_000,
        ),
        "numbers",
    )
    .uid("numbers")
    .map(FailOnce(FailAfterCheckpoint::at(Some(at))))
    .uid("fail once")
}

#[test]
fn a_rolling_sum_survives_a_failure() {
    let records = 40_000;
    let env = checkpointing(2, CheckpointingMode::ExactlyOnce);
    let out = Arc::new(Mutex::new(Vec::new()));
    failing_numbers(&env, records, 10_000)
        .map(|i: u64| (i % KEYS, 1u64))
        .key_by(|(k, _)| *k)
        .sum(|(_, n)| n)
        .uid("sum")
        .add_sink(CollectSink::new(Arc::clone(&out)))
        .set_parallelism(1);
    let result = env.execute("rolling sum").expect("recovers");
    let mut counts: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for (k, n) in out.lock().expect("lock").drain(..) {
        counts.entry(k).or_default().push(n);
    }
    let run = Run { counts, result };
    assert_recovered(&run);
    assert_counts(&run, records, true);
}

/// Counts per key and registers one timer (event time, or processing time
/// ten minutes on), on the key's first record only, that emits the final
/// count when the input ends (which fires every timer).
#[derive(Clone, Default)]
struct CountAtEnd {
    count: Option<ValueState<u64>>,
    processing_time: bool,
}

impl KeyedProcessFunction<u64, u64, (u64, u64)> for CountAtEnd {
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.count = Some(ctx.get_state(&ValueStateDescriptor::new("count"))?);
        Ok(())
    }

    fn process_element(
        &mut self,
        _value: u64,
        ctx: &mut ProcessContext<'_, u64>,
        _out: &mut Collector<'_, (u64, u64)>,
    ) -> FunctionResult {
        let state = self.count.as_ref().ok_or("not opened")?;
        let n = state.value()?.unwrap_or(0);
        if n == 0 {
            let mut timers = ctx.timer_service();
            if self.processing_time {
                let later = timers.current_processing_time() + 600_000;
                timers.register_processing_time_timer(later);
            } else {
                timers.register_event_time_timer(1_000_000);
            }
        }
        state.update(n + 1)?;
        Ok(())
    }

    fn on_timer(
        &mut self,
        _timestamp: i64,
        ctx: &mut ProcessContext<'_, u64>,
        out: &mut Collector<'_, (u64, u64)>,
    ) -> FunctionResult {
        let n = self
            .count
            .as_ref()
            .ok_or("not opened")?
            .value()?
            .unwrap_or(0);
        out.collect((*ctx.get_current_key(), n));
        Ok(())
    }
}

#[test]
fn timers_survive_a_failure() {
    assert_timers_survive_a_failure(false);
}

#[test]
fn processing_time_timers_survive_a_failure() {
    assert_timers_survive_a_failure(true);
}

fn assert_timers_survive_a_failure(processing_time: bool) {
    let records = 40_000;
    let env = checkpointing(2, CheckpointingMode::ExactlyOnce);
    let out = Arc::new(Mutex::new(Vec::new()));
    failing_numbers(&env, records, 10_000)
        .key_by(|i| i % KEYS)
        .process(CountAtEnd {
            count: None,
            processing_time,
        })
        .uid("count at end")
        .add_sink(CollectSink::new(Arc::clone(&out)))
        .set_parallelism(1);
    let result = env.execute("timers").expect("recovers");
    let fired = out.lock().expect("lock").clone();
    assert_eq!(result.restarts, 1);
    assert!(result.checkpoints.restored.is_some());
    // Every key's timer fired once, with the exact count: a timer the
    // restore lost would leave its key out.
    assert_eq!(fired.len() as u64, KEYS, "{fired:?}");
    assert!(fired.iter().all(|(_, n)| *n == records / KEYS), "{fired:?}");
}

/// `(key, first record, count)` records, as the windowed jobs see them.
type Counted = (u64, u64, u64);

/// Builds the window operator under test.
type Windows = fn(KeyedStream<Counted, u64>) -> DataStream<Counted>;

/// The windows of a job over `0..40 000` (event time = `stamp(i)` ms,
/// eight keys), with or without a failure at record 30 001, as the set of
/// distinct results: `(key, first record, count)` per window.
fn windowed(
    p: u32,
    fail: bool,
    stamp: fn(u64) -> i64,
    windows: Windows,
    config: &Configuration,
) -> (
    std::collections::BTreeSet<(u64, u64, u64)>,
    JobExecutionResult,
) {
    let records = 40_000;
    let env = checkpointing(p, CheckpointingMode::ExactlyOnce);
    env.configure(config).expect("configuration");
    let out = Arc::new(Mutex::new(Vec::new()));
    // At parallelism 2 the second source subtask emits 20 000.., so 30 001
    // is mid-stream at either parallelism.
    let numbers = failing_numbers(&env, records, if fail { 30_001 } else { u64::MAX });
    let keyed = numbers
        .assign_timestamps_and_watermarks(
            WatermarkStrategy::for_monotonous_timestamps()
                .with_timestamp_assigner(move |i: &u64, _| stamp(*i)),
        )
        .map(|i: u64| (i % 8, i, 1u64))
        .key_by(|t| t.0);
    windows(keyed)
        .uid("windows")
        .add_sink(CollectSink::new(Arc::clone(&out)))
        .set_parallelism(1);
    let result = env.execute("windows").expect("recovers");
    let results = out.lock().expect("lock").iter().copied().collect();
    (results, result)
}

fn count_per_window(a: (u64, u64, u64), b: (u64, u64, u64)) -> (u64, u64, u64) {
    (a.0, a.1.min(b.1), a.2 + b.2)
}

fn assert_same_windows(p: u32, stamp: fn(u64) -> i64, windows: Windows) {
    assert_same_windows_with(p, stamp, windows, &Configuration::new());
}

fn assert_same_windows_with(
    p: u32,
    stamp: fn(u64) -> i64,
    windows: Windows,
    config: &Configuration,
) {
    // The reference run keeps everything in memory.
    let (expected, _) = windowed(p, false, stamp, windows, &Configuration::new());
    let (got, result) = windowed(p, true, stamp, windows, config);
    assert_eq!(result.restarts, 1);
    assert!(result.checkpoints.restored.is_some());
    assert!(expected.len() > 10, "too few windows to mean anything");
    // A window counted twice or lost after the restore would show up as a
    // result the failure-free run does not have, or miss one it has. (The
    // sink is not transactional, so repeated identical results are fine.)
    assert_eq!(got, expected);
}

#[test]
fn tumbling_windows_survive_a_failure() {
    assert_same_windows(
        2,
        |i| i as i64,
        |k| {
            k.window(TumblingEventTimeWindows::of(Duration::from_millis(1000)))
                .reduce(count_per_window)
        },
    );
}

#[test]
fn sliding_windows_survive_a_failure() {
    assert_same_windows(
        1,
        |i| i as i64,
        |k| {
            k.window(SlidingEventTimeWindows::of(
                Duration::from_millis(2000),
                Duration::from_millis(500),
            ))
            .reduce(count_per_window)
        },
    );
}

#[test]
fn session_windows_survive_a_failure() {
    // Bursts of 1 000 records, 5 s apart: one session per key and burst.
    assert_same_windows(
        2,
        |i| (i + (i / 1000) * 5000) as i64,
        |k| {
            k.window(EventTimeSessionWindows::with_gap(Duration::from_secs(2)))
                .reduce(count_per_window)
        },
    );
}

#[test]
fn count_windows_with_a_trigger_survive_a_failure() {
    // Parallelism 1: with two source subtasks, which 100 records make a
    // count window depends on how their records interleave.
    assert_same_windows(
        1,
        |i| i as i64,
        |k| k.count_window(100).reduce(count_per_window),
    );
}

/// RocksDB with a write-back cache far smaller than the window contents,
/// checkpointing its own files (restored by opening them) or entries.
#[cfg(feature = "rocksdb")]
fn rocksdb_windows(files: bool, dir: &Path) -> Configuration {
    let mut c = Configuration::new();
    c.set("state.backend.type", "rocksdb");
    c.set("weir.state.rocksdb.write-back-cache.size", "16 kb");
    if files {
        c.set("execution.checkpointing.dir", dir.display().to_string());
    }
    c
}

/// Every element of a window, counted at firing: buffers, not accumulators.
#[cfg(feature = "rocksdb")]
fn count_elements(
    key: &u64,
    _ctx: &mut ProcessWindowContext<'_, TimeWindow>,
    elements: Elements<'_, Counted>,
    out: &mut Collector<'_, Counted>,
) -> FunctionResult {
    let first = elements.clone().map(|e| e.1).min().unwrap_or(0);
    out.collect((*key, first, elements.len() as u64));
    Ok(())
}

#[cfg(feature = "rocksdb")]
#[test]
fn window_contents_in_rocksdb_survive_a_failure() {
    let dir = temp_dir("rocksdb-windows");
    for files in [false, true] {
        let c = rocksdb_windows(files, &dir);
        // Accumulators, one value per key and window.
        assert_same_windows_with(
            2,
            |i| i as i64,
            |k| {
                k.window(TumblingEventTimeWindows::of(Duration::from_millis(1000)))
                    .reduce(count_per_window)
            },
            &c,
        );
        // Element buffers, one entry per element, in overlapping windows.
        assert_same_windows_with(
            1,
            |i| i as i64,
            |k| {
                k.window(SlidingEventTimeWindows::of(
                    Duration::from_millis(2000),
                    Duration::from_millis(500),
                ))
                .process(count_elements)
            },
            &c,
        );
        // Merging windows: contents move between namespaces.
        assert_same_windows_with(
            2,
            |i| (i + (i / 1000) * 5000) as i64,
            |k| {
                k.window(EventTimeSessionWindows::with_gap(Duration::from_secs(2)))
                    .process(count_elements)
            },
            &c,
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

fn multipliers() -> MapStateDescriptor<String, u64> {
    MapStateDescriptor::new("multipliers")
}

/// Counts per key and emits `(key, count, count × multiplier)`, the
/// multiplier coming from broadcast state (0 while it has none).
#[derive(Clone, Default)]
struct Multiplied {
    count: Option<ValueState<u64>>,
}

impl KeyedBroadcastProcessFunction<u64, u64, (String, u64), (u64, u64, u64)> for Multiplied {
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.count = Some(ctx.get_state(&ValueStateDescriptor::new("count"))?);
        Ok(())
    }

    fn process_element(
        &mut self,
        i: u64,
        ctx: &mut ReadOnlyContext<'_, u64>,
        out: &mut Collector<'_, (u64, u64, u64)>,
    ) -> FunctionResult {
        let state = self.count.as_ref().ok_or("not opened")?;
        let n = state.value()?.unwrap_or(0) + 1;
        state.update(n)?;
        let m = ctx
            .get_broadcast_state(&multipliers())?
            .get("m")
            .copied()
            .unwrap_or(0);
        out.collect((i % KEYS, n, n * m));
        Ok(())
    }

    fn process_broadcast_element(
        &mut self,
        (name, m): (String, u64),
        ctx: &mut BroadcastContext<'_, u64>,
        _out: &mut Collector<'_, (u64, u64, u64)>,
    ) -> FunctionResult {
        ctx.get_broadcast_state(&multipliers())?.insert(name, m);
        Ok(())
    }
}

#[test]
fn broadcast_state_survives_a_failure_after_its_source_finished() {
    let records = 40_000;
    let env = checkpointing(2, CheckpointingMode::ExactlyOnce);
    let out = Arc::new(Mutex::new(Vec::new()));
    // The rule source ends at once; checkpoints go on without it, and the
    // restore must bring its rule back from broadcast state, since the
    // finished source does not replay it.
    let rules = env
        .from_collection(vec![("m".to_string(), 3u64)])
        .uid("rules")
        .broadcast_state(&multipliers());
    failing_numbers(&env, records, 30_001)
        .key_by(|i| i % KEYS)
        .connect_broadcast(&rules)
        .process(Multiplied::default())
        .uid("multiplied")
        .add_sink(CollectSink::new(Arc::clone(&out)))
        .set_parallelism(1);
    let result = env.execute("broadcast").expect("recovers");
    assert_eq!(result.restarts, 1);
    assert!(result.checkpoints.restored.is_some());
    let mut last: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    for (k, n, v) in out.lock().expect("lock").iter().copied() {
        let e = last.entry(k).or_default();
        if n >= e.0 {
            *e = (n, v);
        }
    }
    assert_eq!(last.len() as u64, KEYS);
    for (k, (n, v)) in last {
        assert_eq!(n, records / KEYS, "key {k}");
        assert_eq!(v, 3 * n, "key {k} lost its broadcast rule");
    }
}

/// Records the checkpoints it is told completed.
#[derive(Clone)]
struct NotedSink {
    completed: Arc<Mutex<Vec<u64>>>,
}

impl SinkFunction<u64> for NotedSink {
    fn invoke(&mut self, _value: u64, _ctx: &SinkContext) -> FunctionResult {
        Ok(())
    }

    fn notify_checkpoint_complete(&mut self, checkpoint_id: u64) -> FunctionResult {
        self.completed
            .lock()
            .map_err(|_| "lock")?
            .push(checkpoint_id);
        Ok(())
    }
}

#[test]
fn a_bounded_job_ends_with_a_final_checkpoint() {
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(2)
        .enable_checkpointing(Duration::from_secs(3600));
    let completed = Arc::new(Mutex::new(Vec::new()));
    env.from_sequence(0, 9_999)
        .map(|i: i64| i as u64)
        .key_by(|i| i % 7)
        .sum(|i| i)
        .add_sink(NotedSink {
            completed: Arc::clone(&completed),
        });
    let result = env.execute("bounded").expect("finishes");
    // No periodic checkpoint came in an hour's interval: the one completed
    // is the final checkpoint, and every sink subtask heard of it.
    assert_eq!(result.checkpoints.completed, 1, "{:?}", result.checkpoints);
    assert_eq!(*completed.lock().expect("lock"), vec![1, 1]);
}

/// The lines of the committed (visible) part files in `dir`, sorted, and
/// how many hidden files are left.
fn committed_lines(dir: &Path) -> (Vec<String>, usize) {
    let mut lines = Vec::new();
    let mut hidden = 0;
    for entry in std::fs::read_dir(dir).expect("output dir").flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        if name.starts_with('.') {
            hidden += 1;
            continue;
        }
        let text = std::fs::read_to_string(entry.path()).expect("part file");
        lines.extend(text.lines().map(str::to_string));
    }
    lines.sort();
    (lines, hidden)
}

/// Counts per key and windows per key, written to the transactional file
/// sink, with or without a failure at record 30 001.
fn files_job(dir: &Path, fail: bool, p: u32, backend: &str) -> JobExecutionResult {
    let env = checkpointing(p, CheckpointingMode::ExactlyOnce);
    let mut c = Configuration::new();
    c.set("state.backend.type", backend);
    env.configure(&c).expect("backend");
    let numbers = failing_numbers(&env, 40_000, if fail { 30_001 } else { u64::MAX });
    numbers
        .key_by(|i| i % KEYS)
        .map(CountingThatFails::new(None))
        .uid("count")
        .map(|(k, n): (u64, u64)| format!("count {k} {n}"))
        .add_sink(FileSink::for_row_format(dir.join("counts")))
        .uid("count files");
    numbers
        .assign_timestamps_and_watermarks(
            WatermarkStrategy::for_monotonous_timestamps()
                .with_timestamp_assigner(|i: &u64, _| *i as i64),
        )
        .map(|i: u64| (i % 8, i, 1u64))
        .key_by(|t| t.0)
        .window(TumblingEventTimeWindows::of(Duration::from_millis(1000)))
        .reduce(count_per_window)
        .uid("windows")
        .map(|(k, first, n): Counted| format!("window {k} {first} {n}"))
        .add_sink(
            FileSink::for_row_format(dir.join("windows")).with_rolling_policy(RollingPolicy {
                max_part_size: 4096,
                ..RollingPolicy::default()
            }),
        )
        .uid("window files");
    env.execute("files").expect("recovers")
}

fn assert_files_exactly_once(p: u32, backend: &str) {
    let name = format!("files-{backend}-{p}");
    let (clean, failed) = (
        temp_dir(&format!("{name}-clean")),
        temp_dir(&format!("{name}-failed")),
    );
    files_job(&clean, false, p, backend);
    let result = files_job(&failed, true, p, backend);
    assert_eq!(result.restarts, 1);
    assert!(result.checkpoints.restored.is_some());
    for part in ["counts", "windows"] {
        let (expected, hidden) = committed_lines(&clean.join(part));
        assert_eq!(hidden, 0, "{part}: files left uncommitted");
        // After the failure, files written after the restored checkpoint
        // stay hidden (abandoned, as in Flink); their records are replayed.
        let (got, _) = committed_lines(&failed.join(part));
        assert!(!expected.is_empty());
        // Not one line lost or repeated, although the job failed after
        // writing some of them.
        assert_eq!(got.len(), expected.len(), "{part}");
        assert_eq!(got, expected, "{part}");
    }
    let (counts, _) = committed_lines(&clean.join("counts"));
    assert_eq!(counts.len(), 40_000);
    let _ = std::fs::remove_dir_all(&clean);
    let _ = std::fs::remove_dir_all(&failed);
}

#[test]
fn the_file_sink_commits_each_result_exactly_once_across_a_failure() {
    assert_files_exactly_once(2, "hashmap");
}

#[test]
fn the_file_sink_is_exactly_once_at_parallelism_1() {
    assert_files_exactly_once(1, "hashmap");
}

#[cfg(feature = "rocksdb")]
#[test]
fn the_file_sink_is_exactly_once_on_rocksdb() {
    assert_files_exactly_once(2, "rocksdb");
}

#[test]
fn without_checkpointing_the_file_sink_commits_at_the_end() {
    let dir = temp_dir("files-batch");
    let env = StreamExecutionEnvironment::new();
    env.from_sequence(1, 1000)
        .add_sink(FileSink::for_row_format(&dir).with_part_suffix(".txt"));
    env.execute("batch").expect("runs");
    let (lines, hidden) = committed_lines(&dir);
    assert_eq!(lines.len(), 1000);
    assert_eq!(hidden, 0);
    assert!(dir.join("part-0-0.txt").is_file());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A checkpoint storage whose metadata can never be written: every
/// checkpoint fails when it is committed.
#[derive(Debug, Default)]
struct MetadataFails(MemoryCheckpointStorage);

impl CheckpointStorage for MetadataFails {
    fn write_file(&self, id: u64, name: &str, bytes: &[u8]) -> Result<(), StateError> {
        self.0.write_file(id, name, bytes)
    }
    fn write_metadata(&self, _id: u64, _bytes: &[u8]) -> Result<(), StateError> {
        Err(StateError::Io {
            path: "_metadata".into(),
            cause: std::io::Error::other("disk full"),
        })
    }
    fn read_file(&self, id: u64, name: &str) -> Result<Vec<u8>, StateError> {
        self.0.read_file(id, name)
    }
    fn completed(&self) -> Result<Vec<u64>, StateError> {
        self.0.completed()
    }
    fn discard(&self, id: u64) -> Result<(), StateError> {
        self.0.discard(id)
    }
    fn location(&self, id: u64) -> String {
        self.0.location(id)
    }
}

#[test]
fn a_final_checkpoint_that_fails_fails_the_job() {
    let dir = temp_dir("files-final-fails");
    let env = StreamExecutionEnvironment::new();
    let mut config = env.get_checkpoint_config();
    // Only the final checkpoint is taken: it is what commits the output.
    config.interval = Some(Duration::from_secs(3600));
    config.storage = CheckpointStorageConfig::Custom(Arc::new(MetadataFails::default()));
    env.set_checkpoint_config(config);
    env.set_restart_strategy(RestartStrategy::None);
    env.from_sequence(1, 100)
        .add_sink(FileSink::for_row_format(&dir));
    let err = env
        .execute("final fails")
        .expect_err("the output was never committed")
        .to_string();
    assert!(err.contains("final checkpoint"), "{err}");
    assert!(err.contains("disk full"), "{err}");
    let (lines, _) = committed_lines(&dir);
    assert!(lines.is_empty(), "{lines:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_unwritable_checkpoint_directory_fails_the_job_before_it_runs() {
    let dir = temp_dir("unwritable-chk");
    std::fs::create_dir_all(&dir).expect("dir");
    // A path under a regular file: not creatable, even as root.
    let file = dir.join("a-file");
    std::fs::write(&file, b"").expect("file");
    let env = StreamExecutionEnvironment::new();
    let mut c = Configuration::new();
    c.set("execution.checkpointing.interval", "1h");
    c.set(
        "execution.checkpointing.dir",
        file.join("chk").display().to_string(),
    );
    env.configure(&c).expect("valid keys");
    let seen = Arc::new(Mutex::new(Vec::new()));
    env.from_sequence(1, 100)
        .add_sink(CollectSink::new(Arc::clone(&seen)));
    let err = env
        .execute("unwritable")
        .expect_err("checkpoints cannot be written")
        .to_string();
    assert!(err.contains("checkpoints cannot be written"), "{err}");
    assert!(err.contains("a-file"), "{err}");
    assert!(seen.lock().expect("lock").is_empty(), "records flowed");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_file_sink_rolls_part_files_by_time() {
    // Rolling checks each record against the part file's age: with no
    // time allowed every record starts a part file; with an hour, one
    // part file holds them all.
    for (interval, parts) in [(Duration::ZERO, 20), (Duration::from_secs(3600), 1)] {
        let dir = temp_dir("files-rolled-by-time");
        let env = StreamExecutionEnvironment::new();
        env.from_sequence(1, 20)
            .add_sink(
                FileSink::for_row_format(&dir).with_rolling_policy(RollingPolicy {
                    max_part_size: u64::MAX,
                    rollover_interval: interval,
                }),
            );
        env.execute("rolled").expect("runs");
        let (lines, hidden) = committed_lines(&dir);
        assert_eq!(lines.len(), 20);
        assert_eq!(hidden, 0, "nothing left uncommitted");
        let files = std::fs::read_dir(&dir).expect("dir").count();
        assert_eq!(files, parts, "rolled every {interval:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

type Written = Arc<Mutex<BTreeMap<(u32, u64), Vec<String>>>>;

/// An idempotent writer: a batch is stored under (subtask, checkpoint), so
/// writing it again replaces it.
#[derive(Clone)]
struct Upserts {
    written: Written,
    subtask: u32,
}

impl WriteAheadWriter<String> for Upserts {
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.subtask = ctx.subtask_index;
        Ok(())
    }

    fn send_values(&mut self, values: &[String], checkpoint_id: u64) -> FunctionResult {
        self.written
            .lock()
            .map_err(|_| "lock")?
            .insert((self.subtask, checkpoint_id), values.to_vec());
        Ok(())
    }
}

#[test]
fn the_write_ahead_sink_writes_each_result_once_across_a_failure() {
    let run = |fail: bool| {
        let env = checkpointing(2, CheckpointingMode::ExactlyOnce);
        let written: Written = Arc::default();
        failing_numbers(&env, 40_000, if fail { 30_001 } else { u64::MAX })
            .key_by(|i| i % KEYS)
            .map(CountingThatFails::new(None))
            .uid("count")
            .map(|(k, n): (u64, u64)| format!("{k} {n}"))
            .add_sink(WriteAheadSink::new(Upserts {
                written: Arc::clone(&written),
                subtask: 0,
            }))
            .uid("wal");
        let result = env.execute("wal").expect("recovers");
        let mut lines: Vec<String> = written
            .lock()
            .expect("lock")
            .values()
            .flatten()
            .cloned()
            .collect();
        lines.sort();
        (lines, result)
    };
    let (expected, _) = run(false);
    let (got, result) = run(true);
    assert_eq!(result.restarts, 1);
    assert_eq!(expected.len(), 40_000);
    let missing: Vec<_> = expected
        .iter()
        .filter(|l| !got.contains(l))
        .take(5)
        .collect();
    let extra = got.len() as i64 - expected.len() as i64;
    assert!(
        got == expected,
        "{} lines, {extra} extra; missing e.g. {missing:?}",
        got.len()
    );
}

/// Sleeps on every record, so barriers wait behind it; the sink records
/// the checkpoints it hears were aborted.
fn slow_job(env: &StreamExecutionEnvironment) -> Arc<Mutex<Vec<u64>>> {
    let aborted = Arc::new(Mutex::new(Vec::new()));
    env.from_sequence(0, 14)
        .map(|i: i64| {
            std::thread::sleep(Duration::from_millis(60));
            i
        })
        .add_sink(AbortNotes {
            aborted: Arc::clone(&aborted),
        });
    aborted
}

#[derive(Clone)]
struct AbortNotes {
    aborted: Arc<Mutex<Vec<u64>>>,
}

impl SinkFunction<i64> for AbortNotes {
    fn invoke(&mut self, _value: i64, _ctx: &SinkContext) -> FunctionResult {
        Ok(())
    }

    fn notify_checkpoint_aborted(&mut self, checkpoint_id: u64) -> FunctionResult {
        self.aborted.lock().map_err(|_| "lock")?.push(checkpoint_id);
        Ok(())
    }
}

fn timing_out(tolerable_failures: u32) -> CheckpointConfig {
    CheckpointConfig {
        interval: Some(Duration::from_millis(10)),
        timeout: Duration::from_millis(20),
        tolerable_failures,
        ..CheckpointConfig::default()
    }
}

#[test]
fn checkpoints_that_time_out_fail_the_job_beyond_the_tolerated_number() {
    let env = StreamExecutionEnvironment::new();
    env.set_checkpoint_config(timing_out(0))
        .set_restart_strategy(RestartStrategy::None);
    slow_job(&env);
    let err = env.execute("slow").expect_err("a checkpoint timed out");
    assert!(
        err.to_string().contains("tolerable failure threshold"),
        "{err}"
    );
}

#[test]
fn tolerated_checkpoint_timeouts_are_counted_and_the_job_goes_on() {
    let env = StreamExecutionEnvironment::new();
    env.set_checkpoint_config(timing_out(1_000))
        .set_restart_strategy(RestartStrategy::None);
    let aborted = slow_job(&env);
    let result = env.execute("slow").expect("tolerated");
    assert!(result.checkpoints.failed > 0, "{:?}", result.checkpoints);
    // Operators hear of the aborted checkpoints.
    assert!(!aborted.lock().expect("lock").is_empty());
    // The final checkpoint needs no barrier, so it still completes.
    assert!(result.checkpoints.completed >= 1);
}

/// Corrupts the newest checkpoint (a flipped byte in its `_metadata`) and
/// fails, once: at the first record from `at` on when two checkpoints
/// are complete and none is in flight past this function (its last
/// snapshot is the last completed checkpoint, so no newer one can
/// complete before the failure). Records the corrupted checkpoint and the
/// one before it.
#[derive(Clone)]
struct CorruptAndFail {
    storage: MemoryCheckpointStorage,
    at: Option<i64>,
    snapshotted: u64,
    completed: u64,
    corrupted: Arc<Mutex<Option<(u64, u64)>>>,
}

impl MapFunction<i64, i64> for CorruptAndFail {
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        if ctx.attempt_number > 0 {
            self.at = None;
        }
        Ok(())
    }

    fn snapshot_state(&mut self, checkpoint_id: u64) -> FunctionResult {
        self.snapshotted = checkpoint_id;
        Ok(())
    }

    fn notify_checkpoint_complete(&mut self, checkpoint_id: u64) -> FunctionResult {
        self.completed = checkpoint_id;
        Ok(())
    }

    fn map(&mut self, i: i64) -> i64 {
        let settled = self.completed > 0 && self.snapshotted == self.completed;
        if settled && self.at.is_some_and(|at| i >= at) {
            let ids = self.storage.completed().expect("listing");
            let [.., before, newest] = ids[..] else {
                return i; // one checkpoint so far: wait for the next
            };
            assert_eq!(newest, self.completed);
            assert!(self.storage.tamper(newest, "_metadata", |b| {
                let at = b.len() / 2;
                b[at] ^= 0x20;
            }));
            *self.corrupted.lock().expect("lock") = Some((newest, before));
            panic!("injected failure after corrupting checkpoint {newest}");
        }
        i
    }
}

#[test]
fn recovery_skips_a_corrupt_checkpoint_for_the_one_before() {
    let storage = MemoryCheckpointStorage::new();
    let env = checkpointing(1, CheckpointingMode::ExactlyOnce);
    let mut config = env.get_checkpoint_config();
    config.storage = CheckpointStorageConfig::Custom(Arc::new(storage.clone()));
    config.num_retained = 3;
    env.set_checkpoint_config(config);
    let corrupted = Arc::new(Mutex::new(None));
    let out = Arc::new(Mutex::new(Vec::new()));
    env.add_source(
        GeneratorSource::new(40_000, |i| i as i64).with_rate_limit(80_000.0),
        "numbers",
    )
    .map(CorruptAndFail {
        storage,
        at: Some(30_001),
        snapshotted: 0,
        completed: 0,
        corrupted: Arc::clone(&corrupted),
    })
    .key_by(|i| (i % KEYS as i64) as u64)
    .map(|i: i64| (i as u64 % KEYS, 1u64))
    .key_by(|t| t.0)
    .sum(|t| &mut t.1)
    .add_sink(CollectSink::new(Arc::clone(&out)));
    let result = env.execute("corrupt").expect("recovers");
    let (bad, before) = corrupted.lock().expect("lock").expect("it corrupted one");
    assert!(before < bad);
    assert_eq!(result.checkpoints.restored, Some(before));
    let max = max_per_key(out.lock().expect("lock").iter());
    assert!(max.values().all(|m| *m == 40_000 / KEYS), "{max:?}");
}

/// A job cancelled after a retained checkpoint at parallelism 2 resumes at
/// parallelism 3 (and 1): keyed state moves by key group, and the
/// generator's remaining index ranges are split over the new subtasks.
#[test]
fn a_checkpoint_restores_at_another_parallelism() {
    for new_parallelism in [3, 1] {
        let dir = temp_dir(&format!("rescale-{new_parallelism}"));
        let records = 30_000;
        let env = StreamExecutionEnvironment::new();
        env.set_parallelism(2);
        retain_checkpoints(&env, &dir, "30 ms");
        // Slow: the cancel must come while input remains (15 s of it).
        counting_job(&env, records, 2_000.0, None);
        let checkpoint = cancel_after_a_checkpoint(&env, &dir, Duration::from_millis(150));

        let env = StreamExecutionEnvironment::new();
        env.set_parallelism(new_parallelism);
        retain_checkpoints(&env, &dir, "30 ms");
        env.set_from_savepoint(&checkpoint);
        let out = counting_job(&env, records, 1e9, None);
        let result = env.execute("rescaled").expect("resumes");
        assert!(result.checkpoints.restored.is_some());
        let resumed = out.lock().expect("lock");
        let max = max_per_key(resumed.iter());
        assert!((resumed.len() as u64) < records, "it started over");
        assert_eq!(max.len() as u64, KEYS);
        assert!(
            max.values().all(|m| *m == records / KEYS),
            "p=2 -> p={new_parallelism}: {max:?}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// RocksDB checkpoints to files are incremental: SST files go to the job's
/// `shared/` directory once and later checkpoints refer to them; files no
/// retained checkpoint refers to are deleted; and such a checkpoint restores
/// at the same parallelism (opening the files) and at another one (reading
/// them).
#[cfg(feature = "rocksdb")]
#[test]
fn rocksdb_checkpoints_are_incremental_and_restore_at_any_parallelism() {
    use weir_state::checkpoint_storage::{load_metadata, FsCheckpointStorage};
    let dir = temp_dir("incremental");
    let records = 30_000;
    let config = |env: &StreamExecutionEnvironment, p: u32| {
        env.set_parallelism(p);
        let mut c = Configuration::new();
        c.set("state.backend.type", "rocksdb")
            .set("execution.checkpointing.interval", "30 ms")
            .set("execution.checkpointing.dir", dir.display().to_string())
            .set("execution.checkpointing.num-retained", "3")
            .set(
                "execution.checkpointing.externalized-checkpoint-retention",
                "RETAIN_ON_CANCELLATION",
            );
        env.configure(&c).expect("config");
    };
    let env = StreamExecutionEnvironment::new();
    config(&env, 2);
    counting_job(&env, records, 6_000.0, None);
    let client = env.execute_async("first").expect("starts");
    let job_dir = dir.join(client.job_id().to_string());
    let storage = FsCheckpointStorage::new(&job_dir);
    let shared_of = |id: u64| -> Option<std::collections::BTreeSet<String>> {
        let meta = load_metadata(&storage, id).ok()?;
        Some(
            meta.operators
                .iter()
                .flat_map(|o| &o.files)
                .flat_map(|f| f.shared.iter().cloned())
                .collect(),
        )
    };
    // Two consecutive checkpoints that share unchanged SST files (right
    // after RocksDB compacted, a checkpoint shares nothing with the one
    // before: wait for the next pair).
    let deadline = Instant::now() + Duration::from_secs(60);
    let newer = loop {
        let ids = storage.completed().unwrap_or_default();
        let pair = match ids[..] {
            [.., a, b] if b == a + 1 => shared_of(a).zip(shared_of(b)),
            _ => None,
        };
        if let Some((older, newer)) = pair {
            if older.intersection(&newer).next().is_some() {
                break newer;
            }
        }
        assert!(
            Instant::now() < deadline,
            "no two checkpoints shared a file"
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    assert!(
        !newer.is_empty(),
        "the checkpoint refers to shared SST files"
    );
    client.cancel();
    assert!(client.wait().is_err(), "cancelled");

    let ids = storage.completed().expect("listing");
    assert!(ids.len() >= 2, "{ids:?}");
    let shared_of = |id: u64| shared_of(id).expect("metadata");
    let referenced: std::collections::BTreeSet<String> =
        ids.iter().flat_map(|id| shared_of(*id)).collect();
    let on_disk: std::collections::BTreeSet<String> = std::fs::read_dir(job_dir.join("shared"))
        .expect("shared dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .collect();
    // Also those of a checkpoint the cancel aborted half-way.
    assert_eq!(on_disk, referenced, "unreferenced shared files are deleted");

    let newest = storage.checkpoint_dir(*ids.last().expect("one"));
    for p in [2, 3] {
        let env = StreamExecutionEnvironment::new();
        config(&env, p);
        env.set_from_savepoint(&newest);
        let out = counting_job(&env, records, 1e9, None);
        env.execute("resumed").expect("resumes");
        let max = max_per_key(out.lock().expect("lock").iter());
        assert_eq!(max.len() as u64, KEYS);
        assert!(
            max.values().all(|m| *m == records / KEYS),
            "restored at p={p}: {max:?}"
        );
    }

    // A flipped byte in a shared file fails the checkpoints using it.
    let last_shared = shared_of(*ids.last().expect("one"));
    let victim = last_shared.iter().next().expect("a shared file");
    let path = job_dir.join("shared").join(victim);
    let mut bytes = std::fs::read(&path).expect("shared file");
    let at = bytes.len() / 2;
    bytes[at] ^= 0x01;
    std::fs::write(&path, bytes).expect("corrupt it");
    let err = weir_state::checkpoint_storage::load(&storage, *ids.last().expect("one"))
        .expect_err("verification fails");
    assert!(err.to_string().contains(victim.as_str()), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A savepoint of a running job is one self-contained directory: moved
/// elsewhere, it resumes the job at another parallelism (on RocksDB too,
/// whose SST files are copied in rather than shared).
#[test]
fn a_savepoint_moves_and_resumes_at_another_parallelism() {
    let backends: &[&str] = if cfg!(feature = "rocksdb") {
        &["hashmap", "rocksdb"]
    } else {
        &["hashmap"]
    };
    for backend in backends {
        let dir = temp_dir(&format!("savepoint-{backend}"));
        let records = 30_000;
        let setup = |env: &StreamExecutionEnvironment, p: u32| {
            env.set_parallelism(p);
            let mut c = Configuration::new();
            c.set("state.backend.type", *backend);
            env.configure(&c).expect("backend");
            retain_checkpoints(env, &dir.join("checkpoints"), "50 ms");
        };
        let env = StreamExecutionEnvironment::new();
        setup(&env, 2);
        counting_job(&env, records, 10_000.0, None);
        let client = env.execute_async("first").expect("starts");
        std::thread::sleep(Duration::from_millis(300));
        let location = client
            .trigger_savepoint(dir.join("savepoints"))
            .expect("savepoint");
        client.cancel();
        assert!(client.wait().is_err(), "cancelled");
        let taken = PathBuf::from(location.trim_start_matches("file://"));
        let name = taken
            .file_name()
            .expect("name")
            .to_string_lossy()
            .to_string();
        assert!(name.starts_with("savepoint-"), "{name}");
        let moved = dir.join("moved");
        std::fs::rename(&taken, &moved).expect("move it");
        let (loaded, _) = weir_state::checkpoint_storage::load_path(&moved).expect("verifies");
        assert!(loaded.metadata.savepoint);

        let env = StreamExecutionEnvironment::new();
        setup(&env, 3);
        env.set_from_savepoint(&moved);
        let out = counting_job(&env, records, 1e9, None);
        env.execute("resumed").expect("resumes");
        let max = max_per_key(out.lock().expect("lock").iter());
        assert_eq!(max.len() as u64, KEYS, "{backend}");
        assert!(
            max.values().all(|m| *m == records / KEYS),
            "{backend}: {max:?}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Chaining is not state: a savepoint of a job whose keyed exchange was
/// chained (one task) resumes with it split into a task on each side.
#[test]
fn a_savepoint_of_a_chained_keyed_exchange_resumes_split() {
    let dir = temp_dir("split-resume");
    let records = 30_000;
    let env = checkpointing(1, CheckpointingMode::ExactlyOnce);
    let counted = counting_job(&env, records, 10_000.0, None);
    let client = env.execute_async("chained").expect("starts");
    // Every key counted before the savepoint.
    let deadline = Instant::now() + Duration::from_secs(60);
    while counted.lock().expect("lock").len() < 1_000 {
        assert!(Instant::now() < deadline, "no records counted");
        std::thread::sleep(Duration::from_millis(5));
    }
    let location = client
        .stop_with_savepoint(dir.join("savepoints"), false)
        .expect("savepoint");
    client.wait().expect("stopped");
    let env = checkpointing(1, CheckpointingMode::ExactlyOnce);
    let mut c = Configuration::new();
    c.set(weir::config::keys::CHAIN_KEYED_EXCHANGES, "false");
    env.configure(&c).expect("config");
    env.set_from_savepoint(location.trim_start_matches("file://"));
    let out = counting_job(&env, records, 1e9, None);
    env.execute("split").expect("resumes");
    let counts = out.lock().expect("lock");
    let max = max_per_key(counts.iter());
    assert_eq!(max.len() as u64, KEYS);
    assert!(max.values().all(|m| *m == records / KEYS), "{max:?}");
    // Resumed, not started over: no key counted from 1 again.
    assert!(counts.iter().all(|(_, n)| *n > 1), "a key started over");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Key groups are fixed by the max parallelism: a savepoint restores at
/// another parallelism, never at another max parallelism.
#[test]
fn a_changed_max_parallelism_is_refused_on_restore() {
    let dir = temp_dir("max-parallelism");
    let env = checkpointing(1, CheckpointingMode::ExactlyOnce);
    env.set_max_parallelism(128);
    counting_job(&env, 1_000_000, 10_000.0, None);
    let client = env.execute_async("first").expect("starts");
    let location = client
        .stop_with_savepoint(dir.join("savepoints"), false)
        .expect("savepoint");
    client.wait().expect("stopped");
    let env = checkpointing(2, CheckpointingMode::ExactlyOnce);
    env.set_max_parallelism(256);
    env.set_from_savepoint(location.trim_start_matches("file://"));
    counting_job(&env, 1_000, 10_000.0, None);
    let err = env.execute("second").expect_err("refused");
    let message = err.to_string();
    assert!(
        message.contains("max parallelism 128") && message.contains("cannot change"),
        "{message}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn savepoints_need_checkpointing() {
    let env = StreamExecutionEnvironment::new();
    counting_job(&env, 1_000_000, 10_000.0, None);
    let client = env.execute_async("no checkpoints").expect("starts");
    let err = client
        .trigger_savepoint(std::env::temp_dir())
        .expect_err("no coordinator");
    assert!(err.to_string().contains("checkpointing"), "{err}");
    client.cancel();
    let _ = client.wait();
}

/// A second source for jobs that already have `counting_job`'s (uids
/// must differ).
fn timer_numbers(env: &StreamExecutionEnvironment, records: u64, rate: f64) -> DataStream<u64> {
    env.add_parallel_source(
        GeneratorSource::new(records, |i| i).with_rate_limit(rate),
        "timer numbers",
    )
    .uid("timer numbers")
}

/// Stop with savepoint: the job ends (its result is a success), nothing
/// runs after the savepoint, and resuming from it continues the counts
/// exactly. With drain, event-time timers fire before the savepoint.
#[test]
fn stop_with_savepoint_ends_the_job_and_resumes_exactly() {
    for drain in [false, true] {
        let dir = temp_dir(&format!("stop-{drain}"));
        let records = 30_000;
        let env = StreamExecutionEnvironment::new();
        env.set_parallelism(2);
        retain_checkpoints(&env, &dir.join("checkpoints"), "50 ms");
        let counts = counting_job(&env, records, 10_000.0, None);
        let fired = Arc::new(Mutex::new(Vec::new()));
        timer_numbers(&env, records, 10_000.0)
            .key_by(|i| i % KEYS)
            .process(CountAtEnd::default())
            .uid("count at end")
            .add_sink(CollectSink::new(Arc::clone(&fired)))
            .set_parallelism(1);
        let client = env.execute_async("stoppable").expect("starts");
        std::thread::sleep(Duration::from_millis(300));
        let location = client
            .stop_with_savepoint(dir.join("savepoints"), drain)
            .expect("stopped with a savepoint");
        let result = client.wait().expect("a stopped job succeeds");
        assert_eq!(result.restarts, 0);
        let at_stop = counts.lock().expect("lock").len() as u64;
        assert!(at_stop < records, "stopped part-way");
        // The timers at 1 000 000 ms fire only when drained.
        assert_eq!(fired.lock().expect("lock").is_empty(), !drain);

        let env = StreamExecutionEnvironment::new();
        env.set_parallelism(2);
        env.set_from_savepoint(location.trim_start_matches("file://"));
        let out = counting_job(&env, records, 1e9, None);
        timer_numbers(&env, records, 1e9)
            .key_by(|i| i % KEYS)
            .process(CountAtEnd::default())
            .uid("count at end")
            .add_sink(DiscardingSink)
            .set_parallelism(1);
        env.execute("resumed").expect("resumes");
        let resumed = out.lock().expect("lock");
        assert_eq!(
            at_stop + resumed.len() as u64,
            records,
            "each record counted once"
        );
        let max = max_per_key(resumed.iter());
        assert!(max.values().all(|m| *m == records / KEYS), "{max:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn a_uid_set_twice_is_refused() {
    let env = StreamExecutionEnvironment::new();
    env.from_sequence(0, 9)
        .uid("same")
        .map(|i: i64| i)
        .uid("same")
        .add_sink(DiscardingSink);
    let err = env.execute("twice").expect_err("duplicate uid");
    assert!(err.to_string().contains("'same'"), "{err}");
}

#[test]
fn savepoints_go_to_the_configured_directory_when_none_is_named() {
    let dir = temp_dir("savepoint-dir");
    let env = StreamExecutionEnvironment::new();
    let mut c = Configuration::new();
    c.set("execution.checkpointing.interval", "1 h").set(
        "execution.checkpointing.savepoint-dir",
        dir.display().to_string(),
    );
    env.configure(&c).expect("config");
    counting_job(&env, 1_000_000, 20_000.0, None);
    let client = env.execute_async("default dir").expect("starts");
    let handle = client.savepoint_handle().expect("checkpointing is on");
    std::thread::sleep(Duration::from_millis(100));
    let location = handle.trigger_to_default().expect("savepoint");
    assert!(location.contains(&dir.display().to_string()), "{location}");
    client.cancel();
    let _ = client.wait();
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs 1..=1000 through a map that fails at record 500 in its first
/// `failing_attempts` attempts, with the restart strategy of `settings`;
/// the job's result and how many times it failed.
fn failing_attempts(
    failing_attempts: u32,
    settings: &[(&str, &str)],
) -> (Result<JobExecutionResult, weir::Error>, u32) {
    #[derive(Clone)]
    struct FailEarlyAttempts {
        attempts: u32,
        failing: bool,
        failures: Arc<Mutex<u32>>,
    }
    impl MapFunction<i64, i64> for FailEarlyAttempts {
        fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
            self.failing = ctx.attempt_number < self.attempts;
            Ok(())
        }
        fn map(&mut self, i: i64) -> i64 {
            if self.failing && i == 500 {
                *self.failures.lock().expect("lock") += 1;
                panic!("injected failure");
            }
            i
        }
    }
    let env = StreamExecutionEnvironment::new();
    let mut c = Configuration::new();
    c.set("execution.checkpointing.interval", "20 ms");
    for (k, v) in settings {
        c.set(*k, *v);
    }
    env.configure(&c).expect("valid settings");
    let failures = Arc::new(Mutex::new(0));
    env.from_sequence(1, 1_000)
        .map(FailEarlyAttempts {
            attempts: failing_attempts,
            failing: false,
            failures: Arc::clone(&failures),
        })
        .add_sink(DiscardingSink);
    let result = env.execute("failing attempts");
    let failed = *failures.lock().expect("lock");
    (result, failed)
}

#[test]
fn the_failure_rate_strategy_gives_up_past_its_rate() {
    let rate = [
        ("restart-strategy.type", "failure-rate"),
        (
            "restart-strategy.failure-rate.max-failures-per-interval",
            "2",
        ),
        (
            "restart-strategy.failure-rate.failure-rate-interval",
            "10 min",
        ),
        ("restart-strategy.failure-rate.delay", "1 ms"),
    ];
    // Two failures within the interval are tolerated: the third attempt
    // runs to the end.
    let (result, failed) = failing_attempts(2, &rate);
    assert_eq!(failed, 2);
    assert_eq!(result.expect("recovers").restarts, 2);
    // A third failure within the interval ends the job.
    let (result, failed) = failing_attempts(u32::MAX, &rate);
    assert_eq!(failed, 3);
    let err = result.expect_err("gives up").to_string();
    assert!(err.contains("injected failure"), "{err}");
}

#[test]
fn the_exponential_delay_strategy_keeps_restarting() {
    let exponential = [
        ("restart-strategy.type", "exponential-delay"),
        ("restart-strategy.exponential-delay.initial-backoff", "1 ms"),
        ("restart-strategy.exponential-delay.max-backoff", "8 ms"),
        ("restart-strategy.exponential-delay.backoff-multiplier", "2"),
    ];
    let (result, failed) = failing_attempts(5, &exponential);
    assert_eq!(failed, 5);
    let result = result.expect("recovers");
    assert_eq!(result.restarts, 5);
    assert_eq!(result.recovered_failures.len(), 5);
}

#[test]
fn checkpoints_keep_the_minimum_pause_between_them() {
    let env = StreamExecutionEnvironment::new();
    let mut c = Configuration::new();
    c.set("execution.checkpointing.interval", "10 ms")
        .set("execution.checkpointing.min-pause", "100 ms");
    env.configure(&c).expect("valid settings");
    let out = counting_job(&env, 2_000, 2_000.0, None);
    let result = env.execute("paused").expect("runs");
    assert_eq!(out.lock().expect("lock").len(), 2_000);
    let mut history: Vec<_> = result
        .checkpoints
        .history
        .iter()
        .filter(|c| c.failure.is_none())
        .collect();
    // The last is the final checkpoint, taken when the input ended.
    history.pop();
    assert!(history.len() >= 2, "{history:?}");
    // Each checkpoint is triggered at least the pause after the previous
    // one completed (not merely the 10 ms interval after it started).
    for pair in history.windows(2) {
        let previous_end = pair[0].trigger_timestamp_ms + pair[0].duration.as_millis() as i64;
        let gap = pair[1].trigger_timestamp_ms - previous_end;
        assert!(gap >= 99, "only {gap} ms between checkpoints: {pair:?}");
    }
}

#[test]
fn interval_join_buffers_survive_a_failure() {
    let records = 20_000u64;
    // Blocks of 100 numbers are the keys; a left and a right record join
    // when their timestamps (the numbers) are at most 5 apart.
    let block = |i: &u64| i / 100;
    let env = checkpointing(2, CheckpointingMode::ExactlyOnce);
    let stamped = |s: DataStream<u64>| {
        s.assign_timestamps_and_watermarks(
            WatermarkStrategy::for_monotonous_timestamps()
                .with_timestamp_assigner(|i: &u64, _| *i as i64),
        )
    };
    let left = stamped(failing_numbers(&env, records, 12_000));
    let right = stamped(
        env.add_parallel_source(
            GeneratorSource::new(records, |i| i).with_rate_limit(records as f64),
            "right numbers",
        )
        .uid("right numbers"),
    );
    let out = Arc::new(Mutex::new(Vec::new()));
    left.key_by(block)
        .interval_join(&right.key_by(block))
        .between(-5, 5)
        .process(
            move |a: &u64,
                  _b: &u64,
                  _ctx: &ProcessJoinContext,
                  out: &mut Collector<'_, (u64, u64)>| {
                out.collect((a / 100, 1));
                Ok(())
            },
        )
        .uid("join")
        .key_by(|p| p.0)
        .sum(|p| &mut p.1)
        .uid("pairs per block")
        .add_sink(CollectSink::new(Arc::clone(&out)))
        .set_parallelism(1);
    let result = env.execute("join").expect("recovers");
    assert_eq!(result.restarts, 1);
    assert!(result.checkpoints.restored.is_some());
    // Pairs per block, counted plainly.
    let mut expected: BTreeMap<u64, u64> = BTreeMap::new();
    for a in 0..records {
        for b in a.saturating_sub(5)..=(a + 5).min(records - 1) {
            if a / 100 == b / 100 {
                *expected.entry(a / 100).or_default() += 1;
            }
        }
    }
    // Buffers lost or restored twice would miss or repeat pairs.
    assert_eq!(max_per_key(out.lock().expect("lock").iter()), expected);
}

/// Emits its timestamps one per poll; the last only once a checkpoint
/// taken after all the others has completed (so that the restore of that
/// checkpoint replays the last record alone).
#[derive(Clone)]
struct HoldLast {
    values: Vec<i64>,
    next: usize,
    waiting_for: Option<u64>,
    release: bool,
}

impl SourceFunction<i64> for HoldLast {
    fn poll_next(&mut self, ctx: &mut SourceContext<'_, i64>) -> FunctionResult<SourceStatus> {
        if self.next == self.values.len() {
            return Ok(SourceStatus::Finished);
        }
        if self.next + 1 == self.values.len() && !self.release {
            std::thread::sleep(Duration::from_millis(2));
            return Ok(SourceStatus::More);
        }
        let v = self.values[self.next];
        ctx.collect_with_timestamp(v, v);
        self.next += 1;
        Ok(SourceStatus::More)
    }
    fn snapshot_position(&mut self, id: u64) -> FunctionResult<Option<Vec<u8>>> {
        if self.next + 1 == self.values.len() && self.waiting_for.is_none() {
            self.waiting_for = Some(id);
        }
        Ok(Some((self.next as u64).to_le_bytes().to_vec()))
    }
    fn restore_position(&mut self, position: &[u8]) -> FunctionResult {
        let bytes: [u8; 8] = position.try_into().map_err(|_| "bad position")?;
        self.next = u64::from_le_bytes(bytes) as usize;
        self.release = true;
        Ok(())
    }
    fn notify_checkpoint_complete(&mut self, id: u64) -> FunctionResult {
        if self.waiting_for.is_some_and(|w| id >= w) {
            self.release = true;
        }
        Ok(())
    }
}

#[test]
fn a_record_late_before_a_failure_is_late_after_the_restore() {
    // Watermarks follow each record (punctuated): after 31 s the windows
    // up to 30 s have fired, and a record at 5 s is late, before and after
    // a failure that restores the checkpoint taken just before it.
    let env = StreamExecutionEnvironment::new();
    env.enable_checkpointing(Duration::from_millis(20))
        .set_restart_strategy(RestartStrategy::fixed_delay(1, Duration::ZERO));
    let late = OutputTag::<i64>::new("late");
    let windows = env
        .add_source(
            HoldLast {
                values: vec![1_000, 12_000, 25_000, 31_000, 5_000],
                next: 0,
                waiting_for: None,
                release: false,
            },
            "timestamps",
        )
        .uid("timestamps")
        .assign_timestamps_and_watermarks(WatermarkStrategy::for_generator(|_| Punctuated))
        .uid("watermarks")
        .map(|v: i64| {
            // Fails once, on the late record of the first attempt.
            static FAILED: std::sync::atomic::AtomicBool =
                std::sync::atomic::AtomicBool::new(false);
            if v == 5_000 && !FAILED.swap(true, std::sync::atomic::Ordering::SeqCst) {
                panic!("injected failure before the late record");
            }
            v
        })
        .uid("fail once")
        .key_by(|_| 0u8)
        .window(TumblingEventTimeWindows::of(Duration::from_secs(10)))
        .side_output_late_data(&late)
        .process(
            |_k: &u8,
             ctx: &mut ProcessWindowContext<'_, TimeWindow>,
             e: Elements<'_, i64>,
             out: &mut Collector<'_, (i64, usize)>| {
                out.collect((ctx.window().start, e.count()));
                Ok(())
            },
        )
        .uid("windows");
    let fired = Arc::new(Mutex::new(Vec::new()));
    let dropped = Arc::new(Mutex::new(Vec::new()));
    windows
        .get_side_output(&late)
        .add_sink(CollectSink::new(Arc::clone(&dropped)));
    windows.add_sink(CollectSink::new(Arc::clone(&fired)));
    let result = env.execute("late after restore").expect("recovers");
    assert_eq!(result.restarts, 1, "{:?}", result.recovered_failures);
    let mut fired = fired.lock().expect("lock").clone();
    fired.sort();
    fired.dedup();
    // Without the checkpointed watermark, the restored job starts from the
    // lowest one and counts the record at 5 s in a window of its own.
    assert_eq!(
        fired,
        vec![(0, 1), (10_000, 1), (20_000, 1), (30_000, 1)],
        "the record at 5 s fired a window after the restore"
    );
    assert_eq!(*dropped.lock().expect("lock"), vec![5_000]);
}

/// A watermark right behind every record.
struct Punctuated;

impl WatermarkGenerator<i64> for Punctuated {
    fn on_event(&mut self, _event: &i64, timestamp: i64, output: &mut WatermarkOutput) {
        output.emit_watermark(timestamp - 1);
    }
    fn on_periodic_emit(&mut self, _output: &mut WatermarkOutput) {}
}

#[test]
fn a_job_with_a_fixed_id_resumes_from_its_newest_checkpoint_by_itself() {
    let dir = temp_dir("fixed-id");
    let records = 30_000;
    let fixed = |env: &StreamExecutionEnvironment| {
        retain_checkpoints(env, &dir, "30 ms");
        let mut c = Configuration::new();
        c.set(
            "$internal.pipeline.job-id",
            "0123456789abcdef0123456789ABCDEF",
        );
        env.configure(&c).expect("config");
    };
    // First run: cancelled part-way (15 s of input), its checkpoints kept.
    let env = StreamExecutionEnvironment::new();
    fixed(&env);
    counting_job(&env, records, 2_000.0, None);
    let chk = cancel_after_a_checkpoint(&env, &dir, Duration::from_millis(200));
    assert!(
        chk.starts_with(dir.join("0123456789abcdef0123456789abcdef")),
        "checkpoints in the fixed job's directory: {}",
        chk.display()
    );
    // The same program and configuration again, no --from-savepoint: it
    // resumes from that checkpoint by itself and counts each record once.
    let env = StreamExecutionEnvironment::new();
    fixed(&env);
    let out = counting_job(&env, records, 1e9, None);
    let result = env.execute("again").expect("resumes");
    assert!(result.checkpoints.restored.is_some(), "resumed by itself");
    let max = max_per_key(out.lock().expect("lock").iter());
    assert!(max.values().all(|m| *m == records / KEYS), "{max:?}");
    // A job id that is not 32 hex digits is refused.
    let env = StreamExecutionEnvironment::new();
    let mut c = Configuration::new();
    c.set("$internal.pipeline.job-id", "not-an-id");
    let err = env.configure(&c).expect_err("refused").to_string();
    assert!(err.contains("32 hexadecimal digits"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
