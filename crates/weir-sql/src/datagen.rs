//! The `datagen` connector: rows made up as Flink's `datagen` source makes
//! them, at `'rows-per-second'` (default 10 000), unbounded unless
//! `'number-of-rows'` is set or a column counts a sequence to its end.
//!
//! ```sql
//! CREATE TABLE clicks (id BIGINT, user_id INT, url STRING) WITH (
//!   'connector' = 'datagen', 'rows-per-second' = '100',
//!   'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '1000',
//!   'fields.user_id.min' = '1', 'fields.user_id.max' = '50',
//!   'fields.url.length' = '12');
//! ```
//!
//! A `random` column (the default kind) takes values in
//! `fields.#.min..=fields.#.max` (numbers), of `fields.#.length` characters
//! (strings, default 100), up to `fields.#.max-past` before now
//! (timestamps), NULL at `fields.#.null-rate`. Unlike Flink's, the random
//! values are a function of the row's number: the same table gives the
//! same rows in every run (and after a restore from a checkpoint).

use std::sync::Arc;

use weir::prelude::*;

use crate::catalog::TableDef;
use crate::computed::ComputedColumns;
use crate::connector::{
    check_options, connector_error, Probe, Probes, ScanRows, TableRows, Watermarks,
};
use crate::error::SqlError;
use crate::types::SqlType;
use crate::value::{Row, Value};

/// How one physical column is made.
#[derive(Debug, Clone)]
enum Field {
    /// `start + n` for row `n` (the table ends after the sequence's end).
    Sequence { start: i64 },
    Random {
        min: f64,
        max: f64,
        length: usize,
        null_rate: f64,
        max_past: i64,
    },
}

