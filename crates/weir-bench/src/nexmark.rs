//! `weir-bench nexmark`: the Nexmark queries as whole jobs, each in its own
//! process, over events replayed from a pre-generated pool.
//!
//! Per query: events/s (wall), events per CPU-second, latency from a
//! result becoming due (the source emitted the event-time it stands for)
//! to the sink (p50, p99), peak RSS, rows and an order-independent
//! checksum of the output; and, measured in the parent process, the
//! generator's own rate and the bare single-thread hash-map keyed sum over
//! the same events, which every query's rate is a fraction of.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::{bail, Context};
use weir::prelude::*;
use weir::{StreamRecord, NO_TIMESTAMP};
use weir_nexmark::queries::{self, QUERIES};
use weir_nexmark::{Event, EventPool, GeneratorConfig, NexmarkGenerator};

/// Events in the pre-generated pool (ten seconds of event time).
const DEFAULT_POOL: u64 = 100_000;

pub fn main(params: &ParameterTool, events: u64) -> anyhow::Result<()> {
    let p: u32 = params.get_parsed("parallelism")?.unwrap_or(1).max(1);
    // Whole shares for the interleaving source subtasks.
    let events = events - events % u64::from(p);
    let pool_size: u64 = params.get_parsed("pool")?.unwrap_or(DEFAULT_POOL);
    let generator = NexmarkGenerator::new(GeneratorConfig::default());
    if let Some(path) = params.get("write-events") {
        let file = std::fs::File::create(path).with_context(|| format!("creating {path}"))?;
        let mut out = std::io::BufWriter::new(file);
        weir_nexmark::json::write_events(&generator, events, &mut out)?;
        eprintln!("wrote {events} events to {path}");
        return Ok(());
    }
    if let Some(query) = params.get("query") {
        return run_query(query, events, p, pool_size, params.get("input"));
    }
    if params.has("all") {
        return suite(events, p, pool_size);
    }
    bail!(
        "usage: weir-bench nexmark (--query qN | --all) [--events N] [--parallelism P] \
         [--pool N] [--input FILE]\n       weir-bench nexmark --write-events FILE [--events N]"
    )
}

/// The generator's rate, the bare keyed sum's, and every query.
fn suite(events: u64, p: u32, pool_size: u64) -> anyhow::Result<()> {
    let generator = NexmarkGenerator::new(GeneratorConfig::default());
    let gen_rate = generator_rate(&generator, events.min(10_000_000));
    let pool = EventPool::new(&generator, pool_size);
    let base = baseline(&pool, events);
    println!(
        "events: {events}, parallelism: {p}, pool: {pool_size} events, cores: {}",
        crate::cores()
    );
    println!(
        "generator (one thread, generate only): {:.1} M events/s",
        gen_rate / 1e6
    );
    println!(
        "baseline (pool replay + hash-map sum of bid prices per auction, one thread): {:.1} M events/s",
        base / 1e6
    );
    // The stateless queries also against a bare loop doing what their job
    // does per event: replay it, make the row, and read the row as the
    // measuring sink does (same checksum), with no engine in between.
    let mut bare = HashMap::new();
    for q in ["q0", "q1", "q2"] {
        let (rate, rows, checksum) = bare_stateless(&pool, events, q)?;
        println!(
            "bare {q} loop (pool replay + the query's row + the sink's row hash, one thread): \
             {:.1} M events/s, {rows} rows, checksum {checksum:016x}",
            rate / 1e6
        );
        bare.insert(q, rate);
    }
    println!(
        "{:<5} {:>12} {:>11} {:>14} {:>10} {:>10} {:>8} {:>10} {:>18} {:>8}",
        "query",
        "events/s",
        "of base",
        "events/CPU-s",
        "p50 ms",
        "p99 ms",
        "RSS MiB",
        "rows",
        "checksum",
        "of bare"
    );
    let exe = std::env::current_exe().context("locating the bench binary")?;
    for q in QUERIES {
        let output = Command::new(&exe)
            .args(["nexmark", "--query", q])
            .args(["--events", &events.to_string()])
            .args(["--parallelism", &p.to_string()])
            .args(["--pool", &pool_size.to_string()])
            .output()
            .with_context(|| format!("running {q}"))?;
        if !output.status.success() {
            bail!("{q} failed: {}", String::from_utf8_lossy(&output.stderr));
        }
        let line = String::from_utf8_lossy(&output.stdout);
        let f: Vec<&str> = line.split_whitespace().collect();
        let num = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
        let of_bare = bare
            .get(q)
            .map_or("-".to_string(), |b| format!("{:.0}%", 100.0 * num(1) / b));
        println!(
            "{:<5} {:>12.0} {:>10.0}% {:>14.0} {:>10} {:>10} {:>8.1} {:>10} {:>18} {:>8}",
            q,
            num(1),
            100.0 * num(1) / base,
            num(2),
            f.get(5).unwrap_or(&"-"),
            f.get(6).unwrap_or(&"-"),
            num(3) / 1024.0,
            f.get(4).unwrap_or(&"-"),
            f.get(7).unwrap_or(&"-"),
            of_bare,
        );
    }
    Ok(())
}

