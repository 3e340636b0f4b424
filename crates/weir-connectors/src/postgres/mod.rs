//! PostgreSQL sinks, the two ways Flink's JDBC sinks give exactly-once
//! results:
//!
//! - [`PostgresSink::upsert`]: `INSERT … ON CONFLICT (key) DO UPDATE`,
//!   batched by size and flushed on every checkpoint barrier before the
//!   barrier is acknowledged. Delivery is at-least-once (a restart replays
//!   what came after the checkpoint), and because an upsert is idempotent
//!   each key's row ends as it would have without the failure.
//! - [`PostgresSink::exactly_once`]: rows of a checkpoint go into one
//!   transaction, which the barrier turns into a prepared transaction
//!   (`PREPARE TRANSACTION`) and the checkpoint's completion commits
//!   (`COMMIT PREPARED`); see [`two_phase`].
//!
//! Rows are the parameters a closure makes of each record, in the order of
//! the columns given. [`PostgresSource`] reads a table as a bounded
//! source; [`PostgresLookup`] looks its rows up by key (a lookup join).
//!
//! ```no_run
//! use weir::prelude::*;
//! use weir_connectors::postgres::PostgresSink;
//!
//! # fn main() -> anyhow::Result<()> {
//! let env = StreamExecutionEnvironment::new();
//! env.from_elements(vec![("to".to_string(), 2i64), ("be".to_string(), 2)])
//!     .add_sink(PostgresSink::upsert(
//!         "postgres://postgres@127.0.0.1:5432/postgres",
//!         "word_counts",
//!         &["word", "total"],
//!         &["word"],
//!         |(word, total): &(String, i64)| vec![Box::new(word.clone()), Box::new(*total)],
//!     ));
//! env.execute("counts to PostgreSQL")?;
//! # Ok(())
//! # }
//! ```

pub mod local;
pub mod lookup;
pub mod source;
pub mod two_phase;

use std::marker::PhantomData;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub use postgres::types::ToSql;
use postgres::{Client, NoTls, Statement};
use weir::functions::{FunctionResult, RuntimeContext, SinkContext, SinkFunction};

pub use local::{LocalPostgres, LocalPostgresError};
pub use lookup::PostgresLookup;
pub use source::PostgresSource;
pub use two_phase::PostgresTwoPhaseCommit;

/// One row's parameters, in the order of the sink's columns.
pub type Row = Vec<Box<dyn ToSql + Sync + Send>>;

/// Makes a row of a record.
pub type RowFn<T> = Arc<dyn Fn(&T) -> Row + Send + Sync>;

/// Why a PostgreSQL sink failed.
#[derive(Debug, thiserror::Error)]
pub enum PostgresSinkError {
    /// The table, columns or keys given cannot make a statement.
    #[error("PostgreSQL sink: {0}")]
    Config(String),
    /// The server could not be reached.
    #[error("cannot connect to PostgreSQL at {url}: {}", describe(cause))]
    Connect {
        /// The URL, without its password.
        url: String,
        /// Why.
        cause: postgres::Error,
    },
    /// A statement failed.
    #[error("PostgreSQL: {what}: {}", describe(cause))]
    Statement {
        /// What was being done.
        what: String,
        /// What the server said.
        cause: postgres::Error,
    },
}

/// A client error with what the server said, when it said something (the
/// client's own text is only "db error").
fn describe(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => {
            let mut text = format!("{} ({}): {}", db.severity(), db.code().code(), db.message());
            if let Some(detail) = db.detail() {
                text.push_str(&format!(" ({detail})"));
            }
            text
        }
        None => match std::error::Error::source(e) {
            Some(cause) => format!("{e}: {cause}"),
            None => e.to_string(),
        },
    }
}

impl PostgresSinkError {
    pub(crate) fn statement(what: impl Into<String>) -> impl FnOnce(postgres::Error) -> Self {
        let what = what.into();
        move |cause| PostgresSinkError::Statement { what, cause }
    }
}

