//! Keyed state through whole jobs: handles declared in `open`, scoped to
//! each record's key.

use weir::prelude::*;
use weir::ManualClock;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::sorted;

/// Keeps the running maximum per city (the `keyed_state_max` example).
#[derive(Clone, Default)]
struct RunningMax {
    max: Option<ValueState<i64>>,
}

impl MapFunction<(String, String, i64), String> for RunningMax {
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.max = Some(ctx.get_state(&ValueStateDescriptor::<i64>::new("max"))?);
        Ok(())
    }

    fn map(&mut self, (city, _district, value): (String, String, i64)) -> String {
        // A map function cannot return an error; a state failure panics,
        // which fails the job naming this operator.
        let state = self.max.as_ref().expect("opened");
        let max = state
            .value()
            .expect("state readable")
            .map_or(value, |m| m.max(value));
        state.update(max).expect("state writable");
        format!("{city} -> {max}")
    }
}

fn readings() -> Vec<(String, String, i64)> {
    [
        ("sz", "a", 5),
        ("bj", "x", 3),
        ("sz", "b", 9),
        ("sz", "c", 2),
        ("bj", "y", 4),
    ]
    .into_iter()
    .map(|(c, d, v)| (c.to_string(), d.to_string(), v))
    .collect()
}

#[test]
fn value_state_keeps_a_running_max_per_key() -> anyhow::Result<()> {
    let env = StreamExecutionEnvironment::new();
    let out = env
        .from_collection(readings())
        .key_by(|r| r.0.clone())
        .map(RunningMax::default())
        .execute_and_collect()?;
    assert_eq!(
        out,
        vec!["sz -> 5", "bj -> 3", "sz -> 9", "sz -> 9", "bj -> 4"]
    );
    Ok(())
}

#[test]
fn keyed_state_gives_the_same_results_at_parallelism_4() -> anyhow::Result<()> {
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(4);
    let input: Vec<(String, String, i64)> = (0..2000)
        .map(|i| (format!("c{}", i % 37), String::new(), (i * 7919) % 1000))
        .collect();
    let out = env
        .from_collection(input.clone())
        .key_by(|r| r.0.clone())
        .map(RunningMax::default())
        .execute_and_collect()?;
    // The running maximum per key, computed plainly.
    let mut max = std::collections::HashMap::new();
    let expected: Vec<String> = input
        .iter()
        .map(|(city, _, v)| {
            let m = max.entry(city.clone()).or_insert(*v);
            *m = (*m).max(*v);
            format!("{city} -> {m}")
        })
        .collect();
    assert_eq!(out.len(), 2000);
    assert_eq!(sorted(out), sorted(expected));
    Ok(())
}

/// Counts records per key in a `ValueState` and emits `key=count`.
#[derive(Clone, Default)]
struct CountPerKey(Option<ValueState<u32>>);

impl KeyedProcessFunction<String, String, String> for CountPerKey {
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.0 = Some(ctx.get_state(&ValueStateDescriptor::new("count"))?);
        Ok(())
    }

    fn process_element(
        &mut self,
        key: String,
        _ctx: &mut ProcessContext<'_, String>,
        out: &mut Collector<'_, String>,
    ) -> FunctionResult {
        let count = self.0.as_ref().ok_or("not opened")?;
        let n = count.value()?.unwrap_or(0) + 1;
        count.update(n)?;
        out.collect(format!("{key}={n}"));
        Ok(())
    }
}

/// State past the caches takes another path on the heap (a batch's keys
/// prepared at once, each entry prefetched ahead of its record): every
/// record must still see its own key's value.
#[test]
fn big_heap_state_counts_every_key_exactly() -> anyhow::Result<()> {
    counts_every_key_exactly(StreamExecutionEnvironment::new(), 150_000)
}

/// On RocksDB with a write-back cache far smaller than the state, a batch's
/// values are read from RocksDB together before its records are processed:
/// every record must still see its own key's value, also when the cache
/// evicts while loading.
#[cfg(feature = "rocksdb")]
#[test]
fn rocksdb_state_past_the_cache_counts_every_key_exactly() -> anyhow::Result<()> {
    let env = StreamExecutionEnvironment::new();
    let mut c = Configuration::new();
    c.set("state.backend.type", "rocksdb");
    c.set("weir.state.rocksdb.write-back-cache.size", "64 kb");
    env.configure(&c)?;
    counts_every_key_exactly(env, 1 << 14)
}

