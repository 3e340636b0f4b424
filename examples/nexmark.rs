//! The Nexmark queries (q0–q5, q7, q8, q11, q12, q14, q15) over the Nexmark
//! generator, or over events written as JSON lines, printing each result.
//!
//! ```text
//! cargo run --release --example nexmark -- --query q5 --events 200000
//! cargo run --release --example nexmark -- --query q3 --input /tmp/nexmark.jsonl
//! ```
//!
//! q5 prints `(auction, bids, window end)` for the auctions with the most
//! bids in each 10 s window sliding by 2 s; `--rate N` sets the events per
//! second of event time (default 10 000), `--seed N` another stream. The
//! same queries run as benchmarks with `weir-bench nexmark`.

use std::fmt::Debug;

use weir::prelude::*;
use weir_examples::LineParser;
use weir_nexmark::queries;
use weir_nexmark::{Event, GeneratorConfig, NexmarkGenerator};

fn print<T: Debug + Clone + Send + 'static>(stream: DataStream<T>) {
    stream.map(|row: T| format!("{row:?}")).print();
}

fn main() -> anyhow::Result<()> {
    let env = weir_examples::environment(include_str!("nexmark.rs"), false)?;
    let args = env.args();
    let query = args.get_or("query", "q5").to_string();
    let events: u64 = args.get_parsed("events")?.unwrap_or(100_000);
    let config = GeneratorConfig {
        rate: args.get_parsed("rate")?.unwrap_or(10_000),
        seed: args.get_parsed("seed")?.unwrap_or(0),
        ..GeneratorConfig::default()
    };
    let p = env.get_parallelism();
    let stream = match args.get("input") {
        Some(path) => {
            // Bad lines are reported with their number and skipped.
            let mut parser = LineParser::new(|line: &str| {
                weir_nexmark::json::parse_event(line).map_err(|e| e.to_string())
            });
            env.read_text_file(path)
                .flat_map(move |line: String, out: &mut Collector<Event>| {
                    if let Some(e) = parser.next_line(&line) {
                        out.collect(e);
                    }
                })
                .assign_timestamps_and_watermarks(
                    WatermarkStrategy::for_monotonous_timestamps()
                        .with_timestamp_assigner(|e: &Event, _| e.date_time()),
                )
        }
        None => queries::events(
            &env,
            NexmarkGenerator::new(config),
            events - events % u64::from(p),
            p,
        ),
    };
    match query.as_str() {
        "q0" => print(queries::q0(&stream)),
        "q1" => print(queries::q1(&stream)),
        "q2" => print(queries::q2(&stream)),
        "q3" => print(queries::q3(&stream)),
        "q4" => print(queries::q4(&stream)),
        "q5" => print(queries::q5(&stream)),
        "q7" => print(queries::q7(&stream)),
        "q8" => print(queries::q8(&stream)),
        "q11" => print(queries::q11(&stream)),
        "q12" => print(queries::q12(&stream)),
        "q14" => print(queries::q14(&stream)),
        "q15" => print(queries::q15(&stream)),
        "q16" => print(queries::q16(&stream)),
        other => anyhow::bail!(
            "unknown query {other}; one of {}",
            queries::QUERIES.join(", ")
        ),
    }
    env.execute(&format!("Nexmark {query}"))?;
    Ok(())
}
