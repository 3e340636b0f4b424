//! Event-time temporal joins: `o JOIN r FOR SYSTEM_TIME AS OF o.ts ON
//! o.k = r.k` joins each row of `o` with the version of its key in the
//! versioned table `r` that was valid at the row's time, as Flink's
//! event-time temporal join does.
//!
//! A versioned table is a table with a primary key and an event-time
//! attribute (each row a new version of its key, valid from its time
//! until the next one), or a view that keeps each key's last row by event
//! time (`ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts DESC) = 1`).
//! A left row waits until the watermark (of both sides) passes its time:
//! then every version that could apply to it has come. Versions older
//! than the one valid at the watermark are dropped then.

use std::time::Duration;

use sqlparser::ast::{Expr, Join, Spanned};
use weir::prelude::*;

use crate::catalog::{Scan, TableDef};
use crate::error::{position, SqlError};
use crate::expr::{compile, Condition, Eval};
use crate::join::{
    column_index, column_keys, inner_or_left_on, qualified, residual_condition, side_by_side,
    tagged, untagged, with_nulls_after,
};
use crate::key::RowKey;
use crate::plan::Planned;
use crate::value::{Row, RowKind, Value};

/// Where a versioned table's rows hold their key and the time from which
/// each is its key's version.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Versions {
    pub key: Vec<usize>,
    pub time: usize,
}

impl Versions {
    /// A table's, when it declares a primary key and an event-time
    /// attribute.
    pub(crate) fn of_table(table: &TableDef, scan: &Scan) -> Option<Versions> {
        let time = scan.rowtime.filter(|_| !scan.proctime)?;
        if table.primary_key.is_empty() {
            return None;
        }
        let key = table
            .primary_key
            .iter()
            .map(|name| {
                scan.scope
                    .columns
                    .iter()
                    .position(|(n, _)| n.eq_ignore_ascii_case(name))
            })
            .collect::<Option<Vec<usize>>>()?;
        Some(Versions { key, time })
    }

    /// These columns where `carried` says they went, if all of them did.
    pub(crate) fn carried(self, carried: impl Fn(usize) -> Option<usize>) -> Option<Versions> {
        Some(Versions {
            key: self
                .key
                .iter()
                .map(|c| carried(*c))
                .collect::<Option<_>>()?,
            time: carried(self.time)?,
        })
    }
}

