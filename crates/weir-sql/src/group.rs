//! `GROUP BY` without a window: an unbounded aggregation whose result rows
//! change as rows arrive, emitted as a changelog (`+I` for a group's first
//! result, then `-U` of the old and `+U` of the new result on each change,
//! `-D` when retractions leave a group without rows), with the
//! accumulators in keyed state (expiring after `table.exec.state.ttl`, as
//! in Flink). An updating input (`-U`/`-D` rows) is retracted from the
//! accumulators.
//!
//! Where nothing reads the `-U` rows (the aggregation's results go
//! straight, through a projection at most, into a `blackhole` or
//! `upsert-kafka` sink), none are made: `+I`, `+U` and `-D` alone, as
//! Flink's planner infers from what its sink consumes (see
//! [`UpdateBefore`]).
//!
//! A `GROUP BY` of the window columns of an input that has windows (a
//! window aggregation's or window TVF's rows) is instead a window
//! aggregation over those windows, inserts only, as Flink plans it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sqlparser::ast::{Expr, GroupByExpr, Select, Spanned};
use weir::prelude::*;
use weir::window::{
    AssignerContext, Elements, EventTimeTrigger, ProcessWindowContext, TimeWindow, Trigger,
    WindowAssigner,
};

use crate::aggregate::{Acc, Accumulators, Results, SqlAggregates};
use crate::error::{position, SqlError};
use crate::key::RowKey;
use crate::plan::{calc_step, filter_project, projection, Planned};
use crate::value::{InputRows, Row, RowKind, Value};
use crate::window::{aggregation, pre_aggregate, where_filter, Aggregation};

/// One group's state: how many rows it holds (inserts less retractions)
/// and its accumulators.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Group {
    pub rows: i64,
    pub accumulators: Accumulators,
}

/// Whether an unbounded aggregation makes its `-U` rows: on until the
/// reader of its results turns it off, before the job runs.
///
/// Flink's planner infers which changes each operator must emit from what
/// the operators after it consume: into a sink that takes no
/// `UPDATE_BEFORE` (its `blackhole` and `upsert-kafka` connectors), an
/// aggregation's updates are `+U` rows alone. The planner here makes each
/// aggregation with this switch, hands it on with the aggregation's
/// results while only a projection follows ([`Planned::update_before`]),
/// and the `INSERT` turns it off for such a sink. Each `-U` row not made
/// is a result row not built, sent and dropped, for every change of a
/// group.
#[derive(Debug, Clone, Default)]
pub(crate) struct UpdateBefore(Arc<AtomicBool>);

impl UpdateBefore {
    /// No `-U` rows: nothing reads them.
    pub fn leave_out(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether `-U` rows are made.
    pub fn is_made(&self) -> bool {
        !self.0.load(Ordering::Relaxed)
    }
}

/// The keyed function that keeps each group's accumulators and emits its
/// result's changes.
#[derive(Clone)]
struct GroupAggregate {
    aggregates: SqlAggregates,
    ttl: Option<Duration>,
    state: Option<ValueState<Group>>,
    inputs: InputRows,
    /// Whether `-U` rows are made, read from its switch when the job
    /// starts.
    update_before: UpdateBefore,
    makes_update_before: bool,
    /// Whether an inserted row's change is its `+U` row alone, made
    /// without the result before: no `-U` rows are made, and every row
    /// inserted changes the results (see
    /// [`SqlAggregates::counts_every_row`]).
    updates_alone: bool,
    /// The result before a change, where no `-U` row is made of it: the
    /// same buffer written over for each change, to compare with the
    /// result after (and emitted only as a `-D`).
    before: Row,
}

impl KeyedProcessFunction<RowKey, Row, Row> for GroupAggregate {
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.state = Some(crate::plan::value_state(ctx, "group", self.ttl)?);
        self.inputs = InputRows::of(ctx);
        self.makes_update_before = self.update_before.is_made();
        self.updates_alone = !self.makes_update_before && self.aggregates.counts_every_row();
        Ok(())
    }

