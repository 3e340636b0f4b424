//! A running total in keyed `ValueState`: every word is keyed to one key,
//! whose state counts all words seen so far.
//!
//! Start `nc -lk 9999`, run
//!
//! ```text
//! cargo run --release --example running_total_word_count -- --port 9999
//! ```
//!
//! and type `to be or not`: it prints each word with the total so far,
//!
//! ```text
//! (to,1)
//! (be,2)
//! (or,3)
//! (not,4)
//! ```
//!
//! `--input examples/data/words.txt` reads a file instead.

use weir::prelude::*;
use weir_examples::text_input;

/// Counts every word in a `ValueState<u64>` of the single key.
#[derive(Clone, Default)]
struct RunningTotal {
    total: Option<ValueState<u64>>,
}

impl KeyedProcessFunction<u8, String, String> for RunningTotal {
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.total = Some(ctx.get_state(&ValueStateDescriptor::<u64>::new("total"))?);
        Ok(())
    }

    fn process_element(
        &mut self,
        word: String,
        _ctx: &mut ProcessContext<'_, u8>,
        out: &mut Collector<'_, String>,
    ) -> FunctionResult {
        let state = self.total.as_ref().ok_or("state used before open")?;
        let total = state.value()?.unwrap_or(0) + 1;
        state.update(total)?;
        out.collect(format!("({word},{total})"));
        Ok(())
    }
}

fn main() -> anyhow::Result<()> {
    let env = weir_examples::environment(include_str!("running_total_word_count.rs"), true)?;
    text_input(&env)?
        .flat_map(|line: String, out: &mut Collector<String>| {
            for word in line
                .split(|c: char| !c.is_alphanumeric() && c != '\'')
                .filter(|w| !w.is_empty())
            {
                out.collect(word.to_lowercase());
            }
        })
        .key_by(|_word: &String| 0u8)
        .process(RunningTotal::default())
        .print();
    env.execute("RunningTotalWordCount")?;
    Ok(())
}
