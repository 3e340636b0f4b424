//! Semi and anti joins: a row of the left side passes while some row of
//! the right side matches it (semi) or while none does (anti), as Flink
//! plans `WHERE x IN (SELECT …)`, `[NOT] EXISTS (SELECT …)`, `NOT IN`,
//! `INTERSECT` and `EXCEPT`.
//!
//! Both sides' rows are kept in keyed state (list state per key and side,
//! expiring after `table.exec.state.ttl`), each left row with how many
//! right rows match it. A left row is emitted with its own kind when it
//! passes on arrival; a right row that gives a left row its first match
//! emits that row (`+I`, or `-D` in an anti join), and one that takes its
//! last match away emits it back (`-D`, or `+I` in an anti join), as
//! Flink's streaming semi/anti join does.

use std::time::Duration;

use sqlparser::ast::{
    BinaryOperator, Expr, GroupByExpr, Ident, Query, Select, SelectItem, SetExpr, Spanned,
    TableFactor,
};
use weir::prelude::*;

use crate::catalog::Catalog;
use crate::error::{position, Position, SqlError};
use crate::expr::{column_at, compile, Compiled, Condition};
use crate::join::{
    conjuncts, key_functions, qualified, side_by_side, tagged, take_out, untagged, Kept,
};
use crate::key::RowKey;
use crate::plan::Planned;
use crate::value::{Row, RowKind, Value};

/// What a semi or anti join matches on.
struct Matching {
    anti: bool,
    /// Equal keys: each left expression (over the left columns) with its
    /// right one (over the right columns).
    keys: Vec<(Compiled, Compiled)>,
    /// Whether NULL keys equal each other (`IS NOT DISTINCT FROM`, as
    /// INTERSECT and EXCEPT compare rows); else a NULL key matches nothing.
    null_safe: bool,
    /// The other conditions, over the left columns then the right ones.
    residual: Option<Condition>,
    /// Left columns a row must have a value in to match anything: the
    /// outer columns a correlated `EXISTS` names in conditions other than
    /// its key. (Flink decorrelates such a subquery by joining back on
    /// those values, which a NULL never equals.)
    needs_values: Vec<usize>,
    /// What it matches on, for EXPLAIN and its operator's uid.
    described: String,
}

/// The keyed function holding both sides' rows.
#[derive(Clone)]
struct SemiJoinFunction {
    keys: usize,
    anti: bool,
    null_safe: bool,
    residual: Option<Condition>,
    needs_values: std::sync::Arc<[usize]>,
    ttl: Option<Duration>,
    sides: Option<[ListState<Kept>; 2]>,
}

impl SemiJoinFunction {
    /// Whether the left row `left` and the right row `right` match.
    fn matches(&self, left: &[Value], right: &[Value]) -> Result<bool, String> {
        if self.needs_values.iter().any(|i| left[*i].is_null()) {
            return Ok(false);
        }
        let Some(residual) = &self.residual else {
            return Ok(true);
        };
        let mut joined = Row::buffer(left.len() + right.len());
        joined.extend_from_slice(left);
        joined.extend_from_slice(right);
        let passes = residual.passes(&joined);
        Row::recycle(joined);
        passes
    }

    /// Whether a left row with `matches` matching right rows passes.
    fn passes(&self, matches: u32) -> bool {
        (matches == 0) == self.anti
    }
}