/// `url` with any password replaced, for messages.
pub(crate) fn redacted(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let user_info = &url[scheme + 3..at];
            match user_info.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..scheme + 3], &url[at..]),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
}

pub(crate) fn connect(url: &str) -> Result<Client, PostgresSinkError> {
    Client::connect(url, NoTls).map_err(|cause| PostgresSinkError::Connect {
        url: redacted(url),
        cause,
    })
}

/// Rows per insert statement: one round trip writes this many.
pub(crate) const ROWS_PER_STATEMENT: usize = 500;

/// A subtask's session, kept in a mutex only so that the sink is `Sync`.
pub(crate) type Session = Mutex<Option<(Client, Inserts)>>;

/// The session slot, without locking (the subtask owns it).
pub(crate) fn session_slot(session: &mut Session) -> &mut Option<(Client, Inserts)> {
    crate::unshared(session)
}

/// The open session, if any.
pub(crate) fn session(session: &mut Session) -> Option<(&mut Client, &Inserts)> {
    session_slot(session).as_mut().map(|(c, s)| (c, &*s))
}

/// How a session writes rows: the table's column types (each parameter is
/// cast to its column's type, so that a multi-row statement needs no
/// inference), and the statement for a full batch, prepared once.
pub(crate) struct Inserts {
    types: Vec<String>,
    full: Statement,
}

/// Runs `sql` (one or more statements) on the server at `url`, e.g. to
/// create a sink's table.
pub fn execute(url: &str, sql: &str) -> Result<(), PostgresSinkError> {
    connect(url)?
        .batch_execute(sql)
        .map_err(PostgresSinkError::statement(sql.to_string()))
}

/// Whether `name` is a plain SQL identifier (letters, digits, `_`, `.` for
/// a schema), so that it can be written into a statement as it is.
fn identifier(name: &str) -> Result<&str, PostgresSinkError> {
    let plain = !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
    if plain {
        Ok(name)
    } else {
        Err(PostgresSinkError::Config(format!(
            "'{name}' is not a plain identifier (letters, digits, '_', a schema with '.')"
        )))
    }
}

/// `INSERT INTO table (cols) VALUES ($1::type, …), …` for `rows` rows,
/// with `ON CONFLICT (keys) DO UPDATE SET` the other columns when `keys`
/// are given. With keys, rows of a statement that share a key are first
/// reduced to the last of them (`DISTINCT ON`, in the order given), as
/// applying them one after the other would leave it: PostgreSQL refuses
/// to update one row twice in a statement.
pub(crate) fn insert_statement(
    table: &str,
    columns: &[String],
    keys: &[String],
    types: &[String],
    rows: usize,
) -> Result<String, PostgresSinkError> {
    if columns.is_empty() {
        return Err(PostgresSinkError::Config("no columns".into()));
    }
    let table = identifier(table)?;
    let cols = columns
        .iter()
        .map(|c| identifier(c))
        .collect::<Result<Vec<_>, _>>()?;
    let n = cols.len();
    let values: Vec<String> = (0..rows.max(1))
        .map(|row| {
            let mut params: Vec<String> = (0..n)
                .map(|c| {
                    let cast = types.get(c).map_or(String::new(), |t| format!("::{t}"));
                    format!("${}{cast}", row * n + c + 1)
                })
                .collect();
            if !keys.is_empty() {
                params.push(row.to_string());
            }
            format!("({})", params.join(", "))
        })
        .collect();
    let mut sql = if keys.is_empty() {
        format!(
            "INSERT INTO {table} ({}) VALUES {}",
            cols.join(", "),
            values.join(", ")
        )
    } else {
        let key_cols: Vec<&str> = keys.iter().map(String::as_str).collect();
        format!(
            "INSERT INTO {table} ({cols}) SELECT DISTINCT ON ({keys}) {cols} FROM (VALUES {values}) \
             AS weir_rows ({cols}, weir_order) ORDER BY {keys}, weir_order DESC",
            cols = cols.join(", "),
            keys = key_cols.join(", "),
            values = values.join(", ")
        )
    };
    if !keys.is_empty() {
        for key in keys {
            if !columns.contains(key) {
                return Err(PostgresSinkError::Config(format!(
                    "key column '{key}' is not among the columns {columns:?}"
                )));
            }
        }
        let updates: Vec<String> = cols
            .iter()
            .filter(|c| !keys.iter().any(|k| k == *c))
            .map(|c| format!("{c} = EXCLUDED.{c}"))
            .collect();
        let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
        if updates.is_empty() {
            sql.push_str(&format!(" ON CONFLICT ({}) DO NOTHING", keys.join(", ")));
        } else {
            sql.push_str(&format!(
                " ON CONFLICT ({}) DO UPDATE SET {}",
                keys.join(", "),
                updates.join(", ")
            ));
        }
    }
    Ok(sql)
}

