//! PostgreSQL tables (`'connector' = 'jdbc'` with a `jdbc:postgresql://…`
//! url, as Flink's JDBC connector, or `'postgres'`): as a source, the
//! table read once (bounded); in a lookup join, its rows looked up by
//! key ([`JdbcLookup`]); as a sink,
//! with a `PRIMARY KEY`, each `+I`/`+U` row is upserted on its key and
//! each `-D`/`-U` row deletes its key's row, in the changelog's order (a
//! `-U` right before its key's `+U` is left out, the upsert replacing the
//! row); without one rows are inserted (inserts-only queries). Rows
//! are batched (`sink.buffer-flush.max-rows`, `.interval`) and flushed on
//! every checkpoint; `'sink.delivery-guarantee' = 'exactly-once'` writes a
//! transaction per checkpoint, committed when it completes (two-phase
//! commit). Values are sent as text and cast by the server to the
//! columns' types.

use std::time::Duration;

use weir::prelude::*;
use weir_connectors::postgres::{PostgresLookup, PostgresSink, PostgresSource};

use crate::catalog::TableDef;
use crate::connector::{append_only, check_options, connector_error, RowDecoder, TableRows};
use crate::error::SqlError;
use crate::format::RowFormat;
use crate::types::SqlType;
use crate::value::{Row, Value};

/// The options of a PostgreSQL table's connection.
const SOURCE_OPTIONS: &[&str] = &[
    "connector",
    "url",
    "table-name",
    "username",
    "password",
    "driver",
];

/// The options of looking a PostgreSQL table's rows up (a lookup join),
/// as Flink's JDBC connector names them (its older names too).
const LOOKUP_OPTIONS: &[&str] = &[
    "lookup.cache",
    "lookup.partial-cache.max-rows",
    "lookup.partial-cache.expire-after-write",
    "lookup.partial-cache.cache-missing-key",
    "lookup.cache.max-rows",
    "lookup.cache.ttl",
    "lookup.cache.caching-missing-key",
    "lookup.max-retries",
];

/// The options of writing a PostgreSQL table.
const SINK_OPTIONS: &[&str] = &[
    "sink.buffer-flush.max-rows",
    "sink.buffer-flush.interval",
    "sink.delivery-guarantee",
];

/// Reads a PostgreSQL table once (a bounded source, as Flink's JDBC scan
/// source): the columns the query reads, ordered by the table's primary
/// key when it declares one (so that a restored job skips the rows it
/// read before, in the same order).
pub(crate) fn jdbc_source(
    env: &StreamExecutionEnvironment,
    table: &TableDef,
    rows: &TableRows,
    physical: &[bool],
) -> Result<DataStream<Row>, SqlError> {
    let Connection {
        url,
        target,
        columns,
    } = connection(table)?;
    // A query that reads no column (COUNT(*)) still needs a row per row.
    let mut read = physical.to_vec();
    if !read.contains(&true) && !read.is_empty() {
        read[0] = true;
    }
    let names: Vec<&str> = columns
        .iter()
        .zip(&read)
        .filter(|(_, r)| **r)
        .map(|((n, _), _)| n.as_str())
        .collect();
    let keys: Vec<&str> = table.primary_key.iter().map(String::as_str).collect();
    let source = PostgresSource::text(&url, target, &names, &keys)
        .map_err(|e| connector_error(table, e.to_string()))?;
    // Only the layout is used: the values come as PostgreSQL's text.
    let format = RowFormat::Csv {
        delimiter: ',',
        null_literal: None,
        ignore_parse_errors: false,
        allow_comments: false,
    };
    let decode = RowDecoder::new(table, rows, &read, format);
    let name = table.name.clone();
    let uid = crate::plan::state_uid(&format!("Source[{}; jdbc]", name.to_lowercase()));
    let stream = env
        .add_source(source, &format!("{name}[jdbc]"))
        .uid(&uid)
        .process(
            move |texts: Vec<Option<String>>,
                  _ctx: &mut ProcessContext<'_>,
                  out: &mut Collector<'_, Row>| {
                out.collect(decode.finish(values_of(texts, &columns, &read, &name)?)?);
                Ok(())
            },
        );
    Ok(stream)
}

