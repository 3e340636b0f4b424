//! Regular joins: `a [INNER] JOIN b ON a.x = b.y [AND …]`. Both sides'
//! rows are kept in keyed state (list state per join key and side,
//! expiring after `table.exec.state.ttl`); each arriving row is joined with
//! the other side's rows of its key; the joined rows have the arriving
//! row's kind, and a retracted (`-U`/`-D`) row leaves its side's state, as
//! in Flink's inner join.

use std::time::Duration;

use sqlparser::ast::{
    BinaryOperator, Expr, Join, JoinConstraint, JoinOperator, Spanned, TableFactor,
};
use weir::prelude::*;

use crate::error::{position, SqlError};
use crate::expr::{compile, Eval, Scope};
use crate::plan::Planned;
use crate::value::{Row, Value};

/// The name a relation's columns are qualified with: its alias, else its
/// table name.
pub(crate) fn qualifier(relation: &TableFactor) -> String {
    match relation {
        TableFactor::Table { name, alias, .. } => alias
            .as_ref()
            .map(|a| a.name.value.clone())
            .unwrap_or_else(|| name.to_string()),
        TableFactor::Derived { alias, .. } => alias
            .as_ref()
            .map(|a| a.name.value.clone())
            .unwrap_or_default(),
        _ => String::new(),
    }
}

/// The conjuncts of an `AND` tree.
fn conjuncts(e: &Expr) -> Vec<&Expr> {
    match e {
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            let mut out = conjuncts(left);
            out.extend(conjuncts(right));
            out
        }
        Expr::Nested(inner) => conjuncts(inner),
        other => vec![other],
    }
}

/// The keyed function holding both sides' rows.
#[derive(Clone)]
struct JoinFunction {
    keys: usize,
    residual: Option<Eval>,
    ttl: Option<Duration>,
    left: Option<ListState<Vec<Value>>>,
    right: Option<ListState<Vec<Value>>>,
}

impl KeyedProcessFunction<Vec<Value>, Row, Row> for JoinFunction {
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        let descriptor = |name: &str| {
            let d = ListStateDescriptor::new(name);
            match self.ttl {
                Some(ttl) => d.enable_time_to_live(StateTtlConfig::new_builder(ttl).build()),
                None => d,
            }
        };
        self.left = Some(ctx.get_list_state(&descriptor("left"))?);
        self.right = Some(ctx.get_list_state(&descriptor("right"))?);
        Ok(())
    }

    fn process_element(
        &mut self,
        row: Row,
        _ctx: &mut ProcessContext<'_, Vec<Value>>,
        out: &mut Collector<'_, Row>,
    ) -> FunctionResult {
        let (kind, retraction) = (row.kind, row.kind.is_retraction());
        // [side, keys…, values…]
        let from_right = matches!(row.values[0], Value::Boolean(true));
        let values: Vec<Value> = row.values[1 + self.keys..].to_vec();
        let (mine, other) = match (&self.left, &self.right) {
            (Some(l), Some(r)) if from_right => (r, l),
            (Some(l), Some(r)) => (l, r),
            _ => return Err("the join is not open".into()),
        };
        for seen in other.get()? {
            let joined: Vec<Value> = if from_right {
                seen.iter().chain(&values).cloned().collect()
            } else {
                values.iter().chain(&seen).cloned().collect()
            };
            if let Some(f) = &self.residual {
                if !matches!(f(&joined)?, Value::Boolean(true)) {
                    continue;
                }
            }
            out.collect(Row {
                kind,
                values: joined.into(),
            });
        }
        if retraction {
            let mut rows = mine.get()?;
            if let Some(i) = rows.iter().position(|r| *r == values) {
                rows.swap_remove(i);
                mine.update(rows)?;
            }
        } else {
            mine.add(values)?;
        }
        Ok(())
    }
}

