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

/// The lines of `text` that a print sink wrote with `prefix` (`""` for
/// none), as (subtask number, value), sorted by value.
fn printed(text: &str, prefix: &str) -> Vec<(u32, String)> {
    let mut found: Vec<(u32, String)> = text
        .lines()
        .filter_map(|line| {
            let (head, value) = line.split_once("> ")?;
            let subtask = match head.split_once(':') {
                Some((p, n)) if p == prefix => n,
                None if prefix.is_empty() => head,
                _ => return None,
            };
            Some((subtask.parse().ok()?, value.to_string()))
        })
        .collect();
    found.sort_by(|a, b| a.1.cmp(&b.1));
    found
}

#[test]
fn print_sinks_write_flinks_format_to_their_stream() -> anyhow::Result<()> {
    const CHILD: &str = "WEIR_TEST_PRINT_CHILD";
    if std::env::var_os(CHILD).is_some() {
        let env = StreamExecutionEnvironment::new();
        env.set_parallelism(2);
        let s = env.from_sequence(1, 4);
        s.print();
        s.print_with_prefix("p");
        s.print_to_err();
        s.print_to_err_with_prefix("e");
        env.execute("print")?;
        return Ok(());
    }
    // The job prints in a child process (this test again), whose standard
    // output and error are read here.
    let out = std::process::Command::new(std::env::current_exe()?)
        .args([
            "--exact",
            "sinks::print_sinks_write_flinks_format_to_their_stream",
            "--nocapture",
        ])
        .env(CHILD, "1")
        .output()?;
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}{stderr}");
    let values: Vec<String> = (1..=4).map(|v| v.to_string()).collect();
    for (text, prefix, other) in [(&stdout, "p", "e"), (&stderr, "e", "p")] {
        for prefix in ["", prefix] {
            let lines = printed(text, prefix);
            // Each value once, after the subtask number (1-based, as the
            // sinks run at parallelism 2), and after the prefix if any.
            assert_eq!(
                lines.iter().map(|(_, v)| v.clone()).collect::<Vec<_>>(),
                values,
                "prefix '{prefix}' in:\n{text}"
            );
            assert!(lines.iter().all(|(n, _)| (1..=2).contains(n)), "{text}");
        }
        assert!(printed(text, other).is_empty(), "{other}> in:\n{text}");
    }
    Ok(())
}

#[test]
fn sinks_are_named_for_their_kind() -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(format!("weir-sink-names-{}", std::process::id()));
    let env = StreamExecutionEnvironment::new();
    let s = env.from_sequence(1, 4);
    s.add_sink(weir::sink::FileSink::for_row_format(&dir));
    s.add_sink(DiscardingSink);
    let result = env.execute("names")?;
    for name in ["FileSink", "DiscardingSink"] {
        let op = result
            .operator(name)
            .ok_or_else(|| anyhow::anyhow!("no sink named {name}"))?;
        assert_eq!(op.records_in, 4, "{name}");
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
