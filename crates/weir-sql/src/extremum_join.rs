//! A table's rows joined with its own per-window maximum (or minimum):
//!
//! ```sql
//! SELECT … FROM bid B
//! JOIN (SELECT MAX(price) AS maxprice, window_end AS t
//!       FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
//!       GROUP BY window_start, window_end) M
//! ON B.price = M.maxprice
//! WHERE B.dateTime BETWEEN M.t - INTERVAL '10' SECOND AND M.t
//! ```
//!
//! (Nexmark q7). Flink plans a window aggregation and a regular join that
//! keeps every row of the table. The rows such a join can emit are known
//! before the window's row exists: a row joins a window's row only if its
//! value is the window's maximum, and the time bounds put it within the
//! window's span, `[window_start, window_end]`. So one operator, keyed by
//! window, computes the maximum and keeps only the rows at it; when the
//! watermark passes the window's end it emits them with the window's row
//! and keeps the maximum, which later rows (late ones, and those at the
//! window's end exactly, which belong to the next window) are joined
//! with, as the regular join would join them with the window's row it
//! keeps. The joined rows are the regular join's, and so Flink's.
//!
//! The same holds where a window aggregation's rows are joined on their
//! window with the per-window `MAX` of one of their columns, computed from
//! the same aggregation written again (Nexmark q5, [`plan_window_rows`]):
//! the operator then keeps each window's rows at the maximum as they come
//! and emits them when the window closes, as the window join would.
//!
//! The first rewrite applies to an inner join, without `table.exec.state.ttl`,
//! of a table read whole with a `TUMBLE` aggregation over that table
//! grouped by the window alone, with one `MAX` or `MIN` of a column and a
//! `SELECT` list of that aggregate and window columns, on the column equal
//! to the aggregate, where the conditions bound the row's time within its
//! window's span (other conditions are checked on the joined rows as in
//! the regular join).

use std::cmp::Ordering;

use serde::{Deserialize, Serialize};
use sqlparser::ast::{
    BinaryOperator, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, GroupByExpr, Join,
    JoinConstraint, JoinOperator, Select, SelectItem, SetExpr, Spanned, TableFactor,
};
use weir::prelude::*;

use crate::aggregate::AggKind;
use crate::catalog::Catalog;
use crate::connector::{Gate, Gated};
use crate::error::{position, SqlError};
use crate::expr::{compile, Condition, Shape};
use crate::join::{
    column_index, conjuncts, qualified, qualifier, residual_condition, side_by_side, time_bounds,
};
use crate::plan::Planned;
use crate::types::SqlType;
use crate::value::{InputRows, Row, Value};
use crate::window::{WindowKind, WindowTvf};

/// A window's state: its extremum so far (over the rows the window
/// aggregation would count: its own, not late), the rows that may still
/// join its row, and whether its row was emitted.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct WindowBest {
    best: Option<Value>,
    rows: Vec<Vec<Value>>,
    fired: bool,
}

/// What the rewrite found, for the operator.
#[derive(Clone)]
struct ExtremumJoin {
    /// The table's columns and which of them is aggregated.
    width: usize,
    column: usize,
    /// `Greater` for `MAX`, `Less` for `MIN`: how a new extremum compares
    /// with the old.
    direction: Ordering,
    size: i64,
    time_type: SqlType,
    /// The window side's columns.
    picks: Vec<Pick>,
    /// Whether the table's (or window aggregation's) rows are the join's
    /// left side.
    table_left: bool,
    /// Whether rows after a window's row was emitted still join it (a
    /// regular join's), or are late for it (a window join's).
    keep_fired: bool,
    residual: Option<Condition>,
    state: Option<ValueState<WindowBest>>,
    /// The last window a row went to and its extremum then: a row beaten
    /// by it is dropped without reading the window's state. (A window's
    /// extremum only moves away from the rows it beats, and its state is
    /// removed only when the watermark has passed it, after which every
    /// row for it is late and dropped too.)
    last: Option<(i64, Value)>,
    /// Where its input rows are made.
    inputs: InputRows,
}

/// Where a value of the window side's row comes from.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Pick {
    /// The window's start, end or time, from its end and size.
    Start,
    End,
    Time,
    /// The extremum.
    Best,
    /// A column of the table's row (a window column both sides have).
    Row(usize),
}

impl ExtremumJoin {
    /// Emits `values` (a row of the table) joined with the row of the
    /// window ending at `end` whose extremum is `best`, if the join's
    /// other conditions hold.
    fn emit(
        &self,
        end: i64,
        best: &Value,
        values: &[Value],
        out: &mut Collector<'_, Row>,
    ) -> FunctionResult {
        let mut joined = Row::buffer(values.len() + self.picks.len());
        let window = |pick: &Pick| match *pick {
            Pick::Start => Value::Timestamp(end - self.size),
            Pick::End => Value::Timestamp(end),
            Pick::Time if self.time_type == SqlType::TimestampLtz => Value::TimestampLtz(end - 1),
            Pick::Time => Value::Timestamp(end - 1),
            Pick::Best => best.clone(),
            Pick::Row(i) => values[i].clone(),
        };
        if self.table_left {
            joined.extend(values.iter().cloned());
            joined.extend(self.picks.iter().map(window));
        } else {
            joined.extend(self.picks.iter().map(window));
            joined.extend(values.iter().cloned());
        }
        match &self.residual {
            Some(c) if !c.passes(&joined)? => Row::recycle(joined),
            _ => out.collect(Row::insert(joined)),
        }
        Ok(())
    }

