//! Regular joins: `a [INNER | LEFT | RIGHT | FULL [OUTER]] JOIN b ON a.x =
//! b.y [AND …]`. Both sides' rows are kept in keyed state (list state per
//! join key and side, expiring after `table.exec.state.ttl`); each
//! arriving row is joined with the other side's rows of its key; the
//! joined rows have the arriving row's kind, and a retracted (`-U`/`-D`)
//! row leaves its side's state, as in Flink. An outer side's row without
//! a partner is emitted padded with NULLs (`+I`), taken back (`-D`) when
//! its first partner arrives and emitted again when its last partner is
//! retracted.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use sqlparser::ast::{
    BinaryOperator, Expr, Join, JoinConstraint, JoinOperator, Spanned, TableFactor,
};
use weir::prelude::*;

use crate::error::{position, SqlError};
use crate::expr::{compile, Condition, Eval, Scope};
use crate::key::RowKey;
use crate::plan::Planned;
use crate::value::{InputRows, Row, RowKind, Value};

/// The name a relation's columns are qualified with: its alias, else its
/// table name.
pub(crate) fn qualifier(relation: &TableFactor) -> String {
    match relation {
        TableFactor::Table { name, alias, .. } => alias
            .as_ref()
            .map(|a| a.name.value.clone())
            .unwrap_or_else(|| name.to_string()),
        TableFactor::Derived { alias, .. } => alias
            .as_ref()
            .map(|a| a.name.value.clone())
            .unwrap_or_default(),
        _ => String::new(),
    }
}

/// The conjuncts of an `AND` tree.
pub(crate) fn conjuncts(e: &Expr) -> Vec<&Expr> {
    match e {
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            let mut out = conjuncts(left);
            out.extend(conjuncts(right));
            out
        }
        Expr::Nested(inner) => conjuncts(inner),
        other => vec![other],
    }
}

/// The index in `scope` of the plain column `e` names (`c` or `t.c`).
pub(crate) fn column_index(e: &Expr, scope: &Scope) -> Option<usize> {
    match e {
        Expr::Identifier(id) => scope.index(&id.value, position(e.span())).ok(),
        Expr::CompoundIdentifier(p) if p.len() == 2 => scope
            .index_qualified(&p[0].value, &p[1].value, position(e.span()))
            .ok(),
        _ => None,
    }
}

/// `columns`, each qualified by `qualifier`.
pub(crate) fn qualified(columns: &[(String, crate::types::SqlType)], qualifier: &str) -> Scope {
    Scope {
        columns: columns.to_vec(),
        qualifiers: vec![qualifier.to_string(); columns.len()],
        used: None,
    }
}

/// The columns of a join's side `scope`, qualified by `name`; a side that
/// is itself a join (no name of its own) keeps its columns' qualifiers.
pub(crate) fn side_scope(scope: &Scope, name: &str) -> Scope {
    if name.is_empty() && scope.qualifiers.len() == scope.columns.len() {
        return Scope {
            used: None,
            ..scope.clone()
        };
    }
    qualified(&scope.columns, name)
}

/// The columns of `first` then `second`, as a join's rows hold them.
pub(crate) fn side_by_side(first: &Scope, second: &Scope) -> Scope {
    let mut joined = first.clone();
    joined.columns.extend(second.columns.iter().cloned());
    joined.qualifiers.extend(second.qualifiers.iter().cloned());
    joined
}

/// The conditions a join checks on each joined row (over `joined`), as
/// one, if there are any.
pub(crate) fn residual_condition(
    conditions: Vec<Expr>,
    joined: &Scope,
) -> Result<Option<Condition>, SqlError> {
    Ok(conditions
        .into_iter()
        .reduce(|a, b| Expr::BinaryOp {
            left: Box::new(a),
            op: BinaryOperator::And,
            right: Box::new(b),
        })
        .map(|e| compile(&e, joined))
        .transpose()?
        .map(|c| Condition::of(&c)))
}

/// A residual condition that only compares integral columns of one type
/// (q4's `B.dateTime BETWEEN A.dateTime AND A.expires`): tested on the
/// two sides' rows where they are, as integers, so that a pair that fails
/// makes no joined row and one that passes need not make one to be
/// tested (the compiled condition read the joined row through a closure
/// per comparison). A NULL fails every comparison, as it makes the
/// compiled one UNKNOWN.
#[derive(Debug, Clone)]
pub(crate) struct ColumnTests(std::sync::Arc<[(usize, std::cmp::Ordering, bool, usize)]>);

impl ColumnTests {
    /// The tests of `conditions` (a conjunction over the joined columns
    /// `joined`), if each of its conjuncts is such a comparison.
    fn of(conditions: &[Expr], joined: &Scope) -> Option<ColumnTests> {
        let column = |e: &Expr| {
            let mut e = e;
            while let Expr::Nested(inner) = e {
                e = inner;
            }
            let i = column_index(e, joined)?;
            let ty = joined.columns.get(i)?.1;
            ty.is_integral().then_some((i, ty))
        };
        let mut tests = Vec::new();
        // `a op b` as (a, the ordering op wants, whether it is negated, b):
        // `a <= b` is "a is not greater than b".
        let mut compare = |a: &Expr, op: &BinaryOperator, b: &Expr| {
            use std::cmp::Ordering::{Equal, Greater, Less};
            let (ordering, negated) = match op {
                BinaryOperator::Lt => (Less, false),
                BinaryOperator::LtEq => (Greater, true),
                BinaryOperator::Gt => (Greater, false),
                BinaryOperator::GtEq => (Less, true),
                BinaryOperator::Eq => (Equal, false),
                BinaryOperator::NotEq => (Equal, true),
                _ => return None,
            };
            let ((a, ta), (b, tb)) = (column(a)?, column(b)?);
            (ta == tb).then(|| tests.push((a, ordering, negated, b)))
        };
        for c in conditions.iter().flat_map(conjuncts) {
            match c {
                Expr::BinaryOp { left, op, right } => compare(left, op, right)?,
                Expr::Between {
                    expr,
                    negated: false,
                    low,
                    high,
                } => {
                    compare(expr, &BinaryOperator::GtEq, low)?;
                    compare(expr, &BinaryOperator::LtEq, high)?;
                }
                _ => return None,
            }
        }
        (!tests.is_empty()).then(|| ColumnTests(tests.into()))
    }

    /// Whether the joined row of `left` and `right` passes.
    #[inline]
    pub fn hold(&self, left: &[Value], right: &[Value]) -> bool {
        let at = |i| joined_column(left, right, i);
        self.0.iter().all(
            |&(a, ordering, negated, b)| match (at(a).as_i64(), at(b).as_i64()) {
                (Some(a), Some(b)) => (a.cmp(&b) == ordering) != negated,
                _ => false,
            },
        )
    }
}

/// Column `i` of the joined row of `left` and `right`, read where it is.
#[inline]
pub(crate) fn joined_column<'v>(left: &'v [Value], right: &'v [Value], i: usize) -> &'v Value {
    match left.get(i) {
        Some(v) => v,
        None => &right[i - left.len()],
    }
}

/// A side of a time bound: which side's time column (0 left, 1 right),
/// plus an offset in ms.
fn time_term(e: &Expr, scope: &Scope, times: [usize; 2]) -> Option<(usize, i64)> {
    match e {
        Expr::Nested(inner) => time_term(inner, scope, times),
        Expr::Identifier(_) | Expr::CompoundIdentifier(_) => {
            let i = match e {
                Expr::Identifier(id) => scope.index(&id.value, position(e.span())).ok()?,
                Expr::CompoundIdentifier(parts) if parts.len() == 2 => scope
                    .index_qualified(&parts[0].value, &parts[1].value, position(e.span()))
                    .ok()?,
                _ => return None,
            };
            times.iter().position(|t| *t == i).map(|side| (side, 0))
        }
        Expr::BinaryOp { left, op, right } => {
            let (side, offset) = time_term(left, scope, times)?;
            let c = compile(right, &Scope::default()).ok()?;
            let Ok(Value::Interval(ms)) = (c.eval)(&[]) else {
                return None;
            };
            match op {
                BinaryOperator::Plus => Some((side, offset + ms)),
                BinaryOperator::Minus => Some((side, offset - ms)),
                _ => None,
            }
        }
        _ => None,
    }
}