/// Counts `keys` keys, each three times, at parallelism 2.
fn counts_every_key_exactly(env: StreamExecutionEnvironment, keys: u64) -> anyhow::Result<()> {
    env.set_parallelism(2);
    // Each key three times, keys of different lengths, visited in a
    // scrambled order.
    let input: Vec<String> = (0..keys * 3)
        .map(|i| {
            let k = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) % keys;
            if k % 3 == 0 {
                format!("a-rather-long-key-number-{k}")
            } else {
                format!("k{k}")
            }
        })
        .collect();
    let out = env
        .from_collection(input.clone())
        .key_by(|k: &String| k.clone())
        .process(CountPerKey::default())
        .execute_and_collect()?;
    let mut counts = std::collections::HashMap::new();
    let expected: Vec<String> = input
        .iter()
        .map(|k| {
            let n = counts.entry(k.clone()).or_insert(0u32);
            *n += 1;
            format!("{k}={n}")
        })
        .collect();
    assert_eq!(counts.len() as u64, keys);
    assert_eq!(sorted(out), sorted(expected));
    Ok(())
}

/// Counts records per key in MapState by parity, and emits the counts when
/// an event-time timer fires.
#[derive(Clone, Default)]
struct ParityCounts {
    counts: Option<MapState<bool, u32>>,
    seen: Option<ListState<i64>>,
}

impl KeyedProcessFunction<u8, (u8, i64), String> for ParityCounts {
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.counts = Some(ctx.get_map_state(&MapStateDescriptor::new("parity"))?);
        self.seen = Some(ctx.get_list_state(&ListStateDescriptor::new("seen"))?);
        Ok(())
    }

    fn process_element(
        &mut self,
        (_, v): (u8, i64),
        ctx: &mut ProcessContext<'_, u8>,
        _out: &mut Collector<'_, String>,
    ) -> FunctionResult {
        let counts = self.counts.as_ref().ok_or("not opened")?;
        let even = v % 2 == 0;
        counts.put(even, counts.get(&even)?.unwrap_or(0) + 1)?;
        self.seen.as_ref().ok_or("not opened")?.add(v)?;
        ctx.timer_service().register_event_time_timer(1_000);
        Ok(())
    }

    fn on_timer(
        &mut self,
        _ts: i64,
        ctx: &mut ProcessContext<'_, u8>,
        out: &mut Collector<'_, String>,
    ) -> FunctionResult {
        let counts = self.counts.as_ref().ok_or("not opened")?;
        let seen = self.seen.as_ref().ok_or("not opened")?.get()?;
        out.collect(format!(
            "{}: even {} odd {} seen {:?}",
            ctx.get_current_key(),
            counts.get(&true)?.unwrap_or(0),
            counts.get(&false)?.unwrap_or(0),
            seen
        ));
        counts.clear()?;
        Ok(())
    }
}

#[test]
fn state_is_scoped_to_the_key_in_timers_too() -> anyhow::Result<()> {
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(2);
    let out = env
        .from_elements(vec![(1u8, 1i64), (2, 2), (1, 3), (1, 4), (2, 6)])
        .assign_timestamps_and_watermarks(
            WatermarkStrategy::no_watermarks().with_timestamp_assigner(|_: &(u8, i64), _| 0),
        )
        // One upstream subtask keeps each key's records in order.
        .set_parallelism(1)
        .key_by(|e| e.0)
        .process(ParityCounts::default())
        .execute_and_collect()?;
    assert_eq!(
        sorted(out),
        vec![
            "1: even 1 odd 2 seen [1, 3, 4]",
            "2: even 2 odd 0 seen [2, 6]"
        ]
    );
    Ok(())
}

#[derive(Clone, Default)]
struct WantsState;

