//! Date and time built-ins: `TIMESTAMPADD`, `TIMESTAMPDIFF`, `FLOOR` and
//! `CEIL` of a time `TO` a unit, `TO_TIMESTAMP`, `TO_DATE`,
//! `UNIX_TIMESTAMP`, `FROM_UNIXTIME`, the clock's `CURRENT_TIMESTAMP`,
//! `NOW`, `CURRENT_ROW_TIMESTAMP`, `LOCALTIMESTAMP` and `CURRENT_DATE`,
//! and the calendar fields `EXTRACT` reads beyond the date's and the
//! time's own (day of week and of year, ISO week, quarter).
//!
//! Months are added and counted as Calcite does (Flink runs its rules): a
//! day past the month's end is its last day, and a month counts only once
//! its day and time of day are reached. All in UTC, the session time zone
//! here.

use std::sync::Arc;

use sqlparser::ast::{DateTimeField, Expr, Spanned};

use super::{int, strict, text, Call, Kind};
use crate::error::{position, SqlError};
use crate::expr::{Compiled, Shape};
use crate::time::{civil_from_days, days_from_civil, DatePattern};
use crate::types::SqlType;
use crate::value::Value;

const DAY: i64 = 86_400_000;

/// A unit of time that `TIMESTAMPADD`, `TIMESTAMPDIFF` and `FLOOR … TO`
/// count in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TimeUnit {
    Millisecond,
    Second,
    Minute,
    Hour,
    Day,
    Week,
    Month,
    Quarter,
    Year,
}

impl TimeUnit {
    fn named(name: &str) -> Option<TimeUnit> {
        Some(match name.to_ascii_uppercase().as_str() {
            "MILLISECOND" => TimeUnit::Millisecond,
            "SECOND" => TimeUnit::Second,
            "MINUTE" => TimeUnit::Minute,
            "HOUR" => TimeUnit::Hour,
            "DAY" => TimeUnit::Day,
            "WEEK" => TimeUnit::Week,
            "MONTH" => TimeUnit::Month,
            "QUARTER" => TimeUnit::Quarter,
            "YEAR" => TimeUnit::Year,
            _ => return None,
        })
    }

    /// The unit of `FLOOR(x TO field)`.
    pub(crate) fn of_field(field: &DateTimeField) -> Option<TimeUnit> {
        Some(match field {
            DateTimeField::Millisecond => TimeUnit::Millisecond,
            DateTimeField::Second => TimeUnit::Second,
            DateTimeField::Minute => TimeUnit::Minute,
            DateTimeField::Hour => TimeUnit::Hour,
            DateTimeField::Day => TimeUnit::Day,
            DateTimeField::Week(None) => TimeUnit::Week,
            DateTimeField::Month => TimeUnit::Month,
            DateTimeField::Quarter => TimeUnit::Quarter,
            DateTimeField::Year => TimeUnit::Year,
            _ => return None,
        })
    }

    /// Its length, for a unit of fixed length.
    fn millis(self) -> Option<i64> {
        Some(match self {
            TimeUnit::Millisecond => 1,
            TimeUnit::Second => 1000,
            TimeUnit::Minute => 60_000,
            TimeUnit::Hour => 3_600_000,
            TimeUnit::Day => DAY,
            TimeUnit::Week => 7 * DAY,
            _ => return None,
        })
    }

    /// Its months, for a unit of months.
    fn months(self) -> i64 {
        match self {
            TimeUnit::Quarter => 3,
            TimeUnit::Year => 12,
            _ => 1,
        }
    }

    /// Whether a DATE moved by it is still a date.
    fn whole_days(self) -> bool {
        self.millis().is_none_or(|ms| ms % DAY == 0)
    }
}

