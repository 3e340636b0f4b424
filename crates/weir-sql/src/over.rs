//! OVER aggregations: `agg(x) OVER (PARTITION BY k ORDER BY t
//! [ROWS|RANGE BETWEEN … PRECEDING AND CURRENT ROW])`, as Flink's
//! streaming OVER aggregation runs them. Each input row comes out once,
//! with the aggregates over the rows of its partition in its frame
//! appended. As in Flink, the window is ordered by the input's time
//! attribute, ascending; the input is append-only; every OVER call of a
//! SELECT uses the same window; the frame ends at the current row.
//!
//! By event time, rows wait in state until the watermark passes them and
//! are then taken in timestamp order, rows of one timestamp in arrival
//! order. Late rows are dropped as Flink drops them: for an unbounded
//! frame, a row not after the watermark; for a bounded one, a row not
//! after the last timestamp its partition has taken. In a `RANGE` frame
//! the rows of one timestamp are peers and share one result. By
//! processing time each row is taken as it arrives, at the time it
//! arrives (Flink groups a `RANGE` frame's rows of one millisecond; Weir
//! takes each alone).

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sqlparser::ast::{
    Expr, Function, GroupByExpr, Ident, NamedWindowExpr, Select, SelectItem, Spanned,
    WildcardAdditionalOptions, WindowFrameBound, WindowFrameUnits, WindowSpec, WindowType,
};
use weir::prelude::*;

use crate::aggregate::{Accumulators, AggCall, AggKind, Results, SqlAggregates};
use crate::catalog::Catalog;
use crate::error::{position, Position, SqlError};
use crate::expr::{compile, is_aggregate, Compiled, Eval};
use crate::plan::{calc, column_name, Planned};
use crate::types::SqlType;
use crate::value::{Row, Value};

fn pos(e: &impl Spanned) -> Position {
    position(e.span())
}

/// Whether `select` has an aggregate call with `OVER`.
pub(crate) fn has_over(select: &Select) -> bool {
    select.projection.iter().any(|item| match item {
        SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => contains_over(e),
        _ => false,
    })
}

fn is_over_aggregate(e: &Expr) -> Option<&Function> {
    match e {
        Expr::Function(f) if f.over.is_some() && is_aggregate(&f.name.to_string()) => Some(f),
        _ => None,
    }
}

fn contains_over(e: &Expr) -> bool {
    if is_over_aggregate(e).is_some() {
        return true;
    }
    let mut found = false;
    let _ = crate::window::map_children(e, &mut |c| {
        found |= contains_over(c);
        Ok(c.clone())
    });
    found
}

/// Which rows before the current one a frame holds.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Frame {
    /// `ROWS BETWEEN n PRECEDING AND CURRENT ROW` (`None`: `UNBOUNDED`).
    Rows(Option<u64>),
    /// `RANGE BETWEEN INTERVAL … PRECEDING AND CURRENT ROW`, in
    /// milliseconds (`None`: `UNBOUNDED`).
    Range(Option<i64>),
}

impl Frame {
    fn bounded(self) -> bool {
        matches!(self, Frame::Rows(Some(_)) | Frame::Range(Some(_)))
    }

    fn describe(self) -> String {
        match self {
            Frame::Rows(None) => "rows between unbounded preceding and current row".into(),
            Frame::Rows(Some(n)) => format!("rows between {n} preceding and current row"),
            Frame::Range(None) => "range between unbounded preceding and current row".into(),
            Frame::Range(Some(ms)) => format!("range between {ms} ms preceding and current row"),
        }
    }
}

/// The OVER calls of a SELECT list, each replaced by the column the
/// aggregation appends for it, and their one window.
struct Calls<'a> {
    select: &'a Select,
    calls: Vec<(Function, Position)>,
    spec: Option<WindowSpec>,
}

