//! `ROW_NUMBER() OVER (PARTITION BY … ORDER BY …)` kept by its number in
//! an outer `WHERE` (`rownum <= N`, `= N`, `BETWEEN a AND b`), planned as
//! Flink plans it:
//!
//! - **window Top-N** when the partition has a window's `window_start`
//!   and `window_end`: each window's ranked rows are kept until the
//!   watermark passes the window's end, then the wanted ranks are emitted
//!   (insert-only; late rows dropped);
//! - **deduplication** when only the first row is kept and the order is
//!   the input's time attribute: the first (`ASC`) or last (`DESC`) row of
//!   each key;
//! - **Top-N** otherwise: each key's first N rows, updated as rows arrive
//!   (Flink's append-only Top-N and its changelog).

use std::cmp::Ordering;

use sqlparser::ast::{
    BinaryOperator, Expr, Ident, OrderByExpr, Select, SelectItem, SetExpr, Spanned, TableFactor,
    WindowType,
};
use weir::prelude::*;

use crate::catalog::Catalog;
use crate::error::{position, Position, SqlError};
use crate::expr::{compile, Eval};
use crate::plan::{calc, plan_select, Planned};
use crate::types::SqlType;
use crate::value::{Row, RowKind, Value};

fn pos(e: &impl Spanned) -> Position {
    position(e.span())
}

/// One `ORDER BY` key: its value, `ASC`, and whether NULLs come first.
#[derive(Clone)]
struct SortKey {
    eval: Eval,
    ascending: bool,
    nulls_first: bool,
}

/// `… ORDER BY keys LIMIT n` (or `LIMIT n` alone) over a query's rows:
/// the first `n` rows by `keys` (by arrival without keys), as Flink's
/// streaming sort-limit runs it: a Top-N over all rows without the rank
/// shown, so a row pushed out of the first `n` is deleted (`-D`); without
/// keys, the first `n` rows, inserts only.
pub(crate) fn plan_sort_limit(
    input: Planned,
    order_by: &[OrderByExpr],
    n: usize,
    at: Position,
) -> Result<Planned, SqlError> {
    if input.updating {
        return Err(SqlError::unsupported(
            "ORDER BY … LIMIT over an updating input (Top-N of a changelog)",
            at,
        ));
    }
    let order: Vec<SortKey> = order_by
        .iter()
        .map(|o| {
            let ascending = o.options.asc.unwrap_or(true);
            Ok(SortKey {
                eval: compile(&o.expr, &input.scope)?.eval,
                ascending,
                nulls_first: o.options.nulls_first.unwrap_or(ascending),
            })
        })
        .collect::<Result<_, SqlError>>()?;
    let what = format!(
        "SortLimit[{}; {n}]",
        order_by
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    );
    let ranked = crate::plan::stateful(
        input
            .stream
            .key_by(|_: &Row| Vec::<Value>::new())
            .process(TopN {
                order,
                n,
                shown: false,
                top: None,
            }),
        &what,
    );
    // The rank the Top-N appends is not shown.
    let stream = ranked.map(|mut row: Row| {
        row.values.pop();
        row
    });
    let mut steps = input.steps;
    steps.push(format!(
        "SortLimit: order by [{}], limit {n}",
        order_by
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    ));
    Ok(Planned {
        stream,
        scope: input.scope,
        rowtime: None,
        proctime: false,
        window: None,
        above_watermark: None,
        versions: None,
        updating: !order_by.is_empty(),
        update_before: None,
        steps,
    })
}