/// The bounds `low <= left time - right time <= high` the conditions put
/// on the two sides' time columns (`left_time`, `right_time`, indices in
/// `scope`), each if there is one.
pub(crate) fn time_bounds(
    conditions: &[&Expr],
    scope: &Scope,
    left_time: usize,
    right_time: usize,
) -> (Option<i64>, Option<i64>) {
    let times = [left_time, right_time];
    let (mut low, mut high) = (None::<i64>, None::<i64>);
    let mut bound = |a: &Expr, op: &BinaryOperator, b: &Expr| {
        let (Some((sa, oa)), Some((sb, ob))) =
            (time_term(a, scope, times), time_term(b, scope, times))
        else {
            return;
        };
        if sa == sb {
            return;
        }
        // a.t + oa op b.t + ob, as left - right op v.
        let (op, v) = if sa == 0 {
            (op.clone(), ob - oa)
        } else {
            let flipped = match op {
                BinaryOperator::Lt => BinaryOperator::Gt,
                BinaryOperator::LtEq => BinaryOperator::GtEq,
                BinaryOperator::Gt => BinaryOperator::Lt,
                BinaryOperator::GtEq => BinaryOperator::LtEq,
                other => other.clone(),
            };
            (flipped, oa - ob)
        };
        let mut raise = |x: i64| low = Some(low.map_or(x, |l| l.max(x)));
        match op {
            BinaryOperator::GtEq => raise(v),
            BinaryOperator::Gt => raise(v + 1),
            BinaryOperator::Eq => {
                raise(v);
                high = Some(high.map_or(v, |h| h.min(v)));
            }
            BinaryOperator::LtEq => high = Some(high.map_or(v, |h| h.min(v))),
            BinaryOperator::Lt => high = Some(high.map_or(v - 1, |h| h.min(v - 1))),
            _ => {}
        }
    };
    for c in conditions {
        match c {
            Expr::BinaryOp { left, op, right } => bound(left, op, right),
            Expr::Between {
                expr,
                negated: false,
                low: from,
                high: to,
            } => {
                bound(expr, &BinaryOperator::GtEq, from);
                bound(expr, &BinaryOperator::LtEq, to);
            }
            _ => {}
        }
    }
    (low, high)
}

/// When a regular join may drop a side's rows: a row of `side` whose
/// column `time` (of that side's columns) holds `t` joins no row still to
/// come of the other side once the watermark reaches `t + after`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Expiry {
    pub side: usize,
    time: usize,
    after: i64,
    /// How far apart a key's sweeps are: a quarter of the span a row
    /// waits, a second at least (a row is kept up to that much longer,
    /// and a key's rows are looked at about four times each).
    step: i64,
}

impl Expiry {
    /// The expiry an inner join of insert-only sides can use: the
    /// conditions (of `ON` and `WHERE`, over the joined columns `scope`,
    /// left then right, `widths` columns each) bound a time column of one
    /// side from below by a column of the other side that is above the
    /// watermark in every row still to come (`above`, by side, a window
    /// aggregation's `window_end`). Rows of the first side then wait for
    /// nothing once the watermark passes that bound. (Flink keeps them;
    /// the joined rows are the same.)
    fn of(
        conditions: &[&Expr],
        scope: &Scope,
        widths: [usize; 2],
        above: [Option<usize>; 2],
    ) -> Option<Expiry> {
        // Where each side's columns start in `scope`.
        let offsets = [0, widths[0]];
        (0..2).find_map(|side| {
            let bounded_at = offsets[1 - side] + above[1 - side]?;
            (0..widths[side]).find_map(|time| {
                let at = offsets[side] + time;
                let ty = scope.columns[at].1;
                if !ty.is_timestamp() || ty != scope.columns[bounded_at].1 {
                    return None;
                }
                let after = if side == 0 {
                    // low <= t - b: b <= t - low; rows to come have
                    // b > watermark.
                    time_bounds(conditions, scope, at, bounded_at)
                        .0?
                        .checked_neg()?
                } else {
                    // b - t <= high: b <= t + high.
                    time_bounds(conditions, scope, bounded_at, at).1?
                };
                let step = (after.unsigned_abs() / 4).max(SWEEP_MS as u64) as i64;
                Some(Expiry {
                    side,
                    time,
                    after,
                    step,
                })
            })
        })
    }

    /// When a row of the side with `values` waits for nothing: the
    /// watermark at which no row to come can join it, if its time is not
    /// NULL.
    pub fn of_row(&self, values: &[Value]) -> Option<i64> {
        Some(values.get(self.time)?.as_i64()?.saturating_add(self.after))
    }

    /// Whether a row of the side with `values` still waits for a row to
    /// come at `watermark`; if it does, `next` becomes the earliest
    /// watermark at which one of the rows it was asked about no longer
    /// does.
    pub fn waits(&self, values: &[Value], watermark: i64, next: &mut Option<i64>) -> bool {
        match self.of_row(values) {
            Some(t) if t > watermark => {
                *next = Some(next.map_or(t, |n| n.min(t)));
                true
            }
            _ => false,
        }
    }

    /// The sweep that drops a row expiring at `t`: the next whole step.
    pub fn sweep_at(&self, t: i64) -> i64 {
        (t.div_euclid(self.step) + 1).saturating_mul(self.step)
    }
}

/// A window join: each window's rows of both sides kept until the
/// watermark passes the window's end, then joined (outer sides' unmatched
/// rows padded with NULLs); rows of a window already joined are late and
/// dropped.
///
/// It runs as a window function over rows stamped with their window's
/// last millisecond and cut into windows of one millisecond: one window
/// per `window_end`, whatever windows the TVF made (tumbling, hopping,
/// cumulating), so the rows are held by window end in the window
/// operator's slices. A watermark then joins a whole window's keys at
/// once, instead of a timer per key and window, each looked up again in
/// a table larger than the caches when it fires.
#[derive(Clone)]
struct WindowJoinFunction {
    keys: usize,
    /// Each side's `window_start` column: a pair joins only if their
    /// windows start together too (their ends are one window's).
    starts: [usize; 2],
    residual: Option<Condition>,
    outer: [bool; 2],
    widths: [usize; 2],
}

/// A tagged row's side: 1 for the right, 0 for the left.
fn side_of(row: &Row) -> usize {
    usize::from(matches!(row.values[0], Value::Boolean(true)))
}