impl Calls<'_> {
    fn rewrite(&mut self, e: &Expr) -> Result<Expr, SqlError> {
        let Some(f) = is_over_aggregate(e) else {
            return crate::window::map_children(e, &mut |c| self.rewrite(c));
        };
        let at = pos(e);
        let spec = match &f.over {
            Some(WindowType::WindowSpec(spec)) => spec.clone(),
            Some(WindowType::NamedWindow(name)) => self.named(name, at)?,
            None => unreachable!("an OVER call has a window"),
        };
        match &self.spec {
            None => self.spec = Some(spec),
            Some(first) if *first == spec => {}
            Some(_) => {
                return Err(SqlError::unsupported(
                    "OVER aggregations over different windows in one SELECT (Flink computes all of a SELECT's over one window)",
                    at,
                ))
            }
        }
        let mut call = f.clone();
        call.over = None;
        self.calls.push((call, at));
        Ok(Expr::Identifier(Ident::new(format!(
            "$over{}",
            self.calls.len() - 1
        ))))
    }

    /// The window `WINDOW name AS (…)` defines.
    fn named(&self, name: &Ident, at: Position) -> Result<WindowSpec, SqlError> {
        let mut name = name.clone();
        // `WINDOW a AS b` refers on; a definition that names itself
        // would loop, so the chain is bounded by the definitions' count.
        for _ in 0..=self.select.named_window.len() {
            let Some(def) = self
                .select
                .named_window
                .iter()
                .find(|d| d.0.value.eq_ignore_ascii_case(&name.value))
            else {
                return Err(SqlError::validation(
                    format!(
                        "no window named '{}' (define it with WINDOW {} AS (…))",
                        name, name
                    ),
                    at,
                ));
            };
            match &def.1 {
                NamedWindowExpr::WindowSpec(spec) => return Ok(spec.clone()),
                NamedWindowExpr::NamedWindow(next) => name = next.clone(),
            }
        }
        Err(SqlError::validation(
            format!("the window '{name}' is defined in a cycle"),
            at,
        ))
    }
}

