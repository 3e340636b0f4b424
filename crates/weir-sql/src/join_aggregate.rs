//! A `GROUP BY` over a regular join that groups by the join's key (Nexmark
//! q4's `GROUP BY A.id, A.category` over `auction A JOIN bid B ON A.id =
//! B.auction`), run in the join's operator.
//!
//! Flink plans the join, then the aggregation keyed by its groups: every
//! joined row goes from one operator to the other and is looked up again
//! in the aggregation's state. When the groups' columns include a column
//! equal to each of the join's keys, all the rows of a group are joined
//! under one join key, so the groups can live in the join's state, under
//! that key: each joined row is folded into its group where it is made.
//! The groups' changes are those of the aggregation (`+I`, then `-U`/`+U`
//! when a result changes, nothing when it does not), in the order the
//! join would have emitted its rows, so the changelog is Flink's.
//!
//! A join key's state is one entry: both sides' rows (as the join keeps
//! them, and dropped as it drops them once no row to come can join them)
//! and its groups, so a row is joined, folded and kept with one look-up
//! (three, in a list per side and the groups apart, took a fifth more
//! time on q4). A joined row that changes none of its group's
//! accumulators (most of q4's bids, below their auction's highest) is
//! only counted, read from the two rows it joins, and never made.
//!
//! This applies to an inner join of insert-only sides (its rows are
//! insert-only) without `table.exec.state.ttl` (each group would live as
//! long as its join key's other groups) or mini-batch (whose changes are
//! per bundle), grouped by columns that are not floating-point.

use serde::{Deserialize, Serialize};
use sqlparser::ast::{Expr, GroupByExpr, Select, Spanned};
use weir::prelude::*;

use crate::aggregate::{Results, SqlAggregates};
use crate::error::{position, SqlError};
use crate::expr::Shape;
use crate::group::{grouped_rows, plan_group_aggregate, Group, GroupSettings};
use crate::join::{joined_column, JoinFunction, RegularJoin};
use crate::kept_rows::KeptRows;
use crate::key::RowKey;
use crate::plan::Calc;
use crate::types::SqlType;
use crate::value::{InputRows, Row, RowKind, Value};
use crate::window::{aggregation, pre_aggregate_calc, where_filter};

/// One join key's state: both sides' rows (packed as words where they
/// are alike, see [`KeptRows`]), and the groups (most keys have one, held
/// inline) with their keys. One entry, so a row is joined, folded and
/// kept with one look-up.
///
/// A row is joined with the other side's rows and folded into one of the
/// groups, so all three are read for nearly every row: each side's first
/// rows and a group's key are held in the entry itself, which its look-up
/// has loaded (each in an allocation of its own, all three were misses
/// waiting on the entry's). A group's key leaves out its columns that
/// are join key columns: the same in every group of a join key, they are
/// read from the joined row.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct JoinedGroups {
    sides: [KeptRows; 2],
    groups: smallvec::SmallVec<[(RowKey, Group); 1]>,
}

/// The keyed function that joins rows as [`JoinFunction`] does and folds
/// the joined rows into their groups.
#[derive(Clone)]
struct JoinAggregate {
    join: JoinFunction,
    /// A joined row made into the aggregation's input (its `WHERE`, keys
    /// and arguments), where that changes it.
    calc: Option<Calc>,
    /// The group's key columns in the aggregation's input.
    keys: std::sync::Arc<[usize]>,
    /// Those of `keys` a group's stored key holds: the ones not equal to
    /// a join key (see [`JoinedGroups`]).
    stored: std::sync::Arc<[usize]>,
    aggregates: SqlAggregates,
    state: Option<ValueState<JoinedGroups>>,
    /// The joined row being folded (kept for its allocation; a row, not a
    /// buffer moved into one for each fold, whose copy waited on the
    /// writes just made to it).
    joined: Row,
}