/// A stateless query as one bare loop: rate, rows and checksum (equal to
/// the job's: the same rows hashed the same way).
fn bare_stateless(pool: &EventPool, n: u64, query: &str) -> anyhow::Result<(f64, u64, u64)> {
    fn run<T: Hash>(pool: &EventPool, n: u64, row: impl Fn(Event) -> Option<T>) -> (u64, u64) {
        let (mut rows, mut checksum) = (0u64, 0u64);
        for i in 0..n {
            if let Some(r) = row(pool.event(i)) {
                checksum = checksum.wrapping_add(row_hash(&r));
                rows += 1;
            }
        }
        (rows, checksum)
    }
    let start = Instant::now();
    let (rows, checksum) = match query {
        "q0" => run(pool, n, |e| match e {
            Event::Bid(b) => Some(b),
            _ => None,
        }),
        "q1" => run(pool, n, queries::q1_row),
        "q2" => run(pool, n, queries::q2_row),
        other => bail!("no bare loop for {other}"),
    };
    Ok((n as f64 / start.elapsed().as_secs_f64(), rows, checksum))
}

/// The checksum's hash of one row.
#[inline]
fn row_hash<T: Hash>(value: &T) -> u64 {
    let mut h = RowHasher(0x5eed);
    value.hash(&mut h);
    h.finish()
}

/// Events per second of the generator alone.
fn generator_rate(generator: &NexmarkGenerator, n: u64) -> f64 {
    let start = Instant::now();
    let mut sink = 0u64;
    for i in 0..n {
        sink = sink.wrapping_add(generator.event(i).date_time() as u64);
    }
    std::hint::black_box(sink);
    n as f64 / start.elapsed().as_secs_f64()
}

/// The bare loop: the same events from the pool, a hash map, the sum of
/// bid prices per auction.
fn baseline(pool: &EventPool, n: u64) -> f64 {
    let mut sums: HashMap<u64, u64, foldhash::fast::RandomState> = HashMap::default();
    let start = Instant::now();
    for i in 0..n {
        if let Event::Bid(b) = pool.event(i) {
            *sums.entry(b.auction).or_insert(0) += b.price;
        }
    }
    let rate = n as f64 / start.elapsed().as_secs_f64();
    std::hint::black_box(sums.values().fold(0u64, |a, b| a.wrapping_add(*b)));
    rate
}

/// Wall time (µs since the run started) at which each source subtask first
/// emitted an event of each event-time millisecond. A result for a time is
/// due once every subtask got there (the watermark is their minimum).
///
/// Each subtask marks its own slots (shared ones cost half the scaling at
/// p=2: the two sources fought over their cache lines), and only every
/// [`MARK_EVERY_MS`]th millisecond (reading the clock once per millisecond
/// of event time cost the source a sixth of its time). A result of an
/// unmarked millisecond is due at the next marked one: at these speeds a
/// few microseconds later.
struct EmitClock {
    start: Instant,
    base_ms: i64,
    /// Per source subtask (event number mod parallelism), per millisecond.
    slots: Vec<Vec<AtomicU64>>,
}

/// Event-time milliseconds between two marks.
const MARK_EVERY_MS: i64 = 8;

impl EmitClock {
    fn new(base_ms: i64, span_ms: usize, subtasks: usize) -> Arc<Self> {
        Arc::new(EmitClock {
            start: Instant::now(),
            base_ms,
            slots: (0..subtasks)
                .map(|_| (0..span_ms + 1).map(|_| AtomicU64::new(0)).collect())
                .collect(),
        })
    }

