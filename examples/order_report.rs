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
use weir_examples::{
    bounded_out_of_orderness, datetime, decimal, fields, format_datetime, format_window,
    text_input, LineParser,
};

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Order {
    order_id: String,
    user_id: String,
    money: f64,
    time_ms: i64,
}

impl std::fmt::Display for Order {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "order {} of {} at {}: {:.2}",
            self.order_id,
            self.user_id,
            format_datetime(self.time_ms),
            self.money
        )
    }
}

print_with_display!(Order);

fn parse(line: &str) -> Result<Order, String> {
    let f = fields(line, 4)?;
    Ok(Order {
        order_id: f[0].to_string(),
        user_id: f[1].to_string(),
        money: decimal(f[2], "money")?,
        time_ms: datetime(f[3])?,
    })
}

fn main() -> anyhow::Result<()> {
    let env = weir_examples::environment(include_str!("order_report.rs"), true)?;
    let late = OutputTag::<Order>::new("late-order");
    let mut parser = LineParser::new(parse);

    let report = text_input(&env)?
        .flat_map(move |line: String, out: &mut Collector<Order>| {
            if let Some(order) = parser.next_line(&line) {
                out.collect(order);
            }
        })
        .set_parallelism(1)
        // One watermark generator over the whole input, as the parsing:
        // which orders are late then does not depend on `-p`, which sets
        // the parallelism of the windows and the sinks.
        .assign_timestamps_and_watermarks(
            bounded_out_of_orderness(&env, Duration::from_secs(2))
                .with_timestamp_assigner(|o: &Order, _| o.time_ms),
        )
        .set_parallelism(1)
        .key_by(|o| o.user_id.clone())
        .window(TumblingEventTimeWindows::of(Duration::from_secs(10)))
        .allowed_lateness(Duration::from_secs(3))
        .side_output_late_data(&late)
        .apply(
            |user: &String,
             w: &TimeWindow,
             orders: Elements<'_, Order>,
             out: &mut Collector<'_, String>| {
                let ids: Vec<&str> = orders.clone().map(|o| o.order_id.as_str()).collect();
                let total: f64 = orders.map(|o| o.money).sum();
                let n = ids.len();
                out.collect(format!(
                    "user {user} {}: {n} order{}, total {total:.2} ({})",
                    format_window(w.start, w.end),
                    if n == 1 { "" } else { "s" },
                    ids.join(", ")
                ));
            },
        );

    report.print();
    report.get_side_output(&late).print_with_prefix("late");
    env.execute("StreamOrderWindowReport")?;
    Ok(())
}
