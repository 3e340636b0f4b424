//! Processing-time session window over the whole stream: records until a 5
//! second pause form one session (Flink's
//! `windowAll(ProcessingTimeSessionWindows.withGap(5s))`).
//!
//! Start `nc -lk 9999`, run
//!
//! ```text
//! cargo run --release --example session_window -- --port 9999
//! ```
//!
//! and type `key,n` lines with short pauses, then wait 5 seconds: it prints
//! the session, e.g. after `a,1` `b,2` `a,3`
//!
//! ```text
//! session of 3 records: sum 6, keys [a, b]
//! ```
//!
//! `--input FILE` reads lines from a file (one session, printed at the end).
//! Malformed lines are reported on stderr and skipped.

use std::collections::BTreeSet;

use weir::prelude::*;
use weir_examples::key_value_pairs;

fn main() -> anyhow::Result<()> {
    let env = weir_examples::environment(include_str!("session_window.rs"), true)?;
    key_value_pairs(&env)?
        .window_all(ProcessingTimeSessionWindows::with_gap(Duration::from_secs(
            5,
        )))
        .apply(
            |_window: &TimeWindow,
             records: Elements<'_, (String, i64)>,
             out: &mut Collector<'_, String>| {
                let (mut count, mut sum, mut keys) = (0, 0, BTreeSet::new());
                for (key, n) in records {
                    count += 1;
                    sum += n;
                    keys.insert(key.as_str());
                }
                let keys: Vec<&str> = keys.into_iter().collect();
                out.collect(format!(
                    "session of {count} records: sum {sum}, keys [{}]",
                    keys.join(", ")
                ));
            },
        )
        .print();
    env.execute("SessionWindow")?;
    Ok(())
}
