//! Keyed `ValueState`: the running maximum value per city.
//!
//! Lines are `city,district,value`. Start `nc -lk 9999`, run
//!
//! ```text
//! cargo run --release --example keyed_state_max -- --port 9999
//! ```
//!
//! and type
//!
//! ```text
//! shenzhen,nanshan,5
//! beijing,haidian,3
//! shenzhen,futian,9
//! shenzhen,luohu,2
//! ```
//!
//! Every line prints its city's maximum so far:
//!
//! ```text
//! shenzhen -> 5
//! beijing -> 3
//! shenzhen -> 9
//! shenzhen -> 9
//! ```
//!
//! `--input examples/data/cities.csv` reads a file instead. The state lives
//! in the configured backend (`-D state.backend.type=hashmap`, the
//! default); each parallel subtask keeps the cities of its key groups.

use weir::prelude::*;
use weir_examples::{fields, int, text_input, LineParser};

#[derive(Debug, Clone)]
struct Reading {
    city: String,
    value: i64,
}

/// Keeps the maximum per city in a `ValueState<i64>`.
#[derive(Clone, Default)]
struct RunningMax {
    max: Option<ValueState<i64>>,
}

impl KeyedProcessFunction<String, Reading, String> for RunningMax {
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.max = Some(ctx.get_state(&ValueStateDescriptor::<i64>::new("max"))?);
        Ok(())
    }

    fn process_element(
        &mut self,
        reading: Reading,
        _ctx: &mut ProcessContext<'_, String>,
        out: &mut Collector<'_, String>,
    ) -> FunctionResult {
        let state = self.max.as_ref().ok_or("state used before open")?;
        let max = state
            .value()?
            .map_or(reading.value, |m| m.max(reading.value));
        state.update(max)?;
        out.collect(format!("{} -> {max}", reading.city));
        Ok(())
    }
}

fn main() -> anyhow::Result<()> {
    let env = weir_examples::environment(include_str!("keyed_state_max.rs"), true)?;
    let mut parser = LineParser::new(|line: &str| {
        let f = fields(line, 3)?;
        Ok(Reading {
            city: f[0].to_string(),
            value: int(f[2], "value")?,
        })
    });
    text_input(&env)?
        .flat_map(move |line: String, out: &mut Collector<Reading>| {
            if let Some(r) = parser.next_line(&line) {
                out.collect(r);
            }
        })
        .set_parallelism(1)
        .key_by(|r: &Reading| r.city.clone())
        .process(RunningMax::default())
        .print();
    env.execute("KeyedStateMax")?;
    Ok(())
}
