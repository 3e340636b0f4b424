//! A SQL session: the catalog and settings a script builds up, and the
//! jobs its `INSERT` and `SELECT` statements run.

use std::io::Write;

use weir::prelude::*;

use crate::catalog::{Catalog, ColumnKind, Relation, TableDef, CATALOG, DATABASE};
use crate::connector;
use crate::error::SqlError;
use crate::function::{FunctionBody, Functions, ScalarFunction};
use crate::plan::{plan, plan_next, Planned};
use crate::script::{parse_script, Listing, Statement, TableChange};
use crate::types::SqlType;
use crate::value::Row;

/// The keys `SET` takes that the SQL layer reads (all others configure
/// the jobs, as in `weir run -D`).
const SQL_KEYS: &[&str] = &[
    RESULT_MODE,
    STATE_TTL,
    IDLE_TIMEOUT,
    MINI_BATCH,
    MINI_BATCH_LATENCY,
    MINI_BATCH_SIZE,
];

/// Flink's mini-batch of unbounded aggregations: on or off, and the
/// latency and size a bundle may reach, both needed when it is on.
const MINI_BATCH: &str = "table.exec.mini-batch.enabled";
const MINI_BATCH_LATENCY: &str = "table.exec.mini-batch.allow-latency";
const MINI_BATCH_SIZE: &str = "table.exec.mini-batch.size";

/// How long a source reads nothing before it is marked idle (its
/// watermark no longer holds back the others').
const IDLE_TIMEOUT: &str = "table.exec.source.idle-timeout";

/// Flink's time-to-live of the state of unbounded aggregations.
const STATE_TTL: &str = "table.exec.state.ttl";

/// How `SELECT` prints: `tableau` (a table with an `op` column, the
/// default) or `changelog` (one `+I[…]` line per row, as Flink's print
/// connector writes them).
const RESULT_MODE: &str = "sql-client.execution.result-mode";

fn is_sql_key(key: &str) -> bool {
    key.starts_with("sql-client.") || key.starts_with("table.")
}

/// Runs SQL statements: DDL and `SET` change the session, `INSERT INTO`
/// runs a job writing into a table, `SELECT` runs a job and prints its rows
/// as a changelog table (Flink's tableau mode), `EXPLAIN` prints a plan.
pub struct Session {
    catalog: Catalog,
    /// The functions `CREATE FUNCTION name AS 'identifier'` can bind: the
    /// built-in ones and those the program registered.
    implementations: Functions,
    config: Configuration,
    out: Box<dyn Write + Send>,
}

impl Default for Session {
    fn default() -> Self {
        Session::new()
    }
}

impl Session {
    /// A session printing to standard output.
    pub fn new() -> Self {
        Session::with_output(Box::new(std::io::stdout()))
    }

    /// Registers a scalar function, callable as `name(…)` in this
    /// session's queries (and bound to other names by `CREATE FUNCTION f
    /// AS 'name'`): `body` gets the arguments' values and returns a value
    /// of type `result`, or an error that fails the job.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use weir_sql::{Session, SqlType, Value};
    ///
    /// let mut session = Session::new();
    /// session.register_function(
    ///     "twice",
    ///     SqlType::BigInt,
    ///     Arc::new(|args: &[Value]| Ok(match args {
    ///         [Value::BigInt(n)] => Value::BigInt(n * 2),
    ///         _ => Value::Null,
    ///     })),
    /// );
    /// ```
    pub fn register_function(&mut self, name: &str, result: SqlType, body: FunctionBody) {
        let function = ScalarFunction { result, body };
        self.implementations.add(name, function.clone());
        self.catalog.functions.add(name, function);
    }

    /// A session printing query results and plans to `out`.
    pub fn with_output(out: Box<dyn Write + Send>) -> Self {
        Session {
            catalog: Catalog::default(),
            implementations: Functions::builtin(),
            config: Configuration::new(),
            out,
        }
    }

    /// Sets a configuration key for the jobs that follow (as `SET`).
    pub fn set(&mut self, key: &str, value: &str) {
        self.config.set(key, value);
    }