    fn process_element(
        &mut self,
        row: Row,
        ctx: &mut ProcessContext<'_, RowKey>,
        out: &mut Collector<'_, Row>,
    ) -> FunctionResult {
        let state = self.state.as_ref().ok_or("the aggregation is not open")?;
        let retraction = row.kind.is_retraction();
        // The group's key columns: the key the rows are keyed by.
        let key = ctx.get_current_key();
        let aggregates = &mut self.aggregates;
        let result =
            |kind, aggregates: &SqlAggregates, acc: &[Acc]| result_row(key, kind, aggregates, acc);
        let (makes_before, spare) = (self.makes_update_before, &mut self.before);
        let updates_alone = self.updates_alone && !retraction;
        // Results are emitted as they are made, inside the one state
        // access: handed back out of it, each row was moved through memory
        // twice more and read back in other widths than it was written in.
        let skip_unchanged = self.ttl.is_none();
        // The input row is read in place and given back once the results
        // are made, so that no result row is built in its buffer (see
        // `InputRows`).
        let input = row;
        let row = &input;
        state.update_in_place(|previous| match previous {
            // A retraction of a group never seen (its state expired, or
            // the input retracts what it never inserted) changes nothing,
            // as in Flink.
            None if retraction => (ValueChange::Keep, ()),
            None => {
                let mut group = Group {
                    rows: 1,
                    accumulators: aggregates.create_accumulator(),
                };
                aggregates.add_row(row, &mut group.accumulators);
                out.collect(result(RowKind::Insert, aggregates, &group.accumulators));
                (ValueChange::Set(group), ())
            }
            // A row that changes no accumulator changes no result, which
            // is then not emitted again: no rows to make.
            Some(group)
                if skip_unchanged
                    && !retraction
                    && !aggregates.changes(row, &group.accumulators) =>
            {
                group.rows += 1;
                (ValueChange::Keep, ())
            }
            // A row that surely changes the results, where no `-U` row is
            // made: the result after alone.
            Some(group) if updates_alone => {
                group.rows += 1;
                aggregates.add_row(row, &mut group.accumulators);
                out.collect(result(
                    RowKind::UpdateAfter,
                    aggregates,
                    &group.accumulators,
                ));
                (ValueChange::Keep, ())
            }
            Some(group) => {
                let mut before =
                    result_before(key, aggregates, &group.accumulators, makes_before, spare);
                let sums = aggregates.spread_sums(&group.accumulators);
                if retraction {
                    group.rows -= 1;
                    aggregates.retract(row, &mut group.accumulators);
                } else {
                    group.rows += 1;
                    aggregates.add_row(row, &mut group.accumulators);
                }
                if group.rows <= 0 {
                    before.kind = RowKind::Delete;
                    out.collect(before);
                    return (ValueChange::Remove, ());
                }
                let after = result(RowKind::UpdateAfter, aggregates, &group.accumulators);
                // An unchanged result is not emitted again (as Flink does
                // without a state time-to-live).
                let unchanged = before.values == after.values
                    && sums == aggregates.spread_sums(&group.accumulators);
                if skip_unchanged && unchanged {
                    keep_before(before, makes_before, spare);
                } else {
                    emit_update(before, after, makes_before, spare, out);
                }
                (ValueChange::Keep, ())
            }
        })?;
        self.inputs.release(input.into_values());
        Ok(())
    }
}

/// How many rows ahead of the one being added a bundle's rows are loaded.
const ROWS_AHEAD: usize = 8;