    /// Whether `v` is below the extremum `best` (above it, for `MIN`).
    fn beaten(&self, v: &Value, best: &Value) -> bool {
        compare(v, best) == Some(self.direction.reverse())
    }
}

/// [`Value::compare`], with integers (Nexmark's prices) compared inline:
/// most rows are compared with their window's extremum and dropped.
#[inline]
fn compare(a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::BigInt(x), Value::BigInt(y)) => Some(x.cmp(y)),
        (Value::Int(x), Value::Int(y)) => Some(x.cmp(y)),
        _ => a.compare(b),
    }
}

/// The windows of `size` (aligned to `offset`) rows are assigned to, the
/// last one found remembered: rows come in about time order, so most are
/// in the window of the row before, and a 64-bit division by a size not
/// known when compiling costs tens of cycles. (Each reader of it has its
/// own; the window is one word, so readers on several threads would only
/// find it again.)
struct Windows {
    size: i64,
    offset: i64,
    last: std::sync::atomic::AtomicI64,
}

impl Clone for Windows {
    fn clone(&self) -> Windows {
        Windows::new(self.size, self.offset)
    }
}

impl Windows {
    fn new(size: i64, offset: i64) -> Windows {
        Windows {
            size,
            offset,
            last: std::sync::atomic::AtomicI64::new(i64::MIN),
        }
    }

    /// The start of the window that holds `t`.
    #[inline]
    fn start_of(&self, t: i64) -> i64 {
        use std::sync::atomic::Ordering::Relaxed;
        let last = self.last.load(Relaxed);
        if (t.wrapping_sub(last) as u64) < self.size as u64 {
            return last;
        }
        let start = t - (t - self.offset).rem_euclid(self.size);
        self.last.store(start, Relaxed);
        start
    }
}

/// What the scan of a window-extremum join's table drops before it makes
/// the rows: a row below (above, for `MIN`) the extremum of the rows this
/// scan already passed on in the row's window. The operator's extremum
/// for the window is at least that, so it would drop the row too. Only
/// rows the operator counts go into it: those not late for the scan
/// (whose watermark is at least the operator's when the row gets there,
/// since a scan that gates never goes idle)
/// and not at a window's start (such a row also joins the window before,
/// whose extremum this does not hold).
struct BeatenRows {
    reads: Vec<bool>,
    time: usize,
    column: usize,
    direction: Ordering,
    windows: Windows,
    /// The window (its start) of the last row counted, and the extremum
    /// of the rows counted in it since.
    window: Option<i64>,
    best: Option<Value>,
}

impl Gate for BeatenRows {
    fn reads(&self) -> &[bool] {
        &self.reads
    }

    #[inline]
    fn keeps(&mut self, values: &[Value], watermark: i64) -> bool {
        let (Some(t), v) = (values[self.time].as_i64(), &values[self.column]) else {
            return true;
        };
        let start = self.windows.start_of(t);
        if v.is_null() || start == t {
            return true;
        }
        if self.window != Some(start) {
            self.window = Some(start);
            self.best = None;
        }
        let counts = match &self.best {
            None => true,
            Some(b) => match compare(v, b) {
                Some(o) if o == self.direction.reverse() => return false,
                Some(o) => o == self.direction,
                None => false,
            },
        };
        if counts && start + self.windows.size - 1 > watermark {
            self.best = Some(v.clone());
        }
        true
    }

    fn fresh(&self) -> Box<dyn Gate> {
        Box::new(BeatenRows {
            reads: self.reads.clone(),
            windows: self.windows.clone(),
            window: None,
            best: None,
            ..*self
        })
    }
}

/// What a row did to its window's state.
enum Then {
    Nothing,
    /// The row joins nothing: its buffer goes back to the pool.
    Drop(Vec<Value>),
    /// The window's row was emitted: the row joins it now.
    Join(Value, Vec<Value>),
    /// The window is new: its timer is set.
    Timer,
}