/// Where a PostgreSQL table's rows are: the server's URL, the table's
/// name there, and its physical columns.
struct Connection<'a> {
    url: String,
    target: &'a str,
    columns: Vec<(String, SqlType)>,
}

/// A table's [`Connection`]. A table may be read, looked up and written:
/// it takes all their options.
fn connection(table: &TableDef) -> Result<Connection<'_>, SqlError> {
    check_options(
        table,
        &[SOURCE_OPTIONS, LOOKUP_OPTIONS, SINK_OPTIONS].concat(),
    )?;
    check_driver(table)?;
    let url = server_url(table)?;
    let target = required(table, "table-name")?;
    let columns = table.physical().map(|(n, t)| (n.to_string(), t)).collect();
    Ok(Connection {
        url,
        target,
        columns,
    })
}

/// The values of `columns` (of table `name`) from the text of those
/// `read` (the others NULL).
fn values_of(
    texts: Vec<Option<String>>,
    columns: &[(String, SqlType)],
    read: &[bool],
    name: &str,
) -> Result<Vec<Value>, String> {
    let mut texts = texts.into_iter();
    let mut values = Vec::with_capacity(columns.len());
    for ((column, ty), r) in columns.iter().zip(read) {
        let text = if *r { texts.next().flatten() } else { None };
        values.push(match text {
            None => Value::Null,
            Some(t) => from_postgres(&t, *ty)
                .map_err(|e| format!("table '{name}', column '{column}': {e}"))?,
        });
    }
    Ok(values)
}

/// A PostgreSQL table's rows looked up by the values of its columns
/// `keys` (a lookup join's right side): all its columns, computed ones
/// included.
#[derive(Clone)]
pub(crate) struct JdbcLookup {
    lookup: PostgresLookup,
    columns: Vec<(String, SqlType)>,
    /// Every column: a look-up reads them all.
    read: Vec<bool>,
    decode: RowDecoder,
    name: String,
}

/// Looks `table`'s rows up by `keys`, with the table's lookup options.
pub(crate) fn jdbc_lookup(
    table: &TableDef,
    rows: &TableRows,
    keys: &[&str],
) -> Result<JdbcLookup, SqlError> {
    let Connection {
        url,
        target,
        columns,
    } = connection(table)?;
    let names: Vec<&str> = columns.iter().map(|(n, _)| n.as_str()).collect();
    let mut lookup = PostgresLookup::text(&url, target, &names, keys)
        .map_err(|e| connector_error(table, e.to_string()))?;
    let number = |key: &str| -> Result<Option<usize>, SqlError> {
        table
            .option(key)
            .map(|n| {
                n.trim()
                    .parse::<usize>()
                    .map_err(|_| connector_error(table, format!("'{key}' must be a number")))
            })
            .transpose()
    };
    let duration = |key: &str| -> Result<Option<Duration>, SqlError> {
        table
            .option(key)
            .map(|d| {
                weir::config::parse_duration(d)
                    .map_err(|e| connector_error(table, format!("'{key}': {e}")))
            })
            .transpose()
    };
    let flag = |key: &str| -> Result<bool, SqlError> {
        match table.option(key).map(|v| v.trim().to_ascii_lowercase()) {
            None => Ok(true),
            Some(v) if v == "true" => Ok(true),
            Some(v) if v == "false" => Ok(false),
            Some(v) => Err(connector_error(
                table,
                format!("'{key}' must be true or false, not '{v}'"),
            )),
        }
    };
    let legacy = (
        number("lookup.cache.max-rows")?,
        duration("lookup.cache.ttl")?,
    );
    let cache = match table.option("lookup.cache").map(str::to_ascii_uppercase) {
        Some(kind) if kind == "PARTIAL" => {
            let Some(max) = number("lookup.partial-cache.max-rows")? else {
                return Err(connector_error(
                    table,
                    "'lookup.cache' = 'PARTIAL' needs 'lookup.partial-cache.max-rows'",
                ));
            };
            Some((
                max,
                duration("lookup.partial-cache.expire-after-write")?,
                flag("lookup.partial-cache.cache-missing-key")?,
            ))
        }
        Some(kind) if kind == "NONE" => None,
        Some(kind) => {
            return Err(connector_error(
                table,
                format!("'lookup.cache' = '{kind}': NONE or PARTIAL (FULL is not supported)"),
            ))
        }
        // Flink's older options: both or neither.
        None => match legacy {
            (Some(max), Some(ttl)) => {
                Some((max, Some(ttl), flag("lookup.cache.caching-missing-key")?))
            }
            (None, None) => None,
            _ => {
                return Err(connector_error(
                    table,
                    "'lookup.cache.max-rows' and 'lookup.cache.ttl' go together",
                ))
            }
        },
    };
    if let Some((max, ttl, missing)) = cache {
        lookup = lookup.with_cache(max, ttl, missing);
    }
    if let Some(retries) = number("lookup.max-retries")? {
        lookup = lookup.with_max_retries(retries);
    }
    let read = vec![true; columns.len()];
    let format = RowFormat::Csv {
        delimiter: ',',
        null_literal: None,
        ignore_parse_errors: false,
        allow_comments: false,
    };
    Ok(JdbcLookup {
        lookup,
        decode: RowDecoder::new(table, rows, &read, format),
        read,
        columns,
        name: table.name.clone(),
    })
}