/// `… ORDER BY time [, keys…]` without `LIMIT`: the rows in event-time
/// order, as Flink's temporal sort runs it. Rows wait until the watermark
/// passes their time, then the rows of one time come out ordered by the
/// other keys (in arrival order where they tie); a row not after the last
/// time emitted is late and dropped. Only an ascending event-time
/// attribute can lead the order, as in Flink.
pub(crate) fn plan_time_sort(
    input: Planned,
    order_by: &[OrderByExpr],
    at: Position,
) -> Result<Planned, SqlError> {
    let wrong = || {
        SqlError::unsupported(
            "ORDER BY without LIMIT on a stream, unless it starts with the event-time attribute, ascending (then it sorts by time, as in Flink; with LIMIT it is a Top-N)",
            at,
        )
    };
    let Some((first, rest)) = order_by.split_first() else {
        return Err(wrong());
    };
    // The keys are the query's output columns (a column the SELECT list
    // leaves out cannot be sorted by here: it is not found, naming those
    // there are).
    let time = match &first.expr {
        Expr::Identifier(id) => Some(input.scope.index(&id.value, pos(&first.expr))?),
        _ => None,
    };
    if input.proctime
        || input.updating
        || time.is_none()
        || time != input.rowtime
        || first.options.asc == Some(false)
    {
        return Err(wrong());
    }
    let time = time.unwrap_or_default();
    let secondary: Vec<SortKey> = rest
        .iter()
        .map(|o| {
            let ascending = o.options.asc.unwrap_or(true);
            Ok(SortKey {
                eval: compile(&o.expr, &input.scope)?.eval,
                ascending,
                nulls_first: o.options.nulls_first.unwrap_or(ascending),
            })
        })
        .collect::<Result<_, SqlError>>()?;
    let keys = order_by
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    let stream = crate::plan::stateful(
        input
            .stream
            .key_by(|_: &Row| Vec::<Value>::new())
            .process(TimeSort {
                time,
                secondary,
                state: None,
            }),
        &format!("TemporalSort[{keys}]"),
    );
    let mut steps = input.steps;
    steps.push(format!("TemporalSort: order by [{keys}]"));
    Ok(Planned {
        stream,
        scope: input.scope,
        rowtime: input.rowtime,
        proctime: false,
        window: input.window,
        above_watermark: None,
        versions: None,
        updating: false,
        update_before: None,
        steps,
    })
}

/// The rows waiting for the watermark, by time, and the last time emitted.
type Waiting = (
    std::collections::BTreeMap<i64, Vec<Vec<Value>>>,
    Option<i64>,
);

/// Emits rows in event-time order ([`plan_time_sort`]).
#[derive(Clone)]
struct TimeSort {
    time: usize,
    secondary: Vec<SortKey>,
    state: Option<ValueState<Waiting>>,
}

impl KeyedProcessFunction<Vec<Value>, Row, Row> for TimeSort {
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.state = Some(ctx.get_state(&ValueStateDescriptor::new("waiting"))?);
        Ok(())
    }

    fn process_element(
        &mut self,
        row: Row,
        ctx: &mut ProcessContext<'_, Vec<Value>>,
        _out: &mut Collector<'_, Row>,
    ) -> FunctionResult {
        let state = self.state.as_ref().ok_or("the sort is not open")?;
        let Some(time) = row.values[self.time].as_i64() else {
            return Ok(());
        };
        let first_of_time = state.update_in_place(|waiting| {
            let (rows, last) = match waiting {
                Some(w) => w,
                None => {
                    let mut rows = std::collections::BTreeMap::new();
                    rows.insert(time, vec![row.into_values()]);
                    return (ValueChange::Set((rows, None)), true);
                }
            };
            if last.is_some_and(|l| time <= l) {
                return (ValueChange::Keep, false);
            }
            let at_time = rows.entry(time).or_default();
            at_time.push(row.into_values());
            (ValueChange::Keep, at_time.len() == 1)
        })?;
        if first_of_time {
            ctx.timer_service().register_event_time_timer(time);
        }
        Ok(())
    }

    fn on_timer(
        &mut self,
        timestamp: i64,
        _ctx: &mut ProcessContext<'_, Vec<Value>>,
        out: &mut Collector<'_, Row>,
    ) -> FunctionResult {
        let state = self.state.as_ref().ok_or("the sort is not open")?;
        let secondary = &self.secondary;
        state.update_in_place(|waiting| {
            let Some((rows, last)) = waiting else {
                return (ValueChange::Keep, ());
            };
            if let Some(mut due) = rows.remove(&timestamp) {
                if !secondary.is_empty() {
                    // A stable sort: ties keep their arrival order.
                    let mut keyed: Vec<(Vec<Value>, Vec<Value>)> = due
                        .drain(..)
                        .map(|r| (sort_values(secondary, &r), r))
                        .collect();
                    keyed.sort_by(|a, b| compare_values(secondary, &a.0, &b.0));
                    due = keyed.into_iter().map(|(_, r)| r).collect();
                }
                for values in due {
                    out.collect(Row::insert(values));
                }
                *last = Some(timestamp);
            }
            (ValueChange::Keep, ())
        })?;
        Ok(())
    }
}

