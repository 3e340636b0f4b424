//! SQL aggregate functions (`COUNT`, `COUNT(DISTINCT …)`, `SUM`, `MIN`,
//! `MAX`, `AVG`, `LISTAGG`) as one Weir [`AggregateFunction`] over a row of
//! pre-computed arguments, with Flink's result types and NULL handling.
//!
//! Over an updating input (a changelog with `-U`/`-D` rows) the
//! accumulators can also retract: they then keep what retracting needs, as
//! Flink's `…WithRetract` functions do (a count beside a sum, a multiset of
//! values for `MIN`/`MAX`/`COUNT(DISTINCT)`, the list for `LISTAGG`).

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

use serde::{Deserialize, Serialize};
use smallvec::SmallVec;
use sqlparser::ast::BinaryOperator;
use weir::window::AggregateFunction;

use crate::expr::apply;
use crate::int_masks::IntMasks;
use crate::types::SqlType;
use crate::value::{push_clone, push_made, Row, Value};

/// Which aggregate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AggKind {
    /// `COUNT(*)`.
    CountStar,
    /// `COUNT(x)`: non-NULL values.
    Count,
    CountDistinct,
    Sum,
    Min,
    Max,
    Avg,
    /// `LISTAGG(x [, separator])`: the values joined, in arrival order.
    ListAgg,
    /// `FIRST_VALUE(x)`: the first value that is not NULL, in arrival
    /// order (as Flink's, which skips NULLs).
    FirstValue,
    /// `LAST_VALUE(x)`: the last value that is not NULL.
    LastValue,
    /// `VAR_POP(x)`, `VAR_SAMP(x)` (`VARIANCE`), `STDDEV_POP(x)` and
    /// `STDDEV_SAMP(x)` (`STDDEV`).
    Spread(Spread),
    /// `LAG(x, offset, default)` in an OVER window: `x` of the row
    /// `offset` rows before in the partition (NULL or not), `default`
    /// (the argument after `x` in the arguments row) when there is none.
    Lag(u32),
}

/// Which of the variances or standard deviations an aggregate is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Spread {
    /// Over `n - 1` (a sample's) rather than `n` (a population's).
    pub sample: bool,
    /// The square root (a standard deviation) of the variance.
    pub root: bool,
}

/// One aggregate call: its kind, the index of its argument in the input
/// row, and the argument's type.
#[derive(Debug, Clone)]
pub(crate) struct AggCall {
    pub kind: AggKind,
    pub arg: usize,
    pub arg_type: SqlType,
    /// `LISTAGG`'s separator.
    pub separator: String,
    /// The column of its `FILTER (WHERE …)` condition: a row counts only
    /// where that is TRUE.
    pub filter: Option<usize>,
}

impl AggCall {
    /// Whether `row` passes the call's `FILTER`, if it has one.
    #[inline]
    fn takes(&self, row: &Row) -> bool {
        passes(self.filter, row)
    }
}

/// Whether `row` passes a `FILTER` whose condition is column `filter`
/// (every row passes none).
#[inline]
fn passes(filter: Option<usize>, row: &Row) -> bool {
    passes_at(filter, |i| &row.values[i])
}

/// [`passes`] for a row whose column `i` is `at(i)`.
#[inline]
fn passes_at<'v>(filter: Option<usize>, at: impl Fn(usize) -> &'v Value) -> bool {
    filter.is_none_or(|f| matches!(at(f), Value::Boolean(true)))
}

impl AggCall {
    /// Flink's result type.
    pub fn result_type(&self) -> SqlType {
        match (self.kind, self.arg_type) {
            (AggKind::CountStar | AggKind::Count | AggKind::CountDistinct, _) => SqlType::BigInt,
            (AggKind::ListAgg, _) => SqlType::String,
            (AggKind::Lag(_), t) => t,
            (AggKind::Sum, SqlType::Decimal(_, s)) => SqlType::Decimal(38, s),
            (AggKind::Avg | AggKind::Spread(_), SqlType::Decimal(_, s)) => {
                SqlType::Decimal(38, s.max(6))
            }
            (_, t) => t,
        }
    }
}

/// The state of one aggregate in one group and window.
///
/// The hash sets and maps are boxed (one word instead of six): the rare
/// `COUNT(DISTINCT)` pays a pointer so that every other accumulator, held
/// inline by the thousand in window and group state, stays small.
#[allow(clippy::box_collection)]
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) enum Acc {
    Count(i64),
    Distinct(Box<HashSet<Value>>),
    /// `COUNT(DISTINCT)` of an integer, date or time column: the values
    /// as integers, a third of the memory of values (a set of many values
    /// is as fast as its misses in the caches are few).
    DistinctInts(Box<HashSet<i64, IntHash>>),
    /// The `COUNT(DISTINCT)`s of one integral column under different
    /// `FILTER`s (q15's `COUNT(DISTINCT bidder) FILTER (WHERE …)`), held
    /// by the first of them: each value once, with a bit for each call
    /// whose filter took it, so that a row looks its value up once rather
    /// than once per call (as Flink shares one map per distinct column).
    /// The other calls hold their counts as [`Acc::Count`].
    SharedDistinct(Box<SharedDistinct>),
    /// Sum, minimum or maximum so far (NULL before the first value).
    Value(Value),
    /// An average's (or a retracting sum's) running sum and how many
    /// values it holds.
    Avg {
        sum: Value,
        count: i64,
    },
    /// A retracting `MIN`/`MAX`: each value and how often it is held.
    Sorted(BTreeMap<Ordered, i64>),
    /// A retracting `COUNT(DISTINCT)`: each value and how often it is held.
    Counted(Box<HashMap<Value, i64>>),
    /// A retracting `LISTAGG`: the values, in arrival order.
    List(Vec<Value>),
    /// A variance's or standard deviation's sums.
    Moments(Box<Moments>),
    /// `LAG`'s last values, oldest first, and its default.
    Lag(Box<(VecDeque<Value>, Value)>),
}

/// The values of the `COUNT(DISTINCT)` calls sharing one column, and the
/// count of the first of them: two cache lines, on a line's boundary, so
/// that loading a group's set ahead is loading those two.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[repr(align(64))]
pub(crate) struct SharedDistinct {
    /// Each value, and a bit for each sharing call (in call order) that
    /// has taken it.
    values: IntMasks,
    /// How many values the first call has taken.
    count: i64,
}

const _: () = assert!(
    std::mem::size_of::<SharedDistinct>() == 128,
    "a shared set is loaded ahead as two lines: its latest values fill them"
);

/// The most `COUNT(DISTINCT)` calls one set of values is shared by (the
/// bits of a value's mask).
const SHARED_MAX: usize = 64;

/// The sums a variance is computed from, as Flink reduces `VAR_POP(x)` to
/// `(SUM(x * x) - SUM(x) * SUM(x) / COUNT(x)) / COUNT(x)`: exact for
/// integers and DECIMALs (unscaled, at the column's scale and twice it),
/// in floating point for DOUBLEs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Moments {
    sum: i128,
    squares: i128,
    sum_f: f64,
    squares_f: f64,
    count: i64,
    /// A DECIMAL square or sum was past an `i128` (the result is NULL,
    /// as Flink's decimal overflow is).
    overflowed: bool,
}

impl Moments {
    /// Adds (`sign` 1) or takes out (-1) the value `v` of type `t`.
    fn add(&mut self, v: &Value, t: SqlType, sign: i64) {
        self.count += sign;
        match (t, v) {
            (SqlType::Double, _) => {
                let x = v.as_f64().unwrap_or(0.0) * sign as f64;
                let y = v.as_f64().unwrap_or(0.0);
                self.sum_f += x;
                self.squares_f += x * y;
            }
            (SqlType::Decimal(_, scale), Value::Decimal(x, s)) => {
                let x = rescaled(x.get(), *s, scale);
                let square = x.and_then(|x| x.checked_mul(x));
                match (x, square) {
                    (Some(x), Some(square)) => {
                        let sign = i128::from(sign);
                        self.sum = self.sum.wrapping_add(x * sign);
                        self.squares = self.squares.wrapping_add(square * sign);
                    }
                    _ => self.overflowed = true,
                }
            }
            _ => {
                let x = i128::from(v.as_i64().unwrap_or(0));
                self.sum += x * i128::from(sign);
                self.squares += x * x * i128::from(sign);
            }
        }
    }

    fn merge(&mut self, other: &Moments) {
        self.sum = self.sum.wrapping_add(other.sum);
        self.squares = self.squares.wrapping_add(other.squares);
        self.sum_f += other.sum_f;
        self.squares_f += other.squares_f;
        self.count += other.count;
        self.overflowed |= other.overflowed;
    }