/// `left JOIN right ON …`.
pub(crate) fn plan_join(
    left: Planned,
    left_name: String,
    right: Planned,
    join: &Join,
    ttl: Option<Duration>,
) -> Result<Planned, SqlError> {
    let at = position(join.span());
    let on = match &join.join_operator {
        JoinOperator::Join(JoinConstraint::On(on))
        | JoinOperator::Inner(JoinConstraint::On(on)) => on,
        JoinOperator::Join(_) | JoinOperator::Inner(_) => {
            return Err(SqlError::unsupported(
                "JOIN without ON (USING, NATURAL)",
                at,
            ))
        }
        other => {
            let kind = match other {
                JoinOperator::Left(_) => "LEFT",
                JoinOperator::LeftOuter(_) => "LEFT OUTER",
                JoinOperator::Right(_) => "RIGHT",
                JoinOperator::RightOuter(_) => "RIGHT OUTER",
                JoinOperator::FullOuter(_) => "FULL OUTER",
                JoinOperator::CrossJoin(_) => "CROSS",
                _ => "this kind of",
            };
            return Err(SqlError::unsupported(
                format!("{kind} JOIN (only inner joins)"),
                at,
            ));
        }
    };
    let right_name = qualifier(&join.relation);
    let side_scope = |p: &Planned, q: &str| Scope {
        columns: p.scope.columns.clone(),
        qualifiers: vec![q.to_string(); p.scope.columns.len()],
        used: None,
    };
    let left_scope = side_scope(&left, &left_name);
    let right_scope = side_scope(&right, &right_name);
    let mut joined = left_scope.clone();
    joined.columns.extend(right_scope.columns.clone());
    joined.qualifiers.extend(right_scope.qualifiers.clone());
    // Equalities between the sides are the join key; the rest is checked
    // on each joined row.
    let (mut left_keys, mut right_keys, mut residual) = (Vec::new(), Vec::new(), Vec::new());
    for c in conjuncts(on) {
        // Names must resolve in the joined scope (ambiguity is an error).
        compile(c, &joined)?;
        if let Expr::BinaryOp {
            left: a,
            op: BinaryOperator::Eq,
            right: b,
        } = c
        {
            let sides = [(a, b), (b, a)];
            if let Some((l, r)) = sides.into_iter().find_map(|(x, y)| {
                let l = compile(x, &left_scope).ok()?;
                let r = compile(y, &right_scope).ok()?;
                let comparable = l.ty == r.ty || l.ty.is_numeric() && r.ty.is_numeric();
                comparable.then_some((l, r))
            }) {
                left_keys.push(l);
                right_keys.push(r);
                continue;
            }
        }
        residual.push(c.clone());
    }
    if left_keys.is_empty() {
        return Err(SqlError::unsupported(
            "a join without an equality between the two sides' columns",
            at,
        ));
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
        .map(|c| c.eval);
    let keys = left_keys.len();
    // Keys of different numeric types compare by value: both as DOUBLE
    // when they differ, else as they are.
    let normalise = |c: crate::expr::Compiled, other: crate::types::SqlType| -> Eval {
        if c.ty == other {
            c.eval
        } else {
            let f = c.eval;
            std::sync::Arc::new(move |r: &[Value]| {
                Ok(f(r)?.as_f64().map_or(Value::Null, Value::Double))
            })
        }
    };
    let (lt, rt): (Vec<_>, Vec<_>) = left_keys
        .iter()
        .zip(&right_keys)
        .map(|(l, r)| (l.ty, r.ty))
        .unzip();
    let left_fns: Vec<Eval> = left_keys
        .into_iter()
        .zip(&rt)
        .map(|(c, t)| normalise(c, *t))
        .collect();
    let right_fns: Vec<Eval> = right_keys
        .into_iter()
        .zip(&lt)
        .map(|(c, t)| normalise(c, *t))
        .collect();
    let tag = |stream: DataStream<Row>, side: bool, fns: Vec<Eval>| {
        stream.process(
            move |row: Row, _ctx: &mut ProcessContext<'_>, out: &mut Collector<'_, Row>| {
                let mut values = Vec::with_capacity(1 + fns.len() + row.values.len());
                values.push(Value::Boolean(side));
                for f in &fns {
                    values.push(f(&row.values)?);
                }
                // SQL: a NULL key joins nothing.
                if values[1..].iter().any(Value::is_null) {
                    return Ok(());
                }
                values.extend(row.values.iter().cloned());
                out.collect(Row {
                    kind: row.kind,
                    values: values.into(),
                });
                Ok(())
            },
        )
    };
    let tagged = tag(left.stream, false, left_fns).union(&[tag(right.stream, true, right_fns)]);
    let stream = tagged
        .key_by(move |r: &Row| r.values[1..=keys].to_vec())
        .process(JoinFunction {
            keys,
            residual,
            ttl,
            left: None,
            right: None,
        });
    let mut steps = left.steps;
    steps.extend(right.steps);
    steps.push(format!("Join: inner, on {on}"));
    Ok(Planned {
        stream,
        scope: joined,
        // A regular join's output has no time attribute (as in Flink).
        rowtime: None,
        proctime: false,
        updating: left.updating || right.updating,
        steps,
    })
}