impl KeyedProcessFunction<RowKey, Row, Row> for SemiJoinFunction {
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.sides = Some([
            crate::plan::list_state(ctx, "semi-left", self.ttl)?,
            crate::plan::list_state(ctx, "semi-right", self.ttl)?,
        ]);
        Ok(())
    }

    fn process_element(
        &mut self,
        row: Row,
        _ctx: &mut ProcessContext<'_, RowKey>,
        out: &mut Collector<'_, Row>,
    ) -> FunctionResult {
        let kind = row.kind;
        let retraction = kind.is_retraction();
        let (right, null_key, values) = untagged(row, self.keys);
        if null_key && !self.null_safe {
            // Matches nothing: only an anti join's left rows come this
            // far, and each passes.
            if !right && self.anti {
                out.collect(Row { kind, values });
            }
            return Ok(());
        }
        let sides = self.sides.as_ref().ok_or("the semi join is not open")?;
        if !right {
            let mut matches = 0u32;
            let mut failed = None;
            sides[1].for_each(|r| match self.matches(&values, &r.values) {
                Ok(true) => matches += 1,
                Ok(false) => {}
                Err(e) => failed = Some(e),
            })?;
            if let Some(e) = failed {
                return Err(e.into());
            }
            if retraction {
                take_out(&sides[0], &values)?;
            } else {
                sides[0].add(Kept::new(values.clone(), matches))?;
            }
            if self.passes(matches) {
                out.collect(Row { kind, values });
            }
            return Ok(());
        }
        let mut lefts = sides[0].get()?;
        let mut changed = false;
        for left in &mut lefts {
            if !self.matches(&left.values, &values)? {
                continue;
            }
            let before = self.passes(left.matches);
            left.matches = if retraction {
                left.matches.saturating_sub(1)
            } else {
                left.matches + 1
            };
            changed = true;
            if before != self.passes(left.matches) {
                // A semi join passes the right row's kind on (+I/+U,
                // -U/-D); an anti join inserts or deletes.
                let kind = match (self.anti, before) {
                    (false, _) => kind,
                    (true, true) => RowKind::Delete,
                    (true, false) => RowKind::Insert,
                };
                out.collect(Row {
                    kind,
                    values: left.values.to_vec(),
                });
            }
        }
        if changed {
            sides[0].update(lefts)?;
        }
        if retraction {
            take_out(&sides[1], &values)?;
        } else {
            sides[1].add(Kept::new(values, 0))?;
        }
        Ok(())
    }
}

/// `left` semi- or anti-joined with `right` on `matching`: `left`'s rows
/// and columns.
fn semi_join(left: Planned, right: Planned, matching: Matching, ttl: Option<Duration>) -> Planned {
    let Matching {
        anti,
        keys,
        null_safe,
        residual,
        needs_values,
        described,
    } = matching;
    let n = keys.len();
    let (left_keys, right_keys): (Vec<_>, Vec<_>) = keys.into_iter().unzip();
    let (left_fns, right_fns) = key_functions(left_keys, right_keys);
    // A left row with a NULL key still passes an anti join; a right one
    // matches nothing, unless NULLs are equal.
    let tagged = tagged(left.stream, false, left_fns, None, anti || null_safe).union(&[tagged(
        right.stream,
        true,
        right_fns,
        None,
        null_safe,
    )]);
    let key_columns: std::sync::Arc<[usize]> = (1..=n).collect();
    let stream = tagged
        .key_by(move |r: &Row| RowKey::at(&r.values, &key_columns))
        .process(SemiJoinFunction {
            keys: n,
            anti,
            null_safe,
            residual,
            needs_values: needs_values.into(),
            ttl,
            sides: None,
        });
    let name = if anti { "AntiJoin" } else { "SemiJoin" };
    let stream = crate::plan::stateful(stream, &format!("{name}[{described}]"));
    let mut steps = left.steps;
    steps.extend(right.steps);
    steps.push(format!("{name}: {described}"));
    Planned {
        stream,
        scope: left.scope,
        // As a regular join's, its rows have no time attribute.
        rowtime: None,
        proctime: false,
        window: None,
        above_watermark: None,
        versions: None,
        // An anti join takes a row back when its first match comes.
        updating: left.updating || right.updating || anti,
        update_before: None,
        steps,
    }
}

