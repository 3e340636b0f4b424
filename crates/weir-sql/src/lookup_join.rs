//! Lookup joins: `o JOIN c FOR SYSTEM_TIME AS OF o.pt AS c ON o.k = c.id`,
//! `pt` a processing-time attribute of `o` and `c` a PostgreSQL table
//! (`'connector' = 'jdbc'` or `'postgres'`). Each row of `o` is joined,
//! as it arrives, with the rows of `c` whose columns equal its keys at
//! that moment, read from the server (through the table's lookup cache,
//! if it has one), as Flink's lookup join does.

use sqlparser::ast::{Join, Spanned};
use weir::prelude::*;

use crate::catalog::TableDef;
use crate::error::{position, SqlError};
use crate::expr::{Condition, Eval};
use crate::jdbc::JdbcLookup;
use crate::join::{
    column_keys, inner_or_left_on, qualified, residual_condition, side_by_side, with_nulls_after,
};
use crate::plan::Planned;
use crate::types::SqlType;
use crate::value::{Row, Value};

/// `left JOIN table FOR SYSTEM_TIME AS OF <left's processing time> ON …`
/// (or `LEFT JOIN`).
pub(crate) fn plan_lookup_join(
    left: Planned,
    left_name: String,
    table: &TableDef,
    join: &Join,
) -> Result<Planned, SqlError> {
    let at = position(join.span());
    let (on, outer) = inner_or_left_on(join, "lookup join")?;
    let name = if outer { "left outer" } else { "inner" };
    match table.option("connector") {
        Some("jdbc" | "postgres") => {}
        other => {
            return Err(SqlError::validation(
                format!(
                    "a processing-time temporal join looks rows up in a lookup source, a \
                     'jdbc' or 'postgres' table; `{}` is {}",
                    table.name,
                    other.map_or_else(|| "not one".to_string(), |c| format!("'connector' = '{c}'"))
                ),
                at,
            ))
        }
    }
    let right_name = crate::join::qualifier(&join.relation);
    let rows = crate::connector::table_rows(table)?;
    let physical: Vec<&str> = table.physical().map(|(n, _)| n).collect();
    let left_scope = crate::join::side_scope(&left.scope, &left_name);
    let right_scope = qualified(&rows.scope.columns, &right_name);
    let joined = side_by_side(&left_scope, &right_scope);
    // Equalities of a left expression and a column the server holds are
    // the look-up's key; the rest is checked on each joined row.
    // (Computed columns may come between the physical ones.)
    let physical_at = |r: usize| physical.contains(&rows.scope.columns[r].0.as_str());
    let (found, residual) = column_keys(on, [&left_scope, &right_scope, &joined], physical_at)?;
    let (mut keys, mut key_columns) = (Vec::<Eval>::new(), Vec::new());
    for key in found {
        let ty = rows.scope.columns[key.right].1;
        // Sent as text: integers of either width read as the column's.
        let integers = key.left.ty.is_integer() && ty.is_integer();
        if key.left.ty != ty && !integers && key.left.ty != SqlType::Null {
            return Err(SqlError::validation(
                format!(
                    "the lookup key {} equals a {ty} column to a value of type {}: CAST one",
                    key.written, key.left.ty
                ),
                position(key.written.span()),
            ));
        }
        keys.push(key.left.eval);
        key_columns.push(rows.scope.columns[key.right].0.as_str());
    }
    if keys.is_empty() {
        return Err(SqlError::validation(
            format!(
                "a lookup join needs an equality between the left side and a column of \
                 `{right_name}` in its ON"
            ),
            at,
        ));
    }
    let lookup = crate::jdbc::jdbc_lookup(table, &rows, &key_columns)?;
    let residual = residual_condition(residual, &joined)?;
    let right_width = rows.scope.columns.len();
    let stream = left
        .stream
        .process(LookupJoin {
            keys,
            lookup,
            residual,
            outer,
            right_width,
        })
        .name(&format!("LookupJoin[{name}; {on}]"));
    let mut steps = left.steps;
    steps.push(format!(
        "LookupJoin: {name}, on {on}, {right_name} looked up by {} in {} [{}]",
        key_columns.join(", "),
        table.name,
        table.option("connector").unwrap_or_default()
    ));
    Ok(Planned {
        stream,
        scope: joined,
        // The left rows' time attribute stays theirs.
        rowtime: left.rowtime,
        proctime: left.proctime,
        window: None,
        above_watermark: None,
        // Each joined row is of its left row's kind.
        updating: left.updating,
        versions: None,
        update_before: None,
        steps,
    })
}

/// Joins each row with the rows looked up by its keys.
#[derive(Clone)]
struct LookupJoin {
    keys: Vec<Eval>,
    lookup: JdbcLookup,
    residual: Option<Condition>,
    /// Whether a row that joins nothing is emitted, padded with NULLs.
    outer: bool,
    right_width: usize,
}

impl ProcessFunction<Row, Row> for LookupJoin {
    fn open(&mut self, _ctx: &RuntimeContext) -> FunctionResult {
        Ok(self.lookup.open()?)
    }

    fn process_element(
        &mut self,
        row: Row,
        _ctx: &mut ProcessContext<'_>,
        out: &mut Collector<'_, Row>,
    ) -> FunctionResult {
        let key = self
            .keys
            .iter()
            .map(|k| k(&row.values))
            .collect::<Result<Vec<Value>, _>>()?;
        let mut matched = false;
        for found in self.lookup.rows(&key)? {
            let mut joined = Row::buffer(row.values.len() + found.values.len());
            joined.extend_from_slice(&row.values);
            joined.extend_from_slice(&found.values);
            if let Some(f) = &self.residual {
                if !f.passes(&joined)? {
                    Row::recycle(joined);
                    continue;
                }
            }
            matched = true;
            out.collect(Row {
                kind: row.kind,
                values: joined,
            });
        }
        if !matched && self.outer {
            out.collect(Row {
                kind: row.kind,
                values: with_nulls_after(&row.values, self.right_width),
            });
        }
        Ok(())
    }
}
