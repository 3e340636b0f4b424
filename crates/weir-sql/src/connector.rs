//! Tables as sources and sinks of a job, by their `'connector'` option:
//! `filesystem` (CSV), `nexmark` and `datagen` sources, `print` and
//! `blackhole` sinks. Options are
//! validated as Flink does: a missing required option or an unknown one is
//! an error naming it, before the job starts.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;
use std::sync::Arc;

use weir::prelude::*;
use weir::watermark::{ScanContext, WatermarkGenerator, WatermarkOutput};

use crate::catalog::{ColumnKind, TableDef};
use crate::computed::ComputedColumns;
use crate::error::SqlError;
use crate::expr::{cast, compile, Eval, Scope};
use crate::format::{format_options, RowFormat};
use crate::plan::Calc;
use crate::types::SqlType;
use crate::value::{Row, Value};

pub(crate) fn connector_error(table: &TableDef, message: impl Into<String>) -> SqlError {
    SqlError::Connector {
        table: table.name.clone(),
        message: message.into(),
    }
}

/// The table's connector name, or an error.
fn connector(table: &TableDef) -> Result<&str, SqlError> {
    table
        .option("connector")
        .ok_or_else(|| connector_error(table, "the option 'connector' is missing"))
}

/// A boolean option (false when absent).
pub(crate) fn flag(table: &TableDef, key: &str) -> Result<bool, SqlError> {
    match table.option(key) {
        None => Ok(false),
        Some(v) if v.eq_ignore_ascii_case("false") => Ok(false),
        Some(v) if v.eq_ignore_ascii_case("true") => Ok(true),
        Some(other) => Err(connector_error(
            table,
            format!("'{key}' must be true or false, not '{other}'"),
        )),
    }
}

/// Fails on options `known` does not list (Flink: "Unsupported options").
pub(crate) fn check_options(table: &TableDef, known: &[&str]) -> Result<(), SqlError> {
    let unknown: BTreeSet<&str> = table
        .options
        .keys()
        .map(String::as_str)
        .filter(|k| !known.contains(k))
        .collect();
    if unknown.is_empty() {
        Ok(())
    } else {
        Err(connector_error(
            table,
            format!(
                "unsupported options for connector '{}': {} (supported: {})",
                table.option("connector").unwrap_or_default(),
                unknown.into_iter().collect::<Vec<_>>().join(", "),
                known.join(", ")
            ),
        ))
    }
}

/// The full scope of a table's rows: physical columns, then computed ones
/// in declaration order (each computed from the physical ones).
pub(crate) struct TableRows {
    pub scope: Scope,
    /// Computed columns, in the order they follow the physical ones.
    pub computed: ComputedColumns,
    /// Where each declared column is in the row.
    pub order: Vec<usize>,
}

/// A source's values (physical columns, then computed ones) in the
/// table's declared order. Most tables declare their computed columns
/// last: then the values are already in order and kept as they are.
pub(crate) fn in_declared_order(mut values: Vec<Value>, order: &[usize]) -> Vec<Value> {
    if declared_as_made(order, values.len()) {
        return values;
    }
    // Each value is in `order` once: moved, not cloned.
    let mut ordered = Row::buffer(order.len());
    ordered.extend(
        order
            .iter()
            .map(|&i| std::mem::replace(&mut values[i], Value::Null)),
    );
    Row::recycle(values);
    ordered
}

/// Whether a table's declared columns (`order`) are the `width` values its
/// source makes, in the order it makes them.
pub(crate) fn declared_as_made(order: &[usize], width: usize) -> bool {
    order.len() == width && order.iter().enumerate().all(|(i, &o)| i == o)
}

/// How a table's rows are laid out, with its computed columns compiled.
pub(crate) fn table_rows(table: &TableDef) -> Result<TableRows, SqlError> {
    // A row as the source makes it: the physical columns, then the
    // metadata ones, then the computed ones (over the two before).
    let mut base = Scope::of(table.physical().map(|(n, t)| (n.to_string(), t)).collect());
    let physical = base.columns.len();
    base.columns.extend(
        table
            .metadata()
            .map(|(name, _, ty, _)| (name.to_string(), ty)),
    );
    let mut scope = base.clone();
    let mut computed = Vec::new();
    let mut order = Vec::new();
    let mut next_computed = base.columns.len();
    let mut next_physical = 0;
    let mut next_metadata = physical;
    for c in &table.columns {
        match &c.kind {
            ColumnKind::Physical { .. } => {
                order.push(next_physical);
                next_physical += 1;
            }
            ColumnKind::Metadata { .. } => {
                order.push(next_metadata);
                next_metadata += 1;
            }
            ColumnKind::Computed(e) => {
                let compiled = compile(e, &base)?;
                scope.columns.push((c.name.clone(), compiled.ty));
                computed.push((c.name.clone(), compiled));
                order.push(next_computed);
                next_computed += 1;
            }
        }
    }
    // Declared order for the query: reorder the scope.
    let declared = Scope::of(order.iter().map(|&i| scope.columns[i].clone()).collect());
    Ok(TableRows {
        scope: declared,
        computed: ComputedColumns::new(&table.name, computed),
        order,
    })
}

impl TableRows {
    /// Rows of only the declared columns `keep` (by declared index, in
    /// order).
    fn narrow(&mut self, keep: &[usize]) {
        self.order = keep.iter().map(|&d| self.order[d]).collect();
        self.scope = Scope::of(
            keep.iter()
                .map(|&d| self.scope.columns[d].clone())
                .collect(),
        );
    }
}