    /// The variance or standard deviation `spread` of values of type `t`,
    /// in the result type `result`: NULL without values, and for a sample
    /// of one.
    fn result(&self, spread: Spread, t: SqlType, result: SqlType) -> Value {
        let n = self.count;
        let over = if spread.sample { n - 1 } else { n };
        if n <= 0 || over <= 0 || self.overflowed {
            return Value::Null;
        }
        match (t, result) {
            (SqlType::Double, _) => {
                let var = (self.squares_f - self.sum_f * self.sum_f / n as f64) / over as f64;
                Value::Double(if spread.root { var.sqrt() } else { var })
            }
            (SqlType::Decimal(_, scale), SqlType::Decimal(_, to)) => {
                // (n * Σx² - (Σx)²) / (n * over), at twice the scale.
                let exact = (self.squares.checked_mul(i128::from(n)))
                    .and_then(|a| a.checked_sub(self.sum.checked_mul(self.sum)?));
                let Some(numerator) = exact else {
                    return Value::Null;
                };
                let denominator = i128::from(n) * i128::from(over);
                let from = 2 * u32::from(scale);
                if spread.root {
                    let var = numerator as f64 / denominator as f64 / 10f64.powi(from as i32);
                    return crate::expr::cast(Value::Double(var.sqrt()), SqlType::Double, result)
                        .unwrap_or(Value::Null);
                }
                let to = u32::from(to);
                let (numerator, denominator) = if to >= from {
                    match 10i128
                        .checked_pow(to - from)
                        .and_then(|f| numerator.checked_mul(f))
                    {
                        Some(scaled) => (scaled, denominator),
                        None => return Value::Null,
                    }
                } else {
                    match 10i128
                        .checked_pow(from - to)
                        .and_then(|f| denominator.checked_mul(f))
                    {
                        Some(scaled) => (numerator, scaled),
                        None => return Value::Null,
                    }
                };
                Value::decimal(divide_half_up(numerator, denominator), to as u8)
            }
            _ => {
                // The exact variance, its integer part (as Flink casts its
                // result back to the column's type); a standard deviation
                // is the integer part of the exact variance's root.
                let exact = (self.squares.checked_mul(i128::from(n)))
                    .and_then(|a| a.checked_sub(self.sum.checked_mul(self.sum)?));
                let Some(numerator) = exact else {
                    return Value::Null;
                };
                let denominator = i128::from(n) * i128::from(over);
                let v = if spread.root {
                    (numerator as f64 / denominator as f64).sqrt() as i64
                } else {
                    (numerator / denominator) as i64
                };
                if t == SqlType::Int {
                    Value::Int(v as i32)
                } else {
                    Value::BigInt(v)
                }
            }
        }
    }
}

/// `v` (unscaled, at scale `from`) at scale `to`, if it fits.
fn rescaled(v: i128, from: u8, to: u8) -> Option<i128> {
    match to.cmp(&from) {
        Ordering::Equal => Some(v),
        Ordering::Greater => 10i128
            .checked_pow(u32::from(to - from))
            .and_then(|f| v.checked_mul(f)),
        Ordering::Less => Some(v / 10i128.pow(u32::from(from - to))),
    }
}

/// `a / b` rounded half away from zero (`b` > 0), as Java's `HALF_UP`.
fn divide_half_up(a: i128, b: i128) -> i128 {
    let (q, r) = (a / b, a % b);
    if r.unsigned_abs() * 2 >= b.unsigned_abs() {
        q + a.signum()
    } else {
        q
    }
}

/// Hashes an integer with two multiplications (a 64-bit finaliser's
/// mixing): the set of a `COUNT(DISTINCT)` is filled from the query's
/// own rows, so a keyed hash against crafted input (SipHash, std's
/// default) buys nothing there but time.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct IntHash;

impl std::hash::BuildHasher for IntHash {
    type Hasher = IntHasher;

    fn build_hasher(&self) -> IntHasher {
        IntHasher(0)
    }
}

pub(crate) struct IntHasher(u64);