impl MapFunction<i64, i64> for WantsState {
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        ctx.get_state(&ValueStateDescriptor::<i64>::new("nope"))?;
        Ok(())
    }
    fn map(&mut self, v: i64) -> i64 {
        v
    }
}

#[test]
fn keyed_state_outside_a_keyed_stream_is_a_clear_error() {
    let env = StreamExecutionEnvironment::new();
    env.from_elements(vec![1i64])
        .map(WantsState)
        .name("Unkeyed")
        .add_sink(DiscardingSink);
    let err = env
        .execute("unkeyed")
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("Unkeyed"), "{err}");
    assert!(err.contains("only available on a keyed stream"), "{err}");
}

#[test]
fn the_backend_is_chosen_by_configuration() {
    let backend = |value: &str| {
        StreamExecutionEnvironment::from_args_iter(["-D", &format!("state.backend.type={value}")])
            .map(|env| env.get_state_backend().name())
    };
    assert_eq!(
        StreamExecutionEnvironment::new().get_state_backend().name(),
        "hashmap"
    );
    assert_eq!(backend("hashmap").ok(), Some("hashmap"));
    let err = backend("lmdb").expect_err("no such backend").to_string();
    assert!(
        err.contains("must be 'hashmap' or 'rocksdb', is 'lmdb'"),
        "{err}"
    );
    if cfg!(feature = "rocksdb") {
        assert_eq!(backend("rocksdb").ok(), Some("rocksdb"));
        assert_eq!(backend("RocksDB").ok(), Some("rocksdb"));
    } else {
        assert!(matches!(backend("rocksdb"), Err(weir::Error::Config(_))));
    }
}

/// RocksDB options apply whether they come before, with or after the
/// backend type (an invalid size shows that they were read).
#[cfg(feature = "rocksdb")]
#[test]
fn rocksdb_options_apply_from_any_configure_call() -> anyhow::Result<()> {
    let bad_size = || {
        let mut c = Configuration::new();
        c.set("state.backend.rocksdb.block.cache-size", "lots");
        c
    };
    let rocksdb = || {
        let mut c = Configuration::new();
        c.set("state.backend.type", "rocksdb");
        c
    };
    let env = StreamExecutionEnvironment::new();
    env.configure(&rocksdb())?;
    assert!(matches!(
        env.configure(&bad_size()),
        Err(weir::Error::Config(_))
    ));
    let env = StreamExecutionEnvironment::new();
    env.configure(&bad_size())?;
    assert!(matches!(
        env.configure(&rocksdb()),
        Err(weir::Error::Config(_))
    ));
    Ok(())
}

/// The same keyed-state job on each backend gives the same results.
#[cfg(feature = "rocksdb")]
#[test]
fn keyed_state_jobs_agree_on_heap_and_rocksdb() -> anyhow::Result<()> {
    let run = |backend: &str| -> anyhow::Result<Vec<String>> {
        let env = StreamExecutionEnvironment::from_args_iter([
            "-D".to_string(),
            format!("state.backend.type={backend}"),
            "-p".to_string(),
            "2".to_string(),
        ])?;
        let input: Vec<(String, String, i64)> = (0..3000)
            .map(|i| (format!("c{}", i % 101), String::new(), (i * 7919) % 1000))
            .collect();
        Ok(sorted(
            env.from_collection(input)
                .set_parallelism(1)
                .key_by(|r| r.0.clone())
                .map(RunningMax::default())
                .execute_and_collect()?,
        ))
    };
    assert_eq!(run("hashmap")?, run("rocksdb")?);
    Ok(())
}

/// Every instance sees every broadcast element and keeps its own copy of
/// the broadcast state.
#[derive(Clone, Default)]
struct EchoRules {
    subtask: u32,
}

