//! Broadcast state: alert thresholds arrive on a control stream, are
//! broadcast to every parallel instance, and apply to a keyed stream of
//! sensor readings (Flink's broadcast state pattern).
//!
//! Start two servers, `nc -lk 9998` for rules and `nc -lk 9999` for
//! readings, run
//!
//! ```text
//! cargo run --release --example dynamic_rules -- --rules-port 9998 --port 9999
//! ```
//!
//! and type a rule `temp-1,30` into the first (sensor, threshold), then
//! readings `temp-1,25`, `temp-1,35` into the second. Readings above their
//! sensor's current threshold print an alert with the sensor's alert count
//! (keyed `ValueState`):
//!
//! ```text
//! ALERT temp-1: 35 > 30 (alert #1)
//! ```
//!
//! A new rule for a sensor replaces its threshold at once in every
//! instance; the rule `reset,0` clears every sensor's count (through
//! `apply_to_keyed_state`).
//!
//! `--rules FILE --input FILE` read files instead, the readings one line
//! every `--delay-ms` (default 50) as if they were arriving live: as in
//! Flink, the two streams are not ordered relative to each other, so a
//! reading may meet a rule that is not there yet.
//!
//! ```text
//! cargo run --release --example dynamic_rules -- --rules examples/data/rules.txt --input examples/data/readings.txt
//! ALERT temp-2: 12 > 10 (alert #1)
//! ALERT temp-1: 35 > 30 (alert #1)
//! ALERT temp-1: 31 > 30 (alert #2)
//! ```

use weir::prelude::*;
use weir_examples::{fields, int, LineParser};

fn thresholds() -> MapStateDescriptor<String, i64> {
    MapStateDescriptor::new("thresholds")
}

/// Checks readings against the broadcast thresholds.
#[derive(Clone, Default)]
struct Alerts {
    count: Option<ValueState<u32>>,
}

impl KeyedBroadcastProcessFunction<String, (String, i64), (String, i64), String> for Alerts {
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.count = Some(ctx.get_state(&ValueStateDescriptor::new("alerts"))?);
        Ok(())
    }

    fn process_element(
        &mut self,
        (sensor, value): (String, i64),
        ctx: &mut ReadOnlyContext<'_, String>,
        out: &mut Collector<'_, String>,
    ) -> FunctionResult {
        let Some(limit) = ctx
            .get_broadcast_state(&thresholds())?
            .get(&sensor)
            .copied()
        else {
            return Ok(());
        };
        if value > limit {
            let count = self.count.as_ref().ok_or("state used before open")?;
            let n = count.value()?.unwrap_or(0) + 1;
            count.update(n)?;
            out.collect(format!("ALERT {sensor}: {value} > {limit} (alert #{n})"));
        }
        Ok(())
    }

    fn process_broadcast_element(
        &mut self,
        (sensor, limit): (String, i64),
        ctx: &mut BroadcastContext<'_, String>,
        _out: &mut Collector<'_, String>,
    ) -> FunctionResult {
        if sensor == "reset" {
            ctx.apply_to_keyed_state(&ValueStateDescriptor::<u32>::new("alerts"), |_, count| {
                count.clear()?;
                Ok(())
            })
        } else {
            ctx.get_broadcast_state(&thresholds())?
                .insert(sensor, limit);
            Ok(())
        }
    }
}

/// The lines of a file, one every `delay`, as a live feed would bring them.
#[derive(Clone)]
struct Paced {
    lines: Vec<String>,
    next: usize,
    delay: std::time::Duration,
}

impl SourceFunction<String> for Paced {
    fn poll_next(&mut self, ctx: &mut SourceContext<'_, String>) -> FunctionResult<SourceStatus> {
        let Some(line) = self.lines.get(self.next) else {
            return Ok(SourceStatus::Finished);
        };
        std::thread::sleep(self.delay);
        ctx.collect(line.clone());
        self.next += 1;
        Ok(SourceStatus::More)
    }
}

fn pairs(
    env: &StreamExecutionEnvironment,
    file: Option<&str>,
    port: Option<u16>,
    pace: Option<std::time::Duration>,
) -> anyhow::Result<DataStream<(String, i64)>> {
    let lines = match (file, port, pace) {
        (Some(path), _, Some(delay)) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| anyhow::anyhow!("cannot read '{path}': {e}"))?;
            let lines = text.lines().map(String::from).collect();
            env.add_source(
                Paced {
                    lines,
                    next: 0,
                    delay,
                },
                path,
            )
        }
        (Some(path), _, None) => env.read_text_file(path),
        (None, Some(port), _) => env.socket_text_stream("localhost", port),
        (None, None, _) => anyhow::bail!(
            "usage: dynamic_rules --rules FILE --input FILE | --rules-port P --port P"
        ),
    };
    let mut parser = LineParser::new(|line: &str| {
        let f = fields(line, 2)?;
        Ok((f[0].to_string(), int(f[1], "number")?))
    });
    Ok(lines
        .flat_map(move |line: String, out: &mut Collector<(String, i64)>| {
            if let Some(pair) = parser.next_line(&line) {
                out.collect(pair);
            }
        })
        .set_parallelism(1))
}

fn main() -> anyhow::Result<()> {
    let env = weir_examples::environment(include_str!("dynamic_rules.rs"), true)?;
    let args = env.args();
    let delay =
        std::time::Duration::from_millis(args.get_parsed("delay-ms")?.unwrap_or(50).min(100));
    let rules = pairs(
        &env,
        args.get("rules"),
        args.get_parsed("rules-port")?,
        None,
    )?;
    let readings = pairs(
        &env,
        args.get("input"),
        args.get_parsed("port")?,
        Some(delay),
    )?;
    readings
        .key_by(|(sensor, _)| sensor.clone())
        .connect_broadcast(&rules.broadcast_state(&thresholds()))
        .process(Alerts::default())
        .print();
    env.execute("DynamicRules")?;
    Ok(())
}