/// `left INTERSECT right` (`anti`: `left EXCEPT right`): the distinct rows
/// of `left` that are (not) rows of `right`, NULLs equal, as Flink plans
/// them (a semi or anti join on every column, then the distinct rows).
pub(crate) fn intersect_or_except(
    left: Planned,
    right: Planned,
    anti: bool,
    catalog: &Catalog,
    at: Position,
) -> Result<Planned, SqlError> {
    let what = if anti { "EXCEPT" } else { "INTERSECT" };
    let (left, right) = crate::plan::set_operands(left, right, what, at)?;
    let keys = (0..left.scope.columns.len())
        .map(|i| (column_at(&left.scope, i), column_at(&right.scope, i)))
        .collect();
    let matching = Matching {
        anti,
        keys,
        null_safe: true,
        residual: None,
        needs_values: Vec::new(),
        described: format!("{what}, on every column"),
    };
    let joined = semi_join(left, right, matching, catalog.state_ttl);
    crate::group::distinct(joined, catalog.group_settings())
}

/// The conjuncts of a `WHERE` that are subqueries a semi or anti join
/// answers (`x [NOT] IN (SELECT …)`, `[NOT] EXISTS (SELECT …)`), and the
/// others; `None` when there are none.
pub(crate) fn subquery_conjuncts(filter: Option<&Expr>) -> Option<(Vec<&Expr>, Vec<&Expr>)> {
    let (subqueries, rest): (Vec<&Expr>, Vec<&Expr>) = conjuncts(filter?)
        .into_iter()
        .partition(|c| subquery_of(c).is_some());
    (!subqueries.is_empty()).then_some((subqueries, rest))
}

/// A conjunct that is a subquery a semi or anti join answers: the
/// subquery, whether it is negated, and for `IN` the left expression.
fn subquery_of(e: &Expr) -> Option<(&Query, bool, Option<&Expr>)> {
    match e {
        Expr::Nested(inner) => subquery_of(inner),
        Expr::InSubquery {
            expr,
            subquery,
            negated,
        } => Some((subquery, *negated, Some(expr))),
        Expr::Exists { subquery, negated } => Some((subquery, *negated, None)),
        Expr::UnaryOp {
            op: sqlparser::ast::UnaryOperator::Not,
            expr,
        } => {
            let (q, negated, left) = subquery_of(expr)?;
            Some((q, !negated, left))
        }
        _ => None,
    }
}

/// `outer` (its columns named as `qualifier`'s) filtered by the subquery
/// conjunct `conjunct` of a `WHERE`, by a semi or anti join.
pub(crate) fn filter_by_subquery(
    env: &StreamExecutionEnvironment,
    catalog: &Catalog,
    outer: Planned,
    qualifier: &str,
    conjunct: &Expr,
) -> Result<Planned, SqlError> {
    let at = position(conjunct.span());
    let (query, negated, left) = subquery_of(conjunct).ok_or_else(|| {
        SqlError::unsupported(
            "a subquery here (only IN and EXISTS subqueries ANDed in a WHERE are)",
            at,
        )
    })?;
    let outer_scope = crate::join::side_scope(&outer.scope, qualifier);
    let outer = Planned {
        scope: outer_scope.clone(),
        update_before: None,
        ..outer
    };
    match left {
        Some(left) => in_subquery(env, catalog, outer, left, query, negated, at),
        None => exists(env, catalog, outer, query, negated),
    }
}

