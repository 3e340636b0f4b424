//! Sliding processing-time window: every 5 seconds, the sum per key over the
//! last 10 seconds (Flink's `SlidingProcessingTimeWindows.of(10s, 5s)`).
//!
//! Start `nc -lk 9999`, run
//!
//! ```text
//! cargo run --release --example sliding_window_sum -- --port 9999
//! ```
//!
//! and type `key,n` lines. Each line counts in two windows, so typing `a,1`
//! prints `(a,1)` at the end of the current 5-second slot and again five
//! seconds later; typing `a,2` in the next slot makes the second print
//! `(a,3)`.
//!
//! `--input FILE` reads lines from a file; at its end every open window fires
//! once. Malformed lines are reported on stderr and skipped.

use weir::prelude::*;
use weir_examples::key_value_pairs;

fn main() -> anyhow::Result<()> {
    let env = weir_examples::environment(include_str!("sliding_window_sum.rs"), true)?;
    key_value_pairs(&env)?
        .key_by(|(key, _)| key.clone())
        .window(SlidingProcessingTimeWindows::of(
            Duration::from_secs(10),
            Duration::from_secs(5),
        ))
        .sum(|(_, n)| n)
        .print();
    env.execute("SlidingWindowSum")?;
    Ok(())
}
