//! Where Weir's log events go: the `tracing` events of the engine (restores,
//! restarts, skipped checkpoints, warnings) written to standard error,
//! as lines (`weir: …`, `weir: warning: …`, the format Weir always printed)
//! or as JSON lines with level, target, fields and the task's span.
//!
//! The first configuration of a process installs the subscriber, unless the
//! program installed its own: `RUST_LOG` if set, else `weir.log.level`
//! (a filter such as `info` or `warn,weir::recovery=info`), chooses what is
//! written; `weir.log.format` (`text` or `json`) how.

use std::fmt;
use std::sync::OnceLock;

use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::EnvFilter;

use crate::config::Configuration;
use crate::error::{Error, Result};

/// The keys read.
pub mod keys {
    /// What is logged: a `tracing` filter (default `info`); `RUST_LOG`
    /// takes precedence.
    pub const LEVEL: &str = "weir.log.level";
    /// `text` (default) or `json`.
    pub const FORMAT: &str = "weir.log.format";
}

/// Installs the process's subscriber from `config`, once; later calls,
/// and calls after the program installed a subscriber of its own, change
/// nothing.
pub(crate) fn init(config: &Configuration) -> Result<()> {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    let json = match config
        .get(keys::FORMAT)
        .map(|f| f.trim().to_ascii_lowercase())
    {
        None => false,
        Some(f) if f == "text" => false,
        Some(f) if f == "json" => true,
        Some(other) => {
            return Err(Error::Config(format!(
                "{}: must be text or json, is '{other}'",
                keys::FORMAT
            )))
        }
    };
    let directives = std::env::var("RUST_LOG")
        .ok()
        .filter(|v| !v.trim().is_empty())
        .or_else(|| config.get(keys::LEVEL).map(str::to_string))
        .unwrap_or_else(|| "info".into());
    let filter = EnvFilter::builder()
        .parse(&directives)
        .map_err(|e| Error::Config(format!("{}: '{directives}': {e}", keys::LEVEL)))?;
    if INSTALLED.get().is_some() || tracing::dispatcher::has_been_set() {
        return Ok(());
    }
    let _ = INSTALLED.set(());
    let installed = if json {
        tracing_subscriber::fmt()
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .with_env_filter(filter)
            .with_writer(|| Eprint)
            .try_init()
    } else {
        tracing_subscriber::fmt()
            .event_format(Lines)
            .with_env_filter(filter)
            .with_writer(|| Eprint)
            .try_init()
    };
    // Another subscriber won the race: it is the program's choice.
    let _ = installed;
    Ok(())
}

/// Standard error through `eprint!`, which the test harness captures per
/// test, as it did the lines these events replace.
struct Eprint;

impl std::io::Write for Eprint {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        eprint!("{}", String::from_utf8_lossy(buf));
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// `weir: <message>`, with `warning: ` or `error: ` before warnings and
/// errors: the lines Weir printed before it logged through `tracing`.
struct Lines;

impl<S, N> FormatEvent<S, N> for Lines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let prefix = match *event.metadata().level() {
            Level::ERROR => "weir: error: ",
            Level::WARN => "weir: warning: ",
            _ => "weir: ",
        };
        writer.write_str(prefix)?;
        let mut message = MessageOnly(&mut writer, Ok(()));
        event.record(&mut message);
        message.1?;
        writeln!(writer)
    }
}

/// Writes an event's message, not its other fields (they are in the
/// message's text already; JSON lines carry them separately).
struct MessageOnly<'a, 'w>(&'a mut Writer<'w>, fmt::Result);

impl tracing::field::Visit for MessageOnly<'_, '_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn fmt::Debug) {
        if field.name() == "message" {
            self.1 = write!(self.0, "{value:?}");
        }
    }
}