impl BroadcastProcessFunction<i64, (String, i64), String> for EchoRules {
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.subtask = ctx.subtask_index;
        Ok(())
    }

    fn process_element(
        &mut self,
        _value: i64,
        _ctx: &mut ReadOnlyContext<'_>,
        _out: &mut Collector<'_, String>,
    ) -> FunctionResult {
        Ok(())
    }

    fn process_broadcast_element(
        &mut self,
        (name, limit): (String, i64),
        ctx: &mut BroadcastContext<'_>,
        out: &mut Collector<'_, String>,
    ) -> FunctionResult {
        let rules = ctx.get_broadcast_state(&MapStateDescriptor::<String, i64>::new("rules"))?;
        rules.insert(name.clone(), limit);
        out.collect(format!(
            "{} has {} rules after {name}",
            self.subtask,
            rules.len()
        ));
        Ok(())
    }
}

#[test]
fn every_instance_receives_the_broadcast_stream() -> anyhow::Result<()> {
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(3);
    let rules = env
        .from_elements(vec![("a".to_string(), 1i64), ("b".to_string(), 2)])
        .broadcast_state(&MapStateDescriptor::<String, i64>::new("rules"));
    let out = env
        .from_sequence(1, 10)
        .connect_broadcast(&rules)
        .process(EchoRules::default())
        .execute_and_collect()?;
    let mut expected = Vec::new();
    for s in 0..3 {
        expected.push(format!("{s} has 1 rules after a"));
        expected.push(format!("{s} has 2 rules after b"));
    }
    assert_eq!(sorted(out), sorted(expected));
    Ok(())
}

/// `(key, processing time)` records; the source sets a manual clock to
/// each record's time before emitting it.
#[derive(Clone)]
struct AtTimes {
    clock: ManualClock,
    script: Vec<(&'static str, i64)>,
    next: usize,
}

impl SourceFunction<(String, i64)> for AtTimes {
    fn poll_next(
        &mut self,
        ctx: &mut SourceContext<'_, (String, i64)>,
    ) -> FunctionResult<SourceStatus> {
        let Some((key, time)) = self.script.get(self.next) else {
            return Ok(SourceStatus::Finished);
        };
        self.clock.set(*time);
        ctx.collect((key.to_string(), *time));
        self.next += 1;
        Ok(SourceStatus::More)
    }
}

/// Per key: visits within a 1 s time-to-live of the last one, a reducing
/// sum of the times, and an aggregating average of them.
#[derive(Clone, Default)]
struct Visits {
    visits: Option<ValueState<u64>>,
    total: Option<ReducingState<i64>>,
    average: Option<AggregatingState<i64, (i64, i64), i64>>,
}

impl MapFunction<(String, i64), String> for Visits {
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        let ttl = StateTtlConfig::new_builder(Duration::from_millis(1_000)).build();
        self.visits = Some(
            ctx.get_state(&ValueStateDescriptor::<u64>::new("visits").enable_time_to_live(ttl))?,
        );
        self.total = Some(
            ctx.get_reducing_state(&ReducingStateDescriptor::new("total", |a: i64, b: i64| {
                a + b
            }))?,
        );
        self.average = Some(ctx.get_aggregating_state(&AggregatingStateDescriptor::new(
            "average",
            || (0i64, 0i64),
            |t: i64, acc: &mut (i64, i64)| {
                acc.0 += t;
                acc.1 += 1;
            },
            |acc: &(i64, i64)| acc.0 / acc.1.max(1),
        ))?);
        Ok(())
    }

    fn map(&mut self, (key, time): (String, i64)) -> String {
        let (visits, total, average) = (
            self.visits.as_ref().expect("opened"),
            self.total.as_ref().expect("opened"),
            self.average.as_ref().expect("opened"),
        );
        let n = visits.value().expect("readable").unwrap_or(0) + 1;
        visits.update(n).expect("writable");
        total.add(time).expect("writable");
        average.add(time).expect("writable");
        format!(
            "{key}@{time}: visit {n}, total {}, average {}",
            total.get().expect("readable").unwrap_or(0),
            average.get().expect("readable").unwrap_or(0)
        )
    }
}