/// Where and how a sink writes.
pub(crate) struct Target<T> {
    pub url: String,
    pub table: String,
    pub columns: Vec<String>,
    pub keys: Vec<String>,
    pub row: RowFn<T>,
    /// Rows of text values (from a serde type), which the server converts
    /// to the columns' types.
    pub text_values: bool,
    /// Which records delete their key's row rather than upsert it (none
    /// without this).
    pub deletes: Option<DeleteFn<T>>,
    /// For rows of text values, the function that makes them (to compare
    /// keys).
    pub texts: Option<TextFn<T>>,
}

/// A record's row as text values.
pub type TextFn<T> = Arc<dyn Fn(&T) -> Vec<Option<String>> + Send + Sync>;

/// Whether a record deletes its key's row.
pub type DeleteFn<T> = Arc<dyn Fn(&T) -> bool + Send + Sync>;

impl<T> Clone for Target<T> {
    fn clone(&self) -> Self {
        Target {
            url: self.url.clone(),
            table: self.table.clone(),
            columns: self.columns.clone(),
            keys: self.keys.clone(),
            row: Arc::clone(&self.row),
            text_values: self.text_values,
            deletes: self.deletes.clone(),
            texts: self.texts.clone(),
        }
    }
}

impl<T> Target<T> {
    fn new(
        url: &str,
        table: &str,
        columns: &[&str],
        keys: &[&str],
        row: impl Fn(&T) -> Row + Send + Sync + 'static,
    ) -> Self {
        Target {
            url: url.to_string(),
            table: table.to_string(),
            columns: columns.iter().map(|c| c.to_string()).collect(),
            keys: keys.iter().map(|k| k.to_string()).collect(),
            row: Arc::new(row),
            text_values: false,
            deletes: None,
            texts: None,
        }
    }

    /// Rows from a serde type: each column takes the field of its name.
    fn serde(url: &str, table: &str, columns: &[&str], keys: &[&str]) -> Self
    where
        T: serde::Serialize,
    {
        let names: Vec<String> = columns.iter().map(|c| c.to_string()).collect();
        let mut target = Target::new(url, table, columns, keys, move |record: &T| -> Row {
            text_row(record, &names)
        });
        target.text_values = true;
        target
    }

    /// Rows of text values (`None`: NULL), each converted by the server to
    /// its column's type.
    fn text(
        url: &str,
        table: &str,
        columns: &[&str],
        keys: &[&str],
        row: impl Fn(&T) -> Vec<Option<String>> + Send + Sync + 'static,
    ) -> Self
    where
        T: 'static,
    {
        let row: TextFn<T> = Arc::new(row);
        let texts = Arc::clone(&row);
        let mut target = Target::new(url, table, columns, keys, move |record: &T| -> Row {
            texts(record)
                .into_iter()
                .map(|v| Box::new(v) as Box<dyn ToSql + Sync + Send>)
                .collect()
        });
        target.text_values = true;
        target.texts = Some(row);
        target
    }