/// The declared columns a scan's rows keep, when the query names fewer
/// than all (`needed`): those, and the watermark's (its column and what
/// its expression reads). Rows without the others cost less to build and
/// move, and a query that selects them in order needs no projection at
/// all. A changelog source keeps whole rows (a key's row is retracted
/// whole).
fn kept_columns(
    table: &TableDef,
    rows: &TableRows,
    needed: Option<&[bool]>,
) -> Result<Option<Vec<usize>>, SqlError> {
    let Some(needed) = needed else {
        return Ok(None);
    };
    if is_changelog(table) {
        return Ok(None);
    }
    let mut keep = needed.to_vec();
    if let Some(w) = &table.watermark {
        let tracking = rows.scope.tracking();
        let rowtime = tracking.index(&w.column, w.at)?;
        compile(&w.expr, &tracking)?;
        for (k, u) in keep.iter_mut().zip(tracking.used_columns()) {
            *k |= u;
        }
        if let Some(k) = keep.get_mut(rowtime) {
            *k = true;
        }
    }
    if keep.iter().all(|k| *k) {
        return Ok(None);
    }
    Ok(Some(
        keep.iter()
            .enumerate()
            .filter(|(_, k)| **k)
            .map(|(i, _)| i)
            .collect(),
    ))
}

/// Which physical columns the query reads, given which declared columns it
/// names (`None`: all): those, the watermark's, and all of them when a
/// computed column is read. The others are left NULL by the source.
fn physical_needed(
    table: &TableDef,
    rows: &TableRows,
    needed: Option<&[bool]>,
) -> Result<Vec<bool>, SqlError> {
    let n = table.physical().count();
    let Some(needed) = needed else {
        return Ok(vec![true; n]);
    };
    let mut declared = needed.to_vec();
    if let Some(w) = &table.watermark {
        let tracking = rows.scope.tracking();
        tracking.index(&w.column, w.at)?;
        compile(&w.expr, &tracking)?;
        for (d, u) in declared.iter_mut().zip(tracking.used_columns()) {
            *d |= u;
        }
    }
    let mut physical = vec![false; n];
    let mut p = 0;
    for (c, used) in table.columns.iter().zip(&declared) {
        match c.kind {
            ColumnKind::Physical { .. } => {
                physical[p] = *used;
                p += 1;
            }
            ColumnKind::Computed(_) if *used => return Ok(vec![true; n]),
            ColumnKind::Computed(_) | ColumnKind::Metadata { .. } => {}
        }
    }
    Ok(physical)
}

/// Splits a CSV line into fields (RFC 4180 quoting: `"a,b"`, `""` for a
/// quote).
pub(crate) fn split_csv(line: &str, delimiter: char) -> Vec<String> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            c if c == delimiter && !quoted => fields.push(std::mem::take(&mut field)),
            c => field.push(c),
        }
    }
    fields.push(field);
    fields
}

/// Watermarks of a table's `WATERMARK FOR … AS expr`: the largest value
/// of `expr` over the rows so far (Flink SQL's watermark is the
/// expression's value itself, not one less as the DataStream API's bounded
/// out-of-orderness generator emits).
#[derive(Clone)]
struct SqlWatermarks {
    expr: Eval,
    /// The common `column ± constant` form, read without calling `expr`.
    shifted: Option<(usize, i64)>,
    /// The rowtime column, which the timestamp assigner reads.
    rowtime: usize,
    max: i64,
    per_row: bool,
}

impl WatermarkGenerator<Row> for SqlWatermarks {
    fn on_event(&mut self, row: &Row, timestamp: i64, output: &mut WatermarkOutput) {
        let ms = match self.shifted {
            // The rowtime column's value is the timestamp just assigned
            // (`i64::MIN` for a NULL): not read from the row again.
            Some((column, shift)) if column == self.rowtime => {
                (timestamp != i64::MIN).then(|| timestamp.saturating_add(shift))
            }
            Some((column, shift)) => row.values[column].as_i64().map(|t| t.saturating_add(shift)),
            None => (self.expr)(&row.values).ok().and_then(|v| v.as_i64()),
        };
        if let Some(ms) = ms {
            if ms > self.max {
                self.max = ms;
                if self.per_row {
                    output.emit_watermark(ms);
                }
            }
        }
    }

    fn on_periodic_emit(&mut self, output: &mut WatermarkOutput) {
        if self.max > i64::MIN {
            output.emit_watermark(self.max);
        }
    }
}

/// Whether the table's rows are a changelog (`-U`/`-D` rows too), as an
/// upsert table's are, rather than inserts only.
pub(crate) fn is_changelog(table: &TableDef) -> bool {
    table.option("connector") == Some("upsert-kafka")
        || [table.option("format"), table.option("value.format")]
            .into_iter()
            .flatten()
            .any(|f| crate::format::CHANGELOG_FORMATS.contains(&f))
}

/// A table's rows as its source makes them, still to be finished by each
/// reader: stamped with the table's timestamps and watermarks and passed
/// through the reader's calc, if it has one, in a single operator (a
/// row is still in the CPU's caches when it is stamped and filtered, and
/// a row the calc drops costs no hand-over). Readers without a calc share
/// one stream of finished rows.
#[derive(Clone)]
pub(crate) struct ScanRows {
    finish: Rc<dyn Fn(Option<Calc>) -> DataStream<Row>>,
    gated: Rc<GatedScan>,
    plain: Rc<RefCell<Option<DataStream<Row>>>>,
}

/// How [`ScanRows::with_gate`] makes a gated stream, if the source can.
type GatedScan = dyn Fn(Gated) -> Option<DataStream<Row>>;

/// A test of a few of a row's columns, with the scan's watermark, that
/// decides whether a scan makes the row at all (a window-extremum join's
/// scan drops the rows already below their window's maximum). It may
/// only drop rows the reader would drop: it is an optimisation, not a
/// filter (a source that cannot probe makes every row).
pub(crate) trait Gate: Send + Sync + 'static {
    /// The row's columns it reads.
    fn reads(&self) -> &[bool];

    /// Whether the row whose columns read are in `values` (the others are
    /// NULL) is made; `watermark` is the last one the scan emitted.
    fn keeps(&mut self, values: &[Value], watermark: i64) -> bool;

    /// A fresh gate of the same kind, for another subtask's scan.
    fn fresh(&self) -> Box<dyn Gate>;
}

