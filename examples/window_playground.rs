//! Window playground: run one window over a CSV of events and print every
//! firing and every late record, in emission order — the same format as
//! running the same scenario on Apache Flink, so the two can be diffed.
//!
//! ```text
//! cargo run --release --example window_playground -- \
//!     --input examples/data/playground.csv --window tumbling:10000 --ooo 1000 --lateness 0
//! ```
//!
//! Input: lines `key,timestamp_ms,value`, read in file order at parallelism
//! 1; blank lines, `#` comments and a `key,...` header are skipped.
//! Watermarks are punctuated: after every event, `max_ts - ooo - 1`; never
//! periodic. Options:
//!
//! ```text
//! --window tumbling:SIZE | sliding:SIZE:SLIDE | session:GAP | count:SIZE | count:SIZE:SLIDE   (ms)
//! --ooo MS            bounded out-of-orderness (default 0)
//! --lateness MS       allowed lateness (default 0)
//! --all               window_all instead of key_by (the key column prints ALL)
//! --trace-watermarks  also print WM,w when watermark w reaches the sink
//! ```
//!
//! Output, one line per emission:
//!
//! ```text
//! key,window_start,window_end,count,sum     time windows
//! key,count,sum                             count windows
//! LATE,key,timestamp,value                  records too late for all their windows
//!                                           (the record's own key, also with --all)
//! ```

use std::time::Duration;

use weir::prelude::*;
use weir_examples::{fields, int, LineParser};

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Event {
    key: String,
    timestamp: i64,
    value: i64,
}

/// `max_ts - ooo - 1` after every event (Flink's bounded out-of-orderness
/// formula, emitted punctuated).
struct Punctuated {
    max_ts: i64,
    ooo: i64,
}

impl WatermarkGenerator<Event> for Punctuated {
    fn on_event(&mut self, _e: &Event, timestamp: i64, output: &mut WatermarkOutput) {
        self.max_ts = self.max_ts.max(timestamp);
        output.emit_watermark(self.max_ts - self.ooo - 1);
    }

    fn on_periodic_emit(&mut self, _output: &mut WatermarkOutput) {}
}

#[derive(Debug, Clone, Copy)]
enum Spec {
    Tumbling(u64),
    Sliding(u64, u64),
    Session(u64),
    Count(u64),
    CountSliding(u64, u64),
}

fn parse_spec(spec: &str) -> anyhow::Result<Spec> {
    let parts: Vec<&str> = spec.split(':').collect();
    let n = |i: usize| -> anyhow::Result<u64> {
        let part = parts
            .get(i)
            .ok_or_else(|| anyhow::anyhow!("--window {spec}: missing a number"))?;
        let v: u64 = part.parse().map_err(|_| {
            anyhow::anyhow!("--window {spec}: '{part}' is not a positive whole number of ms")
        })?;
        anyhow::ensure!(v > 0, "--window {spec}: sizes must be positive");
        Ok(v)
    };
    Ok(match (parts[0], parts.len()) {
        ("tumbling", 2) => Spec::Tumbling(n(1)?),
        ("sliding", 3) => Spec::Sliding(n(1)?, n(2)?),
        ("session", 2) => Spec::Session(n(1)?),
        ("count", 2) => Spec::Count(n(1)?),
        ("count", 3) => Spec::CountSliding(n(1)?, n(2)?),
        _ => anyhow::bail!(
            "--window must be tumbling:SIZE, sliding:SIZE:SLIDE, session:GAP, count:SIZE or count:SIZE:SLIDE"
        ),
    })
}

/// Count and sum of a window.
#[derive(Clone)]
struct CountSum;

impl AggregateFunction<Event, (i64, i64), (i64, i64)> for CountSum {
    fn create_accumulator(&mut self) -> (i64, i64) {
        (0, 0)
    }
    fn add(&mut self, e: Event, acc: &mut (i64, i64)) {
        acc.0 += 1;
        acc.1 += e.value;
    }
    fn get_result(&mut self, acc: &(i64, i64)) -> (i64, i64) {
        *acc
    }
    fn merge(&mut self, a: (i64, i64), b: (i64, i64)) -> (i64, i64) {
        (a.0 + b.0, a.1 + b.1)
    }
}

/// Prints results and, with `--trace-watermarks`, the watermarks after them.
#[derive(Clone)]
struct Lines {
    trace: bool,
}