impl KeyedProcessFunction<i64, Row, Row> for ExtremumJoin {
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.state = Some(crate::plan::value_state(ctx, "window-best", None)?);
        self.inputs = InputRows::of(ctx);
        Ok(())
    }

    fn process_element(
        &mut self,
        mut row: Row,
        ctx: &mut ProcessContext<'_, i64>,
        out: &mut Collector<'_, Row>,
    ) -> FunctionResult {
        let end = *ctx.get_current_key();
        // A copy for the window ending at the row's time: joined, never
        // counted.
        let boundary = row.values.len() > self.width;
        let mut values = std::mem::take(&mut row.values);
        values.truncate(self.width);
        if values[self.column].is_null() {
            // Not counted by MAX or MIN, and joins nothing.
            self.inputs.release(values);
            return Ok(());
        }
        if let Some((window, best)) = &self.last {
            if *window == end && self.beaten(&values[self.column], best) {
                self.inputs.release(values);
                return Ok(());
            }
        }
        let late = end - 1 <= ctx.current_watermark();
        let state = self.state.as_ref().ok_or("the join is not open")?;
        let mut best_now = None;
        let then = state.update_in_place(|current| {
            // The value is read where it is; cloned only when it becomes
            // the extremum.
            let v = &values[self.column];
            match current {
                Some(w) if w.fired => {
                    best_now.clone_from(&w.best);
                    match &w.best {
                        Some(b) if compare(v, b) == Some(Ordering::Equal) => {
                            (ValueChange::Keep, Then::Join(b.clone(), values))
                        }
                        _ => (ValueChange::Keep, Then::Drop(values)),
                    }
                }
                Some(w) => {
                    if !boundary {
                        match &w.best {
                            Some(b) if compare(v, b) != Some(self.direction) => {}
                            _ => {
                                w.rows.retain(|r| !self.beaten(&r[self.column], v));
                                w.best = Some(v.clone());
                            }
                        }
                    }
                    best_now.clone_from(&w.best);
                    if w.best.as_ref().is_some_and(|b| self.beaten(v, b)) {
                        return (ValueChange::Keep, Then::Drop(values));
                    }
                    w.rows.push(values);
                    (ValueChange::Keep, Then::Nothing)
                }
                // Late for a window that had no row: it never will.
                None if late => (ValueChange::Keep, Then::Drop(values)),
                None => {
                    let best = (!boundary).then(|| v.clone());
                    best_now.clone_from(&best);
                    (
                        ValueChange::Set(WindowBest {
                            best,
                            rows: vec![values],
                            fired: false,
                        }),
                        Then::Timer,
                    )
                }
            }
        })?;
        self.last = best_now.map(|b| (end, b));
        match then {
            Then::Nothing => {}
            Then::Drop(values) => self.inputs.release(values),
            Then::Join(best, values) => self.emit(end, &best, &values, out)?,
            Then::Timer => ctx.timer_service().register_event_time_timer(end - 1),
        }
        Ok(())
    }

    /// The window's row: the rows at its extremum are joined with it; the
    /// extremum stays for the rows still to come.
    fn on_timer(
        &mut self,
        timestamp: i64,
        _ctx: &mut ProcessContext<'_, i64>,
        out: &mut Collector<'_, Row>,
    ) -> FunctionResult {
        let state = self.state.as_ref().ok_or("the join is not open")?;
        let (best, rows) = state.update_in_place(|current| match current {
            Some(w) => {
                let rows = std::mem::take(&mut w.rows);
                w.fired = true;
                match &w.best {
                    // Boundary rows only: the window has no row to join.
                    None => (ValueChange::Remove, (None, rows)),
                    Some(b) if self.keep_fired => (ValueChange::Keep, (Some(b.clone()), rows)),
                    Some(b) => (ValueChange::Remove, (Some(b.clone()), rows)),
                }
            }
            None => (ValueChange::Keep, (None, Vec::new())),
        })?;
        if let Some(best) = best {
            for r in rows {
                if compare(&r[self.column], &best) == Some(Ordering::Equal) {
                    self.emit(timestamp + 1, &best, &r, out)?;
                }
            }
        }
        Ok(())
    }
}

/// The one relation `select` reads, when it reads it plainly: no join,
/// no `WHERE`, `HAVING` or `DISTINCT`.
fn only_relation(select: &Select) -> Option<&TableFactor> {
    let [from] = select.from.as_slice() else {
        return None;
    };
    let plain = from.joins.is_empty()
        && select.selection.is_none()
        && select.having.is_none()
        && select.distinct.is_none();
    plain.then_some(&from.relation)
}

/// The window side: a derived table `(SELECT … FROM TABLE(TUMBLE(…)) GROUP
/// BY window_start, window_end) alias` without `WHERE` or `HAVING`.
fn window_side(relation: &TableFactor) -> Option<(&Select, WindowTvf, String)> {
    let (select, alias) = derived(relation)?;
    let TableFactor::TableFunction { expr, .. } = only_relation(select)? else {
        return None;
    };
    let GroupByExpr::Expressions(keys, modifiers) = &select.group_by else {
        return None;
    };
    let named = |name: &str| {
        keys.iter()
            .any(|k| matches!(k, Expr::Identifier(id) if id.value.eq_ignore_ascii_case(name)))
    };
    // The window alone (`window_time` too, which Flink wants grouped to
    // select it).
    let windows_only = crate::window::group_keys(keys).is_empty();
    if !modifiers.is_empty() || !windows_only || !named("window_start") || !named("window_end") {
        return None;
    }
    let tvf = WindowTvf::parse(expr).ok()?;
    Some((select, tvf, alias))
}