/// A [`Gate`] a scan owns; a copy (for another subtask) starts fresh.
pub(crate) struct Gated(pub Box<dyn Gate>);

impl Gated {
    /// [`Gate::keeps`] (a method of the whole, so that a closure calling
    /// it owns the whole, which clones fresh).
    #[inline]
    fn keeps(&mut self, values: &[Value], watermark: i64) -> bool {
        self.0.keeps(values, watermark)
    }
}

impl Clone for Gated {
    fn clone(&self) -> Gated {
        Gated(self.0.fresh())
    }
}

/// A table's `WATERMARK` as its scan applies it: the strategy, and which
/// of the row's columns its timestamp and watermark read.
#[derive(Clone)]
pub(crate) struct Watermarks {
    pub strategy: WatermarkStrategy<Row>,
    pub reads: Vec<bool>,
    /// The rowtime column, and what a row whose rowtime is NULL fails the
    /// job with.
    pub rowtime: usize,
    pub null_rowtime: Arc<str>,
}

impl Watermarks {
    /// Stamps `row` in `ctx`; an error if its rowtime is NULL. Flink's
    /// watermark assigner fails the job on such a row ("RowTime field
    /// should not be null"): it has no event time to be placed by.
    #[inline(always)]
    fn stamp(&self, row: &Row, ctx: &mut ScanContext<'_, Row>) -> FunctionResult {
        match row.values.get(self.rowtime) {
            Some(Value::Null) | None => Err(self.null_rowtime.to_string().into()),
            Some(time) => {
                ctx.stamp_as(row, event_time(time));
                Ok(())
            }
        }
    }
}

/// The event time a rowtime column's value gives, in ms.
#[inline(always)]
fn event_time(time: &Value) -> i64 {
    match time {
        // A time attribute is a TIMESTAMP(3) or TIMESTAMP_LTZ(3): one test
        // per row, not `as_i64`'s jump over every kind of value.
        Value::Timestamp(t) | Value::TimestampLtz(t) => *t,
        other => other.as_i64().unwrap_or(i64::MIN),
    }
}

/// A source that can read some of a raw record's columns without making
/// its row: a scan whose `WHERE` and watermark read only those stamps a
/// stand-in row holding them, and makes the row only if the `WHERE` keeps
/// it.
pub(crate) trait Probes<I>: Clone + 'static {
    type Probe: Probe<I>;

    /// A probe that reads the columns `columns` marks, with its stand-in
    /// row (NULL where it writes nothing); `None` if this source cannot.
    fn probe(&self, columns: &[bool]) -> Option<(Self::Probe, Row)>;
}

/// What [`Probes::probe`] gives.
pub(crate) trait Probe<I>: Clone + Send + Sync + 'static {
    /// Writes its columns of `raw` into `row`; false if `raw` makes no
    /// row, an error if a column cannot be computed.
    fn probe(&self, raw: &mut I, row: &mut Row) -> Result<bool, String>;
}

/// A source without probes.
#[derive(Clone)]
pub(crate) enum NoProbes {}

impl<I> Probes<I> for NoProbes {
    type Probe = NoProbes;

    fn probe(&self, _: &[bool]) -> Option<(NoProbes, Row)> {
        match *self {}
    }
}

impl<I> Probe<I> for NoProbes {
    fn probe(&self, _: &mut I, _: &mut Row) -> Result<bool, String> {
        match *self {}
    }
}

