//! Event-time tumbling window: the sum per key for each 10 seconds of event
//! time, whatever order lines arrive in within 2 seconds.
//!
//! Lines are `yyyy-MM-dd HH:mm:ss,key,n` (UTC). Start `nc -lk 9999`, run
//!
//! ```text
//! cargo run --release --example event_time_window_sum -- --port 9999
//! ```
//!
//! and type
//!
//! ```text
//! 2024-01-01 12:00:01,a,1
//! 2024-01-01 12:00:04,b,2
//! 2024-01-01 12:00:03,a,3
//! 2024-01-01 12:00:12,a,5
//! ```
//!
//! The last line moves the watermark to 12:00:09.999 (12 s - 2 s - 1 ms),
//! which closes the window [12:00:00, 12:00:10) and prints
//!
//! ```text
//! a [2024-01-01 12:00:00, 2024-01-01 12:00:10): 4
//! b [2024-01-01 12:00:00, 2024-01-01 12:00:10): 2
//! ```
//!
//! `--input examples/data/events.txt` reads a file instead (its end fires
//! the remaining windows). Malformed lines are reported and skipped.

use weir::prelude::*;
use weir_examples::{
    bounded_out_of_orderness, datetime, fields, format_datetime, int, text_input, LineParser,
};

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Reading {
    time_ms: i64,
    key: String,
    n: i64,
}

fn main() -> anyhow::Result<()> {
    let env = weir_examples::environment(include_str!("event_time_window_sum.rs"), true)?;
    let mut parser = LineParser::new(|line: &str| {
        let f = fields(line, 3)?;
        Ok(Reading {
            time_ms: datetime(f[0])?,
            key: f[1].to_string(),
            n: int(f[2], "n")?,
        })
    });
    text_input(&env)?
        .flat_map(move |line: String, out: &mut Collector<Reading>| {
            if let Some(r) = parser.next_line(&line) {
                out.collect(r);
            }
        })
        .set_parallelism(1)
        .assign_timestamps_and_watermarks(
            bounded_out_of_orderness(&env, Duration::from_secs(2))
                .with_timestamp_assigner(|r: &Reading, _| r.time_ms),
        )
        .key_by(|r| r.key.clone())
        .window(TumblingEventTimeWindows::of(Duration::from_secs(10)))
        .apply(
            |key: &String,
             w: &TimeWindow,
             readings: Elements<'_, Reading>,
             out: &mut Collector<'_, String>| {
                let sum: i64 = readings.map(|r| r.n).sum();
                out.collect(format!(
                    "{key} [{}, {}): {sum}",
                    format_datetime(w.start),
                    format_datetime(w.end)
                ));
            },
        )
        .print();
    env.execute("EventTimeWindowSum")?;
    Ok(())
}
