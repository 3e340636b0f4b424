//! Built-in sources: collections, sequences, generators, text files and
//! sockets. Sources of external systems (Kafka, …) live in `weir-connectors`.

mod collection;
mod generator;
mod index_ranges;
mod socket;
mod split;
mod text_file;

pub use collection::{CollectionSource, SequenceSource};
pub use generator::GeneratorSource;
pub use socket::SocketTextSource;
pub(crate) use split::SplitWatermarkSource;
pub use split::{SplitContext, SplitSourceFunction};
pub use text_file::TextFileSource;

/// Warnings about lines that were not valid UTF-8, per source subtask,
/// before the rest are only counted.
const DECODING_WARNINGS: u64 = 10;

/// A line of a text source as a string. Bytes that are not valid UTF-8 are
/// replaced with U+FFFD, as Flink's text sources decode (Java replaces
/// malformed input); the line still flows, and a warning names where it
/// came from (`origin`, 1-based `line`), so a bad byte neither fails the
/// job nor passes unnoticed. `bad_lines` counts such lines.
pub(crate) fn decode_line(
    bytes: &[u8],
    origin: &dyn std::fmt::Display,
    line: u64,
    bad_lines: &mut u64,
) -> String {
    match std::str::from_utf8(bytes) {
        Ok(text) => text.to_string(),
        Err(e) => {
            *bad_lines += 1;
            if *bad_lines <= DECODING_WARNINGS {
                tracing::warn!(
                    "{origin} line {line} is not valid UTF-8 (byte {} of the \
                     line); invalid bytes replaced with U+FFFD{}",
                    e.valid_up_to() + 1,
                    if *bad_lines == DECODING_WARNINGS {
                        "; further such lines are not reported"
                    } else {
                        ""
                    }
                );
            }
            String::from_utf8_lossy(bytes).into_owned()
        }
    }
}