impl ScanRows {
    /// The rows `make` makes of `raw`'s records (`None`: no row; an error
    /// fails the job), of the table `table`, read apart by `probes` where
    /// it can.
    pub(crate) fn new<I, P, Q>(
        table: &str,
        raw: DataStream<I>,
        make: P,
        probes: Option<Q>,
        watermarks: Option<Watermarks>,
    ) -> ScanRows
    where
        I: Clone + Send + 'static,
        P: Fn(I) -> Result<Option<Row>, String> + Clone + Send + Sync + 'static,
        Q: Probes<I>,
    {
        let table = table.to_string();
        let gated = {
            let (raw, make, probes, watermarks) = (
                raw.clone(),
                make.clone(),
                probes.clone(),
                watermarks.clone(),
            );
            let name = format!("WatermarkAssigner + Gate: {table}");
            move |mut gate: Gated| {
                let (Some(w), Some(probes)) = (&watermarks, &probes) else {
                    return None;
                };
                let reads = gate.0.reads().to_vec();
                let keep = move |values: &[Value], watermark| Ok(gate.keeps(values, watermark));
                probing(&raw, make.clone(), probes, w, reads, keep, |_: &mut Row| {
                    Ok(())
                })
                .map(|s| s.name(&name))
            }
        };
        let finish = move |calc: Option<Calc>| {
            let make = make.clone();
            // Named for the plan's steps it runs (as `EXPLAIN` lists them).
            let name = match (watermarks.is_some(), calc.is_some()) {
                (true, true) => format!("WatermarkAssigner + Calc: {table}"),
                (true, false) => format!("WatermarkAssigner: {table}"),
                (false, true) => format!("Calc: {table}"),
                (false, false) => format!("Scan: {table}"),
            };
            let probed = match (&watermarks, &calc, &probes) {
                (Some(w), Some(calc), Some(probes)) => {
                    probed(&raw, make.clone(), probes, w, calc.clone())
                }
                _ => None,
            };
            let stream = match (probed, &watermarks, calc) {
                (Some(stream), ..) => stream,
                (None, Some(w), calc) => {
                    let w = w.clone();
                    let strategy = w.strategy.clone();
                    raw.scan_with_watermarks(
                        move |v: I, ctx: &mut ScanContext<'_, Row>| {
                            // The row stays where `make` returned it until
                            // it is collected: moved out at once, it was
                            // read back in other widths than `make` wrote
                            // it in, and stalled a second time.
                            let mut made = make(v)?;
                            if let Some(row) = &mut made {
                                w.stamp(row, ctx)?;
                                if calc.as_ref().map_or(Ok(true), |c| c.apply(row))? {
                                    ctx.collect_taken(&mut made);
                                }
                            }
                            Ok(())
                        },
                        strategy,
                    )
                }
                (None, None, calc) => raw.process(
                    move |v: I, _ctx: &mut ProcessContext<'_>, out: &mut Collector<'_, Row>| {
                        if let Some(mut row) = make(v)? {
                            if calc.as_ref().map_or(Ok(true), |c| c.apply(&mut row))? {
                                out.collect_moved(row);
                            }
                        }
                        Ok(())
                    },
                ),
            };
            stream.name(&name)
        };
        ScanRows {
            finish: Rc::new(finish),
            gated: Rc::new(gated),
            plain: Rc::default(),
        }
    }

    /// The rows of a source that makes them itself.
    fn of_rows(table: &str, raw: DataStream<Row>, watermarks: Option<Watermarks>) -> ScanRows {
        if watermarks.is_some() {
            return ScanRows::new(
                table,
                raw,
                |row| Ok(Some(row)),
                None::<NoProbes>,
                watermarks,
            );
        }
        let name = format!("Calc: {table}");
        ScanRows {
            finish: Rc::new(move |calc| match calc {
                None => raw.clone(),
                Some(calc) => crate::plan::calc_stream(&raw, calc).name(&name),
            }),
            gated: Rc::new(|_| None),
            plain: Rc::default(),
        }
    }

    /// The finished rows, without a calc.
    pub(crate) fn stream(&self) -> DataStream<Row> {
        self.plain
            .borrow_mut()
            .get_or_insert_with(|| (self.finish)(None))
            .clone()
    }

    /// The finished rows through `calc`, in the operator that finishes
    /// them.
    pub(crate) fn with_calc(&self, calc: Calc) -> DataStream<Row> {
        (self.finish)(Some(calc))
    }

    /// The finished rows that `gate` keeps, in a scan that probes the
    /// columns the gate reads before it makes a row; `None` if this
    /// source cannot probe them. (Only sources that never go idle probe:
    /// a gate may count on every operator after the scan having seen
    /// no later watermark than the scan emitted.)
    pub(crate) fn with_gate(&self, gate: Gated) -> Option<DataStream<Row>> {
        (self.gated)(gate)
    }
}

/// How a session's scans emit watermarks: after every row that advances
/// one (`pipeline.auto-watermark-interval` = 0) or periodically, and
/// whether a scan without rows for a while is marked idle
/// (`table.exec.source.idle-timeout`), so that the others' watermarks
/// move on without it.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ScanTiming {
    pub per_row: bool,
    pub idle_timeout: Option<Duration>,
}

/// The rows of `table` read as a source, in declared column order, with
/// timestamps and watermarks if it declares a watermark.
pub(crate) fn source(
    env: &StreamExecutionEnvironment,
    table: &TableDef,
    timing: &ScanTiming,
    needed: Option<&[bool]>,
) -> Result<crate::catalog::Scan, SqlError> {
    let mut rows = table_rows(table)?;
    let physical = physical_needed(table, &rows, needed)?;
    if let Some(keep) = kept_columns(table, &rows, needed)? {
        rows.narrow(&keep);
    }
    if let Some((name, ..)) = table.metadata().next() {
        if !matches!(connector(table)?, "kafka") {
            return Err(connector_error(
                table,
                format!("'{name}' is a METADATA column, which only the kafka connector gives here"),
            ));
        }
    }
    let watermarks = match &table.watermark {
        Some(w) => {
            let mut w = watermark_strategy(&table.name, w, &rows.scope, timing.per_row)?;
            if let Some(timeout) = timing.idle_timeout {
                w.strategy = w.strategy.with_idleness(timeout);
            }
            Some(w)
        }
        None => None,
    };
    let rowtime = watermarks.as_ref().map(|w| w.rowtime);
    // A scan that may go idle is not gated: while it is idle, operators
    // after it may pass its watermark, which the gate counts on.
    let ungated = |mut rows: ScanRows| {
        if timing.idle_timeout.is_some() {
            rows.gated = Rc::new(|_| None);
        }
        rows
    };
    let stream = match connector(table)? {
        "filesystem" => filesystem_source(env, table, &rows, &physical)?,
        "nexmark" => {
            let rows_of = crate::nexmark::nexmark_source(env, table, &rows, &physical, watermarks)?;
            return Ok(scan(ungated(rows_of), rows.scope, rowtime, table));
        }
        "datagen" => {
            let rows_of = crate::datagen::datagen_source(env, table, &rows, watermarks)?;
            return Ok(scan(ungated(rows_of), rows.scope, rowtime, table));
        }
        #[cfg(feature = "kafka")]
        "kafka" => crate::kafka::kafka_source(env, table, &rows, &physical)?,
        #[cfg(not(feature = "kafka"))]
        "kafka" => return Err(not_built(table, "kafka")),
        #[cfg(feature = "kafka")]
        "upsert-kafka" => crate::kafka::upsert_kafka_source(env, table, &rows, &physical)?,
        #[cfg(not(feature = "kafka"))]
        "upsert-kafka" => return Err(not_built(table, "kafka")),
        #[cfg(feature = "postgres")]
        "jdbc" | "postgres" => crate::jdbc::jdbc_source(env, table, &rows, &physical)?,
        #[cfg(not(feature = "postgres"))]
        "jdbc" | "postgres" => return Err(not_built(table, "postgres")),
        other => {
            return Err(connector_error(
                table,
                format!("unknown source connector '{other}'"),
            ))
        }
    };
    let rows_of = ScanRows::of_rows(&table.name, stream, watermarks);
    Ok(scan(rows_of, rows.scope, rowtime, table))
}

