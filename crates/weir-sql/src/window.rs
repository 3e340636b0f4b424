//! Window table-valued functions — `TUMBLE`, `HOP` — and the window
//! aggregations over them (`GROUP BY window_start, window_end, …`),
//! planned into Weir's event-time window operator.

use std::sync::Arc;
use std::time::Duration;

use sqlparser::ast::helpers::attached_token::AttachedToken;
use sqlparser::ast::{
    CaseWhen, DuplicateTreatment, Expr, FunctionArg, FunctionArgExpr, FunctionArgOperator,
    FunctionArguments, GroupByExpr, Ident, Select, SelectItem, Spanned,
};
use weir::prelude::*;
use weir::window::{SlidingEventTimeWindows, TimeWindow, TumblingEventTimeWindows, WindowAssigner};

use crate::aggregate::{AggCall, AggKind, Results, SqlAggregates};
use crate::error::{position, Position, SqlError};
use crate::expr::{compile, is_aggregate, Condition, Scope};
use crate::key::RowKey;
use crate::plan::{calc_step, filter_project, projection, Planned};
use crate::types::SqlType;
use crate::value::{Row, Value};

fn pos(e: &impl Spanned) -> Position {
    position(e.span())
}

/// Which window TVF, with its sizes in milliseconds.
#[derive(Debug, Clone, Copy)]
pub(crate) enum WindowKind {
    Tumble { size: i64, offset: i64 },
    Hop { slide: i64, size: i64, offset: i64 },
    Cumulate { step: i64, size: i64, offset: i64 },
    Session { gap: i64 },
}

/// A parsed window TVF call: `TUMBLE(TABLE t, DESCRIPTOR(ts), size)`.
#[derive(Debug, Clone)]
pub(crate) struct WindowTvf {
    pub table: String,
    pub time_column: String,
    pub kind: WindowKind,
    /// `SESSION(TABLE t PARTITION BY k, …)`: the columns sessions are
    /// kept apart by.
    pub partition: Vec<String>,
    pub at: Position,
}

/// An `INTERVAL` argument in milliseconds.
fn interval_arg(e: &Expr, what: &str) -> Result<i64, SqlError> {
    let c = compile(e, &Scope::default())?;
    match (c.ty, (c.eval)(&[])) {
        (SqlType::Interval, Ok(Value::Interval(ms))) if ms > 0 || what == "offset" => Ok(ms),
        _ => Err(SqlError::validation(
            format!("the window's {what} must be a positive INTERVAL, not {e}"),
            pos(e),
        )),
    }
}