/// How two rows compare under `keys` (NULLs first when ascending, last
/// when descending, unless the query says otherwise, as in Flink).
fn compare(keys: &[SortKey], a: &[Value], b: &[Value]) -> Ordering {
    compare_values(keys, &sort_values(keys, a), &sort_values(keys, b))
}

/// A row's values of the `ORDER BY` keys.
fn sort_values(keys: &[SortKey], row: &[Value]) -> Vec<Value> {
    keys.iter()
        .map(|k| (k.eval)(row).unwrap_or(Value::Null))
        .collect()
}

/// How two rows' `ORDER BY` values (see [`sort_values`]) compare.
fn compare_values(keys: &[SortKey], a: &[Value], b: &[Value]) -> Ordering {
    for ((k, x), y) in keys.iter().zip(a).zip(b) {
        let o = match (x.is_null(), y.is_null()) {
            (true, true) => Ordering::Equal,
            (true, false) if k.nulls_first => Ordering::Less,
            (true, false) => Ordering::Greater,
            (false, true) if k.nulls_first => Ordering::Greater,
            (false, true) => Ordering::Less,
            (false, false) => {
                let o = x.compare(y).unwrap_or(Ordering::Equal);
                if k.ascending {
                    o
                } else {
                    o.reverse()
                }
            }
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// The ranks a query keeps: `first..=last`.
#[derive(Debug, Clone, Copy)]
struct Ranks {
    first: i64,
    last: i64,
}

/// The rank range an outer `WHERE` conjunct puts on the rank column, if
/// it is one.
fn rank_range(e: &Expr, alias: &str) -> Option<Ranks> {
    let is_alias =
        |x: &Expr| matches!(x, Expr::Identifier(id) if id.value.eq_ignore_ascii_case(alias));
    let number = |x: &Expr| -> Option<i64> {
        match x {
            Expr::Value(v) => match &v.value {
                sqlparser::ast::Value::Number(n, _) => n.parse().ok(),
                _ => None,
            },
            _ => None,
        }
    };
    match e {
        Expr::Nested(inner) => rank_range(inner, alias),
        Expr::BinaryOp { left, op, right } => {
            // `rownum op N` or `N op rownum` (flipped).
            let (op, n) = if is_alias(left) {
                (op.clone(), number(right)?)
            } else if is_alias(right) {
                let flipped = match op {
                    BinaryOperator::Lt => BinaryOperator::Gt,
                    BinaryOperator::LtEq => BinaryOperator::GtEq,
                    BinaryOperator::Gt => BinaryOperator::Lt,
                    BinaryOperator::GtEq => BinaryOperator::LtEq,
                    other => other.clone(),
                };
                (flipped, number(left)?)
            } else {
                return None;
            };
            match op {
                BinaryOperator::LtEq => Some(Ranks { first: 1, last: n }),
                BinaryOperator::Lt => Some(Ranks {
                    first: 1,
                    last: n - 1,
                }),
                BinaryOperator::Eq => Some(Ranks { first: n, last: n }),
                _ => None,
            }
        }
        Expr::Between {
            expr,
            negated: false,
            low,
            high,
        } if is_alias(expr) => Some(Ranks {
            first: number(low)?,
            last: number(high)?,
        }),
        _ => None,
    }
}

/// The `ROW_NUMBER() OVER (…)` item of a `SELECT` list: its index, alias
/// and window.
fn row_number_item(select: &Select) -> Option<(usize, &Ident, &Expr)> {
    select.projection.iter().enumerate().find_map(|(i, item)| {
        let SelectItem::ExprWithAlias { expr, alias } = item else {
            return None;
        };
        match expr {
            Expr::Function(f) if f.over.is_some() => Some((i, alias, expr)),
            _ => None,
        }
    })
}

/// Plans `select` if it keeps rows of a ranked subquery (`SELECT … FROM
/// (SELECT …, ROW_NUMBER() OVER (…) AS r FROM …) WHERE r <= N`); `None`
/// if it is not such a query.
pub(crate) fn plan_ranked(
    env: &StreamExecutionEnvironment,
    catalog: &Catalog,
    select: &Select,
) -> Result<Option<Planned>, SqlError> {
    let [from] = select.from.as_slice() else {
        return Ok(None);
    };
    let TableFactor::Derived { subquery, .. } = &from.relation else {
        return Ok(None);
    };
    if !from.joins.is_empty() {
        return Ok(None);
    }
    let SetExpr::Select(inner) = &*subquery.body else {
        return Ok(None);
    };
    let Some((index, alias, call)) = row_number_item(inner) else {
        return Ok(None);
    };
    let at = pos(call);
    let Expr::Function(f) = call else {
        return Ok(None);
    };
    let name = f.name.to_string().to_ascii_uppercase();
    if name != "ROW_NUMBER" {
        return Err(SqlError::unsupported(
            format!("{name} … OVER (only ROW_NUMBER, for Top-N and deduplication, as in Flink)"),
            at,
        ));
    }
    let Some(WindowType::WindowSpec(spec)) = &f.over else {
        return Err(SqlError::unsupported("a named window in OVER", at));
    };
    if spec.window_frame.is_some() {
        return Err(SqlError::unsupported(
            "a window frame in ROW_NUMBER's OVER",
            at,
        ));
    }
    if spec.order_by.is_empty() {
        return Err(SqlError::validation(
            "ROW_NUMBER() OVER needs an ORDER BY",
            at,
        ));
    }
    let ranks = select
        .selection
        .as_ref()
        .map(|w| {
            crate::join::conjuncts(w)
                .into_iter()
                .find_map(|c| rank_range(c, &alias.value))
        })
        .unwrap_or(None)
        .ok_or_else(|| {
            SqlError::unsupported(
                format!(
                    "ROW_NUMBER without a filter on its number in the outer query (WHERE {} <= N): an OVER aggregation",
                    alias.value
                ),
                at,
            )
        })?;
    if ranks.first < 1 || ranks.last < ranks.first {
        return Err(SqlError::validation(
            format!("no row has a rank in {}..={}", ranks.first, ranks.last),
            pos(select.selection.as_ref().unwrap_or(call)),
        ));
    }
    let grouped = !matches!(&inner.group_by, sqlparser::ast::GroupByExpr::Expressions(e, _) if e.is_empty())
        || inner.having.is_some();
    if grouped {
        return Err(SqlError::unsupported(
            "ROW_NUMBER in a grouped SELECT (rank the aggregation's rows in an outer query)",
            at,
        ));
    }
    // The inner query's rows with all their columns, ranked, then its
    // SELECT list (the rank item naming the rank column), then the outer
    // query.
    let mut all = (**inner).clone();
    all.projection = vec![SelectItem::Wildcard(Default::default())];
    all.distinct = None;
    let input = plan_select(env, catalog, &all)?;
    if input.updating {
        return Err(SqlError::unsupported(
            "ROW_NUMBER over an updating input (Top-N of a changelog)",
            at,
        ));
    }
    let partition: Vec<Eval> = spec
        .partition_by
        .iter()
        .map(|e| compile(e, &input.scope).map(|c| c.eval))
        .collect::<Result<_, _>>()?;
    let order: Vec<SortKey> = spec
        .order_by
        .iter()
        .map(|o| {
            let ascending = o.options.asc.unwrap_or(true);
            Ok(SortKey {
                eval: compile(&o.expr, &input.scope)?.eval,
                ascending,
                nulls_first: o.options.nulls_first.unwrap_or(ascending),
            })
        })
        .collect::<Result<_, SqlError>>()?;
    let names = |e: &Expr, name: &str| matches!(e, Expr::Identifier(id) if id.value.eq_ignore_ascii_case(name));
    let windowed = ["window_start", "window_end"]
        .iter()
        .all(|w| spec.partition_by.iter().any(|e| names(e, w)))
        && input.rowtime.is_some()
        && !input.proctime;
    let by_time = match (spec.order_by.as_slice(), input.rowtime) {
        ([o], Some(t)) => {
            matches!(&o.expr, Expr::Identifier(id) if input.scope.index(&id.value, at).ok() == Some(t))
        }
        _ => false,
    };
    // Whether the final rows show the rank (Flink's Top-N then updates
    // every rank a new row pushes down).
    let shown = select.projection.iter().any(|item| match item {
        SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..) => true,
        SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
            names(e, &alias.value)
        }
        _ => false,
    });
    let keyed = {
        let partition = partition.clone();
        input.stream.key_by(move |r: &Row| {
            partition
                .iter()
                .map(|p| p(&r.values).unwrap_or(Value::Null))
                .collect::<Vec<Value>>()
        })
    };
    let ascending = spec.order_by[0].options.asc.unwrap_or(true);
    let (stream, step, updating) = if windowed {
        let window_end = input.scope.index("window_end", at)?;
        (
            keyed.process(WindowTopN {
                order,
                ranks,
                window_end,
                rows: None,
            }),
            "WindowRank",
            false,
        )
    } else if ranks.first == 1 && ranks.last == 1 && by_time && ascending && !input.proctime {
        (
            keyed.process(FirstByEventTime {
                time: input.rowtime.unwrap_or_default(),
                state: None,
            }),
            "Deduplicate: keep first row by event time",
            false,
        )
    } else if ranks.first == 1 && ranks.last == 1 && by_time {
        let time = input.rowtime.unwrap_or_default();
        let keep_first = ascending;
        (
            keyed.process(Deduplicate {
                time: (!input.proctime).then_some(time),
                keep_first,
                kept: None,
            }),
            if keep_first {
                "Deduplicate: keep first row"
            } else {
                "Deduplicate: keep last row"
            },
            !(keep_first && input.proctime),
        )
    } else {
        if ranks.first != 1 {
            return Err(SqlError::unsupported(
                "a Top-N whose ranks do not start at 1 (outside windows)",
                at,
            ));
        }
        (
            keyed.process(TopN {
                order,
                n: ranks.last as usize,
                shown,
                top: None,
            }),
            "Rank",
            true,
        )
    };
    let input_columns: Vec<String> = input.scope.columns.iter().map(|(n, _)| n.clone()).collect();
    let what = format!(
        "{step}[{}; {}; {}..={}]",
        spec.partition_by
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        spec.order_by
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        ranks.first,
        ranks.last
    );
    let stream = crate::plan::stateful(stream, &what);
    let mut scope = input.scope.clone();
    scope.columns.push((alias.value.clone(), SqlType::BigInt));
    let mut steps = input.steps;
    steps.push(format!(
        "{step}: row_number over (partition by [{}] order by [{}]), ranks {}..={}",
        spec.partition_by
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        spec.order_by
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        ranks.first,
        ranks.last
    ));
    let ranked = Planned {
        stream,
        scope,
        // Window ranks and first rows by event time stay insert-only,
        // emitted as the watermark passes: their time attribute stays.
        rowtime: if windowed || step.contains("event time") {
            input.rowtime
        } else {
            None
        },
        proctime: false,
        window: if windowed { input.window } else { None },
        above_watermark: None,
        // Each key's last row by event time, as it changes: a versioned
        // table (Flink's versioned view), keyed by the partition columns.
        versions: if step == "Deduplicate: keep last row" && by_time && !input.proctime {
            let key: Option<Vec<usize>> = spec
                .partition_by
                .iter()
                .map(|e| crate::join::column_index(e, &input.scope))
                .collect();
            key.zip(input.rowtime)
                .map(|(key, time)| crate::temporal_join::Versions { key, time })
        } else {
            None
        },
        updating,
        update_before: None,
        steps,
    };
    // The inner SELECT list over the ranked rows, the rank item naming
    // the rank column.
    // A `*` there is the input's columns (not the rank column too).
    let mut inner_list = (**inner).clone();
    inner_list.projection = inner
        .projection
        .iter()
        .enumerate()
        .flat_map(|(i, item)| match item {
            _ if i == index => vec![SelectItem::UnnamedExpr(Expr::Identifier(alias.clone()))],
            SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..) => input_columns
                .iter()
                .map(|c| SelectItem::UnnamedExpr(Expr::Identifier(Ident::new(c))))
                .collect(),
            other => vec![other.clone()],
        })
        .collect();
    inner_list.selection = None;
    inner_list.from = Vec::new();
    let projected = calc(ranked, &inner_list)?;
    calc(projected, select).map(Some)
}