impl KeyedProcessFunction<RowKey, Row, Row> for JoinAggregate {
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.state = Some(ctx.get_state(&ValueStateDescriptor::new("joined-groups"))?);
        self.join.inputs = InputRows::of(ctx);
        Ok(())
    }

    fn process_element(
        &mut self,
        row: Row,
        ctx: &mut ProcessContext<'_, RowKey>,
        out: &mut Collector<'_, Row>,
    ) -> FunctionResult {
        if row.kind.is_retraction() {
            return Err("a join aggregation was given a retraction (its sides insert only)".into());
        }
        // [side, keys…, values…]; an inner join's sides drop rows whose
        // key has a NULL before they come here. The side's values are
        // read where they are.
        let mut row = row;
        let side = usize::from(matches!(row.values.first(), Some(Value::Boolean(true))));
        let skip = 1 + self.join.key_count();
        let values = std::mem::take(&mut row.values);
        if values.len() < skip {
            return Err("a join aggregation was given a row without its key".into());
        }
        // A row that no row to come can join is joined, not kept (one
        // with a NULL time joins none), as the join does.
        let expiry = self.join.expiry().filter(|e| e.side == side);
        let kept_until = match expiry {
            Some(e) => match e.of_row(&values[skip..]) {
                Some(until) if until > ctx.current_watermark() => Some(Some(until)),
                _ => None,
            },
            None => Some(None),
        };
        let state = self.state.as_ref().ok_or("the join is not open")?;
        let (join, calc) = (&self.join, self.calc.as_ref());
        let keys = GroupKeys {
            all: &self.keys,
            stored: &self.stored,
        };
        let (aggregates, joined) = (&mut self.aggregates, &mut self.joined);
        // A key's entry is changed where it is; a new key's is made here
        // and stored after (through `update_in_place`, which can hand a
        // new entry back, each row's call copied its whole result).
        let mut values = Some(values);
        let found = state.update_existing(|entry| {
            values.take().map(|values| {
                join_fold_keep(
                    entry, side, values, skip, kept_until, join, calc, keys, aggregates, joined,
                    out,
                )
            })
        })?;
        let first_kept = match found.flatten() {
            Some(done) => done?,
            // Not called: the row is still here.
            None => {
                let values = values.ok_or("a join aggregation lost its row")?;
                let mut entry = JoinedGroups::default();
                let done = join_fold_keep(
                    &mut entry, side, values, skip, kept_until, join, calc, keys, aggregates,
                    joined, out,
                )?;
                if !entry.sides.iter().all(|s| s.is_empty()) || !entry.groups.is_empty() {
                    state.update(entry)?;
                }
                done
            }
        };
        // A row left by a failed fold is dropped.
        self.joined.values.clear();
        // One timer per key: set by its first row, moved on by each sweep
        // while rows are left.
        if let (Some(e), Some(Some(until)), true) = (expiry, kept_until, first_kept) {
            ctx.timer_service()
                .register_event_time_timer(e.sweep_at(until));
        }
        Ok(())
    }

    /// Drops the rows of the expiring side that no row to come can join.
    fn on_timer(
        &mut self,
        _timestamp: i64,
        ctx: &mut ProcessContext<'_, RowKey>,
        _out: &mut Collector<'_, Row>,
    ) -> FunctionResult {
        let (Some(expiry), Some(state)) = (self.join.expiry(), self.state.as_ref()) else {
            return Ok(());
        };
        let watermark = ctx.current_watermark();
        let next = state.update_in_place(|entry| {
            let Some(entry) = entry else {
                return (ValueChange::Keep, None);
            };
            // The key's one timer moves on to its next row to expire.
            let mut next = None::<i64>;
            entry.sides[expiry.side].retain(|v| expiry.waits(v, watermark, &mut next));
            // A key left without rows or groups is gone.
            if entry.sides.iter().all(|s| s.is_empty()) && entry.groups.is_empty() {
                return (ValueChange::Remove, None);
            }
            (ValueChange::Keep, next)
        })?;
        if let Some(t) = next {
            ctx.timer_service()
                .register_event_time_timer(expiry.sweep_at(t));
        }
        Ok(())
    }
}