impl ProcessWindowFunction<Row, Row, RowKey, TimeWindow> for WindowJoinFunction {
    fn process(
        &mut self,
        _key: &RowKey,
        _ctx: &mut ProcessWindowContext<'_, TimeWindow>,
        elements: Elements<'_, Row>,
        out: &mut Collector<'_, Row>,
    ) -> FunctionResult {
        // Most keys of a window have rows of one side only: an inner
        // join's are done after one look at each row's side.
        let mut counts = [0usize; 2];
        for row in elements.clone() {
            counts[side_of(row)] += 1;
        }
        let has = |side: usize| counts[side] > 0;
        let joins = has(0) && has(1);
        let padded = (self.outer[0] && has(0)) || (self.outer[1] && has(1));
        if !joins && !padded {
            return Ok(());
        }
        let skip = 1 + self.keys;
        let mut sides: [Vec<(&[Value], bool)>; 2] =
            [Vec::with_capacity(counts[0]), Vec::with_capacity(counts[1])];
        for row in elements {
            // A row whose key has a NULL joins nothing (only an outer
            // side's come this far).
            let null_key = row.values[1..skip].iter().any(Value::is_null);
            sides[side_of(row)].push((&row.values[skip..], null_key));
        }
        let [left, right] = sides;
        let mut right_matched = vec![false; if self.outer[1] { right.len() } else { 0 }];
        for (l, l_null) in &left {
            let mut matched = false;
            for (i, (r, r_null)) in right.iter().enumerate() {
                if *l_null || *r_null || l.get(self.starts[0]) != r.get(self.starts[1]) {
                    continue;
                }
                let mut joined = Row::buffer(l.len() + r.len());
                joined.extend_from_slice(l);
                joined.extend_from_slice(r);
                if let Some(f) = &self.residual {
                    if !f.passes(&joined)? {
                        // Back to the pool for the next pair.
                        Row::recycle(joined);
                        continue;
                    }
                }
                matched = true;
                if let Some(seen) = right_matched.get_mut(i) {
                    *seen = true;
                }
                out.collect(Row::insert(joined));
            }
            if !matched && self.outer[0] {
                let nulls = vec![Value::Null; self.widths[1]];
                out.collect(Row::insert(
                    l.iter().chain(&nulls).cloned().collect::<Vec<_>>(),
                ));
            }
        }
        if self.outer[1] {
            for ((r, _), seen) in right.iter().zip(right_matched) {
                if !seen {
                    let nulls = vec![Value::Null; self.widths[0]];
                    out.collect(Row::insert(
                        nulls.iter().chain(r.iter()).cloned().collect::<Vec<_>>(),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// A row kept by the join: its values and, on a side whose unmatched
/// rows are kept (an outer join's), how many rows of the other side it
/// joins with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Kept {
    pub values: KeptValues,
    pub matches: u32,
}

/// A kept row's values: up to [`INLINE`] (a join that keeps only the
/// columns read keeps few) inline in the side's list, not in an
/// allocation of their own per row. They serialise as a list, as a `Vec`
/// does.
pub(crate) type KeptValues = smallvec::SmallVec<[Value; INLINE]>;

/// How many values a kept row holds inline: every row in a side's list
/// takes that room, so few.
const INLINE: usize = 2;

impl Kept {
    /// `values` kept, inline when there are few of them (their buffer
    /// then goes back to the pool for the next row).
    pub fn new(values: Vec<Value>, matches: u32) -> Kept {
        Kept::after(values, 0, matches, InputRows::Local)
    }

    /// [`Kept::new`] for an input row's `values`, made where `inputs` says.
    pub fn of_input(values: Vec<Value>, matches: u32, inputs: InputRows) -> Kept {
        Kept::after(values, 0, matches, inputs)
    }

    /// `values` after the first `skip` kept, as [`Kept::new`] keeps them:
    /// those inline are moved out of the buffer, not shifted in it first.
    pub fn after(mut values: Vec<Value>, skip: usize, matches: u32, inputs: InputRows) -> Kept {
        let skip = skip.min(values.len());
        let values = if values.len() - skip <= INLINE {
            let inline = values.drain(skip..).collect();
            inputs.release(values);
            inline
        } else {
            values.drain(..skip);
            KeptValues::from_vec(values)
        };
        Kept { values, matches }
    }
}

/// A kept row in 24 bytes when it is at most two values, each a number, a
/// time or NULL (as the rows a join keeps of Nexmark's bids, a price and
/// a time): a third of a [`Kept`]'s size, so a side with millions of rows
/// takes that much less memory to write and to read. Any other row is its
/// values in one allocation (read with one load past the row, where a
/// boxed [`Kept`] of more than two values took two). It serialises as a
/// [`Kept`] does.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Held {
    Words {
        words: [i64; 2],
        matches: u32,
        kinds: [Word; 2],
        len: u8,
    },
    Boxed {
        values: Box<[Value]>,
        matches: u32,
    },
}

/// Which value a word of a [`Held`] row is.
#[derive(Debug, Clone, Copy, PartialEq)]
#[repr(u8)]
pub(crate) enum Word {
    Null,
    Boolean,
    Int,
    BigInt,
    Double,
    Date,
    Timestamp,
    TimestampLtz,
    Interval,
}

impl Word {
    /// `v` as a word, if it is one.
    #[inline]
    pub(crate) fn of(v: &Value) -> Option<(Word, i64)> {
        Some(match *v {
            Value::Null => (Word::Null, 0),
            Value::Boolean(b) => (Word::Boolean, i64::from(b)),
            Value::Int(i) => (Word::Int, i64::from(i)),
            Value::BigInt(i) => (Word::BigInt, i),
            Value::Double(d) => (Word::Double, d.to_bits() as i64),
            Value::Date(d) => (Word::Date, i64::from(d)),
            Value::Timestamp(t) => (Word::Timestamp, t),
            Value::TimestampLtz(t) => (Word::TimestampLtz, t),
            Value::Interval(t) => (Word::Interval, t),
            _ => return None,
        })
    }

    /// The value word `w` of this kind holds.
    #[inline]
    pub(crate) fn value(self, w: i64) -> Value {
        match self {
            Word::Null => Value::Null,
            Word::Boolean => Value::Boolean(w != 0),
            Word::Int => Value::Int(w as i32),
            Word::BigInt => Value::BigInt(w),
            Word::Double => Value::Double(f64::from_bits(w as u64)),
            Word::Date => Value::Date(w as i32),
            Word::Timestamp => Value::Timestamp(w),
            Word::TimestampLtz => Value::TimestampLtz(w),
            Word::Interval => Value::Interval(w),
        }
    }
}

impl Held {
    /// `values` (of an input row made where `inputs` says) after the first
    /// `skip` kept, as [`Kept::after`] keeps them; their buffer is given
    /// back when they fit in words.
    pub fn after(values: Vec<Value>, skip: usize, matches: u32, inputs: InputRows) -> Held {
        let skip = skip.min(values.len());
        match Held::words(&values[skip..], matches) {
            Some(held) => {
                inputs.release(values);
                held
            }
            None => {
                // Exactly as many as it holds, the buffer back to the pool
                // (kept, its spare room would be kept as long as the row).
                let held = Held::Boxed {
                    values: values[skip..].iter().cloned().collect(),
                    matches,
                };
                inputs.release(values);
                held
            }
        }
    }

    fn words(values: &[Value], matches: u32) -> Option<Held> {
        if values.len() > 2 {
            return None;
        }
        let (mut words, mut kinds) = ([0; 2], [Word::Null; 2]);
        for (i, v) in values.iter().enumerate() {
            (kinds[i], words[i]) = Word::of(v)?;
        }
        Some(Held::Words {
            words,
            matches,
            kinds,
            len: values.len() as u8,
        })
    }

    /// What `f` makes of the row's values.
    #[inline]
    pub fn with_values<R>(&self, f: impl FnOnce(&[Value]) -> R) -> R {
        match self {
            Held::Words {
                words, kinds, len, ..
            } => {
                let values = [kinds[0].value(words[0]), kinds[1].value(words[1])];
                f(&values[..usize::from(*len)])
            }
            Held::Boxed { values, .. } => f(values),
        }
    }
}

impl From<Kept> for Held {
    fn from(kept: Kept) -> Held {
        Held::words(&kept.values, kept.matches).unwrap_or_else(|| Held::Boxed {
            values: kept.values.into_vec().into_boxed_slice(),
            matches: kept.matches,
        })
    }
}

impl Serialize for Held {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (Held::Boxed { matches, .. } | Held::Words { matches, .. }) = self;
        let values = self.with_values(|v| v.iter().cloned().collect());
        Kept {
            values,
            matches: *matches,
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Held {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Held, D::Error> {
        Kept::deserialize(deserializer).map(Held::from)
    }
}

const _: () = assert!(
    std::mem::size_of::<Held>() == 24,
    "a held row of two words is three words"
);

/// The keyed function holding both sides' rows.
#[derive(Clone)]
pub(crate) struct JoinFunction {
    keys: usize,
    residual: Option<Condition>,
    /// The residual condition, where it only compares columns.
    column_tests: Option<ColumnTests>,
    pub ttl: Option<Duration>,
    /// Whether unmatched left (right) rows are emitted, padded with NULLs.
    outer: [bool; 2],
    /// How many columns each side has (for the NULL padding).
    widths: [usize; 2],
    sides: Option<[ListState<Kept>; 2]>,
    /// The joined rows of the row being joined, before they are emitted
    /// (kept for its allocation).
    joined: Vec<Vec<Value>>,
    /// Which side's rows are dropped once no row to come can join them.
    expiry: Option<Expiry>,
    /// Where its input rows are made.
    pub inputs: InputRows,
}

/// Expired rows are swept by timers at whole seconds at least: the rows of
/// a key that expire within a sweep's step go at once.
const SWEEP_MS: i64 = 1000;

impl JoinFunction {
    /// `mine` (of side `side`) next to `theirs`, in left-right order.
    fn joined(side: usize, mine: &[Value], theirs: &[Value]) -> Vec<Value> {
        // From the pool: a joined row goes on downstream and its buffer
        // comes back there.
        let mut joined = Row::buffer(mine.len() + theirs.len());
        Self::joined_into(side, mine, theirs, &mut joined);
        joined
    }

    /// `mine` (of side `side`) next to `theirs`, in left-right order,
    /// appended to `out`.
    #[inline]
    pub fn joined_into(side: usize, mine: &[Value], theirs: &[Value], out: &mut Vec<Value>) {
        let (left, right) = Self::in_order(side, mine, theirs);
        out.extend_from_slice(left);
        out.extend_from_slice(right);
    }

    /// `mine` (of side `side`) and `theirs` as (left, right).
    #[inline]
    pub fn in_order<'v>(
        side: usize,
        mine: &'v [Value],
        theirs: &'v [Value],
    ) -> (&'v [Value], &'v [Value]) {
        if side == 1 {
            (theirs, mine)
        } else {
            (mine, theirs)
        }
    }

    /// `values` of side `side` with the other side's columns NULL.
    fn padded(&self, side: usize, values: &[Value]) -> Vec<Value> {
        let nulls = vec![Value::Null; self.widths[1 - side]];
        Self::joined(side, values, &nulls)
    }
}

impl KeyedProcessFunction<RowKey, Row, Row> for JoinFunction {
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.sides = Some([
            crate::plan::list_state(ctx, "left", self.ttl)?,
            crate::plan::list_state(ctx, "right", self.ttl)?,
        ]);
        self.inputs = InputRows::of(ctx);
        Ok(())
    }

    fn process_element(
        &mut self,
        row: Row,
        ctx: &mut ProcessContext<'_, RowKey>,
        out: &mut Collector<'_, Row>,
    ) -> FunctionResult {
        let (kind, retraction) = (row.kind, row.kind.is_retraction());
        // [side, keys…, values…]
        let (right, null_key, values) = untagged(row, self.keys);
        let side = usize::from(right);
        if null_key {
            // Joins nothing; only an outer side's rows come this far.
            if self.outer[side] {
                out.collect(Row {
                    kind: if retraction {
                        RowKind::Delete
                    } else {
                        RowKind::Insert
                    },
                    values: self.padded(side, &values),
                });
            }
            return Ok(());
        }
        let sides = self.sides.as_ref().ok_or("the join is not open")?;
        let (mine, other) = (&sides[side], &sides[1 - side]);
        let emit = |out: &mut Collector<'_, Row>, kind, values: Vec<Value>| {
            out.collect(Row { kind, values })
        };
        if !self.outer[1 - side] {
            // Their rows are only read: joined where they are stored, not
            // copied out of state first (a copy of every kept row of the
            // key, allocated and freed, per row). The joined rows are
            // emitted after, with the state no longer in use.
            let mut joined_rows = std::mem::take(&mut self.joined);
            self.join_all(side, &values, other, &mut joined_rows)?;
            let matched = joined_rows.len() as u32;
            for joined in joined_rows.drain(..) {
                emit(out, kind, joined);
            }
            self.joined = joined_rows;
            return self.keep(side, mine, ctx, out, kind, values, matched);
        }
        let mut theirs = other.get()?;
        let mut matched = 0;
        let mut changed = false;
        for t in &mut theirs {
            let Some(joined) = self.join_with(side, &values, &t.values)? else {
                continue;
            };
            matched += 1;
            let outer = self.outer[1 - side];
            if retraction {
                emit(out, kind, joined);
                if outer {
                    t.matches = t.matches.saturating_sub(1);
                    changed = true;
                    // Their row has no partner left: padded again.
                    if t.matches == 0 {
                        emit(out, RowKind::Insert, self.padded(1 - side, &t.values));
                    }
                }
            } else {
                if outer {
                    // Their row had no partner: its padded row goes.
                    if t.matches == 0 {
                        emit(out, RowKind::Delete, self.padded(1 - side, &t.values));
                    }
                    t.matches += 1;
                    changed = true;
                }
                emit(out, kind, joined);
            }
        }
        if changed {
            other.update(theirs)?;
        }
        self.keep(side, mine, ctx, out, kind, values, matched)
    }

    /// Drops the rows of the expiring side that no row to come can join.
    fn on_timer(
        &mut self,
        _timestamp: i64,
        ctx: &mut ProcessContext<'_, RowKey>,
        _out: &mut Collector<'_, Row>,
    ) -> FunctionResult {
        let (Some(expiry), Some(sides)) = (self.expiry, self.sides.as_ref()) else {
            return Ok(());
        };
        let watermark = ctx.current_watermark();
        // The key's one timer moves on to its next row to expire.
        let mut next = None::<i64>;
        sides[expiry.side].retain(|r| expiry.waits(&r.values, watermark, &mut next))?;
        if let Some(t) = next {
            ctx.timer_service()
                .register_event_time_timer(expiry.sweep_at(t));
        }
        Ok(())
    }
}

impl JoinFunction {
    /// How many columns the join's key has.
    pub fn key_count(&self) -> usize {
        self.keys
    }

    /// Which side's rows are dropped once no row to come can join them.
    pub fn expiry(&self) -> Option<Expiry> {
        self.expiry
    }

    /// `values` (of side `side`) joined with each of `other`'s rows it
    /// joins, onto `joined`. Their rows are only read: joined where they
    /// are stored, not copied out of state first.
    fn join_all(
        &self,
        side: usize,
        values: &[Value],
        other: &ListState<Kept>,
        joined: &mut Vec<Vec<Value>>,
    ) -> FunctionResult {
        let mut failed = None;
        other.for_each(|t| {
            if failed.is_none() {
                match self.join_with(side, values, &t.values) {
                    Ok(Some(row)) => joined.push(row),
                    Ok(None) => {}
                    Err(e) => failed = Some(e),
                }
            }
        })?;
        match failed {
            Some(e) => Err(e.into()),
            None => Ok(()),
        }
    }

    /// `mine` (of side `side`) joined with `theirs`, if the residual
    /// condition (the `ON` clause's part beyond the key) holds for them.
    pub fn join_with(
        &self,
        side: usize,
        mine: &[Value],
        theirs: &[Value],
    ) -> Result<Option<Vec<Value>>, String> {
        let mut joined = Row::buffer(mine.len() + theirs.len());
        if self.join_into(side, mine, theirs, &mut joined)? {
            Ok(Some(joined))
        } else {
            Row::recycle(joined);
            Ok(None)
        }
    }

    /// Whether `mine` (of side `side`) and `theirs` pass the residual
    /// condition, answered without joining them; `None` where the
    /// condition must read their joined row ([`join_into`](Self::join_into)).
    #[inline]
    pub fn pair_passes(&self, side: usize, mine: &[Value], theirs: &[Value]) -> Option<bool> {
        let (left, right) = Self::in_order(side, mine, theirs);
        match (&self.column_tests, &self.residual) {
            (Some(tests), _) => Some(tests.hold(left, right)),
            (None, None) => Some(true),
            (None, Some(_)) => None,
        }
    }

    /// `mine` (of side `side`) joined with `theirs` into `out` (empty), and
    /// whether the residual condition holds for them (else `out` may hold
    /// them anyway, to be cleared).
    pub fn join_into(
        &self,
        side: usize,
        mine: &[Value],
        theirs: &[Value],
        out: &mut Vec<Value>,
    ) -> Result<bool, String> {
        if let Some(passes) = self.pair_passes(side, mine, theirs) {
            if passes {
                Self::joined_into(side, mine, theirs, out);
            }
            return Ok(passes);
        }
        Self::joined_into(side, mine, theirs, out);
        match &self.residual {
            Some(f) => f.passes(out),
            None => Ok(true),
        }
    }

    /// After `values` (of side `side`, a row of kind `kind`) joined
    /// `matched` rows of the other side: keeps it in `mine`, or takes its
    /// equal out of it for a retraction; pads it with NULLs if it is an
    /// outer side's row that joined nothing.
    #[allow(clippy::too_many_arguments)]
    fn keep(
        &self,
        side: usize,
        mine: &ListState<Kept>,
        ctx: &mut ProcessContext<'_, RowKey>,
        out: &mut Collector<'_, Row>,
        kind: RowKind,
        values: Vec<Value>,
        matched: u32,
    ) -> FunctionResult {
        let retraction = kind.is_retraction();
        if matched == 0 && self.outer[side] {
            let kind = if retraction {
                RowKind::Delete
            } else {
                RowKind::Insert
            };
            out.collect(Row {
                kind,
                values: self.padded(side, &values),
            });
        }
        if retraction {
            take_out(mine, &values)?;
        } else {
            if let Some(expiry) = self.expiry.filter(|e| e.side == side) {
                // A row that no row to come can join is not kept (one
                // with a NULL time joins none).
                let until = match expiry.of_row(&values) {
                    Some(until) if until > ctx.current_watermark() => until,
                    _ => return Ok(()),
                };
                // One timer per key: set by its first row, moved on by
                // each sweep while rows are left.
                let kept = Kept::of_input(values, matched, self.inputs);
                if mine.add_is_first(kept)? {
                    ctx.timer_service()
                        .register_event_time_timer(expiry.sweep_at(until));
                }
                return Ok(());
            }
            mine.add(Kept::of_input(values, matched, self.inputs))?;
        }
        Ok(())
    }
}

/// `a = b` as a join key: the side of it over `left`'s columns and the
/// side over `right`'s, either way round, if their values compare (one
/// type, or two numeric ones).
pub(crate) fn equality_key(
    a: &Expr,
    b: &Expr,
    left: &Scope,
    right: &Scope,
) -> Option<(crate::expr::Compiled, crate::expr::Compiled)> {
    [(a, b), (b, a)].into_iter().find_map(|(x, y)| {
        let l = compile(x, left).ok()?;
        let r = compile(y, right).ok()?;
        let comparable = l.ty == r.ty || l.ty.is_numeric() && r.ty.is_numeric();
        comparable.then_some((l, r))
    })
}

/// Takes one kept row equal to `values` out of `rows` (a retraction's
/// row leaving its side), if there is one.
pub(crate) fn take_out(rows: &ListState<Kept>, values: &[Value]) -> Result<(), StateError> {
    let mut kept = rows.get()?;
    if let Some(i) = kept.iter().position(|r| r.values[..] == *values) {
        kept.swap_remove(i);
        rows.update(kept)?;
    }
    Ok(())
}

/// The functions computing a join's key on each side: keys of different
/// numeric types compare by value, both as DOUBLE when they differ, else
/// as they are.
pub(crate) fn key_functions(
    left_keys: Vec<crate::expr::Compiled>,
    right_keys: Vec<crate::expr::Compiled>,
) -> (Vec<Eval>, Vec<Eval>) {
    let normalise = |c: crate::expr::Compiled, other: crate::types::SqlType| -> Eval {
        if c.ty == other {
            c.eval
        } else {
            let f = c.eval;
            std::sync::Arc::new(move |r: &[Value]| {
                Ok(f(r)?.as_f64().map_or(Value::Null, Value::Double))
            })
        }
    };
    let (lt, rt): (Vec<_>, Vec<_>) = left_keys
        .iter()
        .zip(&right_keys)
        .map(|(l, r)| (l.ty, r.ty))
        .unzip();
    let left_fns = left_keys
        .into_iter()
        .zip(&rt)
        .map(|(c, t)| normalise(c, *t))
        .collect();
    let right_fns = right_keys
        .into_iter()
        .zip(&lt)
        .map(|(c, t)| normalise(c, *t))
        .collect();
    (left_fns, right_fns)
}

/// The key of a row [`tagged`] with `keys` key columns: held inline when
/// it is one column, not allocated per row (it keys and hashes as the list
/// of its values either way).
pub(crate) fn tagged_key(keys: usize) -> impl Fn(&Row) -> RowKey + Send + Sync + 'static {
    let key_columns: std::sync::Arc<[usize]> = (1..=keys).collect();
    move |r: &Row| RowKey::at(&r.values, &key_columns)
}

/// The rows of side `side` tagged for a join keyed by `fns`:
/// `[side, keys…, columns…]`, their columns those at `columns` (all, when
/// `None`). A row whose key has a NULL joins nothing: it is dropped,
/// unless its side keeps its unmatched rows.
pub(crate) fn tagged(
    stream: DataStream<Row>,
    side: bool,
    fns: Vec<Eval>,
    columns: Option<Vec<usize>>,
    keeps_unmatched: bool,
) -> DataStream<Row> {
    tagged_at(stream, side, fns, columns, keeps_unmatched, None)
}

/// [`tagged`], each row stamped, when `window_end` names one of its
/// columns, with the last millisecond of the window that column ends:
/// the time a window join holds it until (a row without a window end
/// joins nothing).
fn tagged_at(
    stream: DataStream<Row>,
    side: bool,
    fns: Vec<Eval>,
    columns: Option<Vec<usize>>,
    keeps_unmatched: bool,
    window_end: Option<usize>,
) -> DataStream<Row> {
    stream.process(
        move |mut row: Row, _ctx: &mut ProcessContext<'_>, out: &mut Collector<'_, Row>| {
            let stamp = match window_end {
                Some(end) => match row.values.get(end).and_then(Value::as_i64) {
                    Some(end) => Some(end.saturating_sub(1)),
                    None => return Ok(()),
                },
                None => None,
            };
            let width = columns.as_ref().map_or(row.values.len(), Vec::len);
            let mut values = Row::buffer(1 + fns.len() + width);
            values.push(Value::Boolean(side));
            for f in &fns {
                values.push(f(&row.values)?);
            }
            if !keeps_unmatched && values[1..].iter().any(Value::is_null) {
                Row::recycle(values);
                return Ok(());
            }
            // Moved, and the row's buffer goes back to the pool.
            match &columns {
                None => values.append(&mut row.values),
                Some(columns) => values.extend(
                    columns
                        .iter()
                        .map(|i| std::mem::replace(&mut row.values[*i], Value::Null)),
                ),
            }
            let row = Row {
                kind: row.kind,
                values,
            };
            match stamp {
                Some(t) => out.collect_with_timestamp(row, t),
                None => out.collect(row),
            }
            Ok(())
        },
    )
}

/// The `ON` of a temporal or lookup join (`what`), which Flink runs as
/// `JOIN` or `LEFT JOIN` only, and whether it is a left join.
pub(crate) fn inner_or_left_on<'a>(
    join: &'a Join,
    what: &str,
) -> Result<(&'a Expr, bool), SqlError> {
    let at = position(join.span());
    let (constraint, outer) = match &join.join_operator {
        JoinOperator::Join(c) | JoinOperator::Inner(c) => (c, false),
        JoinOperator::Left(c) | JoinOperator::LeftOuter(c) => (c, true),
        _ => {
            return Err(SqlError::unsupported(
                format!("a {what} other than JOIN or LEFT JOIN (as in Flink)"),
                at,
            ))
        }
    };
    match constraint {
        JoinConstraint::On(on) => Ok((on, outer)),
        _ => Err(SqlError::unsupported(
            format!("a {what} without ON (USING, NATURAL)"),
            at,
        )),
    }
}

/// A key of a temporal or lookup join: a left expression equal to a
/// column of the right side.
pub(crate) struct ColumnKey<'a> {
    pub left: crate::expr::Compiled,
    pub right: usize,
    /// The equality, for messages.
    pub written: &'a Expr,
}

/// The equalities of `on` between a left expression (over `left`) and a
/// column of the right side (`right`) that `keyable` takes, and its other
/// conditions; every condition is checked over `joined` first.
pub(crate) fn column_keys<'a>(
    on: &'a Expr,
    [left, right, joined]: [&Scope; 3],
    keyable: impl Fn(usize) -> bool,
) -> Result<(Vec<ColumnKey<'a>>, Vec<Expr>), SqlError> {
    let (mut keys, mut rest) = (Vec::new(), Vec::new());
    for c in conjuncts(on) {
        compile(c, joined)?;
        if let Expr::BinaryOp {
            left: a,
            op: BinaryOperator::Eq,
            right: b,
        } = c
        {
            let key = [(a, b), (b, a)].into_iter().find_map(|(x, y)| {
                let l = compile(x, left).ok()?;
                let r = column_index(y, right).filter(|r| keyable(*r))?;
                Some((l, r))
            });
            if let Some((left, right)) = key {
                keys.push(ColumnKey {
                    left,
                    right,
                    written: c,
                });
                continue;
            }
        }
        rest.push(c.clone());
    }
    Ok((keys, rest))
}