/// Each window's rows of a key, ranked when the watermark passes the
/// window's end.
#[derive(Clone)]
struct WindowTopN {
    order: Vec<SortKey>,
    ranks: Ranks,
    window_end: usize,
    rows: Option<ListState<Vec<Value>>>,
}

impl KeyedProcessFunction<Vec<Value>, Row, Row> for WindowTopN {
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.rows = Some(ctx.get_list_state(&ListStateDescriptor::new("window-rows"))?);
        Ok(())
    }

    fn process_element(
        &mut self,
        row: Row,
        ctx: &mut ProcessContext<'_, Vec<Value>>,
        _out: &mut Collector<'_, Row>,
    ) -> FunctionResult {
        let Some(end) = row.values[self.window_end].as_i64() else {
            return Ok(());
        };
        // A row of a window already ranked is late: dropped, as Flink's
        // window rank drops it.
        if !crate::window::hold_until_end(ctx, end) {
            return Ok(());
        }
        let rows = self.rows.as_ref().ok_or("the window rank is not open")?;
        rows.add(row.into_values())?;
        Ok(())
    }

    fn on_timer(
        &mut self,
        _timestamp: i64,
        _ctx: &mut ProcessContext<'_, Vec<Value>>,
        out: &mut Collector<'_, Row>,
    ) -> FunctionResult {
        let rows = self.rows.as_ref().ok_or("the window rank is not open")?;
        let all = rows.get()?;
        rows.clear()?;
        // Stable: equal rows keep their arrival order.
        // Each row's keys once, not once per comparison.
        let mut keyed: Vec<(Vec<Value>, Vec<Value>)> = all
            .into_iter()
            .map(|row| (sort_values(&self.order, &row), row))
            .collect();
        keyed.sort_by(|a, b| compare_values(&self.order, &a.0, &b.0));
        for (i, (_, mut values)) in keyed.into_iter().enumerate() {
            let rank = i as i64 + 1;
            if rank > self.ranks.last {
                break;
            }
            if rank >= self.ranks.first {
                values.push(Value::BigInt(rank));
                out.collect(Row::insert(values));
            }
        }
        Ok(())
    }
}