#[test]
fn ttl_reducing_and_aggregating_state_in_a_running_job() -> anyhow::Result<()> {
    let backends: &[&str] = if cfg!(feature = "rocksdb") {
        &["hashmap", "rocksdb"]
    } else {
        &["hashmap"]
    };
    for backend in backends {
        let clock = ManualClock::new(0);
        let env = crate::in_step_with(&clock)?;
        let mut c = Configuration::new();
        c.set("state.backend.type", *backend);
        env.configure(&c)?;
        let source = AtTimes {
            clock,
            script: vec![
                ("a", 0),
                ("a", 500),
                ("b", 1_200),
                ("a", 1_600),
                ("a", 2_000),
            ],
            next: 0,
        };
        let out = env
            .add_source(source, "visits")
            .key_by(|v| v.0.clone())
            .map(Visits::default())
            .execute_and_collect()?;
        // a's visits expire 1 s after their last write (500 ms): at 1600
        // they start again. Totals and averages have no time-to-live.
        assert_eq!(
            out,
            vec![
                "a@0: visit 1, total 0, average 0",
                "a@500: visit 2, total 500, average 250",
                "b@1200: visit 1, total 1200, average 1200",
                "a@1600: visit 1, total 2100, average 700",
                "a@2000: visit 2, total 4100, average 1025",
            ],
            "{backend}"
        );
    }
    Ok(())
}

/// Emits each bundle it gets: its key, its records' sequence numbers, the
/// key's count of records after it, kept in a `ValueState`, and the
/// distances it was looked at from (`look_ahead`), each look checked
/// against what the bundle then was.
#[derive(Clone, Default)]
struct BundleCounter {
    count: Option<ValueState<u64>>,
    /// By key: each look's distance, records and the count it saw.
    looks: Arc<Mutex<HashMap<u32, Vec<Look>>>>,
}

/// What `look_ahead` saw of a key: distance, sequence numbers, count.
type Look = (usize, Vec<u64>, Option<u64>);

impl KeyedBundleFunction<u32, (u32, u64), Bundled> for BundleCounter {
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.count = Some(ctx.get_state(&ValueStateDescriptor::new("count"))?);
        Ok(())
    }

    fn look_ahead(&self, upcoming: &Upcoming<'_, (u32, u64)>) -> FunctionResult {
        let count = self.count.as_ref().ok_or("not opened")?;
        let mut seen = None;
        upcoming.peek(count, |n| seen = Some(*n))?;
        let records = upcoming.records();
        let key = records.first().ok_or("an empty bundle")?.0;
        let seqs = records.iter().map(|r| r.1).collect();
        let mut looks = self.looks.lock().map_err(|_| "poisoned")?;
        looks
            .entry(key)
            .or_default()
            .push((upcoming.distance(), seqs, seen));
        Ok(())
    }

    fn process_bundle(
        &mut self,
        records: &mut Vec<(u32, u64)>,
        ctx: &mut ProcessContext<'_, u32>,
        out: &mut Collector<'_, Bundled>,
    ) -> FunctionResult {
        let count = self.count.as_ref().ok_or("not opened")?;
        let before = count.value()?;
        let n = before.unwrap_or(0) + records.len() as u64;
        count.update(n)?;
        let key = *ctx.get_current_key();
        if records.iter().any(|(k, _)| *k != key) {
            return Err("a bundle mixes keys".into());
        }
        let seqs: Vec<u64> = records.drain(..).map(|(_, seq)| seq).collect();
        let looks = self.looks.lock().map_err(|_| "poisoned")?.remove(&key);
        let mut distances = Vec::new();
        for (distance, looked, saw) in looks.unwrap_or_default() {
            if looked != seqs || saw != before {
                return Err(format!(
                    "key {key} looked at from {distance} ahead as {looked:?} with {saw:?}, \
                     then bundled as {seqs:?} with {before:?}"
                )
                .into());
            }
            distances.push(distance);
        }
        out.collect((key, seqs, n, distances));
        Ok(())
    }
}

/// A record as [`BundleCounter`] reads it: key, sequence number.
type Keyed = (u32, u64);

/// A bundle as [`BundleCounter`] emits it: key, sequence numbers, count,
/// the distances it was looked at from.
type Bundled = (u32, Vec<u64>, u64, Vec<usize>);

/// `records` records (key, sequence number) spread over `keys` keys, and
/// what [`BundleCounter`] makes of them in bundles of at most 100.
fn counted_in_bundles(records: u64, keys: u32) -> anyhow::Result<(Vec<Keyed>, Vec<Bundled>)> {
    counted_in_bundles_at(records, keys, 1)
}