/// With mini-batch (`table.exec.mini-batch.enabled`): a group's rows of a
/// bundle folded into its accumulators with one state access, and one
/// change of its result emitted for them all (Flink's
/// `MiniBatchGroupAggFunction`): `+I` for a new group, `-U`/`+U` for a
/// changed one, `-D` for one left without rows, nothing for one whose
/// result did not change. (Row by row, the same changes are decided in
/// `process_element`: run as a bundle of one row, a `GROUP BY` took a
/// tenth more CPU time.)
impl KeyedBundleFunction<RowKey, Row, Row> for GroupAggregate {
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        KeyedProcessFunction::open(self, ctx)
    }

    /// A group's accumulators and their distinct sets are each behind a
    /// pointer: with thousands of groups in a bundle, each a miss in the
    /// caches, loaded one after another. Looked at ahead, a group's first
    /// rows and its accumulators start loading six groups ahead, its sets
    /// four. The sets' slots are not looked for ahead: a set in order
    /// takes its latest values in itself, and another look at each group
    /// cost more than the few slots it loaded saved (q16: 9 % of its
    /// rate).
    fn look_ahead(&self, upcoming: &Upcoming<'_, Row>) -> FunctionResult {
        let Some(state) = &self.state else {
            return Ok(());
        };
        let aggregates = &self.aggregates;
        match upcoming.distance() {
            6 => {
                for row in upcoming.records().iter().take(ROWS_AHEAD) {
                    row.prefetch();
                }
                upcoming.peek(state, |g| aggregates.prefetch_accumulators(&g.accumulators))
            }
            4 => upcoming.peek(state, |g| aggregates.prefetch_shared(&g.accumulators)),
            _ => Ok(()),
        }
    }

    fn process_bundle(
        &mut self,
        rows: &mut Vec<Row>,
        ctx: &mut ProcessContext<'_, RowKey>,
        out: &mut Collector<'_, Row>,
    ) -> FunctionResult {
        let state = self.state.as_ref().ok_or("the aggregation is not open")?;
        let key = ctx.get_current_key();
        let aggregates = &mut self.aggregates;
        let skip_unchanged = self.ttl.is_none();
        let (makes_before, spare) = (self.makes_update_before, &mut self.before);
        // Rows that all surely change a group's results, where no `-U` row
        // is made: its result before is not made at all.
        let updates_alone =
            self.updates_alone && !rows.is_empty() && rows.iter().all(|r| !r.kind.is_retraction());
        state.update_in_place(|previous| {
            let existed = previous.is_some();
            let before = previous
                .as_ref()
                .filter(|_| !updates_alone)
                .map(|g| result_before(key, aggregates, &g.accumulators, makes_before, spare));
            let sums = previous
                .as_ref()
                .map(|g| aggregates.spread_sums(&g.accumulators));
            let mut created = None;
            let group = match previous {
                Some(group) => group,
                None => created.insert(Group {
                    rows: 0,
                    accumulators: aggregates.create_accumulator(),
                }),
            };
            aggregates.prefetch_distinct(rows, &group.accumulators);
            for (i, row) in rows.iter().enumerate() {
                // The rows were made on another thread: each one's values
                // are a miss until read (the first few were loaded
                // ahead, see `look_ahead`).
                if let Some(ahead) = rows.get(i + ROWS_AHEAD) {
                    ahead.prefetch();
                }
                if !row.kind.is_retraction() {
                    group.rows += 1;
                    aggregates.add_row(row, &mut group.accumulators);
                } else if group.rows > 0 {
                    group.rows -= 1;
                    aggregates.retract(row, &mut group.accumulators);
                    if group.rows == 0 {
                        // Emptied, the group starts again as a new one
                        // would (the row-by-row path deletes it).
                        group.accumulators = aggregates.create_accumulator();
                    }
                }
                // Else a retraction of a group without rows: it changes
                // nothing, as row by row.
            }
            rows.clear();
            let now = (group.rows > 0)
                .then(|| result_row(key, RowKind::UpdateAfter, aggregates, &group.accumulators));
            match (before, now) {
                // The group's rows surely changed its results (it has
                // rows: they were inserts).
                (None, Some(after)) if existed => {
                    out.collect(after);
                    (ValueChange::Keep, ())
                }
                (None, None) => (ValueChange::Keep, ()),
                (None, Some(mut after)) => {
                    after.kind = RowKind::Insert;
                    out.collect(after);
                    match created {
                        Some(group) => (ValueChange::Set(group), ()),
                        None => (ValueChange::Keep, ()),
                    }
                }
                (Some(mut before), None) => {
                    before.kind = RowKind::Delete;
                    out.collect(before);
                    (ValueChange::Remove, ())
                }
                (Some(before), Some(after)) => {
                    let unchanged = before.values == after.values
                        && sums.is_some_and(|s| s == aggregates.spread_sums(&group.accumulators));
                    if skip_unchanged && unchanged {
                        keep_before(before, makes_before, spare);
                    } else {
                        emit_update(before, after, makes_before, spare, out);
                    }
                    (ValueChange::Keep, ())
                }
            }
        })?;
        Ok(())
    }
}