/// Plans the join of `from`'s relation with `join`'s as described in the
/// module's docs, if it has that shape; `None` otherwise (then it is
/// planned as any join). `filter` is the statement's `WHERE`.
pub(crate) fn plan(
    env: &StreamExecutionEnvironment,
    catalog: &Catalog,
    from: &TableFactor,
    join: &Join,
    filter: Option<&Expr>,
) -> Result<Option<Planned>, SqlError> {
    // Inner joins with an `ON` only.
    let (JoinOperator::Join(JoinConstraint::On(on)) | JoinOperator::Inner(JoinConstraint::On(on))) =
        &join.join_operator
    else {
        return Ok(None);
    };
    if let Some(planned) = plan_window_rows(env, catalog, from, &join.relation, on)? {
        return Ok(Some(planned));
    }
    plan_table_rows(env, catalog, from, &join.relation, on, filter)
}

/// `MAX(column)` or `MIN(column)`, for EXPLAIN and operator names.
fn extremum_call(direction: Ordering, column: &str) -> String {
    let name = if direction == Ordering::Greater {
        "MAX"
    } else {
        "MIN"
    };
    format!("{name}({column})")
}

/// The table form (Nexmark q7's): a table joined with its own window TVF
/// aggregation.
fn plan_table_rows(
    env: &StreamExecutionEnvironment,
    catalog: &Catalog,
    from: &TableFactor,
    joined_to: &TableFactor,
    on: &Expr,
    filter: Option<&Expr>,
) -> Result<Option<Planned>, SqlError> {
    if catalog.state_ttl.is_some() {
        return Ok(None);
    }
    // Which side is the table, which the windows.
    let (table_left, table, windows) = match (window_side(from), window_side(joined_to)) {
        (None, Some(w)) => (true, from, w),
        (Some(w), None) => (false, joined_to, w),
        _ => return Ok(None),
    };
    let (select, tvf, window_alias) = windows;
    let TableFactor::Table {
        name, args: None, ..
    } = table
    else {
        return Ok(None);
    };
    let WindowKind::Tumble { size, offset } = tvf.kind else {
        return Ok(None);
    };
    let name = name.to_string();
    let same_table = name.eq_ignore_ascii_case(&tvf.table) && catalog.table(&name).is_some();
    if !same_table {
        return Ok(None);
    }
    // The table's scan (shared with the join this falls back to), its
    // rows not made yet: the join's scan drops rows before making them.
    let crate::plan::Read::Table(scan, rows) =
        crate::plan::read_table(env, catalog, &name, position(table.span()), None)?
    else {
        return Ok(None);
    };
    if rows.updating || rows.proctime {
        return Ok(None);
    }
    let Ok(time) = rows.scope.index(&tvf.time_column, tvf.at) else {
        return Ok(None);
    };
    if rows.rowtime != Some(time) {
        return Ok(None);
    }
    let time_type = rows.scope.columns[time].1;
    let Ok(aggregation) =
        crate::window::aggregation(&rows.scope, &[], select, crate::window::WINDOW_COLUMNS)
    else {
        return Ok(None);
    };
    let ([call], [arg]) = (
        aggregation.calls.as_slice(),
        aggregation.arg_evals.as_slice(),
    ) else {
        return Ok(None);
    };
    let direction = match call.kind {
        AggKind::Max => Ordering::Greater,
        AggKind::Min => Ordering::Less,
        _ => return Ok(None),
    };
    let &Shape::Column(column) = &arg.shape else {
        return Ok(None);
    };
    // A DOUBLE's equality (of -0.0 and 0.0) is not its order's.
    if call.filter.is_some() || arg.ty == SqlType::Double || aggregation.having.is_some() {
        return Ok(None);
    }
    let window_scope = crate::window::window_scope(&aggregation, time_type);
    let Ok(projection) = crate::plan::projection(&aggregation.items, &window_scope) else {
        return Ok(None);
    };
    let Some(sources) = projection
        .sources
        .iter()
        .copied()
        .collect::<Option<Vec<usize>>>()
    else {
        return Ok(None);
    };
    let picks: Vec<Pick> = sources
        .iter()
        .map(|&i| [Pick::Start, Pick::End, Pick::Time, Pick::Best][i.min(3)])
        .collect();
    // The table's columns and the window side's, qualified, in join order.
    let table_scope = qualified(&rows.scope.columns, &qualifier(table));
    let window_cols = qualified(&projection.scope.columns, &window_alias);
    let (first, second) = if table_left {
        (&table_scope, &window_cols)
    } else {
        (&window_cols, &table_scope)
    };
    let joined = side_by_side(first, second);
    let width = rows.scope.columns.len();
    // Where a column of either side is in the joined row.
    let (table_at, window_at) = if table_left {
        (0, width)
    } else {
        (picks.len(), 0)
    };
    let column_of = |e: &Expr| column_index(e, &joined);
    // Whether joined column `i` is the window side's extremum.
    let extremum_at = |i: usize| {
        i.checked_sub(window_at)
            .and_then(|j| picks.get(j))
            .is_some_and(|&p| p == Pick::Best)
    };
    let mut keyed = false;
    let mut residual = Vec::new();
    for c in conjuncts(on) {
        // Names must resolve (ambiguity is an error, as in any join).
        compile(c, &joined)?;
        if let Expr::BinaryOp {
            left: a,
            op: BinaryOperator::Eq,
            right: b,
        } = c
        {
            let pair = (column_of(a), column_of(b));
            let is_key = |x: Option<usize>, y: Option<usize>| {
                x == Some(table_at + column) && y.is_some_and(extremum_at)
            };
            if !keyed && (is_key(pair.0, pair.1) || is_key(pair.1, pair.0)) {
                keyed = true;
                continue;
            }
        }
        residual.push(c.clone());
    }
    if !keyed {
        return Ok(None);
    }
    // The conditions must keep a row within its window's span: its time
    // minus the window's end in [-size, 0], through the window columns of
    // the window side (`window_start` is the end - size, `window_time` the
    // end - 1), the bounds through each taken together.
    let mut conditions = conjuncts(on);
    conditions.extend(filter.map(conjuncts).unwrap_or_default());
    let (mut low, mut high) = (None::<i64>, None::<i64>);
    for (j, &p) in picks.iter().enumerate() {
        let to_end = match p {
            Pick::Start => -size,
            Pick::End => 0,
            Pick::Time => -1,
            _ => continue,
        };
        let (l, h) = time_bounds(&conditions, &joined, table_at + time, window_at + j);
        if let Some(l) = l {
            low = Some(low.map_or(l + to_end, |x| x.max(l + to_end)));
        }
        if let Some(h) = h {
            high = Some(high.map_or(h + to_end, |x| x.min(h + to_end)));
        }
    }
    let bounded = matches!((low, high), (Some(l), Some(h)) if l >= -size && h <= 0);
    if !bounded {
        return Ok(None);
    }
    let residual = residual_condition(residual, &joined)?;
    let what = extremum_call(direction, &rows.scope.columns[column].0);
    let mut reads = vec![false; width];
    reads[time] = true;
    reads[column] = true;
    let gate = BeatenRows {
        reads,
        time,
        column,
        direction,
        windows: Windows::new(size, offset),
        window: None,
        best: None,
    };
    let mut rows = rows;
    let rows = match scan.rows.with_gate(Gated(Box::new(gate))) {
        Some(stream) => {
            rows.steps.push(format!(
                "Calc: drop rows below their window's {what} so far (the scan's own rows)"
            ));
            rows.finish(stream)
        }
        None => rows.finish(scan.rows.stream()),
    };
    let windows = Windows::new(size, offset);
    // A row at a window's start also joins the window ending there: a copy
    // of it, marked by one more value, goes to that window.
    let split = rows.stream.process(
        move |row: Row, _ctx: &mut ProcessContext<'_>, out: &mut Collector<'_, Row>| {
            let (Some(t), false) = (row.values[time].as_i64(), row.values[column].is_null()) else {
                // A NULL time or value joins nothing.
                return Ok(());
            };
            if windows.start_of(t) == t {
                let mut copy = row.values.clone();
                copy.push(Value::Boolean(true));
                out.collect(Row::insert(copy));
            }
            out.collect(row);
            Ok(())
        },
    );
    let windows = Windows::new(size, offset);
    let stream = split
        .key_by(move |r: &Row| {
            let t = r.values[time].as_i64().unwrap_or_default();
            if r.values.len() > width {
                t
            } else {
                windows.start_of(t) + size
            }
        })
        .process(ExtremumJoin {
            width,
            column,
            direction,
            size,
            time_type,
            picks,
            table_left,
            keep_fired: true,
            residual,
            state: None,
            last: None,
            inputs: InputRows::Local,
        });
    let stream = crate::plan::stateful(
        stream,
        &format!("WindowExtremumJoin[{}; {what}; {on}]", tvf.describe()),
    );
    let mut steps = rows.steps;
    steps.push(format!(
        "WindowExtremumJoin: inner, on {on}, each {} window's rows at its {what} \
         (the window aggregation and the regular join in one operator)",
        tvf.describe()
    ));
    Ok(Some(Planned {
        stream,
        scope: joined,
        rowtime: None,
        proctime: false,
        window: None,
        above_watermark: None,
        versions: None,
        updating: false,
        update_before: None,
        steps,
    }))
}