impl std::hash::Hasher for IntHasher {
    fn finish(&self) -> u64 {
        let mut x = self.0;
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
        x ^= x >> 33;
        x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        x ^ (x >> 33)
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn write_i64(&mut self, v: i64) {
        self.0 ^= v as u64;
    }
}

/// One group's (and window's) accumulators, one per aggregate call: up to
/// two held inline, so that most groups' accumulators sit beside their
/// key in the table (no allocation of their own, no second cache miss to
/// reach them). Serialised as a list, as a `Vec` is.
pub(crate) type Accumulators = SmallVec<[Acc; 2]>;

/// One group's (and window's) results, one per aggregate call: up to two
/// held inline, so that a window's result per key allocates nothing.
pub(crate) type Results = SmallVec<[Value; 2]>;

/// A value ordered as SQL compares it (the values of one column have one
/// type, so every pair compares).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Ordered(pub Value);

impl PartialOrd for Ordered {
    fn partial_cmp(&self, other: &Ordered) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Ordered {
    fn cmp(&self, other: &Ordered) -> Ordering {
        self.0.compare(&other.0).unwrap_or(Ordering::Equal)
    }
}

/// `COUNT(BIGINT), SUM(INT), …`: what a list of aggregate calls keeps
/// state for.
pub(crate) fn describe(calls: &[AggCall]) -> String {
    calls
        .iter()
        .map(|c| {
            let filtered = if c.filter.is_some() { " filtered" } else { "" };
            let kind = match c.kind {
                AggKind::Spread(Spread { sample, root }) => format!(
                    "{}{}",
                    if root { "Stddev" } else { "Var" },
                    if sample { "Samp" } else { "Pop" }
                ),
                kind => format!("{kind:?}"),
            };
            format!("{kind}({}){filtered}", c.arg_type)
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The aggregates of a query, fed rows whose columns are their arguments.
#[derive(Debug, Clone)]
pub(crate) struct SqlAggregates {
    pub calls: Vec<AggCall>,
    /// Whether the accumulators must be able to retract (the input is a
    /// changelog with retractions).
    pub retracting: bool,
    /// New accumulators, when they own no memory (counts, sums, minima,
    /// maxima, averages, at most two): then a copy of their bytes is a new
    /// set of accumulators.
    plain: Option<Accumulators>,
    /// For the first of the `COUNT(DISTINCT)` calls that share a column
    /// (see [`Acc::SharedDistinct`]), all of them, it first; `None` for
    /// every other call.
    shares: Vec<Option<Box<[usize]>>>,
    /// Whether each call counts its distinct values in another's set.
    followers: Vec<bool>,
    /// What `add` does, call by call (none for a call counted in
    /// another's set).
    steps: Vec<Step>,
    /// Whether a call is a `VAR_*` or `STDDEV_*` (see
    /// [`SqlAggregates::spread_sums`]).
    spreads: bool,
}

/// What [`SqlAggregates`]' `add` does for a call, decided once: a row
/// went through every call's checks of its kind, its sharing and its
/// accumulator's form (q15: twelve calls, half of them counted in another
/// call's set).
#[derive(Debug, Clone, Copy)]
enum Step {
    /// `COUNT(*)`, of the rows its `FILTER` column (if any) takes.
    CountRows { call: usize, filter: Option<usize> },
    /// The `COUNT(DISTINCT)`s sharing the set of this call, the first.
    Shared(usize),
    /// Any other call.
    Each(usize),
}

impl SqlAggregates {
    /// The aggregates `calls`, able to retract when `retracting`.
    pub fn new(calls: Vec<AggCall>, retracting: bool) -> SqlAggregates {
        let shares = if retracting {
            vec![None; calls.len()]
        } else {
            shared_distincts(&calls)
        };
        let followers: Vec<bool> = (0..calls.len())
            .map(|i| {
                shares
                    .iter()
                    .flatten()
                    .any(|members| members[1..].contains(&i))
            })
            .collect();
        let steps = (0..calls.len())
            .filter(|&i| !followers[i])
            .map(|i| match (&shares[i], calls[i].kind) {
                (Some(_), _) => Step::Shared(i),
                (None, AggKind::CountStar) => Step::CountRows {
                    call: i,
                    filter: calls[i].filter,
                },
                (None, _) => Step::Each(i),
            })
            .collect();
        let calls_spread = calls.iter().any(|c| matches!(c.kind, AggKind::Spread(_)));
        let mut aggregates = SqlAggregates {
            calls,
            retracting,
            plain: None,
            shares,
            followers,
            steps,
            spreads: calls_spread,
        };
        let fresh = aggregates.fresh();
        let owns_nothing = !fresh.spilled()
            && fresh.iter().all(|a| match a {
                Acc::Count(_) => true,
                Acc::Value(v) | Acc::Avg { sum: v, .. } => v.is_null(),
                _ => false,
            });
        aggregates.plain = owns_nothing.then_some(fresh);
        aggregates
    }

    /// One new accumulator per call.
    fn fresh(&self) -> Accumulators {
        self.calls
            .iter()
            .enumerate()
            .map(|(i, c)| match c.kind {
                AggKind::CountStar | AggKind::Count => Acc::Count(0),
                AggKind::CountDistinct => match &self.shares[i] {
                    Some(members) => Acc::SharedDistinct(Box::new(SharedDistinct {
                        values: IntMasks::with_bits(members.len()),
                        count: 0,
                    })),
                    None if self.followers[i] => Acc::Count(0),
                    None if self.retracting => Acc::Counted(Box::default()),
                    None if c.arg_type.is_integral() => Acc::DistinctInts(Box::default()),
                    None => Acc::Distinct(Box::default()),
                },
                AggKind::Min | AggKind::Max if self.retracting => Acc::Sorted(BTreeMap::new()),
                AggKind::ListAgg | AggKind::FirstValue | AggKind::LastValue if self.retracting => {
                    Acc::List(Vec::new())
                }
                AggKind::Sum if self.retracting => Acc::Avg {
                    sum: Value::Null,
                    count: 0,
                },
                AggKind::Sum
                | AggKind::Min
                | AggKind::Max
                | AggKind::ListAgg
                | AggKind::FirstValue
                | AggKind::LastValue => Acc::Value(Value::Null),
                AggKind::Avg => Acc::Avg {
                    sum: Value::Null,
                    count: 0,
                },
                AggKind::Spread(_) => Acc::Moments(Box::default()),
                AggKind::Lag(_) => Acc::Lag(Box::new((VecDeque::new(), Value::Null))),
            })
            .collect()
    }

    /// Starts loading into cache where the shared `COUNT(DISTINCT)` sets
    /// of `acc` will look up the values of the first rows of `rows`, so
    /// that a group's lookups, each likely a miss with many groups, wait
    /// together rather than one after another. A hint: nothing changes.
    pub fn prefetch_distinct(&self, rows: &[Row], acc: &Accumulators) {
        // A group with many rows in a bundle has its sets in cache after
        // the first few rows.
        const AHEAD: usize = 8;
        for (leader, members) in self.shares.iter().enumerate() {
            if members.is_none() {
                continue;
            }
            let Acc::SharedDistinct(shared) = &acc[leader] else {
                continue;
            };
            let arg = self.calls[leader].arg;
            let values = rows.iter().take(AHEAD);
            shared
                .values
                .prefetch(values.filter_map(|row| row.values.get(arg).and_then(Value::as_i64)));
        }
    }

    /// Starts loading the accumulators `acc` into cache where they are
    /// held apart from their owner (more than fit inline). A hint.
    #[inline]
    pub fn prefetch_accumulators(&self, acc: &Accumulators) {
        if acc.spilled() {
            weir_state::prefetch_slice(acc);
        }
    }

    /// Starts loading the shared `COUNT(DISTINCT)` sets of `acc` into
    /// cache (their boxes, not their values: see
    /// [`SqlAggregates::prefetch_distinct`]). A hint.
    #[inline]
    pub fn prefetch_shared(&self, acc: &Accumulators) {
        for (leader, members) in self.shares.iter().enumerate() {
            if let (Some(_), Some(Acc::SharedDistinct(shared))) = (members, acc.get(leader)) {
                weir_state::prefetch_slice(std::slice::from_ref(&**shared));
            }
        }
    }

    /// Adds `row` to the accumulators `acc` (as [`AggregateFunction::add`],
    /// for a caller that reads the row afterwards).
    pub fn add_row(&self, row: &Row, acc: &mut Accumulators) {
        for step in &self.steps {
            match *step {
                Step::CountRows { call, filter } => {
                    if let (true, Acc::Count(n)) = (passes(filter, row), &mut acc[call]) {
                        *n += 1;
                    }
                }
                Step::Shared(leader) => {
                    let Some(members) = &self.shares[leader] else {
                        continue;
                    };
                    // The calls sharing a set are fed together, by the
                    // first, even where its own filter leaves the row out.
                    // State from before the sharing holds a set per call,
                    // fed one by one.
                    if matches!(acc[leader], Acc::SharedDistinct(_)) {
                        add_shared(&self.calls, members, row, acc);
                    } else {
                        for &m in members.iter() {
                            self.add_one(m, row, acc);
                        }
                    }
                }
                Step::Each(i) => self.add_one(i, row, acc),
            }
        }
    }

    /// Whether every row added changes the results: a `COUNT(*)` without
    /// a `FILTER` counts it. A caller that needs the results before a
    /// change only to tell whether they changed need not make them.
    pub fn counts_every_row(&self) -> bool {
        self.calls
            .iter()
            .any(|c| c.kind == AggKind::CountStar && c.filter.is_none())
    }

    /// Whether adding `row` to `acc` may change it: `false` only where
    /// [`add_row`](Self::add_row) would leave every accumulator as it is
    /// (a `FILTER` that drops the row, a NULL argument, a value that is no
    /// new minimum or maximum, a `FIRST_VALUE` already set). Then no
    /// result changes, and a caller comparing results before and after
    /// need make neither (q4: most bids raise no auction's maximum).
    pub fn changes(&self, row: &Row, acc: &Accumulators) -> bool {
        self.changes_at(|i| &row.values[i], acc)
    }

    /// [`Self::changes`] for a row whose column `i` is `at(i)`, not made
    /// (a joined row, read from the two rows it would join).
    #[inline]
    pub fn changes_at<'v>(
        &self,
        at: impl Fn(usize) -> &'v Value + Copy,
        acc: &Accumulators,
    ) -> bool {
        self.steps.iter().any(|step| match *step {
            Step::CountRows { filter, .. } => passes_at(filter, at),
            Step::Shared(_) => true,
            Step::Each(i) => self.changes_one(i, at, &acc[i]),
        })
    }

    /// [`Self::changes_at`] for call `i` alone; in step with
    /// [`Self::add_one`].
    fn changes_one<'v>(&self, i: usize, at: impl Fn(usize) -> &'v Value, a: &Acc) -> bool {
        let call = &self.calls[i];
        if !passes_at(call.filter, &at) {
            return false;
        }
        if matches!(call.kind, AggKind::Lag(_)) {
            return true;
        }
        let v = at(call.arg);
        if v.is_null() {
            return false;
        }
        match (call.kind, a) {
            (AggKind::Min | AggKind::Max, Acc::Value(m)) => is_new_extreme(call.kind, v, m),
            (AggKind::FirstValue, Acc::Value(first)) => first.is_null(),
            _ => true,
        }
    }

    /// The sums each `VAR_*` or `STDDEV_*` call of `acc` keeps (none for
    /// other calls). Flink plans such a call as `SUM`s and a `COUNT`, the
    /// variance computed after the aggregation, so its aggregation's
    /// result is the sums: a row that changes them changes the result,
    /// emitted again even where the variance comes out the same (two equal
    /// values in a row: `-U`/`+U` of a standard deviation of 0).
    pub fn spread_sums(&self, acc: &[Acc]) -> SmallVec<[Moments; 1]> {
        if !self.spreads {
            return SmallVec::new();
        }
        acc.iter()
            .filter_map(|a| match a {
                Acc::Moments(m) => Some((**m).clone()),
                _ => None,
            })
            .collect()
    }

    /// Appends the results of `acc` to `out` (a result row being built,
    /// its key columns already in it).
    pub fn results_into(&self, acc: &[Acc], out: &mut impl Extend<Value>) {
        out.extend(
            self.calls
                .iter()
                .zip(acc)
                .map(|(call, a)| result_of(call, a)),
        );
    }

    /// [`results_into`](SqlAggregates::results_into) a row's buffer, the
    /// common results written straight into their slots: a result made on
    /// the stack a piece at a time and copied whole waited for the pieces
    /// (most of a `GROUP BY`'s result row's time).
    pub fn results_onto(&self, acc: &[Acc], out: &mut Vec<Value>) {
        out.reserve(acc.len());
        for (call, a) in self.calls.iter().zip(acc) {
            match a {
                Acc::Count(n) => push_made(out, || Value::BigInt(*n)),
                Acc::Value(v) => push_clone(out, v),
                Acc::Avg { sum, count } if call.kind == AggKind::Sum && *count > 0 => {
                    push_clone(out, sum)
                }
                _ => out.push(result_of(call, a)),
            }
        }
    }

    /// Takes `row`'s arguments out of `acc` again (a `-U` or `-D` row of
    /// an updating input). Needs accumulators made with `retracting`.
    pub fn retract(&self, row: &Row, acc: &mut [Acc]) {
        for (call, a) in self.calls.iter().zip(acc.iter_mut()) {
            if !call.takes(row) {
                continue;
            }
            // `COUNT(*)` reads no column (the row may have none).
            if call.kind == AggKind::CountStar {
                if let Acc::Count(n) = a {
                    *n -= 1;
                }
                continue;
            }
            let v = &row.values[call.arg];
            if v.is_null() {
                continue;
            }
            match a {
                Acc::Count(n) => *n -= 1,
                Acc::Avg { sum, count } => {
                    *sum = subtract_values(sum, v, sum_type(call.arg_type));
                    *count -= 1;
                }
                Acc::Sorted(values) => {
                    let key = Ordered(v.clone());
                    if let Some(n) = values.get_mut(&key) {
                        *n -= 1;
                        if *n <= 0 {
                            values.remove(&key);
                        }
                    }
                }
                Acc::Counted(values) => {
                    if let Some(n) = values.get_mut(v) {
                        *n -= 1;
                        if *n <= 0 {
                            values.remove(v);
                        }
                    }
                }
                Acc::List(list) => {
                    if let Some(i) = list.iter().position(|x| x == v) {
                        list.remove(i);
                    }
                }
                Acc::Moments(m) => m.add(v, call.arg_type, -1),
                // LAG looks back over rows, not over its frame.
                Acc::Lag(_) => {}
                // Append-only accumulators cannot retract; the planner
                // makes retracting ones for updating inputs.
                Acc::Distinct(_)
                | Acc::DistinctInts(_)
                | Acc::SharedDistinct(_)
                | Acc::Value(_) => {}
            }
        }
    }
}

fn subtract_values(a: &Value, b: &Value, t: SqlType) -> Value {
    match (a, b) {
        (Value::BigInt(x), Value::BigInt(y)) => Value::BigInt(x.wrapping_sub(*y)),
        (Value::Int(x), Value::Int(y)) => Value::Int(x.wrapping_sub(*y)),
        _ => apply(&BinaryOperator::Minus, a, b, t).unwrap_or(Value::Null),
    }
}

fn add_values(a: &Value, b: &Value, t: SqlType) -> Value {
    if a.is_null() {
        return b.clone();
    }
    // Overflow of an integer sum wraps (Java's long), of a decimal sum is
    // NULL, as in Flink.
    match (a, b) {
        (Value::BigInt(x), Value::BigInt(y)) => Value::BigInt(x.wrapping_add(*y)),
        (Value::Int(x), Value::Int(y)) => Value::Int(x.wrapping_add(*y)),
        _ => apply(&BinaryOperator::Plus, a, b, t).unwrap_or(Value::Null),
    }
}

/// Whether `v` replaces `m` as the running value of a non-retracting
/// `MIN` or `MAX` (`kind`): the first value, or a lower (higher) one.
#[inline]
fn is_new_extreme(kind: AggKind, v: &Value, m: &Value) -> bool {
    let better = if kind == AggKind::Min {
        std::cmp::Ordering::Less
    } else {
        std::cmp::Ordering::Greater
    };
    // Most extremes are of integers or times: compared as such, not
    // through the general comparison, for every row of q4's MAX.
    let order = match (v, m) {
        (Value::BigInt(a), Value::BigInt(b))
        | (Value::Timestamp(a), Value::Timestamp(b))
        | (Value::TimestampLtz(a), Value::TimestampLtz(b)) => Some(a.cmp(b)),
        (Value::Int(a), Value::Int(b)) => Some(a.cmp(b)),
        _ => v.compare(m),
    };
    m.is_null() || order == Some(better)
}

/// The result of `call` whose accumulator is `a`.
#[inline(always)]
fn result_of(call: &AggCall, a: &Acc) -> Value {
    match a {
        Acc::Count(n) => Value::BigInt(*n),
        Acc::Distinct(set) => Value::BigInt(set.len() as i64),
        Acc::DistinctInts(set) => Value::BigInt(set.len() as i64),
        Acc::SharedDistinct(shared) => Value::BigInt(shared.count),
        Acc::Counted(values) => Value::BigInt(values.len() as i64),
        Acc::Value(v) => v.clone(),
        Acc::Avg { sum, count } if call.kind == AggKind::Sum => {
            if *count > 0 {
                sum.clone()
            } else {
                Value::Null
            }
        }
        Acc::Avg { sum, count } => average(sum, *count, call.result_type()),
        Acc::Lag(lag) => match call.kind {
            AggKind::Lag(offset) if lag.0.len() > offset as usize => {
                lag.0.front().cloned().unwrap_or(Value::Null)
            }
            _ => lag.1.clone(),
        },
        Acc::Moments(m) => match call.kind {
            AggKind::Spread(spread) => m.result(spread, call.arg_type, call.result_type()),
            _ => Value::Null,
        },
        Acc::Sorted(values) => {
            let extreme = if call.kind == AggKind::Min {
                values.keys().next()
            } else {
                values.keys().next_back()
            };
            extreme.map_or(Value::Null, |v| v.0.clone())
        }
        // The values held, in arrival order (a retraction takes
        // out the earliest equal one, as Flink's does).
        Acc::List(list) => match call.kind {
            AggKind::FirstValue => list.first().cloned().unwrap_or(Value::Null),
            AggKind::LastValue => list.last().cloned().unwrap_or(Value::Null),
            _ => list
                .iter()
                .fold(Value::Null, |joined, v| join(&joined, v, &call.separator)),
        },
    }
}

impl AggregateFunction<Row, Accumulators, Results> for SqlAggregates {
    fn create_accumulator(&mut self) -> Accumulators {
        match &self.plain {
            // A copy of the bytes of accumulators made once. Made anew, each
            // accumulator was built on the stack and read back in other
            // widths than it was written in, a stall on every new window of
            // a key (a fifth of a TUMBLE job's time).
            // SAFETY: `plain` holds its accumulators inline, and they own
            // no memory (numbers and NULLs only): a copy of their bytes is
            // a clone, and dropping both drops nothing twice.
            Some(plain) => unsafe { std::ptr::read(plain) },
            None => self.fresh(),
        }
    }

    fn add(&mut self, row: Row, acc: &mut Accumulators) {
        self.add_row(&row, acc);
    }

    fn get_result(&mut self, acc: &Accumulators) -> Results {
        let mut results = Results::new();
        self.results_into(acc, &mut results);
        results
    }

    fn merge(&mut self, mut a: Accumulators, mut b: Accumulators) -> Accumulators {
        self.share_sets(&mut a);
        self.share_sets(&mut b);
        let mut merged: Accumulators = self
            .calls
            .iter()
            .zip(a.into_iter().zip(b))
            .map(|(call, (x, y))| merged(call, x, y))
            .collect();
        self.recount_shared(&mut merged);
        merged
    }

    /// Counts, sums, minima, maxima and averages merge where they are,
    /// without copying `from` (a sliding window merges each key's slices
    /// into it); the others merge a copy.
    fn merge_into(&mut self, into: &mut Accumulators, from: &Accumulators) {
        self.share_sets(into);
        let shared_from;
        let from = if self.sets_apart(from) {
            let mut copy = from.clone();
            self.share_sets(&mut copy);
            shared_from = copy;
            &shared_from
        } else {
            from
        };
        for ((call, x), y) in self.calls.iter().zip(into.iter_mut()).zip(from) {
            if !merged_in_place(call, x, y) {
                let a = std::mem::replace(x, Acc::Count(0));
                *x = merged(call, a, y.clone());
            }
        }
        self.recount_shared(into);
    }
}

impl SqlAggregates {
    /// Feeds `row` to call `i` alone: any call but a `COUNT(*)`, which is
    /// a [`Step::CountRows`] (it reads no column, and the row may have
    /// none).
    fn add_one(&self, i: usize, row: &Row, acc: &mut Accumulators) {
        let call = &self.calls[i];
        if !call.takes(row) {
            return;
        }
        let a = &mut acc[i];
        let v = &row.values[call.arg];
        // LAG keeps NULLs too.
        if let (AggKind::Lag(offset), Acc::Lag(lag)) = (call.kind, &mut *a) {
            lag.0.push_back(v.clone());
            if lag.0.len() > offset as usize + 1 {
                lag.0.pop_front();
            }
            lag.1 = row.values.get(call.arg + 1).cloned().unwrap_or(Value::Null);
            return;
        }
        if v.is_null() {
            return;
        }
        match (call.kind, a) {
            (AggKind::Count, Acc::Count(n)) => *n += 1,
            (AggKind::CountDistinct, Acc::Distinct(set)) => {
                set.insert(v.clone());
            }
            (AggKind::CountDistinct, Acc::DistinctInts(set)) => {
                // An integral column's values are all integers.
                if let Some(i) = v.as_i64() {
                    set.insert(i);
                }
            }
            (AggKind::Sum, Acc::Value(sum)) => *sum = add_values(sum, v, call.result_type()),
            (AggKind::Min | AggKind::Max, Acc::Value(m)) if is_new_extreme(call.kind, v, m) => {
                *m = v.clone();
            }
            (AggKind::ListAgg, Acc::Value(list)) => {
                *list = join(list, v, &call.separator);
            }
            (AggKind::FirstValue, Acc::Value(first)) if first.is_null() => *first = v.clone(),
            (AggKind::LastValue, Acc::Value(last)) => *last = v.clone(),
            (AggKind::Avg | AggKind::Sum, Acc::Avg { sum, count }) => {
                *sum = add_values(sum, v, sum_type(call.arg_type));
                *count += 1;
            }
            (_, Acc::Sorted(values)) => *values.entry(Ordered(v.clone())).or_insert(0) += 1,
            (_, Acc::Counted(values)) => *values.entry(v.clone()).or_insert(0) += 1,
            (_, Acc::List(list)) => list.push(v.clone()),
            (_, Acc::Moments(m)) => m.add(v, call.arg_type, 1),
            _ => {}
        }
    }

    /// Whether `acc` holds a set per call where calls share one: state
    /// saved before the sets were shared.
    fn sets_apart(&self, acc: &Accumulators) -> bool {
        self.shares
            .iter()
            .zip(acc)
            .any(|(members, a)| members.is_some() && !matches!(a, Acc::SharedDistinct(_)))
    }

    /// Makes the sets per call of calls that share one (state saved before
    /// the sets were shared) one shared set, so that both sides of a merge
    /// hold the same form: merged with a shared set, a set per call would
    /// be dropped. The counts are set by [`Self::recount_shared`] after.
    fn share_sets(&self, acc: &mut Accumulators) {
        'groups: for (leader, members) in self.shares.iter().enumerate() {
            let Some(members) = members else { continue };
            if matches!(acc[leader], Acc::SharedDistinct(_)) {
                continue;
            }
            let mut shared = SharedDistinct {
                values: IntMasks::with_bits(members.len()),
                count: 0,
            };
            for (bit, &m) in members.iter().enumerate() {
                let mut take = |v: i64| {
                    shared.values.insert(v, 1 << bit);
                };
                match &acc[m] {
                    Acc::DistinctInts(set) => set.iter().copied().for_each(&mut take),
                    Acc::Distinct(set) => set.iter().filter_map(Value::as_i64).for_each(&mut take),
                    // Neither form: this group is left as it is.
                    _ => continue 'groups,
                }
            }
            acc[leader] = Acc::SharedDistinct(Box::new(shared));
            for &m in &members[1..] {
                acc[m] = Acc::Count(0);
            }
        }
    }

    /// Sets the counts of the calls sharing a set from the merged set
    /// (each side's counts summed would count a value held by both twice).
    fn recount_shared(&self, acc: &mut Accumulators) {
        for (leader, members) in self.shares.iter().enumerate() {
            let Some(members) = members else { continue };
            let Acc::SharedDistinct(shared) = &mut acc[leader] else {
                continue;
            };
            let mut counts = [0i64; SHARED_MAX];
            for (_, mask) in shared.values.iter() {
                let mut bits = mask;
                while bits != 0 {
                    counts[bits.trailing_zeros() as usize] += 1;
                    bits &= bits - 1;
                }
            }
            shared.count = counts[0];
            for (&m, &n) in members.iter().zip(&counts).skip(1) {
                acc[m] = Acc::Count(n);
            }
        }
    }
}

/// For each call, the calls that share its set of values when it is the
/// first of them: the append-only `COUNT(DISTINCT)`s of one integral
/// column, when there are two or more (up to [`SHARED_MAX`] a set).
fn shared_distincts(calls: &[AggCall]) -> Vec<Option<Box<[usize]>>> {
    let mut shares: Vec<Option<Box<[usize]>>> = vec![None; calls.len()];
    let mut placed = vec![false; calls.len()];
    for (i, call) in calls.iter().enumerate() {
        if placed[i] || call.kind != AggKind::CountDistinct || !call.arg_type.is_integral() {
            continue;
        }
        let members: Vec<usize> = (i..calls.len())
            .filter(|&j| {
                !placed[j]
                    && calls[j].kind == AggKind::CountDistinct
                    && calls[j].arg == call.arg
                    && calls[j].arg_type == call.arg_type
            })
            .take(SHARED_MAX)
            .collect();
        for &m in &members {
            placed[m] = true;
        }
        if members.len() > 1 {
            shares[i] = Some(members.into());
        }
    }
    shares
}

/// Feeds `row` to the `COUNT(DISTINCT)` calls `members` (the first holds
/// their set): its value is looked up once, and each call whose filter
/// takes it and had not taken it before counts one more.
fn add_shared(calls: &[AggCall], members: &[usize], row: &Row, acc: &mut Accumulators) {
    // An integral column's values are all integers (or NULL, not counted).
    let Some(v) = row.values[calls[members[0]].arg].as_i64() else {
        return;
    };
    let mut taken = 0u64;
    for (bit, &m) in members.iter().enumerate() {
        if calls[m].takes(row) {
            taken |= 1 << bit;
        }
    }
    if taken == 0 {
        return;
    }
    let Acc::SharedDistinct(shared) = &mut acc[members[0]] else {
        return;
    };
    let mut new = shared.values.insert(v, taken);
    if new & 1 != 0 {
        shared.count += 1;
        new &= !1;
    }
    while new != 0 {
        if let Acc::Count(n) = &mut acc[members[new.trailing_zeros() as usize]] {
            *n += 1;
        }
        new &= new - 1;
    }
}

/// `x` and `y`, accumulators of `call`, merged.
fn merged(call: &AggCall, mut x: Acc, y: Acc) -> Acc {
    if merged_in_place(call, &mut x, &y) {
        return x;
    }
    match (x, y) {
        (Acc::Distinct(mut x), Acc::Distinct(y)) => {
            x.extend(*y);
            Acc::Distinct(x)
        }
        (Acc::DistinctInts(mut x), Acc::DistinctInts(y)) => {
            x.extend(*y);
            Acc::DistinctInts(x)
        }
        // The counts are set from the merged set afterwards.
        (Acc::SharedDistinct(mut x), Acc::SharedDistinct(y)) => {
            x.values.merge(&y.values);
            Acc::SharedDistinct(x)
        }
        (Acc::Sorted(mut x), Acc::Sorted(y)) => {
            for (v, n) in y {
                *x.entry(v).or_insert(0) += n;
            }
            Acc::Sorted(x)
        }
        (Acc::Counted(mut x), Acc::Counted(y)) => {
            for (v, n) in *y {
                *x.entry(v).or_insert(0) += n;
            }
            Acc::Counted(x)
        }
        (Acc::List(mut x), Acc::List(y)) => {
            x.extend(y);
            Acc::List(x)
        }
        (Acc::Moments(mut x), Acc::Moments(y)) => {
            x.merge(&y);
            Acc::Moments(x)
        }
        (x, _) => x,
    }
}

/// Merges `y` into `x`, accumulators of `call`, where `x` is, if they are
/// a count, a value (sum, minimum, maximum, …) or an average; false for
/// the others, which own collections and merge by moving `y`'s.
fn merged_in_place(call: &AggCall, x: &mut Acc, y: &Acc) -> bool {
    match (x, y) {
        (Acc::Count(x), Acc::Count(y)) => *x += y,
        (Acc::Value(x), Acc::Value(y)) => {
            let changed = match call.kind {
                AggKind::Sum => (!y.is_null()).then(|| add_values(x, y, call.result_type())),
                AggKind::Min if x.is_null() || y.compare(x) == Some(Ordering::Less) => {
                    Some(y.clone())
                }
                AggKind::Max if x.is_null() || y.compare(x) == Some(Ordering::Greater) => {
                    Some(y.clone())
                }
                // Both lists, `y`'s first: a sliding window merges its
                // slices oldest first, and Flink lists the later slices'
                // values before the earlier ones'.
                AggKind::ListAgg if !y.is_null() && !x.is_null() => {
                    Some(join(y, x, &call.separator))
                }
                // `y` is the later slice's.
                AggKind::LastValue if !y.is_null() => Some(y.clone()),
                _ if x.is_null() => Some(y.clone()),
                _ => None,
            };
            if let Some(v) = changed {
                *x = v;
            }
        }
        (Acc::Avg { sum: s1, count: c1 }, Acc::Avg { sum: s2, count: c2 }) => {
            if !s2.is_null() {
                *s1 = add_values(s1, s2, sum_type(call.arg_type));
            }
            *c1 += c2;
        }
        _ => return false,
    }
    true
}

/// `list` with `v` appended after `separator` (`v` alone if `list` is NULL).
fn join(list: &Value, v: &Value, separator: &str) -> Value {
    if list.is_null() {
        return Value::string(&v.to_string());
    }
    Value::string(&format!("{list}{separator}{v}"))
}

/// The type an average's running sum is kept in.
fn sum_type(t: SqlType) -> SqlType {
    match t {
        SqlType::Int | SqlType::BigInt => SqlType::BigInt,
        SqlType::Decimal(_, s) => SqlType::Decimal(38, s),
        other => other,
    }
}

/// `sum / count` in the result type (integer averages truncate, as
/// Flink's `AVG` of an integer column does).
fn average(sum: &Value, count: i64, t: SqlType) -> Value {
    if count == 0 || sum.is_null() {
        return Value::Null;
    }
    match t {
        SqlType::Int => Value::Int((sum.as_i64().unwrap_or(0) / count) as i32),
        SqlType::BigInt => Value::BigInt(sum.as_i64().unwrap_or(0) / count),
        SqlType::Double => Value::Double(sum.as_f64().unwrap_or(0.0) / count as f64),
        SqlType::Decimal(..) => {
            apply(&BinaryOperator::Divide, sum, &Value::BigInt(count), t).unwrap_or(Value::Null)
        }
        _ => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Variances as Flink 2.3 gave them: a DECIMAL's rounded half up at
    /// scale 6, an integer's the integer part of the exact value (not of
    /// one computed with integer divisions), NULL for a sample of one.
    #[test]
    fn variances_round_as_flinks() {
        let spread = |sample, root| Spread { sample, root };
        let of = |values: &[Value], t: SqlType| {
            let mut m = Moments::default();
            for v in values {
                m.add(v, t, 1);
            }
            m
        };
        let decimals = [12.50, 40.25, 1.00].map(|x: f64| Value::decimal((x * 100.0) as i128, 2));
        let m = of(&decimals, SqlType::Decimal(10, 2));
        let result = SqlType::Decimal(38, 6);
        let t = SqlType::Decimal(10, 2);
        assert_eq!(
            m.result(spread(false, false), t, result).to_string(),
            "271.430556"
        );
        assert_eq!(
            m.result(spread(true, false), t, result).to_string(),
            "407.145833"
        );
        assert_eq!(
            m.result(spread(false, true), t, result).to_string(),
            "16.475150"
        );
        let ints = of(&[Value::BigInt(0), Value::BigInt(3)], SqlType::BigInt);
        // (9 - 9 / 2) / 1 with integer division would be 5.
        assert_eq!(
            ints.result(spread(true, false), SqlType::BigInt, SqlType::BigInt),
            Value::BigInt(4)
        );
        assert_eq!(
            ints.result(spread(false, true), SqlType::BigInt, SqlType::BigInt),
            Value::BigInt(1)
        );
        let mut one = of(&[Value::BigInt(7)], SqlType::BigInt);
        assert_eq!(
            one.result(spread(true, false), SqlType::BigInt, SqlType::BigInt),
            Value::Null
        );
        assert_eq!(
            one.result(spread(false, false), SqlType::BigInt, SqlType::BigInt),
            Value::BigInt(0)
        );
        one.add(&Value::BigInt(7), SqlType::BigInt, -1);
        assert_eq!(
            one.result(spread(false, false), SqlType::BigInt, SqlType::BigInt),
            Value::Null
        );
    }

    #[test]
    fn accumulators_serialise_as_a_list() {
        // State written when the accumulators were a `Vec` reads back.
        let accs: Vec<Acc> = vec![
            Acc::Count(3),
            Acc::Value(Value::BigInt(9)),
            Acc::Distinct(Box::new(HashSet::from([Value::Int(1)]))),
        ];
        let held: Accumulators = accs.iter().cloned().collect();
        let text = serde_json::to_string(&held).expect("serialises");
        assert_eq!(text, serde_json::to_string(&accs).expect("serialises"));
        let back: Accumulators = serde_json::from_str(&text).expect("reads back");
        assert_eq!(back.len(), 3);
        // Two are held beside their key, without an allocation.
        assert!(!held[..2]
            .iter()
            .cloned()
            .collect::<Accumulators>()
            .spilled());
    }

    /// Merged in place, accumulators hold what merging them whole gives,
    /// and that is the accumulator of both sides' rows, for every kind of
    /// aggregate and with NULLs and empty sides.
    #[test]
    fn merging_in_place_is_merging_copies() {
        let call = |kind, arg_type| AggCall {
            kind,
            arg: 0,
            arg_type,
            separator: ";".into(),
            filter: None,
        };
        let mut calls = Vec::new();
        for t in [SqlType::BigInt, SqlType::Decimal(10, 2)] {
            for kind in [
                AggKind::CountStar,
                AggKind::Count,
                AggKind::CountDistinct,
                AggKind::Sum,
                AggKind::Min,
                AggKind::Max,
                AggKind::Avg,
                AggKind::ListAgg,
            ] {
                calls.push(call(kind, t));
            }
        }
        let value = |t: SqlType, n: i64| match t {
            SqlType::Decimal(..) => Value::decimal(i128::from(n) * 7, 2),
            _ => Value::BigInt(n),
        };
        let sides: [&[Option<i64>]; 4] = [
            &[],
            &[None],
            &[Some(3), None, Some(-2)],
            &[Some(5), Some(3)],
        ];
        for c in &calls {
            let mut agg = SqlAggregates::new(vec![c.clone()], false);
            let acc_of = |agg: &mut SqlAggregates, rows: &[Option<i64>]| {
                let mut acc = agg.create_accumulator();
                for r in rows {
                    let v = r.map_or(Value::Null, |n| value(c.arg_type, n));
                    agg.add(Row::insert(vec![v]), &mut acc);
                }
                acc
            };
            for a in sides {
                for b in sides {
                    let (x, y) = (acc_of(&mut agg, a), acc_of(&mut agg, b));
                    let whole = agg.merge(x.clone(), y.clone());
                    let mut in_place = x;
                    agg.merge_into(&mut in_place, &y);
                    assert_eq!(
                        agg.get_result(&in_place).to_vec(),
                        agg.get_result(&whole).to_vec(),
                        "{:?} {:?}: {a:?} + {b:?}",
                        c.kind,
                        c.arg_type
                    );
                    // Both are the accumulator of both sides' rows (the
                    // merged side's listed first, as Flink's sliding
                    // windows list a later slice's).
                    let rows: Vec<Option<i64>> = b.iter().chain(a).copied().collect();
                    let all = acc_of(&mut agg, &rows);
                    assert_eq!(
                        agg.get_result(&whole).to_vec(),
                        agg.get_result(&all).to_vec(),
                        "{:?} {:?}: {a:?} + {b:?}",
                        c.kind,
                        c.arg_type
                    );
                }
            }
        }
    }

    fn run(calls: Vec<AggCall>, rows: &[Vec<Value>]) -> Vec<Value> {
        let mut agg = SqlAggregates::new(calls, false);
        let mut acc = agg.create_accumulator();
        for r in rows {
            agg.add(Row::insert(r.clone()), &mut acc);
        }
        agg.get_result(&acc).to_vec()
    }

    /// A call with a `FILTER` takes the rows whose condition is TRUE, in
    /// `add` and in `retract`; FALSE and NULL are left out.
    #[test]
    fn a_filtered_call_takes_only_rows_whose_condition_is_true() {
        let call = |kind, filter| AggCall {
            kind,
            arg: 0,
            arg_type: SqlType::BigInt,
            separator: ",".into(),
            filter,
        };
        let mut aggs = SqlAggregates::new(
            vec![
                call(AggKind::CountStar, Some(1)),
                call(AggKind::Sum, Some(1)),
                call(AggKind::CountDistinct, Some(1)),
                call(AggKind::CountStar, None),
            ],
            true,
        );
        let row = |v: i64, f: Value| Row::insert(vec![Value::BigInt(v), f]);
        let mut acc = aggs.create_accumulator();
        for (v, f) in [
            (1, Value::Boolean(true)),
            (2, Value::Boolean(false)),
            (4, Value::Null),
            (8, Value::Boolean(true)),
            (1, Value::Boolean(true)),
        ] {
            aggs.add(row(v, f), &mut acc);
        }
        let results = |acc: &Accumulators| {
            let mut out = Vec::new();
            aggs.results_into(acc, &mut out);
            out
        };
        assert_eq!(
            results(&acc),
            [3, 10, 2, 5].map(Value::BigInt).to_vec(),
            "COUNT(*), SUM, COUNT(DISTINCT) of the TRUE rows; COUNT(*) of all"
        );
        aggs.retract(&row(8, Value::Boolean(true)), &mut acc);
        aggs.retract(&row(2, Value::Boolean(false)), &mut acc);
        assert_eq!(results(&acc), [2, 2, 1, 3].map(Value::BigInt).to_vec());
    }

    /// `COUNT(DISTINCT)`s of one column under different filters share
    /// one set, and count what a set per call counts: fed row by row, and
    /// merged (whole and in place) from two halves of the rows. State
    /// written with a set per call is still fed as before.
    #[test]
    fn distinct_counts_of_one_column_share_a_set_and_count_as_sets_apart() {
        let call = |arg, filter| AggCall {
            kind: AggKind::CountDistinct,
            arg,
            arg_type: SqlType::BigInt,
            separator: ",".into(),
            filter,
        };
        // Column 0 under no filter and under filters 2 and 3; column 1
        // alone; column 0 again, under filter 3.
        let calls = vec![
            call(0, None),
            call(0, Some(2)),
            call(0, Some(3)),
            call(1, None),
            call(0, Some(3)),
        ];
        let mut aggs = SqlAggregates::new(calls.clone(), false);
        assert_eq!(aggs.shares[0].as_deref(), Some(&[0, 1, 2, 4][..]));
        assert!(aggs.shares[1..].iter().all(Option::is_none));
        let mut seed = 7u64;
        let mut next = |n: u64| {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (seed >> 33) % n
        };
        let flag = |x: u64| match x {
            0 => Value::Null,
            1 => Value::Boolean(false),
            _ => Value::Boolean(true),
        };
        let rows: Vec<Vec<Value>> = (0..600)
            .map(|_| {
                let v = match next(20) {
                    0 => Value::Null,
                    x => Value::BigInt(x as i64 - 10),
                };
                vec![
                    v,
                    Value::BigInt(next(30) as i64),
                    flag(next(4)),
                    flag(next(3)),
                ]
            })
            .collect();
        // What a set per call counts.
        let counted = |rows: &[Vec<Value>]| -> Vec<Value> {
            calls
                .iter()
                .map(|c| {
                    let held: HashSet<i64> = rows
                        .iter()
                        .filter(|r| c.filter.is_none_or(|f| r[f] == Value::Boolean(true)))
                        .filter_map(|r| r[c.arg].as_i64())
                        .collect();
                    Value::BigInt(held.len() as i64)
                })
                .collect()
        };
        let expected = counted(&rows);
        let fed = |aggs: &mut SqlAggregates, rows: &[Vec<Value>]| {
            let mut acc = aggs.create_accumulator();
            for r in rows {
                aggs.add(Row::insert(r.clone()), &mut acc);
            }
            acc
        };
        let whole = fed(&mut aggs, &rows);
        assert!(matches!(whole[0], Acc::SharedDistinct(_)));
        assert!(matches!(whole[1], Acc::Count(_)));
        assert_eq!(aggs.get_result(&whole).to_vec(), expected);
        let (a, b) = rows.split_at(250);
        let (a, b) = (fed(&mut aggs, a), fed(&mut aggs, b));
        let mut into = a.clone();
        aggs.merge_into(&mut into, &b);
        assert_eq!(aggs.get_result(&into).to_vec(), expected, "merged in place");
        let merged = aggs.merge(a, b);
        assert_eq!(aggs.get_result(&merged).to_vec(), expected, "merged");
        // A set per call, as state held them before they were shared.
        let mut apart: Accumulators = (0..calls.len())
            .map(|_| Acc::DistinctInts(Box::default()))
            .collect();
        for r in &rows {
            aggs.add(Row::insert(r.clone()), &mut apart);
        }
        assert_eq!(aggs.get_result(&apart).to_vec(), expected, "sets apart");
        // Sets apart (saved before) merged with a shared set, either way
        // round, whole or in place: every value of both counts.
        let sets_apart = |aggs: &mut SqlAggregates, rows: &[Vec<Value>]| {
            let mut acc: Accumulators = (0..calls.len())
                .map(|_| Acc::DistinctInts(Box::default()))
                .collect();
            for r in rows {
                aggs.add(Row::insert(r.clone()), &mut acc);
            }
            acc
        };
        // The halves' values apart (each half alone holds nearly every
        // value of its range), so that a side dropped shows.
        let shifted: Vec<Vec<Value>> = rows
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let mut r = r.clone();
                if let (true, Some(v)) = (i < 250, r[0].as_i64()) {
                    r[0] = Value::BigInt(v + 100);
                }
                r
            })
            .collect();
        let expected = counted(&shifted);
        let (first, second) = shifted.split_at(250);
        let (old, new) = (sets_apart(&mut aggs, first), fed(&mut aggs, second));
        let merged = aggs.merge(old.clone(), new.clone());
        assert_eq!(aggs.get_result(&merged).to_vec(), expected, "old with new");
        let merged = aggs.merge(new.clone(), old.clone());
        assert_eq!(aggs.get_result(&merged).to_vec(), expected, "new with old");
        let mut into = old.clone();
        aggs.merge_into(&mut into, &new);
        assert_eq!(aggs.get_result(&into).to_vec(), expected, "new into old");
        let mut into = new;
        aggs.merge_into(&mut into, &old);
        assert_eq!(aggs.get_result(&into).to_vec(), expected, "old into new");
        // Merged, a row goes on to the shared set.
        let (before, last) = shifted.split_at(shifted.len() - 50);
        let (old, new) = (
            sets_apart(&mut aggs, &before[..250]),
            fed(&mut aggs, &before[250..]),
        );
        let mut merged = aggs.merge(old, new);
        for r in last {
            aggs.add(Row::insert(r.clone()), &mut merged);
        }
        assert!(matches!(merged[0], Acc::SharedDistinct(_)));
        assert_eq!(aggs.get_result(&merged).to_vec(), expected, "fed after");
    }

