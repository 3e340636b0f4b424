//! Tumbling processing-time window: the sum per key every 5 seconds
//! (Flink's `keyBy(0).window(TumblingProcessingTimeWindows.of(5s)).sum(1)`).
//!
//! Start `nc -lk 9999`, run
//!
//! ```text
//! cargo run --release --example tumbling_window_sum -- --port 9999
//! ```
//!
//! and type `key,n` lines, e.g. `a,1` `b,2` `a,3` within five seconds. When
//! the 5-second window ends (windows are aligned to the clock: :00, :05, …)
//! it prints one line per key seen in it:
//!
//! ```text
//! (a,4)
//! (b,2)
//! ```
//!
//! `--input FILE` reads the lines from a file instead; a bounded input ends
//! with every open processing-time window firing once. Malformed lines are
//! reported on stderr with their line number and skipped.

use weir::prelude::*;
use weir_examples::key_value_pairs;

fn main() -> anyhow::Result<()> {
    let env = weir_examples::environment(include_str!("tumbling_window_sum.rs"), true)?;
    key_value_pairs(&env)?
        .key_by(|(key, _)| key.clone())
        .window(TumblingProcessingTimeWindows::of(Duration::from_secs(5)))
        .sum(|(_, n)| n)
        .print();
    env.execute("TumblingWindowSum")?;
    Ok(())
}