/// The scan of `table`'s rows: its time attribute is the watermark's
/// column, or else a `name AS PROCTIME()` column.
fn scan(
    rows: ScanRows,
    scope: Scope,
    rowtime: Option<usize>,
    table: &TableDef,
) -> crate::catalog::Scan {
    if rowtime.is_some() {
        return crate::catalog::Scan {
            rows,
            scope,
            rowtime,
            proctime: false,
        };
    }
    let proctime = table.columns.iter().find_map(|c| match &c.kind {
        crate::catalog::ColumnKind::Computed(e) if crate::expr::is_proctime(e) => {
            scope.index(&c.name, c.at).ok()
        }
        _ => None,
    });
    crate::catalog::Scan {
        rows,
        scope,
        rowtime: proctime,
        proctime: proctime.is_some(),
    }
}

/// The rows of `raw` that `calc`'s `WHERE` keeps, each read apart by a
/// probe of `probes` first: the probe's stand-in row, holding the columns
/// the `WHERE` and the watermark read, is stamped and filtered, and only a
/// record the `WHERE` keeps is made into its row (evaluated once, so a
/// `WHERE` over `RAND()` keeps what it kept). `None` if the calc has no
/// `WHERE` or `probes` cannot read its columns.
fn probed<I, P, Q>(
    raw: &DataStream<I>,
    make: P,
    probes: &Q,
    watermarks: &Watermarks,
    calc: Calc,
) -> Option<DataStream<Row>>
where
    I: Clone + Send + 'static,
    P: Fn(I) -> Result<Option<Row>, String> + Clone + Send + Sync + 'static,
    Q: Probes<I>,
{
    let filter = calc.filter()?.clone();
    let reads = filter.reads.clone()?;
    probing(
        raw,
        make,
        probes,
        watermarks,
        reads,
        move |values: &[Value], _| filter.passes(values),
        move |row: &mut Row| calc.project(row),
    )
}

/// A scan that probes the columns `reads` marks and those the watermark
/// reads into a stand-in row, stamps it, and makes the row only if `keep`
/// keeps the stand-in's values (given the scan's last watermark); `finish`
/// then has the made row. `None` if the source cannot probe them.
fn probing<I, P, Q, K, F>(
    raw: &DataStream<I>,
    make: P,
    probes: &Q,
    watermarks: &Watermarks,
    mut reads: Vec<bool>,
    mut keep: K,
    mut finish: F,
) -> Option<DataStream<Row>>
where
    I: Clone + Send + 'static,
    P: Fn(I) -> Result<Option<Row>, String> + Clone + Send + Sync + 'static,
    Q: Probes<I>,
    K: FnMut(&[Value], i64) -> Result<bool, String> + Clone + Send + Sync + 'static,
    F: FnMut(&mut Row) -> Result<(), String> + Clone + Send + Sync + 'static,
{
    if reads.len() != watermarks.reads.len() {
        return None;
    }
    for (c, w) in reads.iter_mut().zip(&watermarks.reads) {
        *c |= *w;
    }
    let (probe, mut stand_in) = probes.probe(&reads)?;
    let stamping = watermarks.clone();
    Some(raw.scan_with_watermarks(
        move |mut raw: I, ctx: &mut ScanContext<'_, Row>| {
            if !probe.probe(&mut raw, &mut stand_in)? {
                return Ok(());
            }
            stamping.stamp(&stand_in, ctx)?;
            if keep(&stand_in.values, ctx.watermark())? {
                let mut made = make(raw)?;
                if let Some(row) = &mut made {
                    finish(row)?;
                    ctx.collect_taken(&mut made);
                }
            }
            Ok(())
        },
        watermarks.strategy.clone(),
    ))
}

/// The timestamps and watermarks of a table's `WATERMARK` over rows of
/// `scope`.
fn watermark_strategy(
    table: &str,
    w: &crate::catalog::WatermarkDef,
    scope: &Scope,
    per_row: bool,
) -> Result<Watermarks, SqlError> {
    let rowtime = scope.index(&w.column, w.at)?;
    let tracked = scope.tracking();
    let compiled = compile(&w.expr, &tracked)?;
    let mut reads = tracked.used_columns();
    reads[rowtime] = true;
    if !compiled.ty.is_timestamp() {
        return Err(SqlError::validation(
            format!(
                "the watermark expression is {}, not a timestamp",
                compiled.ty
            ),
            w.at,
        ));
    }
    let shifted = match compiled.shape {
        crate::expr::Shape::Shifted(column, ms) => Some((column, ms)),
        crate::expr::Shape::Column(column) => Some((column, 0)),
        _ => None,
    };
    let strategy = match shifted {
        // `rowtime - INTERVAL …`, emitted periodically: the engine's own
        // generator, with no dynamic call per row.
        Some((column, shift)) if column == rowtime && shift <= 0 && !per_row => {
            WatermarkStrategy::for_max_timestamp_less(Duration::from_millis(shift.unsigned_abs()))
        }
        _ => {
            let generator = SqlWatermarks {
                expr: compiled.eval,
                shifted,
                rowtime,
                max: i64::MIN,
                per_row,
            };
            WatermarkStrategy::for_generator(move |_| generator.clone())
        }
    };
    let strategy =
        strategy.with_timestamp_assigner(move |row: &Row, _| event_time(&row.values[rowtime]));
    let null_rowtime = format!(
        "table '{table}': the rowtime column '{}' is NULL in a row; a WATERMARK's column \
         must have a value in every row (Flink fails the same way: \"RowTime field should \
         not be null\")",
        w.column
    );
    Ok(Watermarks {
        strategy,
        reads,
        rowtime,
        null_rowtime: null_rowtime.into(),
    })
}