impl WindowTvf {
    /// Parses the function call inside `FROM TABLE(…)`.
    pub fn parse(call: &Expr) -> Result<WindowTvf, SqlError> {
        let at = pos(call);
        let Expr::Function(f) = call else {
            return Err(SqlError::unsupported(format!("FROM TABLE({call})"), at));
        };
        let name = f.name.to_string().to_ascii_uppercase();
        let FunctionArguments::List(list) = &f.args else {
            return Err(SqlError::validation(format!("{name} needs arguments"), at));
        };
        // Positional or named (DATA =>, TIMECOL =>, SIZE =>, …) arguments.
        let mut positional: Vec<&Expr> = Vec::new();
        let mut named: Vec<(String, &Expr)> = Vec::new();
        let mut partition = None;
        for a in &list.args {
            match a {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => positional.push(e),
                FunctionArg::Named {
                    name,
                    arg: FunctionArgExpr::Expr(e),
                    operator: FunctionArgOperator::RightArrow,
                } if name.value.eq_ignore_ascii_case("PARTITION") => partition = Some(e),
                FunctionArg::Named {
                    name,
                    arg: FunctionArgExpr::Expr(e),
                    operator: FunctionArgOperator::RightArrow,
                } => named.push((name.value.to_ascii_uppercase(), e)),
                other => return Err(SqlError::unsupported(format!("the argument {other}"), at)),
            }
        }
        let params: &[&str] = match name.as_str() {
            "TUMBLE" => &["DATA", "TIMECOL", "SIZE", "OFFSET"],
            "HOP" => &["DATA", "TIMECOL", "SLIDE", "SIZE", "OFFSET"],
            "CUMULATE" => &["DATA", "TIMECOL", "STEP", "SIZE", "OFFSET"],
            "SESSION" => &["DATA", "TIMECOL", "GAP"],
            other => {
                return Err(SqlError::unsupported(
                    format!("the table function {other}"),
                    at,
                ))
            }
        };
        let arg = |i: usize| -> Option<&Expr> {
            positional
                .get(i)
                .copied()
                .or_else(|| named.iter().find(|(n, _)| n == params[i]).map(|(_, e)| *e))
        };
        if partition.is_some() && name != "SESSION" {
            return Err(SqlError::validation(
                format!("{name} takes no PARTITION BY (only SESSION does)"),
                at,
            ));
        }
        let partition = match partition {
            None => Vec::new(),
            Some(Expr::Tuple(keys)) => keys.iter().collect(),
            Some(Expr::Nested(key)) => vec![&**key],
            Some(key) => vec![key],
        }
        .into_iter()
        .map(|k| match k {
            Expr::Identifier(id) => Ok(id.value.clone()),
            other => Err(SqlError::validation(
                format!("PARTITION BY takes columns, not {other}"),
                pos(other),
            )),
        })
        .collect::<Result<Vec<_>, _>>()?;
        let required = if name == "SESSION" {
            params.len()
        } else {
            params.len() - 1
        };
        if positional.len() + named.len() < required
            || positional.len() + named.len() > params.len()
        {
            return Err(SqlError::validation(
                format!("{name} takes ({})", params.join(", ")),
                at,
            ));
        }
        let table = match arg(0) {
            Some(Expr::Identifier(id)) => id.value.clone(),
            Some(Expr::CompoundIdentifier(parts)) => parts
                .iter()
                .map(|p| p.value.as_str())
                .collect::<Vec<_>>()
                .join("."),
            other => {
                return Err(SqlError::validation(
                    format!("{name}'s first argument must be TABLE name, not {other:?}"),
                    at,
                ))
            }
        };
        let time_column = match arg(1) {
            Some(Expr::Function(d)) if d.name.to_string().eq_ignore_ascii_case("DESCRIPTOR") => {
                match &d.args {
                    FunctionArguments::List(l) => match l.args.as_slice() {
                        [FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Identifier(Ident {
                            value,
                            ..
                        })))] => value.clone(),
                        _ => return Err(SqlError::validation("DESCRIPTOR takes one column", at)),
                    },
                    _ => return Err(SqlError::validation("DESCRIPTOR takes one column", at)),
                }
            }
            _ => {
                return Err(SqlError::validation(
                    format!("{name}'s second argument must be DESCRIPTOR(time column)"),
                    at,
                ))
            }
        };
        let missing = |i: usize| SqlError::validation(format!("{name} needs {}", params[i]), at);
        let kind = match name.as_str() {
            "TUMBLE" => WindowKind::Tumble {
                size: interval_arg(arg(2).ok_or_else(|| missing(2))?, "size")?,
                offset: arg(3)
                    .map(|e| interval_arg(e, "offset"))
                    .transpose()?
                    .unwrap_or(0),
            },
            "HOP" => WindowKind::Hop {
                slide: interval_arg(arg(2).ok_or_else(|| missing(2))?, "slide")?,
                size: interval_arg(arg(3).ok_or_else(|| missing(3))?, "size")?,
                offset: arg(4)
                    .map(|e| interval_arg(e, "offset"))
                    .transpose()?
                    .unwrap_or(0),
            },
            "CUMULATE" => {
                let step = interval_arg(arg(2).ok_or_else(|| missing(2))?, "step")?;
                let size = interval_arg(arg(3).ok_or_else(|| missing(3))?, "size")?;
                if size % step != 0 {
                    return Err(SqlError::validation(
                        format!("CUMULATE's size ({size} ms) must be a multiple of its step ({step} ms)"),
                        at,
                    ));
                }
                WindowKind::Cumulate {
                    step,
                    size,
                    offset: arg(4)
                        .map(|e| interval_arg(e, "offset"))
                        .transpose()?
                        .unwrap_or(0),
                }
            }
            _ => WindowKind::Session {
                gap: interval_arg(arg(2).ok_or_else(|| missing(2))?, "gap")?,
            },
        };
        Ok(WindowTvf {
            table,
            time_column,
            kind,
            partition,
            at,
        })
    }

    /// The windows a row of event time `ts` belongs to, as Flink assigns
    /// them (start aligned to the epoch plus the offset).
    fn windows(&self, ts: i64) -> Vec<(i64, i64)> {
        let start_of = |size: i64, offset: i64| ts - (ts - offset).rem_euclid(size);
        match self.kind {
            WindowKind::Tumble { size, offset } => {
                let s = start_of(size, offset);
                vec![(s, s + size)]
            }
            WindowKind::Hop {
                slide,
                size,
                offset,
            } => {
                let mut out = Vec::new();
                let mut s = start_of(slide, offset);
                while s > ts - size {
                    out.push((s, s + size));
                    s -= slide;
                }
                out.reverse();
                out
            }
            WindowKind::Cumulate { step, size, offset } => {
                let s = start_of(size, offset);
                let first = s + ((ts - s) / step + 1) * step;
                (first..=s + size)
                    .step_by(step as usize)
                    .map(|end| (s, end))
                    .collect()
            }
            // Sessions exist only in an aggregation (the planner says so).
            WindowKind::Session { .. } => Vec::new(),
        }
    }

    pub(crate) fn describe(&self) -> String {
        match self.kind {
            WindowKind::Tumble { size, .. } => format!("TUMBLE(size={size} ms)"),
            WindowKind::Hop { slide, size, .. } => format!("HOP(slide={slide} ms, size={size} ms)"),
            WindowKind::Cumulate { step, size, .. } => {
                format!("CUMULATE(step={step} ms, size={size} ms)")
            }
            WindowKind::Session { gap } if self.partition.is_empty() => {
                format!("SESSION(gap={gap} ms)")
            }
            WindowKind::Session { gap } => format!(
                "SESSION(partition by [{}], gap={gap} ms)",
                self.partition.join(", ")
            ),
        }
    }
}

/// The input's time attribute, checked to be the DESCRIPTOR's column.
fn time_attribute(input: &Planned, tvf: &WindowTvf) -> Result<(usize, SqlType), SqlError> {
    if input.updating {
        // Flink's window TVFs take insert-only input too.
        return Err(SqlError::unsupported(
            "a window TVF over an updating table (one with -U/-D rows, e.g. a GROUP BY's result)",
            tvf.at,
        ));
    }
    let i = input.scope.index(&tvf.time_column, tvf.at)?;
    if input.rowtime != Some(i) {
        return Err(SqlError::validation(
            format!(
                "the DESCRIPTOR column '{}' is not a time attribute: declare WATERMARK FOR {} in the table, \
                 or make it processing time with {} AS PROCTIME()",
                tvf.time_column, tvf.time_column, tvf.time_column
            ),
            tvf.at,
        ));
    }
    Ok((i, input.scope.columns[i].1))
}