    /// `COUNT(DISTINCT)` of an integral column counts as a set of values
    /// does, at the ends of the range too, merges, and reads back.
    #[test]
    fn distinct_integers_count_as_distinct_values() {
        for ty in [SqlType::BigInt, SqlType::Timestamp] {
            let call = AggCall {
                kind: AggKind::CountDistinct,
                arg: 0,
                arg_type: ty,
                separator: ",".into(),
                filter: None,
            };
            let mut aggs = SqlAggregates::new(vec![call], false);
            let values: Vec<i64> = (0..5000i64)
                .map(|i| (i * 7919) % 1013 - 500)
                .chain([i64::MIN, i64::MAX, i64::MIN, 0])
                .collect();
            let value = |v: i64| match ty {
                SqlType::BigInt => Value::BigInt(v),
                _ => Value::Timestamp(v),
            };
            let (mut a, mut b) = (aggs.create_accumulator(), aggs.create_accumulator());
            assert!(matches!(a[0], Acc::DistinctInts(_)), "{ty}");
            let (left, right) = values.split_at(values.len() / 2);
            for v in left {
                aggs.add(Row::insert(vec![value(*v)]), &mut a);
            }
            for v in right {
                aggs.add(Row::insert(vec![value(*v)]), &mut b);
            }
            aggs.add(Row::insert(vec![Value::Null]), &mut b);
            let merged = aggs.merge(a, b);
            let text = serde_json::to_string(&merged).expect("serialises");
            let back: Accumulators = serde_json::from_str(&text).expect("reads back");
            let expected = values.iter().collect::<HashSet<_>>().len() as i64;
            for acc in [merged, back] {
                assert_eq!(aggs.get_result(&acc)[0], Value::BigInt(expected), "{ty}");
            }
        }
    }