    /// Runs every statement of `sql` in order; stops at the first error.
    pub fn execute_script(&mut self, sql: &str) -> Result<(), SqlError> {
        for statement in parse_script(sql)? {
            self.execute(statement)?;
        }
        Ok(())
    }

    fn write(&mut self, text: &str) -> Result<(), SqlError> {
        self.out
            .write_all(text.as_bytes())
            .and_then(|()| self.out.flush())
            .map_err(SqlError::Output)
    }

    fn env(&mut self) -> Result<StreamExecutionEnvironment, SqlError> {
        let env = StreamExecutionEnvironment::new();
        let mut engine = Configuration::new();
        for (k, v) in self.config.iter().filter(|(k, _)| !is_sql_key(k)) {
            engine.set(k, v);
        }
        env.configure(&engine)?;
        self.catalog.start_job();
        self.catalog.scan_timing = crate::connector::ScanTiming {
            per_row: self
                .config
                .get_duration("pipeline.auto-watermark-interval")?
                .is_some_and(|d| d.is_zero()),
            // 0 (Flink's default) never marks a source idle.
            idle_timeout: self
                .config
                .get_duration(IDLE_TIMEOUT)?
                .filter(|d| !d.is_zero()),
        };
        self.catalog.state_ttl = match self.config.get(STATE_TTL) {
            None => None,
            Some(text) => {
                let ttl =
                    weir::config::parse_duration(text).map_err(|message| SqlError::Setting {
                        key: STATE_TTL.into(),
                        message,
                    })?;
                // 0 means forever, as in Flink.
                (!ttl.is_zero()).then_some(ttl)
            }
        };
        self.catalog.mini_batch = mini_batch(&self.config)?;
        Ok(env)
    }

    /// Plans `INSERT INTO table query` (at `at`) into the job `env`
    /// holds, the job's `first` statement or not, and writes it into its
    /// table: the table's name.
    fn insert(
        &self,
        env: &StreamExecutionEnvironment,
        (table, columns, query, at): (
            &str,
            &[String],
            &sqlparser::ast::Query,
            crate::error::Position,
        ),
        first: bool,
    ) -> Result<String, SqlError> {
        let Some(Relation::Table(target)) = self.catalog.get(table).cloned() else {
            return Err(SqlError::validation(
                format!("table '{table}' not found (INSERT INTO needs a table)"),
                at,
            ));
        };
        let listed;
        let query = if columns.is_empty() {
            query
        } else {
            listed = crate::script::insert_listing(query, columns, &target, at)?;
            &listed
        };
        let mut planned = if first {
            plan(env, &self.catalog, query)?
        } else {
            plan_next(env, &self.catalog, query)?
        };
        connector::leave_out_unread_changes(&mut planned, &target);
        connector::sink(planned.stream, &planned.scope, planned.updating, &target)?;
        Ok(target.name)
    }