fn time_value(ty: SqlType, ms: i64) -> Value {
    if ty == SqlType::TimestampLtz {
        Value::TimestampLtz(ms)
    } else {
        Value::Timestamp(ms)
    }
}

/// The window TVF's rows themselves: each input row once per window it is
/// in, with `window_start`, `window_end` and `window_time` appended.
pub(crate) fn plan_window_tvf(input: Planned, tvf: &WindowTvf) -> Result<Planned, SqlError> {
    if let WindowKind::Session { .. } = tvf.kind {
        return Err(SqlError::unsupported(
            "SESSION windows outside a window aggregation (GROUP BY window_start, window_end)",
            tvf.at,
        ));
    }
    let (rowtime, ty) = time_attribute(&input, tvf)?;
    let mut scope = input.scope.clone();
    scope
        .columns
        .push(("window_start".into(), SqlType::Timestamp));
    scope
        .columns
        .push(("window_end".into(), SqlType::Timestamp));
    scope.columns.push(("window_time".into(), ty));
    let window_time = scope.columns.len() - 1;
    let tvf2 = tvf.clone();
    let stream = input.stream.process(
        move |row: Row, _ctx: &mut ProcessContext<'_>, out: &mut Collector<'_, Row>| {
            let Some(ts) = row.values[rowtime].as_i64() else {
                return Ok(());
            };
            for (start, end) in tvf2.windows(ts) {
                let mut values = row.values.to_vec();
                values.push(Value::Timestamp(start));
                values.push(Value::Timestamp(end));
                values.push(time_value(ty, end - 1));
                out.collect(Row {
                    kind: row.kind,
                    values,
                });
            }
            Ok(())
        },
    );
    let mut steps = input.steps;
    steps.push(format!("WindowTableFunction: {}", tvf.describe()));
    Ok(Planned {
        stream,
        scope,
        rowtime: Some(window_time),
        proctime: input.proctime,
        // Event-time windows only: a window join waits for the watermark.
        window: (!input.proctime).then_some([window_time - 2, window_time - 1]),
        // The TVF's rows are the input's, late ones too.
        above_watermark: None,
        versions: None,
        updating: false,
        update_before: None,
        steps,
    })
}

/// For an operator that holds a row until its window (ending at `end`)
/// closes: registers the timer at the window's last millisecond, or says
/// the window closed already (the row is late).
pub(crate) fn hold_until_end<K: Clone + Eq + std::hash::Hash>(
    ctx: &mut ProcessContext<'_, K>,
    end: i64,
) -> bool {
    let mut timers = ctx.timer_service();
    if end - 1 <= timers.current_watermark() {
        return false;
    }
    timers.register_event_time_timer(end - 1);
    true
}

/// Whether `e` contains an aggregate call.
pub(crate) fn contains_aggregate(e: &Expr) -> bool {
    match e {
        Expr::Function(f) => {
            is_aggregate(&f.name.to_string())
                || match &f.args {
                    FunctionArguments::List(l) => l.args.iter().any(|a| match a {
                        FunctionArg::Unnamed(FunctionArgExpr::Expr(x)) => contains_aggregate(x),
                        _ => false,
                    }),
                    _ => false,
                }
        }
        Expr::BinaryOp { left, right, .. } => contains_aggregate(left) || contains_aggregate(right),
        Expr::UnaryOp { expr, .. } | Expr::Nested(expr) | Expr::Cast { expr, .. } => {
            contains_aggregate(expr)
        }
        Expr::Case {
            operand,
            conditions,
            else_result,
            ..
        } => {
            operand.as_deref().is_some_and(contains_aggregate)
                || conditions
                    .iter()
                    .any(|c| contains_aggregate(&c.condition) || contains_aggregate(&c.result))
                || else_result.as_deref().is_some_and(contains_aggregate)
        }
        _ => false,
    }
}

/// Collects a query's aggregate calls and grouping expressions, and
/// rewrites expressions over them into expressions over the aggregation's
/// output columns (`$group0`, …, `$agg0`, …).
pub(crate) struct Rewriter<'a> {
    groups: &'a [Expr],
    /// Columns the output has besides the groups (the window's).
    passthrough: &'a [&'a str],
    aggs: Vec<AggSpec>,
}

impl Rewriter<'_> {
    fn rewrite(&mut self, e: &Expr) -> Result<Expr, SqlError> {
        if let Some(i) = self.groups.iter().position(|g| g == e) {
            return Ok(Expr::Identifier(Ident::new(format!("$group{i}"))));
        }
        Ok(match e {
            Expr::Function(f) if is_aggregate(&f.name.to_string()) => {
                let name = f.name.to_string().to_ascii_uppercase();
                let at = pos(e);
                if f.over.is_some() {
                    return Err(SqlError::unsupported(format!("{name} … OVER"), at));
                }
                // A call written twice (in the SELECT list and HAVING, say)
                // is computed once, as in Flink.
                let call = agg_call(f, at)?;
                let i = match self.aggs.iter().position(|a| *a == call) {
                    Some(i) => i,
                    None => {
                        self.aggs.push(call);
                        self.aggs.len() - 1
                    }
                };
                Expr::Identifier(Ident::new(format!("$agg{i}")))
            }
            Expr::Identifier(id) => {
                // A column that is neither grouped nor aggregated.
                let passes = self
                    .passthrough
                    .iter()
                    .any(|w| id.value.eq_ignore_ascii_case(w));
                if !passes {
                    return Err(SqlError::validation(
                        format!(
                            "column '{}' is neither grouped nor aggregated: add it to GROUP BY or use it in an aggregate",
                            id.value
                        ),
                        pos(e),
                    ));
                }
                e.clone()
            }
            other => map_children(other, &mut |c| self.rewrite(c))?,
        })
    }
}

