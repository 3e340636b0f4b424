//! Rows as text: Flink's `csv` and `json` formats, for lines of files and
//! values of Kafka records. A `json` row is an object of the table's
//! physical columns by name (a missing field is NULL, unless
//! `json.fail-on-missing-field`); timestamps are written as
//! `yyyy-MM-dd HH:mm:ss.SSS` (Flink's `SQL` timestamp standard), bytes in
//! base64, decimals as exact numbers.

use crate::catalog::TableDef;
use crate::connector::{connector_error, flag};
use crate::error::SqlError;
use crate::types::SqlType;
use crate::value::{RowKind, Value};

/// How rows are written and read.
#[derive(Debug, Clone)]
pub(crate) enum RowFormat {
    Csv {
        delimiter: char,
        /// The field text that stands for NULL (`csv.null-literal`;
        /// empty by default when writing).
        null_literal: Option<String>,
        ignore_parse_errors: bool,
        allow_comments: bool,
    },
    Json {
        fail_on_missing_field: bool,
        ignore_parse_errors: bool,
    },
    /// Debezium's change events in JSON (`{"before": …, "after": …, "op":
    /// "c"|"r"|"u"|"d"}`, under `"payload"` with `schema-include`): a
    /// changelog, each event one or two rows.
    DebeziumJson {
        schema_include: bool,
        ignore_parse_errors: bool,
    },
    /// Canal's change events (`{"data": [rows], "old": [changed fields],
    /// "type": "INSERT"|"UPDATE"|"DELETE", …}`): a changelog.
    CanalJson { ignore_parse_errors: bool },
    /// Maxwell's change events (`{"data": row, "old": changed fields,
    /// "type": "insert"|"update"|"delete", …}`): a changelog.
    MaxwellJson { ignore_parse_errors: bool },
    /// A record's bytes as the table's one column (`STRING`, UTF-8, or
    /// `BYTES`).
    Raw,
}

/// The formats whose records are changes, not rows.
pub(crate) const CHANGELOG_FORMATS: [&str; 3] = ["debezium-json", "canal-json", "maxwell-json"];

/// The options a format takes, under `prefix` (`''`, `'value.'`, `'key.'`).
pub(crate) fn format_options(format: &str, prefix: &str) -> Vec<String> {
    let keys: &[&str] = match format {
        "csv" => &[
            "csv.field-delimiter",
            "csv.ignore-parse-errors",
            "csv.allow-comments",
            "csv.null-literal",
        ],
        "json" => &["json.fail-on-missing-field", "json.ignore-parse-errors"],
        "debezium-json" => &[
            "debezium-json.schema-include",
            "debezium-json.ignore-parse-errors",
        ],
        "canal-json" => &["canal-json.ignore-parse-errors"],
        "maxwell-json" => &["maxwell-json.ignore-parse-errors"],
        _ => &[],
    };
    keys.iter().map(|k| format!("{prefix}{k}")).collect()
}