    /// Whether `a` and `b` are of one key, as far as text rows tell
    /// (`false` for other rows).
    fn same_key(&self, a: &T, b: &T) -> bool {
        let Some(texts) = &self.texts else {
            return false;
        };
        let (a, b) = (texts(a), texts(b));
        self.keys.iter().all(|k| {
            self.columns
                .iter()
                .position(|c| c == k)
                .is_some_and(|i| a.get(i).is_some() && a.get(i) == b.get(i))
        })
    }

    /// Connects, reads the table's column types and prepares the insert
    /// of a full batch.
    pub(crate) fn open(&self) -> Result<(Client, Inserts), PostgresSinkError> {
        let mut client = connect(&self.url)?;
        let table = identifier(&self.table)?;
        let found = client
            .query(
                "SELECT a.attname::text, format_type(a.atttypid, a.atttypmod) \
                 FROM pg_attribute a WHERE a.attrelid = $1::text::regclass \
                 AND a.attnum > 0 AND NOT a.attisdropped",
                &[&table],
            )
            .map_err(PostgresSinkError::statement(format!(
                "reading the columns of {table}"
            )))?;
        let mut types = Vec::new();
        for column in &self.columns {
            let ty = found
                .iter()
                .find(|r| r.get::<_, String>(0) == *column)
                .map(|r| r.get::<_, String>(1))
                .ok_or_else(|| {
                    PostgresSinkError::Config(format!("table {table} has no column '{column}'"))
                })?;
            // Text values are converted by the server: `$1::text::bigint`.
            types.push(if self.text_values {
                format!("text::{ty}")
            } else {
                ty
            });
        }
        let sql = insert_statement(
            &self.table,
            &self.columns,
            &self.keys,
            &types,
            ROWS_PER_STATEMENT,
        )?;
        let full = client
            .prepare(&sql)
            .map_err(PostgresSinkError::statement(format!(
                "preparing the insert into {table}"
            )))?;
        Ok((client, Inserts { types, full }))
    }

    /// Deletes records matching `is_delete` delete their key's row (the
    /// others upsert it).
    pub(crate) fn with_deletes(
        mut self,
        is_delete: DeleteFn<T>,
    ) -> Result<Self, PostgresSinkError> {
        if self.keys.is_empty() {
            return Err(PostgresSinkError::Config(
                "deletes need key columns to delete by".into(),
            ));
        }
        self.deletes = Some(is_delete);
        Ok(self)
    }

    /// Writes `records` on `client` (or a transaction), in order: each run
    /// of upserts up to [`ROWS_PER_STATEMENT`] rows per statement, each
    /// run of deletes in one `DELETE … WHERE (keys) IN (…)` per as many.
    pub(crate) fn write_all(
        &self,
        client: &mut impl postgres::GenericClient,
        inserts: &Inserts,
        records: &[T],
    ) -> Result<(), PostgresSinkError> {
        let Some(is_delete) = &self.deletes else {
            let all: Vec<&T> = records.iter().collect();
            return self.upsert_all(client, inserts, &all);
        };
        // A delete right before an upsert of its key is replaced by the
        // upsert anyway (a changelog's `-U` before its `+U`): left out.
        let kept: Vec<bool> = (0..records.len())
            .map(|i| {
                !is_delete(&records[i])
                    || !records
                        .get(i + 1)
                        .is_some_and(|next| !is_delete(next) && self.same_key(&records[i], next))
            })
            .collect();
        if kept.iter().any(|k| !k) {
            let kept: Vec<&T> = records
                .iter()
                .zip(&kept)
                .filter(|(_, k)| **k)
                .map(|(r, _)| r)
                .collect();
            return self.write_runs(client, inserts, &kept, is_delete);
        }
        let all: Vec<&T> = records.iter().collect();
        self.write_runs(client, inserts, &all, is_delete)
    }