pub(super) fn compile(call: &Call) -> Result<Option<Compiled>, SqlError> {
    Ok(Some(match call.name {
        "TIMESTAMPADD" => timestamp_add(call)?,
        "TIMESTAMPDIFF" => timestamp_diff(call)?,
        "TO_TIMESTAMP" => parsed(call, SqlType::Timestamp, Value::Timestamp)?,
        "TO_DATE" => parsed(call, SqlType::Date, |ms| {
            Value::Date(ms.div_euclid(DAY) as i32)
        })?,
        "UNIX_TIMESTAMP" if call.exprs.is_empty() => clock(call, SqlType::BigInt, |ms| {
            Value::BigInt(ms.div_euclid(1000))
        })?,
        // Java's long division, and Flink's answer for text it cannot
        // read: the smallest BIGINT.
        "UNIX_TIMESTAMP" => {
            let args = call.args(1..=2)?;
            let read = reader(call, &args)?;
            strict(&args[..1], SqlType::BigInt, move |v| {
                Ok(Value::BigInt(
                    read(text(&v[0]))?.map_or(i64::MIN, |ms| ms / 1000),
                ))
            })
        }
        "FROM_UNIXTIME" => from_unixtime(call)?,
        // Of text (read in UTC, the session time zone), or of a number of
        // milliseconds alone; of a number and its precision, the
        // expression compiler's.
        "TO_TIMESTAMP_LTZ" if call.exprs.len() == 1 || text_first(call)? => {
            let args = call.args(1..=2)?;
            if args[0].ty == SqlType::String {
                parsed(call, SqlType::TimestampLtz, Value::TimestampLtz)?
            } else {
                call.expect(&args[0], 0, Kind::Number)?;
                strict(&args, SqlType::TimestampLtz, |v| {
                    let ms = v[0].as_i64().or_else(|| v[0].as_f64().map(|f| f as i64));
                    Ok(ms.map_or(Value::Null, Value::TimestampLtz))
                })
            }
        }
        // `PROCTIME()`: the wall-clock time a row is processed at.
        "CURRENT_TIMESTAMP" | "NOW" | "CURRENT_ROW_TIMESTAMP" | "PROCTIME" => {
            clock(call, SqlType::TimestampLtz, Value::TimestampLtz)?
        }
        "LOCALTIMESTAMP" => clock(call, SqlType::Timestamp, Value::Timestamp)?,
        "CURRENT_DATE" => clock(call, SqlType::Date, |ms| {
            Value::Date(ms.div_euclid(DAY) as i32)
        })?,
        _ => return Ok(None),
    }))
}

/// Whether a call's first argument is a STRING.
fn text_first(call: &Call) -> Result<bool, SqlError> {
    match call.exprs.first() {
        Some(e) => Ok(crate::expr::compile(e, call.scope)?.ty == SqlType::String),
        None => Ok(false),
    }
}

/// The milliseconds of a DATE (its midnight) or a timestamp.
fn millis(v: &Value) -> i64 {
    match v {
        Value::Date(d) => i64::from(*d) * DAY,
        other => other.as_i64().unwrap_or(0),
    }
}

/// A time of type `ty` at `ms`.
fn time_value(ty: SqlType, ms: i64) -> Value {
    match ty {
        SqlType::Date => Value::Date(ms.div_euclid(DAY) as i32),
        SqlType::TimestampLtz => Value::TimestampLtz(ms),
        _ => Value::Timestamp(ms),
    }
}

/// The unit named by a call's first argument (`TIMESTAMPADD(MINUTE, …)`).
fn unit_argument(call: &Call) -> Result<TimeUnit, SqlError> {
    let named = match call.exprs.first() {
        Some(Expr::Identifier(id)) => TimeUnit::named(&id.value),
        _ => None,
    };
    named.ok_or_else(|| {
        call.error(format!(
            "{}'s first argument is a unit: SECOND, MINUTE, HOUR, DAY, WEEK, MONTH, QUARTER or YEAR",
            call.name
        ))
    })
}

/// The arguments after the unit, compiled and checked.
fn after_unit(call: &Call, kinds: [Kind; 2]) -> Result<Vec<Compiled>, SqlError> {
    call.arity(3..=3)?;
    let args = call.exprs[1..]
        .iter()
        .map(|e| crate::expr::compile(e, call.scope))
        .collect::<Result<Vec<_>, _>>()?;
    for (i, (c, kind)) in args.iter().zip(kinds).enumerate() {
        call.expect(c, i + 1, kind)?;
    }
    Ok(args)
}