/// A derived table's `SELECT` (one without `WITH`, `ORDER BY` or `LIMIT`)
/// and its alias.
fn derived(relation: &TableFactor) -> Option<(&Select, String)> {
    let TableFactor::Derived {
        subquery,
        alias: Some(alias),
        ..
    } = relation
    else {
        return None;
    };
    if subquery.with.is_some() || subquery.order_by.is_some() || subquery.limit_clause.is_some() {
        return None;
    }
    let SetExpr::Select(select) = subquery.body.as_ref() else {
        return None;
    };
    Some((select, alias.name.value.clone()))
}

/// A `SELECT` list's output names and expressions (`None` with `*`).
fn named_items(select: &Select) -> Option<Vec<(String, &Expr)>> {
    select
        .projection
        .iter()
        .enumerate()
        .map(|(i, item)| match item {
            SelectItem::UnnamedExpr(e) => Some((crate::plan::column_name(e, i), e)),
            SelectItem::ExprWithAlias { expr, alias } => Some((alias.value.clone(), expr)),
            _ => None,
        })
        .collect()
}

/// The column of the relation `alias` an expression names (`c` or
/// `alias.c`), lower-cased.
fn column_named(e: &Expr, alias: &str) -> Option<String> {
    match e {
        Expr::Identifier(id) => Some(id.value.to_lowercase()),
        Expr::CompoundIdentifier(p) if p.len() == 2 && p[0].value.eq_ignore_ascii_case(alias) => {
            Some(p[1].value.to_lowercase())
        }
        _ => None,
    }
}