    /// Writes `records` as runs of deletes and of upserts, in order.
    fn write_runs(
        &self,
        client: &mut impl postgres::GenericClient,
        inserts: &Inserts,
        records: &[&T],
        is_delete: &DeleteFn<T>,
    ) -> Result<(), PostgresSinkError> {
        let mut rest = records;
        while let Some(first) = rest.first() {
            let deleting = is_delete(first);
            let run = rest
                .iter()
                .position(|r| is_delete(r) != deleting)
                .unwrap_or(rest.len());
            let (this, next) = rest.split_at(run);
            if deleting {
                self.delete_all(client, inserts, this)?;
            } else {
                self.upsert_all(client, inserts, this)?;
            }
            rest = next;
        }
        Ok(())
    }

    /// Deletes the rows of `records`' keys.
    fn delete_all(
        &self,
        client: &mut impl postgres::GenericClient,
        inserts: &Inserts,
        records: &[&T],
    ) -> Result<(), PostgresSinkError> {
        let table = identifier(&self.table)?;
        let keys: Vec<usize> = self
            .keys
            .iter()
            .map(|k| {
                self.columns.iter().position(|c| c == k).ok_or_else(|| {
                    PostgresSinkError::Config(format!(
                        "key column '{k}' is not among the columns {:?}",
                        self.columns
                    ))
                })
            })
            .collect::<Result<_, _>>()?;
        let names = self
            .keys
            .iter()
            .map(|k| identifier(k))
            .collect::<Result<Vec<_>, _>>()?;
        for chunk in records.chunks(ROWS_PER_STATEMENT) {
            let rows: Vec<Row> = chunk.iter().map(|r| (self.row)(r)).collect();
            let mut params: Vec<&(dyn ToSql + Sync)> = Vec::new();
            let mut tuples = Vec::new();
            for row in &rows {
                let mut tuple = Vec::new();
                for &k in &keys {
                    let value = row.get(k).ok_or_else(|| {
                        PostgresSinkError::Config(format!(
                            "a row has {} values for {} columns",
                            row.len(),
                            self.columns.len()
                        ))
                    })?;
                    params.push(value.as_ref() as &(dyn ToSql + Sync));
                    let cast = inserts
                        .types
                        .get(k)
                        .map_or(String::new(), |t| format!("::{t}"));
                    tuple.push(format!("${}{cast}", params.len()));
                }
                tuples.push(format!("({})", tuple.join(", ")));
            }
            let sql = format!(
                "DELETE FROM {table} WHERE ({}) IN ({})",
                names.join(", "),
                tuples.join(", ")
            );
            client
                .execute(sql.as_str(), &params)
                .map_err(PostgresSinkError::statement(format!(
                    "deleting rows from {}",
                    self.table
                )))?;
        }
        Ok(())
    }

    fn upsert_all(
        &self,
        client: &mut impl postgres::GenericClient,
        inserts: &Inserts,
        records: &[&T],
    ) -> Result<(), PostgresSinkError> {
        for chunk in records.chunks(ROWS_PER_STATEMENT) {
            let rows: Vec<Row> = chunk.iter().map(|r| (self.row)(r)).collect();
            if let Some(row) = rows.iter().find(|r| r.len() != self.columns.len()) {
                return Err(PostgresSinkError::Config(format!(
                    "a row has {} values for {} columns",
                    row.len(),
                    self.columns.len()
                )));
            }
            let params: Vec<&(dyn ToSql + Sync)> = rows
                .iter()
                .flatten()
                .map(|p| p.as_ref() as &(dyn ToSql + Sync))
                .collect();
            let written = if chunk.len() == ROWS_PER_STATEMENT {
                client.execute(&inserts.full, &params)
            } else {
                let sql = insert_statement(
                    &self.table,
                    &self.columns,
                    &self.keys,
                    &inserts.types,
                    chunk.len(),
                )?;
                client.execute(sql.as_str(), &params)
            };
            written.map_err(PostgresSinkError::statement(format!(
                "writing rows into {}",
                self.table
            )))?;
        }
        Ok(())
    }
}

