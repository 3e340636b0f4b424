//! End-to-end benchmarks: whole Weir jobs, timed from `execute` to finish.
//!
//! ```text
//! cargo run --release -p weir-bench -- stateless --events 50000000
//! ```
//!
//! Each job runs in a child process of this binary, so the peak RSS printed
//! is that job's alone. Every run also times a bare single-thread hash-map
//! keyed sum over the same events — the machine's limit for keyed work — and
//! prints each job's rate as a fraction of it.

use std::collections::HashMap;
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context};
use weir::prelude::*;

/// Distinct keys of the keyed jobs.
const KEYS: u64 = 10_000;

#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
struct Event {
    key: u64,
    value: u64,
}

/// The event with index `i`: keys cycle through 0..KEYS, values 0..=255.
#[inline]
fn event(i: u64) -> Event {
    Event {
        key: i.wrapping_mul(0x9E37_79B9_7F4A_7C15) % KEYS,
        value: i & 0xff,
    }
}

#[cfg(feature = "connectors")]
mod connectors;
mod nexmark;
mod sql;

/// Every job `weir-bench job --name` runs.
const JOBS: &[&str] = &[
    "chained",
    "keyed-sum",
    "exchange-none",
    "exchange-forward",
    "exchange-keyed",
    "memory-value-state",
    "memory-tumbling",
    "memory-sliding",
    "memory-session",
    "tumbling",
    "sliding",
    "session",
    "rocksdb-tumbling",
    "window-buffers",
    "rocksdb-window-buffers",
    "value-state-10k",
    "value-state-1m",
    "map-state",
    "rocksdb-value-state-10k",
    "rocksdb-value-state-1m",
    "rocksdb-value-state-10m",
    "rocksdb-map-state",
];