/// A result row of the group `key`: its columns, then the aggregates'
/// results.
pub(crate) fn result_row(
    key: &RowKey,
    kind: RowKind,
    aggregates: &SqlAggregates,
    acc: &[Acc],
) -> Row {
    let mut values = Row::buffer(key.len() + acc.len());
    values.extend_from_slice(key);
    aggregates.results_onto(acc, &mut values);
    Row { kind, values }
}

/// The result of the group `key` before a change: a `-U` row of its own
/// where those are made, else `spare`'s buffer written over (see
/// [`GroupAggregate::before`]).
fn result_before(
    key: &RowKey,
    aggregates: &SqlAggregates,
    acc: &[Acc],
    makes_before: bool,
    spare: &mut Row,
) -> Row {
    if makes_before {
        return result_row(key, RowKind::UpdateBefore, aggregates, acc);
    }
    let mut row = std::mem::replace(spare, Row::insert(Vec::new()));
    row.kind = RowKind::UpdateBefore;
    row.values.clear();
    row.values.extend_from_slice(key);
    aggregates.results_onto(acc, &mut row.values);
    row
}

/// A result before a change that was not emitted, its buffer kept where
/// it is reused.
fn keep_before(before: Row, makes_before: bool, spare: &mut Row) {
    if !makes_before {
        *spare = before;
    }
}

/// A group's changed result: `-U` of the result `before` (where those are
/// made) and `+U` of the one `after`.
fn emit_update(
    before: Row,
    after: Row,
    makes_before: bool,
    spare: &mut Row,
    out: &mut Collector<'_, Row>,
) {
    if makes_before {
        out.collect(before);
    } else {
        *spare = before;
    }
    out.collect(after);
}

/// The distinct rows of `input` (`UNION` without `ALL`): `SELECT cols …
/// GROUP BY cols`, each row emitted the first time it is seen.
pub(crate) fn distinct(input: Planned, settings: GroupSettings) -> Result<Planned, SqlError> {
    let columns = input
        .scope
        .columns
        .iter()
        .map(|(name, _)| format!("`{}`", name.replace('`', "``")))
        .collect::<Vec<_>>()
        .join(", ");
    let text = format!("SELECT {columns} FROM input GROUP BY {columns}");
    let parsed =
        sqlparser::parser::Parser::parse_sql(&sqlparser::dialect::GenericDialect {}, &text)
            .map_err(|e| SqlError::Parse(format!("planning DISTINCT: {e}")))?;
    let select = match parsed.first() {
        Some(sqlparser::ast::Statement::Query(q)) => match &*q.body {
            sqlparser::ast::SetExpr::Select(s) => s.clone(),
            _ => return Err(SqlError::Parse("planning DISTINCT: not a SELECT".into())),
        },
        _ => return Err(SqlError::Parse("planning DISTINCT: not a query".into())),
    };
    plan_group_aggregate(input, &select, settings)
}