/// The first row of each key by event time, emitted when the watermark
/// passes it (so no earlier row can still come; insert-only). Rows behind
/// the watermark are late and dropped, as in Flink.
#[derive(Clone)]
struct FirstByEventTime {
    time: usize,
    /// The earliest row so far, and whether the key's row was emitted.
    state: Option<ValueState<(Option<Vec<Value>>, bool)>>,
}

impl KeyedProcessFunction<Vec<Value>, Row, Row> for FirstByEventTime {
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.state = Some(ctx.get_state(&ValueStateDescriptor::new("first-row"))?);
        Ok(())
    }

    fn process_element(
        &mut self,
        row: Row,
        ctx: &mut ProcessContext<'_, Vec<Value>>,
        _out: &mut Collector<'_, Row>,
    ) -> FunctionResult {
        let state = self.state.as_ref().ok_or("the deduplication is not open")?;
        let Some(time) = row.values[self.time].as_i64() else {
            return Ok(());
        };
        let mut timers = ctx.timer_service();
        if time < timers.current_watermark() {
            return Ok(());
        }
        let (waiting, emitted) = state.value()?.unwrap_or((None, false));
        if emitted {
            return Ok(());
        }
        let earlier = match &waiting {
            Some(w) => w[self.time].as_i64().is_none_or(|t| time < t),
            None => true,
        };
        if earlier {
            // The timer of a row replaced here still fires; it finds the
            // key's row emitted already.
            timers.register_event_time_timer(time);
            let mut values = row.into_values();
            values.push(Value::BigInt(1));
            state.update((Some(values), false))?;
        }
        Ok(())
    }

    fn on_timer(
        &mut self,
        _timestamp: i64,
        _ctx: &mut ProcessContext<'_, Vec<Value>>,
        out: &mut Collector<'_, Row>,
    ) -> FunctionResult {
        let state = self.state.as_ref().ok_or("the deduplication is not open")?;
        if let Some((Some(values), false)) = state.value()? {
            out.collect(Row::insert(values));
            state.update((None, true))?;
        }
        Ok(())
    }
}