/// The values of `record`'s fields named `columns`, as text (numbers and
/// booleans written out, nested values as JSON, a missing or null field
/// as NULL).
fn text_row<T: serde::Serialize>(record: &T, columns: &[String]) -> Row {
    let value = serde_json::to_value(record).unwrap_or(serde_json::Value::Null);
    columns
        .iter()
        .map(|column| {
            let text: Option<String> = match value.get(column) {
                None | Some(serde_json::Value::Null) => None,
                Some(serde_json::Value::String(s)) => Some(s.clone()),
                Some(other) => Some(other.to_string()),
            };
            Box::new(text) as Box<dyn ToSql + Sync + Send>
        })
        .collect()
}

/// The sinks' constructors (Flink's `JdbcSink`).
pub struct PostgresSink;

impl PostgresSink {
    /// Upserts each record's row into `table`: rows with the same `keys`
    /// replace each other (the other columns are updated). Idempotent, so
    /// at-least-once delivery leaves each key's final row exactly as a run
    /// without failures would. Batches of 500 rows or 200 ms, and every
    /// checkpoint barrier, flush.
    pub fn upsert<T>(
        url: &str,
        table: &str,
        columns: &[&str],
        keys: &[&str],
        row: impl Fn(&T) -> Row + Send + Sync + 'static,
    ) -> PostgresUpsertSink<T> {
        PostgresUpsertSink {
            target: Target::new(url, table, columns, keys, row),
            batch_size: 500,
            batch_interval: Duration::from_millis(200),
            connection: Mutex::new(None),
            buffer: Vec::new(),
            last_flush: Instant::now(),
            _type: PhantomData,
        }
    }

    /// [`upsert`](Self::upsert) of a serde type: each of `columns` takes
    /// the record's field of that name, converted by the server to the
    /// column's type (a field that is missing or `None` is NULL).
    pub fn upsert_serde<T: serde::Serialize>(
        url: &str,
        table: &str,
        columns: &[&str],
        keys: &[&str],
    ) -> PostgresUpsertSink<T> {
        let mut sink = Self::upsert(url, table, columns, keys, |_: &T| Row::new());
        sink.target = Target::serde(url, table, columns, keys);
        sink
    }