/// `left INTERSECT ALL right` (`except`: `EXCEPT ALL`), as Flink rewrites
/// them: both sides' rows counted per distinct row by one aggregation
/// (an updating `GROUP BY` of every column), then each result row of it
/// emitted, with its kind, as many times as the row is in the result:
/// the lesser of the two counts (`INTERSECT ALL`) or the left count less
/// the right one, when positive (`EXCEPT ALL`).
pub(crate) fn counted_set_operation(
    left: Planned,
    right: Planned,
    except: bool,
    settings: GroupSettings,
    at: crate::error::Position,
) -> Result<Planned, SqlError> {
    let what = if except {
        "EXCEPT ALL"
    } else {
        "INTERSECT ALL"
    };
    let (left, right) = crate::plan::set_operands(left, right, what, at)?;
    let output = left.scope.clone();
    let width = output.columns.len();
    // Each side's rows with their columns named by position (a query may
    // name two alike) and a marker column for each side.
    let tagged = |side: Planned, right: bool| -> Planned {
        let mut columns: Vec<(String, crate::types::SqlType)> = (side.scope.columns.iter())
            .enumerate()
            .map(|(i, (_, t))| (format!("$c{i}"), *t))
            .collect();
        columns.push(("$left".into(), crate::types::SqlType::BigInt));
        columns.push(("$right".into(), crate::types::SqlType::BigInt));
        let stream = side.stream.process(
            move |mut row: Row, _ctx: &mut ProcessContext<'_>, out: &mut Collector<'_, Row>| {
                let (l, r) = if right {
                    (Value::Null, Value::BigInt(1))
                } else {
                    (Value::BigInt(1), Value::Null)
                };
                // Into a buffer two wider (pushed onto the row's own, each
                // row would grow it out of the pool); the row's goes back.
                let mut values = Row::buffer(row.values.len() + 2);
                values.append(&mut row.values);
                values.push(l);
                values.push(r);
                out.collect(Row {
                    kind: row.kind,
                    values,
                });
                Ok(())
            },
        );
        Planned {
            stream,
            scope: crate::expr::Scope::of(columns),
            update_before: None,
            ..side
        }
    };
    let both = crate::plan::union_all(tagged(left, false), tagged(right, true), at)?;
    let keys = (0..width)
        .map(|i| format!("`$c{i}`"))
        .collect::<Vec<_>>()
        .join(", ");
    let text = format!(
        "SELECT {keys}, COUNT(`$left`) AS `$lefts`, COUNT(`$right`) AS `$rights` FROM input GROUP BY {keys}"
    );
    let parsed =
        sqlparser::parser::Parser::parse_sql(&sqlparser::dialect::GenericDialect {}, &text)
            .map_err(|e| SqlError::Parse(format!("planning {what}: {e}")))?;
    let Some(sqlparser::ast::Statement::Query(query)) = parsed.first() else {
        return Err(SqlError::Parse(format!("planning {what}: not a query")));
    };
    let sqlparser::ast::SetExpr::Select(select) = &*query.body else {
        return Err(SqlError::Parse(format!("planning {what}: not a SELECT")));
    };
    let counted = plan_group_aggregate(both, select, settings)?;
    let stream = counted.stream.process(
        move |row: Row, _ctx: &mut ProcessContext<'_>, out: &mut Collector<'_, Row>| {
            let count = |i: usize| row.values.get(i).and_then(Value::as_i64).unwrap_or(0);
            let (lefts, rights) = (count(width), count(width + 1));
            let times = if except {
                lefts - rights
            } else {
                lefts.min(rights)
            };
            for _ in 0..times.max(0) {
                let mut values = Row::buffer(width);
                values.extend_from_slice(&row.values[..width]);
                out.collect(Row {
                    kind: row.kind,
                    values,
                });
            }
            Ok(())
        },
    );
    let mut steps = counted.steps;
    steps.push(format!(
        "Calc: each row {} times",
        if except {
            "(left count - right count)"
        } else {
            "min(left count, right count)"
        }
    ));
    Ok(Planned {
        stream,
        scope: output,
        rowtime: None,
        proctime: false,
        window: None,
        above_watermark: None,
        versions: None,
        updating: true,
        update_before: None,
        steps,
    })
}