/// `left [NOT] IN (query)`.
fn in_subquery(
    env: &StreamExecutionEnvironment,
    catalog: &Catalog,
    outer: Planned,
    left: &Expr,
    query: &Query,
    negated: bool,
    at: Position,
) -> Result<Planned, SqlError> {
    let right = crate::plan::plan_query(env, catalog, query)?;
    let [(_, ty)] = right.scope.columns.as_slice() else {
        return Err(SqlError::validation(
            format!(
                "an IN subquery gives one column; this one gives {}",
                right.scope.columns.len()
            ),
            position(query.span()),
        ));
    };
    // The subquery's column, named where no query can name it.
    let right_scope = qualified(&[("$in".to_string(), *ty)], "$subquery");
    let value = compile(left, &outer.scope)?;
    let listed = column_at(&right_scope, 0);
    if !(value.ty == listed.ty || value.ty.is_numeric() && listed.ty.is_numeric()) {
        return Err(SqlError::validation(
            format!("IN compares {} with a subquery of {}", value.ty, listed.ty),
            at,
        ));
    }
    let right = Planned {
        scope: right_scope.clone(),
        update_before: None,
        ..right
    };
    let matching = if negated {
        // NOT IN is TRUE only where no value of the subquery equals the
        // row's nor is NULL, and the row's is not NULL (SQL's three-valued
        // IN): an anti join with no key, matching on that condition, as
        // Flink's (all rows in one group).
        let joined = side_by_side(&outer.scope, &right_scope);
        let listed = Expr::CompoundIdentifier(vec![Ident::new("$subquery"), Ident::new("$in")]);
        let or = |a: Expr, b: Expr| Expr::BinaryOp {
            left: Box::new(a),
            op: BinaryOperator::Or,
            right: Box::new(b),
        };
        let condition = or(
            or(
                Expr::BinaryOp {
                    left: Box::new(Expr::Nested(Box::new(left.clone()))),
                    op: BinaryOperator::Eq,
                    right: Box::new(listed.clone()),
                },
                Expr::IsNull(Box::new(Expr::Nested(Box::new(left.clone())))),
            ),
            Expr::IsNull(Box::new(listed)),
        );
        Matching {
            anti: true,
            keys: Vec::new(),
            null_safe: false,
            residual: Some(Condition::of(&compile(&condition, &joined)?)),
            needs_values: Vec::new(),
            described: format!("{left} NOT IN (subquery)"),
        }
    } else {
        Matching {
            anti: false,
            keys: vec![(value, listed)],
            null_safe: false,
            residual: None,
            needs_values: Vec::new(),
            described: format!("{left} IN (subquery)"),
        }
    };
    Ok(semi_join(outer, right, matching, catalog.state_ttl))
}

/// `[NOT] EXISTS (query)`, `query` a `SELECT` from one table or view whose
/// `WHERE` may name the outer query's columns (correlated): its
/// conditions on its own columns filter its rows; those naming both are
/// what a row and a subquery row match on (equalities between the two
/// sides its key).
fn exists(
    env: &StreamExecutionEnvironment,
    catalog: &Catalog,
    outer: Planned,
    query: &Query,
    negated: bool,
) -> Result<Planned, SqlError> {
    let simple = match query.body.as_ref() {
        SetExpr::Select(select)
            if query.with.is_none()
                && query.limit_clause.is_none()
                && query.order_by.is_none()
                && select.from.len() == 1
                && select.from[0].joins.is_empty()
                && select.having.is_none()
                && matches!(&select.group_by, sqlparser::ast::GroupByExpr::Expressions(e, m) if e.is_empty() && m.is_empty())
                && !select.projection.iter().any(|item| match item {
                    SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
                        crate::window::contains_aggregate(e)
                    }
                    _ => false,
                }) =>
        {
            Some(select)
        }
        _ => None,
    };
    let Some(select) = simple else {
        return Err(SqlError::unsupported(
            "an EXISTS subquery other than SELECT … FROM one table or view [WHERE …] \
             (no joins, GROUP BY, aggregates, ORDER BY or LIMIT)",
            position(query.span()),
        ));
    };
    let from = &select.from[0].relation;
    let inner = crate::plan::plan_relation(env, catalog, from)?;
    let inner_scope = qualified(&inner.scope.columns, &crate::join::qualifier(from));
    let inner = Planned {
        scope: inner_scope.clone(),
        update_before: None,
        ..inner
    };
    // A name both queries have means the subquery's column unless it is
    // qualified by the outer relation (SQL's innermost-first rule): the
    // outer columns of such names are reached by their qualified names
    // alone, each rewritten to a name of its own.
    let shadowed: Vec<bool> = (outer.scope.columns.iter())
        .map(|(name, _)| {
            (inner_scope.columns.iter()).any(|(inner, _)| inner.eq_ignore_ascii_case(name))
        })
        .collect();
    let mut outer_scope = outer.scope.clone();
    for (i, column) in outer_scope.columns.iter_mut().enumerate() {
        if shadowed[i] {
            column.0 = format!("$outer{i}");
        }
    }
    let reached = |e: &Expr| -> Result<Expr, SqlError> {
        fn rewrite(
            e: &Expr,
            outer: &crate::expr::Scope,
            shadowed: &[bool],
        ) -> Result<Expr, SqlError> {
            if let Expr::CompoundIdentifier(parts) = e {
                if let [table, column] = parts.as_slice() {
                    let at = position(e.span());
                    if let Ok(i) = outer.index_qualified(&table.value, &column.value, at) {
                        if shadowed[i] {
                            return Ok(Expr::Identifier(Ident::new(format!("$outer{i}"))));
                        }
                    }
                }
                return Ok(e.clone());
            }
            crate::window::map_children(e, &mut |c| rewrite(c, outer, shadowed))
        }
        rewrite(e, &outer.scope, &shadowed)
    };
    let joined = side_by_side(&outer_scope, &inner_scope);
    let mut own = Vec::new();
    let mut keys = Vec::new();
    let mut residual = Vec::new();
    for c in select.selection.as_ref().map(conjuncts).unwrap_or_default() {
        if compile(c, &inner_scope).is_ok() {
            own.push(c.clone());
            continue;
        }
        let c = &reached(c)?;
        // Names must resolve over both sides.
        compile(c, &joined)?;
        if let Expr::BinaryOp {
            left: a,
            op: BinaryOperator::Eq,
            right: b,
        } = c
        {
            if let Some(key) = crate::join::equality_key(a, b, &outer_scope, &inner_scope) {
                keys.push(key);
                continue;
            }
        }
        residual.push(c.clone());
    }
    let inner = crate::join::filtered(inner, &own, &inner_scope)?;
    let tracked = joined.tracking();
    for c in &residual {
        compile(c, &tracked)?;
    }
    let needs_values: Vec<usize> = (tracked.used_columns().iter())
        .take(outer_scope.columns.len())
        .enumerate()
        .filter(|(_, used)| **used)
        .map(|(i, _)| i)
        .collect();
    let residual = crate::join::residual_condition(residual, &joined)?;
    let matching = Matching {
        anti: negated,
        keys,
        null_safe: false,
        residual,
        needs_values,
        described: format!(
            "{}EXISTS ({})",
            if negated { "NOT " } else { "" },
            query.to_string().trim()
        ),
    };
    Ok(semi_join(outer, inner, matching, catalog.state_ttl))
}

