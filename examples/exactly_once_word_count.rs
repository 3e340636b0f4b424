//! Word counts written exactly once into files, through crashes.
//!
//! Reads `--input FILE` (at `--rate N` lines per second if given, so it can
//! be interrupted part-way), gives line `n` the event time `n` seconds
//! (a line-number clock), and writes two results with the transactional
//! file sink under `--output DIR`:
//!
//! - `DIR/counts/`: `count,<word>,<n>` — each word's running count;
//! - `DIR/windows/`: `window,<end>,<word>,<n>` — counts per tumbling
//!   10-second event-time window (ten lines).
//!
//! Part files become visible when the checkpoint after them completes, so
//! after any crash and restart the committed files hold each result once:
//!
//! ```text
//! cargo run --release --example exactly_once_word_count -- \
//!     --input examples/data/words.txt --output /tmp/wc --rate 20 \
//!     -D execution.checkpointing.interval=1s \
//!     -D execution.checkpointing.dir=/tmp/wc-checkpoints \
//!     -D execution.checkpointing.externalized-checkpoint-retention=RETAIN_ON_CANCELLATION
//! # kill it (Ctrl-C, or kill -9), then resume from its newest checkpoint:
//! cargo run --release --example exactly_once_word_count -- ...same flags... \
//!     --from-savepoint /tmp/wc-checkpoints/<job-id>
//! ```

use weir::prelude::*;
use weir::sink::FileSink;
use weir::source::TextFileSource;

/// Numbers lines from 1, keeping the count across restarts in operator
/// state (Flink's `CheckpointedFunction` pattern: a field, saved when a
/// barrier passes, restored in `open`).
#[derive(Clone, Default)]
struct LineClock {
    line: u64,
    saved: Option<OperatorListState<u64>>,
}

impl MapFunction<String, (u64, String)> for LineClock {
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        let saved = ctx
            .operator_state
            .get_list_state(&ListStateDescriptor::new("line"))?;
        self.line = saved.get()?.into_iter().max().unwrap_or(0);
        self.saved = Some(saved);
        Ok(())
    }

    fn map(&mut self, text: String) -> (u64, String) {
        self.line += 1;
        (self.line, text)
    }

    fn snapshot_state(&mut self, _checkpoint_id: u64) -> FunctionResult {
        if let Some(saved) = &self.saved {
            saved.update(vec![self.line])?;
        }
        Ok(())
    }
}

fn main() -> anyhow::Result<()> {
    let env = weir_examples::environment(include_str!("exactly_once_word_count.rs"), true)?;
    let args = env.args();
    let input = args.required("input")?;
    let output = std::path::PathBuf::from(args.required("output")?);
    let mut source = TextFileSource::new(input);
    if let Some(rate) = args.get("rate") {
        source = source.with_rate_limit(rate.parse()?);
    }
    let words = env
        .read_text_file_with(source)
        .uid("lines")
        .map(LineClock::default())
        .uid("line clock")
        .set_parallelism(1)
        .assign_timestamps_and_watermarks(
            WatermarkStrategy::for_monotonous_timestamps()
                .with_timestamp_assigner(|(line, _): &(u64, String), _| *line as i64 * 1000),
        )
        .flat_map(
            |(_, text): (u64, String), out: &mut Collector<(String, u64)>| {
                for word in text
                    .split(|c: char| !c.is_alphanumeric() && c != '\'')
                    .filter(|w| !w.is_empty())
                {
                    out.collect((word.to_lowercase(), 1));
                }
            },
        );
    words
        .key_by(|(word, _)| word.clone())
        .sum(|(_, n)| n)
        .uid("running counts")
        .map(|(word, n): (String, u64)| format!("count,{word},{n}"))
        .add_sink(FileSink::for_row_format(output.join("counts")))
        .uid("count files");
    words
        .key_by(|(word, _)| word.clone())
        .window(TumblingEventTimeWindows::of(Duration::from_secs(10)))
        .reduce_with(
            |(w, a): (String, u64), (_, b): (String, u64)| (w, a + b),
            |word: &String,
             ctx: &mut ProcessWindowContext<'_, TimeWindow>,
             counts: Elements<'_, (String, u64)>,
             out: &mut Collector<'_, String>| {
                for (_, n) in counts {
                    out.collect(format!("window,{},{word},{n}", ctx.window().end));
                }
                Ok(())
            },
        )
        .uid("window counts")
        .add_sink(FileSink::for_row_format(output.join("windows")))
        .uid("window files");
    env.execute("ExactlyOnceWordCount")?;
    Ok(())
}