/// The output name of the item of `items` that is `expr` as written.
fn name_of(items: &[(String, &Expr)], expr: &str) -> Option<String> {
    items
        .iter()
        .find(|(_, e)| e.to_string().eq_ignore_ascii_case(expr))
        .map(|(n, _)| n.to_lowercase())
}

/// What the window form's shape check found.
struct WindowRowsShape<'a> {
    /// The window aggregation whose rows are joined, and its alias.
    rows: &'a TableFactor,
    rows_alias: String,
    /// Its column compared with the extremum, and its window columns.
    column: String,
    window: [String; 2],
    direction: Ordering,
    /// The extremum side's alias and columns: name and what each is.
    extremum_alias: String,
    extremum_columns: Vec<(String, Pick)>,
    /// The text that identifies the window aggregation in the statement.
    text: String,
}

/// Whether `rows` is a window aggregation (`A`) and `extremum` `(SELECT
/// MAX(x.c) …, x.window_start, x.window_end FROM (A) x GROUP BY x's window
/// columns)` over the same aggregation written again, whose `c` is a
/// column of `A` (the same expression).
fn window_rows_shape<'a>(
    rows: &'a TableFactor,
    extremum: &'a TableFactor,
) -> Option<WindowRowsShape<'a>> {
    let (a1, rows_alias) = derived(rows)?;
    let (r, extremum_alias) = derived(extremum)?;
    let text = crate::reuse::text_of(a1)?;
    // Not sessions: a window is known by its end alone.
    let [from] = a1.from.as_slice() else {
        return None;
    };
    let TableFactor::TableFunction { expr, .. } = &from.relation else {
        return None;
    };
    if matches!(
        WindowTvf::parse(expr).ok()?.kind,
        WindowKind::Session { .. }
    ) || a1.having.is_some()
    {
        return None;
    }
    // The extremum side: one derived table, the same aggregation.
    let (a2, x) = derived(only_relation(r)?)?;
    if crate::reuse::text_of(a2)? != text || a2.having.is_some() {
        return None;
    }
    let window_names = |items: &[(String, &Expr)]| -> Option<[String; 2]> {
        Some([
            name_of(items, "window_start")?,
            name_of(items, "window_end")?,
        ])
    };
    let (a1_items, a2_items) = (named_items(a1)?, named_items(a2)?);
    let [a1_start, a1_end] = window_names(&a1_items)?;
    let [a2_start, a2_end] = window_names(&a2_items)?;
    // Grouped by x's window columns alone.
    let GroupByExpr::Expressions(keys, modifiers) = &r.group_by else {
        return None;
    };
    let mut grouped: Vec<String> = keys
        .iter()
        .map(|k| column_named(k, &x))
        .collect::<Option<_>>()?;
    grouped.sort();
    let mut window = vec![a2_start.clone(), a2_end.clone()];
    window.sort();
    if !modifiers.is_empty() || grouped != window {
        return None;
    }
    // Its list: the extremum of one of x's columns, and x's window columns.
    let mut found = None;
    let mut extremum_columns = Vec::new();
    for (name, e) in named_items(r)? {
        let pick = if let Expr::Function(f) = e {
            let direction = match f.name.to_string().to_ascii_uppercase().as_str() {
                "MAX" => Ordering::Greater,
                "MIN" => Ordering::Less,
                _ => return None,
            };
            let FunctionArguments::List(list) = &f.args else {
                return None;
            };
            let [FunctionArg::Unnamed(FunctionArgExpr::Expr(arg))] = list.args.as_slice() else {
                return None;
            };
            if found.is_some()
                || list.duplicate_treatment.is_some()
                || f.filter.is_some()
                || f.over.is_some()
            {
                return None;
            }
            let c2 = column_named(arg, &x)?;
            let written = a2_items
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(&c2))?
                .1
                .to_string();
            found = Some((direction, name_of(&a1_items, &written)?));
            Pick::Best
        } else {
            match column_named(e, &x)? {
                c if c == a2_start => Pick::Start,
                c if c == a2_end => Pick::End,
                _ => return None,
            }
        };
        extremum_columns.push((name, pick));
    }
    let (direction, column) = found?;
    Some(WindowRowsShape {
        rows,
        rows_alias,
        column,
        window: [a1_start, a1_end],
        direction,
        extremum_alias,
        extremum_columns,
        text,
    })
}

