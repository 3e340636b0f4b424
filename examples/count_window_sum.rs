//! Count window over the whole stream: the sum of every 5 integers (Flink's
//! `countWindowAll(5).sum(0)`).
//!
//! Start `nc -lk 9999`, run
//!
//! ```text
//! cargo run --release --example count_window_sum -- --port 9999
//! ```
//!
//! and type one integer per line. After the fifth it prints their sum
//! (`1` … `5` prints `15`), and so on for each next five. Fewer than five
//! left at the end of the input are never summed, as in Flink.
//!
//! `--input FILE` reads the integers from a file. Malformed lines are
//! reported on stderr and skipped.

use weir::prelude::*;
use weir_examples::{int, text_input, LineParser};

fn main() -> anyhow::Result<()> {
    let env = weir_examples::environment(include_str!("count_window_sum.rs"), true)?;
    let mut parser = LineParser::new(|line: &str| int(line, "number"));
    text_input(&env)?
        .flat_map(move |line: String, out: &mut Collector<i64>| {
            if let Some(n) = parser.next_line(&line) {
                out.collect(n);
            }
        })
        .set_parallelism(1)
        .count_window_all(5)
        .reduce(|a: i64, b: i64| a + b)
        .print();
    env.execute("CountWindowSum")?;
    Ok(())
}