/// `e` with each subexpression (function arguments, operands, a CAST's or
/// CASE's parts) replaced by `f` of it; other expressions as they are.
pub(crate) fn map_children(
    e: &Expr,
    map: &mut dyn FnMut(&Expr) -> Result<Expr, SqlError>,
) -> Result<Expr, SqlError> {
    Ok(match e {
        Expr::Function(call) => {
            let mut call = call.clone();
            if let FunctionArguments::List(list) = &mut call.args {
                for a in &mut list.args {
                    if let FunctionArg::Unnamed(FunctionArgExpr::Expr(x)) = a {
                        *x = map(x)?;
                    }
                }
            }
            Expr::Function(call)
        }
        Expr::BinaryOp { left, op, right } => Expr::BinaryOp {
            left: Box::new(map(left)?),
            op: op.clone(),
            right: Box::new(map(right)?),
        },
        Expr::UnaryOp { op, expr } => Expr::UnaryOp {
            op: *op,
            expr: Box::new(map(expr)?),
        },
        Expr::Nested(x) => Expr::Nested(Box::new(map(x)?)),
        Expr::Cast {
            kind,
            expr,
            data_type,
            array,
            format,
        } => Expr::Cast {
            kind: kind.clone(),
            expr: Box::new(map(expr)?),
            data_type: data_type.clone(),
            array: *array,
            format: format.clone(),
        },
        Expr::Case {
            case_token,
            end_token,
            operand,
            conditions,
            else_result,
        } => Expr::Case {
            case_token: case_token.clone(),
            end_token: end_token.clone(),
            operand: operand.as_deref().map(&mut *map).transpose()?.map(Box::new),
            conditions: conditions
                .iter()
                .map(|c| {
                    Ok(sqlparser::ast::CaseWhen {
                        condition: map(&c.condition)?,
                        result: map(&c.result)?,
                    })
                })
                .collect::<Result<_, SqlError>>()?,
            else_result: else_result
                .as_deref()
                .map(&mut *map)
                .transpose()?
                .map(Box::new),
        },
        other => other.clone(),
    })
}

/// An aggregate call as written: its kind, argument (`None` for
/// `COUNT(*)`), `LISTAGG`'s separator and `FILTER (WHERE …)` condition.
#[derive(PartialEq)]
pub(crate) struct AggSpec {
    pub kind: AggKind,
    pub arg: Option<Expr>,
    pub separator: String,
    pub filter: Option<Expr>,
}

impl AggSpec {
    /// The call with its filter folded into its argument:
    /// `agg(x) FILTER (WHERE c)` is `agg(CASE WHEN c THEN x END)`, as
    /// every aggregate but `COUNT(*)` skips NULLs, and `COUNT(*)` becomes
    /// `COUNT` of a non-NULL constant.
    pub fn filter_in_arg(self) -> (AggKind, Option<Expr>, String) {
        let Some(condition) = self.filter else {
            return (self.kind, self.arg, self.separator);
        };
        let value = self
            .arg
            .unwrap_or(Expr::value(sqlparser::ast::Value::Number(
                "1".into(),
                false,
            )));
        let kind = match self.kind {
            AggKind::CountStar => AggKind::Count,
            other => other,
        };
        let case = Expr::Case {
            case_token: AttachedToken::empty(),
            end_token: AttachedToken::empty(),
            operand: None,
            conditions: vec![CaseWhen {
                condition,
                result: value,
            }],
            else_result: None,
        };
        (kind, Some(case), self.separator)
    }
}

/// The aggregate call `f`.
pub(crate) fn agg_call(f: &sqlparser::ast::Function, at: Position) -> Result<AggSpec, SqlError> {
    let name = f.name.to_string().to_ascii_uppercase();
    let FunctionArguments::List(list) = &f.args else {
        return Err(SqlError::validation(
            format!("{name} needs an argument"),
            at,
        ));
    };
    if matches!(name.as_str(), "LAG" | "LEAD") {
        return Err(SqlError::validation(
            format!("{name} needs an OVER window (and is an OVER function only)"),
            at,
        ));
    }
    let distinct = matches!(list.duplicate_treatment, Some(DuplicateTreatment::Distinct));
    let mut separator = ",".to_string();
    let (kind, arg) = match (name.as_str(), list.args.as_slice(), distinct) {
        ("COUNT", [FunctionArg::Unnamed(FunctionArgExpr::Wildcard)], false) => {
            (AggKind::CountStar, None)
        }
        (
            "LISTAGG",
            [FunctionArg::Unnamed(FunctionArgExpr::Expr(x)), FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Value(sep)))],
            false,
        ) => {
            let sqlparser::ast::Value::SingleQuotedString(text) = &sep.value else {
                return Err(SqlError::validation(
                    "LISTAGG's separator must be a string literal",
                    at,
                ));
            };
            separator = text.clone();
            (AggKind::ListAgg, Some(x.clone()))
        }
        (_, [FunctionArg::Unnamed(FunctionArgExpr::Expr(x))], _) => {
            if contains_aggregate(x) {
                return Err(SqlError::validation("aggregates cannot be nested", at));
            }
            let kind = match (name.as_str(), distinct) {
                ("COUNT", false) => AggKind::Count,
                ("COUNT", true) => AggKind::CountDistinct,
                (_, true) => return Err(SqlError::unsupported(format!("{name}(DISTINCT …)"), at)),
                ("SUM", _) => AggKind::Sum,
                ("MIN", _) => AggKind::Min,
                ("MAX", _) => AggKind::Max,
                ("LISTAGG", _) => AggKind::ListAgg,
                ("FIRST_VALUE", _) => AggKind::FirstValue,
                (
                    "VAR_POP" | "VAR_SAMP" | "VARIANCE" | "STDDEV_POP" | "STDDEV_SAMP" | "STDDEV",
                    _,
                ) => AggKind::Spread(crate::aggregate::Spread {
                    sample: !name.ends_with("_POP"),
                    root: name.starts_with("STDDEV"),
                }),
                ("LAST_VALUE", _) => AggKind::LastValue,
                _ => AggKind::Avg,
            };
            (kind, Some(x.clone()))
        }
        _ => {
            return Err(SqlError::validation(
                format!("{name} takes one argument"),
                at,
            ))
        }
    };
    let filter = match &f.filter {
        Some(condition) if contains_aggregate(condition) => {
            return Err(SqlError::validation(
                "aggregates cannot be nested (in FILTER)",
                at,
            ))
        }
        other => other.as_deref().cloned(),
    };
    Ok(AggSpec {
        kind,
        arg,
        separator,
        filter,
    })
}

