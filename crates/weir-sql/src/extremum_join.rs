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
//! The rewrite applies to an inner join, without `table.exec.state.ttl`,
//! of a table read whole with a `TUMBLE` aggregation over that table
//! grouped by the window alone, with one `MAX` or `MIN` of a column and a
//! `SELECT` list of that aggregate and window columns, on the column equal
//! to the aggregate, where the conditions bound the row's time within its
//! window's span (other conditions are checked on the joined rows as in
//! the regular join).

use std::cmp::Ordering;

use serde::{Deserialize, Serialize};
use sqlparser::ast::{
    BinaryOperator, Expr, GroupByExpr, Join, JoinConstraint, JoinOperator, SetExpr, Spanned,
    TableFactor,
};
use weir::prelude::*;

use crate::aggregate::AggKind;
use crate::catalog::{Catalog, Relation};
use crate::error::{position, SqlError};
use crate::expr::{compile, Condition, Scope, Shape};
use crate::join::{conjuncts, qualifier, time_bounds};
use crate::plan::Planned;
use crate::types::SqlType;
use crate::value::{Row, Value};
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
    /// The window side's columns, as indices into `[window_start,
    /// window_end, window_time, extremum]`.
    picks: Vec<usize>,
    /// Whether the table is the join's left side.
    table_left: bool,
    residual: Option<Condition>,
    state: Option<ValueState<WindowBest>>,
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
        let window = |i: usize| match i {
            0 => Value::Timestamp(end - self.size),
            1 => Value::Timestamp(end),
            2 if self.time_type == SqlType::TimestampLtz => Value::TimestampLtz(end - 1),
            2 => Value::Timestamp(end - 1),
            _ => best.clone(),
        };
        if self.table_left {
            joined.extend(values.iter().cloned());
            joined.extend(self.picks.iter().map(|&i| window(i)));
        } else {
            joined.extend(self.picks.iter().map(|&i| window(i)));
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

/// The start of the window of `size` (aligned to `offset`) that holds `t`.
/// A row's window is found twice (for its key, and whether it starts a
/// window); a 64-bit division by a size not known when compiling costs
/// tens of cycles, so the quotient is estimated in floating point and
/// corrected with multiplications, which is exact for every `t`.
#[derive(Clone, Copy)]
struct Windows {
    size: i64,
    offset: i64,
}

impl Windows {
    #[inline]
    fn start_of(self, t: i64) -> i64 {
        let a = t.wrapping_sub(self.offset);
        if a.unsigned_abs() >= 1 << 52 {
            // Past 2^52 ms (142,000 years) a double misses by more.
            return t - a.rem_euclid(self.size);
        }
        let mut k = (a as f64 / self.size as f64).floor() as i64;
        // The estimate is off by at most one where it is inexact.
        while k.wrapping_mul(self.size) > a {
            k -= 1;
        }
        while (k + 1).wrapping_mul(self.size) <= a {
            k += 1;
        }
        self.offset.wrapping_add(k.wrapping_mul(self.size))
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
        let v = values[self.column].clone();
        let late = end - 1 <= ctx.current_watermark();
        let state = self.state.as_ref().ok_or("the join is not open")?;
        let then = state.update_in_place(|current| match current {
            Some(w) if w.fired => match &w.best {
                Some(b) if compare(&v, b) == Some(Ordering::Equal) => {
                    (ValueChange::Keep, Then::Join(b.clone(), values))
                }
                _ => (ValueChange::Keep, Then::Drop(values)),
            },
            Some(w) => {
                if !boundary {
                    match &w.best {
                        Some(b) if compare(&v, b) != Some(self.direction) => {}
                        _ => {
                            w.rows.retain(|r| !self.beaten(&r[self.column], &v));
                            w.best = Some(v.clone());
                        }
                    }
                }
                if w.best.as_ref().is_some_and(|b| self.beaten(&v, b)) {
                    return (ValueChange::Keep, Then::Drop(values));
                }
                w.rows.push(values);
                (ValueChange::Keep, Then::Nothing)
            }
            // Late for a window that had no row: it never will.
            None if late => (ValueChange::Keep, Then::Drop(values)),
            None => (
                ValueChange::Set(WindowBest {
                    best: (!boundary).then(|| v.clone()),
                    rows: vec![values],
                    fired: false,
                }),
                Then::Timer,
            ),
        })?;
        match then {
            Then::Nothing => {}
            Then::Drop(values) => Row::recycle(values),
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
                    Some(b) => (ValueChange::Keep, (Some(b.clone()), rows)),
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

/// The window side: a derived table `(SELECT … FROM TABLE(TUMBLE(…)) GROUP
/// BY window_start, window_end) alias` without `WHERE` or `HAVING`.
fn window_side(relation: &TableFactor) -> Option<(&sqlparser::ast::Select, WindowTvf, String)> {
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
    let [from] = select.from.as_slice() else {
        return None;
    };
    let TableFactor::TableFunction { expr, .. } = &from.relation else {
        return None;
    };
    if !from.joins.is_empty() || select.selection.is_some() || select.having.is_some() {
        return None;
    }
    if select.distinct.is_some() {
        return None;
    }
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
    Some((select, tvf, alias.name.value.clone()))
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
    if catalog.state_ttl.is_some() {
        return Ok(None);
    }
    let (JoinOperator::Join(JoinConstraint::On(on)) | JoinOperator::Inner(JoinConstraint::On(on))) =
        &join.join_operator
    else {
        return Ok(None);
    };
    // Which side is the table, which the windows.
    let (table_left, table, windows) = match (window_side(from), window_side(&join.relation)) {
        (None, Some(w)) => (true, from, w),
        (Some(w), None) => (false, &join.relation, w),
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
    let same_table = name.eq_ignore_ascii_case(&tvf.table)
        && matches!(catalog.get(&name), Some(Relation::Table(_)));
    if !same_table {
        return Ok(None);
    }
    // The table's rows as any reader of it gets them (a scan shared with
    // the join this falls back to).
    let rows = crate::plan::plan_table_name(env, catalog, &name, position(table.span()))?;
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
    let Some(picks) = projection
        .sources
        .iter()
        .copied()
        .collect::<Option<Vec<usize>>>()
    else {
        return Ok(None);
    };
    // The table's columns and the window side's, qualified, in join order.
    let qualified = |columns: &[(String, SqlType)], q: &str| Scope {
        columns: columns.to_vec(),
        qualifiers: vec![q.to_string(); columns.len()],
        used: None,
    };
    let table_scope = qualified(&rows.scope.columns, &qualifier(table));
    let window_cols = qualified(&projection.scope.columns, &window_alias);
    let (first, second) = if table_left {
        (&table_scope, &window_cols)
    } else {
        (&window_cols, &table_scope)
    };
    let mut joined = first.clone();
    joined.columns.extend(second.columns.clone());
    joined.qualifiers.extend(second.qualifiers.clone());
    let width = rows.scope.columns.len();
    // Where a column of either side is in the joined row.
    let (table_at, window_at) = if table_left {
        (0, width)
    } else {
        (picks.len(), 0)
    };
    let column_of = |e: &Expr| match e {
        Expr::Identifier(id) => joined.index(&id.value, position(e.span())).ok(),
        Expr::CompoundIdentifier(p) if p.len() == 2 => joined
            .index_qualified(&p[0].value, &p[1].value, position(e.span()))
            .ok(),
        _ => None,
    };
    // The window side's extremum column: index 3 of the window's columns.
    let extremum_at = |i: usize| {
        i.checked_sub(window_at)
            .and_then(|j| picks.get(j))
            .is_some_and(|&p| p == 3)
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
    // minus the window's end in [-size, 0], through a window column of the
    // window side (`window_start` is the end - size, `window_time` the end
    // - 1).
    let mut conditions = conjuncts(on);
    conditions.extend(filter.map(conjuncts).unwrap_or_default());
    let bounded = picks.iter().enumerate().any(|(j, &p)| {
        let to_end = match p {
            0 => -size,
            1 => 0,
            2 => -1,
            _ => return false,
        };
        let (low, high) = time_bounds(&conditions, &joined, table_at + time, window_at + j);
        matches!((low, high), (Some(l), Some(h)) if l + to_end >= -size && h + to_end <= 0)
    });
    if !bounded {
        return Ok(None);
    }
    let residual = residual
        .into_iter()
        .reduce(|a, b| Expr::BinaryOp {
            left: Box::new(a),
            op: BinaryOperator::And,
            right: Box::new(b),
        })
        .map(|e| compile(&e, &joined))
        .transpose()?
        .map(|c| Condition::of(&c));
    let windows = Windows { size, offset };
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
    let what = format!(
        "{}({})",
        if direction == Ordering::Greater {
            "MAX"
        } else {
            "MIN"
        },
        rows.scope.columns[column].0
    );
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
            residual,
            state: None,
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
        updating: false,
        steps,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_start_is_the_exact_one_for_every_time() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for (size, offset) in [(10_000, 0), (7, 3), (86_400_000, -3_600_000), (1, 0)] {
            let windows = Windows { size, offset };
            let check = |t: i64| {
                assert_eq!(
                    windows.start_of(t),
                    t - (t - offset).rem_euclid(size),
                    "t {t}, size {size}, offset {offset}"
                );
            };
            for t in [
                0,
                1,
                -1,
                size,
                size - 1,
                -size,
                offset,
                offset - 1,
                i64::MAX / 2,
                i64::MIN / 2,
            ] {
                check(t);
            }
            for _ in 0..100_000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // Times within a few thousand years of 1970, and multiples
                // of the size next to them.
                let t = (x as i64) >> 20;
                check(t);
                check(t - t.rem_euclid(size));
                check(t - t.rem_euclid(size) - 1);
            }
        }
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
