//! SQL data types, as Flink names them, and their mapping from the parser's
//! types.

use std::fmt;

use sqlparser::ast::{DataType, ExactNumberInfo, TimezoneInfo};

/// A column's type. Precision of timestamps is milliseconds (Flink's
/// `TIMESTAMP(3)`), the precision event time has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SqlType {
    Boolean,
    Int,
    BigInt,
    Double,
    /// `DECIMAL(precision, scale)`.
    Decimal(u8, u8),
    String,
    Bytes,
    Date,
    /// `TIMESTAMP(3)`: a date and time without a time zone.
    Timestamp,
    /// `TIMESTAMP_LTZ(3)`: an instant, shown in the session's time zone.
    TimestampLtz,
    /// `INTERVAL … SECOND` and the like: a duration in milliseconds.
    Interval,
    /// The type of the `NULL` literal until it meets another type.
    Null,
}

impl SqlType {
    /// Whether its values are integers (`Value::as_i64` of each non-NULL
    /// one is `Some`): the integer, date, time and interval types.
    pub fn is_integral(self) -> bool {
        matches!(
            self,
            SqlType::Int
                | SqlType::BigInt
                | SqlType::Date
                | SqlType::Timestamp
                | SqlType::TimestampLtz
                | SqlType::Interval
        )
    }

    /// The type of a parsed data type, or what is not supported about it.
    pub(crate) fn from_ast(t: &DataType) -> Result<SqlType, String> {
        Ok(match t {
            DataType::Boolean | DataType::Bool => SqlType::Boolean,
            DataType::Int(_)
            | DataType::Integer(_)
            | DataType::SmallInt(_)
            | DataType::TinyInt(_) => SqlType::Int,
            DataType::BigInt(_) => SqlType::BigInt,
            DataType::Double(_)
            | DataType::DoublePrecision
            | DataType::Float(_)
            | DataType::Real => SqlType::Double,
            DataType::Decimal(info) | DataType::Numeric(info) | DataType::Dec(info) => {
                let (p, s) = match info {
                    // Flink's default: DECIMAL(10, 0).
                    ExactNumberInfo::None => (10, 0),
                    ExactNumberInfo::Precision(p) => (*p, 0),
                    ExactNumberInfo::PrecisionAndScale(p, s) => (*p, (*s).max(0) as u64),
                };
                if !(1..=38).contains(&p) || s > p {
                    return Err(format!(
                        "DECIMAL({p}, {s}): precision 1 to 38, scale at most the precision"
                    ));
                }
                SqlType::Decimal(p as u8, s as u8)
            }
            DataType::String(_)
            | DataType::Varchar(_)
            | DataType::CharacterVarying(_)
            | DataType::CharVarying(_)
            | DataType::Char(_)
            | DataType::Character(_)
            | DataType::Text => SqlType::String,
            DataType::Bytes(_) | DataType::Varbinary(_) | DataType::Binary(_) | DataType::Bytea => {
                SqlType::Bytes
            }
            DataType::Date => SqlType::Date,
            DataType::Timestamp(_, TimezoneInfo::None | TimezoneInfo::WithoutTimeZone) => {
                SqlType::Timestamp
            }
            DataType::Custom(name, _) if name.to_string().eq_ignore_ascii_case("TIMESTAMP_LTZ") => {
                SqlType::TimestampLtz
            }
            DataType::Custom(name, _) if name.to_string().eq_ignore_ascii_case("STRING") => {
                SqlType::String
            }
            DataType::Custom(name, _) if name.to_string().eq_ignore_ascii_case("BYTES") => {
                SqlType::Bytes
            }
            DataType::Interval { .. } => SqlType::Interval,
            other => return Err(format!("the data type {other}")),
        })
    }

    /// Whether values of this type are numbers.
    pub fn is_numeric(self) -> bool {
        matches!(
            self,
            SqlType::Int | SqlType::BigInt | SqlType::Double | SqlType::Decimal(..)
        )
    }

    /// Whether values of this type are whole numbers (INT, BIGINT).
    pub fn is_integer(self) -> bool {
        matches!(self, SqlType::Int | SqlType::BigInt)
    }

    /// Whether a column of this type can be a time attribute.
    pub fn is_timestamp(self) -> bool {
        matches!(self, SqlType::Timestamp | SqlType::TimestampLtz)
    }
}

impl fmt::Display for SqlType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SqlType::Boolean => f.write_str("BOOLEAN"),
            SqlType::Int => f.write_str("INT"),
            SqlType::BigInt => f.write_str("BIGINT"),
            SqlType::Double => f.write_str("DOUBLE"),
            SqlType::Decimal(p, s) => write!(f, "DECIMAL({p}, {s})"),
            SqlType::String => f.write_str("STRING"),
            SqlType::Bytes => f.write_str("BYTES"),
            SqlType::Date => f.write_str("DATE"),
            SqlType::Timestamp => f.write_str("TIMESTAMP(3)"),
            SqlType::TimestampLtz => f.write_str("TIMESTAMP_LTZ(3)"),
            SqlType::Interval => f.write_str("INTERVAL SECOND(3)"),
            SqlType::Null => f.write_str("NULL"),
        }
    }
}