/// The window columns a window aggregation's output has.
pub(crate) const WINDOW_COLUMNS: &[&str] = &["window_start", "window_end", "window_time"];

/// What a grouped query computes: its keys and the aggregates' arguments
/// (both over the input row), the aggregate calls, and the SELECT list and
/// HAVING rewritten over the aggregation's output (`$group0`, …, then the
/// `passthrough` columns, then `$agg0`, …).
pub(crate) struct Aggregation {
    pub key_evals: Vec<crate::expr::Compiled>,
    pub arg_evals: Vec<crate::expr::Compiled>,
    pub calls: Vec<AggCall>,
    pub items: Vec<SelectItem>,
    pub having: Option<Expr>,
}

impl Aggregation {
    /// The aggregation's output columns: `$group0`, …, then `between`,
    /// then `$agg0`, … (what `items` and `having` are written over).
    pub fn output_scope(&self, between: &[(&str, SqlType)]) -> Scope {
        let mut scope = Scope::default();
        for (i, k) in self.key_evals.iter().enumerate() {
            scope.columns.push((format!("$group{i}"), k.ty));
        }
        for (name, ty) in between {
            scope.columns.push((name.to_string(), *ty));
        }
        for (i, c) in self.calls.iter().enumerate() {
            scope.columns.push((format!("$agg{i}"), c.result_type()));
        }
        scope
    }
}

/// Prepares the aggregation of `select` grouped by `keys` over `input`.
pub(crate) fn aggregation(
    input: &Scope,
    keys: &[Expr],
    select: &Select,
    passthrough: &[&str],
) -> Result<Aggregation, SqlError> {
    let key_evals: Vec<crate::expr::Compiled> = keys
        .iter()
        .map(|k| compile(k, input))
        .collect::<Result<_, _>>()?;
    // Rewrite the SELECT list and HAVING over the aggregation's output.
    let mut rewriter = Rewriter {
        groups: keys,
        passthrough,
        aggs: Vec::new(),
    };
    let mut items = Vec::new();
    for item in &select.projection {
        items.push(match item {
            SelectItem::UnnamedExpr(e) => {
                let name = crate::plan::column_name(e, items.len());
                SelectItem::ExprWithAlias {
                    expr: rewriter.rewrite(e)?,
                    alias: Ident::new(name),
                }
            }
            SelectItem::ExprWithAlias { expr, alias } => SelectItem::ExprWithAlias {
                expr: rewriter.rewrite(expr)?,
                alias: alias.clone(),
            },
            other => {
                return Err(SqlError::unsupported(
                    format!("{other} in a window aggregation"),
                    pos(other),
                ))
            }
        });
    }
    let having = select
        .having
        .as_ref()
        .map(|h| rewriter.rewrite(h))
        .transpose()?;
    // The aggregates' arguments and filters, computed before the window:
    // each distinct expression once, however many calls read it (q15's
    // twelve calls read two columns and three price ranges).
    let mut arg_evals: Vec<crate::expr::Compiled> = Vec::new();
    let mut computed: Vec<String> = Vec::new();
    let mut column_of = |x: &Expr| -> Result<(usize, SqlType), SqlError> {
        let text = x.to_string();
        if let Some(i) = computed.iter().position(|t| *t == text) {
            return Ok((keys.len() + i, arg_evals[i].ty));
        }
        let c = compile(x, input)?;
        let ty = c.ty;
        computed.push(text);
        arg_evals.push(c);
        Ok((keys.len() + arg_evals.len() - 1, ty))
    };
    let mut calls = Vec::new();
    for AggSpec {
        kind,
        arg,
        separator,
        filter,
    } in rewriter.aggs
    {
        let (arg, arg_type) = match &arg {
            Some(x) => {
                let (column, ty) = column_of(x)?;
                if matches!(kind, AggKind::Sum | AggKind::Avg | AggKind::Spread(_))
                    && !ty.is_numeric()
                {
                    return Err(SqlError::validation(
                        format!("SUM, AVG, VAR_* and STDDEV_* need numbers, not {ty} ({x})"),
                        pos(x),
                    ));
                }
                (column, ty)
            }
            // COUNT(*): no argument (its column is never read).
            None => (usize::MAX, SqlType::BigInt),
        };
        let filter = match &filter {
            None => None,
            Some(condition) => {
                let (column, ty) = column_of(condition)?;
                if ty != SqlType::Boolean {
                    return Err(SqlError::validation(
                        format!("FILTER needs a BOOLEAN condition, not {ty} ({condition})"),
                        pos(condition),
                    ));
                }
                Some(column)
            }
        };
        calls.push(AggCall {
            kind,
            arg,
            arg_type,
            separator,
            filter,
        });
    }
    Ok(Aggregation {
        key_evals,
        arg_evals,
        calls,
        items,
        having,
    })
}