/// A row [`tagged`] for a join taken apart: whether it is the right
/// side's, whether its key has a NULL, and its side's columns (in the
/// row's own buffer).
pub(crate) fn untagged(mut row: Row, keys: usize) -> (bool, bool, Vec<Value>) {
    let right = matches!(row.values[0], Value::Boolean(true));
    let null_key = row.values[1..=keys].iter().any(Value::is_null);
    let mut values = std::mem::take(&mut row.values);
    values.drain(..1 + keys);
    (right, null_key, values)
}

/// `values` followed by `nulls` NULLs: a row of one side padded for the
/// other's columns.
pub(crate) fn with_nulls_after(values: &[Value], nulls: usize) -> Vec<Value> {
    let mut padded = Row::buffer(values.len() + nulls);
    padded.extend_from_slice(values);
    padded.resize(values.len() + nulls, Value::Null);
    padded
}

/// Which columns a join's statement reads, as the planner found them.
#[derive(Debug, Default)]
pub(crate) struct JoinColumns {
    /// Of the joined columns (left then right), those read above the join;
    /// `None` when that is not known.
    pub named: Option<Vec<bool>>,
    /// Whether a side's scan already left out columns of its table.
    pub scanned_fewer: bool,
}

/// The `ON` of a join of a kind Weir plans, if it has one.
pub(crate) fn on_clause(join: &Join) -> Option<&Expr> {
    match &join.join_operator {
        JoinOperator::Join(JoinConstraint::On(on))
        | JoinOperator::Inner(JoinConstraint::On(on))
        | JoinOperator::Left(JoinConstraint::On(on))
        | JoinOperator::LeftOuter(JoinConstraint::On(on))
        | JoinOperator::Right(JoinConstraint::On(on))
        | JoinOperator::RightOuter(JoinConstraint::On(on))
        | JoinOperator::FullOuter(JoinConstraint::On(on)) => Some(on),
        _ => None,
    }
}

