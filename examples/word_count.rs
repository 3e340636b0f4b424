//! Word count, the "hello world" of stream processing (Flink's `WordCount`).
//!
//! Over a file (bounded: prints the running counts, then ends):
//!
//! ```text
//! cargo run --release --example word_count -- --input examples/data/words.txt
//! ```
//!
//! Over a socket (unbounded): start `nc -lk 9999` in another terminal, run
//!
//! ```text
//! cargo run --release --example word_count -- --host localhost --port 9999
//! ```
//!
//! and type lines into `nc`. Typing `to be or not to be` prints
//!
//! ```text
//! (to,1)
//! (be,1)
//! (or,1)
//! (not,1)
//! (to,2)
//! (be,2)
//! ```
//!
//! Each record is a running count: the count of that word so far, emitted
//! every time the word appears, as Flink's `keyBy(word).sum(1)` does. With
//! `-p 2` or more, lines start with the printing subtask (`2> (be,2)`).
//! `--output FILE` writes the counts to a file instead of printing them.

use weir::prelude::*;

fn main() -> anyhow::Result<()> {
    let env = weir_examples::environment(include_str!("word_count.rs"), true)?;
    let args = env.args();
    let text = match (args.get("input"), args.get("port")) {
        (Some(path), _) => env.read_text_file(path),
        (None, Some(_)) => {
            let port: u16 = args.get_parsed("port")?.unwrap_or(9999);
            env.socket_text_stream(args.get_or("host", "localhost"), port)
        }
        (None, None) => {
            anyhow::bail!(
                "usage: word_count --input FILE | --host HOST --port PORT [--output FILE]"
            )
        }
    };

    // Tuples print as Flink prints them: (to,2).
    let counts = text
        .flat_map(|line: String, out: &mut Collector<(String, i64)>| {
            for word in line
                .split(|c: char| !c.is_alphanumeric() && c != '\'')
                .filter(|w| !w.is_empty())
            {
                out.collect((word.to_lowercase(), 1));
            }
        })
        .name("Tokenizer")
        .key_by(|(word, _)| word.clone())
        .sum(|(_, count)| count);

    match args.get("output") {
        Some(path) => {
            counts.write_as_text(path);
        }
        None => {
            counts.print();
        }
    }
    env.execute("WordCount")?;
    Ok(())
}
