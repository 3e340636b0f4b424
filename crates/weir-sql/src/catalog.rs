//! Tables and views a session knows: their columns (physical or computed),
//! watermark, primary key and connector options.

use std::collections::BTreeMap;

use sqlparser::ast::{Expr, Query};

use crate::error::{Position, SqlError};
use crate::types::SqlType;

/// A table declared with `CREATE TABLE`.
#[derive(Debug, Clone)]
pub(crate) struct TableDef {
    pub name: String,
    pub columns: Vec<Column>,
    pub watermark: Option<WatermarkDef>,
    /// `PRIMARY KEY (…) NOT ENFORCED` columns.
    pub primary_key: Vec<String>,
    /// The `WITH (…)` options, keys as written.
    pub options: BTreeMap<String, String>,
    /// Where the statement starts.
    pub at: Position,
}

/// A column of a table.
#[derive(Debug, Clone)]
pub(crate) struct Column {
    pub name: String,
    pub kind: ColumnKind,
    pub at: Position,
}

/// Where a column's values come from.
#[derive(Debug, Clone)]
pub(crate) enum ColumnKind {
    /// Read from (or written to) the connector.
    Physical { data_type: SqlType, nullable: bool },
    /// `name AS expr`: computed from the physical and metadata columns of
    /// the row.
    Computed(Box<Expr>),
    /// `name TYPE METADATA [FROM 'key'] [VIRTUAL]`: a value the connector
    /// gives beside the record's fields (Kafka's `timestamp`, `offset`, …).
    Metadata {
        data_type: SqlType,
        key: String,
        is_virtual: bool,
    },
}

/// `WATERMARK FOR column AS expr`.
#[derive(Debug, Clone)]
pub(crate) struct WatermarkDef {
    pub column: String,
    pub expr: Expr,
    pub at: Position,
}

impl TableDef {
    /// Whether each physical column, in order, may hold NULL.
    pub fn nullable(&self) -> Vec<bool> {
        self.columns
            .iter()
            .filter_map(|c| match c.kind {
                ColumnKind::Physical { nullable, .. } => Some(nullable),
                ColumnKind::Computed(_) | ColumnKind::Metadata { .. } => None,
            })
            .collect()
    }

    /// The physical columns, in order, with their types.
    pub fn physical(&self) -> impl Iterator<Item = (&str, SqlType)> {
        self.columns.iter().filter_map(|c| match c.kind {
            ColumnKind::Physical { data_type, .. } => Some((c.name.as_str(), data_type)),
            ColumnKind::Computed(_) | ColumnKind::Metadata { .. } => None,
        })
    }

    /// The metadata columns, in order: name, metadata key, type, and
    /// whether it is `VIRTUAL` (read only).
    pub fn metadata(&self) -> impl Iterator<Item = (&str, &str, SqlType, bool)> {
        self.columns.iter().filter_map(|c| match &c.kind {
            ColumnKind::Metadata {
                data_type,
                key,
                is_virtual,
            } => Some((c.name.as_str(), key.as_str(), *data_type, *is_virtual)),
            _ => None,
        })
    }

    /// A `WITH` option, keys compared as written.
    pub fn option(&self, key: &str) -> Option<&str> {
        self.options.get(key).map(String::as_str)
    }
}

/// What a name in a query's `FROM` can be.
#[derive(Debug, Clone)]
pub(crate) enum Relation {
    Table(Box<TableDef>),
    View(Box<Query>),
}