/// The conditions of `on` and of the `WHERE` (`filter`) after a join that
/// read one side's columns alone, by side, where filtering that side's
/// rows before the join leaves the joined rows the same (Flink's filter
/// push-down): an `ON` condition on a side whose unmatched rows are
/// dropped (not an outer join's kept side), a `WHERE` condition on a side
/// never padded with NULLs (not the other side of an outer join). The
/// conditions still apply where they are written; pushed down they also
/// keep the rows that cannot join out of the join's state. A condition
/// that calls `PROCTIME()` stays where it is: evaluated twice, it could
/// say two things.
fn push_down(
    on: &Expr,
    filter: Option<&Expr>,
    outer: [bool; 2],
    scopes: [&Scope; 2],
) -> [Vec<Expr>; 2] {
    let side = |c: &Expr| -> Option<usize> {
        if c.to_string().to_ascii_uppercase().contains("PROCTIME") {
            return None;
        }
        match scopes.map(|scope| compile(c, scope).is_ok()) {
            [true, false] => Some(0),
            [false, true] => Some(1),
            _ => None,
        }
    };
    let mut pushed: [Vec<Expr>; 2] = Default::default();
    for c in conjuncts(on) {
        if let Some(s) = side(c).filter(|s| !outer[*s]) {
            pushed[s].push(c.clone());
        }
    }
    for c in filter.map(conjuncts).unwrap_or_default() {
        if let Some(s) = side(c).filter(|s| !outer[1 - *s]) {
            pushed[s].push(c.clone());
        }
    }
    pushed
}