/// A group's key columns in the aggregation's input: `all` of them, in
/// the order of the `GROUP BY`, and those its stored key holds.
#[derive(Clone, Copy)]
struct GroupKeys<'a> {
    all: &'a [usize],
    stored: &'a [usize],
}

/// `values` after the first `skip` (a row of side `side`) joined with the
/// other side's rows in `entry`, each joined row folded into `entry`'s
/// groups as it is made (in `joined`, left empty), then kept in its
/// side's rows unless `kept_until` is `None`. Whether it is its side's
/// first row.
#[allow(clippy::too_many_arguments)]
fn join_fold_keep(
    entry: &mut JoinedGroups,
    side: usize,
    values: Vec<Value>,
    skip: usize,
    kept_until: Option<Option<i64>>,
    join: &JoinFunction,
    calc: Option<&Calc>,
    keys: GroupKeys<'_>,
    aggregates: &mut SqlAggregates,
    joined: &mut Row,
    out: &mut Collector<'_, Row>,
) -> Result<bool, String> {
    let JoinedGroups { sides, groups } = entry;
    let mut matched = 0u32;
    let mine = &values[skip..];
    sides[1 - side].try_for_each(|theirs| {
        // A pair is tested, and its joined row read, where the two rows
        // are, when it can be: most of q4's bids join their auction and
        // raise no maximum, and make no row. (With a `calc`, the groups
        // read the row it makes of the joined row.)
        match join.pair_passes(side, mine, theirs) {
            Some(false) => return Ok(()),
            Some(true) => {
                matched += 1;
                if calc.is_none() {
                    let (left, right) = JoinFunction::in_order(side, mine, theirs);
                    let at = |i| joined_column(left, right, i);
                    if counted_unchanged(groups, at, keys, aggregates) {
                        return Ok(());
                    }
                }
                JoinFunction::joined_into(side, mine, theirs, &mut joined.values);
            }
            None => {
                if !join.join_into(side, mine, theirs, &mut joined.values)? {
                    joined.values.clear();
                    return Ok(());
                }
                matched += 1;
            }
        }
        // One buffer for every joined row: each is folded, and done
        // with, before the next is made.
        joined.kind = RowKind::Insert;
        fold(groups, joined, calc, keys, aggregates, out)?;
        joined.values.clear();
        Ok::<(), String>(())
    })?;
    if kept_until.is_none() {
        join.inputs.release(values);
        return Ok(false);
    }
    let mine = &mut sides[side];
    mine.push(values, skip, matched, join.inputs);
    Ok(mine.is_one())
}

/// The group of the row whose column `i` is `at(i)`, among `groups`.
fn group_of<'g, 'v>(
    groups: &'g mut smallvec::SmallVec<[(RowKey, Group); 1]>,
    at: impl Fn(usize) -> &'v Value,
    keys: GroupKeys<'_>,
) -> Option<&'g mut Group> {
    groups
        .iter_mut()
        .find(|(k, _)| k.iter().eq(keys.stored.iter().map(|&i| at(i))))
        .map(|(_, group)| group)
}

/// Whether a joined row (its column `i` at `at(i)`, not made) changes its
/// group no more than by counting it: the group is there and none of its
/// accumulators changes. If so, it is counted.
fn counted_unchanged<'v>(
    groups: &mut smallvec::SmallVec<[(RowKey, Group); 1]>,
    at: impl Fn(usize) -> &'v Value + Copy,
    keys: GroupKeys<'_>,
    aggregates: &SqlAggregates,
) -> bool {
    match group_of(groups, at, keys) {
        Some(group) if !aggregates.changes_at(at, &group.accumulators) => {
            group.rows += 1;
            true
        }
        _ => false,
    }
}