/// `TIMESTAMPADD(unit, n, t)`: `t` moved by `n` units, of `t`'s type (a
/// DATE moved by hours or less is a TIMESTAMP).
fn timestamp_add(call: &Call) -> Result<Compiled, SqlError> {
    let unit = unit_argument(call)?;
    let args = after_unit(call, [Kind::Integer, Kind::Time])?;
    let ty = match args[1].ty {
        SqlType::Date if !unit.whole_days() => SqlType::Timestamp,
        SqlType::Null => SqlType::Timestamp,
        other => other,
    };
    Ok(strict(&args, ty, move |v| {
        let (n, at) = (int(&v[0]), millis(&v[1]));
        let moved = match unit.millis() {
            Some(length) => n
                .checked_mul(length)
                .and_then(|d| at.checked_add(d))
                .ok_or_else(|| format!("TIMESTAMPADD({unit:?}, {n}, …) overflows"))?,
            None => add_months(at, n.saturating_mul(unit.months())),
        };
        Ok(time_value(ty, moved))
    }))
}

/// `TIMESTAMPDIFF(unit, a, b)`: how many whole units from `a` to `b`, an
/// INT (negative when `b` is earlier).
fn timestamp_diff(call: &Call) -> Result<Compiled, SqlError> {
    let unit = unit_argument(call)?;
    let args = after_unit(call, [Kind::Time, Kind::Time])?;
    Ok(strict(&args, SqlType::Int, move |v| {
        let (a, b) = (millis(&v[0]), millis(&v[1]));
        let n = match unit.millis() {
            Some(length) => (b - a) / length,
            None => months_between(b, a) / unit.months(),
        };
        Ok(Value::Int(n as i32))
    }))
}

/// `ms` moved by `n` months, keeping its time of day; a day past the end
/// of the month is its last day.
fn add_months(ms: i64, n: i64) -> i64 {
    let (days, time) = (ms.div_euclid(DAY), ms.rem_euclid(DAY));
    add_months_to_day(days, n) * DAY + time
}

fn add_months_to_day(days: i64, n: i64) -> i64 {
    let (y, m, d) = civil_from_days(days);
    let total = y * 12 + i64::from(m) - 1 + n;
    let (y, m) = (total.div_euclid(12), total.rem_euclid(12) as u32 + 1);
    days_from_civil(y, m, d.min(days_in_month(y, m)))
}

fn days_in_month(y: i64, m: u32) -> u32 {
    let (ny, nm) = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
    (days_from_civil(ny, nm, 1) - days_from_civil(y, m, 1)) as u32
}

/// Whole months from day `d1` to day `d0` (Calcite's rule: a month counts
/// once its day is reached, the last day of a shorter month standing for
/// the days it lacks).
fn months_between_days(d0: i64, d1: i64) -> i64 {
    if d0 < d1 {
        return -months_between_days(d1, d0);
    }
    let mut m = (d0 - d1) / 31;
    loop {
        if add_months_to_day(d1, m) >= d0 || add_months_to_day(d1, m + 1) > d0 {
            return m;
        }
        m += 1;
    }
}

/// Whole months from `t1` to `t0` (milliseconds): the days' months, one
/// less when `t0` falls on the month's day but before `t1`'s time of day.
/// As in Calcite, that holds in both directions, so a span just short of
/// a month backwards counts two.
fn months_between(t0: i64, t1: i64) -> i64 {
    let (d0, ms0) = (t0.div_euclid(DAY), t0.rem_euclid(DAY));
    let (d1, ms1) = (t1.div_euclid(DAY), t1.rem_euclid(DAY));
    let mut months = months_between_days(d0, d1);
    if add_months_to_day(d1, months) == d0 && ms0 < ms1 {
        months -= 1;
    }
    months
}