/// How an unbounded aggregation keeps and updates its groups, as the
/// session's settings say.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct GroupSettings {
    /// How long a group's state lives after its last update
    /// (`table.exec.state.ttl`); for ever when `None`.
    pub ttl: Option<Duration>,
    /// With mini-batch, the most rows folded into one update of a group.
    pub mini_batch: Option<usize>,
}

/// `SELECT keys…, aggregates… FROM … GROUP BY keys…`.
pub(crate) fn plan_group_aggregate(
    input: Planned,
    select: &Select,
    settings: GroupSettings,
) -> Result<Planned, SqlError> {
    let ttl = settings.ttl;
    let at = position(select.span());
    let keys: Vec<Expr> = match &select.group_by {
        GroupByExpr::Expressions(exprs, _) => exprs.clone(),
        GroupByExpr::All(_) => return Err(SqlError::unsupported("GROUP BY ALL", at)),
    };
    let filter = where_filter(select, &input.scope)?;
    let aggregation = aggregation(&input.scope, &keys, select, &[])?;
    let scope = aggregation.output_scope(&[]);
    let update_before = UpdateBefore::default();
    // Grouped by the window of a window aggregation's (or window TVF's)
    // rows: a window aggregation over those windows (Flink's cascading
    // window aggregation), one result per window and group when the
    // watermark passes the window's end, not an updating GROUP BY.
    let carried = match input.window {
        Some([start, end]) if !input.updating && !input.proctime => {
            let key = |column: usize| {
                aggregation
                    .key_evals
                    .iter()
                    .position(|k| matches!(k.shape, crate::expr::Shape::Column(i) if i == column))
            };
            key(start).zip(key(end)).map(|(start, end)| [start, end])
        }
        _ => None,
    };
    let pre = pre_aggregate(
        input.stream,
        filter,
        &aggregation,
        input.scope.columns.len(),
    );
    let Aggregation {
        calls,
        items,
        having,
        ..
    } = aggregation;
    let key_of = pre.key_of();
    let grouped = keys
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    let aggregated = match carried {
        Some([start, end]) => {
            // Both window columns are keys: a result row is the key's
            // columns, then the aggregates', as a GROUP BY's is.
            let windows = CarriedWindows {
                start: pre.keys[start],
                end: pre.keys[end],
            };
            let emit = |key: &RowKey,
                        _ctx: &mut ProcessWindowContext<'_, TimeWindow>,
                        results: Elements<'_, Results>,
                        out: &mut Collector<'_, Row>|
             -> FunctionResult {
                for aggs in results {
                    let mut values = Row::buffer(key.len() + aggs.len());
                    values.extend_from_slice(key);
                    values.extend_from_slice(aggs);
                    out.collect(Row::insert(values));
                }
                Ok(())
            };
            let aggregates = SqlAggregates::new(pre.calls, false);
            let stream =
                crate::window::windowed(&pre.stream.key_by(key_of), windows, aggregates, emit);
            let what = format!(
                "WindowAggregate[windows of keys {start} and {end}; {grouped}; {}]",
                crate::aggregate::describe(&calls)
            );
            crate::plan::stateful(stream, &what)
        }
        None => {
            let function = GroupAggregate {
                aggregates: SqlAggregates::new(pre.calls, input.updating),
                ttl,
                state: None,
                inputs: InputRows::Local,
                update_before: update_before.clone(),
                makes_update_before: true,
                updates_alone: false,
                before: Row::insert(Vec::new()),
            };
            let what = format!(
                "GroupAggregate[{grouped}; {}]",
                crate::aggregate::describe(&calls)
            );
            // The same state either way: a savepoint taken with mini-batch
            // restores without it, and the other way round.
            let keyed = pre.stream.key_by(key_of);
            let stream = match settings.mini_batch {
                Some(size) => keyed.process_bundles(size, function),
                None => keyed.process(function),
            };
            crate::plan::stateful(stream, &what)
        }
    };
    let mut steps = input.steps;
    steps.push(match carried {
        Some(_) => format!(
            "WindowAggregate: the input's windows, group by [{grouped}], {} aggregate(s)",
            calls.len()
        ),
        None => format!(
            "GroupAggregate: group by [{grouped}], {} aggregate(s){}, changelog +I/-U/+U/-D{}{}",
            calls.len(),
            if input.updating { ", retracting" } else { "" },
            settings
                .mini_batch
                .map_or(String::new(), |n| format!(", mini-batch of up to {n} rows")),
            ttl.map_or(String::new(), |t| format!(
                ", state TTL {} ms",
                t.as_millis()
            ))
        ),
    });
    // A window aggregation's rows are inserts only: no switch.
    let update_before = carried.is_none().then_some(update_before);
    grouped_rows(
        aggregated,
        having,
        &items,
        &scope,
        carried,
        update_before,
        steps,
    )
}