/// `side`'s rows that every one of `conditions` (over `scope`, its
/// columns as the join names them) is TRUE for.
pub(crate) fn filtered(
    side: Planned,
    conditions: &[Expr],
    scope: &Scope,
) -> Result<Planned, SqlError> {
    let Some(first) = conditions.first() else {
        return Ok(side);
    };
    // An OR in parentheses, as it was written.
    let operand = |c: &Expr| match c {
        Expr::BinaryOp {
            op: BinaryOperator::Or,
            ..
        } => Expr::Nested(Box::new(c.clone())),
        other => other.clone(),
    };
    let all = conditions[1..]
        .iter()
        .fold(operand(first), |all, c| Expr::BinaryOp {
            left: Box::new(all),
            op: BinaryOperator::And,
            right: Box::new(operand(c)),
        });
    let condition = Condition::of(&compile(&all, scope)?);
    let mut steps = side.steps;
    steps.push(format!("Calc: where {all} (pushed below the join)"));
    Ok(Planned {
        stream: crate::plan::filter_project(side.stream, Some(condition), None),
        update_before: None,
        steps,
        ..side
    })
}

/// `left JOIN right ON …`.
///
/// `filter` is the `WHERE` applied to the joined rows after: its
/// conditions on one side alone, as the `ON`'s, filter that side's rows
/// before the join too, where that keeps the result (see
/// [`push_down`]).
pub(crate) fn plan_join(
    left: Planned,
    left_name: String,
    right: Planned,
    join: &Join,
    filter: Option<&Expr>,
    ttl: Option<Duration>,
    columns: JoinColumns,
) -> Result<Planned, SqlError> {
    Ok(
        match plan_join_parts(left, left_name, right, join, filter, ttl, columns)? {
            JoinParts::Planned(planned) => *planned,
            JoinParts::Regular(regular) => regular.finish(),
        },
    )
}

/// A join as [`plan_join`] plans it: planned whole, or a regular join
/// whose operator is still to be made (an aggregation grouped by its key
/// can run in it).
pub(crate) enum JoinParts {
    Planned(Box<Planned>),
    Regular(Box<RegularJoin>),
}

/// A regular join before its operator is made: both sides' rows, tagged
/// and in one stream, and the function that joins them.
pub(crate) struct RegularJoin {
    /// Both sides' rows, [`tagged`].
    pub tagged: DataStream<Row>,
    pub function: JoinFunction,
    /// The operator's name (the layout of its state is in it).
    pub what: String,
    /// The sides' plan steps, then the join's.
    pub steps: Vec<String>,
    /// The joined rows' columns.
    pub scope: Scope,
    /// Whether the joined rows are insert-only: an inner join of
    /// insert-only sides.
    pub inserts_only: bool,
    /// Per key, the joined row's columns that are equal to it (a side's
    /// plain column in an equality that is the key).
    pub key_columns: Vec<Vec<usize>>,
}

impl RegularJoin {
    /// The join key of a tagged row ([`tagged_key`]).
    pub fn key_of(&self) -> impl Fn(&Row) -> RowKey + Send + Sync + 'static {
        tagged_key(self.function.keys)
    }

    /// The join's operator and its joined rows.
    pub fn finish(self) -> Planned {
        let key_of = self.key_of();
        let stream = self.tagged.key_by(key_of).process(self.function);
        let stream = crate::plan::stateful(stream, &self.what);
        Planned {
            stream,
            scope: self.scope,
            // A regular join's output has no time attribute (as in Flink).
            rowtime: None,
            proctime: false,
            window: None,
            above_watermark: None,
            versions: None,
            updating: !self.inserts_only,
            update_before: None,
            steps: self.steps,
        }
    }
}

