//! Helpers shared by Weir's examples: parsing input lines the way the
//! examples' Flink originals do, reporting bad lines instead of failing.
//!
//! Each example is an `[[example]]` target beside this file; run one with
//! `cargo run --release --example NAME -- ARGS`.

pub mod orders;

use std::fmt;

use weir::prelude::*;

/// Why a line could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadLine {
    /// 1-based line number in the input.
    pub line: u64,
    /// What was wrong.
    pub reason: String,
}

impl fmt::Display for BadLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "skipping line {}: {}", self.line, self.reason)
    }
}

/// Splits `line` on commas into exactly `n` trimmed fields.
pub fn fields(line: &str, n: usize) -> Result<Vec<&str>, String> {
    let fields: Vec<&str> = line.split(',').map(str::trim).collect();
    if fields.len() == n {
        Ok(fields)
    } else {
        Err(format!(
            "expected {n} comma-separated fields, found {}",
            fields.len()
        ))
    }
}

/// Parses an integer field, naming it in the error.
pub fn int(field: &str, name: &str) -> Result<i64, String> {
    field
        .parse::<i64>()
        .map_err(|_| format!("{name} '{field}' is not a whole number"))
}

/// Parses a decimal field, naming it in the error.
pub fn decimal(field: &str, name: &str) -> Result<f64, String> {
    field
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .ok_or_else(|| format!("{name} '{field}' is not a number"))
}

/// Parses `yyyy-MM-dd HH:mm:ss` (UTC) into ms since the epoch.
pub fn datetime(field: &str) -> Result<i64, String> {
    let bad = || format!("'{field}' is not a date like 2024-01-01 12:00:00");
    let (date, time) = field.trim().split_once(' ').ok_or_else(bad)?;
    let d: Vec<i64> = date
        .split('-')
        .map(|p| p.parse::<i64>())
        .collect::<Result<_, _>>()
        .map_err(|_| bad())?;
    let t: Vec<i64> = time
        .split(':')
        .map(|p| p.parse::<i64>())
        .collect::<Result<_, _>>()
        .map_err(|_| bad())?;
    let (&[y, mo, day], &[h, mi, s]) = (&d[..], &t[..]) else {
        return Err(bad());
    };
    if !(1..=12).contains(&mo)
        || !(1..=31).contains(&day)
        || h > 23
        || mi > 59
        || s > 59
        || h < 0
        || mi < 0
        || s < 0
    {
        return Err(bad());
    }
    Ok((days_from_civil(y, mo, day) * 86_400 + h * 3_600 + mi * 60 + s) * 1_000)
}

/// Formats ms since the epoch as `yyyy-MM-dd HH:mm:ss` (UTC).
pub fn format_datetime(ms: i64) -> String {
    let secs = ms.div_euclid(1_000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        rem / 3_600,
        rem % 3_600 / 60,
        rem % 60
    )
}

/// Formats a window `[start, end)` as `[yyyy-MM-dd HH:mm:ss, HH:mm:ss)`:
/// the end's date is left out when it is the start's, and written in full
/// otherwise (a window ending at midnight or at the end of time).
pub fn format_window(start_ms: i64, end_ms: i64) -> String {
    let (start, end) = (format_datetime(start_ms), format_datetime(end_ms));
    match (start.split_once(' '), end.split_once(' ')) {
        (Some((start_day, _)), Some((end_day, end_time))) if start_day == end_day => {
            format!("[{start}, {end_time})")
        }
        _ => format!("[{start}, {end})"),
    }
}

// Howard Hinnant's days-from-civil algorithm (proleptic Gregorian calendar).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// Parses lines with `parse`, reporting bad ones on stderr with their line
/// number and skipping them; comment (`#`) and blank lines are skipped
/// silently. Use as the body of a `flat_map` over the input's lines, at
/// parallelism 1 (chained to the source) so that line numbers and the
/// order of lines are the input's.
#[derive(Clone)]
pub struct LineParser<F> {
    parse: F,
    line: u64,
}

impl<F> LineParser<F> {
    /// A parser applying `parse` to each non-comment line.
    pub fn new(parse: F) -> Self {
        LineParser { parse, line: 0 }
    }

    /// Parses the next line: `Some(value)`, or `None` if skipped.
    pub fn next_line<T>(&mut self, line: &str) -> Option<T>
    where
        F: FnMut(&str) -> Result<T, String>,
    {
        self.line += 1;
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            return None;
        }
        match (self.parse)(trimmed) {
            Ok(v) => Some(v),
            Err(reason) => {
                eprintln!(
                    "{}",
                    BadLine {
                        line: self.line,
                        reason
                    }
                );
                None
            }
        }
    }
}

/// The usage an example prints for `--help`: its `//!` header (the module
/// doc of `source`, the example's own text), then the engine's flags.
pub fn usage(source: &str) -> String {
    let mut text = String::new();
    let mut in_code = false;
    for line in source.lines() {
        let Some(doc) = line.strip_prefix("//!") else {
            break;
        };
        let doc = doc.strip_prefix(' ').unwrap_or(doc);
        if doc.starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            text.push_str("    ");
        }
        text.push_str(doc);
        text.push('\n');
    }
    text.push_str(
        "\nEngine flags: -p N (parallelism), -D key=value (configuration, Flink's keys), \
         --config FILE (YAML),\n--from-savepoint PATH / -s PATH, \
         --allow-non-restored-state / -n, --help / -h.\n",
    );
    text
}