/// An aggregation's result rows (`aggregated`, over `scope`) through its
/// `HAVING` and `SELECT` list (`items`), after its plan's `steps`; they
/// update unless they are results of the input's windows (`carried`).
/// The aggregation's `-U` switch goes on with them where no `HAVING`
/// reads its `-U` rows.
pub(crate) fn grouped_rows(
    aggregated: DataStream<Row>,
    having: Option<Expr>,
    items: &[sqlparser::ast::SelectItem],
    scope: &crate::expr::Scope,
    carried: Option<[usize; 2]>,
    update_before: Option<UpdateBefore>,
    mut steps: Vec<String>,
) -> Result<Planned, SqlError> {
    let update_before = update_before.filter(|_| having.is_none());
    let having = having
        .map(|h| crate::expr::compile(&h, scope))
        .transpose()?
        .map(|c| crate::expr::Condition::of(&c));
    let p = projection(items, scope)?;
    // The windows' columns, where the SELECT keeps both.
    let window = p.window(carried);
    let (output, out_scope) = (p.output, p.scope);
    let stream = filter_project(aggregated, having, output);
    steps.push(calc_step(&out_scope));
    Ok(Planned {
        stream,
        scope: out_scope,
        rowtime: None,
        proctime: false,
        window,
        above_watermark: None,
        versions: None,
        updating: carried.is_none(),
        update_before,
        steps,
    })
}

/// The window a row of a window aggregation (or window TVF) is in, read
/// from its `window_start` and `window_end` columns.
#[derive(Clone)]
struct CarriedWindows {
    start: usize,
    end: usize,
}

impl WindowAssigner<Row> for CarriedWindows {
    type W = TimeWindow;

    fn assign_windows(&self, row: &Row, _: i64, _: &AssignerContext, out: &mut Vec<TimeWindow>) {
        let bound = |i: usize| row.values.get(i).and_then(crate::value::Value::as_i64);
        if let (Some(start), Some(end)) = (bound(self.start), bound(self.end)) {
            out.push(TimeWindow::new(start, end));
        }
    }

    fn default_trigger(&self) -> Box<dyn Trigger<Row, TimeWindow>> {
        Box::new(EventTimeTrigger::create())
    }

