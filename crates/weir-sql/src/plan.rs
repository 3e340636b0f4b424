//! Queries planned into Weir operators: a table or view scan, then `WHERE`
//! and the `SELECT` list in one operator (Flink's `Calc`).

use sqlparser::ast::{
    Distinct, Expr, GroupByExpr, Join, JoinConstraint, JoinOperator, LimitClause, OrderBy,
    OrderByExpr, OrderByKind, Query, Select, SelectItem, SetExpr, SetOperator, SetQuantifier,
    Spanned, TableFactor, TableVersion, TableWithJoins,
};
use weir::prelude::*;

use crate::catalog::{Catalog, Relation};
use crate::connector;
use crate::error::{position, Position, SqlError};
use crate::expr::{compile, Condition, Eval, Scope, Truth};
use crate::value::{Row, Value};

/// A planned query: its rows and their columns, with what it does, step by
/// step (for `EXPLAIN`).
pub(crate) struct Planned {
    pub stream: DataStream<Row>,
    pub scope: Scope,
    /// The column that is the rows' event time (their time attribute), if
    /// any: a table's watermark column, kept by projections that select it.
    pub rowtime: Option<usize>,
    /// Whether that time attribute is processing time (a `PROCTIME()`
    /// column) rather than event time.
    pub proctime: bool,
    /// The `window_start` and `window_end` columns of an event-time window
    /// TVF's or window aggregation's rows, while a query keeps both.
    pub window: Option<[usize; 2]>,
    /// A column whose value, in every row still to come, is above the
    /// watermark the rows' reader has seen: an event-time window
    /// aggregation's `window_end` (or `window_time`), as each window's
    /// rows come when the watermark passes its end and late rows are
    /// dropped. A regular join drops the other side's rows that only rows
    /// at or below the watermark could still join.
    pub above_watermark: Option<usize>,
    /// Whether the rows are a changelog with retractions (`-U`/`-D`), as
    /// a `GROUP BY`'s results are; else they are inserts only.
    pub updating: bool,
    /// Whether the rows are a versioned table's, and by which key and
    /// time (what a temporal join looks versions up in).
    pub versions: Option<crate::temporal_join::Versions>,
    /// Where the rows are an unbounded aggregation's results, straight or
    /// through a projection: the switch that stops it making `-U` rows,
    /// for a reader of the rows that reads none. Any other operator after
    /// the aggregation reads its `-U` rows, and its rows come without one.
    pub update_before: Option<crate::group::UpdateBefore>,
    pub steps: Vec<String>,
}

fn pos(e: &impl Spanned) -> Position {
    position(e.span())
}

/// Plans a statement's `query` in `env`, with the session's functions.
pub(crate) fn plan(
    env: &StreamExecutionEnvironment,
    catalog: &Catalog,
    query: &Query,
) -> Result<Planned, SqlError> {
    UIDS.with_borrow_mut(std::collections::BTreeMap::clear);
    plan_next(env, catalog, query)
}

/// Plans another statement's `query` into the job `env` holds already
/// (a statement set's): its operators' uids follow those planned before.
pub(crate) fn plan_next(
    env: &StreamExecutionEnvironment,
    catalog: &Catalog,
    query: &Query,
) -> Result<Planned, SqlError> {
    crate::reuse::find_shared(query);
    catalog.start_statement();
    crate::function::with_functions(&catalog.functions, || plan_query(env, catalog, query))
}

thread_local! {
    /// The stateful operators of the statement being planned, by what
    /// they do: how many so far.
    static UIDS: std::cell::RefCell<std::collections::BTreeMap<String, usize>> =
        const { std::cell::RefCell::new(std::collections::BTreeMap::new()) };
}

/// The uid of a stateful operator that does `what` (its kind and the
/// parts of the query its state depends on): a hash of that, and which
/// such operator of the statement it is. Planning the same statement
/// again gives the same uids, so a savepoint restores into it; an
/// operator whose state would mean something else gets another uid, so
/// its old state is refused (or dropped with --allow-non-restored-state)
/// instead of misread.
pub(crate) fn state_uid(what: &str) -> String {
    let n = UIDS.with_borrow_mut(|uids| {
        let seen = uids.entry(what.to_string()).or_insert(0);
        *seen += 1;
        *seen - 1
    });
    // FNV-1a: stable across builds and platforms.
    let hash = what.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    if n == 0 {
        format!("sql-{hash:016x}")
    } else {
        format!("sql-{hash:016x}-{n}")
    }
}

/// `stream`'s operator, stateful, named and given its uid for `what`.
pub(crate) fn stateful(stream: DataStream<Row>, what: &str) -> DataStream<Row> {
    stream.name(what).uid(&state_uid(what))
}

/// A keyed value state named `name`, expiring after `ttl`
/// (`table.exec.state.ttl`) when one is set.
pub(crate) fn value_state<T: StateValue>(
    ctx: &RuntimeContext,
    name: &str,
    ttl: Option<std::time::Duration>,
) -> Result<ValueState<T>, StateError> {
    let mut descriptor = ValueStateDescriptor::new(name);
    if let Some(ttl) = ttl {
        descriptor = descriptor.enable_time_to_live(StateTtlConfig::new_builder(ttl).build());
    }
    ctx.get_state(&descriptor)
}

/// A keyed list state named `name`, expiring as [`value_state`]'s does.
pub(crate) fn list_state<T: StateValue>(
    ctx: &RuntimeContext,
    name: &str,
    ttl: Option<std::time::Duration>,
) -> Result<ListState<T>, StateError> {
    let mut descriptor = ListStateDescriptor::new(name);
    if let Some(ttl) = ttl {
        descriptor = descriptor.enable_time_to_live(StateTtlConfig::new_builder(ttl).build());
    }
    ctx.get_list_state(&descriptor)
}

/// Plans `query` in `env`.
pub(crate) fn plan_query(
    env: &StreamExecutionEnvironment,
    catalog: &Catalog,
    query: &Query,
) -> Result<Planned, SqlError> {
    let at = pos(query);
    if let Some(with) = &query.with {
        if with.recursive {
            return Err(SqlError::unsupported("WITH RECURSIVE", at));
        }
        let mut body = query.clone();
        body.with = None;
        return catalog.with_ctes(with, || plan_query(env, catalog, &body));
    }
    if query.fetch.is_some() {
        return Err(SqlError::unsupported("FETCH (write LIMIT)", at));
    }
    let limit = match &query.limit_clause {
        None => None,
        Some(LimitClause::LimitOffset {
            limit: Some(limit),
            offset: None,
            limit_by,
        }) if limit_by.is_empty() => {
            let n = match limit {
                Expr::Value(v) => match &v.value {
                    sqlparser::ast::Value::Number(n, _) => n.parse::<usize>().ok(),
                    _ => None,
                },
                _ => None,
            };
            Some(n.ok_or_else(|| {
                SqlError::validation(
                    format!("LIMIT takes a number of rows, not {limit}"),
                    pos(limit),
                )
            })?)
        }
        Some(other) => {
            return Err(SqlError::unsupported(
                other.to_string().trim().to_string(),
                pos(other),
            ))
        }
    };
    let order: &[OrderByExpr] = match &query.order_by {
        None => &[],
        Some(OrderBy {
            kind: OrderByKind::Expressions(exprs),
            ..
        }) => exprs,
        Some(other) => return Err(SqlError::unsupported(format!("{other}"), at)),
    };
    let body = plan_set_expr(env, catalog, &query.body, at)?;
    match limit {
        Some(n) => crate::rank::plan_sort_limit(body, order, n, at),
        None if order.is_empty() => Ok(body),
        None => crate::rank::plan_time_sort(body, order, at),
    }
}