    fn execute(&mut self, statement: Statement) -> Result<(), SqlError> {
        match statement {
            Statement::CreateTableLike { table, like } => {
                let Some(Relation::Table(base)) = self.catalog.get(&like.base) else {
                    return Err(SqlError::validation(
                        format!("LIKE '{}': no such table", like.base),
                        like.at,
                    ));
                };
                let table = crate::ddl::table_like(*table, base, &like)?;
                self.execute(Statement::CreateTable(Box::new(table)))
            }
            Statement::IfNotExists { name, statement } => match self.catalog.get(&name) {
                Some(_) => self.write("[INFO] Execute statement succeeded.\n"),
                None => self.execute(*statement),
            },
            Statement::CreateTable(table) => {
                let (name, at) = (table.name.clone(), table.at);
                if !self.catalog.add(&name, Relation::Table(table)) {
                    return Err(SqlError::validation(
                        format!("a table or view '{name}' exists already"),
                        at,
                    ));
                }
                self.write("[INFO] Execute statement succeeded.\n")
            }
            Statement::Show(what) => {
                let one = |name: &str| vec![vec![name.to_string()]];
                let (header, names) = match what {
                    Listing::Tables | Listing::Views => {
                        let views_only = what == Listing::Views;
                        let names = (self.catalog.relations())
                            .filter(|(_, r)| !views_only || matches!(r, Relation::View(_)))
                            .map(|(name, _)| vec![name.to_string()])
                            .collect();
                        let header = if views_only {
                            "view name"
                        } else {
                            "table name"
                        };
                        (header, names)
                    }
                    Listing::Catalogs => ("catalog name", one(CATALOG)),
                    Listing::Databases => ("database name", one(DATABASE)),
                    Listing::CurrentCatalog => ("current catalog name", one(CATALOG)),
                    Listing::CurrentDatabase => ("current database name", one(DATABASE)),
                    Listing::Settings => {
                        let rows: Vec<Vec<String>> = (self.config.iter())
                            .map(|(k, v)| vec![k.to_string(), v.to_string()])
                            .collect();
                        return self.write(&listing(&["key", "value"], &rows));
                    }
                    Listing::UserFunctions => (
                        "function name",
                        self.catalog
                            .functions
                            .names()
                            .map(|n| vec![n.to_string()])
                            .collect(),
                    ),
                };
                self.write(&listing(&[header], &names))
            }
            Statement::Use { catalog, name, at } => {
                // The session's own catalog and database only.
                let ours: &[String] = if catalog {
                    &[CATALOG.to_string()]
                } else {
                    &[format!("{CATALOG}.{DATABASE}"), DATABASE.to_string()]
                };
                if !ours.iter().any(|o| o.eq_ignore_ascii_case(&name)) {
                    let what = if catalog { "CATALOG " } else { "" };
                    return Err(SqlError::unsupported(
                        format!("USE {what}{name}: Weir has one catalog and database, {CATALOG}.{DATABASE}"),
                        at,
                    ));
                }
                self.write("[INFO] Execute statement succeeded.\n")
            }
            Statement::DropFunction {
                name,
                if_exists,
                at,
            } => {
                if !self.catalog.functions.remove(&name) && !if_exists {
                    return Err(SqlError::validation(
                        format!(
                            "function '{name}' not found (DROP FUNCTION IF EXISTS ignores that)"
                        ),
                        at,
                    ));
                }
                self.write("[INFO] Execute statement succeeded.\n")
            }
            Statement::AlterTable { name, change, at } => {
                let Some(Relation::Table(table)) = self.catalog.get(&name) else {
                    return Err(SqlError::validation(
                        format!("table '{name}' not found (ALTER TABLE changes a table)"),
                        at,
                    ));
                };
                let mut table = table.clone();
                match change {
                    TableChange::Rename(new) => {
                        if self.catalog.get(&new).is_some() {
                            return Err(SqlError::validation(
                                format!("a table or view '{new}' exists already"),
                                at,
                            ));
                        }
                        self.catalog.remove(&name);
                        table.name = new.clone();
                        self.catalog.add(&new, Relation::Table(table));
                    }
                    TableChange::Set(options) => {
                        table.options.extend(options);
                        self.catalog.remove(&name);
                        self.catalog.add(&name, Relation::Table(table));
                    }
                    TableChange::Reset(keys) => {
                        for key in &keys {
                            if key == "connector" {
                                return Err(SqlError::validation(
                                    "ALTER TABLE … RESET ('connector'): a table needs its connector",
                                    at,
                                ));
                            }
                            table.options.remove(key);
                        }
                        self.catalog.remove(&name);
                        self.catalog.add(&name, Relation::Table(table));
                    }
                }
                self.write("[INFO] Execute statement succeeded.\n")
            }
            Statement::ShowCreate { view, name, at } => {
                let text = match (self.catalog.get(&name), view) {
                    (Some(Relation::Table(table)), false) => create_table_text(table),
                    (Some(Relation::View(query)), true) => {
                        format!("CREATE VIEW `{CATALOG}`.`{DATABASE}`.`{name}` AS\n{query}\n")
                    }
                    (Some(Relation::View(_)), false) => {
                        return Err(SqlError::validation(
                            format!("'{name}' is a view: SHOW CREATE VIEW shows it"),
                            at,
                        ))
                    }
                    (Some(Relation::Table(_)), true) => {
                        return Err(SqlError::validation(
                            format!("'{name}' is a table: SHOW CREATE TABLE shows it"),
                            at,
                        ))
                    }
                    (None, _) => {
                        return Err(SqlError::validation(
                            format!("table or view '{name}' not found"),
                            at,
                        ))
                    }
                };
                self.write(&text)
            }
            Statement::Describe { name, at } => {
                let rows = match self.catalog.get(&name) {
                    Some(Relation::Table(table)) => describe_table(table)?,
                    Some(Relation::View(query)) => {
                        let query = query.clone();
                        let planned = plan(&self.env()?, &self.catalog, &query)?;
                        (planned.scope.columns.iter())
                            .map(|(n, t)| {
                                let mut ty = t.to_string();
                                if planned.rowtime == Some(planned.scope.index(n, at)?) {
                                    ty.push_str(if planned.proctime {
                                        " *PROCTIME*"
                                    } else {
                                        " *ROWTIME*"
                                    });
                                }
                                Ok(vec![
                                    n.clone(),
                                    ty,
                                    "TRUE".into(),
                                    String::new(),
                                    String::new(),
                                    String::new(),
                                ])
                            })
                            .collect::<Result<_, SqlError>>()?
                    }
                    None => {
                        return Err(SqlError::validation(
                            format!("table or view '{name}' not found"),
                            at,
                        ))
                    }
                };
                self.write(&listing(
                    &["name", "type", "null", "key", "extras", "watermark"],
                    &rows,
                ))
            }
            Statement::Drop {
                view,
                name,
                if_exists,
                at,
            } => {
                let kind = if view { "view" } else { "table" };
                match self.catalog.get(&name) {
                    None if if_exists => {}
                    None => {
                        return Err(SqlError::validation(
                            format!(
                                "{kind} '{name}' not found (DROP {} IF EXISTS ignores that)",
                                kind.to_uppercase()
                            ),
                            at,
                        ))
                    }
                    Some(Relation::Table(_)) if view => {
                        return Err(SqlError::validation(
                            format!("'{name}' is a table, not a view: DROP TABLE drops it"),
                            at,
                        ))
                    }
                    Some(Relation::View(_)) if !view => {
                        return Err(SqlError::validation(
                            format!("'{name}' is a view, not a table: DROP VIEW drops it"),
                            at,
                        ))
                    }
                    Some(_) => {
                        self.catalog.remove(&name);
                    }
                }
                self.write("[INFO] Execute statement succeeded.\n")
            }
            Statement::CreateTableAs { table, query } => {
                let env = self.env()?;
                let mut planned = plan(&env, &self.catalog, &query)?;
                let table = crate::ddl::table_as(*table, &planned.scope.columns)?;
                let (name, at) = (table.name.clone(), table.at);
                if self.catalog.get(&name).is_some() {
                    return Err(SqlError::validation(
                        format!("a table or view '{name}' exists already"),
                        at,
                    ));
                }
                connector::leave_out_unread_changes(&mut planned, &table);
                connector::sink(planned.stream, &planned.scope, planned.updating, &table)?;
                // The table is the catalog's once its job is planned, as
                // Flink registers it when it submits the job.
                self.catalog.add(&name, Relation::Table(Box::new(table)));
                env.execute(&format!("insert-into_{name}"))?;
                Ok(())
            }
            Statement::CreateView { name, query, at } => {
                // Validate the view's query now, as Flink does.
                plan(&self.env()?, &self.catalog, &query)?;
                if !self.catalog.add(&name, Relation::View(query)) {
                    return Err(SqlError::validation(
                        format!("a table or view '{name}' exists already"),
                        at,
                    ));
                }
                self.write("[INFO] Execute statement succeeded.\n")
            }
            Statement::CreateFunction {
                name,
                identifier,
                if_not_exists,
                at,
            } => {
                if self.catalog.functions.get(&name).is_some() {
                    if if_not_exists {
                        return self.write("[INFO] Execute statement succeeded.\n");
                    }
                    return Err(SqlError::validation(
                        format!("a function '{name}' exists already"),
                        at,
                    ));
                }
                let Some(function) = self.implementations.get(&identifier).cloned() else {
                    let known: Vec<&str> = self.implementations.names().collect();
                    return Err(SqlError::validation(
                        format!(
                            "no function '{identifier}' to create '{name}' from: Weir runs no Java classes; \
                             a program registers Rust functions with Session::register_function (known: {})",
                            known.join(", ")
                        ),
                        at,
                    ));
                };
                self.catalog.functions.add(&name, function);
                self.write("[INFO] Execute statement succeeded.\n")
            }
            Statement::Set { key, value } => {
                if is_sql_key(&key) {
                    if !SQL_KEYS.contains(&key.as_str()) {
                        self.write(&format!(
                            "[WARNING] '{key}' is not a SQL option Weir knows (known: {}); it is ignored\n",
                            SQL_KEYS.join(", ")
                        ))?;
                    }
                } else {
                    let mut probe = Configuration::new();
                    probe.set(key.as_str(), value.as_str());
                    for warning in probe.unknown_key_warnings() {
                        self.write(&format!("[WARNING] {warning}\n"))?;
                    }
                }
                self.config.set(key, value);
                self.write("[INFO] Execute statement succeeded.\n")
            }
            Statement::Reset { key } => {
                let mut kept = Configuration::new();
                for (k, v) in self.config.iter() {
                    if key.as_deref().is_some_and(|key| k != key) {
                        kept.set(k, v);
                    }
                }
                self.config = kept;
                self.write("[INFO] Execute statement succeeded.\n")
            }
            Statement::Insert {
                table,
                columns,
                query,
                at,
            } => {
                let env = self.env()?;
                let target = self.insert(&env, (&table, &columns, &query, at), true)?;
                env.execute(&format!("insert-into_{target}"))?;
                Ok(())
            }
            Statement::Inserts { inserts } => {
                // One job: a table several INSERTs read is read once.
                let env = self.env()?;
                let mut targets = Vec::new();
                for (i, insert) in inserts.iter().enumerate() {
                    if let Statement::Insert {
                        table,
                        columns,
                        query,
                        at,
                    } = insert
                    {
                        targets.push(self.insert(&env, (table, columns, query, *at), i == 0)?);
                    }
                }
                env.execute(&format!("insert-into_{}", targets.join(",")))?;
                Ok(())
            }
            Statement::Query { query } => {
                let env = self.env()?;
                let planned = plan(&env, &self.catalog, &query)?;
                let names: Vec<String> = planned
                    .scope
                    .columns
                    .iter()
                    .map(|(n, _)| n.clone())
                    .collect();
                let changelog = match self.config.get(RESULT_MODE) {
                    None | Some("tableau") => false,
                    Some("changelog") => true,
                    Some(other) => {
                        return Err(SqlError::Setting {
                            key: RESULT_MODE.into(),
                            message: format!("'{other}' is not a result mode (tableau, changelog)"),
                        })
                    }
                };
                let rows = planned.stream.execute_and_collect()?;
                let text = if changelog {
                    rows.iter().map(|r| format!("{r}\n")).collect()
                } else {
                    tableau(&names, &rows)
                };
                self.write(&text)
            }
            Statement::Explain(inner) => {
                let env = self.env()?;
                let (planned, sink): (Planned, Option<String>) = match *inner {
                    Statement::Insert { table, query, .. } => {
                        let mut planned = plan(&env, &self.catalog, &query)?;
                        if let Some(target) = self.catalog.table(&table) {
                            connector::leave_out_unread_changes(&mut planned, target);
                        }
                        (planned, Some(table))
                    }
                    Statement::Query { query } => (plan(&env, &self.catalog, &query)?, None),
                    Statement::Inserts { inserts } => {
                        let mut text = String::from("== Weir Plan ==\n");
                        for (i, insert) in inserts.iter().enumerate() {
                            let Statement::Insert { table, query, .. } = insert else {
                                continue;
                            };
                            let mut planned = if i == 0 {
                                plan(&env, &self.catalog, query)?
                            } else {
                                plan_next(&env, &self.catalog, query)?
                            };
                            if let Some(target) = self.catalog.table(table) {
                                connector::leave_out_unread_changes(&mut planned, target);
                            }
                            text.push_str(&plan_text(&planned.steps, Some(table)));
                        }
                        return self.write(&text);
                    }
                    _ => unreachable!("parse_script explains INSERT, queries and statement sets"),
                };
                let text = format!(
                    "== Weir Plan ==\n{}",
                    plan_text(&planned.steps, sink.as_deref())
                );
                self.write(&text)
            }
        }
    }
}