    /// Subtask `subtask` emitted an event of `time`.
    #[inline]
    fn mark(&self, subtask: usize, time: i64) {
        let ms = time - self.base_ms;
        if ms % MARK_EVERY_MS != 0 {
            return;
        }
        let Some(slot) = self.slots[subtask].get(ms as usize) else {
            return;
        };
        if slot.load(Ordering::Relaxed) == 0 {
            slot.store(
                self.start.elapsed().as_micros() as u64 + 1,
                Ordering::Relaxed,
            );
        }
    }

    /// µs from `time` becoming due until now, if every subtask got that far.
    fn latency_us(&self, time: i64) -> Option<u64> {
        let i = usize::try_from(time - self.base_ms).ok()?;
        let mut due = 0;
        for slots in &self.slots {
            let first = slots
                .get(i..)?
                .iter()
                .take(1_000 + MARK_EVERY_MS as usize)
                .find_map(|s| {
                    let v = s.load(Ordering::Relaxed);
                    (v != 0).then_some(v - 1)
                })?;
            due = due.max(first);
        }
        Some((self.start.elapsed().as_micros() as u64).saturating_sub(due))
    }
}

/// Latencies in buckets 5 % apart, so percentiles cost no memory per row.
#[derive(Default, Clone)]
struct Histogram {
    buckets: Vec<u64>,
    total: u64,
}

impl Histogram {
    fn bucket(us: u64) -> usize {
        ((us.max(1) as f64).ln() / 1.05f64.ln()) as usize
    }

    fn add(&mut self, us: u64) {
        let b = Self::bucket(us);
        if self.buckets.len() <= b {
            self.buckets.resize(b + 1, 0);
        }
        self.buckets[b] += 1;
        self.total += 1;
    }

    fn merge(&mut self, other: &Histogram) {
        if self.buckets.len() < other.buckets.len() {
            self.buckets.resize(other.buckets.len(), 0);
        }
        for (a, b) in self.buckets.iter_mut().zip(&other.buckets) {
            *a += b;
        }
        self.total += other.total;
    }

    /// The `q` quantile in ms.
    fn quantile_ms(&self, q: f64) -> Option<f64> {
        let target = (self.total as f64 * q).ceil() as u64;
        let mut seen = 0;
        for (i, n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= target.max(1) {
                return Some(1.05f64.powi(i as i32 + 1) / 1000.0);
            }
        }
        None
    }
}

/// The checksum's hash of a row: one multiply per word (FxHash's mix) and
/// a final avalanche. Fixed, so the same output gives the same checksum in
/// every run; not for hash tables facing adversaries.
struct RowHasher(u64);

impl Hasher for RowHasher {
    #[inline]
    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(w));
        }
    }

    #[inline]
    fn write_u8(&mut self, x: u8) {
        self.write_u64(u64::from(x));
    }

    #[inline]
    fn write_u32(&mut self, x: u32) {
        self.write_u64(u64::from(x));
    }

    #[inline]
    fn write_i64(&mut self, x: i64) {
        self.write_u64(x as u64);
    }

    #[inline]
    fn write_usize(&mut self, x: usize) {
        self.write_u64(x as u64);
    }

    fn finish(&self) -> u64 {
        // splitmix64's finaliser.
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

#[derive(Default)]
struct Totals {
    rows: u64,
    checksum: u64,
    latency: Histogram,
}

/// Counts rows, sums their hashes, and samples latency.
#[derive(Clone)]
struct MeasuringSink {
    clock: Option<Arc<EmitClock>>,
    totals: Arc<Mutex<Totals>>,
    rows: u64,
    checksum: u64,
    latency: Histogram,
}

impl MeasuringSink {
    fn row<T: Hash>(&mut self, value: &T, timestamp: Option<i64>) {
        self.checksum = self.checksum.wrapping_add(row_hash(value));
        self.rows += 1;
        // Every 64th row: the histogram is for percentiles, not counts.
        if self.rows % 64 == 1 {
            if let (Some(clock), Some(ts)) = (&self.clock, timestamp) {
                if let Some(us) = clock.latency_us(ts) {
                    self.latency.add(us);
                }
            }
        }
    }
}

impl<T: Hash + Send + 'static> SinkFunction<T> for MeasuringSink {
    fn invoke(&mut self, value: T, ctx: &SinkContext) -> FunctionResult {
        self.row(&value, ctx.timestamp());
        Ok(())
    }

    /// Reads the rows where they are (a sink that keeps nothing need not
    /// move them out).
    fn invoke_batch(
        &mut self,
        batch: &mut Vec<StreamRecord<T>>,
        _watermark: i64,
    ) -> FunctionResult {
        for r in batch.iter() {
            self.row(
                &r.value,
                (r.timestamp != NO_TIMESTAMP).then_some(r.timestamp),
            );
        }
        batch.clear();
        Ok(())
    }

    fn close(&mut self) -> FunctionResult {
        let mut t = self.totals.lock().map_err(|_| "totals poisoned")?;
        t.rows += self.rows;
        t.checksum = t.checksum.wrapping_add(self.checksum);
        t.latency.merge(&self.latency);
        Ok(())
    }
}

