//! Built-in sinks and user sinks.

use std::sync::{Arc, Mutex};

use weir::prelude::*;

use crate::sorted;

#[test]
fn write_as_text_writes_one_file_at_parallelism_1() -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(format!("weir-sink1-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("out.txt");
    let env = StreamExecutionEnvironment::new();
    env.from_elements(vec![1, 2, 3]).write_as_text(&path);
    env.execute("text")?;
    assert_eq!(std::fs::read_to_string(&path)?, "1\n2\n3\n");
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

#[test]
fn write_as_text_writes_a_file_per_subtask_in_parallel() -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(format!("weir-sink2-{}", std::process::id()));
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(2);
    env.from_sequence(1, 100).write_as_text(&dir);
    env.execute("text")?;
    let mut lines = Vec::new();
    for name in ["1", "2"] {
        let text = std::fs::read_to_string(dir.join(name))?;
        assert!(!text.is_empty(), "file {name} is empty");
        lines.extend(
            text.lines()
                .map(|l| l.parse::<i64>())
                .collect::<Result<Vec<_>, _>>()?,
        );
    }
    assert_eq!(sorted(lines), (1..=100).collect::<Vec<_>>());
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

/// A rich sink that sees batches and learns when input ends.
#[derive(Clone, Default)]
struct Recording {
    seen: Arc<Mutex<Vec<String>>>,
    finished: Arc<Mutex<bool>>,
}

impl SinkFunction<i64> for Recording {
    fn invoke(&mut self, value: i64, ctx: &SinkContext) -> FunctionResult {
        let mut seen = self.seen.lock().map_err(|_| "poisoned")?;
        seen.push(format!("{value}@{:?}", ctx.timestamp()));
        Ok(())
    }

    fn finish(&mut self) -> FunctionResult {
        *self.finished.lock().map_err(|_| "poisoned")? = true;
        Ok(())
    }
}

#[test]
fn user_sinks_get_every_record_and_the_end() -> anyhow::Result<()> {
    let env = StreamExecutionEnvironment::new();
    let sink = Recording::default();
    let (seen, finished) = (Arc::clone(&sink.seen), Arc::clone(&sink.finished));
    env.from_sequence(1, 3).add_sink(sink);
    env.execute("sink")?;
    assert_eq!(
        *seen.lock().map_err(|_| anyhow::anyhow!("poisoned"))?,
        vec!["1@None", "2@None", "3@None"]
    );
    assert!(*finished.lock().map_err(|_| anyhow::anyhow!("poisoned"))?);
    Ok(())
}

#[test]
fn print_sinks_run() -> anyhow::Result<()> {
    // Output formatting is unit-tested in the sink module; this checks the
    // sinks run at any parallelism and count what they print.
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(2);
    let s = env.from_sequence(1, 4);
    s.print().name("out");
    s.print_with_prefix("p").name("out-p");
    s.print_to_err().name("err");
    s.print_to_err_with_prefix("e").name("err-p");
    let result = env.execute("print")?;
    for name in ["out", "out-p", "err", "err-p"] {
        let op = result
            .operator(name)
            .ok_or_else(|| anyhow::anyhow!("no {name}"))?;
        assert_eq!(op.records_in, 4, "{name}");
    }
    Ok(())
}