impl RowFormat {
    /// The format `table` names with `key` (`'format'`, `'value.format'`),
    /// its options under `prefix`.
    pub fn of(table: &TableDef, key: &str, prefix: &str) -> Result<RowFormat, SqlError> {
        let option = |k: &str| table.option(&format!("{prefix}{k}"));
        match table.option(key) {
            Some("csv") => {
                let delimiter = match option("csv.field-delimiter") {
                    None => ',',
                    Some(d) if d.chars().count() == 1 => d.chars().next().unwrap_or(','),
                    Some(d) => {
                        return Err(connector_error(
                            table,
                            format!(
                                "'{prefix}csv.field-delimiter' must be one character, not '{d}'"
                            ),
                        ))
                    }
                };
                Ok(RowFormat::Csv {
                    delimiter,
                    null_literal: option("csv.null-literal").map(str::to_string),
                    ignore_parse_errors: flag(table, &format!("{prefix}csv.ignore-parse-errors"))?,
                    allow_comments: flag(table, &format!("{prefix}csv.allow-comments"))?,
                })
            }
            Some("json") => Ok(RowFormat::Json {
                fail_on_missing_field: flag(table, &format!("{prefix}json.fail-on-missing-field"))?,
                ignore_parse_errors: flag(table, &format!("{prefix}json.ignore-parse-errors"))?,
            }),
            Some("debezium-json") => Ok(RowFormat::DebeziumJson {
                schema_include: flag(table, &format!("{prefix}debezium-json.schema-include"))?,
                ignore_parse_errors: flag(
                    table,
                    &format!("{prefix}debezium-json.ignore-parse-errors"),
                )?,
            }),
            Some("canal-json") => Ok(RowFormat::CanalJson {
                ignore_parse_errors: flag(table, &format!("{prefix}canal-json.ignore-parse-errors"))?,
            }),
            Some("maxwell-json") => Ok(RowFormat::MaxwellJson {
                ignore_parse_errors: flag(
                    table,
                    &format!("{prefix}maxwell-json.ignore-parse-errors"),
                )?,
            }),
            Some("raw") => {
                let physical: Vec<(&str, SqlType)> = table.physical().collect();
                match physical[..] {
                    [(_, SqlType::String | SqlType::Bytes)] => Ok(RowFormat::Raw),
                    _ => Err(connector_error(
                        table,
                        "the format 'raw' reads a table of one STRING or BYTES column",
                    )),
                }
            }
            Some(other) => Err(connector_error(
                table,
                format!(
                    "the format '{other}' is not supported (supported: csv, json, raw, debezium-json, canal-json, maxwell-json)"
                ),
            )),
            None => Err(connector_error(
                table,
                format!("the option '{key}' is missing"),
            )),
        }
    }

    /// Whether a record this format cannot read is skipped.
    pub fn ignores_parse_errors(&self) -> bool {
        match self {
            RowFormat::Csv {
                ignore_parse_errors,
                ..
            }
            | RowFormat::Json {
                ignore_parse_errors,
                ..
            }
            | RowFormat::DebeziumJson {
                ignore_parse_errors,
                ..
            }
            | RowFormat::CanalJson {
                ignore_parse_errors,
            }
            | RowFormat::MaxwellJson {
                ignore_parse_errors,
            } => *ignore_parse_errors,
            RowFormat::Raw => false,
        }
    }

    /// Whether a record holds changes (`-U`/`+U`/`-D` rows too), not one
    /// inserted row.
    pub fn is_changelog(&self) -> bool {
        matches!(
            self,
            RowFormat::DebeziumJson { .. }
                | RowFormat::CanalJson { .. }
                | RowFormat::MaxwellJson { .. }
        )
    }

