//! Order report: per user, the orders of each 10 seconds of event time,
//! tolerating 2 seconds of disorder and 3 seconds of lateness; later orders
//! go to a side output (the classic Flink `StreamOrderWindowReport`).
//!
//! Lines are `orderId,userId,money,yyyy-MM-dd HH:mm:ss` (UTC). Over the
//! bundled sample:
//!
//! ```text
//! cargo run --release --example order_report -- --input examples/data/orders.csv
//! ```
//!
//! Or start `nc -lk 9999`, run `... --example order_report -- --port 9999`
//! and type orders. What happens, as in Flink:
//!
//! - The watermark trails the latest order time by 2 s (bounded
//!   out-of-orderness), so an order up to 2 s out of order still lands in
//!   its window before it fires.
//! - A window [t, t+10s) fires when the watermark reaches t+10s-1ms, i.e.
//!   when an order at t+12s or later arrives, and prints one line per user.
//! - For 3 s more (allowed lateness) a late order re-fires its window at
//!   once with the updated total: a second line for that user and window.
//! - Orders later than that print as `late> ...` from the side output.
//! - Malformed lines are reported on stderr with their line number.

use weir::prelude::*;
use weir_examples::bounded_out_of_orderness;
use weir_examples::orders::{report, Order};

fn main() -> anyhow::Result<()> {
    let env = weir_examples::environment(include_str!("order_report.rs"), true)?;
    let late = OutputTag::<Order>::new("late-order");
    let report = report(
        weir_examples::text_input(&env)?,
        bounded_out_of_orderness(&env, Duration::from_secs(2)),
        &late,
    );
    report.print();
    report.get_side_output(&late).print_with_prefix("late");
    env.execute("StreamOrderWindowReport")?;
    Ok(())
}
