//! `GROUP BY GROUPING SETS (…)`, `ROLLUP (…)` and `CUBE (…)`, planned as
//! Flink plans them: each input row is emitted once per grouping set (its
//! `Expand`), with the keys outside that set NULL and the set's number as
//! one more key, `$e`; one aggregation (a `GROUP BY` or a window
//! aggregation) then keeps every set's groups apart. `GROUPING(a, …)` (and
//! `GROUPING_ID`) reads which keys a result row's set leaves out from `$e`.

use std::cell::RefCell;
use std::sync::Arc;

use sqlparser::ast::{Expr, GroupByExpr, Ident, Select, SelectItem, Spanned, TableFactor};
use weir::prelude::*;

use crate::catalog::Catalog;
use crate::error::{position, Position, SqlError};
use crate::expr::{Compiled, Scope, Shape};
use crate::plan::Planned;
use crate::types::SqlType;
use crate::value::{Row, Value};

/// The name of the column that numbers a row's grouping set.
const SET_COLUMN: &str = "$e";

/// The grouping sets of the statement being planned: its keys and, per
/// set, which of them it groups by.
#[derive(Clone)]
struct Sets {
    keys: Vec<String>,
    sets: Vec<Vec<bool>>,
}

thread_local! {
    static SETS: RefCell<Option<Sets>> = const { RefCell::new(None) };
}

/// Whether `select` groups by grouping sets, `ROLLUP` or `CUBE`.
pub(crate) fn has_grouping_sets(select: &Select) -> bool {
    matches!(&select.group_by, GroupByExpr::Expressions(exprs, _)
        if exprs.iter().any(|e| matches!(e, Expr::GroupingSets(_) | Expr::Rollup(_) | Expr::Cube(_))))
}

/// The name a key column goes by (`t.a` is `a`), lower-cased.
fn key_name(e: &Expr) -> Option<String> {
    match e {
        Expr::Identifier(id) => Some(id.value.to_lowercase()),
        Expr::CompoundIdentifier(parts) => parts.last().map(|p| p.value.to_lowercase()),
        Expr::Nested(inner) => key_name(inner),
        _ => None,
    }
}

/// The grouping sets `GROUP BY items` makes: each item's sets (a plain key
/// is in every set), crossed.
fn grouping_sets(items: &[Expr], at: Position) -> Result<(Vec<Expr>, Vec<Vec<String>>), SqlError> {
    let mut keys: Vec<Expr> = Vec::new();
    let mut add_key = |e: &Expr| -> Result<String, SqlError> {
        let name = key_name(e).ok_or_else(|| {
            SqlError::unsupported(
                format!("the grouping key {e} (grouping sets of columns are supported)"),
                position(e.span()),
            )
        })?;
        if !keys
            .iter()
            .any(|k| key_name(k).as_deref() == Some(name.as_str()))
        {
            keys.push(e.clone());
        }
        Ok(name)
    };
    let mut crossed: Vec<Vec<String>> = vec![Vec::new()];
    for item in items {
        let groups: Vec<Vec<String>> = match item {
            Expr::GroupingSets(sets) => sets
                .iter()
                .map(|set| set.iter().map(&mut add_key).collect())
                .collect::<Result<_, _>>()?,
            Expr::Rollup(columns) | Expr::Cube(columns) => {
                let columns: Vec<Vec<String>> = columns
                    .iter()
                    .map(|group| group.iter().map(&mut add_key).collect())
                    .collect::<Result<_, _>>()?;
                let n = columns.len();
                if matches!(item, Expr::Rollup(_)) {
                    // (a, b), (a), ().
                    (0..=n).rev().map(|k| columns[..k].concat()).collect()
                } else {
                    // Every subset, the whole first.
                    (0..1usize << n)
                        .rev()
                        .map(|mask| {
                            (0..n)
                                .filter(|i| mask & (1 << (n - 1 - i)) != 0)
                                .flat_map(|i| columns[i].clone())
                                .collect()
                        })
                        .collect()
                }
            }
            plain => vec![vec![add_key(plain)?]],
        };
        crossed = crossed
            .iter()
            .flat_map(|prefix| {
                groups.iter().map(move |group| {
                    let mut set = prefix.clone();
                    set.extend(group.iter().cloned());
                    set
                })
            })
            .collect();
    }
    if crossed.is_empty() {
        return Err(SqlError::validation("GROUPING SETS without a set", at));
    }
    Ok((keys, crossed))
}

