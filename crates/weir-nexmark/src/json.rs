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

/// An event from one line.
pub fn parse_event(line: &str) -> anyhow::Result<Event> {
    Ok(serde_json::from_str(line)?)
}