/// The `WHERE` of `select` compiled over `scope`.
pub(crate) fn where_filter(select: &Select, scope: &Scope) -> Result<Option<Condition>, SqlError> {
    match &select.selection {
        Some(e) => {
            let c = compile(e, scope)?;
            if c.ty != SqlType::Boolean {
                return Err(SqlError::validation(
                    format!("WHERE {e} is {}, not BOOLEAN", c.ty),
                    pos(e),
                ));
            }
            Ok(Some(Condition::of(&c)))
        }
        None => Ok(None),
    }
}

/// The rows an aggregation is fed, and where in them its keys and its
/// calls' arguments are.
pub(crate) struct PreAggregated {
    pub stream: DataStream<Row>,
    /// The key columns, in key order.
    pub keys: Arc<[usize]>,
    /// The calls, with their arguments' columns in these rows.
    pub calls: Vec<AggCall>,
}

impl PreAggregated {
    /// The key of a row.
    pub fn key_of(&self) -> impl Fn(&Row) -> RowKey + Send + Sync + 'static {
        let keys = Arc::clone(&self.keys);
        move |r: &Row| RowKey::at(&r.values, &keys)
    }
}

/// The rows of `stream` that `filter` keeps, ready to aggregate: the
/// input rows as they are when every key and argument is a column of
/// them (`COUNT(*)` reads none), else `[keys…, aggregate arguments…]`
/// computed per row.
pub(crate) fn pre_aggregate(
    stream: DataStream<Row>,
    filter: Option<Condition>,
    aggregation: &Aggregation,
    input_width: usize,
) -> PreAggregated {
    let (calc, keys, calls) = pre_aggregate_calc(filter, aggregation, input_width);
    PreAggregated {
        stream: match calc {
            Some(calc) => crate::plan::calc_stream(&stream, calc),
            None => stream,
        },
        keys,
        calls,
    }
}

/// What [`pre_aggregate`] does to each row, as a step to run where the
/// rows are made (`None` when it keeps them as they are), with the key
/// columns and the calls over the rows it makes.
pub(crate) fn pre_aggregate_calc(
    filter: Option<Condition>,
    aggregation: &Aggregation,
    input_width: usize,
) -> (Option<crate::plan::Calc>, Arc<[usize]>, Vec<AggCall>) {
    let column = |c: &crate::expr::Compiled| match c.shape {
        crate::expr::Shape::Column(i) => Some(i),
        _ => None,
    };
    let keys: Option<Vec<usize>> = aggregation.key_evals.iter().map(column).collect();
    // Each computed argument's column of the input, when it is one.
    let args: Option<Vec<usize>> = aggregation.arg_evals.iter().map(column).collect();
    if let (Some(keys), Some(args)) = (keys, args) {
        // Nothing to compute: a row rewritten into its keys and arguments
        // was a copy of values the aggregation reads where they are.
        let nkeys = keys.len();
        let at = |i: usize| args[i - nkeys];
        let calls = aggregation
            .calls
            .iter()
            .map(|call| AggCall {
                // `COUNT(*)` reads no argument.
                arg: match call.kind {
                    AggKind::CountStar => call.arg,
                    _ => at(call.arg),
                },
                filter: call.filter.map(at),
                ..call.clone()
            })
            .collect();
        return (crate::plan::calc_of(filter, None), keys.into(), calls);
    }
    let columns = aggregation
        .key_evals
        .iter()
        .chain(&aggregation.arg_evals)
        .cloned()
        .collect();
    (
        crate::plan::calc_of(filter, Some(crate::plan::Output::of(columns, input_width))),
        (0..aggregation.key_evals.len()).collect(),
        aggregation.calls.clone(),
    )
}