fn filesystem_source(
    env: &StreamExecutionEnvironment,
    table: &TableDef,
    rows: &TableRows,
    physical: &[bool],
) -> Result<DataStream<Row>, SqlError> {
    let format = RowFormat::of(table, "format", "")?;
    let mut known = vec!["connector".to_string(), "path".into(), "format".into()];
    known.extend(format_options(
        table.option("format").unwrap_or_default(),
        "",
    ));
    check_options(table, &known.iter().map(String::as_str).collect::<Vec<_>>())?;
    let path = table
        .option("path")
        .ok_or_else(|| connector_error(table, "the option 'path' is missing"))?;
    let decode = RowDecoder::new(table, rows, physical, format);
    let name = table.name.clone();
    // A directory is read file by file (those a sink committed: not
    // hidden, not in progress), as Flink's filesystem source reads it.
    let files: Vec<std::path::PathBuf> = if std::path::Path::new(path).is_dir() {
        let mut files: Vec<_> = std::fs::read_dir(path)
            .map_err(|e| connector_error(table, format!("reading the directory '{path}': {e}")))?
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|p| {
                p.is_file()
                    && p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| !n.starts_with(['.', '_']))
            })
            .collect();
        files.sort();
        files
    } else {
        vec![std::path::PathBuf::from(path)]
    };
    let read = |file: &std::path::Path| {
        env.read_text_file(file)
            .uid(&crate::plan::state_uid(&format!(
                "Source[{}; filesystem]",
                table.name.to_lowercase()
            )))
    };
    let lines = match files.split_first() {
        Some((first, rest)) => {
            let others: Vec<DataStream<String>> = rest.iter().map(|f| read(f)).collect();
            if others.is_empty() {
                read(first)
            } else {
                read(first).union(&others)
            }
        }
        None => {
            return Err(connector_error(
                table,
                format!("no files in the directory '{path}'"),
            ))
        }
    };
    Ok(lines
        .process(
            move |line: String, _ctx: &mut ProcessContext<'_>, out: &mut Collector<'_, Row>| {
                if line.is_empty() || decode.format.is_comment(&line) {
                    return Ok(());
                }
                // A changelog format's line holds changes: rows of their
                // kinds; another's one row (made without a list).
                let decoded = if decode.format.is_changelog() {
                    decode
                        .rows(line.as_bytes())
                        .map(|rows| rows.into_iter().for_each(|row| out.collect(row)))
                } else {
                    decode.row(line.as_bytes()).map(|row| out.collect(row))
                };
                match decoded {
                    Ok(()) => {}
                    Err(_) if decode.format.ignores_parse_errors() => {}
                    Err(e) => {
                        return Err(format!("table '{name}': {e} in line '{line}'").into());
                    }
                }
                Ok(())
            },
        )
        .name(&format!(
            "Source: {}[{}]",
            table.name,
            table.option("format").unwrap_or_default()
        )))
}

/// Makes a table's rows from records in its format: the physical columns
/// read (NOT NULL checked), the computed ones after them, in declared
/// order.
#[derive(Clone)]
pub(crate) struct RowDecoder {
    pub format: RowFormat,
    columns: Vec<(String, SqlType)>,
    nullable: Vec<bool>,
    read: Vec<bool>,
    computed: ComputedColumns,
    order: Vec<usize>,
}

impl RowDecoder {
    pub fn new(table: &TableDef, rows: &TableRows, read: &[bool], format: RowFormat) -> Self {
        RowDecoder {
            format,
            columns: table.physical().map(|(n, t)| (n.to_string(), t)).collect(),
            nullable: table.nullable(),
            read: read.to_vec(),
            computed: rows.computed.clone(),
            order: rows.order.clone(),
        }
    }

    /// The row in `bytes`, or why it cannot be read.
    pub fn row(&self, bytes: &[u8]) -> Result<Row, String> {
        self.row_with(bytes, Vec::new())
    }

    /// The row in `bytes` with the metadata columns' `metadata` values.
    pub fn row_with(&self, bytes: &[u8], metadata: Vec<Value>) -> Result<Row, String> {
        let mut values = self.format.decode(bytes, &self.columns, &self.read)?;
        values.extend(metadata);
        self.finish(values)
    }

    /// The row of the physical `values`, then the metadata ones (checked,
    /// computed columns added, in declared order).
    /// The rows of a record in a changelog format, each of its kind (the
    /// one inserted row of a record in another format).
    pub fn rows(&self, bytes: &[u8]) -> Result<Vec<Row>, String> {
        self.rows_with(bytes, &[])
    }

    /// [`RowDecoder::rows`], each row with the metadata columns' `metadata`
    /// values.
    pub fn rows_with(&self, bytes: &[u8], metadata: &[Value]) -> Result<Vec<Row>, String> {
        (self
            .format
            .decode_changes(bytes, &self.columns, &self.read)?)
        .into_iter()
        .map(|(kind, mut values)| {
            values.extend_from_slice(metadata);
            let mut row = self.finish(values)?;
            row.kind = kind;
            Ok(row)
        })
        .collect()
    }

    pub fn finish(&self, mut values: Vec<Value>) -> Result<Row, String> {
        if let Some(i) = (0..self.columns.len().min(values.len()))
            .find(|&i| self.read[i] && values[i].is_null() && !self.nullable[i])
        {
            return Err(format!(
                "NULL in the NOT NULL column '{}'",
                self.columns[i].0
            ));
        }
        self.computed.append(&mut values)?;
        Ok(Row::insert(in_declared_order(values, &self.order)))
    }
}