/// `select`, whose `WHERE` has the subquery conjuncts `subqueries` and the
/// other conjuncts `rest`: its `FROM`'s rows filtered by a semi or anti
/// join per subquery, then its `WHERE`'s other conditions and its
/// `SELECT` list (or `GROUP BY`, `grouped`).
pub(crate) fn plan_select_with_subqueries(
    env: &StreamExecutionEnvironment,
    catalog: &Catalog,
    select: &Select,
    (subqueries, rest): (Vec<&Expr>, Vec<&Expr>),
    grouped: bool,
) -> Result<Planned, SqlError> {
    let (mut planned, qualifier) = match select.from.as_slice() {
        // A relation, or joins, their columns named by their relations.
        [from] if !matches!(from.relation, TableFactor::TableFunction { .. }) => (
            crate::plan::plan_joins(env, catalog, from, None)?,
            String::new(),
        ),
        // A window TVF (or tables with commas): all its columns.
        _ => {
            let mut all = select.clone();
            all.projection = vec![SelectItem::Wildcard(Default::default())];
            all.selection = None;
            all.group_by = GroupByExpr::Expressions(Vec::new(), Vec::new());
            all.having = None;
            all.distinct = None;
            (crate::plan::plan_select(env, catalog, &all)?, String::new())
        }
    };
    for subquery in subqueries {
        planned = filter_by_subquery(env, catalog, planned, &qualifier, subquery)?;
    }
    let mut after = select.clone();
    after.selection = rest.into_iter().cloned().reduce(|a, b| Expr::BinaryOp {
        left: Box::new(a),
        op: BinaryOperator::And,
        right: Box::new(b),
    });
    if grouped {
        crate::group::plan_group_aggregate(planned, &after, catalog.group_settings())
    } else {
        crate::plan::calc(planned, &after)
    }
}