/// 64 well-mixed bits for `(column, row)` (SplitMix64's finaliser).
fn mix(column: usize, row: u64) -> u64 {
    let mut z = row
        .wrapping_add((column as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .wrapping_add(0x6A09_E667_F3BC_C909);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A number in `[0, 1)` for `(column, row, salt)`.
fn unit(column: usize, row: u64, salt: u64) -> f64 {
    (mix(column, row ^ salt.rotate_left(32)) >> 11) as f64 / (1u64 << 53) as f64
}

impl Field {
    fn value(&self, column: usize, row: u64, ty: SqlType) -> Value {
        match *self {
            Field::Sequence { start, .. } => {
                let n = start.saturating_add(row as i64);
                match ty {
                    SqlType::Int => Value::Int(n as i32),
                    SqlType::Double => Value::Double(n as f64),
                    SqlType::Decimal(_, s) => {
                        Value::decimal(i128::from(n) * 10i128.pow(u32::from(s)), s)
                    }
                    SqlType::String => Value::string(&n.to_string()),
                    _ => Value::BigInt(n),
                }
            }
            Field::Random {
                min,
                max,
                length,
                null_rate,
                max_past,
            } => {
                if null_rate > 0.0 && unit(column, row, 1) < null_rate {
                    return Value::Null;
                }
                let u = unit(column, row, 0);
                let whole = || min.floor() as i64 + (u * (max.floor() - min.floor() + 1.0)) as i64;
                match ty {
                    SqlType::Boolean => Value::Boolean(u < 0.5),
                    SqlType::Int => Value::Int(whole() as i32),
                    SqlType::BigInt => Value::BigInt(whole()),
                    SqlType::Double => Value::Double(min + u * (max - min)),
                    SqlType::Decimal(_, s) => {
                        let scaled = (min + u * (max - min)) * 10f64.powi(i32::from(s));
                        Value::decimal(scaled.round() as i128, s)
                    }
                    SqlType::String | SqlType::Bytes => {
                        const ALPHABET: &[u8] = b"0123456789abcdef";
                        let text: String = (0..length)
                            .map(|i| {
                                let bits = mix(column, row ^ ((i as u64 + 2) << 40));
                                ALPHABET[(bits % 16) as usize] as char
                            })
                            .collect();
                        match ty {
                            SqlType::Bytes => Value::Bytes(std::sync::Arc::from(text.into_bytes())),
                            _ => Value::string(&text),
                        }
                    }
                    SqlType::Timestamp | SqlType::TimestampLtz | SqlType::Date => {
                        let at = crate::time::now_ms() - (u * max_past as f64) as i64;
                        match ty {
                            SqlType::Timestamp => Value::Timestamp(at),
                            SqlType::TimestampLtz => Value::TimestampLtz(at),
                            _ => Value::Date(at.div_euclid(86_400_000) as i32),
                        }
                    }
                    SqlType::Interval => Value::Interval(whole()),
                    SqlType::Null => Value::Null,
                }
            }
        }
    }
}

/// The numeric option `key`, if set.
fn number(table: &TableDef, key: &str) -> Result<Option<f64>, SqlError> {
    table
        .option(key)
        .map(|v| {
            v.trim()
                .parse::<f64>()
                .map_err(|_| connector_error(table, format!("'{key}' must be a number, not '{v}'")))
        })
        .transpose()
}

/// The default range of a random column of type `ty` (Flink's: the type's
/// range for integers).
fn default_range(ty: SqlType) -> (f64, f64) {
    match ty {
        SqlType::Int => (f64::from(i32::MIN), f64::from(i32::MAX)),
        SqlType::BigInt | SqlType::Interval => (-9.0e15, 9.0e15),
        SqlType::Decimal(p, s) => {
            let bound = 10f64.powi(i32::from(p) - i32::from(s)) - 1.0;
            (-bound, bound)
        }
        _ => (0.0, 1.0),
    }
}

/// The `datagen` rows of `table`.
pub(crate) fn datagen_source(
    env: &StreamExecutionEnvironment,
    table: &TableDef,
    rows: &TableRows,
    watermarks: Option<Watermarks>,
) -> Result<ScanRows, SqlError> {
    let physical: Vec<(String, SqlType)> =
        table.physical().map(|(n, t)| (n.to_string(), t)).collect();
    let mut known: Vec<String> = ["connector", "rows-per-second", "number-of-rows"]
        .map(String::from)
        .to_vec();
    for (name, _) in &physical {
        for option in [
            "kind",
            "min",
            "max",
            "length",
            "start",
            "end",
            "null-rate",
            "max-past",
        ] {
            known.push(format!("fields.{name}.{option}"));
        }
    }
    check_options(table, &known.iter().map(String::as_str).collect::<Vec<_>>())?;
    let rate = number(table, "rows-per-second")?.unwrap_or(10_000.0);
    if rate <= 0.0 {
        return Err(connector_error(table, "'rows-per-second' must be positive"));
    }
    let mut count = number(table, "number-of-rows")?
        .map(|n| {
            if n < 0.0 {
                Err(connector_error(
                    table,
                    "'number-of-rows' must not be negative",
                ))
            } else {
                Ok(n as u64)
            }
        })
        .transpose()?;
    let mut fields = Vec::new();
    for (name, ty) in &physical {
        let key = |option: &str| format!("fields.{name}.{option}");
        let field = match table.option(&key("kind")).unwrap_or("random") {
            "sequence" => {
                let (Some(start), Some(end)) =
                    (number(table, &key("start"))?, number(table, &key("end"))?)
                else {
                    return Err(connector_error(
                        table,
                        format!(
                            "the sequence column '{name}' needs '{}' and '{}'",
                            key("start"),
                            key("end")
                        ),
                    ));
                };
                if !matches!(
                    ty,
                    SqlType::Int
                        | SqlType::BigInt
                        | SqlType::Double
                        | SqlType::Decimal(..)
                        | SqlType::String
                ) {
                    return Err(connector_error(
                        table,
                        format!("a sequence cannot make {ty} values (column '{name}')"),
                    ));
                }
                let (start, end) = (start as i64, end as i64);
                if end < start {
                    return Err(connector_error(
                        table,
                        format!("the sequence of '{name}' ends ({end}) before it starts ({start})"),
                    ));
                }
                // The table ends where its shortest sequence does.
                let len = (end - start) as u64 + 1;
                count = Some(count.map_or(len, |c| c.min(len)));
                Field::Sequence { start }
            }
            "random" => {
                let (low, high) = default_range(*ty);
                let min = number(table, &key("min"))?.unwrap_or(low);
                let max = number(table, &key("max"))?.unwrap_or(high);
                if max < min {
                    return Err(connector_error(
                        table,
                        format!("'{}' is below '{}'", key("max"), key("min")),
                    ));
                }
                let null_rate = number(table, &key("null-rate"))?.unwrap_or(0.0);
                if !(0.0..=1.0).contains(&null_rate) {
                    return Err(connector_error(
                        table,
                        format!("'{}' must be between 0 and 1", key("null-rate")),
                    ));
                }
                let max_past = match table.option(&key("max-past")) {
                    None => 0,
                    Some(text) => weir::config::parse_duration(text)
                        .map_err(|e| connector_error(table, format!("'{}': {e}", key("max-past"))))?
                        .as_millis() as i64,
                };
                Field::Random {
                    min,
                    max,
                    length: number(table, &key("length"))?.map_or(100, |l| l.max(0.0) as usize),
                    null_rate,
                    max_past,
                }
            }
            other => {
                return Err(connector_error(
                    table,
                    format!(
                        "'{}' must be random or sequence, not '{other}'",
                        key("kind")
                    ),
                ))
            }
        };
        fields.push((field, *ty));
    }
    let fields: Arc<[(Field, SqlType)]> = fields.into();
    let computed = rows.computed.clone();
    let order = rows.order.clone();
    // A stand-in row of the declared columns can be probed when they are
    // the physical ones then the computed ones, in that order (the row the
    // computed columns are computed over).
    let probes =
        crate::connector::declared_as_made(&order, fields.len() + computed.len()).then(|| {
            DatagenProbes {
                fields: fields.clone(),
                computed: computed.clone(),
            }
        });
    // The source emits row numbers; each becomes its row in the operator
    // that stamps and filters it, so that the row is still in the CPU's
    // caches there (and a probed row the `WHERE` drops is never made).
    let make = move |n: u64| -> Result<Option<Row>, String> {
        let mut values = Row::buffer(fields.len() + computed.len());
        values.extend(
            fields
                .iter()
                .enumerate()
                .map(|(c, (f, ty))| f.value(c, n, *ty)),
        );
        computed.append(&mut values)?;
        Ok(Some(Row::insert(crate::connector::in_declared_order(
            values, &order,
        ))))
    };
    let source = match count {
        Some(n) => GeneratorSource::new(n, row_number),
        None => GeneratorSource::unbounded(row_number),
    }
    .with_rate_limit(rate);
    let numbers = env
        .add_parallel_source(source, &format!("{}[datagen]", table.name))
        .uid(&crate::plan::state_uid(&format!(
            "Source[{}; datagen]",
            table.name.to_lowercase()
        )));
    Ok(ScanRows::new(
        &table.name,
        numbers,
        make,
        probes,
        watermarks,
    ))
}

/// Row `n`'s number: what the source emits.
fn row_number(n: u64) -> u64 {
    n
}

/// Probes of a `datagen` table whose declared columns are its physical
/// ones, then its computed ones.
#[derive(Clone)]
struct DatagenProbes {
    fields: Arc<[(Field, SqlType)]>,
    computed: ComputedColumns,
}

/// Makes the physical columns it reads, and then its computed ones (over
/// all the physical ones, when it reads any computed column).
#[derive(Clone)]
struct DatagenProbe {
    fields: Arc<[(Field, SqlType)]>,
    physical: Vec<usize>,
    computed: ComputedColumns,
    computing: Vec<usize>,
}

impl Probes<u64> for DatagenProbes {
    type Probe = DatagenProbe;

    fn probe(&self, columns: &[bool]) -> Option<(DatagenProbe, Row)> {
        let base = self.fields.len();
        if columns.len() != base + self.computed.len() {
            return None;
        }
        let computing: Vec<usize> = (0..self.computed.len())
            .filter(|i| columns[base + i])
            .collect();
        let physical = (0..base)
            .filter(|&p| columns[p] || !computing.is_empty())
            .collect();
        let probe = DatagenProbe {
            fields: self.fields.clone(),
            physical,
            computed: self.computed.clone(),
            computing,
        };
        Some((probe, Row::insert(vec![Value::Null; columns.len()])))
    }
}

impl Probe<u64> for DatagenProbe {
    #[inline]
    fn probe(&self, n: &mut u64, row: &mut Row) -> Result<bool, String> {
        let values = &mut row.values;
        for &p in &self.physical {
            let (field, ty) = &self.fields[p];
            values[p] = field.value(p, *n, *ty);
        }
        let base = self.fields.len();
        for &i in &self.computing {
            self.computed.write_at(i, values, base, base + i)?;
        }
        Ok(true)
    }
}