/// `FLOOR(t TO unit)` or `CEIL(t TO unit)`, of `t`'s type. Weeks start
/// on Sunday.
pub(crate) fn ceil_floor_time(
    x: Compiled,
    unit: TimeUnit,
    ceil: bool,
    at: &Expr,
) -> Result<Compiled, SqlError> {
    if !(x.ty.is_timestamp() || x.ty == SqlType::Date) {
        return Err(SqlError::validation(
            format!("{at} is {} where a DATE or TIMESTAMP is expected", x.ty),
            position(at.span()),
        ));
    }
    let ty = x.ty;
    // To a week or longer, Flink rounds the date up and drops the time of
    // day (Calcite's rule): `CEIL(TIMESTAMP '2020-04-01 00:00:01' TO
    // MONTH)` is 2020-04-01 00:00.
    let by_date = unit.millis().is_none_or(|ms| ms > DAY);
    Ok(strict(&[x], ty, move |v| {
        let ms = millis(&v[0]);
        let ms = if ceil && by_date {
            ms.div_euclid(DAY) * DAY
        } else {
            ms
        };
        let floor = floor_time(ms, unit);
        // And a quarter's first day rounds up to the next quarter's,
        // unless it is New Year's Day (so Flink has it).
        let at_start = if ceil && unit == TimeUnit::Quarter {
            let (_, m, d) = civil_from_days(ms.div_euclid(DAY));
            m == 1 && d == 1
        } else {
            floor == ms
        };
        let moved = if !ceil || at_start {
            floor
        } else {
            match unit.millis() {
                Some(length) => floor + length,
                None => add_months(floor, unit.months()),
            }
        };
        Ok(time_value(ty, moved))
    }))
}

fn floor_time(ms: i64, unit: TimeUnit) -> i64 {
    let days = ms.div_euclid(DAY);
    match unit {
        // 1970-01-01 was a Thursday, four days after a Sunday.
        TimeUnit::Week => (days - (days + 4).rem_euclid(7)) * DAY,
        TimeUnit::Month | TimeUnit::Quarter | TimeUnit::Year => {
            let (y, m, _) = civil_from_days(days);
            let first = match unit {
                TimeUnit::Month => m,
                TimeUnit::Quarter => (m - 1) / 3 * 3 + 1,
                _ => 1,
            };
            days_from_civil(y, first, 1) * DAY
        }
        fixed => {
            let length = fixed.millis().unwrap_or(1);
            ms - ms.rem_euclid(length)
        }
    }
}

/// The day of the week, Sunday 1 to Saturday 7.
pub(crate) fn day_of_week(ms: i64) -> i64 {
    (ms.div_euclid(DAY) + 4).rem_euclid(7) + 1
}

/// The day of the year, from 1.
pub(crate) fn day_of_year(ms: i64) -> i64 {
    let days = ms.div_euclid(DAY);
    let (y, _, _) = civil_from_days(days);
    days - days_from_civil(y, 1, 1) + 1
}

/// The ISO 8601 week of the year (weeks start on Monday; week 1 holds
/// the year's first Thursday).
pub(crate) fn iso_week(ms: i64) -> i64 {
    let days = ms.div_euclid(DAY);
    let weekday = (days + 3).rem_euclid(7) + 1;
    let thursday = days - weekday + 4;
    let (y, _, _) = civil_from_days(thursday);
    (thursday - days_from_civil(y, 1, 1)) / 7 + 1
}

pub(crate) fn quarter(ms: i64) -> i64 {
    let (_, m, _) = civil_from_days(ms.div_euclid(DAY));
    i64::from((m - 1) / 3 + 1)
}

/// How a call reads its text argument (with the pattern of its second
/// argument, if it has one): the milliseconds it writes, or `None` for
/// text that does not read as a time.
type Reader = Arc<dyn Fn(&str) -> Result<Option<i64>, String> + Send + Sync>;