impl SinkFunction<String> for Lines {
    fn invoke(&mut self, line: String, _ctx: &SinkContext) -> FunctionResult {
        println!("{line}");
        Ok(())
    }

    fn write_watermark(&mut self, watermark: i64) -> FunctionResult {
        if self.trace {
            println!("WM,{watermark}");
        }
        Ok(())
    }
}

fn time_line(key: &str, w: &TimeWindow, (count, sum): (i64, i64)) -> String {
    format!("{key},{},{},{count},{sum}", w.start, w.end)
}

fn main() -> anyhow::Result<()> {
    let env = weir_examples::environment(include_str!("window_playground.rs"), true)?;
    env.set_parallelism(1)
        .set_auto_watermark_interval(Duration::ZERO);
    let args = env.args();
    let input = args.required("input")?.to_string();
    let spec = parse_spec(args.required("window")?)?;
    let ooo: i64 = args.get_parsed("ooo")?.unwrap_or(0);
    let lateness = Duration::from_millis(args.get_parsed("lateness")?.unwrap_or(0));
    let all = args.has("all");
    let trace = args.has("trace-watermarks");

    let mut parser = LineParser::new(|line: &str| {
        let f = fields(line, 3)?;
        Ok(Event {
            key: f[0].to_string(),
            timestamp: int(f[1], "timestamp")?,
            value: int(f[2], "value")?,
        })
    });
    let events = env
        .read_text_file(&input)
        .flat_map(move |line: String, out: &mut Collector<Event>| {
            if line.starts_with("key,") {
                parser.next_line::<Event>("# header");
                return;
            }
            if let Some(e) = parser.next_line(&line) {
                out.collect(e);
            }
        })
        .assign_timestamps_and_watermarks(
            WatermarkStrategy::for_generator(move |_| Punctuated {
                max_ts: i64::MIN + ooo + 1,
                ooo,
            })
            .with_timestamp_assigner(|e: &Event, _| e.timestamp),
        );

    let late = OutputTag::<Event>::new("late");
    let key_of = |e: &Event| e.key.clone();
    let label = move |k: &String| if all { "ALL".to_string() } else { k.clone() };
    let time_fn = move |k: &String,
                        ctx: &mut ProcessWindowContext<'_, TimeWindow>,
                        r: Elements<'_, (i64, i64)>,
                        out: &mut Collector<'_, String>| {
        for cs in r {
            out.collect(time_line(&label(k), ctx.window(), *cs));
        }
        Ok(())
    };
    let count_fn = move |k: &String,
                         _ctx: &mut ProcessWindowContext<'_, GlobalWindow>,
                         r: Elements<'_, (i64, i64)>,
                         out: &mut Collector<'_, String>| {
        for (count, sum) in r {
            out.collect(format!("{},{count},{sum}", label(k)));
        }
        Ok(())
    };
    // window_all is key_by a constant at parallelism 1; the key column says ALL.
    let keyed = if all {
        events.key_by(|_e: &Event| String::new())
    } else {
        events.key_by(key_of)
    };
    let with_lateness = |w: WindowedStream<Event, String, TimeWindow>| {
        w.allowed_lateness(lateness).side_output_late_data(&late)
    };
    let results = match spec {
        Spec::Tumbling(size) => {
            with_lateness(keyed.window(TumblingEventTimeWindows::of(Duration::from_millis(size))))
                .aggregate_with(CountSum, time_fn)
        }
        Spec::Sliding(size, slide) => with_lateness(keyed.window(SlidingEventTimeWindows::of(
            Duration::from_millis(size),
            Duration::from_millis(slide),
        )))
        .aggregate_with(CountSum, time_fn),
        Spec::Session(gap) => with_lateness(keyed.window(EventTimeSessionWindows::with_gap(
            Duration::from_millis(gap),
        )))
        .aggregate_with(CountSum, time_fn),
        Spec::Count(size) => keyed.count_window(size).aggregate_with(CountSum, count_fn),
        Spec::CountSliding(size, slide) => keyed
            .count_window_slide(size, slide)
            .aggregate_with(CountSum, count_fn),
    };
    results.add_sink(Lines { trace });
    results
        .get_side_output(&late)
        .map(|e: Event| format!("LATE,{},{},{}", e.key, e.timestamp, e.value))
        .add_sink(Lines { trace: false });
    env.execute("WindowPlayground")?;
    Ok(())
}