fn plan_set_expr(
    env: &StreamExecutionEnvironment,
    catalog: &Catalog,
    body: &SetExpr,
    at: Position,
) -> Result<Planned, SqlError> {
    match body {
        SetExpr::Select(select) => plan_select(env, catalog, select),
        SetExpr::Query(inner) => plan_query(env, catalog, inner),
        SetExpr::Values(values) => {
            let rows: Vec<&[Expr]> = values.rows.iter().map(|r| r.content.as_slice()).collect();
            crate::values::plan_values(env, &rows, at)
        }
        SetExpr::SetOperation {
            left,
            op: SetOperator::Union,
            set_quantifier: SetQuantifier::All,
            right,
        } => union_all(
            plan_set_expr(env, catalog, left, at)?,
            plan_set_expr(env, catalog, right, at)?,
            at,
        ),
        // UNION is UNION ALL's distinct rows, as in Flink: a grouping by
        // every column, a row emitted the first time it is seen.
        SetExpr::SetOperation {
            left,
            op: SetOperator::Union,
            set_quantifier: SetQuantifier::None | SetQuantifier::Distinct,
            right,
        } => crate::group::distinct(
            union_all(
                plan_set_expr(env, catalog, left, at)?,
                plan_set_expr(env, catalog, right, at)?,
                at,
            )?,
            catalog.group_settings(),
        ),
        SetExpr::SetOperation {
            left,
            op: op @ (SetOperator::Intersect | SetOperator::Except | SetOperator::Minus),
            set_quantifier: SetQuantifier::None | SetQuantifier::Distinct,
            right,
        } => crate::semi_join::intersect_or_except(
            plan_set_expr(env, catalog, left, at)?,
            plan_set_expr(env, catalog, right, at)?,
            !matches!(op, SetOperator::Intersect),
            catalog,
            at,
        ),
        SetExpr::SetOperation {
            left,
            op: op @ (SetOperator::Intersect | SetOperator::Except | SetOperator::Minus),
            set_quantifier: SetQuantifier::All,
            right,
        } => crate::group::counted_set_operation(
            plan_set_expr(env, catalog, left, at)?,
            plan_set_expr(env, catalog, right, at)?,
            !matches!(op, SetOperator::Intersect),
            catalog.group_settings(),
            at,
        ),
        SetExpr::SetOperation {
            op, set_quantifier, ..
        } => Err(SqlError::unsupported(
            format!("{op} {set_quantifier} (UNION, INTERSECT and EXCEPT, ALL or not, are)")
                .trim_end()
                .replace("  ", " "),
            at,
        )),
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

pub(crate) fn plan_select(
    env: &StreamExecutionEnvironment,
    catalog: &Catalog,
    select: &Select,
) -> Result<Planned, SqlError> {
    let at = pos(select);
    if let Some(ranked) = crate::rank::plan_ranked(env, catalog, select)? {
        return Ok(ranked);
    }
    if crate::over::has_over(select) {
        return crate::over::plan_over(env, catalog, select);
    }
    match &select.distinct {
        None | Some(Distinct::All) => {}
        // SELECT DISTINCT a, b is SELECT a, b … GROUP BY a, b: a row is
        // emitted the first time its values are seen.
        Some(Distinct::Distinct) => {
            let has_groups =
                !matches!(&select.group_by, GroupByExpr::Expressions(e, _) if e.is_empty());
            let mut keys = Vec::new();
            for item in &select.projection {
                match item {
                    SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. }
                        if !crate::window::contains_aggregate(e) && !has_groups =>
                    {
                        keys.push(e.clone())
                    }
                    SelectItem::UnnamedExpr(_) | SelectItem::ExprWithAlias { .. } => {
                        return Err(SqlError::unsupported(
                            "SELECT DISTINCT with GROUP BY or aggregates",
                            at,
                        ))
                    }
                    other => {
                        return Err(SqlError::unsupported(
                            format!("SELECT DISTINCT {other} (name the columns)"),
                            at,
                        ))
                    }
                }
            }
            let mut grouped = select.clone();
            grouped.distinct = None;
            grouped.group_by = GroupByExpr::Expressions(keys, Vec::new());
            return plan_select(env, catalog, &grouped);
        }
        Some(Distinct::On(_)) => return Err(SqlError::unsupported("SELECT DISTINCT ON", at)),
    }
    if crate::grouping_sets::has_grouping_sets(select) {
        return crate::grouping_sets::plan(env, catalog, select);
    }
    let grouped = match &select.group_by {
        GroupByExpr::Expressions(exprs, modifiers) => {
            if !modifiers.is_empty() {
                return Err(SqlError::unsupported("GROUP BY modifiers", at));
            }
            !exprs.is_empty()
        }
        GroupByExpr::All(_) => return Err(SqlError::unsupported("GROUP BY ALL", at)),
    } || select.projection.iter().any(|item| match item {
        SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
            crate::window::contains_aggregate(e)
        }
        _ => false,
    });
    if grouped && reads_watermark(select) {
        return Err(SqlError::unsupported(
            "CURRENT_WATERMARK in an aggregation (it is in a WHERE or SELECT list without one)",
            at,
        ));
    }
    if let Some(split) = crate::semi_join::subquery_conjuncts(select.selection.as_ref()) {
        return crate::semi_join::plan_select_with_subqueries(env, catalog, select, split, grouped);
    }
    let from = match select.from.as_slice() {
        [] => {
            let input = crate::values::one_row(env, at)?;
            return if grouped {
                crate::group::plan_group_aggregate(input, select, catalog.group_settings())
            } else {
                calc(input, select)
            };
        }
        [from] => {
            if let Some(join) = from.joins.first() {
                if from.joins.len() > 1 {
                    return plan_join_chain(env, catalog, from, select, grouped);
                }
                if let Some(versioned) = versioned_join(env, catalog, join)? {
                    let left = plan_relation(env, catalog, &from.relation)?;
                    let left_name = crate::join::qualifier(&from.relation);
                    let joined = versioned(left, left_name)?;
                    return if grouped {
                        crate::group::plan_group_aggregate(joined, select, catalog.group_settings())
                    } else {
                        calc(joined, select)
                    };
                }
                let rewritten = crate::extremum_join::plan(
                    env,
                    catalog,
                    &from.relation,
                    join,
                    select.selection.as_ref(),
                )?;
                let joined = match rewritten {
                    Some(joined) => joined,
                    None => {
                        let (left, right, columns) =
                            plan_join_sides(env, catalog, &from.relation, join, select, grouped)?;
                        let parts = crate::join::plan_join_parts(
                            left,
                            crate::join::qualifier(&from.relation),
                            right,
                            join,
                            select.selection.as_ref(),
                            catalog.state_ttl,
                            columns,
                        )?;
                        match parts {
                            crate::join::JoinParts::Planned(joined) => *joined,
                            crate::join::JoinParts::Regular(regular) if grouped => {
                                return crate::join_aggregate::plan(
                                    *regular,
                                    select,
                                    catalog.group_settings(),
                                );
                            }
                            crate::join::JoinParts::Regular(regular) => regular.finish(),
                        }
                    }
                };
                if grouped {
                    return crate::group::plan_group_aggregate(
                        joined,
                        select,
                        catalog.group_settings(),
                    );
                }
                return calc(joined, select);
            }
            &from.relation
        }
        // `FROM a, b WHERE …` is `a JOIN b ON …` (the join takes the
        // equalities between the sides as its key, the rest per pair).
        [first, second] if first.joins.is_empty() && second.joins.is_empty() => {
            let Some(on) = select.selection.clone() else {
                return Err(SqlError::unsupported(
                    "a cross join (FROM a, b without WHERE)",
                    pos(second),
                ));
            };
            let mut joined = select.clone();
            joined.selection = None;
            joined.from = vec![TableWithJoins {
                relation: first.relation.clone(),
                joins: vec![Join {
                    relation: second.relation.clone(),
                    global: false,
                    join_operator: JoinOperator::Inner(JoinConstraint::On(on)),
                }],
            }];
            return plan_select(env, catalog, &joined);
        }
        tables if tables.iter().all(|t| t.joins.is_empty()) => {
            return plan_select(env, catalog, &comma_joins(catalog, select, tables)?);
        }
        [_, second, ..] => {
            return Err(SqlError::unsupported(
                "FROM with joins after a comma",
                pos(second),
            ))
        }
    };
    if let TableFactor::TableFunction { expr, .. } = from {
        let tvf = crate::window::WindowTvf::parse(expr)?;
        if grouped {
            // A window aggregation the statement computes again is read
            // from where it was planned first; its input is not planned
            // twice.
            if let Some(reused) = crate::window::reuse_window_aggregate(select)? {
                return Ok(reused);
            }
        }
        let needed = if grouped {
            window_columns_read(catalog, &tvf, select)?
        } else {
            None
        };
        let cut = match (grouped, catalog.cte(&tvf.table), catalog.get(&tvf.table)) {
            (true, None, Some(Relation::View(view))) => view_cut_to(catalog, view, select),
            _ => None,
        };
        let input = match cut {
            Some(view) => plan_query(env, catalog, &view)?,
            None => plan_table_reading(env, catalog, &tvf.table, tvf.at, needed.as_deref())?,
        };
        return if grouped {
            crate::window::plan_window_aggregate(input, &tvf, select)
        } else {
            let windowed = crate::window::plan_window_tvf(input, &tvf)?;
            calc(windowed, select)
        };
    }
    if !grouped && select.having.is_some() {
        return Err(SqlError::unsupported("HAVING without GROUP BY", at));
    }
    let needed = needed_columns(catalog, from, select, grouped)?;
    let input = match (from, &needed) {
        (
            TableFactor::Table {
                name,
                args: None,
                version: None,
                ..
            },
            Some(needed),
        ) => read_table(env, catalog, &name.to_string(), at, Some(needed))?,
        _ => Read::View(plan_relation(env, catalog, from)?),
    };
    match input {
        Read::Table(scan, rows) if !grouped => calc_then(rows, select, |calc| match calc {
            Some(calc) if calc.reads_watermark => calc_stream(&scan.rows.stream(), calc),
            // The calc runs in the operator that stamps the scan's rows.
            Some(calc) => scan.rows.with_calc(calc),
            None => scan.rows.stream(),
        }),
        Read::Table(scan, rows) => {
            let input = rows.finish(scan.rows.stream());
            crate::group::plan_group_aggregate(input, select, catalog.group_settings())
        }
        Read::View(input) if grouped => {
            crate::group::plan_group_aggregate(input, select, catalog.group_settings())
        }
        Read::View(input) => calc(input, select),
    }
}