/// `left JOIN right FOR SYSTEM_TIME AS OF <as_of> ON …` (or `LEFT JOIN`).
pub(crate) fn plan_temporal_join(
    left: Planned,
    left_name: String,
    right: Planned,
    join: &Join,
    as_of: &Expr,
    ttl: Option<Duration>,
) -> Result<Planned, SqlError> {
    let at = position(join.span());
    let (on, outer) = inner_or_left_on(join, "temporal join")?;
    let name = if outer { "left outer" } else { "inner" };
    let right_name = crate::join::qualifier(&join.relation);
    let left_scope = crate::join::side_scope(&left.scope, &left_name);
    let right_scope = qualified(&right.scope.columns, &right_name);
    let joined = side_by_side(&left_scope, &right_scope);
    // The left rows' own event time, nothing else (as Flink).
    let as_of_at = position(as_of.span());
    // (AS OF a processing-time attribute is a lookup join.)
    let time = column_index(as_of, &left_scope).filter(|_| !left.proctime);
    let Some(time) = time.filter(|t| Some(*t) == left.rowtime) else {
        compile(as_of, &left_scope)?;
        return Err(SqlError::validation(
            format!(
                "FOR SYSTEM_TIME AS OF {as_of}: a temporal join is only AS OF the left \
                 table's event-time attribute{}",
                left.rowtime.map_or_else(
                    || " (the left side has none)".to_string(),
                    |t| format!(" ({left_name}.{})", left.scope.columns[t].0)
                )
            ),
            as_of_at,
        ));
    };
    if left.updating {
        return Err(SqlError::unsupported(
            "a temporal join of an updating left side (its rows must be inserts only)",
            at,
        ));
    }
    let Some(versions) = right.versions.clone() else {
        return Err(SqlError::validation(
            format!(
                "the temporal join's right side `{right_name}` is not a versioned table: \
                 give its table a PRIMARY KEY (…) NOT ENFORCED and a WATERMARK, or make it \
                 a view keeping each key's last row (ROW_NUMBER() OVER (PARTITION BY key \
                 ORDER BY time DESC) = 1)"
            ),
            at,
        ));
    };
    // Equalities of a left expression and a right column key the join;
    // the rest is checked on each joined row (a row whose version fails
    // it joins nothing, as in Flink).
    let (keys, residual) = column_keys(on, [&left_scope, &right_scope, &joined], |_| true)?;
    let mut left_keys: Vec<Eval> = Vec::new();
    let mut right_keys = Vec::new();
    // Keys of INT and BIGINT both key as BIGINT (as Flink casts them).
    let mut widened = Vec::new();
    for key in keys {
        let ty = right.scope.columns[key.right].1;
        let integers = key.left.ty.is_integer() && ty.is_integer();
        if key.left.ty != ty && integers {
            widened.push(right_keys.len());
            let eval = key.left.eval;
            left_keys.push(std::sync::Arc::new(move |r: &[Value]| {
                Ok(as_bigint(eval(r)?))
            }));
            right_keys.push(key.right);
            continue;
        }
        if key.left.ty != ty {
            // The state is keyed by the values as they are.
            return Err(SqlError::validation(
                format!(
                    "the temporal join's key {} equals a {ty} column to a value of type {}: CAST one",
                    key.written, key.left.ty
                ),
                position(key.written.span()),
            ));
        }
        left_keys.push(key.left.eval);
        right_keys.push(key.right);
    }
    if right_keys.is_empty() {
        return Err(SqlError::validation(
            format!(
                "a temporal join needs an equality between the left side and a column of \
                 `{right_name}` in its ON"
            ),
            at,
        ));
    }
    // Each key's versions are one row of the versioned table's key only
    // when the join's key holds all of that key.
    if let Some(missing) = versions.key.iter().find(|k| !right_keys.contains(k)) {
        return Err(SqlError::validation(
            format!(
                "a temporal join's ON must equal every column of `{right_name}`'s key; \
                 it has no equality for {right_name}.{}",
                right.scope.columns[*missing].0
            ),
            at,
        ));
    }
    let residual = residual_condition(residual, &joined)?;
    let keys = left_keys.len();
    let right_fns: Vec<Eval> = (right_keys.iter().enumerate())
        .map(|(k, &i)| -> Eval {
            if widened.contains(&k) {
                std::sync::Arc::new(move |r: &[Value]| Ok(as_bigint(r[i].clone())))
            } else {
                std::sync::Arc::new(move |r: &[Value]| Ok(r[i].clone()))
            }
        })
        .collect();
    let union = tagged(left.stream, false, left_keys, None, outer).union(&[tagged(
        right.stream,
        true,
        right_fns,
        None,
        false,
    )]);
    let stream = union
        .key_by(crate::join::tagged_key(keys))
        .process(TemporalJoinFunction {
            keys,
            left_time: time,
            right_time: versions.time,
            right_width: right.scope.columns.len(),
            outer,
            residual,
            ttl,
            state: None,
        });
    let stream = crate::plan::stateful(stream, &format!("TemporalJoin[{name}; {on}]"));
    let mut steps = left.steps;
    steps.extend(right.steps);
    steps.push(format!(
        "TemporalJoin: {name}, on {on}, {right_name} as of {as_of} (each left row when the \
         watermark passes it)"
    ));
    Ok(Planned {
        stream,
        scope: joined,
        // The left rows' time stays their time attribute (as in Flink):
        // each is emitted before the watermark passes it.
        rowtime: left.rowtime,
        proctime: false,
        window: None,
        above_watermark: None,
        updating: false,
        versions: None,
        update_before: None,
        steps,
    })
}

