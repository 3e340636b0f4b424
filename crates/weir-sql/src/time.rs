//! Dates and timestamps as SQL writes them (`2020-04-15`,
//! `2020-04-15 08:05:00.000`), to and from days and milliseconds since the
//! epoch (UTC; the session time zone is UTC).

/// The wall clock, in milliseconds since the epoch.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
pub(crate) fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day since 1970-01-01: (year, month, day).
pub(crate) fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

fn digits(s: &str) -> Option<i64> {
    (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

/// `YYYY-MM-DD` as days since the epoch.
pub(crate) fn parse_date(s: &str) -> Option<i32> {
    let mut parts = s.trim().splitn(3, '-');
    let y = digits(parts.next()?)?;
    let m = digits(parts.next()?)?;
    let d = digits(parts.next()?)?;
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    let days = days_from_civil(y, m as u32, d as u32);
    // Rejects 2021-02-30 and the like.
    (civil_from_days(days) == (y, m as u32, d as u32)).then_some(days as i32)
}

/// `YYYY-MM-DD HH:MM[:SS[.fff]]` (or with `T`) as milliseconds since the
/// epoch.
pub(crate) fn parse_timestamp(s: &str) -> Option<i64> {
    let s = s.trim();
    let (date, time) = s.split_once([' ', 'T']).unwrap_or((s, "00:00:00"));
    let days = i64::from(parse_date(date)?);
    let (hms, frac) = time.split_once('.').unwrap_or((time, ""));
    let mut parts = hms.splitn(3, ':');
    let h = digits(parts.next()?)?;
    let mi = digits(parts.next()?)?;
    let sec = parts.next().map_or(Some(0), digits)?;
    if h > 23 || mi > 59 || sec > 59 {
        return None;
    }
    let ms = if frac.is_empty() {
        0
    } else {
        if frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        // Milliseconds: the first three digits, zero-padded.
        let mut f = frac.to_string();
        f.truncate(3);
        while f.len() < 3 {
            f.push('0');
        }
        f.parse::<i64>().ok()?
    };
    Some(((days * 24 + h) * 60 + mi) * 60_000 + sec * 1000 + ms)
}

/// A date as `YYYY-MM-DD`.
pub(crate) fn format_date(days: i32) -> String {
    let (y, m, d) = civil_from_days(i64::from(days));
    format!("{y:04}-{m:02}-{d:02}")
}

/// A timestamp as `YYYY-MM-DD HH:MM:SS.fff` (Flink's cast of a
/// `TIMESTAMP(3)` to a string).
pub(crate) fn format_timestamp(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let rem = ms.rem_euclid(86_400_000);
    let (y, m, d) = civil_from_days(days);
    let (h, mi, s, f) = (
        rem / 3_600_000,
        rem / 60_000 % 60,
        rem / 1000 % 60,
        rem % 1000,
    );
    format!("{y:04}-{m:02}-{d:02} {h:02}:{mi:02}:{s:02}.{f:03}")
}

/// The calendar fields of a timestamp (UTC).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fields {
    pub year: i64,
    pub month: u32,
    pub day: u32,
    pub hour: i64,
    pub minute: i64,
    pub second: i64,
    pub milli: i64,
}

/// The calendar fields of the timestamp `ms` (UTC).
pub(crate) fn fields(ms: i64) -> Fields {
    let rem = ms.rem_euclid(86_400_000);
    let (year, month, day) = civil_from_days(ms.div_euclid(86_400_000));
    Fields {
        year,
        month,
        day,
        hour: rem / 3_600_000,
        minute: rem / 60_000 % 60,
        second: rem / 1000 % 60,
        milli: rem % 1000,
    }
}

/// A timestamp formatted with a Java `SimpleDateFormat` pattern, as
/// Flink's `DATE_FORMAT` does (see [`DatePattern`]).
pub(crate) fn date_format(ms: i64, pattern: &str) -> Result<String, String> {
    let mut out = String::new();
    DatePattern::parse(pattern)?.format(ms, &mut out);
    Ok(out)
}

/// A Java `SimpleDateFormat` pattern as Flink's `DATE_FORMAT` reads it:
/// `yyyy`, `yy`, `MM`, `dd`, `HH`, `hh`, `mm`, `ss`, `SSS` (a run of a
/// letter pads to its length), `MMM`/`MMMM` and `EEE`/`EEEE` (English
/// month and day names, short or full), `a` (`AM`/`PM`), text in single
/// quotes (`''` is a quote, inside them or out) and other characters as
/// they are. Other letters are an error.
/// Parsed once, so that a constant pattern costs nothing per row.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DatePattern(Vec<Piece>);

#[derive(Debug, Clone, PartialEq)]
enum Piece {
    Text(String),
    /// A field, zero-padded to `width` digits.
    Field(DateField, usize),
    /// `yy`: the year's last two digits.
    ShortYear,
    /// The first `n` (at most three) digits of the milliseconds.
    Millis(usize),
    /// `EEE` (`Wed`) or, `full`, `EEEE` (`Wednesday`).
    DayName {
        full: bool,
    },
    /// `MMM` (`Apr`) or, `full`, `MMMM` (`April`).
    MonthName {
        full: bool,
    },
    /// `a`: `AM` or `PM`.
    HalfDay,
    /// `h`: the hour of the half day, 1 to 12, padded to `width` digits.
    Hour12(usize),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum DateField {
    Year,
    Month,
    Day,
    Hour,
    Minute,
    Second,
}

impl DatePattern {
    pub fn parse(pattern: &str) -> Result<DatePattern, String> {
        let chars: Vec<char> = pattern.chars().collect();
        let mut pieces = Vec::new();
        let mut text = String::new();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            let run = chars[i..].iter().take_while(|&&x| x == c).count();
            let field = match c {
                '\'' if chars.get(i + 1) == Some(&'\'') => {
                    // '' is a quote.
                    text.push('\'');
                    i += 2;
                    continue;
                }
                '\'' => {
                    // Quoted text, in which '' is a quote too.
                    i += 1;
                    loop {
                        match chars.get(i) {
                            None => {
                                return Err(format!(
                                    "an unclosed quote in the pattern '{pattern}'"
                                ))
                            }
                            Some('\'') if chars.get(i + 1) == Some(&'\'') => {
                                text.push('\'');
                                i += 2;
                            }
                            Some('\'') => break,
                            Some(c) => {
                                text.push(*c);
                                i += 1;
                            }
                        }
                    }
                    i += 1;
                    continue;
                }
                'y' if run == 2 => Piece::ShortYear,
                'y' => Piece::Field(DateField::Year, run),
                'M' if run >= 3 => Piece::MonthName { full: run > 3 },
                'M' => Piece::Field(DateField::Month, run),
                'E' => Piece::DayName { full: run > 3 },
                'a' => Piece::HalfDay,
                'h' => Piece::Hour12(run),
                'd' => Piece::Field(DateField::Day, run),
                'H' => Piece::Field(DateField::Hour, run),
                'm' => Piece::Field(DateField::Minute, run),
                's' => Piece::Field(DateField::Second, run),
                'S' => Piece::Millis(run.min(3)),
                c if c.is_ascii_alphabetic() => {
                    return Err(format!(
                        "the pattern letter '{c}' (in '{pattern}') is not supported: yyyy, yy, MM, MMM, dd, EEE, HH, hh, a, mm, ss, SSS are"
                    ))
                }
                c => {
                    text.extend(std::iter::repeat_n(c, run));
                    i += run;
                    continue;
                }
            };
            if !text.is_empty() {
                pieces.push(Piece::Text(std::mem::take(&mut text)));
            }
            pieces.push(field);
            i += run;
        }
        if !text.is_empty() {
            pieces.push(Piece::Text(text));
        }
        Ok(DatePattern(pieces))
    }

    /// How many milliseconds its finest field spans: timestamps in the
    /// same span of that many milliseconds (since the epoch) format alike.
    pub fn granularity(&self) -> i64 {
        self.0
            .iter()
            .map(|piece| match piece {
                Piece::Text(_) => 86_400_000,
                Piece::Millis(_) => 1,
                Piece::ShortYear | Piece::DayName { .. } | Piece::MonthName { .. } => 86_400_000,
                Piece::HalfDay | Piece::Hour12(_) => 3_600_000,
                Piece::Field(field, _) => match field {
                    DateField::Second => 1000,
                    DateField::Minute => 60_000,
                    DateField::Hour => 3_600_000,
                    DateField::Year | DateField::Month | DateField::Day => 86_400_000,
                },
            })
            .min()
            .unwrap_or(86_400_000)
    }

    /// The timestamp (milliseconds since the epoch) that `text` writes in
    /// this pattern, all of it read; fields the pattern has not are those
    /// of 1970-01-01 00:00:00. A field written with two letters or more
    /// takes that many digits (`yyyy` four, `MM` two), one of one letter
    /// one or two; `yy` is a year of 2000–2099.
    pub fn parse_text(&self, text: &str) -> Option<i64> {
        let (mut year, mut month, mut day) = (1970, 1, 1);
        let (mut hour, mut minute, mut second, mut milli) = (0, 0, 0, 0);
        let mut rest = text;
        for piece in &self.0 {
            match piece {
                Piece::Text(t) => rest = rest.strip_prefix(t.as_str())?,
                Piece::ShortYear => {
                    let (v, r) = take_digits(rest, 2, 2)?;
                    year = 2000 + v;
                    rest = r;
                }
                // Names and the half day are written, not read.
                Piece::DayName { .. }
                | Piece::MonthName { .. }
                | Piece::HalfDay
                | Piece::Hour12(_) => return None,
                Piece::Millis(n) => {
                    let (v, r) = take_digits(rest, *n, *n)?;
                    milli = v * [100, 10, 1][*n - 1];
                    rest = r;
                }
                Piece::Field(field, width) => {
                    let (least, most) = if *width == 1 {
                        (1, 2)
                    } else {
                        (*width, *width)
                    };
                    let (v, r) = take_digits(rest, least, most)?;
                    rest = r;
                    match field {
                        DateField::Year => year = v,
                        DateField::Month => month = v,
                        DateField::Day => day = v,
                        DateField::Hour => hour = v,
                        DateField::Minute => minute = v,
                        DateField::Second => second = v,
                    }
                }
            }
        }
        if !rest.is_empty() || hour > 23 || minute > 59 || second > 59 {
            return None;
        }
        let (m, d) = (u32::try_from(month).ok()?, u32::try_from(day).ok()?);
        if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
            return None;
        }
        let days = days_from_civil(year, m, d);
        // Rejects 2021-02-30 and the like.
        if civil_from_days(days) != (year, m, d) {
            return None;
        }
        Some(((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + milli)
    }

    /// Appends `ms` formatted to `out`.
    pub fn format(&self, ms: i64, out: &mut String) {
        let f = fields(ms);
        for piece in &self.0 {
            match piece {
                Piece::Text(t) => out.push_str(t),
                Piece::ShortYear => padded(out, f.year.rem_euclid(100), 2),
                Piece::Millis(n) => {
                    let digits = [f.milli / 100, f.milli / 10 % 10, f.milli % 10];
                    out.extend(digits[..*n].iter().map(|d| char::from(b'0' + *d as u8)));
                }
                Piece::DayName { full } => {
                    // 1970-01-01 was a Thursday.
                    let day = DAYS[(ms.div_euclid(86_400_000) + 3).rem_euclid(7) as usize];
                    out.push_str(if *full { day } else { &day[..3] });
                }
                Piece::MonthName { full } => {
                    let month = MONTHS[f.month as usize - 1];
                    out.push_str(if *full { month } else { &month[..3] });
                }
                Piece::HalfDay => out.push_str(if f.hour < 12 { "AM" } else { "PM" }),
                Piece::Hour12(width) => padded(out, (f.hour + 11) % 12 + 1, *width),
                Piece::Field(field, width) => {
                    let v = match field {
                        DateField::Year => f.year,
                        DateField::Month => i64::from(f.month),
                        DateField::Day => i64::from(f.day),
                        DateField::Hour => f.hour,
                        DateField::Minute => f.minute,
                        DateField::Second => f.second,
                    };
                    padded(out, v, *width);
                }
            }
        }
    }
}

const DAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// The number written by the first `least` to `most` digits of `s` (as
/// many as there are), and the text after them.
fn take_digits(s: &str, least: usize, most: usize) -> Option<(i64, &str)> {
    let n = s.bytes().take(most).take_while(u8::is_ascii_digit).count();
    if n < least {
        return None;
    }
    Some((s[..n].parse().ok()?, &s[n..]))
}

/// A new identity for a compiled `DATE_FORMAT`'s cache.
pub(crate) fn new_format_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

thread_local! {
    /// The last text each compiled `DATE_FORMAT` made on this thread, and
    /// the span of time it is the text of.
    static FORMATTED: std::cell::RefCell<Vec<(u64, i64, crate::value::Value)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// The text of span `span` for the `DATE_FORMAT` `id`: the one it made
/// last on this thread if that was of the same span, else `make`'s.
pub(crate) fn formatted(
    id: u64,
    span: i64,
    make: impl FnOnce() -> crate::value::Value,
) -> crate::value::Value {
    FORMATTED.with_borrow_mut(|last| {
        if let Some((_, at, text)) = last.iter_mut().find(|(i, ..)| *i == id) {
            if *at != span {
                *at = span;
                *text = make();
            }
            return text.clone();
        }
        // Formats of statements long planned are dropped, not kept for
        // ever by a shell that plans one statement after another.
        if last.len() >= 64 {
            last.clear();
        }
        let text = make();
        last.push((id, span, text.clone()));
        text
    })
}

/// Appends `v` zero-padded to `width` digits (as `{v:0width$}` does).
fn padded(out: &mut String, v: i64, width: usize) {
    if v < 0 {
        out.push_str(&format!("{v:0width$}"));
        return;
    }
    let mut digits = [0u8; 20];
    let mut n = 0;
    let mut rest = v;
    loop {
        digits[n] = b'0' + (rest % 10) as u8;
        n += 1;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    out.extend(std::iter::repeat_n('0', width.saturating_sub(n)));
    out.extend(digits[..n].iter().rev().map(|d| char::from(*d)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_timestamps_round_trip() {
        assert_eq!(parse_date("1970-01-01"), Some(0));
        assert_eq!(parse_date("2020-04-15"), Some(18_367));
        assert_eq!(parse_date("2021-02-30"), None);
        assert_eq!(parse_date("1969-12-31"), Some(-1));
        assert_eq!(format_date(18_367), "2020-04-15");
        let ts = parse_timestamp("2020-04-15 08:05:00").unwrap();
        assert_eq!(ts, 1_586_937_900_000);
        assert_eq!(format_timestamp(ts), "2020-04-15 08:05:00.000");
        assert_eq!(parse_timestamp("2020-04-15T08:05:01.5"), Some(ts + 1_500));
        assert_eq!(format_timestamp(-1), "1969-12-31 23:59:59.999");
        assert_eq!(parse_timestamp("2020-04-15 24:00:00"), None);
        for days in [-800_000, -1, 0, 59, 60, 365, 11_016, 2_932_896] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
    }

    /// A format's kept text is its text only for the span it was made
    /// for, and each format keeps its own.
    #[test]
    fn a_kept_text_is_for_its_span_and_its_format() {
        let (a, b) = (new_format_id(), new_format_id());
        let text = |s: &str| crate::value::Value::string(s);
        assert_eq!(formatted(a, 1, || text("one")), text("one"));
        assert_eq!(formatted(a, 1, || text("other")), text("one"));
        assert_eq!(formatted(b, 1, || text("b")), text("b"));
        assert_eq!(formatted(a, 2, || text("two")), text("two"));
        assert_eq!(formatted(a, 1, || text("one again")), text("one again"));
        assert_eq!(formatted(b, 1, || text("not b")), text("b"));
    }

    #[test]
    fn date_format_follows_java_patterns() {
        let ms = parse_timestamp("2023-11-04 07:05:09.042").unwrap();
        assert_eq!(date_format(ms, "yyyy-MM-dd").unwrap(), "2023-11-04");
        assert_eq!(date_format(ms, "HH:mm").unwrap(), "07:05");
        assert_eq!(
            date_format(ms, "yy/M/d H:m:s.SSS").unwrap(),
            "23/11/4 7:5:9.042"
        );
        assert_eq!(date_format(ms, "yyyy'T'HH''").unwrap(), "2023T07'");
        assert_eq!(
            date_format(ms, "EEEE, MMMM d, h:mm a").unwrap(),
            "Saturday, November 4, 7:05 AM"
        );
        assert_eq!(date_format(ms, "EEE MMM hh").unwrap(), "Sat Nov 07");
        assert!(date_format(ms, "G").unwrap_err().contains("'G'"));
        assert!(date_format(ms, "'open").unwrap_err().contains("unclosed"));
        // Timestamps within one span of the finest field format alike.
        for (pattern, span) in [
            ("yyyy-MM-dd", 86_400_000),
            ("yy'T'HH", 3_600_000),
            ("HH:mm", 60_000),
            ("mm:ss", 1000),
            ("ss.SSS", 1),
            ("'day'", 86_400_000),
        ] {
            let p = DatePattern::parse(pattern).unwrap();
            assert_eq!(p.granularity(), span, "{pattern}");
            for t in [ms, -ms, 0, -1, 86_399_999] {
                let start = t.div_euclid(span) * span;
                for u in [start, start + span - 1] {
                    assert_eq!(
                        date_format(u, pattern),
                        date_format(t, pattern),
                        "{pattern}"
                    );
                }
                if pattern != "'day'" {
                    assert_ne!(
                        date_format(start - 1, pattern),
                        date_format(start, pattern),
                        "{pattern}"
                    );
                }
            }
        }
        // Runs longer than the digits pad (three Ms or more are a
        // name); milliseconds are cut.
        assert_eq!(
            date_format(ms, "yyyyy MMM ddd SS S").unwrap(),
            "02023 Nov 004 04 0"
        );
        assert_eq!(date_format(ms, "'it''s' yyyy").unwrap(), "it's 2023");
        // A year before year 0 is written as Java's pattern would pad it.
        let ancient = -70_000_000_000_000;
        let year = fields(ancient).year;
        assert!(year < 0, "{year}");
        assert_eq!(date_format(ancient, "yyyy").unwrap(), format!("{year:04}"));
        let f = fields(-1);
        assert_eq!(
            (f.year, f.month, f.day, f.hour, f.minute, f.second, f.milli),
            (1969, 12, 31, 23, 59, 59, 999)
        );
    }
}