/// A join of a versioned relation, `left JOIN r FOR SYSTEM_TIME AS OF
/// …`, if `join` is one: what plans it, given the left side and its name
/// (a temporal join by the left rows' event time, a lookup join by their
/// processing time).
#[allow(clippy::type_complexity)]
fn versioned_join<'a>(
    env: &'a StreamExecutionEnvironment,
    catalog: &'a Catalog,
    join: &'a Join,
) -> Result<Option<Box<dyn FnOnce(Planned, String) -> Result<Planned, SqlError> + 'a>>, SqlError> {
    let TableFactor::Table {
        name,
        args: None,
        version: Some(version),
        ..
    } = &join.relation
    else {
        return Ok(None);
    };
    let TableVersion::ForSystemTimeAsOf(as_of) = version else {
        return Err(SqlError::unsupported(
            format!("{version} (FOR SYSTEM_TIME AS OF is)"),
            pos(&join.relation),
        ));
    };
    Ok(Some(Box::new(move |left: Planned, left_name: String| {
        let by_processing_time = left.proctime
            && crate::join::column_index(as_of, &crate::join::side_scope(&left.scope, &left_name))
                == left.rowtime;
        if by_processing_time {
            lookup_join(catalog, left, left_name, name, join)
        } else {
            // Read whole: a temporal join keeps only the versions and the
            // left rows still to come.
            let right = plan_table_name(env, catalog, &name.to_string(), pos(name))?;
            crate::temporal_join::plan_temporal_join(
                left,
                left_name,
                right,
                join,
                as_of,
                catalog.state_ttl,
            )
        }
    })))
}

/// `FROM a, b, c WHERE …` (three tables or more) as `FROM a JOIN b ON …
/// JOIN c ON …`: each `WHERE` condition goes to the first join after
/// which every name in it resolves. The relations must be tables (their
/// columns known before they are planned).
fn comma_joins(
    catalog: &Catalog,
    select: &Select,
    tables: &[TableWithJoins],
) -> Result<Select, SqlError> {
    let mut scope = Scope::default();
    let mut scopes = Vec::new();
    for t in tables {
        let table = match &t.relation {
            TableFactor::Table {
                name, args: None, ..
            } => catalog.table(&name.to_string()),
            _ => None,
        };
        let Some(table) = table else {
            return Err(SqlError::unsupported(
                "FROM a, b, c … of other relations than tables (JOIN … ON is)",
                pos(&t.relation),
            ));
        };
        let columns = connector::table_rows(table)?.scope.columns;
        scope = crate::join::side_by_side(
            &scope,
            &crate::join::qualified(&columns, &crate::join::qualifier(&t.relation)),
        );
        scopes.push(scope.clone());
    }
    let mut ons: Vec<Vec<Expr>> = vec![Vec::new(); tables.len()];
    for c in select
        .selection
        .as_ref()
        .map(crate::join::conjuncts)
        .unwrap_or_default()
    {
        // Checked over all the tables first (unknown or ambiguous names).
        compile(c, &scope)?;
        let first = scopes
            .iter()
            .position(|s| compile(c, s).is_ok())
            .unwrap_or(tables.len() - 1);
        ons[first.max(1)].push(c.clone());
    }
    let and = |a: Expr, b: Expr| Expr::BinaryOp {
        left: Box::new(a),
        op: sqlparser::ast::BinaryOperator::And,
        right: Box::new(b),
    };
    let mut joins = Vec::new();
    for (t, on) in tables[1..].iter().zip(ons.into_iter().skip(1)) {
        let Some(on) = on.into_iter().reduce(and) else {
            return Err(SqlError::unsupported(
                "a cross join (no condition of the WHERE joins this table to the ones before it)",
                pos(&t.relation),
            ));
        };
        joins.push(Join {
            relation: t.relation.clone(),
            global: false,
            join_operator: JoinOperator::Inner(JoinConstraint::On(on)),
        });
    }
    let mut joined = select.clone();
    joined.selection = None;
    joined.from = vec![TableWithJoins {
        relation: tables[0].relation.clone(),
        joins,
    }];
    Ok(joined)
}

/// `FROM a JOIN b ON … JOIN c ON …`: joined left to right, each join's
/// left side the joins before it (its columns still named by their
/// relations); the `WHERE` pushed down at the last join (and applied
/// after it), then the `SELECT` list or the aggregation.
fn plan_join_chain(
    env: &StreamExecutionEnvironment,
    catalog: &Catalog,
    from: &TableWithJoins,
    select: &Select,
    grouped: bool,
) -> Result<Planned, SqlError> {
    let joined = plan_joins(env, catalog, from, select.selection.as_ref())?;
    if grouped {
        crate::group::plan_group_aggregate(joined, select, catalog.group_settings())
    } else {
        calc(joined, select)
    }
}

/// The rows of `from`'s relation joined with each of its joins, left to
/// right, every column named by its relation (`filter`, the `WHERE`
/// applied after, pushed down at the last join where it can be).
pub(crate) fn plan_joins(
    env: &StreamExecutionEnvironment,
    catalog: &Catalog,
    from: &TableWithJoins,
    filter: Option<&Expr>,
) -> Result<Planned, SqlError> {
    let mut left = plan_relation(env, catalog, &from.relation)?;
    let mut left_name = crate::join::qualifier(&from.relation);
    let last = from.joins.len().saturating_sub(1);
    for (i, join) in from.joins.iter().enumerate() {
        left = match versioned_join(env, catalog, join)? {
            Some(versioned) => versioned(left, left_name)?,
            None => {
                let right = plan_relation(env, catalog, &join.relation)?;
                let filter = if i == last { filter } else { None };
                crate::join::plan_join(
                    left,
                    left_name,
                    right,
                    join,
                    filter,
                    catalog.state_ttl,
                    crate::join::JoinColumns::default(),
                )?
            }
        };
        // Its columns keep their relations' names.
        left_name = String::new();
    }
    if !left_name.is_empty() {
        left.scope = crate::join::side_scope(&left.scope, &left_name);
    }
    Ok(left)
}

/// `left JOIN name FOR SYSTEM_TIME AS OF <left's processing time>`: the
/// rows of the table `name` looked up as each left row comes.
fn lookup_join(
    catalog: &Catalog,
    left: Planned,
    left_name: String,
    name: &sqlparser::ast::ObjectName,
    join: &Join,
) -> Result<Planned, SqlError> {
    let Some(table) = catalog.table(&name.to_string()) else {
        return Err(SqlError::validation(
            format!(
                "a processing-time temporal join looks rows up in a lookup source, a 'jdbc' \
                 or 'postgres' table; `{name}` is not a table"
            ),
            pos(name),
        ));
    };
    #[cfg(feature = "postgres")]
    return crate::lookup_join::plan_lookup_join(left, left_name, table, join);
    #[cfg(not(feature = "postgres"))]
    {
        let _ = (left, left_name, join);
        Err(connector::not_built(table, "postgres"))
    }
}