/// Folds a joined `row` (of a join key whose groups are `groups`) into
/// its group, emitting the group's changes as the aggregation would.
fn fold(
    groups: &mut smallvec::SmallVec<[(RowKey, Group); 1]>,
    row: &mut Row,
    calc: Option<&Calc>,
    keys: GroupKeys<'_>,
    aggregates: &mut SqlAggregates,
    out: &mut Collector<'_, Row>,
) -> Result<(), String> {
    if let Some(calc) = calc {
        if !calc.apply(row)? {
            return Ok(());
        }
    }
    // Found by its columns: a key is made only for a new group.
    match group_of(groups, |i| &row.values[i], keys) {
        None => {
            let mut group = Group {
                rows: 1,
                accumulators: aggregates.create_accumulator(),
            };
            aggregates.add_row(row, &mut group.accumulators);
            let mut results = Results::new();
            aggregates.results_into(&group.accumulators, &mut results);
            out.collect(keyed(row, keys.all, RowKind::Insert, &results));
            groups.push((RowKey::at(&row.values, keys.stored), group));
        }
        Some(group) => {
            group.rows += 1;
            // Most rows change no accumulator (a bid below its auction's
            // highest): nothing to add, and no result to compare.
            if !aggregates.changes(row, &group.accumulators) {
                return Ok(());
            }
            // The results before and after, compared before any row
            // is made of them: a changed accumulator may still give the
            // same result.
            let mut before = Results::new();
            aggregates.results_into(&group.accumulators, &mut before);
            let sums = aggregates.spread_sums(&group.accumulators);
            aggregates.add_row(row, &mut group.accumulators);
            let mut after = Results::new();
            aggregates.results_into(&group.accumulators, &mut after);
            if before != after || sums != aggregates.spread_sums(&group.accumulators) {
                out.collect(keyed(row, keys.all, RowKind::UpdateBefore, &before));
                out.collect(keyed(row, keys.all, RowKind::UpdateAfter, &after));
            }
        }
    }
    Ok(())
}

/// A result row of the group of `row` (its key columns `keys`) whose
/// aggregates' results are `results`: the key's columns, then those.
fn keyed(row: &Row, keys: &[usize], kind: RowKind, results: &[Value]) -> Row {
    let mut values = Row::buffer(keys.len() + results.len());
    values.extend(keys.iter().map(|&i| row.values[i].clone()));
    values.extend_from_slice(results);
    Row { kind, values }
}