fn reader(call: &Call, args: &[Compiled]) -> Result<Reader, SqlError> {
    call.expect(&args[0], 0, Kind::Text)?;
    let Some(pattern) = args.get(1) else {
        return Ok(Arc::new(|s| Ok(default_time(s))));
    };
    call.expect(pattern, 1, Kind::Text)?;
    // Text the pattern does not read is read as Flink's default format
    // does (`2020-4-5` under `yyyy-MM-dd`), as Flink falls back to it.
    if let Shape::Constant(Value::String(p)) = &pattern.shape {
        let parsed = DatePattern::parse(p)
            .map_err(|e| SqlError::validation(e, position(call.exprs[1].span())))?;
        return Ok(Arc::new(move |s| {
            Ok(parsed.parse_text(s).or_else(|| default_time(s)))
        }));
    }
    Err(call.error(format!("{}'s pattern must be a constant", call.name)))
}

/// `yyyy-MM-dd[ HH:mm[:ss[.SSS]]]`, with no space around it and no `T`.
fn default_time(s: &str) -> Option<i64> {
    if s.trim() != s || s.contains('T') {
        return None;
    }
    crate::time::parse_timestamp(s)
}

/// `TO_TIMESTAMP(text [, pattern])`, `TO_DATE(text [, pattern])`: NULL
/// for text that does not read as a time.
fn parsed(call: &Call, ty: SqlType, make: fn(i64) -> Value) -> Result<Compiled, SqlError> {
    let args = call.args(1..=2)?;
    let read = reader(call, &args)?;
    Ok(strict(&args[..1], ty, move |v| {
        Ok(read(text(&v[0]))?.map_or(Value::Null, make))
    }))
}

/// `FROM_UNIXTIME(seconds [, pattern])`: the time as text, by default
/// `yyyy-MM-dd HH:mm:ss`.
fn from_unixtime(call: &Call) -> Result<Compiled, SqlError> {
    let args = call.args(1..=2)?;
    call.expect(&args[0], 0, Kind::Integer)?;
    let pattern = match args.get(1) {
        None => "yyyy-MM-dd HH:mm:ss".to_string(),
        Some(Compiled {
            shape: Shape::Constant(Value::String(p)),
            ..
        }) => p.to_string(),
        Some(_) => return Err(call.error("FROM_UNIXTIME's pattern must be a constant")),
    };
    let pattern = DatePattern::parse(&pattern).map_err(|e| SqlError::validation(e, call.at))?;
    Ok(strict(&args[..1], SqlType::String, move |v| {
        let mut out = String::with_capacity(20);
        pattern.format(int(&v[0]).saturating_mul(1000), &mut out);
        Ok(Value::string(&out))
    }))
}