/// The words inside the aggregate calls of `e`, lower-cased: every name an
/// aggregate may read (and some it does not: a check with them refuses
/// more than it must, never less).
fn aggregated_names(e: &Expr, out: &mut Vec<String>) {
    let text = e.to_string();
    // Conservative: every word of every aggregate call's text.
    for (start, _) in text.match_indices('(') {
        let before = &text[..start];
        let name_start = before
            .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
            .map_or(0, |i| i + 1);
        if crate::expr::is_aggregate(&before[name_start..]) {
            let call = &text[start..];
            out.extend(
                call.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .filter(|w| !w.is_empty())
                    .map(str::to_lowercase),
            );
        }
    }
}

/// `select`, grouped by grouping sets: its `FROM` and `WHERE` planned as
/// rows of every column, each row expanded once per set, then aggregated
/// by the keys and the set.
pub(crate) fn plan(
    env: &StreamExecutionEnvironment,
    catalog: &Catalog,
    select: &Select,
) -> Result<Planned, SqlError> {
    let at = position(select.span());
    let GroupByExpr::Expressions(items, _) = &select.group_by else {
        return Err(SqlError::unsupported("GROUP BY ALL", at));
    };
    let (keys, named_sets) = grouping_sets(items, at)?;
    let names: Vec<String> = keys.iter().filter_map(key_name).collect();
    let sets: Vec<Vec<bool>> = named_sets
        .iter()
        .map(|set| names.iter().map(|k| set.contains(k)).collect())
        .collect();
    // A key some set leaves out is NULL in that set's rows: an aggregate
    // of it would count those NULLs too, where Flink's counts the values.
    let mut aggregated = Vec::new();
    for item in &select.projection {
        if let SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } = item {
            aggregated_names(e, &mut aggregated);
        }
    }
    if let Some(h) = &select.having {
        aggregated_names(h, &mut aggregated);
    }
    if let Some(name) = names
        .iter()
        .enumerate()
        .find(|(i, n)| sets.iter().any(|s| !s[*i]) && aggregated.contains(n))
        .map(|(_, n)| n)
    {
        return Err(SqlError::unsupported(
            format!("an aggregate of the grouping key {name}, which a grouping set leaves out"),
            at,
        ));
    }
    // The rows of the FROM and WHERE, every column (named by its
    // relation, unless the FROM is a window TVF).
    let input = match select.from.as_slice() {
        [from] if !matches!(from.relation, TableFactor::TableFunction { .. }) => {
            let joined = crate::plan::plan_joins(env, catalog, from, select.selection.as_ref())?;
            let filter = crate::window::where_filter(select, &joined.scope)?;
            let mut steps = joined.steps;
            if let Some(e) = &select.selection {
                steps.push(format!("Calc: where {e}"));
            }
            Planned {
                stream: crate::plan::filter_project(joined.stream, filter, None),
                update_before: None,
                steps,
                ..joined
            }
        }
        _ => {
            let mut rows = select.clone();
            rows.projection = vec![SelectItem::Wildcard(Default::default())];
            rows.group_by = GroupByExpr::Expressions(Vec::new(), Vec::new());
            rows.having = None;
            rows.distinct = None;
            crate::plan::plan_select(env, catalog, &rows)?
        }
    };
    let columns: Vec<usize> = keys
        .iter()
        .map(|k| match k {
            Expr::CompoundIdentifier(parts) if parts.len() == 2 => {
                input
                    .scope
                    .index_qualified(&parts[0].value, &parts[1].value, position(k.span()))
            }
            _ => input
                .scope
                .index(&key_name(k).unwrap_or_default(), position(k.span())),
        })
        .collect::<Result<_, _>>()?;
    let expanded = expand(input, &columns, &sets);
    let mut grouped = select.clone();
    grouped.selection = None;
    let mut by = keys.clone();
    by.push(Expr::Identifier(Ident::new(SET_COLUMN)));
    grouped.group_by = GroupByExpr::Expressions(by, Vec::new());
    SETS.set(Some(Sets { keys: names, sets }));
    let planned = crate::group::plan_group_aggregate(expanded, &grouped, catalog.group_settings());
    SETS.set(None);
    planned
}