    #[test]
    fn aggregates_skip_nulls_and_keep_flink_types() {
        let call = |kind, t| AggCall {
            kind,
            arg: 0,
            arg_type: t,
            separator: ",".into(),
            filter: None,
        };
        let ints = [
            vec![Value::Int(3)],
            vec![Value::Null],
            vec![Value::Int(4)],
            vec![Value::Int(3)],
        ];
        assert_eq!(
            run(
                vec![
                    call(AggKind::CountStar, SqlType::Int),
                    call(AggKind::Count, SqlType::Int),
                    call(AggKind::CountDistinct, SqlType::Int),
                    call(AggKind::Sum, SqlType::Int),
                    call(AggKind::Min, SqlType::Int),
                    call(AggKind::Max, SqlType::Int),
                    call(AggKind::Avg, SqlType::Int),
                ],
                &ints
            ),
            vec![
                Value::BigInt(4),
                Value::BigInt(3),
                Value::BigInt(2),
                Value::Int(10),
                Value::Int(3),
                Value::Int(4),
                Value::Int(3),
            ]
        );
        let decs = [vec![Value::decimal(1250, 2)], vec![Value::decimal(300, 2)]];
        let r = run(
            vec![
                call(AggKind::Sum, SqlType::Decimal(10, 2)),
                call(AggKind::Avg, SqlType::Decimal(10, 2)),
            ],
            &decs,
        );
        assert_eq!(r[0].to_string(), "15.50");
        assert_eq!(r[1].to_string(), "7.750000");
        let listed = run(vec![call(AggKind::ListAgg, SqlType::Int)], &ints);
        assert_eq!(listed, vec![Value::string("3,4,3")]);
        let nothing = run(vec![call(AggKind::Sum, SqlType::Int)], &[vec![Value::Null]]);
        assert_eq!(nothing, vec![Value::Null]);
        // `COUNT(*)` reads no column: rows of none are counted, and
        // retracted.
        let star = vec![call(AggKind::CountStar, SqlType::BigInt)];
        assert_eq!(run(star.clone(), &[vec![], vec![]]), vec![Value::BigInt(2)]);
        let agg = SqlAggregates::new(star, true);
        let mut acc: Accumulators = [Acc::Count(2)].into_iter().collect();
        agg.retract(&Row::insert(vec![]), &mut acc);
        assert!(matches!(acc[..], [Acc::Count(1)]));
    }