/// `SELECT …, agg(…) FROM TABLE(window TVF) GROUP BY window_start,
/// window_end, keys…`: one result row per window and group, when the
/// watermark passes the window's end; late rows are dropped (counted in
/// the operator's `numLateRecordsDropped`), as Flink's window aggregation
/// does.
pub(crate) fn plan_window_aggregate(
    input: Planned,
    tvf: &WindowTvf,
    select: &Select,
) -> Result<Planned, SqlError> {
    let at = pos(select);
    let (_, time_type) = time_attribute(&input, tvf)?;
    let GroupByExpr::Expressions(group_by, _) = &select.group_by else {
        return Err(SqlError::unsupported("GROUP BY ALL", at));
    };
    if !group_by.iter().any(|e| is_window(e, "window_start"))
        || !group_by.iter().any(|e| is_window(e, "window_end"))
    {
        return Err(SqlError::validation(
            "a window aggregation must GROUP BY window_start and window_end",
            at,
        ));
    }
    let keys = group_keys(group_by);
    if let WindowKind::Session { .. } = tvf.kind {
        // Weir's session windows are kept per key: the sessions' partition
        // must be the groups.
        let mut grouped: Vec<String> = keys
            .iter()
            .map(|k| match k {
                Expr::Identifier(id) => id.value.to_lowercase(),
                other => other.to_string().to_lowercase(),
            })
            .collect();
        let mut partition: Vec<String> = tvf.partition.iter().map(|p| p.to_lowercase()).collect();
        grouped.sort();
        partition.sort();
        if grouped != partition {
            return Err(SqlError::unsupported(
                format!(
                    "SESSION windows whose PARTITION BY ({}) differs from the GROUP BY keys ({})",
                    tvf.partition.join(", "),
                    keys.iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                at,
            ));
        }
    }
    // WHERE runs before the windows, on the input's columns.
    let filter = where_filter(select, &input.scope)?;
    let aggregation = aggregation(&input.scope, &keys, select, WINDOW_COLUMNS)?;
    let Aggregation {
        calls,
        items,
        having,
        ..
    } = &aggregation;
    // FIRST_VALUE and LAST_VALUE keep no order to merge slices or
    // sessions by: Flink refuses them in windows other than TUMBLE.
    let window_name = match tvf.kind {
        WindowKind::Tumble { .. } => None,
        WindowKind::Hop { .. } => Some("HOP"),
        WindowKind::Cumulate { .. } => Some("CUMULATE"),
        WindowKind::Session { .. } => Some("SESSION"),
    };
    let ordered = calls.iter().find_map(|c| match c.kind {
        AggKind::FirstValue => Some("FIRST_VALUE"),
        AggKind::LastValue => Some("LAST_VALUE"),
        _ => None,
    });
    if let (Some(window), Some(name)) = (window_name, ordered) {
        return Err(SqlError::unsupported(
            format!("{name} in a {window} window (it cannot merge windows' parts; as in Flink)"),
            at,
        ));
    }
    let nkeys = keys.len();
    let pre = pre_aggregate(
        input.stream,
        filter,
        &aggregation,
        input.scope.columns.len(),
    );
    let keyed = pre.stream.key_by(pre.key_of());
    let aggregates = SqlAggregates::new(pre.calls, false);
    // The aggregation's output columns, then the SELECT list over them.
    let scope = window_scope(&aggregation, time_type);
    let window_time = nkeys + 2;
    let having = having.as_ref().map(|h| compile(h, &scope)).transpose()?;
    let p = projection(items, &scope)?;
    // A SELECT list of the output's columns alone, without HAVING, is
    // written by the window's results themselves: each result row made
    // whole, then rewritten into the columns chosen, was written twice.
    // Otherwise, and when other SELECTs read the aggregation too, a result
    // row is every output column.
    let shared = crate::reuse::shared_text(select);
    let selected: Option<Vec<usize>> = match (&having, &p.output, &shared) {
        (None, Some(_), None) => p.sources.iter().copied().collect(),
        _ => None,
    };
    let output = if selected.is_some() {
        None
    } else {
        p.output.clone()
    };
    let picks: Arc<[usize]> = selected
        .unwrap_or_else(|| (0..scope.columns.len()).collect())
        .into();
    let emit = move |key: &RowKey,
                     ctx: &mut ProcessWindowContext<'_, TimeWindow>,
                     results: Elements<'_, Results>,
                     out: &mut Collector<'_, Row>|
          -> FunctionResult {
        let w = *ctx.window();
        let at = key.len();
        for aggs in results {
            // A reused buffer, each column written straight into its slot:
            // pushed whole, the window's times were built on the stack a
            // piece at a time and read back in wider pieces, which stalled
            // every row.
            let mut values = Row::buffer(picks.len());
            for &c in picks.iter() {
                use crate::value::{push_clone, push_made};
                match c.checked_sub(at) {
                    None => push_clone(&mut values, &key[c]),
                    Some(0) => push_made(&mut values, || Value::Timestamp(w.start)),
                    Some(1) => push_made(&mut values, || Value::Timestamp(w.end)),
                    Some(2) => push_made(&mut values, || time_value(time_type, w.end - 1)),
                    Some(agg) => push_clone(&mut values, &aggs[agg - 3]),
                }
            }
            out.collect(Row::insert(values));
        }
        Ok(())
    };
    let ms = |ms: i64| Duration::from_millis(ms as u64);
    // Processing-time windows when the time attribute is PROCTIME().
    let stream = match (tvf.kind, input.proctime) {
        (WindowKind::Tumble { size, offset }, false) => windowed(
            &keyed,
            TumblingEventTimeWindows::of_with_offset_ms(ms(size), offset),
            aggregates,
            emit,
        ),
        (WindowKind::Tumble { size, offset }, true) => windowed(
            &keyed,
            TumblingProcessingTimeWindows::of_with_offset_ms(ms(size), offset),
            aggregates,
            emit,
        ),
        (
            WindowKind::Hop {
                slide,
                size,
                offset,
            },
            false,
        ) => windowed(
            &keyed,
            SlidingEventTimeWindows::of_with_offset(
                ms(size),
                ms(slide),
                ms(offset.rem_euclid(slide)),
            ),
            aggregates,
            emit,
        ),
        (
            WindowKind::Hop {
                slide,
                size,
                offset,
            },
            true,
        ) => windowed(
            &keyed,
            SlidingProcessingTimeWindows::of_with_offset(
                ms(size),
                ms(slide),
                ms(offset.rem_euclid(slide)),
            ),
            aggregates,
            emit,
        ),
        (WindowKind::Cumulate { step, size, offset }, false) => windowed(
            &keyed,
            CumulativeEventTimeWindows::of_with_offset(
                ms(size),
                ms(step),
                ms(offset.rem_euclid(size)),
            ),
            aggregates,
            emit,
        ),
        (WindowKind::Cumulate { step, size, offset }, true) => windowed(
            &keyed,
            CumulativeProcessingTimeWindows::of_with_offset(
                ms(size),
                ms(step),
                ms(offset.rem_euclid(size)),
            ),
            aggregates,
            emit,
        ),
        (WindowKind::Session { gap }, false) => windowed(
            &keyed,
            EventTimeSessionWindows::with_gap(ms(gap)),
            aggregates,
            emit,
        ),
        (WindowKind::Session { gap }, true) => windowed(
            &keyed,
            ProcessingTimeSessionWindows::with_gap(ms(gap)),
            aggregates,
            emit,
        ),
    };
    let stream = crate::plan::stateful(
        stream,
        &format!(
            "WindowAggregate[{}{}; {}; {}]",
            tvf.describe(),
            if input.proctime { " proctime" } else { "" },
            keys.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            crate::aggregate::describe(calls)
        ),
    );
    let mut steps = input.steps;
    steps.push(format!(
        "WindowAggregate: {}{}, group by [{}], {} aggregate(s)",
        tvf.describe(),
        if input.proctime {
            " on processing time"
        } else {
            ""
        },
        keys.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        calls.len()
    ));
    if let Some(text) = shared {
        crate::reuse::keep(
            &text,
            crate::reuse::SharedWindows {
                input: input.scope.clone(),
                proctime: input.proctime,
                time_type,
                calls: crate::aggregate::describe(calls),
                stream: stream.clone(),
                steps: steps.clone(),
            },
        );
    }
    Ok(window_output(
        stream,
        p,
        having.map(|h| Condition::of(&h)),
        output,
        [nkeys, window_time],
        input.proctime,
        steps,
    ))
}

/// Whether `e` is the window column `name`.
fn is_window(e: &Expr, name: &str) -> bool {
    matches!(e, Expr::Identifier(id) if id.value.eq_ignore_ascii_case(name))
}

/// A window aggregation's `GROUP BY` keys besides its window columns.
pub(crate) fn group_keys(group_by: &[Expr]) -> Vec<Expr> {
    group_by
        .iter()
        .filter(|e| !WINDOW_COLUMNS.iter().any(|w| is_window(e, w)))
        .cloned()
        .collect()
}

/// The columns of a window aggregation's rows: its keys, the window's
/// start, end and time (of type `time_type`), its aggregates.
pub(crate) fn window_scope(aggregation: &Aggregation, time_type: SqlType) -> Scope {
    aggregation.output_scope(&[
        ("window_start", SqlType::Timestamp),
        ("window_end", SqlType::Timestamp),
        ("window_time", time_type),
    ])
}

/// A window aggregation's rows (`stream`, its columns `p` projects from)
/// after `HAVING` and the `SELECT` list (`output`; `None` when the rows
/// are the list already), given the rows' `window_start` and
/// `window_time` columns.
fn window_output(
    stream: DataStream<Row>,
    p: crate::plan::Projection,
    having: Option<Condition>,
    output: Option<crate::plan::Output>,
    [window_start, window_time]: [usize; 2],
    proctime: bool,
    mut steps: Vec<String>,
) -> Planned {
    // An event-time window's rows come once the watermark passes its end,
    // late rows are dropped: every row to come ends above the watermark,
    // its `window_time` (the end's last millisecond) too.
    let above_watermark = if proctime {
        None
    } else {
        p.carried(window_start + 1)
            .or_else(|| p.carried(window_time))
    };
    // The windows' columns by the windows' own time (a SELECT without
    // `window_time` keeps no time attribute, not event time).
    let window = p.window((!proctime).then_some([window_start, window_start + 1]));
    let (rowtime, proctime) = p.time(Some(window_time), proctime);
    let out_scope = p.scope;
    let stream = filter_project(stream, having, output);
    steps.push(calc_step(&out_scope));
    Planned {
        stream,
        scope: out_scope,
        rowtime,
        proctime,
        window,
        above_watermark,
        versions: None,
        updating: false,
        update_before: None,
        steps,
    }
}

/// `select`'s window aggregation, read from the rows of the same one
/// planned before in the statement, if there is one with the same
/// aggregate calls.
pub(crate) fn reuse_window_aggregate(select: &Select) -> Result<Option<Planned>, SqlError> {
    let Some(shared) = crate::reuse::shared_text(select).and_then(|t| crate::reuse::planned(&t))
    else {
        return Ok(None);
    };
    let GroupByExpr::Expressions(group_by, _) = &select.group_by else {
        return Ok(None);
    };
    let keys = group_keys(group_by);
    // The shared one's input holds only the columns its aggregates read:
    // other aggregates (which it does not share) may not compile over it.
    let Ok(aggregation) = aggregation(&shared.input, &keys, select, WINDOW_COLUMNS) else {
        return Ok(None);
    };
    if crate::aggregate::describe(&aggregation.calls) != shared.calls {
        return Ok(None);
    }
    let scope = window_scope(&aggregation, shared.time_type);
    let having = aggregation
        .having
        .as_ref()
        .map(|h| compile(h, &scope))
        .transpose()?;
    let p = projection(&aggregation.items, &scope)?;
    let output = p.output.clone();
    let mut steps = shared.steps;
    if let Some(last) = steps.last_mut() {
        last.push_str(" (reused)");
    }
    let nkeys = keys.len();
    Ok(Some(window_output(
        shared.stream,
        p,
        having.map(|h| Condition::of(&h)),
        output,
        [nkeys, nkeys + 2],
        shared.proctime,
        steps,
    )))
}

pub(crate) fn windowed<A, P>(
    keyed: &KeyedStream<Row, RowKey>,
    assigner: A,
    aggregates: SqlAggregates,
    emit: P,
) -> DataStream<Row>
where
    A: WindowAssigner<Row, W = TimeWindow>,
    P: ProcessWindowFunction<Results, Row, RowKey, TimeWindow> + Clone + Sync,
{
    keyed.window(assigner).aggregate_with(aggregates, emit)
}