/// [`counted_in_bundles`] with the bundles processed at `parallelism`.
fn counted_in_bundles_at(
    records: u64,
    keys: u32,
    parallelism: u32,
) -> anyhow::Result<(Vec<Keyed>, Vec<Bundled>)> {
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(parallelism);
    let input: Vec<Keyed> = (0..records)
        .map(|i| ((i.wrapping_mul(0x9E37_79B9) % u64::from(keys)) as u32, i))
        .collect();
    // One source subtask, so that each key's records have one order.
    let out = env
        .from_collection(input.clone())
        .set_parallelism(1)
        .key_by(|r: &(u32, u64)| r.0)
        .process_bundles(100, BundleCounter::default())
        .execute_and_collect()?;
    Ok((input, out))
}

/// A bundle is one key's records of a batch, in arrival order, at most the
/// size asked for; the key's state carries from bundle to bundle, also
/// with the bundles processed by three subtasks.
#[test]
fn bundles_group_a_batch_by_key_in_order_with_the_keys_state() -> anyhow::Result<()> {
    // At parallelism 3, each batch is split between the subtasks that
    // own its keys.
    for parallelism in [1, 3] {
        let (input, out) = counted_in_bundles_at(3000, 7, parallelism)?;
        let mut seen: std::collections::HashMap<u32, Vec<u64>> = Default::default();
        for (key, seqs, count, looked) in &out {
            assert!(
                !seqs.is_empty() && seqs.len() <= 100,
                "bundle of {}",
                seqs.len()
            );
            // Small state: no key is looked at ahead.
            assert!(looked.is_empty(), "key {key} looked at from {looked:?}");
            let so_far = seen.entry(*key).or_default();
            so_far.extend(seqs);
            // One subtask holds each key's state: the count carries on.
            assert_eq!(*count, so_far.len() as u64, "key {key}'s state");
        }
        // Each key's records, each once and in the order they came.
        for key in 0..7 {
            let expected: Vec<u64> = input.iter().filter(|r| r.0 == key).map(|r| r.1).collect();
            assert_eq!(seen.get(&key), Some(&expected), "key {key}");
        }
        // Records that came together were bundled: far fewer bundles than
        // records.
        assert!(out.len() < input.len() / 4, "{} bundles", out.len());
    }
    Ok(())
}

/// With more keys than the caches hold (the state past a megabyte), a
/// batch's bundles find their keys' state prepared ahead of them: each
/// bundle still reads and writes its own key's.
#[test]
fn bundles_of_many_keys_each_find_their_own_keys_state() -> anyhow::Result<()> {
    let keys = 40_000u32;
    let (input, out) = counted_in_bundles(3 * u64::from(keys), keys)?;
    let mut seen: std::collections::HashMap<u32, Vec<u64>> = Default::default();
    let farthest = Upcoming::<Keyed>::FARTHEST;
    let mut looked_at_each_distance = 0;
    for (key, seqs, count, looked) in &out {
        let so_far = seen.entry(*key).or_default();
        so_far.extend(seqs);
        assert_eq!(*count, so_far.len() as u64, "key {key}'s state");
        // Looked at (if at all) once from each distance, farthest first,
        // down to the key before it.
        let from = looked.first().copied().unwrap_or(0);
        assert!(
            looked.iter().copied().eq((1..=from).rev()) && from <= farthest,
            "key {key} looked at from {looked:?}"
        );
        looked_at_each_distance += usize::from(from == farthest);
    }
    // Once the state is big, all but a batch's first few keys are.
    assert!(
        looked_at_each_distance > out.len() / 2,
        "{looked_at_each_distance} of {} bundles looked at from each distance",
        out.len()
    );
    let mut expected: std::collections::HashMap<u32, Vec<u64>> = Default::default();
    for (key, seq) in &input {
        expected.entry(*key).or_default().push(*seq);
    }
    assert_eq!(seen.len(), keys as usize);
    assert!(seen == expected, "records lost, repeated or out of order");
    Ok(())
}