impl JdbcLookup {
    /// Connects and prepares the look-up: a missing table or column fails
    /// the job here, before any row flows.
    pub(crate) fn open(&mut self) -> Result<(), String> {
        self.lookup
            .open()
            .map_err(|e| format!("table '{}': {e}", self.name))
    }

    /// The rows whose key columns equal `key`.
    pub(crate) fn rows(&mut self, key: &[Value]) -> Result<Vec<Row>, String> {
        let key: Vec<Option<String>> = key.iter().map(text).collect();
        let found = self
            .lookup
            .lookup(&key)
            .map_err(|e| format!("table '{}': {e}", self.name))?;
        found
            .into_iter()
            .map(|texts| {
                self.decode
                    .finish(values_of(texts, &self.columns, &self.read, &self.name)?)
            })
            .collect()
    }
}

/// A value of type `t` from PostgreSQL's text for it (booleans as `t`/`f`,
/// bytes as `\x…` hex, times with up to microseconds and a UTC offset).
fn from_postgres(text: &str, t: SqlType) -> Result<Value, String> {
    match t {
        SqlType::Boolean => match text {
            "t" => Ok(Value::Boolean(true)),
            "f" => Ok(Value::Boolean(false)),
            other => Value::parse(other, t),
        },
        SqlType::Bytes => {
            let hex = text
                .strip_prefix("\\x")
                .ok_or_else(|| format!("'{text}' is not bytea's hex form"))?;
            (0..hex.len() / 2)
                .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16))
                .collect::<Result<Vec<u8>, _>>()
                .map(|b| Value::Bytes(b.into()))
                .map_err(|_| format!("'{text}' is not bytea's hex form"))
        }
        SqlType::Timestamp | SqlType::TimestampLtz => {
            // `2020-04-15 08:00:01.123456+00`: the offset is UTC (the
            // scan's session time zone), the fraction kept to ms.
            let plain = text
                .strip_suffix("+00")
                .or_else(|| text.strip_suffix("+00:00"))
                .unwrap_or(text);
            let trimmed = match plain.split_once('.') {
                Some((whole, fraction)) => {
                    format!("{whole}.{}", &fraction[..fraction.len().min(3)])
                }
                None => plain.to_string(),
            };
            Value::parse(&trimmed, t)
        }
        _ => Value::parse(text, t),
    }
}

fn check_driver(table: &TableDef) -> Result<(), SqlError> {
    match table.option("driver") {
        Some(driver) if driver != "org.postgresql.Driver" => Err(connector_error(
            table,
            format!(
                "'driver' = '{driver}': Weir reads and writes PostgreSQL (org.postgresql.Driver)"
            ),
        )),
        _ => Ok(()),
    }
}

fn required<'a>(table: &'a TableDef, key: &str) -> Result<&'a str, SqlError> {
    table
        .option(key)
        .ok_or_else(|| connector_error(table, format!("the option '{key}' is missing")))
}

