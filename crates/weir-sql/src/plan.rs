//! Queries planned into Weir operators: a table or view scan, then `WHERE`
//! and the `SELECT` list in one operator (Flink's `Calc`).

use sqlparser::ast::{Expr, GroupByExpr, Query, Select, SelectItem, SetExpr, Spanned, TableFactor};
use weir::prelude::*;

use crate::catalog::{Catalog, Relation};
use crate::connector;
use crate::error::{position, Position, SqlError};
use crate::expr::{compile, Eval, Scope};
use crate::value::{Row, Value};

/// A planned query: its rows and their columns, with what it does, step by
/// step (for `EXPLAIN`).
pub(crate) struct Planned {
    pub stream: DataStream<Row>,
    pub scope: Scope,
    pub steps: Vec<String>,
}

fn pos(e: &impl Spanned) -> Position {
    position(e.span())
}

/// Plans `query` in `env`.
pub(crate) fn plan_query(
    env: &StreamExecutionEnvironment,
    catalog: &Catalog,
    query: &Query,
) -> Result<Planned, SqlError> {
    let at = pos(query);
    if query.with.is_some() {
        return Err(SqlError::unsupported("WITH (common table expressions)", at));
    }
    if query.order_by.is_some() {
        return Err(SqlError::unsupported(
            "ORDER BY on a stream (only in window Top-N)",
            at,
        ));
    }
    if query.limit_clause.is_some() || query.fetch.is_some() {
        return Err(SqlError::unsupported("LIMIT", at));
    }
    match query.body.as_ref() {
        SetExpr::Select(select) => plan_select(env, catalog, select),
        SetExpr::Query(inner) => plan_query(env, catalog, inner),
        other => Err(SqlError::unsupported(
            other
                .to_string()
                .split_whitespace()
                .next()
                .unwrap_or("this query")
                .to_string(),
            at,
        )),
    }
}

fn plan_select(
    env: &StreamExecutionEnvironment,
    catalog: &Catalog,
    select: &Select,
) -> Result<Planned, SqlError> {
    let at = pos(select);
    if select.distinct.is_some() {
        return Err(SqlError::unsupported("SELECT DISTINCT", at));
    }
    match &select.group_by {
        GroupByExpr::Expressions(exprs, _) if exprs.is_empty() => {}
        _ => return Err(SqlError::unsupported("GROUP BY", at)),
    }
    if select.having.is_some() {
        return Err(SqlError::unsupported("HAVING", at));
    }
    let input = match select.from.as_slice() {
        [] => return Err(SqlError::unsupported("SELECT without FROM", at)),
        [from] => {
            if !from.joins.is_empty() {
                return Err(SqlError::unsupported("JOIN", pos(&from.joins[0])));
            }
            plan_relation(env, catalog, &from.relation)?
        }
        [_, second, ..] => {
            return Err(SqlError::unsupported(
                "FROM with several tables (joins)",
                pos(second),
            ))
        }
    };
    let mut steps = input.steps;
    let filter: Option<Eval> = match &select.selection {
        Some(e) => {
            let c = compile(e, &input.scope)?;
            if c.ty != crate::types::SqlType::Boolean {
                return Err(SqlError::validation(
                    format!("WHERE {e} is {}, not BOOLEAN", c.ty),
                    pos(e),
                ));
            }
            steps.push(format!("Calc: where {e}"));
            Some(c.eval)
        }
        None => None,
    };
    let (projections, scope) = projection(&select.projection, &input.scope)?;
    let names: Vec<&str> = scope.columns.iter().map(|(n, _)| n.as_str()).collect();
    steps.push(format!("Calc: select {}", names.join(", ")));
    let identity = projections.is_none();
    let stream = if filter.is_none() && identity {
        input.stream
    } else {
        input.stream.process(
            move |row: Row, _ctx: &mut ProcessContext<'_>, out: &mut Collector<'_, Row>| {
                if let Some(f) = &filter {
                    if !matches!(f(&row.values)?, Value::Boolean(true)) {
                        return Ok(());
                    }
                }
                match &projections {
                    None => out.collect(row),
                    Some(ps) => {
                        let values = ps
                            .iter()
                            .map(|p| p(&row.values))
                            .collect::<Result<Vec<_>, _>>()?;
                        out.collect(Row {
                            kind: row.kind,
                            values: values.into(),
                        });
                    }
                }
                Ok(())
            },
        )
    };
    Ok(Planned {
        stream,
        scope,
        steps,
    })
}

/// The `SELECT` list compiled (`None`: the input's columns as they are) and
/// the output columns.
fn projection(items: &[SelectItem], input: &Scope) -> Result<(Option<Vec<Eval>>, Scope), SqlError> {
    let mut evals = Vec::new();
    let mut scope = Scope::default();
    let mut identity = true;
    for item in items {
        match item {
            SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..) => {
                for (i, (name, ty)) in input.columns.iter().enumerate() {
                    identity &= scope.columns.len() == i;
                    let e: Eval = std::sync::Arc::new(move |r: &[Value]| Ok(r[i].clone()));
                    evals.push(e);
                    scope.columns.push((name.clone(), *ty));
                }
            }
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
                let c = compile(e, input)?;
                let name = match item {
                    SelectItem::ExprWithAlias { alias, .. } => alias.value.clone(),
                    _ => match e {
                        Expr::Identifier(id) => id.value.clone(),
                        Expr::CompoundIdentifier(parts) => {
                            parts.last().map(|p| p.value.clone()).unwrap_or_default()
                        }
                        // Flink's name for an unnamed expression.
                        _ => format!("EXPR${}", scope.columns.len()),
                    },
                };
                identity = false;
                evals.push(c.eval);
                scope.columns.push((name, c.ty));
            }
            other => return Err(SqlError::unsupported(format!("{other}"), pos(other))),
        }
    }
    let identity = identity && scope.columns.len() == input.columns.len();
    Ok((if identity { None } else { Some(evals) }, scope))
}

fn plan_relation(
    env: &StreamExecutionEnvironment,
    catalog: &Catalog,
    relation: &TableFactor,
) -> Result<Planned, SqlError> {
    let at = pos(relation);
    match relation {
        TableFactor::Table {
            name, args: None, ..
        } => {
            let table_name = name.to_string();
            match catalog.get(&table_name) {
                Some(Relation::Table(table)) => {
                    let (stream, scope, rowtime) = connector::source(env, table)?;
                    let mut steps = vec![format!(
                        "TableSourceScan: {} [{}]",
                        table.name,
                        table.option("connector").unwrap_or_default()
                    )];
                    if let (Some(w), Some(_)) = (&table.watermark, rowtime) {
                        steps.push(format!(
                            "WatermarkAssigner: rowtime={}, watermark={}",
                            w.column, w.expr
                        ));
                    }
                    Ok(Planned {
                        stream,
                        scope,
                        steps,
                    })
                }
                Some(Relation::View(query)) => plan_query(env, catalog, query),
                None => {
                    let known: Vec<&str> = catalog.names().collect();
                    Err(SqlError::validation(
                        format!(
                            "table or view '{table_name}' not found{}",
                            if known.is_empty() {
                                String::new()
                            } else {
                                format!(" (known: {})", known.join(", "))
                            }
                        ),
                        at,
                    ))
                }
            }
        }
        TableFactor::Derived { subquery, .. } => plan_query(env, catalog, subquery),
        other => Err(SqlError::unsupported(format!("FROM {other}"), at)),
    }
}