/// `SELECT …, agg(x) OVER w …`: the rows of the FROM (after WHERE), each
/// with its OVER aggregates, then the SELECT list over them.
pub(crate) fn plan_over(
    env: &StreamExecutionEnvironment,
    catalog: &Catalog,
    select: &Select,
) -> Result<Planned, SqlError> {
    let at = pos(select);
    let grouped = !matches!(&select.group_by, GroupByExpr::Expressions(e, _) if e.is_empty());
    if grouped || select.having.is_some() {
        return Err(SqlError::unsupported(
            "OVER aggregations with GROUP BY or HAVING",
            at,
        ));
    }
    if select.distinct.is_some() {
        return Err(SqlError::unsupported(
            "SELECT DISTINCT with OVER aggregations",
            at,
        ));
    }
    // The input: the FROM and WHERE of the query, every column.
    let mut inner = select.clone();
    inner.projection = vec![SelectItem::Wildcard(WildcardAdditionalOptions::default())];
    inner.named_window = Vec::new();
    let input = crate::plan::plan_select(env, catalog, &inner)?;
    if input.updating {
        return Err(SqlError::unsupported(
            "an OVER aggregation of an updating input (one with -U/-D rows; Flink refuses it too)",
            at,
        ));
    }
    // The SELECT list with each OVER call replaced by its column.
    let mut calls = Calls {
        select,
        calls: Vec::new(),
        spec: None,
    };
    let mut items = Vec::new();
    for item in &select.projection {
        match item {
            SelectItem::UnnamedExpr(e) => {
                let name = column_name(e, items.len());
                items.push(SelectItem::ExprWithAlias {
                    expr: calls.rewrite(e)?,
                    alias: Ident::new(name),
                });
            }
            SelectItem::ExprWithAlias { expr, alias } => items.push(SelectItem::ExprWithAlias {
                expr: calls.rewrite(expr)?,
                alias: alias.clone(),
            }),
            // `*`: the input's columns (not the aggregates' columns).
            SelectItem::Wildcard(_) => {
                for (name, _) in &input.scope.columns {
                    items.push(SelectItem::UnnamedExpr(Expr::Identifier(Ident::new(name))));
                }
            }
            other => {
                return Err(SqlError::unsupported(
                    format!("{other} beside OVER aggregations"),
                    pos(other),
                ))
            }
        }
    }
    let spec = calls
        .spec
        .clone()
        .ok_or_else(|| SqlError::validation("no OVER aggregation here", at))?;
    let time = order_column(&spec, &input, at)?;
    let lags = calls
        .calls
        .iter()
        .any(|(c, _)| c.name.to_string().eq_ignore_ascii_case("LAG"));
    if lags && spec.window_frame.is_some() {
        return Err(SqlError::validation(
            "LAG takes no ROWS or RANGE frame in its window (as in Flink)",
            at,
        ));
    }
    let frame = frame(&spec, at)?;
    let keys: Vec<Compiled> = spec
        .partition_by
        .iter()
        .map(|k| compile(k, &input.scope))
        .collect::<Result<_, _>>()?;
    // Each call's argument, evaluated over the input row into a row of
    // arguments the accumulators read.
    let mut args: Vec<Eval> = Vec::new();
    let mut agg_calls = Vec::new();
    for (call, call_at) in &calls.calls {
        if let Some(lag) = lag_call(call, &input.scope, *call_at)? {
            agg_calls.push(AggCall {
                kind: lag.kind,
                arg: args.len(),
                arg_type: lag.value.ty,
                separator: String::new(),
                filter: None,
            });
            args.push(lag.value.eval);
            args.push(lag.default);
            continue;
        }
        let (kind, arg, separator) = crate::window::agg_call(call, *call_at)?.filter_in_arg();
        let c = match arg {
            Some(x) => compile(&x, &input.scope)?,
            None => Compiled::constant(Value::Null, SqlType::BigInt),
        };
        agg_calls.push(AggCall {
            kind,
            arg: args.len(),
            arg_type: c.ty,
            separator,
            filter: None,
        });
        args.push(c.eval);
    }
    let function = OverAggregate {
        aggregates: SqlAggregates::new(agg_calls.clone(), frame.bounded()),
        args,
        time,
        proctime: input.proctime,
        frame,
        ttl: catalog.state_ttl,
        state: None,
    };
    let list = |exprs: &[Expr]| {
        exprs
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let order = spec.order_by[0].expr.to_string();
    let what = format!(
        "OverAggregate[{}; {order}; {}; {}]",
        list(&spec.partition_by),
        frame.describe(),
        crate::aggregate::describe(&agg_calls)
    );
    let key_evals: Vec<Eval> = keys.into_iter().map(|k| k.eval).collect();
    let keyed = input.stream.key_by(move |r: &Row| {
        key_evals
            .iter()
            .map(|k| k(&r.values).unwrap_or(Value::Null))
            .collect::<Vec<Value>>()
    });
    let stream = crate::plan::stateful(keyed.process(function), &what);
    let mut scope = input.scope.clone();
    for (i, call) in agg_calls.iter().enumerate() {
        scope
            .columns
            .push((format!("$over{i}"), call.result_type()));
    }
    let mut steps = input.steps;
    steps.push(format!(
        "OverAggregate: partition by [{}] order by [{order}] {}, select [{}]",
        list(&spec.partition_by),
        frame.describe(),
        calls
            .calls
            .iter()
            .map(|(c, _)| c.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    ));
    let aggregated = Planned {
        stream,
        scope,
        rowtime: input.rowtime,
        proctime: input.proctime,
        window: input.window,
        above_watermark: None,
        versions: None,
        updating: false,
        update_before: None,
        steps,
    };
    let mut outer = select.clone();
    outer.projection = items;
    outer.selection = None;
    outer.named_window = Vec::new();
    calc(aggregated, &outer)
}

/// A `LAG` call: its kind, its value and its default.
struct Lag {
    kind: AggKind,
    value: Compiled,
    default: Eval,
}

/// `LAG(x [, offset [, default]])` (`call`, over `scope`), if `call` is
/// one; `LEAD` is refused, as Flink's streaming OVER refuses it (it would
/// wait for rows to come).
fn lag_call(
    call: &Function,
    scope: &crate::expr::Scope,
    at: Position,
) -> Result<Option<Lag>, SqlError> {
    let name = call.name.to_string().to_ascii_uppercase();
    if name == "LEAD" {
        return Err(SqlError::unsupported(
            "LEAD in a streaming OVER window (LAG is; as in Flink)",
            at,
        ));
    }
    if name != "LAG" {
        return Ok(None);
    }
    let sqlparser::ast::FunctionArguments::List(list) = &call.args else {
        return Err(SqlError::validation("LAG takes 1 to 3 arguments", at));
    };
    let exprs: Vec<&Expr> = list
        .args
        .iter()
        .map(|a| match a {
            sqlparser::ast::FunctionArg::Unnamed(sqlparser::ast::FunctionArgExpr::Expr(e)) => Ok(e),
            other => Err(SqlError::unsupported(
                format!("the LAG argument {other}"),
                at,
            )),
        })
        .collect::<Result<_, _>>()?;
    let (value, offset, default) = match exprs.as_slice() {
        [x] => (*x, None, None),
        [x, n] => (*x, Some(*n), None),
        [x, n, d] => (*x, Some(*n), Some(*d)),
        _ => return Err(SqlError::validation("LAG takes 1 to 3 arguments", at)),
    };
    let value = compile(value, scope)?;
    let offset = match offset {
        None => 1,
        Some(n) => {
            let c = compile(n, &crate::expr::Scope::default())?;
            match (c.eval)(&[]) {
                Ok(Value::Int(n)) if n >= 0 => n as u32,
                Ok(Value::BigInt(n)) if (0..=i64::from(u32::MAX)).contains(&n) => n as u32,
                _ => {
                    return Err(SqlError::validation(
                        format!("LAG's offset must be a whole number of rows, not {n}"),
                        pos(n),
                    ))
                }
            }
        }
    };
    let default = match default {
        None => Compiled::constant(Value::Null, value.ty),
        Some(d) => {
            let c = compile(d, scope)?;
            if c.ty != value.ty && c.ty != SqlType::Null {
                return Err(SqlError::validation(
                    format!(
                        "LAG's default is {}, its value {}: they must be of one type (CAST it)",
                        c.ty, value.ty
                    ),
                    pos(d),
                ));
            }
            c
        }
    };
    Ok(Some(Lag {
        kind: AggKind::Lag(offset),
        value,
        default: default.eval,
    }))
}

/// The time attribute column the window is ordered by.
fn order_column(spec: &WindowSpec, input: &Planned, at: Position) -> Result<usize, SqlError> {
    let wrong = || {
        SqlError::validation(
            "an OVER window must be ordered by the input's time attribute (a column with a WATERMARK, or PROCTIME()), ascending, as in Flink",
            at,
        )
    };
    let [o] = spec.order_by.as_slice() else {
        return Err(wrong());
    };
    if o.options.asc == Some(false) {
        return Err(wrong());
    }
    let column = match &o.expr {
        Expr::Identifier(id) => input.scope.index(&id.value, pos(&o.expr))?,
        Expr::CompoundIdentifier(parts) if parts.len() == 2 => {
            input
                .scope
                .index_qualified(&parts[0].value, &parts[1].value, pos(&o.expr))?
        }
        _ => return Err(wrong()),
    };
    if input.rowtime != Some(column) {
        return Err(wrong());
    }
    Ok(column)
}

/// The frame of `spec`: by default (none given) `RANGE BETWEEN UNBOUNDED
/// PRECEDING AND CURRENT ROW`, as in SQL.
fn frame(spec: &WindowSpec, at: Position) -> Result<Frame, SqlError> {
    let Some(frame) = &spec.window_frame else {
        return Ok(Frame::Range(None));
    };
    if !matches!(frame.end_bound, None | Some(WindowFrameBound::CurrentRow)) {
        return Err(SqlError::unsupported(
            "an OVER frame that ends after CURRENT ROW (Flink's streaming OVER windows end at the current row)",
            at,
        ));
    }
    let rows = match frame.units {
        WindowFrameUnits::Rows => true,
        WindowFrameUnits::Range => false,
        WindowFrameUnits::Groups => return Err(SqlError::unsupported("GROUPS frames", at)),
    };
    let bound = match &frame.start_bound {
        WindowFrameBound::Preceding(None) => None,
        WindowFrameBound::CurrentRow => Some(0),
        WindowFrameBound::Following(_) => {
            return Err(SqlError::unsupported(
                "an OVER frame that starts after the current row",
                at,
            ))
        }
        WindowFrameBound::Preceding(Some(e)) => Some(match (rows, &**e) {
            (true, Expr::Value(v)) => match &v.value {
                sqlparser::ast::Value::Number(n, _) => n.parse::<i64>().ok().filter(|n| *n >= 0),
                _ => None,
            }
            .ok_or_else(|| {
                SqlError::validation(
                    format!("ROWS … PRECEDING takes a number of rows, not {e}"),
                    pos(&**e),
                )
            })?,
            (false, Expr::Interval(i)) => crate::expr::interval_ms(i, pos(&**e))?,
            (false, other) => {
                return Err(SqlError::validation(
                    format!(
                        "RANGE … PRECEDING over a time attribute takes an INTERVAL, not {other}"
                    ),
                    pos(other),
                ))
            }
            (true, other) => {
                return Err(SqlError::validation(
                    format!("ROWS … PRECEDING takes a number of rows, not {other}"),
                    pos(other),
                ))
            }
        }),
    };
    Ok(if rows {
        Frame::Rows(bound.map(|n| n as u64))
    } else {
        Frame::Range(bound)
    })
}

/// One partition's state.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Partition {
    /// Rows waiting for the watermark, by event time, in arrival order.
    pending: BTreeMap<i64, Vec<Vec<Value>>>,
    /// The arguments of the rows in a bounded frame, with their times,
    /// oldest first.
    frame: VecDeque<(i64, Vec<Value>)>,
    accumulators: Accumulators,
    /// The time of the last event-time timer.
    last: i64,
    /// A bounded `RANGE` frame's clean-up time: when a timer reaches it,
    /// every row of the partition is out of the frame and its state is
    /// dropped (Flink's, which also makes late rows that follow count as
    /// new).
    cleanup: Option<i64>,
}

#[derive(Clone)]
struct OverAggregate {
    aggregates: SqlAggregates,
    args: Vec<Eval>,
    /// The time attribute's column.
    time: usize,
    proctime: bool,
    frame: Frame,
    ttl: Option<Duration>,
    state: Option<ValueState<Partition>>,
}

impl OverAggregate {
    fn new_partition(&mut self) -> Partition {
        Partition {
            pending: BTreeMap::new(),
            frame: VecDeque::new(),
            accumulators: self.aggregates.create_accumulator(),
            last: i64::MIN,
            cleanup: None,
        }
    }
}

impl Partition {
    /// For a bounded `RANGE` frame, after a row at `time`: the clean-up
    /// time to set a timer for, if it moves. As Flink does, it is set to
    /// `time` + 1.5 × the frame's length when the current one falls
    /// before `time` + the frame's length (the row's last moment in a
    /// frame).
    fn schedule_cleanup(&mut self, time: i64, frame: Frame) -> Option<i64> {
        let Frame::Range(Some(ms)) = frame else {
            return None;
        };
        let earliest = time.saturating_add(ms).saturating_add(1);
        if self.cleanup.is_some_and(|c| c >= earliest) {
            return None;
        }
        let at = time
            .saturating_add((ms as f64 * 1.5) as i64)
            .saturating_add(1);
        self.cleanup = Some(at);
        Some(at)
    }
}

/// Takes `rows` (all at `time`) into `part`'s frame and emits each with
/// its aggregates.
fn take(
    aggregates: &mut SqlAggregates,
    args: &[Eval],
    frame: Frame,
    part: &mut Partition,
    time: i64,
    rows: Vec<Vec<Value>>,
    out: &mut Collector<'_, Row>,
) -> Result<(), String> {
    let arguments = |values: &[Value]| -> Result<Vec<Value>, String> {
        args.iter().map(|a| a(values)).collect()
    };
    let emit = |out: &mut Collector<'_, Row>, mut values: Vec<Value>, result: Results| {
        values.extend(result);
        out.collect(Row::insert(values));
    };
    match frame {
        Frame::Rows(bound) => {
            for values in rows {
                let a = arguments(&values)?;
                match bound {
                    None => aggregates.add(Row::insert(a), &mut part.accumulators),
                    Some(n) => {
                        aggregates.add(Row::insert(a.clone()), &mut part.accumulators);
                        part.frame.push_back((time, a));
                        if part.frame.len() as u64 > n + 1 {
                            if let Some((_, old)) = part.frame.pop_front() {
                                aggregates.retract(&Row::insert(old), &mut part.accumulators);
                            }
                        }
                    }
                }
                let result = aggregates.get_result(&part.accumulators);
                emit(out, values, result);
            }
        }
        Frame::Range(bound) => {
            if let Some(ms) = bound {
                // The frame keeps the rows at most `ms` before `time`.
                while part.frame.front().is_some_and(|(t, _)| *t < time - ms) {
                    if let Some((_, old)) = part.frame.pop_front() {
                        aggregates.retract(&Row::insert(old), &mut part.accumulators);
                    }
                }
            }
            for values in &rows {
                let a = arguments(values)?;
                if bound.is_some() {
                    aggregates.add(Row::insert(a.clone()), &mut part.accumulators);
                    part.frame.push_back((time, a));
                } else {
                    aggregates.add(Row::insert(a), &mut part.accumulators);
                }
            }
            // Rows of one time are peers: one result for all.
            let result = aggregates.get_result(&part.accumulators);
            for values in rows {
                emit(out, values, result.clone());
            }
        }
    }
    Ok(())
}

