//! Events as JSON lines, one event an object tagged with its `type`, so
//! that other engines can be fed exactly the stream Weir was.

use std::io::Write;

use crate::generator::NexmarkGenerator;
use crate::model::Event;

/// Writes events `0..count` to `out`, one JSON object a line.
pub fn write_events(
    generator: &NexmarkGenerator,
    count: u64,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    for n in 0..count {
        serde_json::to_writer(&mut *out, &generator.event(n))?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    Ok(())
}

/// An event from one line. The error names the column; the caller knows
/// the line (a line parsed alone is always line 1 to the JSON parser).
pub fn parse_event(line: &str) -> anyhow::Result<Event> {
    serde_json::from_str(line).map_err(|e| {
        let what = match e.classify() {
            serde_json::error::Category::Io => "cannot read",
            serde_json::error::Category::Syntax => "invalid JSON",
            serde_json::error::Category::Data => "not an event",
            serde_json::error::Category::Eof => "incomplete JSON",
        };
        // serde_json's message ends "at line L column C": keep its reason.
        let message = e.to_string();
        let reason = message
            .rsplit_once(" at line ")
            .map_or(message.as_str(), |(reason, _)| reason);
        match e.column() {
            0 => anyhow::anyhow!("{what}: {reason}"),
            column => anyhow::anyhow!("{what} at column {column}: {reason}"),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_column_not_a_line() {
        let err = parse_event("{\"type\": \"bid\", oops}")
            .unwrap_err()
            .to_string();
        assert_eq!(err, "invalid JSON at column 17: key must be a string");
        assert!(!err.contains("line"), "{err}");
    }
}