/// A table's declared columns as Flink's `DESCRIBE` lists them: name,
/// type (the time attribute marked), whether it may be NULL, its key,
/// how it is computed or read, and the watermark.
fn describe_table(table: &TableDef) -> Result<Vec<Vec<String>>, SqlError> {
    let rows = connector::table_rows(table)?;
    let key = if table.primary_key.is_empty() {
        String::new()
    } else {
        format!("PRI({})", table.primary_key.join(", "))
    };
    Ok(table
        .columns
        .iter()
        .map(|c| {
            let ty = (rows.scope.columns.iter())
                .find(|(n, _)| n.eq_ignore_ascii_case(&c.name))
                .map_or(SqlType::Null, |(_, t)| *t);
            let (nullable, extras) = match &c.kind {
                ColumnKind::Physical { nullable, .. } => (*nullable, String::new()),
                ColumnKind::Computed(expr) => (true, format!("AS {expr}")),
                ColumnKind::Metadata { key, is_virtual, .. } => (
                    true,
                    format!("METADATA FROM '{key}'{}", if *is_virtual { " VIRTUAL" } else { "" }),
                ),
            };
            let proctime = matches!(&c.kind, ColumnKind::Computed(e) if e.to_string().eq_ignore_ascii_case("PROCTIME()"));
            let watermark = table.watermark.as_ref().filter(|w| w.column.eq_ignore_ascii_case(&c.name));
            let mut type_text = ty.to_string();
            if proctime {
                type_text.push_str(" NOT NULL *PROCTIME*");
            } else if watermark.is_some() {
                type_text.push_str(" *ROWTIME*");
            }
            let in_key = table.primary_key.iter().any(|k| k.eq_ignore_ascii_case(&c.name));
            vec![
                c.name.clone(),
                type_text,
                if nullable && !in_key && !proctime { "TRUE" } else { "FALSE" }.to_string(),
                if in_key { key.clone() } else { String::new() },
                extras,
                watermark.map_or_else(String::new, |w| w.expr.to_string()),
            ]
        })
        .collect())
}