fn usage() -> String {
    format!(
        "End-to-end benchmarks of whole Weir jobs: events/s, latency, peak RSS.

usage: weir-bench stateless|windows|state|checkpoints|exchange [--events N]
       weir-bench memory
       weir-bench restore [--keys N]
       weir-bench object-storage [--events N] [--keys N]   (a local S3 server: scripts/install-deps.sh)
       weir-bench job --name JOB [--parallelism P] [--events N] [--checkpoint-interval D] [--checkpoint-dir DIR|s3://…]
       weir-bench nexmark (--query qN | --all) [--events N] [--parallelism P] [--pool N] [--input FILE]
       weir-bench nexmark --write-events FILE [--events N]
       weir-bench sql [--query q0,q1,q2] [--events N] [--pool N] [--chain-keyed-exchanges true|false|auto]
                                  (Nexmark in SQL against the DataStream queries)
       weir-bench sql --write-pool DIR [--pool N]   (the replayed events as TSV files, for another engine)
       weir-bench sql --script qN [--events N] [--pool N]   (the SQL script that --query runs)
       weir-bench baseline [--events N]
       weir-bench connectors [--records N] [--rows N]   (feature connectors: Kafka, PostgreSQL)

jobs: {}
queries: {}

examples:
  cargo run --release -p weir-bench -- stateless --events 50000000
  cargo run --release -p weir-bench -- job --name tumbling --parallelism 2
  cargo run --release -p weir-bench -- nexmark --query q5 --events 10000000
",
        JOBS.join(", "),
        weir_nexmark::queries::QUERIES.join(", ")
    )
}

fn main() -> anyhow::Result<()> {
    weir_state::allocator::grow_heaps_in_large_steps();
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args
        .iter()
        .any(|a| a == "--help" || a == "-h" || a == "help")
    {
        print!("{}", usage());
        return Ok(());
    }
    let params = ParameterTool::from_args(args.iter().skip(1).cloned());
    let events: u64 = params.get_parsed("events")?.unwrap_or(50_000_000);
    match args.first().map(String::as_str) {
        Some("stateless") => suite(events, &["chained", "keyed-sum"], &[1, 2]),
        Some("windows") => suite(events, &["tumbling", "sliding", "session"], &[1, 2]),
        Some("state") => suite(
            events,
            if cfg!(feature = "rocksdb") {
                &[
                    "value-state-10k",
                    "value-state-1m",
                    "map-state",
                    "rocksdb-value-state-10k",
                    "rocksdb-value-state-1m",
                    "rocksdb-value-state-10m",
                    "rocksdb-map-state",
                ]
            } else {
                &["value-state-10k", "value-state-1m", "map-state"]
            },
            &[1],
        ),
        Some("checkpoints") => checkpoint_suite(events),
        Some("exchange") => exchange_suite(events),
        Some("memory") => memory_suite(),
        Some("object-storage") => {
            let keys: u64 = params.get_parsed("keys")?.unwrap_or(10_000_000);
            object_storage_suite(params.get_parsed("events")?.unwrap_or(20_000_000), keys)
        }
        Some("restore") => {
            let keys: u64 = params.get_parsed("keys")?.unwrap_or(10_000_000);
            restore_bench(keys)
        }
        Some("job") => {
            let name = params.required("name")?;
            let p: u32 = params.get_parsed("parallelism")?.unwrap_or(1);
            let interval = params.get("checkpoint-interval").map(str::to_string);
            let dir = params.get("checkpoint-dir").map(str::to_string);
            run_job(name, p, events, interval.as_deref(), dir.as_deref())
        }
        Some("nexmark") => nexmark::main(&params, events),
        Some("sql") => sql::main(&params, events),
        #[cfg(feature = "connectors")]
        Some("connectors") => connectors::main(&params),
        #[cfg(not(feature = "connectors"))]
        Some("connectors") => bail!(
            "the connector benchmarks need the feature: cargo run --release -p weir-bench \
             --features connectors -- connectors"
        ),
        Some("baseline") => {
            let keys: u64 = params.get_parsed("keys")?.unwrap_or(KEYS);
            let (rate, _) = baseline_over(events, keys);
            println!("baseline {rate:.0}");
            Ok(())
        }
        other => {
            eprint!("{}", usage());
            match other {
                Some(name) => bail!("unknown benchmark '{name}'"),
                None => bail!("which benchmark? (see above)"),
            }
        }
    }
}

/// Runs each job at each parallelism in a child process and prints a table.
fn suite(events: u64, jobs: &[&str], parallelisms: &[u32]) -> anyhow::Result<()> {
    let exe = std::env::current_exe().context("locating the bench binary")?;
    let (baseline_rate, checksum) = baseline(events);
    println!("events: {events}, keys: {KEYS}, cores: {}", cores());
    println!(
        "{:<28} {:>14} {:>12} {:>14}",
        "job", "events/s", "of baseline", "peak RSS MiB"
    );
    println!(
        "{:<28} {:>14.0} {:>11.0}% {:>14}",
        "baseline (bare hash map, 1 thread)", baseline_rate, 100.0, "-"
    );
    std::hint::black_box(checksum);
    for job in jobs {
        for p in parallelisms {
            let output = Command::new(&exe)
                .args(["job", "--name", job, "--parallelism", &p.to_string()])
                .args(["--events", &events.to_string()])
                .output()
                .with_context(|| format!("running {job} at parallelism {p}"))?;
            if !output.status.success() {
                bail!(
                    "{job} p={p} failed: {}",
                    String::from_utf8_lossy(&output.stderr)
                );
            }
            let line = String::from_utf8_lossy(&output.stdout);
            let mut fields = line.split_whitespace();
            let rate: f64 = fields.next().unwrap_or("0").parse()?;
            let rss_kib: f64 = fields.next().unwrap_or("0").parse()?;
            println!(
                "{:<28} {:>14.0} {:>11.0}% {:>14.1}",
                format!("{job} p={p}"),
                rate,
                100.0 * rate / baseline_rate,
                rss_kib / 1024.0
            );
        }
    }
    Ok(())
}

/// The keyed tumbling-window job (`events` events), a 1 M-key `ValueState`
/// job on the heap (a tenth of them) and on RocksDB (a fortieth), without
/// and with checkpoints every second (to files in a temporary directory,
/// incremental on RocksDB): throughput,
/// checkpoints taken (the last is the final one at the end of input), and
/// the longest duration, largest size and longest task pause among them.
fn checkpoint_suite(events: u64) -> anyhow::Result<()> {
    let exe = std::env::current_exe().context("locating the bench binary")?;
    println!("events: {events} (window job), cores: {}", cores());
    println!(
        "{:<34} {:>12} {:>8} {:>6} {:>10} {:>10} {:>10} {:>12} {:>8}",
        "job",
        "events/s",
        "vs none",
        "chk",
        "max ms",
        "max KiB",
        "pause ms",
        "KiB written",
        "RSS MiB"
    );
    // Events per job, so that each runs for seconds: the window job is
    // ~20× faster than a 1 M-key heap job, ~400× faster than RocksDB's.
    let mut jobs = vec![("tumbling", events), ("value-state-1m", events / 10)];
    if cfg!(feature = "rocksdb") {
        // Window contents live in the operator on either backend; this row
        // shows that the RocksDB backend costs the window job nothing.
        jobs.push(("rocksdb-tumbling", events));
        jobs.push(("rocksdb-value-state-1m", events / 40));
    }
    for (job, events) in jobs {
        let mut without = 0.0;
        for interval in [None, Some("1s")] {
            let mut cmd = Command::new(&exe);
            cmd.args(["job", "--name", job, "--parallelism", "1"])
                .args(["--events", &events.to_string()]);
            if let Some(i) = interval {
                cmd.args(["--checkpoint-interval", i]);
            }
            let f = job_fields(cmd, job)?;
            let field = |i: usize| f.get(i).copied().unwrap_or(0.0);
            if interval.is_none() {
                without = field(0);
            }
            println!(
                "{:<34} {:>12.0} {:>7.1}% {:>6.0} {:>10.1} {:>10.0} {:>10.2} {:>12.0} {:>8.1}",
                format!("{job}, checkpoints {}", interval.unwrap_or("off")),
                field(0),
                100.0 * field(0) / without.max(1.0),
                field(2),
                field(3),
                field(4) / 1024.0,
                field(5),
                field(6) / 1024.0,
                field(1) / 1024.0,
            );
        }
    }
    Ok(())
}

/// Runs a `job` child and returns the numbers it printed (see [`run_job`]).
fn job_fields(mut cmd: Command, job: &str) -> anyhow::Result<Vec<f64>> {
    let output = cmd.output().with_context(|| format!("running {job}"))?;
    if !output.status.success() {
        bail!("{job} failed: {}", String::from_utf8_lossy(&output.stderr));
    }
    Ok(String::from_utf8_lossy(&output.stdout)
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0.0))
        .collect())
}

