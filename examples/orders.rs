//! The order report of `order_report` and `kafka_order_report` (the
//! classic Flink `StreamOrderWindowReport`): orders parsed from
//! `orderId,userId,money,yyyy-MM-dd HH:mm:ss` lines, per user the orders of
//! each 10 seconds of event time with 2 seconds of out-of-orderness and 3
//! seconds of allowed lateness; later orders go to a side output.

use weir::prelude::*;

use crate::{datetime, decimal, fields, format_datetime, format_window, LineParser};

/// One order.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Order {
    /// Its id.
    pub order_id: String,
    /// Who ordered.
    pub user_id: String,
    /// How much.
    pub money: f64,
    /// When (ms since the epoch, UTC).
    pub time_ms: i64,
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

weir::print_with_display!(Order);

/// Parses one order line.
pub fn parse(line: &str) -> Result<Order, String> {
    let f = fields(line, 4)?;
    Ok(Order {
        order_id: f[0].to_string(),
        user_id: f[1].to_string(),
        money: decimal(f[2], "money")?,
        time_ms: datetime(f[3])?,
    })
}

/// The report over `lines`: one line per user and window firing; orders
/// too late even for the allowed lateness go to `late`. `watermarks` is a
/// bounded out-of-orderness of 2 s (punctuated for bounded input, so that
/// the report does not depend on batching).
pub fn report(
    lines: DataStream<String>,
    watermarks: WatermarkStrategy<Order>,
    late: &OutputTag<Order>,
) -> DataStream<String> {
    let mut parser = LineParser::new(parse);
    lines
        .flat_map(move |line: String, out: &mut Collector<Order>| {
            if let Some(order) = parser.next_line(&line) {
                out.collect(order);
            }
        })
        .uid("parse")
        .set_parallelism(1)
        // One watermark generator over the whole input, as the parsing:
        // which orders are late then does not depend on `-p`, which sets
        // the parallelism of the windows and the sinks.
        .assign_timestamps_and_watermarks(
            watermarks.with_timestamp_assigner(|o: &Order, _| o.time_ms),
        )
        .uid("watermarks")
        .set_parallelism(1)
        .key_by(|o| o.user_id.clone())
        .window(TumblingEventTimeWindows::of(Duration::from_secs(10)))
        .allowed_lateness(Duration::from_secs(3))
        .side_output_late_data(late)
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
        )
        .uid("windows")
}