    /// The aggregates of one argument, one of each kind.
    const ONE_ARGUMENT_KINDS: [AggKind; 10] = [
        AggKind::CountStar,
        AggKind::Count,
        AggKind::CountDistinct,
        AggKind::Sum,
        AggKind::Min,
        AggKind::Max,
        AggKind::Avg,
        AggKind::FirstValue,
        AggKind::LastValue,
        AggKind::ListAgg,
    ];

    /// `changes` says a row leaves the accumulators as they are only where
    /// adding it does: below the maximum, above the minimum, NULL, dropped
    /// by the `FILTER`, after the first value.
    #[test]
    fn a_row_said_to_change_nothing_changes_no_accumulator() {
        let (t, f) = (Value::Boolean(true), Value::Boolean(false));
        // [argument, filter]
        let rows = [
            (Value::BigInt(5), t.clone()),
            (Value::BigInt(3), t.clone()),
            (Value::Null, t.clone()),
            (Value::BigInt(9), f.clone()),
            (Value::BigInt(7), Value::Null),
            (Value::BigInt(7), t.clone()),
            (Value::BigInt(7), t.clone()),
            (Value::BigInt(2), t.clone()),
        ];
        let kinds = ONE_ARGUMENT_KINDS;
        for kind in kinds {
            for filter in [None, Some(1)] {
                let call = AggCall {
                    kind,
                    arg: 0,
                    arg_type: SqlType::BigInt,
                    separator: ",".into(),
                    filter,
                };
                let mut agg = SqlAggregates::new(vec![call], false);
                let mut acc = agg.create_accumulator();
                let mut unchanged = 0;
                for (value, passes) in &rows {
                    let row = Row::insert(vec![value.clone(), passes.clone()]);
                    let changes = agg.changes(&row, &acc);
                    let before = format!("{acc:?}");
                    agg.add_row(&row, &mut acc);
                    if !changes {
                        unchanged += 1;
                        assert_eq!(format!("{acc:?}"), before, "{kind:?} {filter:?} {row}");
                    }
                }
                // Unchanged: by the NULL, all but COUNT(*); by 9 and the
                // 7 whose filter is NULL, all filtered calls; MIN by 9
                // and 7s, MAX by 3, 7s and 2 (filtered, its first 7 is a
                // new maximum); FIRST_VALUE by all after 5.
                let expected = match (kind, filter) {
                    (AggKind::CountStar, None) => 0,
                    (AggKind::CountStar, Some(_)) => 2,
                    (AggKind::Min, _) => 5,
                    (AggKind::Max, _) => 6,
                    (AggKind::FirstValue, _) => 7,
                    (_, None) => 1,
                    (_, Some(_)) => 3,
                };
                assert_eq!(unchanged, expected, "{kind:?} {filter:?}");
            }
        }
    }