fn measure<T: Clone + Hash + Send + 'static>(stream: DataStream<T>, sink: &MeasuringSink) {
    stream.add_sink(sink.clone());
}

/// CPU seconds this process used so far (user + system).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which may hold spaces): utime is the
    // 14th field overall, stime the 15th.
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

/// Runs one query and prints `query events/s events-per-CPU-s rss-KiB rows
/// p50-ms p99-ms checksum`.
fn run_query(
    query: &str,
    events: u64,
    p: u32,
    pool_size: u64,
    input: Option<&str>,
) -> anyhow::Result<()> {
    let generator = NexmarkGenerator::new(GeneratorConfig::default());
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(p);
    let span_ms = (generator.timestamp(events) - generator.timestamp(0)) as usize + 1;
    let clock = EmitClock::new(generator.timestamp(0), span_ms, p as usize);
    let stream = match input {
        Some(path) => env
            .read_text_file(path)
            .map(|line: String| weir_nexmark::json::parse_event(&line).expect("a Nexmark event"))
            .assign_timestamps_and_watermarks(
                WatermarkStrategy::for_monotonous_timestamps()
                    .with_timestamp_assigner(|e: &Event, _| e.date_time()),
            ),
        None => {
            let pool = Arc::new(EventPool::new(&generator, pool_size));
            let marks = Arc::clone(&clock);
            let subtasks = u64::from(p);
            queries::events_from(
                &env,
                move |n| {
                    let e = pool.event(n);
                    // Event number n comes from subtask n mod p.
                    marks.mark((n % subtasks) as usize, e.date_time());
                    e
                },
                events,
                p,
            )
        }
    };
    let totals = Arc::new(Mutex::new(Totals::default()));
    let sink = MeasuringSink {
        // Processing-time windows (q12) have no event time to be due at.
        clock: (query != "q12").then(|| Arc::clone(&clock)),
        totals: Arc::clone(&totals),
        rows: 0,
        checksum: 0,
        latency: Histogram::default(),
    };
    match query {
        "q0" => measure(queries::q0(&stream), &sink),
        "q1" => measure(queries::q1(&stream), &sink),
        "q2" => measure(queries::q2(&stream), &sink),
        "q3" => measure(queries::q3(&stream), &sink),
        "q4" => measure(queries::q4(&stream), &sink),
        "q5" => measure(queries::q5(&stream), &sink),
        "q7" => measure(queries::q7(&stream), &sink),
        "q8" => measure(queries::q8(&stream), &sink),
        "q11" => measure(queries::q11(&stream), &sink),
        "q12" => measure(queries::q12(&stream), &sink),
        "q14" => measure(queries::q14(&stream), &sink),
        "q15" => measure(queries::q15(&stream), &sink),
        "q16" => measure(queries::q16(&stream), &sink),
        other => bail!("unknown query {other} (known: {})", QUERIES.join(", ")),
    }
    let cpu0 = cpu_seconds();
    let start = Instant::now();
    env.execute(query)?;
    let secs = start.elapsed().as_secs_f64();
    let cpu = (cpu_seconds() - cpu0).max(1e-9);
    let t = totals
        .lock()
        .map_err(|_| anyhow::anyhow!("totals poisoned"))?;
    let ms = |q: f64| {
        t.latency
            .quantile_ms(q)
            .map_or("-".to_string(), |v| format!("{v:.2}"))
    };
    println!(
        "{query} {:.0} {:.0} {} {} {} {} {:016x}",
        events as f64 / secs,
        events as f64 / cpu,
        crate::peak_rss_kib(),
        t.rows,
        ms(0.5),
        ms(0.99),
        t.checksum
    );
    Ok(())
}