/// The last row of each key by event time (`time`, the column), or the
/// first or last by arrival (processing time).
#[derive(Clone)]
struct Deduplicate {
    time: Option<usize>,
    keep_first: bool,
    kept: Option<ValueState<Vec<Value>>>,
}

impl KeyedProcessFunction<Vec<Value>, Row, Row> for Deduplicate {
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.kept = Some(ctx.get_state(&ValueStateDescriptor::new("kept"))?);
        Ok(())
    }

    fn process_element(
        &mut self,
        row: Row,
        _ctx: &mut ProcessContext<'_, Vec<Value>>,
        out: &mut Collector<'_, Row>,
    ) -> FunctionResult {
        let state = self.kept.as_ref().ok_or("the deduplication is not open")?;
        let mut values = row.into_values();
        values.push(Value::BigInt(1));
        let previous = state.value()?;
        let replaces = match (&previous, self.time) {
            (None, _) => true,
            // By arrival: the first row stays; each later row replaces.
            (Some(_), None) => !self.keep_first,
            (Some(old), Some(t)) => {
                let (new_time, old_time) = (values[t].as_i64(), old[t].as_i64());
                if self.keep_first {
                    new_time < old_time
                } else {
                    new_time >= old_time
                }
            }
        };
        if !replaces {
            return Ok(());
        }
        match previous {
            None => out.collect(Row::insert(values.clone())),
            Some(old) => {
                out.collect(Row {
                    kind: RowKind::UpdateBefore,
                    values: old,
                });
                out.collect(Row {
                    kind: RowKind::UpdateAfter,
                    values: values.clone(),
                });
            }
        }
        state.update(values)?;
        Ok(())
    }
}