/// The two sides of `join` (after `first`) under `select`, which of the
/// joined columns the statement reads above the join (the join keeps and
/// joins only those and its `ON`'s), and whether a side's scan already
/// left out columns of its table that nothing reads.
fn plan_join_sides(
    env: &StreamExecutionEnvironment,
    catalog: &Catalog,
    first: &TableFactor,
    join: &Join,
    select: &Select,
    grouped: bool,
) -> Result<(Planned, Planned, crate::join::JoinColumns), SqlError> {
    let second = &join.relation;
    let names = [first, second].map(crate::join::qualifier);
    let side_by_side = |left: &Scope, right: &Scope| {
        crate::join::side_by_side(
            &crate::join::qualified(&left.columns, &names[0]),
            &crate::join::qualified(&right.columns, &names[1]),
        )
    };
    let table = |r: &TableFactor| match r {
        TableFactor::Table {
            name, args: None, ..
        } => catalog
            .table(&name.to_string())
            .map(|t| (name.to_string(), t)),
        _ => None,
    };
    let (Some((left_table, l)), Some((right_table, r))) = (table(first), table(second)) else {
        // Planned in order (their sources' uids follow that order), and
        // read whole.
        let left = plan_relation(env, catalog, first)?;
        let right = plan_relation(env, catalog, second)?;
        let named = columns_named(&side_by_side(&left.scope, &right.scope), select, grouped)?;
        let columns = crate::join::JoinColumns {
            named,
            scanned_fewer: false,
        };
        return Ok((left, right, columns));
    };
    // Two tables' columns are known without planning them: each is
    // scanned for what the statement names above the join or in its ON
    // (whose mistakes are named here, over all the tables' columns).
    let scopes = [
        connector::table_rows(l)?.scope,
        connector::table_rows(r)?.scope,
    ];
    let joined = side_by_side(&scopes[0], &scopes[1]);
    let on = joined.tracking();
    for c in crate::join::on_clause(join).map_or_else(Vec::new, crate::join::conjuncts) {
        compile(c, &on)?;
    }
    let named = columns_named(&joined, select, grouped)?;
    let read = named.as_ref().map(|named| {
        let used: Vec<bool> = (on.used_columns().iter().zip(named))
            .map(|(on, above)| *on || *above)
            .collect();
        let width = scopes[0].columns.len();
        let (left, right) = used.split_at(width);
        // A table on both sides is read once, with what either side reads.
        if left_table.eq_ignore_ascii_case(&right_table) {
            let both: Vec<bool> = left.iter().zip(right).map(|(l, r)| *l || *r).collect();
            [both.clone(), both]
        } else {
            [left.to_vec(), right.to_vec()]
        }
    });
    let needed = |side: usize| read.as_ref().map(|r| r[side].as_slice());
    let left = plan_table_reading(env, catalog, &left_table, pos(first), needed(0))?;
    let right = plan_table_reading(env, catalog, &right_table, pos(second), needed(1))?;
    let scanned_fewer = left.scope.columns.len() < scopes[0].columns.len()
        || right.scope.columns.len() < scopes[1].columns.len();
    // A scan that left columns out: what is named, over the columns kept.
    let named = if scanned_fewer {
        columns_named(&side_by_side(&left.scope, &right.scope), select, grouped)?
    } else {
        named
    };
    let columns = crate::join::JoinColumns {
        named,
        scanned_fewer,
    };
    Ok((left, right, columns))
}

/// For a query straight over a table: which of its columns the query
/// names (compiling its expressions once more, recording the columns).
fn needed_columns(
    catalog: &Catalog,
    from: &TableFactor,
    select: &Select,
    grouped: bool,
) -> Result<Option<Vec<bool>>, SqlError> {
    let TableFactor::Table {
        name, args: None, ..
    } = from
    else {
        return Ok(None);
    };
    let Some(table) = catalog.table(&name.to_string()) else {
        return Ok(None);
    };
    columns_named(&connector::table_rows(table)?.scope, select, grouped)
}

/// For a window aggregation over a table: which of its columns it reads
/// (its `WHERE`, keys, arguments and `FILTER`s, and the time column).
/// Errors are the ones planning the statement would report.
fn window_columns_read(
    catalog: &Catalog,
    tvf: &crate::window::WindowTvf,
    select: &Select,
) -> Result<Option<Vec<bool>>, SqlError> {
    let Some(table) = catalog.table(&tvf.table) else {
        return Ok(None);
    };
    let GroupByExpr::Expressions(group_by, _) = &select.group_by else {
        return Ok(None);
    };
    let columns = connector::table_rows(table)?.scope;
    let scope = columns.tracking();
    crate::window::where_filter(select, &scope)?;
    let keys = crate::window::group_keys(group_by);
    crate::window::aggregation(&scope, &keys, select, crate::window::WINDOW_COLUMNS)?;
    let mut read = scope.used_columns();
    read[columns.index(&tvf.time_column, tvf.at)?] = true;
    Ok(Some(read))
}

/// For a window aggregation `select` over a view of one table (Nexmark
/// q12's `CREATE VIEW B AS SELECT *, PROCTIME() AS p_time FROM bid`): the
/// view with its `SELECT` list cut to the columns `select` may name, so
/// that its projection builds no column the aggregation does not read (a
/// table's scan is cut the same way, by [`window_columns_read`]). The
/// columns kept are those whose names are words of `select`'s text: more
/// than it reads, never fewer. `None`, and the view planned whole, unless
/// it is a plain `SELECT` of columns and named expressions (and `*`) from
/// one table, and its columns' names are plain words.
fn view_cut_to(catalog: &Catalog, view: &Query, select: &Select) -> Option<Query> {
    let plain_query = view.with.is_none()
        && view.order_by.is_none()
        && view.limit_clause.is_none()
        && view.fetch.is_none();
    let SetExpr::Select(body) = &*view.body else {
        return None;
    };
    let plain_select = body.distinct.is_none()
        && body.top.is_none()
        && body.into.is_none()
        && body.lateral_views.is_empty()
        && matches!(&body.group_by, GroupByExpr::Expressions(keys, _) if keys.is_empty())
        && body.having.is_none()
        && body.named_window.is_empty()
        && body.qualify.is_none();
    let [TableWithJoins { relation, joins }] = &body.from[..] else {
        return None;
    };
    let TableFactor::Table {
        name, args: None, ..
    } = relation
    else {
        return None;
    };
    if !plain_query || !plain_select || !joins.is_empty() {
        return None;
    }
    let table = catalog.table(&name.to_string())?;
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '$';
    let named: std::collections::HashSet<String> = select
        .to_string()
        .split(|c: char| !word(c))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let mut kept = Vec::new();
    let mut keep = |name: &str, item: SelectItem| -> Option<()> {
        if name.is_empty() || !name.chars().all(word) {
            return None;
        }
        if named.contains(&name.to_lowercase()) {
            kept.push(item);
        }
        Some(())
    };
    for item in &body.projection {
        match item {
            SelectItem::Wildcard(options)
                if options.opt_ilike.is_none()
                    && options.opt_exclude.is_none()
                    && options.opt_except.is_none()
                    && options.opt_replace.is_none()
                    && options.opt_rename.is_none()
                    && options.opt_alias.is_none() =>
            {
                let columns = connector::table_rows(table).ok()?.scope.columns;
                for (column, _) in &columns {
                    let ident = sqlparser::ast::Ident::with_quote('`', column.as_str());
                    keep(column, SelectItem::UnnamedExpr(Expr::Identifier(ident)))?;
                }
            }
            SelectItem::UnnamedExpr(Expr::Identifier(id)) => keep(&id.value, item.clone())?,
            SelectItem::ExprWithAlias { alias, .. } => keep(&alias.value, item.clone())?,
            _ => return None,
        }
    }
    if kept.is_empty() {
        return None;
    }
    let mut cut = body.clone();
    cut.projection = kept;
    let mut query = view.clone();
    query.body = Box::new(SetExpr::Select(cut));
    Some(query)
}

/// Which of `input`'s columns `select` names in its `WHERE` and its
/// `SELECT` list (or, `grouped`, its keys, aggregates and `HAVING`), by
/// compiling them once more; `None` when that is not known (`GROUP BY
/// ALL`). Errors are the ones planning the statement would report.
pub(crate) fn columns_named(
    input: &Scope,
    select: &Select,
    grouped: bool,
) -> Result<Option<Vec<bool>>, SqlError> {
    let scope = input.tracking();
    crate::window::where_filter(select, &scope)?;
    if grouped {
        let keys = match &select.group_by {
            GroupByExpr::Expressions(exprs, _) => exprs.clone(),
            GroupByExpr::All(_) => return Ok(None),
        };
        crate::window::aggregation(&scope, &keys, select, &[])?;
    } else {
        projection(&select.projection, &scope)?;
    }
    Ok(Some(scope.used_columns()))
}

/// `UNION ALL`: both inputs' rows, which must have the same number of
/// columns with the same types; the names are the left input's (as in
/// Flink). The time attribute stays only where both inputs have it.
pub(crate) fn union_all(left: Planned, right: Planned, at: Position) -> Result<Planned, SqlError> {
    let (left, right) = set_operands(left, right, "UNION ALL", at)?;
    let mut steps = left.steps;
    steps.extend(right.steps);
    steps.push("Union: all".into());
    Ok(Planned {
        stream: left.stream.union(&[right.stream]),
        rowtime: left
            .rowtime
            .filter(|r| right.rowtime == Some(*r) && left.proctime == right.proctime),
        proctime: left.proctime,
        window: left.window.filter(|w| right.window == Some(*w)),
        above_watermark: left
            .above_watermark
            .filter(|c| right.above_watermark == Some(*c)),
        updating: left.updating || right.updating,
        versions: None,
        scope: left.scope,
        update_before: None,
        steps,
    })
}