/// The error for a connector this build of Weir leaves out.
#[allow(dead_code)]
pub(crate) fn not_built(table: &TableDef, feature: &str) -> SqlError {
    connector_error(
        table,
        format!("the connector '{feature}' is not in this build: build weir-sql (or weir-cli) with the feature '{feature}'"),
    )
}

/// Fails for a sink that takes only inserts when the query updates its
/// rows (Flink: "doesn't support consuming update and delete changes").
pub(crate) fn append_only(table: &TableDef, updating: bool) -> Result<(), SqlError> {
    if updating {
        return Err(connector_error(
            table,
            format!(
                "the {} sink takes inserts only, but the query updates its rows (-U/+U/-D): \
                 write them to an upsert sink (upsert-kafka, jdbc with a PRIMARY KEY) or aggregate in windows",
                table.option("connector").unwrap_or_default()
            ),
        ));
    }
    Ok(())
}

/// Leaves out the `-U` rows of the aggregation whose results `planned`
/// holds, where `table`'s sink reads none: a `blackhole` table's, or an
/// `upsert-kafka` table's (it writes each key's new row over the old
/// one), the sinks Flink's planner also gives updates as `+U` rows alone.
/// Every other sink reads them (`print` prints them, the JDBC sink
/// deletes a row by a `-U` whose `+U` does not follow).
pub(crate) fn leave_out_unread_changes(planned: &mut crate::plan::Planned, table: &TableDef) {
    let reads_none = matches!(connector(table), Ok("blackhole" | "upsert-kafka"));
    if let (true, Some(switch)) = (reads_none, planned.update_before.take()) {
        switch.leave_out();
        planned.steps.push(format!(
            "GroupAggregate: no -U rows (the sink of '{}' reads none)",
            table.name
        ));
    }
}