    /// [`upsert`](Self::upsert) of rows of text values (`None`: NULL),
    /// each converted by the server to its column's type (as `'42'` to a
    /// `bigint`): for records that are not Rust types of their own, such
    /// as SQL rows.
    pub fn upsert_text<T: 'static>(
        url: &str,
        table: &str,
        columns: &[&str],
        keys: &[&str],
        row: impl Fn(&T) -> Vec<Option<String>> + Send + Sync + 'static,
    ) -> PostgresUpsertSink<T> {
        let mut sink = Self::upsert(url, table, columns, keys, |_: &T| Row::new());
        sink.target = Target::text(url, table, columns, keys, row);
        sink
    }

    /// [`exactly_once`](Self::exactly_once) of rows of text values (see
    /// [`upsert_text`](Self::upsert_text)).
    pub fn exactly_once_text<T: Send + 'static>(
        url: &str,
        table: &str,
        columns: &[&str],
        keys: &[&str],
        row: impl Fn(&T) -> Vec<Option<String>> + Send + Sync + 'static,
    ) -> weir::sink::TwoPhaseCommitSink<PostgresTwoPhaseCommit<T>, T> {
        weir::sink::TwoPhaseCommitSink::new(PostgresTwoPhaseCommit::new(Target::text(
            url, table, columns, keys, row,
        )))
    }

    /// [`exactly_once_text`](Self::exactly_once_text) of a changelog:
    /// records for which `is_delete` holds delete their key's row (see
    /// [`PostgresUpsertSink::with_deletes`]), in order with the upserts,
    /// inside the checkpoint's transaction.
    pub fn exactly_once_text_with_deletes<T: Send + 'static>(
        url: &str,
        table: &str,
        columns: &[&str],
        keys: &[&str],
        row: impl Fn(&T) -> Vec<Option<String>> + Send + Sync + 'static,
        is_delete: impl Fn(&T) -> bool + Send + Sync + 'static,
    ) -> Result<weir::sink::TwoPhaseCommitSink<PostgresTwoPhaseCommit<T>, T>, PostgresSinkError>
    {
        let target =
            Target::text(url, table, columns, keys, row).with_deletes(Arc::new(is_delete))?;
        Ok(weir::sink::TwoPhaseCommitSink::new(
            PostgresTwoPhaseCommit::new(target),
        ))
    }

    /// [`exactly_once`](Self::exactly_once) of a serde type (see
    /// [`upsert_serde`](Self::upsert_serde)).
    pub fn exactly_once_serde<T: serde::Serialize + Send + 'static>(
        url: &str,
        table: &str,
        columns: &[&str],
        keys: &[&str],
    ) -> weir::sink::TwoPhaseCommitSink<PostgresTwoPhaseCommit<T>, T> {
        weir::sink::TwoPhaseCommitSink::new(PostgresTwoPhaseCommit::new(Target::serde(
            url, table, columns, keys,
        )))
    }

    /// Writes each record's row into `table` exactly once: a transaction
    /// per checkpoint, prepared on the barrier and committed when the
    /// checkpoint completes (see [`two_phase`]). `keys` may be empty (plain
    /// inserts) or name a conflict key to upsert on.
    pub fn exactly_once<T: Send + 'static>(
        url: &str,
        table: &str,
        columns: &[&str],
        keys: &[&str],
        row: impl Fn(&T) -> Row + Send + Sync + 'static,
    ) -> weir::sink::TwoPhaseCommitSink<PostgresTwoPhaseCommit<T>, T> {
        weir::sink::TwoPhaseCommitSink::new(PostgresTwoPhaseCommit::new(Target::new(
            url, table, columns, keys, row,
        )))
    }
}

/// The upsert sink ([`PostgresSink::upsert`]).
pub struct PostgresUpsertSink<T> {
    target: Target<T>,
    batch_size: usize,
    batch_interval: Duration,
    /// In a mutex only to be `Sync`, as sinks must be (a subtask has its
    /// own and reaches it through `get_mut`, without locking).
    connection: Session,
    buffer: Vec<T>,
    last_flush: Instant,
    _type: PhantomData<fn(T)>,
}

impl<T> Clone for PostgresUpsertSink<T> {
    fn clone(&self) -> Self {
        PostgresUpsertSink {
            target: self.target.clone(),
            batch_size: self.batch_size,
            batch_interval: self.batch_interval,
            connection: Mutex::new(None),
            buffer: Vec::new(),
            last_flush: Instant::now(),
            _type: PhantomData,
        }
    }
}

impl<T> PostgresUpsertSink<T> {
    /// Flushes every `rows` rows (500).
    pub fn with_batch_size(mut self, rows: usize) -> Self {
        self.batch_size = rows.max(1);
        self
    }

    /// Makes the records for which `is_delete` holds delete their key's
    /// row (`DELETE … WHERE (keys) IN (…)`) instead of upserting it, as a
    /// changelog's `-D` rows do; deletes and upserts are written in the
    /// order they arrive. Needs key columns.
    pub fn with_deletes(
        mut self,
        is_delete: impl Fn(&T) -> bool + Send + Sync + 'static,
    ) -> Result<Self, PostgresSinkError> {
        self.target = self.target.with_deletes(Arc::new(is_delete))?;
        Ok(self)
    }

    /// Flushes a batch once it is `interval` old (200 ms), checked as
    /// records arrive; barriers and the end of input flush in any case.
    pub fn with_batch_interval(mut self, interval: Duration) -> Self {
        self.batch_interval = interval;
        self
    }