/// Restore of keyed state of `keys` keys (one `u64` each) through the
/// checkpoint path: snapshot the store, frame and write the file, then read,
/// verify, decode and restore it into a new store, timed per step.
fn restore_bench(keys: u64) -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(format!("weir-restore-bench-{}", std::process::id()));
    let timings = restore_from(keys, &dir.display().to_string());
    let _ = std::fs::remove_dir_all(&dir);
    let t = timings?;
    println!(
        "keys: {keys}, checkpoint file: {:.1} MiB",
        t.bytes as f64 / (1 << 20) as f64
    );
    println!(
        "fill {:.2} s, snapshot + encode {:.2} s, write {:.2} s, read + verify + decode + restore {:.2} s",
        t.fill, t.snapshot, t.write, t.restore
    );
    println!("peak RSS {:.0} MiB", peak_rss_kib() as f64 / 1024.0);
    Ok(())
}

/// Seconds per step of [`restore_from`], and the file's size.
struct RestoreTimings {
    fill: f64,
    snapshot: f64,
    write: f64,
    restore: f64,
    bytes: usize,
}

/// The steps of [`restore_bench`] with the checkpoint file written to and
/// read from `location` (a directory or an `s3://` prefix).
fn restore_from(keys: u64, location: &str) -> anyhow::Result<RestoreTimings> {
    use weir_state::snapshot::{decode_framed, encode_framed};
    use weir_state::{KeyGroupRange, KeyedStateStore, SubtaskSnapshot};
    let max_parallelism = 128;
    let range = KeyGroupRange {
        start: 0,
        end: max_parallelism - 1,
    };
    let desc = ValueStateDescriptor::<u64>::new("count");
    let store = KeyedStateStore::heap(max_parallelism, range);
    let state = store.value_state(&desc)?;
    let t = Instant::now();
    for k in 0..keys {
        store.set_current_key(&k)?;
        state.update(k)?;
    }
    let fill = t.elapsed();
    let t = Instant::now();
    let mut snapshot = SubtaskSnapshot::default();
    store
        .snapshot()?
        .into_iter()
        .for_each(|s| snapshot.add_state(s));
    let bytes = encode_framed(&snapshot)?;
    let take = t.elapsed();
    drop(snapshot);
    let fs = weir_state::file_system::open(location)?;
    let t = Instant::now();
    fs.write("op1-0", &bytes)?;
    let write = t.elapsed();
    let size = bytes.len();
    drop(bytes);
    drop(store);
    let t = Instant::now();
    let read = fs.read("op1-0")?;
    let snapshot: SubtaskSnapshot = decode_framed(&read)?;
    drop(read);
    let entries = SubtaskSnapshot::keyed_in([&snapshot], range);
    drop(snapshot);
    let restored = KeyedStateStore::heap(max_parallelism, range);
    restored.restore_on_register(entries)?;
    let state = restored.value_state(&desc)?;
    let restore = t.elapsed();
    let _ = fs.remove("op1-0");
    restored.set_current_key(&(keys / 2))?;
    anyhow::ensure!(state.value()? == Some(keys / 2), "restored the wrong value");
    Ok(RestoreTimings {
        fill: fill.as_secs_f64(),
        snapshot: take.as_secs_f64(),
        write: write.as_secs_f64(),
        restore: restore.as_secs_f64(),
        bytes: size,
    })
}