    /// The rows of `bytes` with their kinds, for a changelog format (one
    /// inserted row for the others), as [`RowFormat::decode`] reads them.
    pub fn decode_changes(
        &self,
        bytes: &[u8],
        columns: &[(String, SqlType)],
        read: &[bool],
    ) -> Result<Vec<(RowKind, Vec<Value>)>, String> {
        if !self.is_changelog() {
            return Ok(vec![(RowKind::Insert, self.decode(bytes, columns, read)?)]);
        }
        // A tombstone (Kafka's null value after a delete) holds no change.
        if bytes.is_empty() {
            return Ok(Vec::new());
        }
        let doc: serde_json::Value =
            serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
        let values = |row: &serde_json::Value| match row {
            serde_json::Value::Object(fields) => object_values(fields, columns, read, false),
            other => Err(format!("a row that is not an object: {other}")),
        };
        // An update's old row: the new one with the fields it changed as
        // they were (`old`).
        let before = |row: &serde_json::Value, old: Option<&serde_json::Value>| {
            let mut row = row.clone();
            if let (serde_json::Value::Object(now), Some(serde_json::Value::Object(then))) =
                (&mut row, old)
            {
                for (k, v) in then {
                    now.insert(k.clone(), v.clone());
                }
            }
            values(&row)
        };
        let kind = |name: Option<&str>| name.map(str::to_ascii_uppercase);
        match self {
            RowFormat::CanalJson { .. } => {
                let rows = match doc.get("data") {
                    Some(serde_json::Value::Array(rows)) => rows.as_slice(),
                    Some(serde_json::Value::Null) | None => &[],
                    Some(other) => return Err(format!("\"data\" is not a list: {other}")),
                };
                let olds = doc.get("old").and_then(serde_json::Value::as_array);
                let mut changes = Vec::new();
                match kind(doc.get("type").and_then(serde_json::Value::as_str)).as_deref() {
                    Some("INSERT") => {
                        for row in rows {
                            changes.push((RowKind::Insert, values(row)?));
                        }
                    }
                    Some("UPDATE") => {
                        for (i, row) in rows.iter().enumerate() {
                            let old = olds.and_then(|o| o.get(i));
                            changes.push((RowKind::UpdateBefore, before(row, old)?));
                            changes.push((RowKind::UpdateAfter, values(row)?));
                        }
                    }
                    Some("DELETE") => {
                        for row in rows {
                            changes.push((RowKind::Delete, values(row)?));
                        }
                    }
                    // A table created holds no rows; other schema
                    // changes are errors, as in Flink.
                    Some("CREATE") => {}
                    other => {
                        return Err(format!(
                            "a Canal event whose \"type\" is {} (INSERT, UPDATE or DELETE)",
                            other.map_or_else(|| "missing".to_string(), |o| format!("'{o}'"))
                        ))
                    }
                }
                return Ok(changes);
            }
            RowFormat::MaxwellJson { .. } => {
                let row = doc.get("data").ok_or("a Maxwell event without \"data\"")?;
                return match kind(doc.get("type").and_then(serde_json::Value::as_str)).as_deref() {
                    Some("INSERT") => Ok(vec![(RowKind::Insert, values(row)?)]),
                    Some("UPDATE") => Ok(vec![
                        (RowKind::UpdateBefore, before(row, doc.get("old"))?),
                        (RowKind::UpdateAfter, values(row)?),
                    ]),
                    Some("DELETE") => Ok(vec![(RowKind::Delete, values(row)?)]),
                    other => Err(format!(
                        "a Maxwell event whose \"type\" is {} (insert, update or delete)",
                        other.map_or_else(
                            || "missing".to_string(),
                            |o| format!("'{}'", o.to_lowercase())
                        )
                    )),
                };
            }
            _ => {}
        }
        let RowFormat::DebeziumJson { schema_include, .. } = self else {
            return Err("not a changelog format".into());
        };
        let event = if *schema_include {
            doc.get("payload").ok_or(
                "no \"payload\" in a Debezium event ('debezium-json.schema-include' is true)",
            )?
        } else if doc.get("schema").is_some() && doc.get("payload").is_some() {
            return Err(
                "a Debezium event with its schema: set 'debezium-json.schema-include' = 'true'"
                    .into(),
            );
        } else {
            &doc
        };
        let side = |name: &str| -> Result<Option<Vec<Value>>, String> {
            match event.get(name) {
                None | Some(serde_json::Value::Null) => Ok(None),
                Some(serde_json::Value::Object(fields)) => {
                    object_values(fields, columns, read, false).map(Some)
                }
                Some(other) => Err(format!("\"{name}\" is not an object: {other}")),
            }
        };
        let needed = |name: &str, values: Option<Vec<Value>>| {
            values.ok_or_else(|| {
                let mut e = format!(
                    "a Debezium '{op}' event without \"{name}\"",
                    op = event["op"]
                );
                if name == "before" {
                    // What Debezium's PostgreSQL connector sends unless
                    // told otherwise, as Flink's message says.
                    e.push_str(" (a PostgreSQL source table needs REPLICA IDENTITY FULL)");
                }
                e
            })
        };
        match event.get("op").and_then(serde_json::Value::as_str) {
            Some("c" | "r") => Ok(vec![(RowKind::Insert, needed("after", side("after")?)?)]),
            Some("u") => Ok(vec![
                (RowKind::UpdateBefore, needed("before", side("before")?)?),
                (RowKind::UpdateAfter, needed("after", side("after")?)?),
            ]),
            Some("d") => Ok(vec![(RowKind::Delete, needed("before", side("before")?)?)]),
            other => Err(format!(
                "a Debezium event whose \"op\" is {} (c, r, u or d)",
                other.map_or_else(|| "missing".to_string(), |o| format!("'{o}'"))
            )),
        }
    }