impl KeyedProcessFunction<Vec<Value>, Row, Row> for OverAggregate {
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.state = Some(crate::plan::value_state(ctx, "over", self.ttl)?);
        Ok(())
    }

    fn process_element(
        &mut self,
        row: Row,
        ctx: &mut ProcessContext<'_, Vec<Value>>,
        out: &mut Collector<'_, Row>,
    ) -> FunctionResult {
        let state = self
            .state
            .clone()
            .ok_or("the OVER aggregation is not open")?;
        let mut timers = ctx.timer_service();
        if self.proctime {
            let now = timers.current_processing_time();
            let fresh = self.new_partition();
            let (aggregates, args, frame) = (&mut self.aggregates, &self.args, self.frame);
            return Ok(state.update_in_place(|part| match part {
                Some(part) => {
                    let taken = take(
                        aggregates,
                        args,
                        frame,
                        part,
                        now,
                        vec![row.into_values()],
                        out,
                    );
                    (ValueChange::Keep, taken)
                }
                None => {
                    let mut part = fresh;
                    let taken = take(
                        aggregates,
                        args,
                        frame,
                        &mut part,
                        now,
                        vec![row.into_values()],
                        out,
                    );
                    (ValueChange::Set(part), taken)
                }
            })??);
        }
        let Some(time) = row.values[self.time].as_i64() else {
            return Ok(());
        };
        let watermark = timers.current_watermark();
        let frame = self.frame;
        let fresh = self.new_partition();
        let (accepted, cleanup) = state.update_in_place(|part| {
            let last = part.as_ref().map_or(i64::MIN, |p| p.last);
            // Flink's rules: an unbounded frame drops rows not after the
            // watermark, a bounded one rows not after the partition's last
            // timer.
            let late = if frame.bounded() {
                time <= last
            } else {
                time <= watermark
            };
            if late {
                return (ValueChange::Keep, (false, None));
            }
            match part {
                Some(part) => {
                    part.pending
                        .entry(time)
                        .or_default()
                        .push(row.into_values());
                    let cleanup = part.schedule_cleanup(time, frame);
                    (ValueChange::Keep, (true, cleanup))
                }
                None => {
                    let mut part = fresh;
                    part.pending.insert(time, vec![row.into_values()]);
                    let cleanup = part.schedule_cleanup(time, frame);
                    (ValueChange::Set(part), (true, cleanup))
                }
            }
        })?;
        if accepted {
            timers.register_event_time_timer(time);
        }
        if let Some(at) = cleanup {
            timers.register_event_time_timer(at);
        }
        Ok(())
    }

    fn on_timer(
        &mut self,
        timestamp: i64,
        _ctx: &mut ProcessContext<'_, Vec<Value>>,
        out: &mut Collector<'_, Row>,
    ) -> FunctionResult {
        let state = self
            .state
            .clone()
            .ok_or("the OVER aggregation is not open")?;
        let (aggregates, args, frame) = (&mut self.aggregates, &self.args, self.frame);
        Ok(state.update_in_place(|part| {
            let Some(part) = part else {
                return (ValueChange::Keep, Ok(()));
            };
            if part.cleanup.is_some_and(|c| c <= timestamp) {
                return (ValueChange::Remove, Ok(()));
            }
            let taken = match part.pending.remove(&timestamp) {
                Some(rows) => take(aggregates, args, frame, part, timestamp, rows, out),
                None => Ok(()),
            };
            // Every timer counts as the last (a clean-up timer too), as
            // in Flink.
            part.last = part.last.max(timestamp);
            (ValueChange::Keep, taken)
        })??)
    }
}