    fn is_event_time(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::script::{parse_script, Statement};

    /// The changelog of `query` (a `SELECT` of `VALUES`), with its last
    /// aggregation's `-U` rows left out when `leave_out`, as an `INSERT`
    /// into a sink that reads none leaves them out.
    fn changelog(query: &str, mini_batch: Option<usize>, leave_out: bool) -> Vec<String> {
        let statements = parse_script(query).expect("parsed");
        let Some(Statement::Query { query }) = statements.first() else {
            panic!("not a query: {query}");
        };
        let env = StreamExecutionEnvironment::new();
        let mut catalog = crate::catalog::Catalog::default();
        catalog.mini_batch = mini_batch;
        let mut planned = crate::plan::plan(&env, &catalog, query).expect("planned");
        if leave_out {
            planned
                .update_before
                .take()
                .expect("an aggregation's results come with its switch")
                .leave_out();
        }
        let rows = planned.stream.execute_and_collect().expect("ran");
        rows.iter().map(ToString::to_string).collect()
    }

    /// Per g, the sum of the counts per (k, g): the inner aggregation's
    /// `-U` rows are read by the outer one, whose own are left out.
    const NESTED: &str = "SELECT g, SUM(c) AS s, COUNT(*) AS n FROM (
           SELECT k, g, COUNT(*) AS c
           FROM (VALUES ('a', 'x'), ('a', 'x'), ('b', 'x'), ('a', 'x')) AS t(k, g)
           GROUP BY k, g)
         GROUP BY g";

    /// Left out, an aggregation's updates are `+U` rows alone (its `+I`
    /// and `-D` rows as before, each update's values the same), as Flink's
    /// aggregations emit into a sink that reads no `UPDATE_BEFORE`; the
    /// aggregation before it still retracts its old results.
    #[test]
    fn left_out_an_aggregations_updates_are_their_new_results_alone() {
        let all = [
            "+I[x, 1, 1]",
            "-D[x, 1, 1]",
            "+I[x, 2, 1]",
            "-U[x, 2, 1]",
            "+U[x, 3, 2]",
            "-U[x, 3, 2]",
            "+U[x, 1, 1]",
            "-U[x, 1, 1]",
            "+U[x, 4, 2]",
        ];
        assert_eq!(changelog(NESTED, None, false), all);
        let without: Vec<&str> = all.into_iter().filter(|r| !r.starts_with("-U")).collect();
        assert_eq!(changelog(NESTED, None, true), without);
        // Without a COUNT(*), the result before a change is still made, to
        // tell whether it changed, but not emitted.
        let sums = NESTED.replace(", COUNT(*) AS n FROM (", " FROM (");
        let all = [
            "+I[x, 1]", "-D[x, 1]", "+I[x, 2]", "-U[x, 2]", "+U[x, 3]", "-U[x, 3]", "+U[x, 1]",
            "-U[x, 1]", "+U[x, 4]",
        ];
        assert_eq!(changelog(&sums, None, false), all);
        let without: Vec<&str> = all.into_iter().filter(|r| !r.starts_with("-U")).collect();
        assert_eq!(changelog(&sums, None, true), without);
    }

    /// With mini-batch, a bundle's one change of a group's result is its
    /// `+U` row alone too.
    #[test]
    fn left_out_a_bundles_updates_are_their_new_results_alone() {
        let query = "SELECT k, COUNT(*) AS c, MAX(v) AS m FROM (
               SELECT k, v FROM (VALUES ('a', 1), ('b', 5), ('a', 3)) AS t(k, v)
               UNION ALL
               SELECT k, v FROM (VALUES ('a', 7), ('b', 9)) AS u(k, v))
             GROUP BY k";
        // With a COUNT(*) and without one (the result before made, to
        // compare, but not emitted).
        for query in [query.to_string(), query.replace("COUNT(*) AS c, ", "")] {
            let made = changelog(&query, Some(1000), false);
            let left_out = changelog(&query, Some(1000), true);
            assert!(made.iter().any(|r| r.starts_with("-U")), "{made:?}");
            let mut expected: Vec<&String> = made.iter().filter(|r| !r.starts_with("-U")).collect();
            let mut got: Vec<&String> = left_out.iter().collect();
            expected.sort();
            got.sort();
            assert_eq!(got, expected);
        }
    }
}
