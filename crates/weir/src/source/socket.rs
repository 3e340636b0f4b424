//! Lines of text from a TCP socket (Flink's `socketTextStream`), the source
//! of the `nc -lk 9999` workflow.

use std::io::{ErrorKind, Read};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::functions::{
    FunctionResult, RuntimeContext, SourceContext, SourceFunction, SourceStatus,
};

/// How long one poll waits for bytes before returning control to the task.
const READ_TIMEOUT: Duration = Duration::from_millis(50);

/// Reads delimited text from `host:port`.
///
/// As in Flink: a refused connection fails the job; when the server closes
/// the connection, the source reconnects after `retry_delay` while fewer
/// than `max_retry` attempts were made (`-1`: forever; `0`, the default:
/// never), and otherwise ends, which ends the job's input.
#[derive(Debug)]
pub struct SocketTextSource {
    host: String,
    port: u16,
    delimiter: u8,
    max_retry: i64,
    retry_delay: Duration,
    stream: Option<TcpStream>,
    pending: Vec<u8>,
    attempts: i64,
    reconnect_at: Option<Instant>,
    /// Records read so far (for warnings about bad bytes).
    lines_read: u64,
    /// Records that were not valid UTF-8.
    bad_lines: u64,
}

impl Clone for SocketTextSource {
    fn clone(&self) -> Self {
        SocketTextSource::new(&self.host, self.port)
            .with_delimiter(self.delimiter)
            .with_max_retry(self.max_retry)
            .with_retry_delay(self.retry_delay)
    }
}

impl SocketTextSource {
    /// Lines separated by `\n` from `host:port`, without reconnecting.
    pub fn new(host: &str, port: u16) -> Self {
        SocketTextSource {
            host: host.to_string(),
            port,
            delimiter: b'\n',
            max_retry: 0,
            retry_delay: Duration::from_millis(500),
            stream: None,
            pending: Vec::new(),
            attempts: 0,
            reconnect_at: None,
            lines_read: 0,
            bad_lines: 0,
        }
    }

    /// Records separated by `delimiter` instead of a newline.
    pub fn with_delimiter(mut self, delimiter: u8) -> Self {
        self.delimiter = delimiter;
        self
    }

    /// Reconnect attempts after the server closes (`-1`: forever).
    pub fn with_max_retry(mut self, max_retry: i64) -> Self {
        self.max_retry = max_retry;
        self
    }

    /// Wait before reconnecting (default 500 ms, as Flink).
    pub fn with_retry_delay(mut self, delay: Duration) -> Self {
        self.retry_delay = delay;
        self
    }

    fn connect(&mut self) -> FunctionResult {
        let stream = TcpStream::connect((self.host.as_str(), self.port)).map_err(|e| {
            // A refused connection means no server; other failures (an
            // unknown host, an unreachable network) need another remedy.
            let hint = if e.kind() == std::io::ErrorKind::ConnectionRefused {
                format!(" (is a server listening? e.g. `nc -lk {}`)", self.port)
            } else {
                String::new()
            };
            format!(
                "cannot connect to socket {}:{}: {e}{hint}",
                self.host, self.port
            )
        })?;
        stream.set_read_timeout(Some(READ_TIMEOUT))?;
        self.stream = Some(stream);
        Ok(())
    }

    fn emit_lines(&mut self, ctx: &mut SourceContext<'_, String>) {
        let mut start = 0;
        while let Some(pos) = self.pending[start..]
            .iter()
            .position(|b| *b == self.delimiter)
        {
            let end = start + pos;
            let line = self.line(start, end);
            ctx.collect(line);
            start = end + 1;
        }
        self.pending.drain(..start);
    }

    fn line(&mut self, start: usize, mut end: usize) -> String {
        // Flink strips the carriage return of "\r\n" line ends.
        if self.delimiter == b'\n' && end > start && self.pending[end - 1] == b'\r' {
            end -= 1;
        }
        self.lines_read += 1;
        let origin = format_args!("socket {}:{}", self.host, self.port);
        super::decode_line(
            &self.pending[start..end],
            &origin,
            self.lines_read,
            &mut self.bad_lines,
        )
    }
}

impl SourceFunction<String> for SocketTextSource {
    fn open(&mut self, _ctx: &RuntimeContext) -> FunctionResult {
        self.connect()
    }

    fn poll_next(&mut self, ctx: &mut SourceContext<'_, String>) -> FunctionResult<SourceStatus> {
        let Some(stream) = self.stream.as_mut() else {
            let due = self.reconnect_at.unwrap_or_else(Instant::now);
            let wait = due.saturating_duration_since(Instant::now());
            if !wait.is_zero() {
                std::thread::sleep(wait.min(READ_TIMEOUT));
                return Ok(SourceStatus::More);
            }
            self.connect()?;
            return Ok(SourceStatus::More);
        };
        let mut chunk = [0u8; 64 * 1024];
        match stream.read(&mut chunk) {
            Ok(0) => {
                // The server closed: flush a last unterminated line, as Flink does.
                if !self.pending.is_empty() {
                    ctx.collect(self.line(0, self.pending.len()));
                    self.pending.clear();
                }
                self.stream = None;
                self.attempts += 1;
                if self.max_retry == -1 || self.attempts < self.max_retry {
                    self.reconnect_at = Some(Instant::now() + self.retry_delay);
                    Ok(SourceStatus::More)
                } else {
                    Ok(SourceStatus::Finished)
                }
            }
            Ok(n) => {
                self.pending.extend_from_slice(&chunk[..n]);
                self.emit_lines(ctx);
                Ok(SourceStatus::More)
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                Ok(SourceStatus::More)
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => Ok(SourceStatus::More),
            Err(e) => Err(format!("reading socket {}:{}: {e}", self.host, self.port).into()),
        }
    }
}