    /// Whether `line` is a comment to skip (`csv.allow-comments`).
    pub fn is_comment(&self, line: &str) -> bool {
        matches!(self, RowFormat::Csv { allow_comments: true, .. } if line.starts_with('#'))
    }

    /// `values` (of `columns`) as a line.
    pub fn encode(&self, columns: &[(String, SqlType)], values: &[Value]) -> String {
        match self {
            RowFormat::Csv {
                delimiter,
                null_literal,
                ..
            } => {
                let mut line = String::new();
                for (i, v) in values.iter().enumerate() {
                    if i > 0 {
                        line.push(*delimiter);
                    }
                    let text = match v {
                        Value::Null => null_literal.clone().unwrap_or_default(),
                        other => other.to_string(),
                    };
                    let quote = text.contains([*delimiter, '"', '\n', '\r']);
                    if quote {
                        line.push('"');
                        line.push_str(&text.replace('"', "\"\""));
                        line.push('"');
                    } else {
                        line.push_str(&text);
                    }
                }
                line
            }
            RowFormat::Json { .. } => json_object(columns, values),
            RowFormat::Raw => values.first().map_or_else(String::new, |v| match v {
                Value::Null => String::new(),
                other => other.to_string(),
            }),
            RowFormat::DebeziumJson { .. }
            | RowFormat::CanalJson { .. }
            | RowFormat::MaxwellJson { .. } => self.encode_change(RowKind::Insert, columns, values),
        }
    }

    /// A row of kind `kind` as a line: as Flink writes Debezium events,
    /// an insert or update's new row a created row (`c`, `after`), a
    /// delete or update's old row a deleted one (`d`, `before`); in the
    /// other formats, the row alone.
    pub fn encode_change(
        &self,
        kind: RowKind,
        columns: &[(String, SqlType)],
        values: &[Value],
    ) -> String {
        let retraction = kind.is_retraction();
        match self {
            RowFormat::DebeziumJson { .. } if retraction => format!(
                "{{\"before\":{},\"after\":null,\"op\":\"d\"}}",
                json_object(columns, values)
            ),
            RowFormat::DebeziumJson { .. } => format!(
                "{{\"before\":null,\"after\":{},\"op\":\"c\"}}",
                json_object(columns, values)
            ),
            RowFormat::CanalJson { .. } => format!(
                "{{\"data\":[{}],\"type\":\"{}\"}}",
                json_object(columns, values),
                if retraction { "DELETE" } else { "INSERT" }
            ),
            RowFormat::MaxwellJson { .. } => format!(
                "{{\"data\":{},\"type\":\"{}\"}}",
                json_object(columns, values),
                if retraction { "delete" } else { "insert" }
            ),
            _ => self.encode(columns, values),
        }
    }