/// Checkpoints to a local directory against checkpoints to a local
/// S3-compatible server (s3s-fs): a 1 M-key job's throughput with 1 s
/// checkpoints to each (heap, and RocksDB incremental with the feature), and
/// a restore of `keys` keys from each.
fn object_storage_suite(events: u64, keys: u64) -> anyhow::Result<()> {
    let s3 = weir_state::file_system::LocalS3::start("weir-bench")?;
    let exe = std::env::current_exe().context("locating the bench binary")?;
    println!(
        "events: {events} (heap), {} (RocksDB); cores: {}",
        events / 4,
        cores()
    );
    println!(
        "{:<44} {:>12} {:>8} {:>6} {:>10} {:>12}",
        "job", "events/s", "vs none", "chk", "max ms", "KiB/chk"
    );
    let mut jobs = vec![("value-state-1m", events)];
    if cfg!(feature = "rocksdb") {
        jobs.push(("rocksdb-value-state-1m", events / 4));
    }
    for (job, events) in jobs {
        let mut without = 0.0;
        let local = std::env::temp_dir().join(format!("weir-bench-os-{}", std::process::id()));
        let local = local.display().to_string();
        let bucket = s3.uri("checkpoints");
        for (label, dir) in [
            ("off", None),
            ("1 s, local", Some(&local)),
            ("1 s, S3", Some(&bucket)),
        ] {
            let mut cmd = Command::new(&exe);
            cmd.args(["job", "--name", job, "--parallelism", "1"])
                .args(["--events", &events.to_string()])
                .envs(s3.env());
            if let Some(dir) = dir {
                cmd.args(["--checkpoint-interval", "1s", "--checkpoint-dir", dir]);
            }
            let f = job_fields(cmd, job)?;
            let field = |i: usize| f.get(i).copied().unwrap_or(0.0);
            if dir.is_none() {
                without = field(0);
            }
            println!(
                "{:<44} {:>12.0} {:>7.1}% {:>6.0} {:>10.1} {:>12.0}",
                format!("{job}, checkpoints {label}"),
                field(0),
                100.0 * field(0) / without.max(1.0),
                field(2),
                field(3),
                field(6) / 1024.0,
            );
        }
        let _ = std::fs::remove_dir_all(&local);
    }
    let local = std::env::temp_dir().join(format!("weir-bench-restore-{}", std::process::id()));
    for (label, location) in [
        ("local directory", local.display().to_string()),
        ("S3", s3.uri("restore")),
    ] {
        let t = restore_from(keys, &location)?;
        println!(
            "restore of {keys} keys from {label}: write {:.2} s, read + verify + decode + restore {:.2} s ({:.0} MiB)",
            t.write,
            t.restore,
            t.bytes as f64 / (1 << 20) as f64
        );
    }
    let _ = std::fs::remove_dir_all(&local);
    Ok(())
}