    /// A row's buffer gets the same results, written into its slots, as
    /// any other list: for every kind, empty or not, over numbers and over
    /// shared strings (whose clones must each own a count).
    #[test]
    fn results_onto_a_row_are_the_results() {
        let long = |i: i64| Value::string(&format!("a string too long to be held inline {i}"));
        let kinds = ONE_ARGUMENT_KINDS;
        for (arg_type, value) in [
            (
                SqlType::BigInt,
                &(|i: i64| Value::BigInt(i)) as &dyn Fn(i64) -> Value,
            ),
            (SqlType::String, &long),
        ] {
            let calls: Vec<AggCall> = kinds
                .iter()
                .filter(|k| {
                    arg_type == SqlType::BigInt || !matches!(k, AggKind::Sum | AggKind::Avg)
                })
                .map(|&kind| AggCall {
                    kind,
                    arg: 0,
                    arg_type,
                    separator: ",".into(),
                    filter: None,
                })
                .collect();
            let mut agg = SqlAggregates::new(calls, false);
            let mut acc = agg.create_accumulator();
            for i in 0..3 {
                let mut expected = Results::new();
                agg.results_into(&acc, &mut expected);
                let mut onto = vec![Value::Null];
                agg.results_onto(&acc, &mut onto);
                assert_eq!(onto[0], Value::Null);
                assert_eq!(&onto[1..], &expected[..], "{arg_type:?} after {i} rows");
                // Each copy of a shared string is dropped on its own: one
                // that took no count of its own frees the text twice.
                agg.add_row(&Row::insert(vec![value(i)]), &mut acc);
                drop(onto);
            }
            drop(acc);
        }
    }