    /// The values of `columns` in `bytes` (those `read` does not mark are
    /// left NULL), or why they cannot be read.
    pub fn decode(
        &self,
        bytes: &[u8],
        columns: &[(String, SqlType)],
        read: &[bool],
    ) -> Result<Vec<Value>, String> {
        match self {
            RowFormat::Csv {
                delimiter,
                null_literal,
                ..
            } => {
                let line = std::str::from_utf8(bytes).map_err(|e| format!("not UTF-8: {e}"))?;
                let fields = crate::connector::split_csv(line, *delimiter);
                if fields.len() != columns.len() {
                    return Err(format!(
                        "{} fields where the table has {} physical columns",
                        fields.len(),
                        columns.len()
                    ));
                }
                fields
                    .iter()
                    .zip(columns)
                    .zip(read)
                    .map(|((f, (_, t)), read)| {
                        if !read || null_literal.as_deref() == Some(f.as_str()) {
                            Ok(Value::Null)
                        } else {
                            Value::parse(f, *t)
                        }
                    })
                    .collect()
            }
            RowFormat::Json {
                fail_on_missing_field,
                ..
            } => {
                let doc: serde_json::Value =
                    serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
                let serde_json::Value::Object(fields) = doc else {
                    return Err("not a JSON object".into());
                };
                object_values(&fields, columns, read, *fail_on_missing_field)
            }
            RowFormat::Raw => {
                let value = match columns.first().map(|(_, t)| *t) {
                    Some(SqlType::Bytes) => Value::Bytes(std::sync::Arc::from(bytes)),
                    _ => Value::string(
                        std::str::from_utf8(bytes).map_err(|e| format!("not UTF-8: {e}"))?,
                    ),
                };
                Ok(vec![if read.first() == Some(&true) {
                    value
                } else {
                    Value::Null
                }])
            }
            RowFormat::DebeziumJson { .. }
            | RowFormat::CanalJson { .. }
            | RowFormat::MaxwellJson { .. } => Err("a change event is a change, not a row".into()),
        }
    }
}

/// The values of `columns` in a JSON object's `fields` (those `read` does
/// not mark are left NULL).
fn object_values(
    fields: &serde_json::Map<String, serde_json::Value>,
    columns: &[(String, SqlType)],
    read: &[bool],
    fail_on_missing_field: bool,
) -> Result<Vec<Value>, String> {
    let mut values = Vec::with_capacity(columns.len());
    for ((name, ty), read) in columns.iter().zip(read) {
        let field = fields.get(name);
        if field.is_none() && fail_on_missing_field {
            return Err(format!("the field '{name}' is missing"));
        }
        values.push(match field {
            Some(v) if *read => from_json(v, *ty).map_err(|e| format!("field '{name}': {e}"))?,
            _ => Value::Null,
        });
    }
    // A field the table does not have is ignored, as in Flink.
    Ok(values)
}

/// `values` of `columns` as a JSON object.
fn json_object(columns: &[(String, SqlType)], values: &[Value]) -> String {
    let mut line = String::from("{");
    for (i, ((name, _), v)) in columns.iter().zip(values).enumerate() {
        if i > 0 {
            line.push(',');
        }
        line.push_str(&json_string(name));
        line.push(':');
        line.push_str(&json_value(v));
    }
    line.push('}');
    line
}

/// `s` as a JSON string.
fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// A value as JSON text.
fn json_value(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Boolean(b) => b.to_string(),
        Value::Int(_) | Value::BigInt(_) | Value::Decimal(..) => v.to_string(),
        Value::Double(d) if d.is_finite() => v.to_string(),
        // JSON has no NaN or infinities: Flink writes them as strings.
        Value::Double(_) => json_string(&v.to_string()),
        Value::Bytes(b) => json_string(&base64(b)),
        Value::TimestampLtz(_) => json_string(&format!("{v}Z")),
        other => json_string(&other.to_string()),
    }
}