/// The `CREATE TABLE` statement of `table`, as Flink's `SHOW CREATE
/// TABLE` prints it: names quoted and qualified, the watermark and key
/// after the columns, then the options.
fn create_table_text(table: &TableDef) -> String {
    let mut items: Vec<String> = table
        .columns
        .iter()
        .map(|c| match &c.kind {
            ColumnKind::Physical {
                data_type,
                nullable,
            } => format!(
                "`{}` {data_type}{}",
                c.name,
                if *nullable { "" } else { " NOT NULL" }
            ),
            ColumnKind::Computed(expr) => format!("`{}` AS {expr}", c.name),
            ColumnKind::Metadata {
                data_type,
                key,
                is_virtual,
            } => format!(
                "`{}` {data_type} METADATA FROM '{key}'{}",
                c.name,
                if *is_virtual { " VIRTUAL" } else { "" }
            ),
        })
        .collect();
    if let Some(w) = &table.watermark {
        items.push(format!("WATERMARK FOR `{}` AS {}", w.column, w.expr));
    }
    if !table.primary_key.is_empty() {
        let quoted: Vec<String> = table.primary_key.iter().map(|k| format!("`{k}`")).collect();
        items.push(format!(
            "CONSTRAINT `PK_{}` PRIMARY KEY ({}) NOT ENFORCED",
            table.primary_key.join("_"),
            quoted.join(", ")
        ));
    }
    let options: Vec<String> = table
        .options
        .iter()
        .map(|(k, v)| {
            format!(
                "  '{}' = '{}'",
                k.replace('\'', "''"),
                v.replace('\'', "''")
            )
        })
        .collect();
    format!(
        "CREATE TABLE `{CATALOG}`.`{DATABASE}`.`{}` (\n  {}\n) WITH (\n{}\n)\n",
        table.name,
        items.join(",\n  "),
        options.join(",\n")
    )
}