/// The tables and views of a session, by lower-cased name (Flink's
/// identifiers are case-sensitive; lower-casing here lets `Orders` and
/// `orders` name the same table, and a second `CREATE` of either fail).
#[derive(Default)]
pub(crate) struct Catalog {
    relations: BTreeMap<String, Relation>,
    /// How scans emit watermarks and when they go idle.
    pub scan_timing: crate::connector::ScanTiming,
    /// How long an unbounded aggregation keeps a group's state after its
    /// last update (`table.exec.state.ttl`; forever when unset).
    pub state_ttl: Option<std::time::Duration>,
    /// The most rows an unbounded aggregation folds into one update per
    /// group, with mini-batch on (`table.exec.mini-batch.size`).
    pub mini_batch: Option<usize>,
    /// The tables scanned by the job being planned, by name and the
    /// columns read: a table read twice with the same columns is read once
    /// and its stream shared (Flink reuses sources the same way), so that
    /// both readers see one sequence of rows and watermarks.
    pub scans: std::cell::RefCell<BTreeMap<(String, Vec<bool>), Scan>>,
    /// The functions queries can call, by name.
    pub functions: crate::function::Functions,
}

/// A planned table scan: its rows, columns and time attribute.
#[derive(Clone)]
pub(crate) struct Scan {
    pub rows: crate::connector::ScanRows,
    pub scope: crate::expr::Scope,
    /// The time attribute's column.
    pub rowtime: Option<usize>,
    /// Whether that is processing time (a `PROCTIME()` column).
    pub proctime: bool,
}

impl Catalog {
    /// Forgets the scans of the previous job.
    pub fn start_job(&self) {
        self.scans.borrow_mut().clear();
    }

    /// What the session's settings say an unbounded aggregation does.
    pub fn group_settings(&self) -> crate::group::GroupSettings {
        crate::group::GroupSettings {
            ttl: self.state_ttl,
            mini_batch: self.mini_batch,
        }
    }
}

/// The one catalog and database a session has, as Flink's default ones
/// are named: `default_catalog.default_database.t` and
/// `default_database.t` name the table `t`.
pub(crate) const CATALOG: &str = "default_catalog";
pub(crate) const DATABASE: &str = "default_database";

/// `name` without the session's own catalog and database in front, and
/// without quotes around its parts (`` `a`.`b` `` is `a.b`).
fn unqualified(name: &str) -> String {
    let name: String = name.chars().filter(|c| *c != '`' && *c != '"').collect();
    for prefix in [format!("{CATALOG}.{DATABASE}."), format!("{DATABASE}.")] {
        if let (Some(head), Some(rest)) = (name.get(..prefix.len()), name.get(prefix.len()..)) {
            if head.eq_ignore_ascii_case(&prefix) && !rest.is_empty() {
                return rest.to_string();
            }
        }
    }
    name
}

/// The key a relation is known by: its unqualified name, lower-cased.
fn key(name: &str) -> String {
    unqualified(name).to_lowercase()
}

/// The name a relation to create (`name`, as written at `at`) is kept
/// under: unqualified, if it is in the session's catalog and database.
pub(crate) fn local_name(name: &str, at: Position) -> Result<String, SqlError> {
    let local = unqualified(name);
    if local.contains('.') {
        return Err(SqlError::unsupported(
            format!(
                "the name '{name}' in another catalog or database (Weir has one: {CATALOG}.{DATABASE})"
            ),
            at,
        ));
    }
    Ok(local)
}

impl Catalog {
    pub fn get(&self, name: &str) -> Option<&Relation> {
        self.relations.get(&key(name))
    }

    /// Adds a relation; false if the name is taken.
    pub fn add(&mut self, name: &str, relation: Relation) -> bool {
        use std::collections::btree_map::Entry;
        match self.relations.entry(key(name)) {
            Entry::Occupied(_) => false,
            Entry::Vacant(v) => {
                v.insert(relation);
                true
            }
        }
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.relations.keys().map(String::as_str)
    }

    /// Removes a relation, returning it.
    pub fn remove(&mut self, name: &str) -> Option<Relation> {
        self.relations.remove(&key(name))
    }

    /// The relations, by name: tables by their declared name, views by
    /// the lower-cased one they are known by.
    pub fn relations(&self) -> impl Iterator<Item = (&str, &Relation)> {
        self.relations.iter().map(|(key, r)| match r {
            Relation::Table(t) => (t.name.as_str(), r),
            Relation::View(_) => (key.as_str(), r),
        })
    }
}