/// The first `n` rows of each key in order, kept as rows arrive, with the
/// changelog Flink's append-only Top-N emits: without the rank shown, `+I`
/// for a row that enters and `-D` for the one it pushes out (a Top-1's
/// one row is updated, `-U` then `+U`, as Flink's Top-1 does); with the
/// rank shown, every rank from the new row's down changes (`-U`/`+U`, or
/// `+I` for a rank filled the first time).
#[derive(Clone)]
struct TopN {
    order: Vec<SortKey>,
    n: usize,
    shown: bool,
    top: Option<ValueState<Vec<Vec<Value>>>>,
}

impl KeyedProcessFunction<Vec<Value>, Row, Row> for TopN {
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.top = Some(ctx.get_state(&ValueStateDescriptor::new("top"))?);
        Ok(())
    }

    fn process_element(
        &mut self,
        row: Row,
        _ctx: &mut ProcessContext<'_, Vec<Value>>,
        out: &mut Collector<'_, Row>,
    ) -> FunctionResult {
        let state = self.top.as_ref().ok_or("the Top-N is not open")?;
        let mut top = state.value()?.unwrap_or_default();
        let values = row.into_values();
        // After the rows it ties with (they came first).
        let at = top.partition_point(|r| compare(&self.order, r, &values) != Ordering::Greater);
        if at >= self.n {
            return Ok(());
        }
        let with_rank = |mut r: Vec<Value>, rank: usize| {
            r.push(Value::BigInt(rank as i64));
            r
        };
        top.insert(at, values);
        let evicted = (top.len() > self.n).then(|| top.pop()).flatten();
        if self.shown {
            for (rank0, row) in top.iter().enumerate().skip(at) {
                let rank = rank0 + 1;
                // What held this rank before the new row pushed it down:
                // the row now one below, or, at the last rank, the one
                // pushed out (none: the rank is filled the first time).
                let old = top
                    .get(rank0 + 1)
                    .or(evicted.as_ref().filter(|_| rank == self.n));
                match old {
                    Some(old) => {
                        out.collect(Row {
                            kind: RowKind::UpdateBefore,
                            values: with_rank(old.clone(), rank),
                        });
                        out.collect(Row {
                            kind: RowKind::UpdateAfter,
                            values: with_rank(row.clone(), rank),
                        });
                    }
                    None => out.collect(Row::insert(with_rank(row.clone(), rank))),
                }
            }
        } else {
            // A Top-1 updates its one row in place (`-U`, `+U`), as Flink's
            // Top-1 does; a longer one deletes the row pushed out and
            // inserts the new one.
            let (before, after) = match (self.n, &evicted) {
                (1, Some(_)) => (RowKind::UpdateBefore, RowKind::UpdateAfter),
                _ => (RowKind::Delete, RowKind::Insert),
            };
            if let Some(old) = evicted {
                out.collect(Row {
                    kind: before,
                    values: with_rank(old, self.n),
                });
            }
            out.collect(Row {
                kind: after,
                values: with_rank(top[at].clone(), at + 1),
            });
        }
        state.update(top)?;
        Ok(())
    }
}