/// Runs one job and prints `events_per_second peak_rss_kib`, and with
/// checkpoints also `completed max_ms max_bytes max_pause_ms
/// bytes_written_per_checkpoint`.
fn run_job(
    name: &str,
    parallelism: u32,
    events: u64,
    checkpoint_interval: Option<&str>,
    checkpoint_dir: Option<&str>,
) -> anyhow::Result<()> {
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(parallelism);
    let temp = std::env::temp_dir().join(format!("weir-bench-chk-{}", std::process::id()));
    let temp = temp.display().to_string();
    let checkpoints = checkpoint_dir.unwrap_or(&temp);
    if let Some(interval) = checkpoint_interval {
        let mut config = Configuration::new();
        config
            .set("execution.checkpointing.interval", interval)
            .set("execution.checkpointing.dir", checkpoints);
        env.configure(&config)?;
    }
    let filtered = env
        .from_generator(events, event)
        .map(|e: Event| Event {
            key: e.key,
            value: e.value * 2,
        })
        .filter(|e: &Event| e.value != 2);
    match name {
        "chained" => {
            filtered.add_sink(DiscardingSink);
        }
        // The exchange benchmark's three shapes of one job: all in one
        // thread; a forward channel between two tasks; a keyed exchange.
        "exchange-none" => {
            env.from_generator(events, event)
                .map(|e: Event| e.value)
                .add_sink(DiscardingSink);
        }
        "exchange-forward" => {
            env.from_generator(events, event)
                .map(|e: Event| e.value)
                .start_new_chain()
                .add_sink(DiscardingSink);
        }
        "exchange-keyed" => {
            env.from_generator(events, event)
                .key_by(|e: &Event| e.key)
                .map(|e: Event| e.value)
                .start_new_chain()
                .add_sink(DiscardingSink);
        }
        "keyed-sum" => {
            filtered
                .key_by(|e: &Event| e.key)
                .reduce(|a: Event, b: Event| Event {
                    key: a.key,
                    value: a.value + b.value,
                })
                .add_sink(DiscardingSink);
        }
        "tumbling" | "sliding" | "session" => {
            window_job(&env, name, events);
        }
        "rocksdb-tumbling" => {
            let mut config = Configuration::new();
            config.set("state.backend.type", "rocksdb");
            env.configure(&config)?;
            window_job(&env, "tumbling", events);
        }
        "window-buffers" => window_buffers_job(&env, events),
        "rocksdb-window-buffers" => {
            configure_rocksdb(&env)?;
            window_buffers_job(&env, events);
        }
        "memory-value-state" => state_job(&env, name, events),
        "memory-tumbling" | "memory-sliding" | "memory-session" => {
            open_windows_job(&env, name, events);
        }
        "value-state-10k" | "value-state-1m" | "map-state" => {
            state_job(&env, name, events);
        }
        "rocksdb-value-state-10k"
        | "rocksdb-value-state-1m"
        | "rocksdb-value-state-10m"
        | "rocksdb-map-state" => {
            configure_rocksdb(&env)?;
            state_job(&env, name.trim_start_matches("rocksdb-"), events);
        }
        other => bail!("unknown job {other}; one of {}", JOBS.join(", ")),
    }
    let start = Instant::now();
    let cpu_before = cpu_seconds();
    let result = env.execute(name)?;
    let secs = start.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu_before;
    let c = &result.checkpoints;
    println!(
        "{:.0} {} {} {:.1} {} {:.2} {} {:.3}",
        events as f64 / secs,
        peak_rss_kib(),
        c.completed,
        c.max_duration.as_secs_f64() * 1000.0,
        c.max_size,
        c.max_pause.as_secs_f64() * 1000.0,
        c.bytes_written / c.completed.max(1),
        cpu
    );
    let _ = std::fs::remove_dir_all(&temp);
    Ok(())
}