/// The window form (Nexmark q5's): a window aggregation's rows joined, on
/// their window, with the per-window `MAX` (`MIN`) of one of its columns
/// computed from the same aggregation written again, where the column is
/// at least (at most) the extremum or equal to it. Flink plans a window
/// aggregation of the aggregation's rows and a window join; each window's
/// rows joined are those at the extremum, which one operator keyed by
/// window keeps as they come and emits when the watermark passes the
/// window's end.
fn plan_window_rows(
    env: &StreamExecutionEnvironment,
    catalog: &Catalog,
    from: &TableFactor,
    joined_to: &TableFactor,
    on: &Expr,
) -> Result<Option<Planned>, SqlError> {
    let (rows_left, shape) = match (
        window_rows_shape(from, joined_to),
        window_rows_shape(joined_to, from),
    ) {
        (Some(shape), _) => (true, shape),
        (None, Some(shape)) => (false, shape),
        (None, None) => return Ok(None),
    };
    // The aggregation is computed once, here, for its rows alone: its
    // second writing is not planned.
    crate::reuse::forget(&shape.text);
    let rows = crate::plan::plan_relation(env, catalog, shape.rows)?;
    let at = position(shape.rows.span());
    let index = |name: &str| rows.scope.index(name, at).ok();
    let (Some(column), Some(start), Some(end)) = (
        index(&shape.column),
        index(&shape.window[0]),
        index(&shape.window[1]),
    ) else {
        return Ok(None);
    };
    if rows.window != Some([start, end]) || rows.updating || rows.proctime {
        return Ok(None);
    }
    let column_type = rows.scope.columns[column].1;
    if column_type == SqlType::Double {
        return Ok(None);
    }
    // The joined columns: the rows', and the extremum side's, qualified.
    let picks: Vec<Pick> = shape
        .extremum_columns
        .iter()
        .map(|(_, p)| match p {
            Pick::Start => Pick::Row(start),
            Pick::End => Pick::Row(end),
            other => *other,
        })
        .collect();
    let extremum_columns: Vec<(String, SqlType)> = shape
        .extremum_columns
        .iter()
        .map(|(name, p)| {
            let ty = if *p == Pick::Best {
                column_type
            } else {
                SqlType::Timestamp
            };
            (name.clone(), ty)
        })
        .collect();
    let extremum_scope = qualified(&extremum_columns, &shape.extremum_alias);
    let rows_scope = qualified(&rows.scope.columns, &shape.rows_alias);
    let width = rows_scope.columns.len();
    let (first, second) = if rows_left {
        (&rows_scope, &extremum_scope)
    } else {
        (&extremum_scope, &rows_scope)
    };
    let joined = side_by_side(first, second);
    let (rows_at, extremum_at) = if rows_left {
        (0, width)
    } else {
        (picks.len(), 0)
    };
    let column_of = |e: &Expr| column_index(e, &joined);
    let pick_at = |i: Option<usize>| {
        i.and_then(|i| i.checked_sub(extremum_at))
            .and_then(|j| picks.get(j).copied())
    };
    // The rows' window equal to the extremum's, and the column at least
    // (at most) the extremum; the rest is checked on the joined rows.
    let (mut same_start, mut same_end, mut at_extremum) = (false, false, false);
    let wanted = if shape.direction == Ordering::Greater {
        BinaryOperator::GtEq
    } else {
        BinaryOperator::LtEq
    };
    let mut residual = Vec::new();
    for c in conjuncts(on) {
        compile(c, &joined)?;
        if let Expr::BinaryOp { left, op, right } = c {
            let (l, r) = (column_of(left), column_of(right));
            // As `rows column op extremum column`.
            let oriented = [(l, op.clone(), r), (r, flipped(op), l)];
            let hit = oriented.iter().find_map(|(mine, op, theirs)| {
                let mine = (*mine)?.checked_sub(rows_at).filter(|&m| m < width)?;
                Some((mine, op.clone(), pick_at(*theirs)?))
            });
            match hit {
                Some((m, BinaryOperator::Eq, Pick::Row(p))) if m == p && p == start => {
                    same_start = true;
                    continue;
                }
                Some((m, BinaryOperator::Eq, Pick::Row(p))) if m == p && p == end => {
                    same_end = true;
                    continue;
                }
                Some((m, op, Pick::Best))
                    if m == column
                        && !at_extremum
                        && (op == BinaryOperator::Eq || op == wanted) =>
                {
                    at_extremum = true;
                    continue;
                }
                _ => {}
            }
        }
        residual.push(c.clone());
    }
    if !(same_start && same_end && at_extremum) {
        return Ok(None);
    }
    let residual = residual_condition(residual, &joined)?;
    let what = extremum_call(shape.direction, &rows.scope.columns[column].0);
    let window = if rows_left {
        rows.window
    } else {
        let find = |c: usize| picks.iter().position(|p| *p == Pick::Row(c));
        find(start).zip(find(end)).map(|(s, e)| [s, e])
    };
    let stream = rows
        .stream
        .key_by(move |r: &Row| r.values[end].as_i64().unwrap_or_default())
        .process(ExtremumJoin {
            width,
            column,
            direction: shape.direction,
            size: 0,
            time_type: SqlType::Timestamp,
            picks,
            table_left: rows_left,
            keep_fired: false,
            residual,
            state: None,
            last: None,
            inputs: InputRows::Local,
        });
    let stream = crate::plan::stateful(stream, &format!("WindowExtremumJoin[{what}; {on}]"));
    let mut steps = rows.steps;
    steps.push(format!(
        "WindowExtremumJoin: inner, on {on}, each window's rows of {} at its {what} \
         (the window aggregation of those windows and the window join in one operator)",
        shape.rows_alias
    ));
    Ok(Some(Planned {
        stream,
        scope: joined,
        rowtime: None,
        proctime: false,
        window,
        above_watermark: None,
        versions: None,
        updating: false,
        update_before: None,
        steps,
    }))
}

