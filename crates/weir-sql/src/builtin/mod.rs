//! Flink's built-in scalar functions beyond the operators and the few the
//! expression compiler handles itself: numbers (`math`), text (`text`),
//! dates and times (`calendar`) and JSON (`json`). Each call is checked
//! against its signature when the query is planned (a wrong argument type
//! or count is a validation error at the call) and evaluated with Flink's
//! results, result types and NULL handling: a NULL argument gives NULL
//! unless the function says otherwise (`CONCAT_WS` skips NULLs).

mod calendar;
mod json;
mod math;
mod text;

use std::ops::RangeInclusive;
use std::sync::Arc;

use smallvec::SmallVec;
use sqlparser::ast::{Expr, Spanned};

use crate::error::{position, Position, SqlError};
use crate::expr::{Compiled, Eval, Scope, Shape};
use crate::types::SqlType;
use crate::value::Value;

pub(crate) use calendar::{ceil_floor_time, day_of_week, day_of_year, iso_week, quarter, TimeUnit};
pub(crate) use math::ceil_floor_number;
pub(crate) use text::{locate, overlay, substring_sql, trim_chars};

/// A call of a built-in: its name (upper case), its arguments as written
/// and where it is.
pub(crate) struct Call<'a> {
    pub name: &'a str,
    pub exprs: &'a [&'a Expr],
    pub scope: &'a Scope,
    pub at: Position,
}

impl Call<'_> {
    /// A validation error at the call.
    fn error(&self, message: impl Into<String>) -> SqlError {
        SqlError::validation(message, self.at)
    }

    /// Fails unless the call has `n` arguments, `n` in `range`.
    fn arity(&self, range: RangeInclusive<usize>) -> Result<(), SqlError> {
        let n = self.exprs.len();
        if range.contains(&n) {
            return Ok(());
        }
        let wanted = if range.start() == range.end() {
            range.start().to_string()
        } else {
            format!("{} to {}", range.start(), range.end())
        };
        Err(self.error(format!("{} takes {wanted} argument(s), not {n}", self.name)))
    }

    /// The arguments compiled, after checking their count.
    fn args(&self, range: RangeInclusive<usize>) -> Result<Vec<Compiled>, SqlError> {
        self.arity(range)?;
        self.exprs
            .iter()
            .map(|e| crate::expr::compile(e, self.scope))
            .collect()
    }

    /// Fails unless argument `i` (compiled as `c`) is of a type `kind`
    /// accepts (NULL always is).
    fn expect(&self, c: &Compiled, i: usize, kind: Kind) -> Result<(), SqlError> {
        if c.ty == SqlType::Null || kind.accepts(c.ty) {
            return Ok(());
        }
        Err(SqlError::validation(
            format!(
                "{}'s argument {} is {} where {} is expected",
                self.name,
                self.exprs[i],
                c.ty,
                kind.describe()
            ),
            position(self.exprs[i].span()),
        ))
    }

    /// Argument `i` as an integer constant (a scale, a count of digits).
    fn constant_int(&self, c: &Compiled, i: usize) -> Result<i64, SqlError> {
        match &c.shape {
            Shape::Constant(v) if c.ty.is_integer() => v.as_i64(),
            _ => None,
        }
        .ok_or_else(|| {
            SqlError::validation(
                format!(
                    "{}'s argument {} must be an integer constant",
                    self.name, self.exprs[i]
                ),
                position(self.exprs[i].span()),
            )
        })
    }
}

/// What an argument may be.
#[derive(Clone, Copy)]
enum Kind {
    Number,
    Integer,
    Text,
    /// A DATE, TIMESTAMP or TIMESTAMP_LTZ.
    Time,
}

impl Kind {
    fn accepts(self, ty: SqlType) -> bool {
        match self {
            Kind::Number => ty.is_numeric(),
            Kind::Integer => ty.is_integer(),
            Kind::Text => ty == SqlType::String,
            Kind::Time => ty.is_timestamp() || ty == SqlType::Date,
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Kind::Number => "a number",
            Kind::Integer => "an integer",
            Kind::Text => "a STRING",
            Kind::Time => "a DATE or TIMESTAMP",
        }
    }
}

/// Compiles a call of the built-in `call.name`; `None` when no built-in
/// has that name.
pub(crate) fn compile(call: &Call) -> Result<Option<Compiled>, SqlError> {
    if let Some(c) = math::compile(call)? {
        return Ok(Some(c));
    }
    if let Some(c) = text::compile(call)? {
        return Ok(Some(c));
    }
    if let Some(c) = json::compile(call)? {
        return Ok(Some(c));
    }
    calendar::compile(call)
}

/// The type the arguments' values are all cast to (`GREATEST`, `ELT`).
fn common_type(args: &[Compiled], call: &Call) -> Result<SqlType, SqlError> {
    let mut ty = None;
    for c in args {
        ty = Some(crate::expr::unify(ty, c.ty, call.at)?);
    }
    Ok(ty.unwrap_or(SqlType::Null))
}

/// `f` of the arguments' values, or NULL when any is NULL (most
/// built-ins' rule).
fn strict<F>(args: &[Compiled], ty: SqlType, f: F) -> Compiled
where
    F: Fn(&[Value]) -> Result<Value, String> + Send + Sync + 'static,
{
    let evals: Vec<Eval> = args.iter().map(|c| c.eval.clone()).collect();
    Compiled {
        shape: Shape::Computed,
        eval: Arc::new(move |row| {
            let mut values: SmallVec<[Value; 4]> = SmallVec::new();
            for eval in &evals {
                let v = eval(row)?;
                if v.is_null() {
                    return Ok(Value::Null);
                }
                values.push(v);
            }
            f(&values)
        }),
        ty,
    }
}

/// The text of a STRING value (callers have checked the type).
fn text(v: &Value) -> &str {
    match v {
        Value::String(s) => s,
        _ => "",
    }
}

/// An integer argument's value (callers have checked the type).
fn int(v: &Value) -> i64 {
    v.as_i64().unwrap_or(0)
}
