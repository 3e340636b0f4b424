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
    /// The common table expressions of the statement being planned.
    ctes: std::cell::RefCell<Ctes>,
}

/// The common table expressions (`WITH name AS (…)`) met while planning a
/// statement, each with the scope it was defined in: a name in a query
/// means its innermost CTE in scope before any table or view, and a CTE's
/// own query sees only the CTEs before it (not itself: `WITH orders AS
/// (SELECT … FROM orders)` reads the table).
#[derive(Default)]
struct Ctes {
    all: Vec<Cte>,
    /// The innermost CTE in scope, if any.
    current: Option<usize>,
}

struct Cte {
    /// Lower-cased, without quotes.
    name: String,
    query: Query,
    /// `WITH name (a, b) AS …`: the names of its columns.
    columns: Vec<String>,
    /// The CTE in scope where this one was defined.
    outer: Option<usize>,
}

/// A common table expression in scope: its query and column names.
pub(crate) struct CteQuery {
    pub query: Query,
    pub columns: Vec<String>,
    index: usize,
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

    /// Forgets the common table expressions of the statement before.
    pub fn start_statement(&self) {
        *self.ctes.borrow_mut() = Ctes::default();
    }

    /// Runs `plan` with `with`'s common table expressions in scope.
    pub fn with_ctes<R>(&self, with: &sqlparser::ast::With, plan: impl FnOnce() -> R) -> R {
        let outer = self.ctes.borrow().current;
        {
            let mut ctes = self.ctes.borrow_mut();
            for cte in &with.cte_tables {
                let index = ctes.all.len();
                let outer = ctes.current;
                ctes.all.push(Cte {
                    name: plain_name(&cte.alias.name.value),
                    query: (*cte.query).clone(),
                    columns: cte
                        .alias
                        .columns
                        .iter()
                        .map(|c| c.name.value.clone())
                        .collect(),
                    outer,
                });
                ctes.current = Some(index);
            }
        }
        let planned = plan();
        self.ctes.borrow_mut().current = outer;
        planned
    }

    /// The common table expression `name` means here, if any.
    pub fn cte(&self, name: &str) -> Option<CteQuery> {
        let ctes = self.ctes.borrow();
        let name = plain_name(name);
        let mut at = ctes.current;
        while let Some(index) = at {
            let cte = &ctes.all[index];
            if cte.name == name {
                return Some(CteQuery {
                    query: cte.query.clone(),
                    columns: cte.columns.clone(),
                    index,
                });
            }
            at = cte.outer;
        }
        None
    }

    /// Runs `plan` (of `cte`'s query) in the scope `cte` was defined in.
    pub fn in_scope_of<R>(&self, cte: &CteQuery, plan: impl FnOnce() -> R) -> R {
        let here = {
            let mut ctes = self.ctes.borrow_mut();
            let outer = ctes.all[cte.index].outer;
            std::mem::replace(&mut ctes.current, outer)
        };
        let planned = plan();
        self.ctes.borrow_mut().current = here;
        planned
    }

    /// The table `name` names in a query: none if it is a view or a
    /// common table expression in scope.
    pub fn table(&self, name: &str) -> Option<&TableDef> {
        if self.cte(name).is_some() {
            return None;
        }
        match self.get(name) {
            Some(Relation::Table(table)) => Some(table),
            _ => None,
        }
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

/// A common table expression's name as a query names it: lower-cased,
/// without quotes (never qualified).
fn plain_name(name: &str) -> String {
    name.chars()
        .filter(|c| *c != '`' && *c != '"')
        .collect::<String>()
        .to_lowercase()
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
