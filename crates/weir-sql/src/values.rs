//! Constant rows: `VALUES (…), (…)` and a `SELECT` without `FROM` (Flink's
//! `Values`): a bounded relation whose rows are known when the job is
//! planned.

use sqlparser::ast::{Expr, Spanned};
use weir::prelude::*;

use crate::error::{position, Position, SqlError};
use crate::expr::{cast, compile, least_restrictive, Scope};
use crate::plan::Planned;
use crate::types::SqlType;
use crate::value::{Row, Value};

/// The rows of `VALUES rows`, columns named `EXPR$0`, `EXPR$1`, … as
/// Flink names them; each column's type is the one its values all cast to.
pub(crate) fn plan_values(
    env: &StreamExecutionEnvironment,
    rows: &[&[Expr]],
    at: Position,
) -> Result<Planned, SqlError> {
    let width = rows.first().map_or(0, |r| r.len());
    let mut evaluated: Vec<Vec<(Value, SqlType)>> = Vec::with_capacity(rows.len());
    for row in rows.iter().copied() {
        if row.len() != width {
            return Err(SqlError::validation(
                format!(
                    "VALUES rows of {} and {} values: every row has the same number",
                    width,
                    row.len()
                ),
                row.first().map_or(at, |e| position(e.span())),
            ));
        }
        let mut values = Vec::with_capacity(width);
        for e in row {
            let here = position(e.span());
            let compiled = compile(e, &Scope::default())?;
            let value = (compiled.eval)(&[]).map_err(|m| SqlError::validation(m, here))?;
            values.push((value, compiled.ty));
        }
        evaluated.push(values);
    }
    let mut types: Vec<Option<SqlType>> = vec![None; width];
    for row in &evaluated {
        for (ty, (_, t)) in types.iter_mut().zip(row) {
            *ty = Some(match ty {
                None => *t,
                Some(ty) => least_restrictive(*ty, *t).ok_or_else(|| {
                    SqlError::validation(format!("VALUES of types {ty} and {t} in one column"), at)
                })?,
            });
        }
    }
    let types: Vec<SqlType> = types
        .into_iter()
        .map(|t| t.unwrap_or(SqlType::Null))
        .collect();
    let mut made = Vec::with_capacity(evaluated.len());
    for row in evaluated {
        let mut values = Vec::with_capacity(width);
        for ((value, from), to) in row.into_iter().zip(&types) {
            values.push(cast(value, from, *to).map_err(|m| SqlError::validation(m, at))?);
        }
        made.push(Row::insert(values));
    }
    let columns = types
        .iter()
        .enumerate()
        .map(|(i, t)| (format!("EXPR${i}"), *t))
        .collect();
    let steps = vec![format!(
        "Values: {} row{}",
        made.len(),
        if made.len() == 1 { "" } else { "s" }
    )];
    Ok(Planned {
        stream: env.from_collection(made).name("Values"),
        scope: Scope::of(columns),
        rowtime: None,
        proctime: false,
        window: None,
        above_watermark: None,
        updating: false,
        versions: None,
        update_before: None,
        steps,
    })
}

/// The one row of no columns a `SELECT` without `FROM` computes its list
/// over.
pub(crate) fn one_row(env: &StreamExecutionEnvironment, at: Position) -> Result<Planned, SqlError> {
    plan_values(env, &[&[]], at)
}
