//! Flink's streaming SQL on the Weir engine.
//!
//! A script of Flink SQL statements (`CREATE TABLE … WITH (…)`, `SET`,
//! `INSERT INTO … SELECT …`, `SELECT …`) is parsed with `sqlparser`
//! (Flink's DDL extensions — computed columns, `WATERMARK FOR`, `PRIMARY KEY
//! … NOT ENFORCED` — by this crate on top of its tokens), planned into the
//! same operators a DataStream program uses, and run as a Weir job. Rows are
//! [`Row`]s of typed [`Value`]s; expressions are compiled once per query
//! into closures.
//!
//! ```no_run
//! let mut session = weir_sql::Session::new();
//! session.execute_script(
//!     "CREATE TABLE orders (id BIGINT, amount DOUBLE) WITH (
//!        'connector' = 'filesystem', 'path' = 'orders.csv', 'format' = 'csv');
//!      CREATE TABLE out (id BIGINT, amount DOUBLE) WITH ('connector' = 'print');
//!      INSERT INTO out SELECT id, amount FROM orders WHERE amount > 10;",
//! )?;
//! # Ok::<(), weir_sql::SqlError>(())
//! ```

mod aggregate;
mod builtin;
mod catalog;
mod computed;
mod connector;
mod datagen;
mod ddl;
mod dialect;
mod error;
mod expr;
mod extremum_join;
mod format;
mod function;
mod group;
mod grouping_sets;
mod int_masks;
#[cfg(feature = "postgres")]
mod jdbc;
mod join;
mod join_aggregate;
#[cfg(feature = "kafka")]
mod kafka;
mod kept_rows;
mod key;
#[cfg(feature = "postgres")]
mod lookup_join;
mod nexmark;
mod over;
mod plan;
mod rank;
mod reuse;
mod script;
mod semi_join;
mod session;
mod temporal_join;
mod time;
mod types;
mod value;
mod values;
mod window;

pub use error::{Position, SqlError};
pub use function::FunctionBody;
pub use session::Session;
pub use types::SqlType;
pub use value::{Row, RowKind, Str, Unscaled, Value};