/// A JSON value as a value of type `ty`.
fn from_json(v: &serde_json::Value, ty: SqlType) -> Result<Value, String> {
    use serde_json::Value as J;
    Ok(match (v, ty) {
        (J::Null, _) => Value::Null,
        (J::Bool(b), SqlType::Boolean) => Value::Boolean(*b),
        (J::Number(n), SqlType::Int) => Value::Int(
            n.as_i64()
                .and_then(|i| i32::try_from(i).ok())
                .ok_or_else(|| format!("{n} is not an INT"))?,
        ),
        (J::Number(n), SqlType::BigInt) => {
            Value::BigInt(n.as_i64().ok_or_else(|| format!("{n} is not a BIGINT"))?)
        }
        (J::Number(n), SqlType::Double) => {
            Value::Double(n.as_f64().ok_or_else(|| format!("{n} is not a DOUBLE"))?)
        }
        (J::Number(n), SqlType::Decimal(..)) => Value::parse(&n.to_string(), ty)?,
        (J::String(s), SqlType::Bytes) => Value::Bytes(std::sync::Arc::from(
            unbase64(s).ok_or_else(|| format!("'{s}' is not base64"))?,
        )),
        (J::String(s), SqlType::TimestampLtz) => {
            Value::parse(s.trim_end_matches('Z').replace('T', " ").as_str(), ty)?
        }
        (J::String(s), SqlType::Timestamp) => Value::parse(&s.replace('T', " "), ty)?,
        (J::String(s), _) => Value::parse(s, ty)?,
        (other, SqlType::String) => Value::string(&other.to_string()),
        (other, _) => return Err(format!("{other} is not a {ty}")),
    })
}