/// Event time of the window jobs: 100 events per ms, up to 2 s of disorder.
#[inline]
fn event_time(i: u64) -> i64 {
    let base = (i / 100) as i64;
    base - (i.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 53) as i64 % 2_000
}

/// Session keys: 1,000 keys active per 10 s of event time, ten groups in
/// turn, so each key's session closes after its turn.
#[inline]
fn session_key(i: u64) -> u64 {
    (i % 1_000) + 1_000 * ((i / 1_000_000) % 10)
}

#[derive(Clone)]
struct CountSum;

impl AggregateFunction<Event, (u64, u64), (u64, u64)> for CountSum {
    fn create_accumulator(&mut self) -> (u64, u64) {
        (0, 0)
    }
    #[inline]
    fn add(&mut self, e: Event, acc: &mut (u64, u64)) {
        acc.0 += 1;
        acc.1 += e.value;
    }
    fn get_result(&mut self, acc: &(u64, u64)) -> (u64, u64) {
        *acc
    }
    fn merge(&mut self, a: (u64, u64), b: (u64, u64)) -> (u64, u64) {
        (a.0 + b.0, a.1 + b.1)
    }
}

/// Keyed event-time windows counting and summing per key and window.
fn window_job(env: &StreamExecutionEnvironment, name: &str, events: u64) {
    let session = name == "session";
    let timed = env
        .from_generator(events, move |i| {
            let mut e = event(i);
            if session {
                e.key = session_key(i);
            }
            (e, event_time(i))
        })
        .assign_timestamps_and_watermarks(
            WatermarkStrategy::for_bounded_out_of_orderness(Duration::from_secs(2))
                .with_timestamp_assigner(|e: &(Event, i64), _| e.1),
        )
        .map(|(e, _): (Event, i64)| e);
    count_sum_windows(timed.key_by(|e: &Event| e.key), name).add_sink(DiscardingSink);
}

/// Count and sum per key in tumbling 10 s, sliding 60 s / 1 s or (any
/// other `kind`) session windows with a 1 s gap.
fn count_sum_windows(keyed: KeyedStream<Event, u64>, kind: &str) -> DataStream<(u64, u64)> {
    match kind {
        "tumbling" => keyed
            .window(TumblingEventTimeWindows::of(Duration::from_secs(10)))
            .aggregate(CountSum),
        "sliding" => keyed
            .window(SlidingEventTimeWindows::of(
                Duration::from_secs(60),
                Duration::from_secs(1),
            ))
            .aggregate(CountSum),
        _ => keyed
            .window(EventTimeSessionWindows::with_gap(Duration::from_secs(1)))
            .aggregate(CountSum),
    }
}

/// RocksDB with memory bounded by 8 MiB of block cache, 2 × 4 MiB buffers
/// and the write-back cache (64 MiB, or `WEIR_BENCH_ROCKSDB_CACHE`).
fn configure_rocksdb(env: &StreamExecutionEnvironment) -> anyhow::Result<()> {
    let mut config = Configuration::new();
    config
        .set("state.backend.type", "rocksdb")
        .set("state.backend.rocksdb.block.cache-size", "8 mb")
        .set("state.backend.rocksdb.writebuffer.size", "4 mb");
    if let Ok(cache) = std::env::var("WEIR_BENCH_ROCKSDB_CACHE") {
        config.set("weir.state.rocksdb.write-back-cache.size", cache);
    }
    env.configure(&config)?;
    Ok(())
}