    /// New accumulators are copied as bytes only when they own no memory:
    /// a copied set, or a copied heap pointer, would be freed twice.
    #[test]
    fn only_accumulators_that_own_nothing_are_copied_as_bytes() {
        let call = |kind| AggCall {
            kind,
            arg: 0,
            arg_type: SqlType::BigInt,
            separator: ",".into(),
            filter: None,
        };
        let plain = |kinds: &[AggKind], retracting| {
            let calls = kinds.iter().map(|k| call(*k)).collect();
            SqlAggregates::new(calls, retracting).plain.is_some()
        };
        assert!(plain(&[AggKind::CountStar, AggKind::Sum], false));
        assert!(plain(&[AggKind::Min, AggKind::Avg], false));
        assert!(
            plain(&[AggKind::Sum], true),
            "a retracting sum is a sum and a count"
        );
        assert!(!plain(&[AggKind::CountDistinct], false), "a set");
        assert!(!plain(&[AggKind::Max], true), "a retracting MAX's map");
        assert!(
            !plain(&[AggKind::ListAgg], true),
            "a retracting LISTAGG's list"
        );
        assert!(
            !plain(&[AggKind::Count, AggKind::Sum, AggKind::Max], false),
            "three accumulators: on the heap"
        );
        // A copy is a new set: changing it leaves the next copy new.
        let mut agg = SqlAggregates::new(vec![call(AggKind::Sum)], false);
        let mut first = agg.create_accumulator();
        agg.add(Row::insert(vec![Value::BigInt(5)]), &mut first);
        assert_eq!(agg.get_result(&first).to_vec(), vec![Value::BigInt(5)]);
        let second = agg.create_accumulator();
        assert_eq!(agg.get_result(&second).to_vec(), vec![Value::Null]);
    }
}