/// An integer key as a BIGINT (NULL stays NULL).
fn as_bigint(v: Value) -> Value {
    match v {
        Value::Int(i) => Value::BigInt(i64::from(i)),
        other => other,
    }
}

/// A key's versions, by the time each is valid from, oldest first; a
/// deleted key's version is `None`.
type Versioned = Vec<(i64, Option<Vec<Value>>)>;

#[derive(Clone)]
struct TemporalJoinFunction {
    keys: usize,
    /// The left rows' time column and the versions' (each in its side's
    /// columns).
    left_time: usize,
    right_time: usize,
    /// How many columns a version has (for the NULL padding).
    right_width: usize,
    /// Whether a left row without a version is emitted, padded with NULLs.
    outer: bool,
    residual: Option<Condition>,
    ttl: Option<Duration>,
    /// The left rows waiting for the watermark (in arrival order), and
    /// the key's versions.
    state: Option<(ListState<Vec<Value>>, ValueState<Versioned>)>,
}

impl KeyedProcessFunction<RowKey, Row, Row> for TemporalJoinFunction {
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.state = Some((
            crate::plan::list_state(ctx, "temporal-left", self.ttl)?,
            crate::plan::value_state(ctx, "temporal-versions", self.ttl)?,
        ));
        Ok(())
    }

    fn process_element(
        &mut self,
        row: Row,
        ctx: &mut ProcessContext<'_, RowKey>,
        out: &mut Collector<'_, Row>,
    ) -> FunctionResult {
        let kind = row.kind;
        let (right, null_key, values) = untagged(row, self.keys);
        let (waiting, versions) = self.state.as_ref().ok_or("the temporal join is not open")?;
        if right {
            // A version replaces the key's version of the same time; the
            // row an update takes back is not a version.
            if kind == RowKind::UpdateBefore {
                return Ok(());
            }
            let Some(time) = values[self.right_time].as_i64() else {
                return Ok(());
            };
            let version = (kind != RowKind::Delete).then_some(values);
            // In place: the key's versions are not copied per version.
            versions.update_in_place(|all| match all {
                Some(all) => {
                    add_version(all, time, version);
                    (ValueChange::Keep, ())
                }
                None => (ValueChange::Set(vec![(time, version)]), ()),
            })?;
            // Older versions go when the watermark passes this one.
            ctx.timer_service().register_event_time_timer(time);
            return Ok(());
        }
        if null_key {
            // Joins nothing; only a left join's rows come this far.
            out.collect(Row::insert(with_nulls_after(&values, self.right_width)));
            return Ok(());
        }
        let Some(time) = values[self.left_time].as_i64() else {
            return Ok(());
        };
        waiting.add(values)?;
        // Fires at the next watermark if it has already passed.
        ctx.timer_service().register_event_time_timer(time);
        Ok(())
    }

    fn on_timer(
        &mut self,
        _timestamp: i64,
        ctx: &mut ProcessContext<'_, RowKey>,
        out: &mut Collector<'_, Row>,
    ) -> FunctionResult {
        let watermark = ctx.current_watermark();
        let (waiting, versions) = self.state.as_ref().ok_or("the temporal join is not open")?;
        let mut all = versions.value()?.unwrap_or_default();
        let rows = waiting.get()?;
        let time = |r: &Vec<Value>| r[self.left_time].as_i64().unwrap_or(i64::MIN);
        if rows.iter().any(|r| time(r) <= watermark) {
            for r in rows.iter().filter(|r| time(r) <= watermark) {
                let joined = match version_at(&all, time(r)) {
                    Some(v) => {
                        let mut joined = Row::buffer(r.len() + v.len());
                        joined.extend_from_slice(r);
                        joined.extend_from_slice(v);
                        match &self.residual {
                            Some(f) if !f.passes(&joined)? => {
                                Row::recycle(joined);
                                None
                            }
                            _ => Some(joined),
                        }
                    }
                    None => None,
                };
                // Stamped with the row's own time, which stays its time
                // attribute.
                match joined {
                    Some(joined) => out.collect_with_timestamp(Row::insert(joined), time(r)),
                    None if self.outer => out.collect_with_timestamp(
                        Row::insert(with_nulls_after(r, self.right_width)),
                        time(r),
                    ),
                    None => {}
                }
            }
            waiting.retain(|r| time(r) > watermark)?;
        }
        if drop_passed(&mut all, watermark) {
            versions.update(all)?;
        }
        Ok(())
    }
}