/// Window contents larger than memory should have to be: 60 s tumbling
/// windows (6 M events each) whose process function sees every element, so
/// the operator buffers every event of the current window.
fn window_buffers_job(env: &StreamExecutionEnvironment, events: u64) {
    env.from_generator(events, |i| (event(i), event_time(i)))
        .assign_timestamps_and_watermarks(
            WatermarkStrategy::for_bounded_out_of_orderness(Duration::from_secs(2))
                .with_timestamp_assigner(|e: &(Event, i64), _| e.1),
        )
        .map(|(e, _): (Event, i64)| e)
        .key_by(|e: &Event| e.key)
        .window(TumblingEventTimeWindows::of(Duration::from_secs(60)))
        .process(
            |key: &u64,
             _ctx: &mut ProcessWindowContext<'_, TimeWindow>,
             elements: Elements<'_, Event>,
             out: &mut Collector<'_, (u64, u64)>| {
                out.collect((*key, elements.map(|e| e.value).sum()));
                Ok(())
            },
        )
        .add_sink(DiscardingSink);
}

/// Counts per key in a `ValueState` (updated on every record), or puts and
/// gets in a `MapState`, on the heap backend.
fn state_job(env: &StreamExecutionEnvironment, name: &str, events: u64) {
    #[derive(Clone, Default)]
    struct Counter {
        count: Option<ValueState<u64>>,
        map: Option<MapState<u64, u64>>,
        use_map: bool,
    }
    impl KeyedProcessFunction<u64, Event, u64> for Counter {
        fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
            if self.use_map {
                self.map = Some(ctx.get_map_state(&MapStateDescriptor::new("m"))?);
            } else {
                self.count = Some(ctx.get_state(&ValueStateDescriptor::new("count"))?);
            }
            Ok(())
        }
        #[inline]
        fn process_element(
            &mut self,
            e: Event,
            _ctx: &mut ProcessContext<'_, u64>,
            out: &mut Collector<'_, u64>,
        ) -> FunctionResult {
            if let Some(map) = &self.map {
                let field = e.value & 7;
                let v = map.get(&field)?.unwrap_or(0) + 1;
                map.put(field, v)?;
                out.collect(v);
            } else if let Some(count) = &self.count {
                let c = count.value()?.unwrap_or(0) + 1;
                count.update(c)?;
                out.collect(c);
            }
            Ok(())
        }
    }
    let keys: u64 = match name {
        "value-state-1m" => 1_000_000,
        // Ten times more state than the RocksDB write-back cache holds.
        "value-state-10m" => 10_000_000,
        // One record per key: every event a new key (the multiplier is
        // odd, so `i * C` differs for every `i`).
        "memory-value-state" => u64::MAX,
        _ => KEYS,
    };
    env.set_max_parallelism(4096);
    env.from_generator(events, move |i| Event {
        key: i.wrapping_mul(0x9E37_79B9_7F4A_7C15) % keys,
        value: i & 0xff,
    })
    .key_by(|e: &Event| e.key)
    .process(Counter {
        use_map: name == "map-state",
        ..Counter::default()
    })
    .add_sink(DiscardingSink);
}

/// One event per key, all within the first second of event time, so that
/// no window fires before the end of input: `events` keys each with one
/// open window (tumbling 10 s, session 1 s gap) or sixty (sliding 60 s every
/// 1 s), aggregating count and sum.
fn open_windows_job(env: &StreamExecutionEnvironment, name: &str, events: u64) {
    let keyed = env
        .from_generator(events, |i| (Event { key: i, value: 1 }, (i % 1_000) as i64))
        .assign_timestamps_and_watermarks(
            WatermarkStrategy::for_bounded_out_of_orderness(Duration::from_secs(2))
                .with_timestamp_assigner(|e: &(Event, i64), _| e.1),
        )
        .map(|(e, _): (Event, i64)| e)
        .key_by(|e: &Event| e.key);
    count_sum_windows(keyed, name.trim_start_matches("memory-")).add_sink(DiscardingSink);
}

