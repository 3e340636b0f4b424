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

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
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
                    "rocksdb-map-state",
                ]
            } else {
                &["value-state-10k", "value-state-1m", "map-state"]
            },
            &[1],
        ),
        Some("job") => {
            let name = params.required("name")?;
            let p: u32 = params.get_parsed("parallelism")?.unwrap_or(1);
            run_job(name, p, events)
        }
        Some("baseline") => {
            let (rate, _) = baseline(events);
            println!("baseline {rate:.0}");
            Ok(())
        }
        _ => {
            eprintln!("usage: weir-bench stateless|windows [--events N]");
            eprintln!(
                "       weir-bench job --name chained|keyed-sum [--parallelism P] [--events N]"
            );
            eprintln!("       weir-bench baseline [--events N]");
            bail!("unknown or missing benchmark")
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

/// Runs one job and prints `events_per_second peak_rss_kib`.
fn run_job(name: &str, parallelism: u32, events: u64) -> anyhow::Result<()> {
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(parallelism);
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
        "value-state-10k" | "value-state-1m" | "map-state" => {
            state_job(&env, name, events);
        }
        "rocksdb-value-state-10k" | "rocksdb-value-state-1m" | "rocksdb-map-state" => {
            let mut config = Configuration::new();
            // Memory bounded by 8 MiB of block cache and 2 × 4 MiB buffers.
            config
                .set("state.backend.type", "rocksdb")
                .set("state.backend.rocksdb.block.cache-size", "8 mb")
                .set("state.backend.rocksdb.writebuffer.size", "4 mb");
            env.configure(&config)?;
            if let Ok(cache) = std::env::var("WEIR_BENCH_ROCKSDB_CACHE") {
                let mut config = Configuration::new();
                config.set("weir.state.rocksdb.write-back-cache.size", cache);
                env.configure(&config)?;
            }
            state_job(&env, name.trim_start_matches("rocksdb-"), events);
        }
        other => bail!("unknown job {other}"),
    }
    let start = Instant::now();
    env.execute(name)?;
    let secs = start.elapsed().as_secs_f64();
    println!("{:.0} {}", events as f64 / secs, peak_rss_kib());
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
    let keyed = timed.key_by(|e: &Event| e.key);
    let out = match name {
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
    };
    out.add_sink(DiscardingSink);
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
    let keys: u64 = if name == "value-state-1m" {
        1_000_000
    } else {
        KEYS
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

/// The bare loop: one thread, one hash map, the same events, the same sum.
fn baseline(events: u64) -> (f64, u64) {
    let mut sums: HashMap<u64, u64, foldhash::fast::RandomState> = HashMap::default();
    let start = Instant::now();
    for i in 0..events {
        let e = event(i);
        *sums.entry(e.key).or_insert(0) += e.value * 2;
    }
    let secs = start.elapsed().as_secs_f64();
    let checksum = sums.values().fold(0u64, |a, b| a.wrapping_add(*b));
    (events as f64 / secs, checksum)
}

/// Peak resident set size of this process (VmHWM), in KiB.
fn peak_rss_kib() -> u64 {
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

fn cores() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}