/// Adds the version valid from `time` on (`None`: the key deleted then),
/// in place of one of the same time.
fn add_version(all: &mut Versioned, time: i64, version: Option<Vec<Value>>) {
    match all.binary_search_by_key(&time, |(t, _)| *t) {
        Ok(i) => all[i].1 = version,
        Err(i) => all.insert(i, (time, version)),
    }
}

/// The version valid at `time`: the latest from at or before it, unless
/// that one is a deletion.
fn version_at(all: &Versioned, time: i64) -> Option<&Vec<Value>> {
    let after = all.partition_point(|(t, _)| *t <= time);
    after.checked_sub(1).and_then(|i| all[i].1.as_ref())
}

/// Drops the versions no row still to come can join: those before the
/// one valid at `watermark` (rows at or below it have all been joined).
/// Whether any went.
fn drop_passed(all: &mut Versioned, watermark: i64) -> bool {
    let after = all.partition_point(|(t, _)| *t <= watermark);
    if after > 1 {
        all.drain(..after - 1);
        return true;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn version(tier: &str) -> Option<Vec<Value>> {
        Some(vec![Value::string(tier)])
    }

    fn tier_at(all: &Versioned, time: i64) -> Option<String> {
        version_at(all, time).map(|v| v[0].to_string())
    }

    #[test]
    fn a_row_joins_the_version_valid_at_its_time() {
        let mut all = Versioned::new();
        // Out of order, one replaced, one deletion.
        add_version(&mut all, 20, version("gold"));
        add_version(&mut all, 10, version("bronze"));
        add_version(&mut all, 10, version("silver"));
        add_version(&mut all, 30, None);
        add_version(&mut all, 40, version("platinum"));
        assert_eq!(
            all.iter().map(|(t, _)| *t).collect::<Vec<_>>(),
            [10, 20, 30, 40]
        );
        assert_eq!(tier_at(&all, 9), None, "before the first version");
        assert_eq!(
            tier_at(&all, 10).as_deref(),
            Some("silver"),
            "the later of one time"
        );
        assert_eq!(tier_at(&all, 19).as_deref(), Some("silver"));
        assert_eq!(
            tier_at(&all, 20).as_deref(),
            Some("gold"),
            "from its time on"
        );
        assert_eq!(tier_at(&all, 35), None, "deleted");
        assert_eq!(tier_at(&all, i64::MAX).as_deref(), Some("platinum"));
    }

    #[test]
    fn versions_go_once_a_later_one_is_valid_at_the_watermark() {
        let mut all = Versioned::new();
        for (t, tier) in [(10, "a"), (20, "b"), (30, "c")] {
            add_version(&mut all, t, version(tier));
        }
        assert!(!drop_passed(&mut all, 5), "none valid yet");
        assert!(!drop_passed(&mut all, 19), "the first is still valid");
        assert_eq!(all.len(), 3);
        assert!(drop_passed(&mut all, 20));
        // Rows at 20 and later still join b and c.
        assert_eq!(all.iter().map(|(t, _)| *t).collect::<Vec<_>>(), [20, 30]);
        assert_eq!(tier_at(&all, 25).as_deref(), Some("b"));
        assert!(drop_passed(&mut all, i64::MAX));
        assert_eq!(
            tier_at(&all, 30).as_deref(),
            Some("c"),
            "the last version stays"
        );
        assert_eq!(all.len(), 1);
    }
}