/// The environment of an example from its command line. `--help` or `-h`
/// prints the example's usage ([`usage`] of its `source`) and exits 0;
/// with no arguments at all an example that `needs_arguments` prints it on
/// stderr and exits 2 instead of guessing where its input is.
pub fn environment(
    source: &str,
    needs_arguments: bool,
) -> anyhow::Result<StreamExecutionEnvironment> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--help" || a == "-h") {
        print!("{}", usage(source));
        std::process::exit(0);
    }
    if args.is_empty() && needs_arguments {
        eprint!("{}", usage(source));
        std::process::exit(2);
    }
    Ok(StreamExecutionEnvironment::from_args_iter(args)?)
}

/// The examples' input: `--input FILE` (bounded), or a socket with
/// `--host HOST --port PORT` (default localhost:9999), the `nc -lk 9999`
/// workflow of Flink's tutorials.
pub fn text_input(env: &StreamExecutionEnvironment) -> anyhow::Result<DataStream<String>> {
    let args = env.args();
    Ok(match args.get("input") {
        Some(path) => env.read_text_file(path),
        None => {
            let port: u16 = args.get_parsed("port")?.unwrap_or(9999);
            env.socket_text_stream(args.get_or("host", "localhost"), port)
        }
    })
}

/// `key,n` lines as `(key, n)` pairs, bad lines reported and skipped (the
/// input of the tutorials' window examples).
pub fn key_value_pairs(
    env: &StreamExecutionEnvironment,
) -> anyhow::Result<DataStream<(String, i64)>> {
    let mut parser = LineParser::new(|line: &str| {
        let f = fields(line, 2)?;
        Ok((f[0].to_string(), int(f[1], "n")?))
    });
    Ok(
        text_input(env)?.flat_map(move |line: String, out: &mut Collector<(String, i64)>| {
            if let Some(pair) = parser.next_line(&line) {
                out.collect(pair);
            }
        }),
    )
}

/// Bounded out-of-orderness watermarks (`max_ts - bound - 1`), emitted
/// after every event instead of periodically. Over a file, which is read
/// faster than any watermark interval, this gives the result a person sees
/// typing the same lines into `nc` with Flink's periodic watermarks.
pub struct PunctuatedBoundedOutOfOrderness {
    max_ts: i64,
    bound_ms: i64,
}

impl PunctuatedBoundedOutOfOrderness {
    /// Tolerates records up to `bound` out of order.
    pub fn new(bound: Duration) -> Self {
        let bound_ms = bound.as_millis() as i64;
        PunctuatedBoundedOutOfOrderness {
            max_ts: i64::MIN + bound_ms + 1,
            bound_ms,
        }
    }
}

impl<T> WatermarkGenerator<T> for PunctuatedBoundedOutOfOrderness {
    fn on_event(&mut self, _e: &T, timestamp: i64, output: &mut WatermarkOutput) {
        self.max_ts = self.max_ts.max(timestamp);
        output.emit_watermark(self.max_ts - self.bound_ms - 1);
    }

    fn on_periodic_emit(&mut self, _output: &mut WatermarkOutput) {}
}

/// Bounded out-of-orderness: periodic over unbounded input, a socket or a
/// topic (Flink's `forBoundedOutOfOrderness`), punctuated over bounded
/// input, `--input FILE` or `--bounded` (see
/// [`PunctuatedBoundedOutOfOrderness`]).
pub fn bounded_out_of_orderness<T: 'static>(
    env: &StreamExecutionEnvironment,
    bound: Duration,
) -> WatermarkStrategy<T> {
    if env.args().has("input") || env.args().has("bounded") {
        WatermarkStrategy::for_generator(move |_| PunctuatedBoundedOutOfOrderness::new(bound))
    } else {
        WatermarkStrategy::for_bounded_out_of_orderness(bound)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_print_the_end_date_only_when_it_differs() {
        let ten = datetime("2024-05-01 10:00:00").unwrap();
        assert_eq!(
            format_window(ten, ten + 10_000),
            "[2024-05-01 10:00:00, 10:00:10)"
        );
        let midnight = datetime("2024-05-02 00:00:00").unwrap();
        assert_eq!(
            format_window(midnight - 10_000, midnight),
            "[2024-05-01 23:59:50, 2024-05-02 00:00:00)"
        );
        // The last window before the end of time.
        let end = datetime("9999-12-31 23:59:50").unwrap() + 10_000;
        assert_eq!(
            format_window(end - 10_000, end),
            "[9999-12-31 23:59:50, 10000-01-01 00:00:00)"
        );
    }

    #[test]
    fn datetimes_round_trip() {
        assert_eq!(datetime("1970-01-01 00:00:00"), Ok(0));
        assert_eq!(datetime("2024-02-29 12:34:56"), Ok(1_709_210_096_000));
        assert_eq!(format_datetime(1_709_210_096_000), "2024-02-29 12:34:56");
        assert!(datetime("2024-13-01 00:00:00").is_err());
        assert!(datetime("yesterday").is_err());
    }

    #[test]
    fn bad_lines_are_skipped_with_their_number() {
        let mut p = LineParser::new(|l: &str| int(l, "n"));
        assert_eq!(p.next_line("# comment"), None);
        assert_eq!(p.next_line("12"), Some(12));
        assert_eq!(p.next_line("x"), None);
        assert_eq!(p.line, 3);
    }
}