/// Bytes of peak RSS per key of `ValueState<u64>` on the heap, and per open
/// window of each window kind: each job run with few and with many keys,
/// the difference in peak RSS divided by the difference in keys (or
/// windows), so that what every job has (threads, buffers) cancels out.
fn memory_suite() -> anyhow::Result<()> {
    let exe = std::env::current_exe().context("locating the bench binary")?;
    let peak = |job: &str, keys: u64| -> anyhow::Result<f64> {
        let mut cmd = Command::new(&exe);
        cmd.args(["job", "--name", job, "--events", &keys.to_string()]);
        Ok(job_fields(cmd, job)?.get(1).copied().unwrap_or(0.0) * 1024.0)
    };
    println!(
        "{:<34} {:>12} {:>14} {:>16}",
        "state", "keys", "peak RSS MiB", "bytes per unit"
    );
    let small = 100_000;
    for (job, unit, per_key, sizes) in [
        ("memory-value-state", "key", 1, &[1_000_000, 10_000_000][..]),
        ("memory-tumbling", "open window", 1, &[1_000_000][..]),
        ("memory-sliding", "open window", 60, &[1_000_000][..]),
        ("memory-session", "open window", 1, &[1_000_000][..]),
    ] {
        let base = peak(job, small)?;
        for &keys in sizes {
            let rss = peak(job, keys)?;
            let units = ((keys - small) * per_key) as f64;
            println!(
                "{:<34} {:>12} {:>14.1} {:>16.0}",
                format!("{job} (per {unit})"),
                keys,
                rss / f64::from(1 << 20),
                (rss - base) / units
            );
        }
    }
    Ok(())
}

/// The bare loop: one thread, one hash map, the same events, the same sum.
fn baseline(events: u64) -> (f64, u64) {
    baseline_over(events, KEYS)
}

/// The bare loop over `keys` distinct keys (as the state jobs draw them).
fn baseline_over(events: u64, keys: u64) -> (f64, u64) {
    let mut sums: HashMap<u64, u64, foldhash::fast::RandomState> = HashMap::default();
    let start = Instant::now();
    for i in 0..events {
        let e = Event {
            key: i.wrapping_mul(0x9E37_79B9_7F4A_7C15) % keys,
            value: i & 0xff,
        };
        *sums.entry(e.key).or_insert(0) += e.value * 2;
    }
    let secs = start.elapsed().as_secs_f64();
    let checksum = sums.values().fold(0u64, |a, b| a.wrapping_add(*b));
    (events as f64 / secs, checksum)
}

/// CPU time (user + system) this process has used, all threads.
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage writes into the struct it is given and nothing else.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_SELF, &mut usage) != 0 {
            return 0.0;
        }
        usage
    };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// What a record costs to cross from one task to another: the same job
/// (generate, map, discard) in one thread, with a forward channel between
/// two tasks, and with a keyed exchange, at parallelism 1 and 2; CPU
/// nanoseconds per record (all threads) and the difference to one thread.
fn exchange_suite(events: u64) -> anyhow::Result<()> {
    let exe = std::env::current_exe().context("locating the bench binary")?;
    println!("events: {events}, cores: {}", cores());
    println!(
        "{:<22} {:>14} {:>14} {:>16}",
        "job", "events/s", "CPU ns/record", "crossing ns"
    );
    let mut alone = 0.0;
    for (job, p) in [
        ("exchange-none", 1),
        ("exchange-forward", 1),
        ("exchange-keyed", 1),
        ("exchange-keyed", 2),
    ] {
        let mut cmd = Command::new(&exe);
        cmd.args(["job", "--name", job, "--parallelism", &p.to_string()])
            .args(["--events", &events.to_string()]);
        let f = job_fields(cmd, job)?;
        let rate = f.first().copied().unwrap_or(0.0);
        let ns = f.get(7).copied().unwrap_or(0.0) * 1e9 / events as f64;
        if job == "exchange-none" {
            alone = ns;
        }
        println!(
            "{:<22} {:>14.0} {:>14.1} {:>16.1}",
            format!("{job} p={p}"),
            rate,
            ns,
            ns - alone
        );
    }
    Ok(())
}

/// Peak resident set size of this process (VmHWM), in KiB.
pub(crate) fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

pub(crate) fn cores() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}