/// The two sides of a set operation `what` (`UNION ALL`, `INTERSECT`, …)
/// with columns of one type each: each column's values cast to the
/// least restrictive type of the two sides' (an INT and a BIGINT column
/// are BIGINT), as Flink casts them.
pub(crate) fn set_operands(
    left: Planned,
    right: Planned,
    what: &str,
    at: Position,
) -> Result<(Planned, Planned), SqlError> {
    let types = |p: &Planned| p.scope.columns.iter().map(|(_, t)| *t).collect::<Vec<_>>();
    let (l, r) = (types(&left), types(&right));
    let common: Option<Vec<crate::types::SqlType>> = (l.len() == r.len())
        .then(|| {
            l.iter()
                .zip(&r)
                .map(|(a, b)| crate::expr::least_restrictive(*a, *b))
                .collect()
        })
        .flatten();
    let Some(common) = common else {
        let show = |types: &[crate::types::SqlType]| {
            types
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        return Err(SqlError::validation(
            format!(
                "{what} of different columns: ({}) and ({})",
                show(&l),
                show(&r)
            ),
            at,
        ));
    };
    Ok((cast_columns(left, &common), cast_columns(right, &common)))
}

/// `planned` with its columns' values cast to `types`, where they differ.
fn cast_columns(mut planned: Planned, types: &[crate::types::SqlType]) -> Planned {
    let casts: Vec<(usize, crate::types::SqlType, crate::types::SqlType)> = (planned.scope.columns)
        .iter()
        .zip(types)
        .enumerate()
        .filter(|(_, ((_, from), to))| from != *to)
        .map(|(i, ((_, from), to))| (i, *from, *to))
        .collect();
    if casts.is_empty() {
        return planned;
    }
    for (i, _, to) in &casts {
        planned.scope.columns[*i].1 = *to;
    }
    planned.steps.push(format!(
        "Calc: cast {}",
        casts
            .iter()
            .map(|(i, _, to)| format!("{} AS {to}", planned.scope.columns[*i].0))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    planned.stream = planned.stream.process(
        move |mut row: Row, _ctx: &mut ProcessContext<'_>, out: &mut Collector<'_, Row>| {
            for (i, from, to) in &casts {
                let v = std::mem::replace(&mut row.values[*i], Value::Null);
                row.values[*i] = crate::expr::cast(v, *from, *to)?;
            }
            out.collect(row);
            Ok(())
        },
    );
    planned
}

/// `WHERE` and the `SELECT` list over `input`, in one operator.
pub(crate) fn calc(input: Planned, select: &Select) -> Result<Planned, SqlError> {
    let (stream, rows) = Unfinished::of(input);
    calc_then(rows, select, |calc| match calc {
        None => stream,
        Some(calc) => calc_stream(&stream, calc),
    })
}

/// A relation's description before its stream is made.
pub(crate) struct Unfinished {
    pub scope: Scope,
    pub rowtime: Option<usize>,
    pub proctime: bool,
    window: Option<[usize; 2]>,
    above_watermark: Option<usize>,
    pub updating: bool,
    versions: Option<crate::temporal_join::Versions>,
    pub steps: Vec<String>,
}

/// `WHERE` and the `SELECT` list over `input`, whose stream `stream` makes
/// with the calc (`None`: the rows as they are).
fn calc_then(
    input: Unfinished,
    select: &Select,
    stream: impl FnOnce(Option<Calc>) -> DataStream<Row>,
) -> Result<Planned, SqlError> {
    let mut steps = input.steps;
    let reads_watermark = reads_watermark(select);
    // Compiled over a scope that records which columns the `WHERE` reads,
    // so that a scan that can read them apart filters before it makes a
    // row.
    let tracked = input.scope.tracking();
    let filter = crate::window::where_filter(select, &tracked)?;
    if let Some(e) = &select.selection {
        steps.push(format!("Calc: where {e}"));
    }
    let p = projection(&select.projection, &input.scope)?;
    let (rowtime, proctime) = p.time(input.rowtime, input.proctime);
    let window = p.window(input.window);
    let above_watermark = input.above_watermark.and_then(|c| p.carried(c));
    let versions = input.versions.and_then(|v| v.carried(|c| p.carried(c)));
    let scope = p.scope;
    steps.push(calc_step(&scope));
    Ok(Planned {
        stream: stream(calc_of(filter, p.output).map(|c| Calc {
            reads_watermark,
            ..c.filter_reads(tracked.used_columns())
        })),
        scope,
        rowtime,
        proctime,
        window,
        above_watermark,
        updating: input.updating,
        versions,
        update_before: None,
        steps,
    })
}

/// The `EXPLAIN` line of a projection to `scope`'s columns.
pub(crate) fn calc_step(scope: &Scope) -> String {
    let names: Vec<&str> = scope.columns.iter().map(|(n, _)| n.as_str()).collect();
    format!("Calc: select {}", names.join(", "))
}

/// Keeps the rows `filter` is TRUE for and computes `output` of them
/// (`None`: the row as it is), keeping each row's changelog kind.
pub(crate) fn filter_project(
    stream: DataStream<Row>,
    filter: Option<Condition>,
    output: Option<Output>,
) -> DataStream<Row> {
    match calc_of(filter, output) {
        None => stream,
        Some(calc) => calc_stream(&stream, calc),
    }
}

/// Whether `select` calls `CURRENT_WATERMARK`.
pub(crate) fn reads_watermark(select: &Select) -> bool {
    select
        .to_string()
        .to_ascii_uppercase()
        .contains("CURRENT_WATERMARK")
}

/// The rows `calc` keeps, as it changes them.
pub(crate) fn calc_stream(stream: &DataStream<Row>, calc: Calc) -> DataStream<Row> {
    if calc.reads_watermark {
        return stream.process(
            move |mut row: Row, ctx: &mut ProcessContext<'_>, out: &mut Collector<'_, Row>| {
                let watermark = ctx.timer_service().current_watermark();
                let kept = crate::expr::with_calc_watermark(watermark, || calc.apply(&mut row))?;
                if kept {
                    out.collect_moved(row);
                }
                Ok(())
            },
        );
    }
    stream.process(
        move |mut row: Row, _ctx: &mut ProcessContext<'_>, out: &mut Collector<'_, Row>| {
            if calc.apply(&mut row)? {
                // Rewritten by a call: copied on a word at a time.
                out.collect_moved(row);
            }
            Ok(())
        },
    )
}

/// A `WHERE` (`filter`) and `SELECT` list (`output`) as one step: `None`
/// if together they keep every row as it is.
pub(crate) fn calc_of(filter: Option<Condition>, output: Option<Output>) -> Option<Calc> {
    if filter.is_none() && output.is_none() {
        return None;
    }
    Some(Calc {
        filter: filter.map(|condition| Filter {
            condition,
            reads: None,
        }),
        output,
        reads_watermark: false,
    })
}

/// A `WHERE` and a `SELECT` list as one step over a row: whether to keep
/// it, after changing it in place into the row the `SELECT` makes.
#[derive(Clone)]
pub(crate) struct Calc {
    filter: Option<Filter>,
    output: Option<Output>,
    /// Whether it calls `CURRENT_WATERMARK`: then it runs in an operator
    /// of its own after the scan, which tells it the watermark.
    pub reads_watermark: bool,
}

/// A `WHERE` and the input columns it reads, where they are known.
#[derive(Clone)]
pub(crate) struct Filter {
    pub condition: Condition,
    pub reads: Option<Vec<bool>>,
}

impl Filter {
    /// Whether `values` pass: the `WHERE` is TRUE (not FALSE or NULL).
    #[inline]
    pub fn passes(&self, values: &[Value]) -> Result<bool, String> {
        self.condition.passes(values)
    }
}

impl Calc {
    /// Whether to keep `row`, changed into the `SELECT`'s row if kept.
    #[inline(always)]
    pub fn apply(&self, row: &mut Row) -> Result<bool, String> {
        if let Some(f) = &self.filter {
            if !f.passes(&row.values)? {
                return Ok(false);
            }
        }
        self.project(row)?;
        Ok(true)
    }

    /// `row` changed into the `SELECT`'s row, the `WHERE` already passed.
    #[inline]
    pub fn project(&self, row: &mut Row) -> Result<(), String> {
        match &self.output {
            Some(o) => o.apply(row),
            None => Ok(()),
        }
    }

    /// The `WHERE`, if there is one.
    pub fn filter(&self) -> Option<&Filter> {
        self.filter.as_ref()
    }

    /// The same step, its `WHERE` known to read the input columns `reads`
    /// marks.
    fn filter_reads(mut self, reads: Vec<bool>) -> Calc {
        if let Some(f) = &mut self.filter {
            f.reads = Some(reads);
        }
        self
    }
}

/// How a `SELECT` list makes its row from the input row: the computed
/// items evaluated over it, then the columns it only copies moved out of
/// it (cloned only where a column is copied more than once), since the
/// input row is dropped right after.
#[derive(Clone)]
pub(crate) struct Output {
    width: usize,
    /// Output slot and expression.
    computed: Vec<(usize, Eval)>,
    /// For each computed item that is a condition, its test: the builds
    /// write its BOOLEAN from the truth, never copying a value returned
    /// through memory (see [`crate::expr::SlotEval`]).
    tests: Vec<Option<crate::expr::Test>>,
    /// Output slot, input column, and whether this is the column's last
    /// copy (so it can be moved).
    copied: Vec<(usize, usize, bool)>,
    /// Whether the output can be built in the input row's own buffer by
    /// swaps: each copied column is copied once and to a slot at or
    /// before its own, in the input's order (so swapping each into place,
    /// in slot order, never disturbs a column still to be copied), and
    /// the computed values are few enough to be held aside meanwhile.
    swaps: bool,
    /// When the output is input columns, each copied once, and constants:
    /// the constants (slot, value), written after the swaps.
    permuted: Option<Vec<(usize, Value)>>,
    /// The swaps of a swapping or permuting build that move something
    /// (slot, position): a column already in its slot stays where it is.
    moves: Vec<(usize, usize)>,
    /// A swapping build's one computed value, when it can be written
    /// straight into its slot before the swaps (no swap takes the input
    /// column in that slot elsewhere).
    in_place: Option<crate::expr::SlotEval>,
    /// When that value is all there is to do (every column stays where it
    /// is, and the input is as wide as the output: `SELECT a, b, 0.908 *
    /// c` of `a, b, c`): its slot and writer.
    writes_one: Option<(usize, crate::expr::SlotEval)>,
}

/// An output of at most this many columns is built in the input row's
/// buffer with every value held aside meanwhile (any order of copies);
/// a wider one by swaps, when it can be, with at most this many computed
/// values held aside.
const ASIDE: usize = 8;

impl Output {
    /// The output of `items` (compiled over rows `input_width` wide): a
    /// column read as it is is copied, the rest computed.
    pub fn of(items: Vec<crate::expr::Compiled>, input_width: usize) -> Output {
        let sources: Vec<Option<usize>> = items
            .iter()
            .map(|c| match c.shape {
                crate::expr::Shape::Column(i) => Some(i),
                _ => None,
            })
            .collect();
        Output::new(items, &sources, input_width)
    }

    fn new(
        items: Vec<crate::expr::Compiled>,
        sources: &[Option<usize>],
        input_width: usize,
    ) -> Output {
        let mut computed = Vec::new();
        let mut tests = Vec::new();
        let mut copied = Vec::new();
        let mut writers = Vec::new();
        let mut constants = Vec::new();
        for (slot, (item, source)) in items.into_iter().zip(sources).enumerate() {
            match source {
                Some(i) => {
                    let last = !sources[slot + 1..].contains(&Some(*i));
                    copied.push((slot, *i, last));
                }
                None => {
                    tests.push(match &item.shape {
                        crate::expr::Shape::Tests(t) => Some(t.0.clone()),
                        _ => None,
                    });
                    if let Some(w) = item.shape.writer() {
                        writers.push((slot, w.clone()));
                    } else if let crate::expr::Shape::Constant(v) = item.shape {
                        constants.push((slot, v));
                    }
                    computed.push((slot, item.eval));
                }
            }
        }
        let in_order = copied.iter().all(|&(slot, i, _)| i >= slot)
            && copied.windows(2).all(|w| w[0].1 < w[1].1);
        // Columns, each copied once, and constants (`SELECT k, id` of `id,
        // k, ts`; `COUNT(*)`'s NULL): any order of the columns is a
        // sequence of swaps, after which the constants are written.
        let permuted = (sources.len() <= input_width
            && constants.len() == computed.len()
            && copied.iter().all(|&(_, _, last)| last))
        .then_some(constants);
        let swaps = sources.len() <= input_width && computed.len() <= ASIDE && in_order;
        // Each copied column swapped into its slot, in slot order, from
        // wherever the swaps before it left it (for columns in the input's
        // order, that is where it started).
        let mut moves = Vec::new();
        if in_order || permuted.is_some() {
            let mut held: Vec<usize> = (0..input_width).collect();
            for &(slot, i, _) in &copied {
                if let Some(at) = held.iter().position(|&h| h == i).filter(|&at| at != slot) {
                    held.swap(slot, at);
                    moves.push((slot, at));
                }
            }
        }
        let in_place = match (computed.as_slice(), writers.pop()) {
            ([(slot, _)], Some((at, writer)))
                if at == *slot && !moves.iter().any(|&(_, i)| i == at) =>
            {
                Some(writer)
            }
            _ => None,
        };
        let writes_one = match (&in_place, computed.as_slice()) {
            (Some(writer), [(slot, _)])
                if swaps && moves.is_empty() && sources.len() == input_width =>
            {
                Some((*slot, writer.clone()))
            }
            _ => None,
        };
        Output {
            width: sources.len(),
            computed,
            tests,
            copied,
            swaps,
            permuted,
            moves,
            in_place,
            writes_one,
        }
    }

    /// Makes `row` the output row of its values, or returns the error
    /// that fails the job. (In place: a row returned in a `Result` was
    /// copied through the stack a piece at a time, which cost more than
    /// building it.)
    #[inline(always)]
    pub fn apply(&self, row: &mut Row) -> Result<(), String> {
        // The one write, with no call and no choice of build between the
        // scan and the writer.
        if let Some((slot, writer)) = &self.writes_one {
            if row.values.len() == self.width {
                return (writer.0)(&mut row.values, *slot);
            }
        }
        self.build(row)
    }

    /// [`Output::apply`], any output.
    fn build(&self, row: &mut Row) -> Result<(), String> {
        if row.values.len() >= self.width {
            if let Some(constants) = &self.permuted {
                for &(slot, i) in &self.moves {
                    row.values.swap(slot, i);
                }
                for (slot, v) in constants {
                    crate::value::put_clone(&mut row.values[*slot], v);
                }
                row.values.truncate(self.width);
                return Ok(());
            }
            // Swapping moves only what changes place; holding every value
            // aside moves each twice.
            if self.swaps {
                return self.apply_swapping(row);
            }
            if self.width <= ASIDE {
                return self.apply_aside(row);
            }
        }
        let mut values = Row::buffer(self.width);
        values.resize(self.width, Value::Null);
        // The input is read where it is, and taken out of the row last:
        // moved out first, its buffer's pointer and lengths were read back
        // whole right after the row was written, and waited for it.
        let input = &mut row.values;
        for ((slot, eval), test) in self.computed.iter().zip(&self.tests) {
            // Each BOOLEAN written in its slot by an arm of its own: one
            // value made by every arm is made on the stack and copied.
            match test.as_ref().map(|test| test(input)) {
                Some(Truth::True) => crate::value::put(&mut values[*slot], || Value::Boolean(true)),
                Some(Truth::False) => {
                    crate::value::put(&mut values[*slot], || Value::Boolean(false))
                }
                Some(Truth::Null) => {}
                Some(Truth::Failed) | None => match &mut eval(input) {
                    Ok(v) => crate::value::move_into(v, &mut values[*slot]),
                    Err(e) => return Err(std::mem::take(e)),
                },
            }
        }
        for &(slot, i, last) in &self.copied {
            values[slot] = if last {
                std::mem::replace(&mut input[i], Value::Null)
            } else {
                input[i].clone()
            };
        }
        Row::recycle(std::mem::replace(&mut row.values, values));
        Ok(())
    }

    /// [`Output::apply`] without a new buffer, for a narrow output: every
    /// output value is computed or taken from the input and held aside,
    /// then all are put into their slots and the rest cut off.
    fn apply_aside(&self, row: &mut Row) -> Result<(), String> {
        const NULL: Value = Value::Null;
        let mut aside = [NULL; ASIDE];
        // A condition's truth, `Failed` where its value is held aside.
        let mut truths = [Truth::Failed; ASIDE];
        for ((slot, eval), test) in self.computed.iter().zip(&self.tests) {
            if let Some(test) = test {
                truths[*slot] = test(&row.values);
            }
            if truths[*slot] == Truth::Failed {
                aside[*slot] = eval(&row.values)?;
            }
        }
        for &(slot, i, last) in &self.copied {
            aside[slot] = if last {
                std::mem::replace(&mut row.values[i], NULL)
            } else {
                row.values[i].clone()
            };
        }
        row.values.truncate(self.width);
        for ((value, held), truth) in row.values.iter_mut().zip(&mut aside).zip(truths) {
            match truth {
                Truth::True => crate::value::put(value, || Value::Boolean(true)),
                Truth::False => crate::value::put(value, || Value::Boolean(false)),
                Truth::Null => crate::value::put(value, || NULL),
                Truth::Failed => *value = std::mem::replace(held, NULL),
            }
        }
        Ok(())
    }

    /// [`Output::apply`] without a new buffer, for a wide output that
    /// copies columns in their order: the computed values are evaluated
    /// over the input first and held aside, the copied columns are
    /// swapped into their slots, the computed values put into theirs, and
    /// the rest cut off.
    fn apply_swapping(&self, row: &mut Row) -> Result<(), String> {
        // Two paths, not one holding an `Option<Value>`: that costs q1 about
        // 4 % of its time.
        if let (Some(writer), [(slot, _)]) = (&self.in_place, self.computed.as_slice()) {
            (writer.0)(&mut row.values, *slot)?;
            for &(slot, i) in &self.moves {
                row.values.swap(slot, i);
            }
            row.values.truncate(self.width);
            return Ok(());
        }
        if let [(slot, eval)] = self.computed.as_slice() {
            let value = eval(&row.values)?;
            for &(slot, i) in &self.moves {
                row.values.swap(slot, i);
            }
            row.values[*slot] = value;
            row.values.truncate(self.width);
            return Ok(());
        }
        const NULL: Value = Value::Null;
        let mut aside = [NULL; ASIDE];
        for ((_, eval), held) in self.computed.iter().zip(&mut aside) {
            *held = eval(&row.values)?;
        }
        for &(slot, i) in &self.moves {
            row.values.swap(slot, i);
        }
        for ((slot, _), held) in self.computed.iter().zip(&mut aside) {
            row.values[*slot] = std::mem::replace(held, NULL);
        }
        row.values.truncate(self.width);
        Ok(())
    }
}

/// A compiled `SELECT` list.
pub(crate) struct Projection {
    /// How the output row is made; `None`: the input's columns as they
    /// are.
    pub output: Option<Output>,
    /// The output columns.
    pub scope: Scope,
    /// For each output column, the input column it copies, if it does.
    pub sources: Vec<Option<usize>>,
    /// The output column that is a `PROCTIME()` call, if one is.
    pub proctime_item: Option<usize>,
}

impl Projection {
    /// Where input column `i` went (its first copy).
    pub fn carried(&self, i: usize) -> Option<usize> {
        self.sources.iter().position(|s| *s == Some(i))
    }

    /// The time attribute after the projection, and whether it is
    /// processing time, from the input's: kept where a column copies it; a
    /// `PROCTIME()` item makes a new one.
    pub fn time(&self, rowtime: Option<usize>, proctime: bool) -> (Option<usize>, bool) {
        if let Some(p) = self.proctime_item {
            return (Some(p), true);
        }
        match rowtime.and_then(|r| self.carried(r)) {
            Some(r) => (Some(r), proctime),
            None => (None, false),
        }
    }

    /// The window columns after the projection (both kept, else none).
    pub fn window(&self, window: Option<[usize; 2]>) -> Option<[usize; 2]> {
        let [start, end] = window?;
        Some([self.carried(start)?, self.carried(end)?])
    }
}

/// The name of an unaliased `SELECT` item at `index`: a column's name
/// (`a.b` is `b`), else Flink's `EXPR$index`.
pub(crate) fn column_name(e: &Expr, index: usize) -> String {
    match e {
        Expr::Identifier(id) => id.value.clone(),
        Expr::CompoundIdentifier(parts) => {
            parts.last().map(|p| p.value.clone()).unwrap_or_default()
        }
        _ => format!("EXPR${index}"),
    }
}

/// The `SELECT` list compiled over `input`.
pub(crate) fn projection(items: &[SelectItem], input: &Scope) -> Result<Projection, SqlError> {
    let mut evals = Vec::new();
    let mut scope = Scope::default();
    let mut sources = Vec::new();
    let mut proctime_item = None;
    for item in items {
        match item {
            SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..) => {
                for (i, (name, ty)) in input.columns.iter().enumerate() {
                    input.mark_used(i);
                    sources.push(Some(i));
                    let e: Eval = std::sync::Arc::new(move |r: &[Value]| Ok(r[i].clone()));
                    evals.push(crate::expr::Compiled {
                        eval: e,
                        ty: *ty,
                        shape: crate::expr::Shape::Column(i),
                    });
                    scope.columns.push((name.clone(), *ty));
                }
            }
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
                let c = compile(e, input)?;
                sources.push(match e {
                    Expr::Identifier(id) => input.index(&id.value, pos(e)).ok(),
                    Expr::CompoundIdentifier(parts) if parts.len() == 2 => input
                        .index_qualified(&parts[0].value, &parts[1].value, pos(e))
                        .ok(),
                    _ => None,
                });
                // `PROCTIME() AS t` makes t the (processing) time attribute.
                if crate::expr::is_proctime(e) {
                    proctime_item = Some(scope.columns.len());
                }
                let name = match item {
                    SelectItem::ExprWithAlias { alias, .. } => alias.value.clone(),
                    _ => column_name(e, scope.columns.len()),
                };
                scope.columns.push((name, c.ty));
                evals.push(c);
            }
            other => return Err(SqlError::unsupported(format!("{other}"), pos(other))),
        }
    }
    // The input's columns as they are, in order (perhaps renamed: names
    // live in the scope, not in the rows): no work per row.
    let identity = sources.len() == input.columns.len()
        && sources.iter().enumerate().all(|(i, s)| *s == Some(i));
    Ok(Projection {
        output: (!identity).then(|| Output::new(evals, &sources, input.columns.len())),
        scope,
        sources,
        proctime_item,
    })
}

/// `planned` with its columns renamed to `names` (`t (a, b)` after a
/// subquery or in `WITH`), unless `names` is empty.
fn with_column_names(
    mut planned: Planned,
    names: &[String],
    relation: &str,
    at: Position,
) -> Result<Planned, SqlError> {
    if names.is_empty() {
        return Ok(planned);
    }
    if names.len() != planned.scope.columns.len() {
        return Err(SqlError::validation(
            format!(
                "{relation} names {} columns, but its query has {}",
                names.len(),
                planned.scope.columns.len()
            ),
            at,
        ));
    }
    for ((column, _), name) in planned.scope.columns.iter_mut().zip(names) {
        column.clone_from(name);
    }
    Ok(planned)
}

pub(crate) fn plan_relation(
    env: &StreamExecutionEnvironment,
    catalog: &Catalog,
    relation: &TableFactor,
) -> Result<Planned, SqlError> {
    let at = pos(relation);
    match relation {
        TableFactor::Table {
            name,
            args: None,
            version: None,
            ..
        } => plan_table_name(env, catalog, &name.to_string(), at),
        TableFactor::Table {
            version: Some(version),
            ..
        } => Err(SqlError::unsupported(
            format!("{version} outside a temporal join (JOIN t {version} AS r ON …)"),
            at,
        )),
        TableFactor::Derived {
            subquery, alias, ..
        } => {
            let planned = plan_query(env, catalog, subquery)?;
            match alias {
                Some(alias) => {
                    let names: Vec<String> =
                        alias.columns.iter().map(|c| c.name.value.clone()).collect();
                    with_column_names(planned, &names, &alias.name.value, at)
                }
                None => Ok(planned),
            }
        }
        other => Err(SqlError::unsupported(format!("FROM {other}"), at)),
    }
}

/// The rows of the table or view `table_name`.
pub(crate) fn plan_table_name(
    env: &StreamExecutionEnvironment,
    catalog: &Catalog,
    table_name: &str,
    at: Position,
) -> Result<Planned, SqlError> {
    plan_table_reading(env, catalog, table_name, at, None)
}

/// The rows of the table or view `table_name`; of a table, only the
/// columns `needed` marks are read (the others are NULL).
fn plan_table_reading(
    env: &StreamExecutionEnvironment,
    catalog: &Catalog,
    table_name: &str,
    at: Position,
    needed: Option<&[bool]>,
) -> Result<Planned, SqlError> {
    Ok(match read_table(env, catalog, table_name, at, needed)? {
        Read::Table(scan, rows) => {
            let stream = scan.rows.stream();
            rows.finish(stream)
        }
        Read::View(planned) => planned,
    })
}

/// A relation in `FROM`: a table's scan, whose rows a calc can still be
/// fused into, or a view's plan.
pub(crate) enum Read {
    Table(crate::catalog::Scan, Unfinished),
    View(Planned),
}

impl Unfinished {
    /// `planned`'s stream and the rest of it.
    fn of(planned: Planned) -> (DataStream<Row>, Unfinished) {
        let Planned {
            stream,
            scope,
            rowtime,
            proctime,
            window,
            above_watermark,
            updating,
            versions,
            update_before: _,
            steps,
        } = planned;
        let rows = Unfinished {
            scope,
            rowtime,
            proctime,
            window,
            above_watermark,
            updating,
            versions,
            steps,
        };
        (stream, rows)
    }

    /// The relation of these rows, made by `stream`.
    pub(crate) fn finish(self, stream: DataStream<Row>) -> Planned {
        Planned {
            stream,
            scope: self.scope,
            rowtime: self.rowtime,
            proctime: self.proctime,
            window: self.window,
            above_watermark: self.above_watermark,
            updating: self.updating,
            versions: self.versions,
            update_before: None,
            steps: self.steps,
        }
    }
}

/// Reads the table or view `table_name` as [`plan_table_reading`] does,
/// leaving a table's rows unfinished.
pub(crate) fn read_table(
    env: &StreamExecutionEnvironment,
    catalog: &Catalog,
    table_name: &str,
    at: Position,
    needed: Option<&[bool]>,
) -> Result<Read, SqlError> {
    if let Some(cte) = catalog.cte(table_name) {
        let planned = catalog.in_scope_of(&cte, || plan_query(env, catalog, &cte.query))?;
        return Ok(Read::View(with_column_names(
            planned,
            &cte.columns,
            table_name,
            at,
        )?));
    }
    match catalog.get(table_name) {
        Some(Relation::Table(table)) => {
            let key = (
                table.name.to_lowercase(),
                needed.map_or_else(Vec::new, <[bool]>::to_vec),
            );
            let cached = catalog.scans.borrow().get(&key).cloned();
            let scan = match cached {
                Some(scan) => scan,
                None => {
                    let scan = connector::source(env, table, &catalog.scan_timing, needed)?;
                    catalog.scans.borrow_mut().insert(key, scan.clone());
                    scan
                }
            };
            let mut steps = vec![format!(
                "TableSourceScan: {} [{}]",
                table.name,
                table.option("connector").unwrap_or_default()
            )];
            if let (Some(w), false) = (&table.watermark, scan.proctime) {
                steps.push(format!(
                    "WatermarkAssigner: rowtime={}, watermark={}",
                    w.column, w.expr
                ));
            }
            let rows = Unfinished {
                scope: scan.scope.clone(),
                rowtime: scan.rowtime,
                proctime: scan.proctime,
                window: None,
                above_watermark: None,
                updating: connector::is_changelog(table),
                versions: crate::temporal_join::Versions::of_table(table, &scan),
                steps,
            };
            Ok(Read::Table(scan, rows))
        }
        Some(Relation::View(query)) => Ok(Read::View(plan_query(env, catalog, query)?)),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::{column_at, Compiled, Scope};
    use crate::types::SqlType;

    /// Every sequence of `n` distinct columns of `width` (each a number
    /// in base `width`, its digits the columns).
    fn distinct_picks(width: usize, n: usize) -> Vec<Vec<usize>> {
        (0..width.pow(n as u32))
            .map(|code| (0..n).map(|d| code / width.pow(d as u32) % width).collect())
            .filter(|picked: &Vec<usize>| {
                let mut seen = picked.clone();
                seen.sort_unstable();
                seen.dedup();
                seen.len() == n
            })
            .collect()
    }

    /// Every choice of input columns, in every order, each copied once,
    /// with a product written in place (`0.908 * c`) in each place: the
    /// output holds each item's value in its slot.
    #[test]
    fn an_output_with_a_value_written_in_place_holds_every_item_in_its_slot() {
        let width: usize = 3;
        let scope = Scope::of(
            (0..width)
                .map(|i| (format!("c{i}"), SqlType::BigInt))
                .collect(),
        );
        let input: Vec<Value> = (0..width).map(|i| Value::BigInt(10 + i as i64)).collect();
        let product = |j: usize| {
            let e = sqlparser::parser::Parser::new(&sqlparser::dialect::GenericDialect {})
                .try_with_sql(&format!("0.908 * c{j}"))
                .and_then(|mut p| p.parse_expr())
                .expect("an expression");
            crate::expr::compile(&e, &scope).expect("a product of a column")
        };
        let mut in_place = 0;
        for picked in (0..width).flat_map(|n| distinct_picks(width, n)) {
            for at in 0..=picked.len() {
                for j in 0..width {
                    let mut items: Vec<Compiled> =
                        picked.iter().map(|&i| column_at(&scope, i)).collect();
                    items.insert(at, product(j));
                    let expected: Vec<Value> = items
                        .iter()
                        .map(|c| (c.eval)(&input).expect("a value"))
                        .collect();
                    let output = Output::of(items, width);
                    in_place += usize::from(output.writes_one.is_some());
                    let mut row = Row::insert(input.clone());
                    output.apply(&mut row).expect("columns and a product");
                    assert_eq!(
                        row.values, expected,
                        "columns {picked:?}, 0.908 * c{j} at {at}"
                    );
                }
            }
        }
        // `c0, c1, 0.908 * cj` and the like: the one write is all there is.
        assert!(in_place > 0);
    }

    /// Conditions in a `SELECT` list (q15's `FILTER` columns) are written
    /// from their truth: TRUE, FALSE and NULL, and a failing one fails the
    /// row, in an output built in the input's buffer (as narrow as it,
    /// columns out of order) and in a new one (wider).
    #[test]
    fn an_output_of_conditions_holds_their_values() {
        let scope = Scope::of(
            ["a", "b", "c"]
                .map(|c| (c.to_string(), SqlType::BigInt))
                .to_vec(),
        );
        let compiled = |text: &str| {
            let e = sqlparser::parser::Parser::new(&sqlparser::dialect::GenericDialect {})
                .try_with_sql(text)
                .and_then(|mut p| p.parse_expr())
                .expect("an expression");
            crate::expr::compile(&e, &scope).expect("a condition")
        };
        // Each output: its items, and how many of them are conditions (the
        // rest copy `b` and `a`, out of order: built aside).
        let outputs: [&[&str]; 3] = [
            &["a < 10", "a >= 10", "b > 0", "a / b > 1"],
            &["b", "a", "a / b > 1"],
            &["b", "a", "a >= 10"],
        ];
        for items in outputs {
            let output = Output::of(items.iter().map(|c| compiled(c)).collect(), 3);
            assert_eq!(output.width <= 3, items.len() == 3, "{items:?}");
            for input in [[5, 2, 0], [50, 100, 0], [7, -1, 0]].map(|r| r.map(Value::BigInt)) {
                let expected: Vec<Value> = items
                    .iter()
                    .map(|c| (compiled(c).eval)(&input).expect("a value"))
                    .collect();
                let mut row = Row::insert(input.to_vec());
                output.apply(&mut row).expect("conditions");
                assert_eq!(row.values, expected, "{items:?} of {input:?}");
            }
            // NULL operands make NULL; a division by zero fails the row.
            let mut row = Row::insert(vec![Value::Null; 3]);
            output.apply(&mut row).expect("conditions");
            assert_eq!(row.values, vec![Value::Null; items.len()], "{items:?}");
            let mut row = Row::insert([1, 0, 0].map(Value::BigInt).to_vec());
            let divides = items.iter().any(|c| c.contains('/'));
            assert_eq!(output.apply(&mut row).is_err(), divides, "{items:?}");
        }
    }

    /// Every choice of input columns, in every order, each copied once,
    /// with and without a constant: the output holds them in that order
    /// (built by swaps in the input's buffer).
    #[test]
    fn an_output_of_columns_in_any_order_and_constants_holds_them_in_that_order() {
        let width: usize = 4;
        let scope = Scope::of(
            (0..width)
                .map(|i| (format!("c{i}"), SqlType::String))
                .collect(),
        );
        let input: Vec<Value> = (0..width)
            .map(|i| Value::string(&format!("v{i}")))
            .collect();
        for picked in (1..=3).flat_map(|n| distinct_picks(width, n)) {
            let output = Output::of(
                picked.iter().map(|&i| column_at(&scope, i)).collect(),
                width,
            );
            let mut row = Row::insert(input.clone());
            output.apply(&mut row).expect("columns only");
            let expected: Vec<Value> = picked.iter().map(|&i| input[i].clone()).collect();
            assert_eq!(row.values, expected, "columns {picked:?}");
            // And with a constant (`COUNT(*)`'s NULL) in each place.
            for at in 0..=picked.len() {
                let mut items: Vec<Compiled> =
                    picked.iter().map(|&i| column_at(&scope, i)).collect();
                items.insert(at, Compiled::constant(Value::Int(7), SqlType::Int));
                let output = Output::of(items, width);
                let mut row = Row::insert(input.clone());
                output.apply(&mut row).expect("columns and a constant");
                let mut expected = expected.clone();
                expected.insert(at, Value::Int(7));
                assert_eq!(row.values, expected, "columns {picked:?}, constant at {at}");
            }
        }
    }
}