    /// Writes the buffered rows in one transaction.
    fn flush(&mut self) -> FunctionResult {
        self.last_flush = Instant::now();
        if self.buffer.is_empty() {
            return Ok(());
        }
        let Some((client, inserts)) = session(&mut self.connection) else {
            return Err("the PostgreSQL sink was not opened".into());
        };
        let mut tx = client
            .transaction()
            .map_err(PostgresSinkError::statement("beginning a batch"))?;
        self.target.write_all(&mut tx, inserts, &self.buffer)?;
        tx.commit()
            .map_err(PostgresSinkError::statement("committing a batch"))?;
        self.buffer.clear();
        Ok(())
    }
}

impl<T: Send + 'static> SinkFunction<T> for PostgresUpsertSink<T> {
    fn default_name(&self) -> String {
        format!("PostgreSQL upsert: {}", self.target.table)
    }

    fn open(&mut self, _ctx: &RuntimeContext) -> FunctionResult {
        *session_slot(&mut self.connection) = Some(self.target.open()?);
        self.last_flush = Instant::now();
        Ok(())
    }

    fn invoke(&mut self, value: T, _ctx: &SinkContext) -> FunctionResult {
        self.buffer.push(value);
        if self.buffer.len() >= self.batch_size || self.last_flush.elapsed() >= self.batch_interval
        {
            self.flush()?;
        }
        Ok(())
    }

    /// Everything received before the barrier is written before the
    /// barrier is acknowledged: a restored checkpoint never misses a row.
    fn snapshot_state(&mut self, _checkpoint_id: u64) -> FunctionResult {
        self.flush()
    }

    fn finish(&mut self) -> FunctionResult {
        self.flush()
    }

    fn close(&mut self) -> FunctionResult {
        *session_slot(&mut self.connection) = None;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_upsert_on_their_keys() {
        let cols = |c: &[&str]| c.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let types = cols(&["text", "bigint", "bigint"]);
        // Rows of a statement that share a key: the last one wins.
        assert_eq!(
            insert_statement("t", &cols(&["k", "v", "w"]), &cols(&["k"]), &types, 2).unwrap(),
            "INSERT INTO t (k, v, w) SELECT DISTINCT ON (k) k, v, w FROM (VALUES \
             ($1::text, $2::bigint, $3::bigint, 0), ($4::text, $5::bigint, $6::bigint, 1)) \
             AS weir_rows (k, v, w, weir_order) ORDER BY k, weir_order DESC \
             ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v, w = EXCLUDED.w"
        );
        assert_eq!(
            insert_statement("s.t", &cols(&["a", "b"]), &[], &types[1..], 2).unwrap(),
            "INSERT INTO s.t (a, b) VALUES ($1::bigint, $2::bigint), ($3::bigint, $4::bigint)"
        );
        assert_eq!(
            insert_statement("t", &cols(&["k"]), &cols(&["k"]), &types[..1], 1).unwrap(),
            "INSERT INTO t (k) SELECT DISTINCT ON (k) k FROM (VALUES ($1::text, 0)) \
             AS weir_rows (k, weir_order) ORDER BY k, weir_order DESC ON CONFLICT (k) DO NOTHING"
        );
        let bad = insert_statement("t; drop table x", &cols(&["a"]), &[], &[], 1).unwrap_err();
        assert!(bad.to_string().contains("not a plain identifier"), "{bad}");
        let bad = insert_statement("t", &cols(&["a"]), &cols(&["b"]), &[], 1).unwrap_err();
        assert!(bad.to_string().contains("key column 'b'"), "{bad}");
    }

    #[test]
    fn passwords_stay_out_of_messages() {
        assert_eq!(
            redacted("postgres://me:secret@db:5432/x"),
            "postgres://me:***@db:5432/x"
        );
        assert_eq!(redacted("postgres://me@db/x"), "postgres://me@db/x");
    }
}
