//! `GROUP BY` without a window: an unbounded aggregation whose result rows
//! change as rows arrive, emitted as a changelog (`+I` for a group's first
//! result, then `-U` of the old and `+U` of the new result on each change),
//! with the accumulators in keyed state (expiring after
//! `table.exec.state.ttl`, as in Flink).

use std::time::Duration;

use sqlparser::ast::{Expr, GroupByExpr, Select, Spanned};
use weir::prelude::*;

use crate::aggregate::{Acc, SqlAggregates};
use crate::error::{position, SqlError};
use crate::plan::{calc_step, filter_project, projection, Planned};
use crate::value::{Row, RowKind, Value};
use crate::window::{aggregation, pre_aggregate, where_filter, Aggregation};

/// The keyed function that keeps each group's accumulators and emits its
/// result's changes.
#[derive(Clone)]
struct GroupAggregate {
    aggregates: SqlAggregates,
    keys: usize,
    ttl: Option<Duration>,
    state: Option<ValueState<Vec<Acc>>>,
}

impl KeyedProcessFunction<Vec<Value>, Row, Row> for GroupAggregate {
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        let mut descriptor = ValueStateDescriptor::new("accumulators");
        if let Some(ttl) = self.ttl {
            descriptor = descriptor.enable_time_to_live(StateTtlConfig::new_builder(ttl).build());
        }
        self.state = Some(ctx.get_state(&descriptor)?);
        Ok(())
    }

    fn process_element(
        &mut self,
        row: Row,
        _ctx: &mut ProcessContext<'_, Vec<Value>>,
        out: &mut Collector<'_, Row>,
    ) -> FunctionResult {
        row.kind.insert_only("aggregating")?;
        let state = self.state.as_ref().ok_or("the aggregation is not open")?;
        let key = row.values[..self.keys].to_vec();
        let aggregates = &mut self.aggregates;
        let (mut before, mut after) = (None, Vec::new());
        // One state access, the accumulators updated in place.
        state.update_with(|previous| {
            before = previous.as_ref().map(|acc| aggregates.get_result(acc));
            let mut acc = previous.unwrap_or_else(|| aggregates.create_accumulator());
            aggregates.add(row, &mut acc);
            after = aggregates.get_result(&acc);
            Some(acc)
        })?;
        let result = |kind, aggs: Vec<Value>| {
            let mut values = key.clone();
            values.extend(aggs);
            Row {
                kind,
                values: values.into(),
            }
        };
        match before {
            None => out.collect(result(RowKind::Insert, after)),
            // An unchanged result is not emitted again (as Flink does
            // without a state time-to-live).
            Some(before) if before == after && self.ttl.is_none() => {}
            Some(before) => {
                out.collect(result(RowKind::UpdateBefore, before));
                out.collect(result(RowKind::UpdateAfter, after));
            }
        }
        Ok(())
    }
}

/// `SELECT keys…, aggregates… FROM … GROUP BY keys…` over an
/// insert-only input.
pub(crate) fn plan_group_aggregate(
    input: Planned,
    select: &Select,
    ttl: Option<Duration>,
) -> Result<Planned, SqlError> {
    let at = position(select.span());
    let keys: Vec<Expr> = match &select.group_by {
        GroupByExpr::Expressions(exprs, _) => exprs.clone(),
        GroupByExpr::All(_) => return Err(SqlError::unsupported("GROUP BY ALL", at)),
    };
    let filter = where_filter(select, &input.scope)?;
    let aggregation = aggregation(&input.scope, &keys, select, &[])?;
    let scope = aggregation.output_scope(&[]);
    let Aggregation {
        key_evals,
        arg_evals,
        calls,
        items,
        having,
    } = aggregation;
    let nkeys = keys.len();
    let key_fns = key_evals.iter().map(|c| c.eval.clone()).collect();
    let pre = pre_aggregate(input.stream, filter, key_fns, arg_evals);
    let function = GroupAggregate {
        aggregates: SqlAggregates {
            calls: calls.clone(),
        },
        keys: nkeys,
        ttl,
        state: None,
    };
    let aggregated = pre
        .key_by(move |r: &Row| r.values[..nkeys].to_vec())
        .process(function);
    let having = having
        .map(|h| crate::expr::compile(&h, &scope))
        .transpose()?
        .map(|c| c.eval);
    let (projections, out_scope, _) = projection(&items, &scope, None)?;
    let stream = filter_project(aggregated, having, projections);
    let mut steps = input.steps;
    steps.push(format!(
        "GroupAggregate: group by [{}], {} aggregate(s), changelog +I/-U/+U{}",
        keys.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        calls.len(),
        ttl.map_or(String::new(), |t| format!(
            ", state TTL {} ms",
            t.as_millis()
        ))
    ));
    steps.push(calc_step(&out_scope));
    Ok(Planned {
        stream,
        scope: out_scope,
        rowtime: None,
        steps,
    })
}