/// A reading of the wall clock as each row is processed: never a
/// constant, so never folded.
fn clock(call: &Call, ty: SqlType, make: fn(i64) -> Value) -> Result<Compiled, SqlError> {
    call.arity(0..=0)?;
    if crate::expr::folding() {
        return Err(call.error("not a constant"));
    }
    Ok(Compiled {
        shape: Shape::Computed,
        eval: Arc::new(move |_| Ok(make(crate::time::now_ms()))),
        ty,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> i64 {
        crate::time::parse_timestamp(s).expect("a timestamp")
    }

    #[test]
    fn months_are_counted_as_calcite_counts_them() {
        let cases = [
            ("2020-04-15 08:00:01.250", "2020-04-15 08:00:00", -1),
            ("2020-02-29 23:59:59.999", "2020-04-15 08:00:00", 1),
            ("1969-12-31 12:30:00", "2020-04-15 08:00:00", 603),
            ("2021-01-03 00:00:00", "2020-04-15 08:00:00", -8),
            ("2020-04-15 09:00:00", "2020-03-15 08:00:00", -2),
            ("2020-03-15 08:00:00", "2020-04-15 07:00:00", 0),
            ("2020-01-31 00:00:00", "2020-02-29 00:00:00", 1),
            ("2020-02-29 00:00:00", "2020-01-31 00:00:00", -1),
        ];
        for (from, to, months) in cases {
            assert_eq!(months_between(at(to), at(from)), months, "{from} to {to}");
        }
        assert_eq!(
            months_between(at("2020-04-15 08:00:00"), at("2021-04-15 09:00:00")) / 12,
            -1
        );
    }

    #[test]
    fn months_added_stop_at_the_end_of_the_month() {
        assert_eq!(
            add_months(at("2020-02-29 23:59:59.999"), 1),
            at("2020-03-29 23:59:59.999")
        );
        assert_eq!(
            add_months(at("2020-02-29 00:00:00"), -12),
            at("2019-02-28 00:00:00")
        );
        assert_eq!(
            add_months(at("2020-11-30 00:00:00"), 3),
            at("2021-02-28 00:00:00")
        );
        assert_eq!(
            add_months(at("1969-12-31 12:30:00"), 1),
            at("1970-01-31 12:30:00")
        );
    }

    #[test]
    fn floors_and_fields() {
        let t = at("2020-04-15 08:00:01.250");
        assert_eq!(floor_time(t, TimeUnit::Week), at("2020-04-12 00:00:00"));
        assert_eq!(floor_time(t, TimeUnit::Quarter), at("2020-04-01 00:00:00"));
        assert_eq!(floor_time(t, TimeUnit::Second), at("2020-04-15 08:00:01"));
        assert_eq!(
            floor_time(at("1969-12-31 12:30:00"), TimeUnit::Hour),
            at("1969-12-31 12:00:00")
        );
        assert_eq!(day_of_week(t), 4);
        assert_eq!(day_of_year(t), 106);
        assert_eq!(iso_week(t), 16);
        assert_eq!(iso_week(at("2021-01-03 00:00:00")), 53);
        assert_eq!(iso_week(at("1969-12-31 12:30:00")), 1);
        assert_eq!(quarter(at("2020-02-29 23:59:59.999")), 1);
        let ceil = |s: &str, unit| {
            let x = Compiled::constant(Value::Timestamp(at(s)), SqlType::Timestamp);
            let e = Expr::Value(sqlparser::ast::Value::Null.into());
            let c = ceil_floor_time(x, unit, true, &e).expect("compiles");
            (c.eval)(&[]).expect("evaluates")
        };
        // As Flink: to a week or longer, by the date alone.
        assert_eq!(
            ceil("2021-01-31 12:00:00", TimeUnit::Week),
            Value::Timestamp(at("2021-01-31 00:00:00"))
        );
        assert_eq!(
            ceil("2021-01-30 12:00:00", TimeUnit::Week),
            Value::Timestamp(at("2021-01-31 00:00:00"))
        );
        assert_eq!(
            ceil("2020-04-01 00:00:01", TimeUnit::Month),
            Value::Timestamp(at("2020-04-01 00:00:00"))
        );
        let quarters = [
            ("2020-04-15 08:00:00", "2020-07-01 00:00:00"),
            ("2020-04-01 00:00:00", "2020-07-01 00:00:00"),
            ("2020-01-01 08:00:00", "2020-01-01 00:00:00"),
            ("2020-03-15 00:00:00", "2020-04-01 00:00:00"),
        ];
        for (t, want) in quarters {
            assert_eq!(
                ceil(t, TimeUnit::Quarter),
                Value::Timestamp(at(want)),
                "{t}"
            );
        }
        assert_eq!(
            ceil("2020-04-15 08:00:00", TimeUnit::Day),
            Value::Timestamp(at("2020-04-16 00:00:00"))
        );
    }

    #[test]
    fn text_reads_with_a_pattern_or_the_default_format() {
        let p = DatePattern::parse("dd/MM/yyyy HH").expect("a pattern");
        assert_eq!(
            p.parse_text("15/04/2020 08"),
            Some(at("2020-04-15 08:00:00"))
        );
        assert_eq!(p.parse_text("15/04/2020 08:00"), None);
        assert_eq!(p.parse_text("31/02/2020 08"), None);
        assert_eq!(default_time(" 2020-04-15 08:00:01"), None);
        assert_eq!(default_time("2020-04-15T08:00:01"), None);
        assert_eq!(default_time("2020-04-15"), Some(at("2020-04-15 00:00:00")));
    }
}