/// Each row of `input` once per set of `sets`, the key `columns` a set
/// leaves out NULL, and the set's number after the row's columns.
fn expand(input: Planned, columns: &[usize], sets: &[Vec<bool>]) -> Planned {
    let mut scope = input.scope.clone();
    scope
        .columns
        .push((SET_COLUMN.to_string(), SqlType::BigInt));
    if !scope.qualifiers.is_empty() {
        scope.qualifiers.push(String::new());
    }
    let nulled: Arc<[Vec<usize>]> = sets
        .iter()
        .map(|set| {
            columns
                .iter()
                .zip(set)
                .filter(|(_, kept)| !**kept)
                .map(|(c, _)| *c)
                .collect()
        })
        .collect();
    let stream = input.stream.process(
        move |row: Row, _ctx: &mut ProcessContext<'_>, out: &mut Collector<'_, Row>| {
            for (i, nulled) in nulled.iter().enumerate() {
                let mut values = Row::buffer(row.values.len() + 1);
                values.extend_from_slice(&row.values);
                for c in nulled {
                    values[*c] = Value::Null;
                }
                values.push(Value::BigInt(i as i64));
                out.collect(Row {
                    kind: row.kind,
                    values,
                });
            }
            Ok(())
        },
    );
    let mut steps = input.steps;
    steps.push(format!(
        "Expand: {} grouping sets, numbered in {SET_COLUMN}",
        sets.len()
    ));
    Planned {
        stream,
        scope,
        update_before: None,
        steps,
        ..input
    }
}

/// `GROUPING(a, …)` (`GROUPING_ID`) over a grouping-set aggregation's
/// output `scope`: for each argument, most significant first, 1 if the
/// row's set leaves that key out. 0 in an aggregation without grouping
/// sets, as in Flink.
pub(crate) fn grouping(args: &[&Expr], scope: &Scope, at: Position) -> Result<Compiled, SqlError> {
    let Some(Sets { keys, sets }) = SETS.with_borrow(Clone::clone) else {
        return Ok(Compiled::constant(Value::BigInt(0), SqlType::BigInt));
    };
    // The aggregation names its output's keys `$group0`, … in the order of
    // its GROUP BY: the keys, then the set's number.
    let positions: Vec<usize> = args
        .iter()
        .map(|a| {
            key_name(a)
                .and_then(|n| n.strip_prefix("$group")?.parse::<usize>().ok())
                .filter(|i| *i < keys.len())
                .ok_or_else(|| {
                    SqlError::validation(
                        format!("GROUPING takes grouping keys, and {a} is not one"),
                        position(a.span()),
                    )
                })
        })
        .collect::<Result<_, _>>()?;
    let set_column = scope.index(&format!("$group{}", keys.len()), at)?;
    let bits: Arc<[i64]> = sets
        .iter()
        .map(|set| {
            positions
                .iter()
                .fold(0i64, |bits, p| (bits << 1) | i64::from(!set[*p]))
        })
        .collect();
    Ok(Compiled {
        shape: Shape::Computed,
        eval: Arc::new(move |row| {
            let set = row.get(set_column).and_then(Value::as_i64).unwrap_or(0);
            Ok(Value::BigInt(bits.get(set as usize).copied().unwrap_or(0)))
        }),
        ty: SqlType::BigInt,
    })
}