/// Writes `stream` (of `schema`) into `table`.
pub(crate) fn sink(
    stream: DataStream<Row>,
    schema: &Scope,
    updating: bool,
    table: &TableDef,
) -> Result<(), SqlError> {
    if let Some((name, ..)) = table.metadata().find(|(.., is_virtual)| !is_virtual) {
        return Err(connector_error(
            table,
            format!("writing the METADATA column '{name}' is not supported (declare it VIRTUAL to read it only)"),
        ));
    }
    let targets: Vec<(String, SqlType)> =
        table.physical().map(|(n, t)| (n.to_string(), t)).collect();
    if targets.len() != schema.columns.len() {
        return Err(SqlError::validation(
            format!(
                "the query has {} columns but table '{}' has {} ({})",
                schema.columns.len(),
                table.name,
                targets.len(),
                targets
                    .iter()
                    .map(|(n, t)| format!("{n} {t}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            table.at,
        ));
    }
    let width = targets.len();
    let mut casts = Vec::new();
    for (i, ((name, to), (_, from))) in targets.iter().zip(&schema.columns).enumerate() {
        let implicit = from == to
            || (from.is_numeric() && to.is_numeric())
            || *to == SqlType::String && *from == SqlType::String;
        if !implicit {
            return Err(SqlError::validation(
                format!(
                    "column '{name}' of table '{}' is {to}; the query gives {from}",
                    table.name
                ),
                table.at,
            ));
        }
        // A DECIMAL into one as wide or wider at the same scale (the
        // query's DECIMAL(22, 3) into a DECIMAL(23, 3) column) is the
        // same value: nothing to do per row.
        let widened = matches!((from, to), (SqlType::Decimal(p, s), SqlType::Decimal(q, t)) if s == t && p <= q);
        if from != to && !widened {
            casts.push((i, *from, *to));
        }
    }
    let stream = if casts.is_empty() {
        stream
    } else {
        stream.process(
            move |mut row: Row, _ctx: &mut ProcessContext<'_>, out: &mut Collector<'_, Row>| {
                // Cast in the row's own buffer, not into a new one per row.
                row.values.truncate(width);
                for &(i, f, t) in &casts {
                    let v = &mut row.values[i];
                    *v = cast(std::mem::replace(v, Value::Null), f, t)?;
                }
                out.collect(row);
                Ok(())
            },
        )
    };
    match connector(table)? {
        "print" => {
            check_options(table, &["connector", "print-identifier", "standard-error"])?;
            let to_err = flag(table, "standard-error")?;
            let sink = match (table.option("print-identifier"), to_err) {
                (Some(id), false) => stream.print_with_prefix(id),
                (Some(id), true) => stream.print_to_err_with_prefix(id),
                (None, false) => stream.print(),
                (None, true) => stream.print_to_err(),
            };
            sink.name(&format!("Sink: {}[print]", table.name));
        }
        "blackhole" => {
            check_options(table, &["connector"])?;
            stream
                .add_sink(weir::sink::DiscardingSink)
                .name(&format!("Sink: {}[blackhole]", table.name));
        }
        #[cfg(feature = "kafka")]
        "kafka" => crate::kafka::kafka_sink(stream, table, updating)?,
        #[cfg(not(feature = "kafka"))]
        "kafka" => return Err(not_built(table, "kafka")),
        #[cfg(feature = "kafka")]
        "upsert-kafka" => crate::kafka::upsert_kafka_sink(stream, table)?,
        #[cfg(not(feature = "kafka"))]
        "upsert-kafka" => return Err(not_built(table, "kafka")),
        #[cfg(feature = "postgres")]
        "jdbc" | "postgres" => crate::jdbc::jdbc_sink(stream, table, updating)?,
        #[cfg(not(feature = "postgres"))]
        "jdbc" | "postgres" => return Err(not_built(table, "postgres")),
        "filesystem" => {
            append_only(table, updating)?;
            let format = RowFormat::of(table, "format", "")?;
            let mut known = vec!["connector".to_string(), "path".into(), "format".into()];
            known.extend(format_options(
                table.option("format").unwrap_or_default(),
                "",
            ));
            known.push("sink.rolling-policy.file-size".into());
            check_options(table, &known.iter().map(String::as_str).collect::<Vec<_>>())?;
            let path = table
                .option("path")
                .ok_or_else(|| connector_error(table, "the option 'path' is missing"))?;
            let mut policy = weir::sink::RollingPolicy::default();
            if let Some(size) = table.option("sink.rolling-policy.file-size") {
                policy.max_part_size = weir::config::parse_memory_size(size)
                    .map(|n| n as u64)
                    .map_err(|e| {
                        connector_error(table, format!("'sink.rolling-policy.file-size': {e}"))
                    })?;
            }
            let columns = targets.clone();
            let suffix = match &format {
                RowFormat::Csv { .. } => ".csv",
                RowFormat::Raw => ".txt",
                RowFormat::Json { .. }
                | RowFormat::DebeziumJson { .. }
                | RowFormat::CanalJson { .. }
                | RowFormat::MaxwellJson { .. } => ".json",
            };
            stream
                .map(move |row: Row| format.encode(&columns, &row.values))
                .add_sink(
                    weir::sink::FileSink::for_row_format(path)
                        .with_rolling_policy(policy)
                        .with_part_suffix(suffix),
                )
                .name(&format!("Sink: {}[filesystem]", table.name))
                .uid(&crate::plan::state_uid(&format!(
                    "Sink[{}; filesystem]",
                    table.name.to_lowercase()
                )));
        }
        other => {
            return Err(connector_error(
                table,
                format!("the connector '{other}' as a SQL sink is not supported yet"),
            ))
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows of `ts` = 10·i ms, row i at processing time i ms of a manual
    /// clock, one row a poll.
    #[derive(Clone)]
    struct TickingRows {
        clock: weir::ManualClock,
        next: i64,
    }

    impl SourceFunction<Row> for TickingRows {
        fn poll_next(&mut self, ctx: &mut SourceContext<'_, Row>) -> FunctionResult<SourceStatus> {
            if self.next > 1_000 {
                return Ok(SourceStatus::Finished);
            }
            self.clock.set(self.next);
            ctx.collect(Row::insert(vec![Value::Timestamp(10 * self.next)]));
            self.next += 1;
            Ok(SourceStatus::More)
        }
    }

    /// The watermarks rows of the table `ddl` (one column, `ts`) see
    /// after its scan, watermarks emitted every 50 ms or after every row.
    fn watermarks_seen(ddl: &str, per_row: bool) -> Vec<i64> {
        let Ok(statements) = crate::script::parse_script(ddl) else {
            panic!("{ddl} does not parse");
        };
        let Some(crate::script::Statement::CreateTable(table)) = statements.into_iter().next()
        else {
            panic!("{ddl} is not a CREATE TABLE");
        };
        let rows = table_rows(&table).expect("the table's rows");
        let watermark = table.watermark.as_ref().expect("a WATERMARK");
        let w = watermark_strategy(&table.name, watermark, &rows.scope, per_row)
            .expect("the watermark strategy");
        let clock = weir::ManualClock::new(0);
        let env = StreamExecutionEnvironment::new();
        env.set_clock(Arc::new(clock.clone()));
        env.set_auto_watermark_interval(std::time::Duration::from_millis(50));
        let strategy = w.strategy.clone();
        env.add_source(TickingRows { clock, next: 0 }, "ticking")
            .scan_with_watermarks(
                move |row: Row, ctx: &mut ScanContext<'_, Row>| {
                    w.stamp(&row, ctx)?;
                    ctx.collect(row);
                    Ok(())
                },
                strategy,
            )
            .process(
                |_row: Row, ctx: &mut ProcessContext<'_>, out: &mut Collector<'_, i64>| {
                    out.collect(ctx.current_watermark());
                    Ok(())
                },
            )
            .execute_and_collect()
            .expect("the job runs")
            .into_iter()
            .filter(|w| *w > i64::MIN)
            .collect()
    }

    #[test]
    fn a_watermark_is_the_largest_rowtime_less_the_delay_whenever_it_is_emitted() {
        for (ddl, delay) in [
            (
                "CREATE TABLE t (ts TIMESTAMP(3), \
                 WATERMARK FOR ts AS ts - INTERVAL '2' SECOND) WITH ('connector' = 'datagen')",
                2_000,
            ),
            (
                "CREATE TABLE t (ts TIMESTAMP(3), WATERMARK FOR ts AS ts) \
                 WITH ('connector' = 'datagen')",
                0,
            ),
        ] {
            for per_row in [false, true] {
                let seen = watermarks_seen(ddl, per_row);
                // Rowtimes are multiples of 10 ms, so every watermark less
                // the delay is one: a millisecond off would show.
                assert!(!seen.is_empty(), "no watermark before the end: {ddl}");
                for w in &seen {
                    assert_eq!((w + delay).rem_euclid(10), 0, "watermark {w} of {ddl}");
                }
                // Rows come in rowtime order, so the last row saw (about)
                // the last rowtime less the delay.
                let last = *seen.last().unwrap_or(&i64::MIN);
                assert!(
                    (9_000 - delay..=10_000 - delay).contains(&last),
                    "last watermark {last} of {ddl} (per row: {per_row})"
                );
            }
        }
    }

    #[test]
    fn csv_fields_split_with_quotes() {
        assert_eq!(
            split_csv("a,\"b,c\",\"d\"\"e\",", ','),
            vec!["a", "b,c", "d\"e", ""]
        );
        assert_eq!(split_csv("1|2", '|'), vec!["1", "2"]);
    }
}