/// Rows of text under `headers`, as Flink's SQL client prints `SHOW` and
/// `DESCRIBE` results.
fn listing(headers: &[&str], rows: &[Vec<String>]) -> String {
    if rows.is_empty() {
        return "Empty set\n".to_string();
    }
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line: String = std::iter::once("+".to_string())
        .chain(widths.iter().map(|w| format!("{}+", "-".repeat(w + 2))))
        .collect::<String>()
        + "\n";
    let cells = |cells: &mut dyn Iterator<Item = &str>| -> String {
        let mut text = String::from("|");
        for (c, w) in cells.zip(&widths) {
            text.push_str(&format!(" {c:>w$} |"));
        }
        text + "\n"
    };
    let mut out = line.clone();
    out.push_str(&cells(&mut headers.iter().copied()));
    out.push_str(&line);
    for row in rows {
        out.push_str(&cells(&mut row.iter().map(String::as_str)));
    }
    out.push_str(&line);
    out.push_str(&format!(
        "{} row{} in set\n",
        rows.len(),
        if rows.len() == 1 { "" } else { "s" }
    ));
    out
}

/// A plan's steps, one a line, then its sink's if it has one.
fn plan_text(steps: &[String], sink: Option<&str>) -> String {
    let mut text: String = steps.iter().map(|s| format!("{s}\n")).collect();
    if let Some(sink) = sink {
        text.push_str(&format!("Sink: {sink}\n"));
    }
    text
}