/// `select` (grouped) over the regular join `join`: in the join's operator
/// where its groups are within the join's keys (see the module's
/// documentation), else as an aggregation after the join.
pub(crate) fn plan(
    join: RegularJoin,
    select: &Select,
    settings: GroupSettings,
) -> Result<crate::plan::Planned, SqlError> {
    let at = position(select.span());
    let group_by: Vec<Expr> = match &select.group_by {
        GroupByExpr::Expressions(exprs, _) => exprs.clone(),
        GroupByExpr::All(_) => return Err(SqlError::unsupported("GROUP BY ALL", at)),
    };
    let filter = where_filter(select, &join.scope)?;
    let aggregation = aggregation(&join.scope, &group_by, select, &[])?;
    let is_column = |k: &crate::expr::Compiled, column: usize| {
        matches!(k.shape, Shape::Column(i) if i == column) && k.ty != SqlType::Double
    };
    let grouped_column = |column: usize| aggregation.key_evals.iter().any(|k| is_column(k, column));
    let within_keys = !join.key_columns.is_empty()
        && join
            .key_columns
            .iter()
            .all(|columns| columns.iter().any(|c| grouped_column(*c)));
    let applies = within_keys
        && join.inserts_only
        && join.function.ttl.is_none()
        && settings.ttl.is_none()
        && settings.mini_batch.is_none();
    if !applies {
        return plan_group_aggregate(join.finish(), select, settings);
    }
    let (calc, keys, calls) = pre_aggregate_calc(filter, &aggregation, join.scope.columns.len());
    // A key column that is one of the join's key columns holds the join
    // key's value in every joined row of it: not stored with each group.
    let is_stored: Vec<bool> = aggregation
        .key_evals
        .iter()
        .map(|k| !join.key_columns.iter().flatten().any(|&c| is_column(k, c)))
        .collect();
    let stored: std::sync::Arc<[usize]> = keys
        .iter()
        .zip(&is_stored)
        .filter_map(|(&i, &s)| s.then_some(i))
        .collect();
    // Which columns a group's stored key holds is part of what the state
    // means, so it is part of the operator's uid.
    let stored_names = group_by
        .iter()
        .zip(&is_stored)
        .filter(|(_, &s)| s)
        .map(|(e, _)| e.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let scope = aggregation.output_scope(&[]);
    let grouped = group_by
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    let described = crate::aggregate::describe(&aggregation.calls);
    let what = format!(
        "JoinAggregate[{}; group by {grouped}; {described}; groups held by [{stored_names}]]",
        join.what
    );
    let key_of = join.key_of();
    let function = JoinAggregate {
        join: join.function,
        calc,
        keys,
        stored,
        aggregates: SqlAggregates::new(calls, false),
        state: None,
        joined: Row::insert(Vec::new()),
    };
    let stream = join.tagged.key_by(key_of).process(function);
    let stream = crate::plan::stateful(stream, &what);
    let mut steps = join.steps;
    steps.push(format!(
        "GroupAggregate: group by [{grouped}], {} aggregate(s), changelog +I/-U/+U/-D, \
         in the join's operator (its groups are within the join's keys)",
        aggregation.calls.len()
    ));
    grouped_rows(
        stream,
        aggregation.having,
        &aggregation.items,
        &scope,
        None,
        None,
        steps,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aggregate::{AggCall, AggKind};

    /// Joined rows fold into their groups as the aggregation after the
    /// join would take them: `+I` for a group's first row, `-U`/`+U` when
    /// its result changes, nothing when it does not (a lower price, a NULL
    /// one), each group of a join key apart.
    #[test]
    fn joined_rows_change_their_groups_as_the_aggregation_after_the_join_would() {
        // [auction, category, price], grouped by auction and category.
        let max = AggCall {
            kind: AggKind::Max,
            arg: 2,
            arg_type: SqlType::BigInt,
            separator: String::new(),
            filter: None,
        };
        let mut aggregates = SqlAggregates::new(vec![max], false);
        let row = |category: i64, price: Option<i64>| {
            vec![
                Value::BigInt(1),
                Value::BigInt(category),
                price.map_or(Value::Null, Value::BigInt),
            ]
        };
        let joined = vec![
            row(10, Some(100)),
            row(20, Some(50)),
            row(10, Some(80)),
            row(10, None),
            row(10, Some(150)),
        ];
        let (mut groups, mut records) = (smallvec::SmallVec::new(), Vec::new());
        let mut out = Collector::new(&mut records, 0);
        let keys = GroupKeys {
            all: &[0, 1],
            stored: &[1],
        };
        for values in joined {
            fold(
                &mut groups,
                &mut Row::insert(values),
                None,
                keys,
                &mut aggregates,
                &mut out,
            )
            .expect("folded");
        }
        let printed: Vec<String> = records.iter().map(|r| r.value.to_string()).collect();
        assert_eq!(
            printed,
            [
                "+I[1, 10, 100]",
                "+I[1, 20, 50]",
                "-U[1, 10, 100]",
                "+U[1, 10, 150]"
            ]
        );
        let rows: Vec<i64> = groups.iter().map(|(_, g)| g.rows).collect();
        assert_eq!(rows, [4, 1]);
    }
}