/// `a op b` as `b op' a`.
fn flipped(op: &BinaryOperator) -> BinaryOperator {
    match op {
        BinaryOperator::Lt => BinaryOperator::Gt,
        BinaryOperator::LtEq => BinaryOperator::GtEq,
        BinaryOperator::Gt => BinaryOperator::Lt,
        BinaryOperator::GtEq => BinaryOperator::LtEq,
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_start_is_the_exact_one_in_any_order_of_times() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for (size, offset) in [(10_000, 0), (7, 3), (86_400_000, -3_600_000), (1, 0)] {
            let windows = Windows::new(size, offset);
            let check = |t: i64| {
                assert_eq!(
                    windows.start_of(t),
                    t - (t - offset).rem_euclid(size),
                    "t {t}, size {size}, offset {offset}"
                );
            };
            for t in [0, 1, -1, size, size - 1, -size, offset, offset - 1] {
                check(t);
            }
            let mut t = 0_i64;
            for _ in 0..100_000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // Mostly forward, by up to a few windows, sometimes back.
                t += (x % (4 * size as u64 + 3)) as i64 - size / 2 - 1;
                check(t);
                check(t - t.rem_euclid(size));
                check(t - t.rem_euclid(size) - 1);
            }
        }
    }

    /// Rows as the scan's gate sees them: `[time, value]`, time in ms.
    fn gate(direction: Ordering) -> BeatenRows {
        BeatenRows {
            reads: vec![true, true],
            time: 0,
            column: 1,
            direction,
            windows: Windows::new(10, 0),
            window: None,
            best: None,
        }
    }

    fn keeps(gate: &mut BeatenRows, t: i64, v: i64, watermark: i64) -> bool {
        gate.keeps(&[Value::Timestamp(t), Value::BigInt(v)], watermark)
    }

    #[test]
    fn the_scan_drops_only_rows_beaten_by_rows_the_join_counts() {
        let mut g = gate(Ordering::Greater);
        let none = i64::MIN;
        assert!(keeps(&mut g, 1, 10, none));
        assert!(!keeps(&mut g, 2, 5, none), "below the window's maximum");
        assert!(keeps(&mut g, 3, 10, none), "at it: it joins");
        // Late for the window [0, 10): the join does not count it, so it
        // is no maximum to drop others by.
        assert!(keeps(&mut g, 4, 30, 9));
        assert!(keeps(&mut g, 5, 20, 9));
        assert!(keeps(&mut g, 6, 20, 9), "the maximum counted is still 10");
        assert!(!keeps(&mut g, 7, 9, 9));
        // A row at a window's start joins the window before too.
        assert!(keeps(&mut g, 10, 1, none));
        assert!(keeps(&mut g, 11, 2, none), "a window of its own");
        assert!(!keeps(&mut g, 12, 1, none));
        assert!(keeps(&mut g, 20, 0, none), "at a window's start");
        assert!(keeps(&mut g, 21, 0, none));
        // Back to an earlier window: its maximum was forgotten, nothing
        // is dropped until a row is counted again.
        assert!(keeps(&mut g, 13, 1, none));
        assert!(!keeps(&mut g, 14, 0, none));
        assert!(keeps(&mut g, 15, 1, none), "at it");
        assert!(g.keeps(&[Value::Timestamp(16), Value::Null], none), "NULL");
        let mut fresh = g.fresh();
        assert!(fresh.keeps(&[Value::Timestamp(17), Value::BigInt(0)], none));

        let mut g = gate(Ordering::Less);
        assert!(keeps(&mut g, 1, 10, none));
        assert!(!keeps(&mut g, 2, 11, none), "above the window's minimum");
        assert!(keeps(&mut g, 3, 9, none));
        assert!(!keeps(&mut g, 4, 10, none));
    }

    #[test]
    fn integers_compare_inline_as_values_do() {
        let pairs = [
            (Value::BigInt(3), Value::BigInt(5)),
            (Value::Int(-2), Value::Int(-2)),
            (Value::BigInt(7), Value::Int(3)),
            (Value::Null, Value::BigInt(1)),
        ];
        for (a, b) in pairs {
            assert_eq!(compare(&a, &b), a.compare(&b), "{a:?} {b:?}");
        }
    }
}