/// The most rows of a mini-batch, when `table.exec.mini-batch.enabled`
/// is on. As Flink, that needs a positive `allow-latency` and `size`.
/// Weir folds the rows of each batch it receives (at most `size` of them)
/// and holds none back for later ones, so a bundle never waits the
/// latency allowed.
fn mini_batch(config: &Configuration) -> Result<Option<usize>, SqlError> {
    if config.get_bool(MINI_BATCH)? != Some(true) {
        return Ok(None);
    }
    let needed = |key: &str, message: &str| SqlError::Setting {
        key: key.into(),
        message: format!("{message} when {MINI_BATCH} is true"),
    };
    if config
        .get_duration(MINI_BATCH_LATENCY)?
        .is_none_or(|latency| latency.is_zero())
    {
        return Err(needed(
            MINI_BATCH_LATENCY,
            "must be set to a duration above 0 ms (e.g. '2 s')",
        ));
    }
    let size = config
        .get(MINI_BATCH_SIZE)
        .and_then(|text| text.trim().parse::<usize>().ok())
        .filter(|n| *n > 0);
    match size {
        Some(size) => Ok(Some(size)),
        None => Err(needed(
            MINI_BATCH_SIZE,
            "must be set to a number of rows above 0 (e.g. '5000')",
        )),
    }
}

/// Rows as Flink's SQL client prints them in tableau mode: an `op` column
/// with the row kind, values right-aligned, and the row count.
pub(crate) fn tableau(names: &[String], rows: &[Row]) -> String {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| r.values.iter().map(ToString::to_string).collect())
        .collect();
    let mut widths: Vec<usize> = names.iter().map(|n| n.chars().count()).collect();
    for row in &cells {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = {
        let mut l = String::from("+----+");
        for w in &widths {
            l.push_str(&"-".repeat(w + 2));
            l.push('+');
        }
        l.push('\n');
        l
    };
    let mut out = line.clone();
    out.push_str("| op |");
    for (n, w) in names.iter().zip(&widths) {
        out.push_str(&format!(" {n:>w$} |"));
    }
    out.push('\n');
    out.push_str(&line);
    for (row, r) in cells.iter().zip(rows) {
        out.push_str(&format!("| {} |", r.kind.short()));
        for (c, w) in row.iter().zip(&widths) {
            out.push_str(&format!(" {c:>w$} |"));
        }
        out.push('\n');
    }
    out.push_str(&line);
    out.push_str(&format!(
        "Received a total of {} row{}\n",
        rows.len(),
        if rows.len() == 1 { "" } else { "s" }
    ));
    out
}