/// The server's URL from Flink's `jdbc:postgresql://host:port/db` (or a
/// plain `postgresql://…`), with `username` and `password` if given.
fn server_url(table: &TableDef) -> Result<String, SqlError> {
    let url = required(table, "url")?;
    let plain = url.strip_prefix("jdbc:").unwrap_or(url);
    let Some(rest) = plain
        .strip_prefix("postgresql://")
        .or_else(|| plain.strip_prefix("postgres://"))
    else {
        return Err(connector_error(
            table,
            format!("'url' must be jdbc:postgresql://host:port/database, not '{url}' (PostgreSQL is the database Weir writes)"),
        ));
    };
    let credentials = match (table.option("username"), table.option("password")) {
        (Some(user), Some(password)) => format!("{user}:{password}@"),
        (Some(user), None) => format!("{user}@"),
        (None, Some(_)) => return Err(connector_error(table, "'password' without 'username'")),
        (None, None) => String::new(),
    };
    Ok(format!("postgresql://{credentials}{rest}"))
}

/// A value as the text PostgreSQL reads for its column (NULL as NULL).
fn text(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::Bytes(b) => Some(format!(
            "\\x{}",
            b.iter().map(|x| format!("{x:02x}")).collect::<String>()
        )),
        Value::TimestampLtz(_) => Some(format!("{v}+00")),
        other => Some(other.to_string()),
    }
}

fn texts(row: &Row) -> Vec<Option<String>> {
    row.values.iter().map(text).collect()
}

/// Writes `stream` (already in the table's columns) into a PostgreSQL
/// table.
pub(crate) fn jdbc_sink(
    stream: DataStream<Row>,
    table: &TableDef,
    updating: bool,
) -> Result<(), SqlError> {
    let Connection {
        url,
        target,
        columns,
    } = connection(table)?;
    let columns: Vec<String> = columns.into_iter().map(|(n, _)| n).collect();
    let keys = table.primary_key.clone();
    if keys.is_empty() {
        // Without a key there is nothing to update: inserts only.
        append_only(table, updating)?;
    }
    let column_refs: Vec<&str> = columns.iter().map(String::as_str).collect();
    let key_refs: Vec<&str> = keys.iter().map(String::as_str).collect();
    // `-D` deletes its key's row, and so does `-U`, as in Flink's JDBC
    // sink: a `-U` whose `+U` a filter dropped (`HAVING`) must not leave
    // the old row behind. A `-U` right before the `+U` of its key is left
    // out by the sink (the upsert replaces the row).
    let rows = stream;
    let is_delete = |row: &Row| row.kind.is_retraction();
    let sink_error =
        |e: weir_connectors::postgres::PostgresSinkError| connector_error(table, e.to_string());
    let uid = crate::plan::state_uid(&format!("Sink[{}; jdbc]", table.name.to_lowercase()));
    let sink_name = format!("Sink: {}[jdbc]", table.name);
    match table
        .option("sink.delivery-guarantee")
        .unwrap_or("at-least-once")
    {
        "at-least-once" => {
            let mut sink = PostgresSink::upsert_text(&url, target, &column_refs, &key_refs, texts);
            if updating {
                sink = sink.with_deletes(is_delete).map_err(sink_error)?;
            }
            if let Some(rows) = table.option("sink.buffer-flush.max-rows") {
                let n: usize = rows.trim().parse().map_err(|_| {
                    connector_error(
                        table,
                        "'sink.buffer-flush.max-rows' must be a number of rows",
                    )
                })?;
                sink = sink.with_batch_size(n);
            }
            if let Some(interval) = table.option("sink.buffer-flush.interval") {
                let every: Duration = weir::config::parse_duration(interval).map_err(|e| {
                    connector_error(table, format!("'sink.buffer-flush.interval': {e}"))
                })?;
                sink = sink.with_batch_interval(every);
            }
            rows.add_sink(sink).name(&sink_name).uid(&uid);
        }
        "exactly-once" if updating => {
            let sink = PostgresSink::exactly_once_text_with_deletes(
                &url,
                target,
                &column_refs,
                &key_refs,
                texts,
                is_delete,
            )
            .map_err(sink_error)?;
            rows.add_sink(sink).name(&sink_name).uid(&uid);
        }
        "exactly-once" => {
            rows.add_sink(PostgresSink::exactly_once_text(
                &url,
                target,
                &column_refs,
                &key_refs,
                texts,
            ))
            .name(&sink_name)
            .uid(&uid);
        }
        other => {
            let why = format!(
                "'sink.delivery-guarantee' must be at-least-once or exactly-once, not '{other}'"
            );
            return Err(connector_error(table, why));
        }
    }
    Ok(())
}