/// [`plan_join`], its regular join's operator left to make.
pub(crate) fn plan_join_parts(
    mut left: Planned,
    left_name: String,
    mut right: Planned,
    join: &Join,
    filter: Option<&Expr>,
    ttl: Option<Duration>,
    columns: JoinColumns,
) -> Result<JoinParts, SqlError> {
    let JoinColumns {
        named,
        scanned_fewer,
    } = columns;
    let at = position(join.span());
    // Which sides keep their unmatched rows, and the join's name.
    let (constraint, outer, name) = match &join.join_operator {
        JoinOperator::Join(c) | JoinOperator::Inner(c) => (c, [false, false], "inner"),
        JoinOperator::Left(c) | JoinOperator::LeftOuter(c) => (c, [true, false], "left outer"),
        JoinOperator::Right(c) | JoinOperator::RightOuter(c) => (c, [false, true], "right outer"),
        JoinOperator::FullOuter(c) => (c, [true, true], "full outer"),
        other => {
            let kind = match other {
                JoinOperator::CrossJoin(_) => "CROSS JOIN",
                JoinOperator::LeftSemi(_) | JoinOperator::Semi(_) => "SEMI JOIN",
                JoinOperator::LeftAnti(_) | JoinOperator::Anti(_) => "ANTI JOIN",
                JoinOperator::CrossApply | JoinOperator::OuterApply => "APPLY",
                _ => "this kind of join",
            };
            return Err(SqlError::unsupported(
                format!("{kind} (inner and outer joins are)"),
                at,
            ));
        }
    };
    let JoinConstraint::On(on) = constraint else {
        return Err(SqlError::unsupported(
            "JOIN without ON (USING, NATURAL)",
            at,
        ));
    };
    let right_name = qualifier(&join.relation);
    let left_scope = side_scope(&left.scope, &left_name);
    let right_scope = qualified(&right.scope.columns, &right_name);
    let joined = side_by_side(&left_scope, &right_scope);
    let [to_left, to_right] = push_down(on, filter, outer, [&left_scope, &right_scope]);
    left = filtered(left, &to_left, &left_scope)?;
    right = filtered(right, &to_right, &right_scope)?;
    // Equalities between the sides are the join key; the rest is checked
    // on each joined row.
    let (mut left_keys, mut right_keys, mut residual) = (Vec::new(), Vec::new(), Vec::new());
    // Equalities of two plain columns, as (left column, right column).
    let mut equal_columns = Vec::new();
    // Per key, the plain columns of its equality (left, right).
    let mut key_pairs = Vec::new();
    for c in conjuncts(on) {
        // Names must resolve in the joined scope (ambiguity is an error).
        compile(c, &joined)?;
        if let Expr::BinaryOp {
            left: a,
            op: BinaryOperator::Eq,
            right: b,
        } = c
        {
            if let Some((l, r)) = equality_key(a, b, &left_scope, &right_scope) {
                let mut pair = None;
                for (x, y) in [(a, b), (b, a)] {
                    if let (Some(i), Some(j)) =
                        (column_index(x, &left_scope), column_index(y, &right_scope))
                    {
                        equal_columns.push((i, j));
                        pair = pair.or(Some((i, j)));
                    }
                }
                key_pairs.push(pair);
                left_keys.push(l);
                right_keys.push(r);
                continue;
            }
        }
        residual.push(c.clone());
    }
    if left_keys.is_empty() {
        return Err(SqlError::unsupported(
            "a join without an equality between the two sides' columns",
            at,
        ));
    }
    // Both sides' windows equal: a window join, each window's rows joined
    // when the watermark passes its end (insert-only), as in Flink.
    let window_join = match (left.window, right.window) {
        (Some([ls, le]), Some([rs, re]))
            if !left.updating
                && !right.updating
                && equal_columns.contains(&(ls, rs))
                && equal_columns.contains(&(le, re)) =>
        {
            Some([[ls, le], [rs, re]])
        }
        _ => None,
    };
    // Bounds between the sides' event times make an interval join (state
    // cleaned up as the watermarks pass, output insert-only), as in Flink.
    let interval = match (left.rowtime, right.rowtime) {
        (Some(l), Some(r))
            if outer == [false, false]
                && window_join.is_none()
                && !left.proctime
                && !right.proctime
                && !left.updating
                && !right.updating =>
        {
            let conditions: Vec<&Expr> = residual.iter().collect();
            let (low, high) = time_bounds(&conditions, &joined, l, left.scope.columns.len() + r);
            low.zip(high)
        }
        _ => None,
    };
    // A regular join keeps (and joins) only the columns of its rows that
    // are read above it (`named`, over the joined columns) or by its own
    // conditions: a row of each side in state, for ever, is then as small
    // as the statement allows (Flink's projection push-down).
    let kept = match named {
        Some(named) if interval.is_none() && window_join.is_none() => {
            let scope = joined.tracking();
            // The key's equalities hold by keying: a column read by them
            // alone is not kept.
            for c in &residual {
                compile(c, &scope)?;
            }
            let used: Vec<bool> = (scope.used_columns().into_iter().zip(named))
                .map(|(on, above)| on || above)
                .collect();
            let w = left.scope.columns.len();
            let picked = |range: std::ops::Range<usize>| -> Vec<usize> {
                let start = range.start;
                range.filter(|i| used[*i]).map(|i| i - start).collect()
            };
            (used.contains(&false)).then(|| [picked(0..w), picked(w..used.len())])
        }
        _ => None,
    };
    let joined = match &kept {
        Some([l, r]) => {
            let pick = |columns: &[(String, crate::types::SqlType)], at: &[usize]| {
                at.iter().map(|i| columns[*i].clone()).collect::<Vec<_>>()
            };
            side_by_side(
                &qualified(&pick(&left.scope.columns, l), &left_name),
                &qualified(&pick(&right.scope.columns, r), &right_name),
            )
        }
        None => joined,
    };
    let column_tests = ColumnTests::of(&residual, &joined);
    let residual = residual_condition(residual, &joined)?;
    if let Some([[ls, le], [rs, re]]) = window_join {
        // A window join holds its rows by window end, and checks the
        // starts of each pair: the windows' equalities are not part of
        // the key (a key of one column is held inline, not allocated per
        // row), as in Flink, whose window join is keyed by the others.
        let window_pair =
            |pair: &Option<(usize, usize)>| pair.is_some_and(|p| p == (ls, rs) || p == (le, re));
        let mut pairs = key_pairs.iter();
        left_keys.retain(|_| !window_pair(pairs.next().unwrap_or(&None)));
        let mut pairs = key_pairs.iter();
        right_keys.retain(|_| !window_pair(pairs.next().unwrap_or(&None)));
    }
    let keys = left_keys.len();
    let (left_fns, right_fns) = key_functions(left_keys, right_keys);
    let tag = |stream: DataStream<Row>, side: bool, fns: Vec<Eval>, columns: Option<Vec<usize>>| {
        tagged(stream, side, fns, columns, outer[usize::from(side)])
    };
    let widths = match &kept {
        Some([l, r]) => [l.len(), r.len()],
        None => [left.scope.columns.len(), right.scope.columns.len()],
    };
    // A column above the watermark, where the join keeps it.
    let above = |side: usize, column: Option<usize>| match &kept {
        Some(kept) => kept[side].iter().position(|k| Some(*k) == column),
        None => column,
    };
    // An inner join of insert-only sides, one of which has a column above
    // the watermark that bounds the other side's time: that side's rows
    // are dropped once no row to come can join them.
    let expiry = if outer == [false, false] && !left.updating && !right.updating {
        let mut conditions = conjuncts(on);
        conditions.extend(filter.map(conjuncts).unwrap_or_default());
        Expiry::of(
            &conditions,
            &joined,
            widths,
            [
                above(0, left.above_watermark),
                above(1, right.above_watermark),
            ],
        )
    } else {
        None
    };
    if let Some((low, high)) = interval {
        let keyed = |stream: DataStream<Row>, fns: Vec<Eval>| {
            let check = fns.clone();
            stream
                // A NULL key joins nothing.
                .filter(move |r: &Row| {
                    check
                        .iter()
                        .all(|f| f(&r.values).is_ok_and(|v| !v.is_null()))
                })
                .key_by(move |r: &Row| {
                    fns.iter()
                        .map(|f| f(&r.values).unwrap_or(Value::Null))
                        .collect::<Vec<Value>>()
                })
        };
        let (l, r) = (keyed(left.stream, left_fns), keyed(right.stream, right_fns));
        // low <= left time - right time <= high, i.e. right time within
        // [left time - high, left time - low].
        let what = format!("IntervalJoin[{on}]");
        let stream = l.interval_join(&r).between(-high, -low).process(
            move |a: &Row, b: &Row, _ctx: &ProcessJoinContext, out: &mut Collector<'_, Row>| {
                let mut joined = Row::buffer(a.values.len() + b.values.len());
                joined.extend_from_slice(&a.values);
                joined.extend_from_slice(&b.values);
                if let Some(f) = &residual {
                    if !f.passes(&joined)? {
                        Row::recycle(joined);
                        return Ok(());
                    }
                }
                out.collect(Row::insert(joined));
                Ok(())
            },
        );
        let stream = crate::plan::stateful(stream, &what);
        let mut steps = left.steps;
        steps.extend(right.steps);
        steps.push(format!(
            "IntervalJoin: inner, on {on}, left time - right time in [{low}, {high}] ms"
        ));
        return Ok(JoinParts::Planned(Box::new(Planned {
            stream,
            scope: joined,
            // The output's records carry the later of the two times, which
            // neither time column holds: no time attribute.
            rowtime: None,
            proctime: false,
            window: None,
            above_watermark: None,
            versions: None,
            updating: false,
            update_before: None,
            steps,
        })));
    }
    if let Some([[ls, le], [rs, re]]) = window_join {
        let (starts, ends) = ([ls, rs], [le, re]);
        let stamped = |stream, side: bool, fns| {
            let end = Some(ends[usize::from(side)]);
            tagged_at(stream, side, fns, None, outer[usize::from(side)], end)
        };
        let stream = stamped(left.stream, false, left_fns)
            .union(&[stamped(right.stream, true, right_fns)])
            .key_by(tagged_key(keys))
            .window(TumblingEventTimeWindows::of(Duration::from_millis(1)))
            .process(WindowJoinFunction {
                keys,
                starts,
                residual,
                outer,
                widths,
            });
        let stream = crate::plan::stateful(stream, &format!("WindowJoin[{name}; {on}]"));
        let mut steps = left.steps;
        steps.extend(right.steps);
        steps.push(format!("WindowJoin: {name}, on {on}"));
        return Ok(JoinParts::Planned(Box::new(Planned {
            stream,
            scope: joined,
            rowtime: None,
            proctime: false,
            window: left.window,
            above_watermark: None,
            versions: None,
            updating: false,
            update_before: None,
            steps,
        })));
    }
    let keeps_fewer = kept.is_some() || scanned_fewer;
    // Each key's plain columns, where the joined rows have them.
    let key_columns = key_pairs
        .iter()
        .map(|pair| {
            pair.map_or_else(Vec::new, |(i, j)| {
                let l = above(0, Some(i));
                let r = above(1, Some(j)).map(|r| widths[0] + r);
                l.into_iter().chain(r).collect()
            })
        })
        .collect();
    let [left_columns, right_columns] = kept.map_or([None, None], |[l, r]| [Some(l), Some(r)]);
    let tagged = tag(left.stream, false, left_fns, left_columns).union(&[tag(
        right.stream,
        true,
        right_fns,
        right_columns,
    )]);
    let function = JoinFunction {
        keys,
        residual,
        column_tests,
        ttl,
        outer,
        widths,
        sides: None,
        joined: Vec::new(),
        expiry,
        inputs: InputRows::Local,
    };
    // The kept columns (the join's, or its scans', fewer than its tables
    // have) are part of the state's layout: a savepoint of a join that
    // kept others does not restore into this one.
    let keeps = if keeps_fewer {
        let names: Vec<String> = (joined.qualifiers.iter().zip(&joined.columns))
            .map(|(q, (n, _))| format!("{q}.{n}"))
            .collect();
        format!(", keeping {}", names.join(", "))
    } else {
        String::new()
    };
    let what = format!("Join[{name}; {on}{keeps}]");
    let mut steps = left.steps;
    steps.extend(right.steps);
    steps.push(format!(
        "Join: {name}, on {on}{keeps}{}",
        expiry.map_or(String::new(), |e| {
            let (side, other) = if e.side == 0 {
                ("left", "right")
            } else {
                ("right", "left")
            };
            format!(
                ", {side} rows dropped when the watermark passes their `{}` {} {} ms \
                 (no {other} row to come joins them)",
                joined.columns[e.side * widths[0] + e.time].0,
                if e.after < 0 { '-' } else { '+' },
                e.after.unsigned_abs()
            )
        })
    ));
    Ok(JoinParts::Regular(Box::new(RegularJoin {
        tagged,
        function,
        what,
        steps,
        scope: joined,
        // An outer join takes back its NULL-padded rows when a partner
        // comes.
        inserts_only: !(left.updating || right.updating || outer.contains(&true)),
        key_columns,
    })))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::SqlType;

    fn parsed(sql: &str) -> Expr {
        sqlparser::parser::Parser::new(&sqlparser::dialect::GenericDialect {})
            .try_with_sql(sql)
            .and_then(|mut p| p.parse_expr())
            .expect("an expression")
    }

    /// A residual of column comparisons, tested on the two rows where they
    /// are, passes exactly the pairs the compiled condition passes on
    /// their joined row, NULLs included; any other residual is left to the
    /// compiled condition.
    #[test]
    fn column_tests_pass_the_pairs_the_compiled_residual_passes() {
        let left = qualified(
            &[
                ("t".into(), SqlType::Timestamp),
                ("x".into(), SqlType::BigInt),
                ("i".into(), SqlType::Int),
            ],
            "A",
        );
        let right = qualified(
            &[
                ("t".into(), SqlType::Timestamp),
                ("y".into(), SqlType::BigInt),
                ("s".into(), SqlType::String),
            ],
            "B",
        );
        let joined = side_by_side(&left, &right);
        let sides = |v: [Option<i64>; 4]| {
            let value = |v: Option<i64>, f: fn(i64) -> Value| v.map_or(Value::Null, f);
            (
                vec![
                    value(v[0], Value::Timestamp),
                    value(v[1], Value::BigInt),
                    Value::Int(1),
                ],
                vec![
                    value(v[2], Value::Timestamp),
                    value(v[3], Value::BigInt),
                    Value::string("s"),
                ],
            )
        };
        let values = [None, Some(1), Some(2), Some(3)];
        for sql in [
            "B.t BETWEEN A.t AND B.t",
            "A.t < B.t",
            "A.t <= B.t AND (B.y > A.x)",
            "B.y >= A.x AND B.y <> A.x",
            "A.x = B.y",
            "B.t BETWEEN A.t AND B.t AND A.x < B.y",
        ] {
            let conditions = vec![parsed(sql)];
            let tests = ColumnTests::of(&conditions, &joined).expect(sql);
            let compiled = residual_condition(conditions, &joined)
                .expect("compiled")
                .expect("a condition");
            for a in values {
                for b in values {
                    for c in values {
                        for d in values {
                            let (l, r) = sides([a, b, c, d]);
                            let row: Vec<Value> = l.iter().chain(&r).cloned().collect();
                            assert_eq!(
                                tests.hold(&l, &r),
                                compiled.passes(&row).expect("passes"),
                                "{sql} over {row:?}"
                            );
                        }
                    }
                }
            }
        }
        // Arithmetic, types apart (a time and a number, INT and BIGINT),
        // text, a disjunction, a constant: left to the compiled condition.
        for sql in [
            "A.x + 1 < B.y",
            "B.t BETWEEN A.t AND A.x",
            "A.i < B.y",
            "B.s = 's'",
            "A.x < B.y OR A.t < B.t",
            "A.x < 3",
        ] {
            assert!(ColumnTests::of(&[parsed(sql)], &joined).is_none(), "{sql}");
        }
    }

    /// A kept row's values serialise as the list a `Vec` makes, inline or
    /// not: savepoints of either restore.
    #[test]
    fn kept_values_serialise_as_a_list() {
        #[derive(Serialize)]
        struct AsVec {
            values: Vec<Value>,
            matches: u32,
        }
        let narrow = vec![Value::BigInt(1), Value::Null];
        let wide: Vec<Value> = (0..5).map(Value::BigInt).collect();
        for (values, inline) in [(narrow, true), (wide, false)] {
            let kept = Kept::new(values.clone(), 2);
            assert_eq!(kept.values.spilled(), !inline);
            assert_eq!(kept.values[..], values[..]);
            assert_eq!(
                serde_json::to_string(&kept).ok(),
                serde_json::to_string(&AsVec { values, matches: 2 }).ok()
            );
        }
    }

    /// A row of up to two numbers, times or NULLs is held in words; it
    /// reads back as the values it was made of, and is saved as the
    /// `Kept` of those values is (savepoints of either restore into the
    /// other). Any other row is held as a `Kept`.
    #[test]
    fn held_rows_read_and_save_as_kept_rows() {
        let words = [
            Value::Null,
            Value::Boolean(true),
            Value::Int(-7),
            Value::BigInt(i64::MIN),
            Value::Double(-0.5),
            Value::Date(19_000),
            Value::Timestamp(1_700_000_000_123),
            Value::TimestampLtz(-1),
            Value::Interval(86_400_000),
        ];
        let mut rows: Vec<(Vec<Value>, bool)> = vec![(vec![], true)];
        for a in &words {
            rows.push((vec![a.clone()], true));
            for b in &words {
                rows.push((vec![a.clone(), b.clone()], true));
            }
        }
        rows.push((vec![Value::BigInt(1), Value::string("x")], false));
        rows.push(((0..3).map(Value::BigInt).collect(), false));
        for (values, in_words) in rows {
            // Two leading columns (a side and a key) skipped, as a join's.
            let mut row = vec![Value::Boolean(false), Value::BigInt(42)];
            row.extend(values.iter().cloned());
            let held = Held::after(row, 2, 3, InputRows::Local);
            assert_eq!(matches!(held, Held::Words { .. }), in_words, "{values:?}");
            held.with_values(|v| assert_eq!(v, &values[..]));
            let kept = Kept::new(values.clone(), 3);
            let saved = serde_json::to_string(&held).expect("saved");
            assert_eq!(saved, serde_json::to_string(&kept).expect("saved"));
            let restored: Held = serde_json::from_str(&saved).expect("restored");
            assert_eq!(restored, held);
        }
    }
}