const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn base64(bytes: &[u8]) -> String {
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(BASE64[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn unbase64(text: &str) -> Option<Vec<u8>> {
    let digits: Vec<u32> = text
        .trim_end_matches('=')
        .bytes()
        .map(|c| BASE64.iter().position(|b| *b == c).map(|p| p as u32))
        .collect::<Option<_>>()?;
    let mut out = Vec::new();
    for chunk in digits.chunks(4) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, d)| n | d << (18 - 6 * i));
        for i in 0..chunk.len().saturating_sub(1) {
            out.push((n >> (16 - 8 * i)) as u8);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn columns() -> Vec<(String, SqlType)> {
        [
            ("id", SqlType::BigInt),
            ("name", SqlType::String),
            ("amount", SqlType::Decimal(10, 2)),
            ("at", SqlType::Timestamp),
            ("raw", SqlType::Bytes),
            ("ok", SqlType::Boolean),
        ]
        .into_iter()
        .map(|(n, t)| (n.to_string(), t))
        .collect()
    }

    #[test]
    fn json_rows_round_trip() {
        let json = RowFormat::Json {
            fail_on_missing_field: false,
            ignore_parse_errors: false,
        };
        let values = vec![
            Value::BigInt(7),
            Value::string("a \"quoted\" name"),
            Value::decimal(1250, 2),
            Value::Timestamp(1_586_937_601_000),
            Value::Bytes(std::sync::Arc::from(&b"hi!?"[..])),
            Value::Null,
        ];
        let line = json.encode(&columns(), &values);
        assert_eq!(
            line,
            r#"{"id":7,"name":"a \"quoted\" name","amount":12.50,"at":"2020-04-15 08:00:01.000","raw":"aGkhPw==","ok":null}"#
        );
        let read = vec![true; 6];
        assert_eq!(
            json.decode(line.as_bytes(), &columns(), &read).unwrap(),
            values
        );
        // Missing fields are NULL; unknown ones ignored; a wrong type names
        // the field.
        let partial = json
            .decode(br#"{"id": 3, "extra": 1}"#, &columns(), &read)
            .unwrap();
        assert_eq!(partial[0], Value::BigInt(3));
        assert!(partial[1..].iter().all(Value::is_null));
        let e = json
            .decode(br#"{"id": "three"}"#, &columns(), &read)
            .unwrap_err();
        assert!(e.contains("field 'id'"), "{e}");
    }

    /// The rows of `event` in `format`, as the print connector writes
    /// them (`+I[1, a]`), or why it cannot be read.
    fn changes_of(
        format: &RowFormat,
        columns: &[(String, SqlType)],
        event: &str,
    ) -> Result<Vec<String>, String> {
        let read = vec![true; columns.len()];
        let rows = format.decode_changes(event.as_bytes(), columns, &read)?;
        Ok(rows
            .iter()
            .map(|(kind, values)| {
                let values: Vec<String> = values.iter().map(ToString::to_string).collect();
                format!("{}[{}]", kind.short(), values.join(", "))
            })
            .collect())
    }

    #[test]
    fn debezium_events_are_changes_of_their_kinds() {
        let columns = vec![
            ("id".to_string(), SqlType::BigInt),
            ("name".to_string(), SqlType::String),
        ];
        let plain = RowFormat::DebeziumJson {
            schema_include: false,
            ignore_parse_errors: false,
        };
        let changes = |format: &RowFormat, event: &str| changes_of(format, &columns, event);
        let a = r#"{"id":1,"name":"a"}"#;
        let b = r#"{"id":1,"name":"b","extra":true}"#;
        for (event, rows) in [
            (
                format!(r#"{{"before":null,"after":{a},"op":"c"}}"#),
                vec!["+I[1, a]"],
            ),
            (
                format!(r#"{{"after":{a},"op":"r","ts_ms":7}}"#),
                vec!["+I[1, a]"],
            ),
            (
                format!(r#"{{"before":{a},"after":{b},"op":"u"}}"#),
                vec!["-U[1, a]", "+U[1, b]"],
            ),
            (
                format!(r#"{{"before":{b},"after":null,"op":"d"}}"#),
                vec!["-D[1, b]"],
            ),
            (String::new(), vec![]),
        ] {
            assert_eq!(
                changes(&plain, &event),
                Ok(rows.iter().map(|r| r.to_string()).collect()),
                "{event}"
            );
        }
        // With its schema, the event is the payload.
        let with_schema = RowFormat::DebeziumJson {
            schema_include: true,
            ignore_parse_errors: false,
        };
        let wrapped = format!(r#"{{"schema":{{}},"payload":{{"after":{a},"op":"c"}}}}"#);
        assert_eq!(
            changes(&with_schema, &wrapped),
            Ok(vec!["+I[1, a]".to_string()])
        );
        for (format, event, says) in [
            (
                &plain,
                wrapped.clone(),
                "set 'debezium-json.schema-include' = 'true'",
            ),
            (
                &with_schema,
                format!(r#"{{"after":{a},"op":"c"}}"#),
                "no \"payload\"",
            ),
            (
                &plain,
                format!(r#"{{"after":{b},"op":"u"}}"#),
                "REPLICA IDENTITY FULL",
            ),
            (
                &plain,
                format!(r#"{{"after":{a},"op":"x"}}"#),
                "\"op\" is 'x'",
            ),
            (&plain, format!(r#"{{"after":{a}}}"#), "\"op\" is missing"),
            (
                &plain,
                r#"{"after":[1],"op":"c"}"#.to_string(),
                "\"after\" is not an object",
            ),
            (&plain, "{".to_string(), "not JSON"),
        ] {
            let e = changes(format, &event).expect_err(&event);
            assert!(e.contains(says), "{e}");
        }
        // Written, a new row is a create and an old one a delete.
        let values = [Value::BigInt(1), Value::string("a")];
        for (kind, read_back) in [
            (RowKind::Insert, "+I[1, a]"),
            (RowKind::UpdateAfter, "+I[1, a]"),
            (RowKind::UpdateBefore, "-D[1, a]"),
            (RowKind::Delete, "-D[1, a]"),
        ] {
            let event = plain.encode_change(kind, &columns, &values);
            assert_eq!(
                changes(&plain, &event),
                Ok(vec![read_back.to_string()]),
                "{event}"
            );
        }
        // Other formats' records are one inserted row.
        let json = RowFormat::Json {
            fail_on_missing_field: false,
            ignore_parse_errors: false,
        };
        assert_eq!(changes(&json, a), Ok(vec!["+I[1, a]".to_string()]));
    }

    #[test]
    fn canal_and_maxwell_events_are_changes_of_their_kinds() {
        let columns = vec![
            ("id".to_string(), SqlType::BigInt),
            ("name".to_string(), SqlType::String),
        ];
        let canal = RowFormat::CanalJson {
            ignore_parse_errors: false,
        };
        let maxwell = RowFormat::MaxwellJson {
            ignore_parse_errors: false,
        };
        let changes = |format: &RowFormat, event: &str| changes_of(format, &columns, event);
        let cases: [(&RowFormat, &str, &[&str]); 7] = [
            (
                &canal,
                r#"{"data":[{"id":1,"name":"a"},{"id":2,"name":"b"}],"type":"INSERT"}"#,
                &["+I[1, a]", "+I[2, b]"],
            ),
            (
                &canal,
                r#"{"data":[{"id":1,"name":"c"}],"old":[{"name":"a"}],"type":"UPDATE"}"#,
                &["-U[1, a]", "+U[1, c]"],
            ),
            (
                &canal,
                r#"{"data":[{"id":2,"name":"b"}],"type":"DELETE"}"#,
                &["-D[2, b]"],
            ),
            (&canal, r#"{"data":null,"type":"CREATE","isDdl":true}"#, &[]),
            (
                &maxwell,
                r#"{"data":{"id":1,"name":"a"},"type":"insert"}"#,
                &["+I[1, a]"],
            ),
            (
                &maxwell,
                r#"{"data":{"id":1,"name":"c"},"old":{"name":"a"},"type":"update"}"#,
                &["-U[1, a]", "+U[1, c]"],
            ),
            (
                &maxwell,
                r#"{"data":{"id":1,"name":"c"},"type":"delete"}"#,
                &["-D[1, c]"],
            ),
        ];
        for (format, event, rows) in cases {
            let rows: Vec<String> = rows.iter().map(|r| r.to_string()).collect();
            assert_eq!(changes(format, event), Ok(rows), "{event}");
        }
        for (format, event, says) in [
            (
                &canal,
                r#"{"data":null,"type":"ALTER"}"#,
                "\"type\" is 'ALTER'",
            ),
            (
                &canal,
                r#"{"data":{"id":1},"type":"INSERT"}"#,
                "\"data\" is not a list",
            ),
            (&maxwell, r#"{"type":"insert"}"#, "without \"data\""),
            (
                &maxwell,
                r#"{"data":{"id":1},"type":"bootstrap-start"}"#,
                "'bootstrap-start'",
            ),
        ] {
            let e = changes(format, event).expect_err(event);
            assert!(e.contains(says), "{e}");
        }
        // Written, a new row is an insert and an old one a delete.
        let values = [Value::BigInt(1), Value::string("a")];
        for format in [&canal, &maxwell] {
            for (kind, read_back) in [
                (RowKind::UpdateAfter, "+I[1, a]"),
                (RowKind::UpdateBefore, "-D[1, a]"),
            ] {
                let event = format.encode_change(kind, &columns, &values);
                assert_eq!(
                    changes(format, &event),
                    Ok(vec![read_back.to_string()]),
                    "{event}"
                );
            }
        }
    }

    #[test]
    fn csv_rows_quote_what_needs_it() {
        let csv = RowFormat::Csv {
            delimiter: ',',
            null_literal: None,
            ignore_parse_errors: false,
            allow_comments: false,
        };
        let values = vec![
            Value::BigInt(1),
            Value::string("a, \"b\""),
            Value::Null,
            Value::Timestamp(0),
            Value::Null,
            Value::Boolean(true),
        ];
        let line = csv.encode(&columns(), &values);
        assert_eq!(line, r#"1,"a, ""b""",,1970-01-01 00:00:00.000,,TRUE"#);
    }
}
