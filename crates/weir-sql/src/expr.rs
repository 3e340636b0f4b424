//! Scalar expressions, compiled once per query into closures over a row's
//! values (no tree of boxes interpreted by matching on the AST per
//! record), with their result type. NULLs follow SQL's three-valued logic.

use std::cmp::Ordering;
use std::sync::Arc;

use sqlparser::ast::{
    BinaryOperator, CastKind, CeilFloorKind, DateTimeField, Expr, FunctionArg, FunctionArgExpr,
    FunctionArguments, Spanned, UnaryOperator, Value as Lit,
};

use crate::error::{position, Position, SqlError};
use crate::types::SqlType;
use crate::value::{rescale, Value};

/// A compiled expression: its value for a row's values, or the error
/// that fails the job (division by zero, a bad cast).
pub(crate) type Eval = Arc<dyn Fn(&[Value]) -> Result<Value, String> + Send + Sync>;

/// A condition's answer for a row, returned in a register rather than as
/// a [`Value`] through memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Truth {
    False,
    True,
    Null,
    /// The expression fails for this row; its `eval` says why.
    Failed,
}

impl Truth {
    fn of(b: bool) -> Truth {
        if b {
            Truth::True
        } else {
            Truth::False
        }
    }

    /// The truth of a BOOLEAN value (any other value is NULL).
    fn of_value(v: &Value) -> Truth {
        match v {
            Value::Boolean(b) => Truth::of(*b),
            _ => Truth::Null,
        }
    }
}

/// A compiled condition's truth for a row.
pub(crate) type Test = Arc<dyn Fn(&[Value]) -> Truth + Send + Sync>;

/// A condition's [`Test`], as its shape holds it.
#[derive(Clone)]
pub(crate) struct Tested(pub Test, pub Option<ScaledRange>);

impl std::fmt::Debug for Tested {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tested")
    }
}

/// A compiled condition (a `WHERE`, a `HAVING`): its truth for a row, and
/// its value, which says why it failed where its truth is `Failed`.
#[derive(Clone)]
pub(crate) struct Condition {
    pub test: Test,
    pub eval: Eval,
}

impl Condition {
    /// The condition `c` (a BOOLEAN expression).
    pub fn of(c: &Compiled) -> Condition {
        Condition {
            test: test(c),
            eval: c.eval.clone(),
        }
    }

    /// Whether `values` pass: the condition is TRUE (not FALSE or NULL).
    #[inline]
    pub fn passes(&self, values: &[Value]) -> Result<bool, String> {
        match (self.test)(values) {
            Truth::True => Ok(true),
            Truth::False | Truth::Null => Ok(false),
            Truth::Failed => match (self.eval)(values) {
                Ok(v) => Ok(matches!(v, Value::Boolean(true))),
                Err(e) => Err(e),
            },
        }
    }
}

/// The truth of the BOOLEAN expression `c` for a row.
pub(crate) fn test(c: &Compiled) -> Test {
    match &c.shape {
        Shape::Tests(t) => t.0.clone(),
        Shape::Column(i) => {
            let i = *i;
            Arc::new(move |r| Truth::of_value(&r[i]))
        }
        Shape::Constant(v) => {
            let t = Truth::of_value(v);
            Arc::new(move |_| t)
        }
        _ => {
            let f = c.eval.clone();
            Arc::new(move |r| match f(r) {
                Ok(v) => Truth::of_value(&v),
                Err(_) => Truth::Failed,
            })
        }
    }
}

/// The value of a condition `test`; where it fails, the error of the
/// first of `operands` that fails (a condition fails only where one of
/// its operands does).
fn value_of(test: Test, operands: Vec<Eval>) -> Eval {
    Arc::new(move |r| match test(r) {
        Truth::True => Ok(Value::Boolean(true)),
        Truth::False => Ok(Value::Boolean(false)),
        Truth::Null => Ok(Value::Null),
        Truth::Failed => {
            for f in &operands {
                f(r)?;
            }
            Err("a condition failed without a failing operand".into())
        }
    })
}

/// A compiled expression and its type.
#[derive(Clone)]
pub(crate) struct Compiled {
    pub eval: Eval,
    pub ty: SqlType,
    /// What the expression is, where that lets its users read the row
    /// directly rather than call `eval`.
    pub shape: Shape,
}

impl Compiled {
    /// The expression of the value `v` of type `ty`.
    pub fn constant(v: Value, ty: SqlType) -> Compiled {
        constant(v, ty)
    }
}

impl Shape {
    /// How the expression writes its value straight into a row's slot,
    /// where it can.
    pub fn writer(&self) -> Option<&SlotEval> {
        match self {
            Shape::WritesAt(w) | Shape::Scaled { write: w, .. } => Some(w),
            _ => None,
        }
    }
}

/// What an expression is, as far as its users can do better than call it.
#[derive(Clone, Debug)]
pub(crate) enum Shape {
    /// Column `i` of the row, as it is.
    Column(usize),
    /// The same value for every row.
    Constant(Value),
    /// A time column plus a constant number of milliseconds (a watermark
    /// expression such as `ts - INTERVAL '2' SECOND`).
    Shifted(usize, i64),
    /// Integer arithmetic of a column and a constant (`MOD(a, 123)`,
    /// `a + 1`): `op(column, operand)`, wrapped to INT when `int`; `op`
    /// gives `None` where the expression fails (division by zero,
    /// overflow).
    IntOp {
        column: usize,
        op: fn(i64, i64) -> Option<i64>,
        operand: i64,
        int: bool,
    },
    /// Computed, and able to write its value straight into a slot of the
    /// row it reads.
    WritesAt(SlotEval),
    /// A DECIMAL constant times an integer column (`0.908 * price`): the
    /// unscaled value `factor × column` at `scale`, which a comparison with
    /// a constant tests without making the value; `write` as `WritesAt`.
    Scaled {
        column: usize,
        factor: i128,
        scale: u8,
        write: SlotEval,
    },
    /// A condition, which answers as a [`Truth`] without making a value.
    Tests(Tested),
    /// Anything else.
    Computed,
}

/// Evaluates an expression over a row and writes its value into the row's
/// slot `slot`, after reading every operand; an error fails the job.
///
/// A value returned through memory and copied into a row right away is
/// reloaded in wider pieces than it was stored in (a tag byte, a scale
/// byte, payload words), and the CPU stalls on that reload every row; a
/// value written in place is not read again until much later.
#[derive(Clone)]
pub(crate) struct SlotEval(pub Arc<WriteAt>);

/// What a [`SlotEval`] calls: the row and the slot to write.
type WriteAt = dyn Fn(&mut [Value], usize) -> Result<(), String> + Send + Sync;

impl std::fmt::Debug for SlotEval {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SlotEval")
    }
}

/// The columns an expression can name: the input row's.
#[derive(Debug, Clone, Default)]
pub(crate) struct Scope {
    pub columns: Vec<(String, SqlType)>,
    /// Each column's table (alias or name) when the scope joins tables;
    /// empty otherwise (then `t.col` means `col`).
    pub qualifiers: Vec<String>,
    /// When set, which columns expressions compiled over this scope name
    /// (for reading only those from a source).
    pub used: Option<std::rc::Rc<std::cell::RefCell<Vec<bool>>>>,
}

impl Scope {
    /// A scope of `columns`.
    pub fn of(columns: Vec<(String, SqlType)>) -> Scope {
        Scope {
            columns,
            qualifiers: Vec::new(),
            used: None,
        }
    }

    /// The same columns, recording which are named.
    pub fn tracking(&self) -> Scope {
        Scope {
            columns: self.columns.clone(),
            qualifiers: self.qualifiers.clone(),
            used: Some(std::rc::Rc::new(std::cell::RefCell::new(vec![
                false;
                self.columns
                    .len()
            ]))),
        }
    }

    /// Records that column `i` is named (by a `*`).
    pub fn mark_used(&self, i: usize) {
        if let Some(used) = &self.used {
            used.borrow_mut()[i] = true;
        }
    }

    /// Which columns were named (all, when not tracking).
    pub fn used_columns(&self) -> Vec<bool> {
        match &self.used {
            Some(u) => u.borrow().clone(),
            None => vec![true; self.columns.len()],
        }
    }

    /// The index of column `name` (case-insensitive), or an error naming
    /// the columns there are.
    pub fn index(&self, name: &str, at: Position) -> Result<usize, SqlError> {
        self.find(None, name, at)
    }

    /// The index of `qualifier.name`.
    pub fn index_qualified(
        &self,
        qualifier: &str,
        name: &str,
        at: Position,
    ) -> Result<usize, SqlError> {
        if self.qualifiers.is_empty() {
            return self.index(name, at);
        }
        self.find(Some(qualifier), name, at)
    }

    fn find(&self, qualifier: Option<&str>, name: &str, at: Position) -> Result<usize, SqlError> {
        let matches: Vec<usize> = (0..self.columns.len())
            .filter(|&i| {
                self.columns[i].0.eq_ignore_ascii_case(name)
                    && qualifier.is_none_or(|q| {
                        self.qualifiers
                            .get(i)
                            .is_some_and(|c| c.eq_ignore_ascii_case(q))
                    })
            })
            .collect();
        if matches.len() > 1 {
            let tables: Vec<&str> = matches
                .iter()
                .filter_map(|&i| self.qualifiers.get(i).map(String::as_str))
                .collect();
            return Err(SqlError::validation(
                format!(
                    "column '{name}' is ambiguous (in {}): qualify it",
                    tables.join(" and ")
                ),
                at,
            ));
        }
        let i = matches.first().copied();
        if let (Some(i), Some(used)) = (i, &self.used) {
            used.borrow_mut()[i] = true;
        }
        i.ok_or_else(|| {
            // A qualifier no column has: name the relations there are.
            if let Some(q) = qualifier {
                if !self.qualifiers.iter().any(|c| c.eq_ignore_ascii_case(q)) {
                    let mut relations: Vec<&str> = Vec::new();
                    for r in &self.qualifiers {
                        if !r.is_empty() && !relations.contains(&r.as_str()) {
                            relations.push(r);
                        }
                    }
                    return SqlError::validation(
                        format!(
                            "no table or alias '{q}' here for '{q}.{name}' (there are {})",
                            relations.join(", ")
                        ),
                        at,
                    );
                }
            }
            let known: Vec<&str> = self.columns.iter().map(|(c, _)| c.as_str()).collect();
            SqlError::validation(
                format!(
                    "column '{name}' not found; the input has {}",
                    known.join(", ")
                ),
                at,
            )
        })
    }
}

fn at(e: &Expr) -> Position {
    position(e.span())
}

fn constant(v: Value, ty: SqlType) -> Compiled {
    Compiled {
        shape: Shape::Constant(v.clone()),
        eval: Arc::new(move |_| Ok(v.clone())),
        ty,
    }
}

/// Compiles `e` for rows of `scope`. An expression that names no column
/// is evaluated once, here (constant folding), unless evaluating it fails:
/// then it fails for every row, as written.
pub(crate) fn compile(e: &Expr, scope: &Scope) -> Result<Compiled, SqlError> {
    let trivial = matches!(
        e,
        Expr::Value(_) | Expr::Identifier(_) | Expr::CompoundIdentifier(_)
    );
    if !trivial && !FOLDING.get() {
        if let Some((v, ty)) = constant_value(e) {
            return Ok(constant(v, ty));
        }
    }
    compile_node(e, scope)
}

thread_local! {
    /// Whether a folding attempt is under way: its subexpressions are not
    /// tried for folding again (that would try each node once per
    /// ancestor, twice per level: exponential in the depth of, say, a
    /// chain of ORs).
    static FOLDING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether an expression is being compiled to try folding it into a
/// constant (a function that reads the clock refuses).
pub(crate) fn folding() -> bool {
    FOLDING.get()
}

/// The value of `e` if it names no column and evaluates without error.
fn constant_value(e: &Expr) -> Option<(Value, SqlType)> {
    FOLDING.set(true);
    let compiled = compile_node(e, &Scope::default());
    FOLDING.set(false);
    let c = compiled.ok()?;
    (c.eval)(&[]).ok().map(|v| (v, c.ty))
}

fn compile_node(e: &Expr, scope: &Scope) -> Result<Compiled, SqlError> {
    match e {
        Expr::Identifier(id) => column(scope, &id.value, at(e)),
        Expr::CompoundIdentifier(parts) => match parts.as_slice() {
            [table, col] => {
                let i = scope.index_qualified(&table.value, &col.value, at(e))?;
                Ok(column_at(scope, i))
            }
            _ => Err(SqlError::unsupported(format!("the name {e}"), at(e))),
        },
        Expr::Nested(inner) => compile(inner, scope),
        Expr::Value(v) => literal(&v.value, at(e)),
        Expr::Interval(interval) => {
            let ms = interval_ms(interval, at(e))?;
            Ok(constant(Value::Interval(ms), SqlType::Interval))
        }
        Expr::TypedString(ts) => {
            let ty =
                SqlType::from_ast(&ts.data_type).map_err(|w| SqlError::unsupported(w, at(e)))?;
            let text = match &ts.value.value {
                Lit::SingleQuotedString(s) => s.clone(),
                other => other.to_string(),
            };
            let v = Value::parse(&text, ty).map_err(|m| SqlError::validation(m, at(e)))?;
            Ok(constant(v, ty))
        }
        Expr::BinaryOp { left, op, right } => binary(op, left, right, scope, at(e)),
        Expr::UnaryOp { op, expr } => {
            let c = compile(expr, scope)?;
            match op {
                UnaryOperator::Not => {
                    expect_type(&c, SqlType::Boolean, expr)?;
                    let f = c.eval;
                    Ok(Compiled {
                        shape: Shape::Computed,
                        eval: Arc::new(move |r| {
                            Ok(match f(r)? {
                                Value::Boolean(b) => Value::Boolean(!b),
                                _ => Value::Null,
                            })
                        }),
                        ty: SqlType::Boolean,
                    })
                }
                UnaryOperator::Minus => {
                    let zero = constant(Value::Int(0), SqlType::Int);
                    arithmetic(BinaryOperator::Minus, zero, c, at(e))
                }
                UnaryOperator::Plus => Ok(c),
                other => Err(SqlError::unsupported(
                    format!("the operator {other}"),
                    at(e),
                )),
            }
        }
        Expr::IsNull(x) | Expr::IsNotNull(x) => {
            let f = compile(x, scope)?.eval;
            let negate = matches!(e, Expr::IsNotNull(_));
            Ok(Compiled {
                shape: Shape::Computed,
                eval: Arc::new(move |r| Ok(Value::Boolean(f(r)?.is_null() != negate))),
                ty: SqlType::Boolean,
            })
        }
        Expr::IsDistinctFrom(a, b) | Expr::IsNotDistinctFrom(a, b) => {
            // Equality with NULL as a value: two NULLs are not distinct,
            // a NULL and a value are. The `=` is compiled for its type
            // check alone.
            binary(&BinaryOperator::Eq, a, b, scope, at(e))?;
            let distinct = matches!(e, Expr::IsDistinctFrom(..));
            let (af, bf) = (compile(a, scope)?.eval, compile(b, scope)?.eval);
            Ok(Compiled {
                shape: Shape::Computed,
                eval: Arc::new(move |r| {
                    let (x, y) = (af(r)?, bf(r)?);
                    let same = match (x.is_null(), y.is_null()) {
                        (true, true) => true,
                        (false, false) => x.compare(&y) == Some(Ordering::Equal),
                        _ => false,
                    };
                    Ok(Value::Boolean(same != distinct))
                }),
                ty: SqlType::Boolean,
            })
        }
        Expr::IsTrue(x) | Expr::IsFalse(x) | Expr::IsNotTrue(x) | Expr::IsNotFalse(x) => {
            let c = compile(x, scope)?;
            expect_type(&c, SqlType::Boolean, x)?;
            let f = c.eval;
            let (want, negate) = match e {
                Expr::IsTrue(_) => (true, false),
                Expr::IsFalse(_) => (false, false),
                Expr::IsNotTrue(_) => (true, true),
                _ => (false, true),
            };
            Ok(Compiled {
                shape: Shape::Computed,
                eval: Arc::new(move |r| {
                    let is = matches!(f(r)?, Value::Boolean(b) if b == want);
                    Ok(Value::Boolean(is != negate))
                }),
                ty: SqlType::Boolean,
            })
        }
        Expr::Between {
            expr,
            negated,
            low,
            high,
        } => {
            let ge = binary(&BinaryOperator::GtEq, expr, low, scope, at(e))?;
            let le = binary(&BinaryOperator::LtEq, expr, high, scope, at(e))?;
            let both = logic(true, ge, le);
            Ok(if *negated { not(both) } else { both })
        }
        Expr::InList {
            expr,
            list,
            negated,
        } => {
            let mut any: Option<Compiled> = None;
            for item in list {
                let eq = binary(&BinaryOperator::Eq, expr, item, scope, at(e))?;
                any = Some(match any {
                    None => eq,
                    Some(prev) => logic(false, prev, eq),
                });
            }
            let any = any.ok_or_else(|| SqlError::validation("IN () needs values", at(e)))?;
            Ok(if *negated { not(any) } else { any })
        }
        Expr::Like {
            negated,
            expr,
            pattern,
            escape_char,
            any: false,
        } => {
            if escape_char.is_some() {
                return Err(SqlError::unsupported("LIKE … ESCAPE", at(e)));
            }
            let s = compile(expr, scope)?;
            let p = compile(pattern, scope)?;
            expect_type(&s, SqlType::String, expr)?;
            expect_type(&p, SqlType::String, pattern)?;
            let (sf, pf, negated) = (s.eval, p.eval, *negated);
            Ok(Compiled {
                shape: Shape::Computed,
                eval: Arc::new(move |r| {
                    Ok(match (sf(r)?, pf(r)?) {
                        (Value::String(s), Value::String(p)) => {
                            Value::Boolean(like(&s, &p) != negated)
                        }
                        _ => Value::Null,
                    })
                }),
                ty: SqlType::Boolean,
            })
        }
        Expr::Case {
            operand,
            conditions,
            else_result,
            ..
        } => case(
            operand.as_deref(),
            conditions,
            else_result.as_deref(),
            scope,
            at(e),
        ),
        Expr::Cast {
            kind,
            expr,
            data_type,
            ..
        } => {
            let ty = SqlType::from_ast(data_type).map_err(|w| SqlError::unsupported(w, at(e)))?;
            let c = compile(expr, scope)?;
            let from = c.ty;
            let f = c.eval;
            let try_cast = matches!(kind, CastKind::TryCast | CastKind::SafeCast);
            // SMALLINT and TINYINT are INTs here; a cast to them wraps as
            // Java's narrowing does.
            let narrow: fn(i32) -> i32 = match data_type {
                sqlparser::ast::DataType::SmallInt(_) => |v| i32::from(v as i16),
                sqlparser::ast::DataType::TinyInt(_) => |v| i32::from(v as i8),
                _ => |v| v,
            };
            Ok(Compiled {
                shape: Shape::Computed,
                eval: Arc::new(move |r| match cast(f(r)?, from, ty) {
                    Ok(Value::Int(v)) => Ok(Value::Int(narrow(v))),
                    Ok(v) => Ok(v),
                    Err(_) if try_cast => Ok(Value::Null),
                    Err(m) => Err(m),
                }),
                ty,
            })
        }
        Expr::Function(func) => function(func, scope, at(e)),
        Expr::Extract { field, expr, .. } => extract(field, compile(expr, scope)?, expr),
        Expr::Substring {
            expr,
            substring_from,
            substring_for,
            ..
        } => {
            let s = compile(expr, scope)?;
            expect_type(&s, SqlType::String, expr)?;
            let from = substring_from
                .as_deref()
                .map(|x| compile(x, scope))
                .transpose()?;
            let len = substring_for
                .as_deref()
                .map(|x| compile(x, scope))
                .transpose()?;
            let (sf, ff, lf) = (s.eval, from.map(|c| c.eval), len.map(|c| c.eval));
            Ok(Compiled {
                shape: Shape::Computed,
                eval: Arc::new(move |r| {
                    let Value::String(s) = sf(r)? else {
                        return Ok(Value::Null);
                    };
                    let start = match &ff {
                        Some(f) => match f(r)?.as_i64() {
                            Some(v) => v,
                            None => return Ok(Value::Null),
                        },
                        None => 1,
                    };
                    let len = match &lf {
                        Some(f) => match f(r)?.as_i64() {
                            Some(v) => Some(v),
                            None => return Ok(Value::Null),
                        },
                        None => None,
                    };
                    Ok(Value::string(&crate::builtin::substring_sql(
                        &s, start, len,
                    )))
                }),
                ty: SqlType::String,
            })
        }
        Expr::Trim {
            expr,
            trim_where,
            trim_what: Some(what),
            trim_characters: None,
        } => {
            let side = trim_where.as_ref().map(|w| w.to_string());
            let leading = side.as_deref() != Some("TRAILING");
            let trailing = side.as_deref() != Some("LEADING");
            of_two_strings(expr, what, scope, SqlType::String, move |s, chars| {
                Value::string(crate::builtin::trim_chars(s, chars, leading, trailing))
            })
        }
        Expr::Position { expr, r#in } => of_two_strings(expr, r#in, scope, SqlType::Int, |n, s| {
            Value::Int(crate::builtin::locate(n, s, 1))
        }),
        Expr::Overlay {
            expr,
            overlay_what,
            overlay_from,
            overlay_for,
        } => {
            let mut args = vec![
                compile(expr, scope)?,
                compile(overlay_what, scope)?,
                compile(overlay_from, scope)?,
            ];
            expect_type(&args[0], SqlType::String, expr)?;
            expect_type(&args[1], SqlType::String, overlay_what)?;
            if let Some(len) = overlay_for {
                args.push(compile(len, scope)?);
            }
            for (c, x) in args[2..]
                .iter()
                .zip([Some(overlay_from), overlay_for.as_ref()])
            {
                if !(c.ty.is_integer() || c.ty == SqlType::Null) {
                    let x = x.map_or(String::new(), ToString::to_string);
                    return Err(SqlError::validation(
                        format!("{x} is {} where an integer is expected", c.ty),
                        at(e),
                    ));
                }
            }
            Ok(crate::builtin::overlay(&args))
        }
        Expr::Floor { expr, field } | Expr::Ceil { expr, field } => {
            let ceil = matches!(e, Expr::Ceil { .. });
            let x = compile(expr, scope)?;
            match field {
                CeilFloorKind::DateTimeField(DateTimeField::NoDateTime) => {
                    crate::builtin::ceil_floor_number(x, ceil, expr)
                }
                CeilFloorKind::DateTimeField(unit) => {
                    let unit = crate::builtin::TimeUnit::of_field(unit).ok_or_else(|| {
                        SqlError::unsupported(format!("FLOOR and CEIL to {unit}"), at(e))
                    })?;
                    crate::builtin::ceil_floor_time(x, unit, ceil, expr)
                }
                CeilFloorKind::Scale(_) => {
                    Err(SqlError::unsupported("FLOOR and CEIL with a scale", at(e)))
                }
            }
        }
        Expr::Trim {
            expr,
            trim_where,
            trim_what: None,
            trim_characters: None,
        } => {
            let s = compile(expr, scope)?;
            expect_type(&s, SqlType::String, expr)?;
            let f = s.eval;
            let side = trim_where.as_ref().map(|w| w.to_string());
            Ok(Compiled {
                shape: Shape::Computed,
                eval: Arc::new(move |r| {
                    Ok(match f(r)? {
                        Value::String(s) => Value::string(match side.as_deref() {
                            Some("LEADING") => s.trim_start_matches(' '),
                            Some("TRAILING") => s.trim_end_matches(' '),
                            _ => s.trim_matches(' '),
                        }),
                        _ => Value::Null,
                    })
                }),
                ty: SqlType::String,
            })
        }
        other => Err(SqlError::unsupported(
            format!("the expression {other}"),
            at(e),
        )),
    }
}

/// `f` of two STRING expressions' texts, of type `ty`; NULL when either
/// is NULL.
fn of_two_strings(
    a: &Expr,
    b: &Expr,
    scope: &Scope,
    ty: SqlType,
    f: impl Fn(&str, &str) -> Value + Send + Sync + 'static,
) -> Result<Compiled, SqlError> {
    let (x, y) = (compile(a, scope)?, compile(b, scope)?);
    expect_type(&x, SqlType::String, a)?;
    expect_type(&y, SqlType::String, b)?;
    let (xf, yf) = (x.eval, y.eval);
    Ok(Compiled {
        shape: Shape::Computed,
        eval: Arc::new(move |r| {
            Ok(match (xf(r)?, yf(r)?) {
                (Value::String(x), Value::String(y)) => f(&x, &y),
                _ => Value::Null,
            })
        }),
        ty,
    })
}

fn column(scope: &Scope, name: &str, at: Position) -> Result<Compiled, SqlError> {
    let i = scope.index(name, at)?;
    Ok(column_at(scope, i))
}

pub(crate) fn column_at(scope: &Scope, i: usize) -> Compiled {
    Compiled {
        shape: Shape::Column(i),
        eval: Arc::new(move |r| Ok(r[i].clone())),
        ty: scope.columns[i].1,
    }
}

/// A binary operator over `l` and `r`: `f` of their values, each read
/// the cheapest way its shape allows. Reading a column borrows it from the
/// row and a constant is held by the closure, instead of calling `eval`
/// (which clones); `f` is compiled into each case.
fn pair<F>(l: &Compiled, r: &Compiled, f: F) -> Eval
where
    F: Fn(&Value, &Value) -> Result<Value, String> + Send + Sync + 'static,
{
    pair_with(l, r, f, Err)
}

/// As [`pair`], for any result: `failed`'s for an operand's error.
#[allow(clippy::type_complexity)]
fn pair_with<F, R>(
    l: &Compiled,
    r: &Compiled,
    f: F,
    failed: fn(String) -> R,
) -> Arc<dyn Fn(&[Value]) -> R + Send + Sync>
where
    F: Fn(&Value, &Value) -> R + Send + Sync + 'static,
    R: 'static,
{
    let (fl, fr) = (l.eval.clone(), r.eval.clone());
    match (l.shape.clone(), r.shape.clone()) {
        (Shape::Column(i), Shape::Constant(c)) => Arc::new(move |row| f(&row[i], &c)),
        (Shape::Constant(c), Shape::Column(j)) => Arc::new(move |row| f(&c, &row[j])),
        (Shape::Column(i), Shape::Column(j)) => Arc::new(move |row| f(&row[i], &row[j])),
        (Shape::Column(i), _) => Arc::new(move |row| match fr(row) {
            Ok(b) => f(&row[i], &b),
            Err(e) => failed(e),
        }),
        (_, Shape::Column(j)) => Arc::new(move |row| match fl(row) {
            Ok(a) => f(&a, &row[j]),
            Err(e) => failed(e),
        }),
        (_, Shape::Constant(c)) => Arc::new(move |row| match fl(row) {
            Ok(a) => f(&a, &c),
            Err(e) => failed(e),
        }),
        (Shape::Constant(c), _) => Arc::new(move |row| match fr(row) {
            Ok(b) => f(&c, &b),
            Err(e) => failed(e),
        }),
        _ => Arc::new(move |row| match (fl(row), fr(row)) {
            (Ok(a), Ok(b)) => f(&a, &b),
            (Err(e), _) | (_, Err(e)) => failed(e),
        }),
    }
}

fn literal(v: &Lit, at: Position) -> Result<Compiled, SqlError> {
    Ok(match v {
        Lit::Number(text, _) => {
            if let Ok(i) = text.parse::<i32>() {
                constant(Value::Int(i), SqlType::Int)
            } else if let Ok(i) = text.parse::<i64>() {
                constant(Value::BigInt(i), SqlType::BigInt)
            } else if text.contains(['e', 'E']) {
                let d = text
                    .parse::<f64>()
                    .map_err(|_| SqlError::validation(format!("bad number {text}"), at))?;
                constant(Value::Double(d), SqlType::Double)
            } else {
                // Flink types `1.5` as DECIMAL(2, 1) and `0.908` as
                // DECIMAL(3, 3): the unscaled value's digits, at least
                // the scale.
                let scale = text.split_once('.').map_or(0, |(_, f)| f.len()) as u8;
                let unscaled: String = text.chars().filter(char::is_ascii_digit).collect();
                let digits = unscaled.trim_start_matches('0').len().max(1) as u8;
                let ty = SqlType::Decimal(digits.max(scale).min(38), scale);
                let v = Value::parse(text, ty).map_err(|m| SqlError::validation(m, at))?;
                constant(v, ty)
            }
        }
        Lit::SingleQuotedString(s) => constant(Value::string(s), SqlType::String),
        Lit::Boolean(b) => constant(Value::Boolean(*b), SqlType::Boolean),
        Lit::Null => constant(Value::Null, SqlType::Null),
        other => return Err(SqlError::unsupported(format!("the literal {other}"), at)),
    })
}

/// `INTERVAL '2' SECOND` and friends, in milliseconds.
pub(crate) fn interval_ms(i: &sqlparser::ast::Interval, at: Position) -> Result<i64, SqlError> {
    let text = match i.value.as_ref() {
        Expr::Value(v) => match &v.value {
            Lit::SingleQuotedString(s) | Lit::Number(s, _) => s.clone(),
            other => other.to_string(),
        },
        other => other.to_string(),
    };
    if i.last_field.is_some() {
        return Err(SqlError::unsupported("INTERVAL … TO … ranges", at));
    }
    let unit_ms: f64 = match &i.leading_field {
        Some(DateTimeField::Second | DateTimeField::Seconds) | None => 1_000.0,
        Some(DateTimeField::Minute | DateTimeField::Minutes) => 60_000.0,
        Some(DateTimeField::Hour | DateTimeField::Hours) => 3_600_000.0,
        Some(DateTimeField::Day | DateTimeField::Days) => 86_400_000.0,
        Some(other) => {
            return Err(SqlError::unsupported(
                format!("INTERVAL of {other} (day-time intervals only)"),
                at,
            ))
        }
    };
    let n: f64 = text
        .trim()
        .parse()
        .map_err(|_| SqlError::validation(format!("'{text}' is not an interval length"), at))?;
    Ok((n * unit_ms).round() as i64)
}

fn expect_type(c: &Compiled, ty: SqlType, e: &Expr) -> Result<(), SqlError> {
    if c.ty == ty || c.ty == SqlType::Null {
        Ok(())
    } else {
        Err(SqlError::validation(
            format!("{e} is {} where {ty} is expected", c.ty),
            at(e),
        ))
    }
}

fn not(c: Compiled) -> Compiled {
    let t = test(&c);
    condition(
        Arc::new(move |r| match t(r) {
            Truth::True => Truth::False,
            Truth::False => Truth::True,
            other => other,
        }),
        &[&c],
    )
}

/// The condition `test` over `operands`.
fn condition(test: Test, operands: &[&Compiled]) -> Compiled {
    scaled_condition(test, operands, None)
}

/// [`condition`], of a `factor × column` within `range`.
fn scaled_condition(test: Test, operands: &[&Compiled], range: Option<ScaledRange>) -> Compiled {
    Compiled {
        shape: Shape::Tests(Tested(test.clone(), range)),
        eval: value_of(test, operands.iter().map(|o| o.eval.clone()).collect()),
        ty: SqlType::Boolean,
    }
}

/// AND (`and`) or OR of two booleans, with SQL's NULLs.
fn logic(and: bool, a: Compiled, b: Compiled) -> Compiled {
    if let (true, Shape::Tests(Tested(_, Some(x))), Shape::Tests(Tested(_, Some(y)))) =
        (and, &a.shape, &b.shape)
    {
        if let Some(both) = x.and(y) {
            return scaled_condition(both.test(), &[&a, &b], Some(both));
        }
    }
    let (ta, tb) = (test(&a), test(&b));
    // FALSE AND …, TRUE OR … : the answer without the other side.
    let decides = Truth::of(!and);
    let t: Test = Arc::new(move |r| {
        let x = ta(r);
        if x == decides || x == Truth::Failed {
            return x;
        }
        let y = tb(r);
        if y == decides || y == Truth::Failed {
            return y;
        }
        if x == Truth::Null {
            x
        } else {
            y
        }
    });
    condition(t, &[&a, &b])
}

/// Makes a comparison's test from the test of its [`Ordering`].
trait ComparisonTest {
    fn make<T: Fn(Ordering) -> bool + Send + Sync + 'static>(self, test: T) -> Test;
}

/// The test of comparison `op`, made by `m`: one closure per comparison,
/// so that each has its test inlined rather than called through a pointer
/// every row.
fn compared(op: &BinaryOperator, m: impl ComparisonTest) -> Test {
    match op {
        BinaryOperator::Eq => m.make(|o| o == Ordering::Equal),
        BinaryOperator::NotEq => m.make(|o| o != Ordering::Equal),
        BinaryOperator::Lt => m.make(|o| o == Ordering::Less),
        BinaryOperator::LtEq => m.make(|o| o != Ordering::Greater),
        BinaryOperator::Gt => m.make(|o| o == Ordering::Greater),
        _ => m.make(|o| o != Ordering::Less),
    }
}

/// Two operands and how they compare (`None`: NULL).
struct Pair<'a, C>(&'a Compiled, &'a Compiled, C);

impl<C> ComparisonTest for Pair<'_, C>
where
    C: Fn(&Value, &Value) -> Option<Ordering> + Send + Sync + 'static,
{
    fn make<T: Fn(Ordering) -> bool + Send + Sync + 'static>(self, test: T) -> Test {
        let compare = self.2;
        pair_with(
            self.0,
            self.1,
            move |a, b| compare(a, b).map_or(Truth::Null, |o| Truth::of(test(o))),
            |_| Truth::Failed,
        )
    }
}

/// `op(column, operand) <comparison> constant` over integers, as one
/// step (`MOD(a, 123) = 0`); where the arithmetic fails, its own error.
struct FusedIntTest {
    column: usize,
    op: fn(i64, i64) -> Option<i64>,
    operand: i64,
    int: bool,
    constant: i64,
}

impl ComparisonTest for FusedIntTest {
    fn make<T: Fn(Ordering) -> bool + Send + Sync + 'static>(self, test: T) -> Test {
        Arc::new(move |row| {
            let Some(x) = row[self.column].as_i64() else {
                return Truth::Null;
            };
            let v = match (self.op)(x, self.operand) {
                Some(v) if self.int => i64::from(v as i32),
                Some(v) => v,
                // Division by zero or overflow: the general comparison
                // says which.
                None => return Truth::Failed,
            };
            Truth::of(test(v.cmp(&self.constant)))
        })
    }
}

/// `factor × column <comparison> constant`, the product a DECIMAL and the
/// constant exact at its scale (`0.908 * price > 1000000`), as one test
/// of unscaled integers; where the product overflows, the general
/// comparison (and its error).
struct ScaledTest {
    column: usize,
    factor: i128,
    bound: i128,
}

impl ScaledTest {
    fn of(l: &Shape, r: &Shape) -> Option<ScaledTest> {
        let (
            Shape::Scaled {
                column,
                factor,
                scale,
                ..
            },
            Shape::Constant(c),
        ) = (l, r)
        else {
            return None;
        };
        let bound = match c {
            Value::Int(_) | Value::BigInt(_) => rescale(i128::from(c.as_i64()?), 0, *scale),
            Value::Decimal(u, s) if s <= scale => rescale(u.get(), *s, *scale),
            _ => None,
        }?;
        Some(ScaledTest {
            column: *column,
            factor: *factor,
            bound,
        })
    }
}

impl ComparisonTest for ScaledTest {
    fn make<T: Fn(Ordering) -> bool + Send + Sync + 'static>(self, test: T) -> Test {
        let small = i64::try_from(self.factor).ok();
        Arc::new(
            move |row| match scaled_product(row, self.column, self.factor, small) {
                Ok(p) => Truth::of(test(p.cmp(&self.bound))),
                Err(t) => t,
            },
        )
    }
}

/// `factor × row[column]`, by 64-bit multiplication when the factor and
/// product fit; NULL when the column is not an integer, failed when the
/// product overflows.
#[inline(always)]
fn scaled_product(
    row: &[Value],
    column: usize,
    factor: i128,
    small: Option<i64>,
) -> Result<i128, Truth> {
    let x = match row[column] {
        Value::BigInt(x) => x,
        Value::Int(x) => i64::from(x),
        _ => return Err(Truth::Null),
    };
    if let Some(p) = small.and_then(|f| f.checked_mul(x)) {
        return Ok(i128::from(p));
    }
    factor.checked_mul(i128::from(x)).ok_or(Truth::Failed)
}

/// `factor × column` bounded below and above (each bound inclusive or
/// not): a scaled comparison, or two over the same product joined by
/// `AND` (`0.908 * price > 1000000 AND 0.908 * price < 50000000`), which
/// then multiply once.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ScaledRange {
    column: usize,
    factor: i128,
    low: Option<(i128, bool)>,
    high: Option<(i128, bool)>,
}

impl ScaledRange {
    /// The range of `test` (`factor × column op bound`), if `op` is an
    /// order.
    fn of(test: &ScaledTest, op: &BinaryOperator) -> Option<ScaledRange> {
        let (low, high) = match op {
            BinaryOperator::Gt => (Some((test.bound, false)), None),
            BinaryOperator::GtEq => (Some((test.bound, true)), None),
            BinaryOperator::Lt => (None, Some((test.bound, false))),
            BinaryOperator::LtEq => (None, Some((test.bound, true))),
            _ => return None,
        };
        Some(ScaledRange {
            column: test.column,
            factor: test.factor,
            low,
            high,
        })
    }

    /// Both ranges, over the same product, one bounded below and the
    /// other above.
    fn and(&self, other: &ScaledRange) -> Option<ScaledRange> {
        if (self.column, self.factor) != (other.column, other.factor) {
            return None;
        }
        match (self.low, self.high, other.low, other.high) {
            (Some(_), None, None, Some(_)) | (None, Some(_), Some(_), None) => Some(ScaledRange {
                low: self.low.or(other.low),
                high: self.high.or(other.high),
                ..*self
            }),
            _ => None,
        }
    }

    fn test(self) -> Test {
        let small = i64::try_from(self.factor).ok();
        // A side without a bound: every product is within it.
        let (low, low_in) = self.low.unwrap_or((i128::MIN, true));
        let (high, high_in) = self.high.unwrap_or((i128::MAX, true));
        Arc::new(
            move |row| match scaled_product(row, self.column, self.factor, small) {
                Ok(p) => Truth::of(
                    (p > low || (low_in && p == low)) && (p < high || (high_in && p == high)),
                ),
                Err(t) => t,
            },
        )
    }
}

fn binary(
    op: &BinaryOperator,
    left: &Expr,
    right: &Expr,
    scope: &Scope,
    at: Position,
) -> Result<Compiled, SqlError> {
    let l = compile(left, scope)?;
    let r = compile(right, scope)?;
    match op {
        BinaryOperator::And | BinaryOperator::Or => {
            expect_type(&l, SqlType::Boolean, left)?;
            expect_type(&r, SqlType::Boolean, right)?;
            Ok(logic(matches!(op, BinaryOperator::And), l, r))
        }
        BinaryOperator::Eq
        | BinaryOperator::NotEq
        | BinaryOperator::Lt
        | BinaryOperator::LtEq
        | BinaryOperator::Gt
        | BinaryOperator::GtEq => {
            let comparable = l.ty == r.ty
                || l.ty == SqlType::Null
                || r.ty == SqlType::Null
                || (l.ty.is_numeric() && r.ty.is_numeric())
                || l.ty.is_timestamp() && r.ty.is_timestamp();
            if !comparable {
                return Err(SqlError::validation(
                    format!(
                        "cannot compare {} with {} ({left} {op} {right})",
                        l.ty, r.ty
                    ),
                    at,
                ));
            }
            let fusable = r.ty.is_integer() || r.ty == SqlType::Null;
            let t = match (&l.shape, &r.shape) {
                (
                    &Shape::IntOp {
                        column,
                        op: int_op,
                        operand,
                        int,
                    },
                    Shape::Constant(c),
                ) if fusable => {
                    let Some(k) = c.as_i64() else {
                        return Ok(constant(Value::Null, SqlType::Boolean));
                    };
                    let fused = FusedIntTest {
                        column,
                        op: int_op,
                        operand,
                        int,
                        constant: k,
                    };
                    compared(op, fused)
                }
                (l_shape, r_shape) => match ScaledTest::of(l_shape, r_shape) {
                    Some(scaled) => {
                        let range = ScaledRange::of(&scaled, op);
                        return Ok(scaled_condition(compared(op, scaled), &[&l, &r], range));
                    }
                    // The common case of filters: integers, often against
                    // a constant, or times (a join's time bounds), compared
                    // without the general comparison.
                    None if l.ty.is_integer() && r.ty.is_integer()
                        || l.ty.is_timestamp() && r.ty.is_timestamp() =>
                    {
                        compared(
                            op,
                            Pair(&l, &r, |a: &Value, b: &Value| {
                                Some(a.as_i64()?.cmp(&b.as_i64()?))
                            }),
                        )
                    }
                    None => compared(op, Pair(&l, &r, Value::compare)),
                },
            };
            Ok(condition(t, &[&l, &r]))
        }
        BinaryOperator::StringConcat => {
            let (fl, fr) = (l.eval, r.eval);
            Ok(Compiled {
                shape: Shape::Computed,
                eval: Arc::new(move |row| {
                    let (a, b) = (fl(row)?, fr(row)?);
                    if a.is_null() || b.is_null() {
                        return Ok(Value::Null);
                    }
                    Ok(Value::string(&format!("{a}{b}")))
                }),
                ty: SqlType::String,
            })
        }
        BinaryOperator::Plus
        | BinaryOperator::Minus
        | BinaryOperator::Multiply
        | BinaryOperator::Divide
        | BinaryOperator::Modulo => arithmetic(op.clone(), l, r, at),
        other => Err(SqlError::unsupported(format!("the operator {other}"), at)),
    }
}

/// An integer type as the DECIMAL Flink widens it to.
/// The type values of types `a` and `b` are both cast to where one column
/// holds both (a `UNION`'s, `VALUES`'): Flink's least restrictive type of
/// the two, if they have one.
pub(crate) fn least_restrictive(a: SqlType, b: SqlType) -> Option<SqlType> {
    use SqlType::*;
    Some(match (a, b) {
        _ if a == b => a,
        (Null, x) | (x, Null) => x,
        (Double, x) | (x, Double) if x.is_numeric() => Double,
        (BigInt, Int) | (Int, BigInt) => BigInt,
        (Decimal(..) | Int | BigInt, Decimal(..) | Int | BigInt) => {
            let ((p1, s1), (p2, s2)) = (as_decimal(a), as_decimal(b));
            let scale = s1.max(s2);
            let digits = (p1 - s1).max(p2 - s2);
            Decimal((digits + scale).min(38), scale)
        }
        _ => return None,
    })
}

fn as_decimal(t: SqlType) -> (u8, u8) {
    match t {
        SqlType::Decimal(p, s) => (p, s),
        SqlType::BigInt => (19, 0),
        _ => (10, 0),
    }
}

/// The DECIMAL type of `a op b`, by Flink's rules (as SQL Server's): the
/// digits needed, capped at 38 while keeping at least 6 of scale.
fn decimal_result(op: &BinaryOperator, (p1, s1): (u8, u8), (p2, s2): (u8, u8)) -> SqlType {
    let (p1, s1, p2, s2) = (i32::from(p1), i32::from(s1), i32::from(p2), i32::from(s2));
    let (precision, scale) = match op {
        BinaryOperator::Multiply => (p1 + p2, s1 + s2),
        BinaryOperator::Divide => {
            let scale = 6.max(s1 + p2 + 1);
            (p1 - s1 + s2 + scale, scale)
        }
        BinaryOperator::Modulo => {
            let scale = s1.max(s2);
            ((p1 - s1).min(p2 - s2) + scale, scale)
        }
        _ => {
            let scale = s1.max(s2);
            ((p1 - s1).max(p2 - s2) + scale + 1, scale)
        }
    };
    let (precision, scale) = if precision <= 38 {
        (precision, scale)
    } else {
        let digits = precision - scale;
        (38, (38 - digits).max(scale.min(6)))
    };
    SqlType::Decimal(precision as u8, scale as u8)
}

/// The type arithmetic on `a` and `b` yields, if any.
fn numeric_result(op: &BinaryOperator, a: SqlType, b: SqlType) -> Option<SqlType> {
    use SqlType::*;
    Some(match (a, b) {
        (Null, x) | (x, Null) => x,
        (Timestamp, Interval) if matches!(op, BinaryOperator::Plus | BinaryOperator::Minus) => {
            Timestamp
        }
        (TimestampLtz, Interval) if matches!(op, BinaryOperator::Plus | BinaryOperator::Minus) => {
            TimestampLtz
        }
        (Interval, Interval) if matches!(op, BinaryOperator::Plus | BinaryOperator::Minus) => {
            Interval
        }
        (Double, x) | (x, Double) if x.is_numeric() => Double,
        (Decimal(..), Int | BigInt | Decimal(..)) | (Int | BigInt, Decimal(..)) => {
            decimal_result(op, as_decimal(a), as_decimal(b))
        }
        (BigInt, Int | BigInt) | (Int, BigInt) => BigInt,
        (Int, Int) => Int,
        _ => return None,
    })
}

fn arithmetic(
    op: BinaryOperator,
    l: Compiled,
    r: Compiled,
    at: Position,
) -> Result<Compiled, SqlError> {
    let ty = numeric_result(&op, l.ty, r.ty).ok_or_else(|| {
        SqlError::validation(format!("cannot apply {op} to {} and {}", l.ty, r.ty), at)
    })?;
    if ty.is_integer() {
        // Integers: the operation chosen once, here, not per row.
        let int_op: fn(i64, i64) -> Option<i64> = match op {
            BinaryOperator::Plus => i64::checked_add,
            BinaryOperator::Minus => i64::checked_sub,
            BinaryOperator::Multiply => i64::checked_mul,
            BinaryOperator::Divide => |x, y| if y == 0 { None } else { x.checked_div(y) },
            _ => |x, y| if y == 0 { None } else { x.checked_rem(y) },
        };
        let int = ty == SqlType::Int;
        let shape = match (&l.shape, &r.shape) {
            (Shape::Column(column), Shape::Constant(c)) => {
                c.as_i64().map_or(Shape::Computed, |operand| Shape::IntOp {
                    column: *column,
                    op: int_op,
                    operand,
                    int,
                })
            }
            _ => Shape::Computed,
        };
        return Ok(Compiled {
            shape,
            eval: pair(&l, &r, move |a, b| {
                let (Some(x), Some(y)) = (a.as_i64(), b.as_i64()) else {
                    return Ok(Value::Null);
                };
                match int_op(x, y) {
                    Some(v) if int => Ok(Value::Int(v as i32)),
                    Some(v) => Ok(Value::BigInt(v)),
                    // Division by zero or overflow: the general path says
                    // which.
                    None => apply(&op, a, b, ty),
                }
            }),
            ty,
        });
    }
    if matches!(
        ty,
        SqlType::Timestamp | SqlType::TimestampLtz | SqlType::Interval
    ) {
        // Time ± interval (watermark expressions: evaluated per row).
        let sign = if matches!(op, BinaryOperator::Minus) {
            -1
        } else {
            1
        };
        let make: fn(i64) -> Value = match ty {
            SqlType::Timestamp => Value::Timestamp,
            SqlType::TimestampLtz => Value::TimestampLtz,
            _ => Value::Interval,
        };
        let shape = match (&l.shape, &r.shape) {
            (Shape::Column(i), Shape::Constant(c)) if ty != SqlType::Interval => c
                .as_i64()
                .map_or(Shape::Computed, |ms| Shape::Shifted(*i, sign * ms)),
            _ => Shape::Computed,
        };
        return Ok(Compiled {
            shape,
            eval: pair(&l, &r, move |a, b| {
                Ok(match (a.as_i64(), b.as_i64()) {
                    (Some(x), Some(y)) => make(x.saturating_add(sign * y)),
                    _ => Value::Null,
                })
            }),
            ty,
        });
    }
    // A column and a constant (`0.908 * price`): also written in place.
    let operands = match (&l.shape, &r.shape) {
        (Shape::Column(i), Shape::Constant(c)) => Some((*i, c.clone(), false)),
        (Shape::Constant(c), Shape::Column(j)) => Some((*j, c.clone(), true)),
        _ => None,
    };
    // A DECIMAL constant times an integer column, the product at the
    // constant's scale (`0.908 * price`): one multiplication, with no
    // rescaling to decide per row.
    if let (
        Some((column, Value::Decimal(c, sc), flipped)),
        BinaryOperator::Multiply,
        SqlType::Decimal(_, s),
    ) = (&operands, &op, ty)
    {
        let column_type = if *flipped { r.ty } else { l.ty };
        if *sc == s && column_type.is_integer() {
            let (column, c, constant) = (*column, c.get(), Value::Decimal(*c, *sc));
            let write = SlotEval(Arc::new(move |row: &mut [Value], slot| {
                // An INT or BIGINT column holds one of three kinds of
                // value: two tests, not `as_i64`'s jump over every kind.
                let x = match row[column] {
                    Value::BigInt(x) => x,
                    Value::Int(x) => i64::from(x),
                    _ => {
                        row[slot] = Value::Null;
                        return Ok(());
                    }
                };
                match c.checked_mul(i128::from(x)) {
                    Some(p) => crate::value::put(&mut row[slot], || Value::decimal(p, s)),
                    // Out of range: the general path says so.
                    None => {
                        let v = apply(&BinaryOperator::Multiply, &constant, &row[column], ty)?;
                        row[slot] = v;
                    }
                }
                Ok(())
            }));
            let shape = Shape::Scaled {
                column,
                factor: c,
                scale: s,
                write,
            };
            // Evaluated (in a WHERE, say), the same multiplication.
            let general = computed_arithmetic(&l, &r, op, ty, Shape::Computed).eval;
            let eval: Eval = Arc::new(move |row: &[Value]| {
                let x = match row[column] {
                    Value::BigInt(x) => x,
                    Value::Int(x) => i64::from(x),
                    _ => return general(row),
                };
                match c.checked_mul(i128::from(x)) {
                    Some(p) => Ok(Value::decimal(p, s)),
                    None => general(row),
                }
            });
            return Ok(Compiled { shape, eval, ty });
        }
    }
    let shape = operands.map_or(Shape::Computed, |(column, constant, flipped)| {
        let op = op.clone();
        Shape::WritesAt(SlotEval(Arc::new(move |row: &mut [Value], slot| {
            let x = &row[column];
            if x.is_null() || constant.is_null() {
                row[slot] = Value::Null;
                return Ok(());
            }
            let (a, b) = if flipped {
                (&constant, x)
            } else {
                (x, &constant)
            };
            // Written from its parts, and before the old value is
            // dropped: `apply`'s value is built on the stack a piece at a
            // time, and copied whole it was read back in wider pieces than
            // it was stored in, which stalled the CPU on every row.
            let v = apply(&op, a, b, ty)?;
            let old = std::mem::replace(&mut row[slot], Value::Null);
            match v {
                Value::Decimal(u, s) => row[slot] = Value::Decimal(u, s),
                Value::Double(d) => row[slot] = Value::Double(d),
                v => row[slot] = v,
            }
            drop(old);
            Ok(())
        })))
    });
    Ok(computed_arithmetic(&l, &r, op, ty, shape))
}

/// `l op r` of type `ty`, computed by the general arithmetic (NULL if
/// either is), with the shape `shape`.
fn computed_arithmetic(
    l: &Compiled,
    r: &Compiled,
    op: BinaryOperator,
    ty: SqlType,
    shape: Shape,
) -> Compiled {
    Compiled {
        shape,
        eval: pair(l, r, move |a, b| {
            if a.is_null() || b.is_null() {
                return Ok(Value::Null);
            }
            apply(&op, a, b, ty)
        }),
        ty,
    }
}

#[inline(always)]
pub(crate) fn apply(
    op: &BinaryOperator,
    a: &Value,
    b: &Value,
    ty: SqlType,
) -> Result<Value, String> {
    let overflow = || format!("arithmetic overflow: {a} {op} {b}");
    match ty {
        SqlType::Double => {
            let (x, y) = (a.as_f64().unwrap_or(0.0), b.as_f64().unwrap_or(0.0));
            Ok(Value::Double(match op {
                BinaryOperator::Plus => x + y,
                BinaryOperator::Minus => x - y,
                BinaryOperator::Multiply => x * y,
                BinaryOperator::Divide => x / y,
                _ => x % y,
            }))
        }
        SqlType::Decimal(_, s) => {
            let as_dec = |v: &Value| -> Option<(i128, u8)> {
                match v {
                    Value::Decimal(u, s) => Some((u.get(), *s)),
                    other => Some((i128::from(other.as_i64()?), 0)),
                }
            };
            let ((x, sx), (y, sy)) = (
                as_dec(a).ok_or_else(overflow)?,
                as_dec(b).ok_or_else(overflow)?,
            );
            let v = match op {
                BinaryOperator::Plus | BinaryOperator::Minus | BinaryOperator::Modulo => {
                    let (x, y) = (
                        rescale(x, sx, s).ok_or_else(overflow)?,
                        rescale(y, sy, s).ok_or_else(overflow)?,
                    );
                    match op {
                        BinaryOperator::Plus => x.checked_add(y),
                        BinaryOperator::Minus => x.checked_sub(y),
                        _ if y == 0 => return Err(format!("division by zero: {a} % {b}")),
                        _ => x.checked_rem(y),
                    }
                }
                BinaryOperator::Multiply => {
                    let p = x.checked_mul(y).ok_or_else(overflow)?;
                    // The product has scale sx + sy; bring it to s.
                    let from = sx + sy;
                    if from == s {
                        Some(p)
                    } else if from > s {
                        Some(round_div(p, 10i128.pow(u32::from(from - s))))
                    } else {
                        rescale(p, from, s)
                    }
                }
                _ => {
                    if y == 0 {
                        return Err(format!("division by zero: {a} / {b}"));
                    }
                    // x / y at scale s: x·10^(s + sy − sx) / y.
                    let shift = i32::from(s) + i32::from(sy) - i32::from(sx);
                    let n = if shift >= 0 {
                        x.checked_mul(10i128.checked_pow(shift as u32).ok_or_else(overflow)?)
                    } else {
                        Some(x / 10i128.pow((-shift) as u32))
                    };
                    n.map(|n| round_div(n, y))
                }
            };
            Ok(Value::decimal(v.ok_or_else(overflow)?, s))
        }
        SqlType::Int | SqlType::BigInt => {
            let (x, y) = (a.as_i64().unwrap_or(0), b.as_i64().unwrap_or(0));
            let v = match op {
                BinaryOperator::Plus => x.checked_add(y),
                BinaryOperator::Minus => x.checked_sub(y),
                BinaryOperator::Multiply => x.checked_mul(y),
                _ if y == 0 => return Err(format!("division by zero: {a} {op} {b}")),
                BinaryOperator::Divide => x.checked_div(y),
                _ => x.checked_rem(y),
            }
            .ok_or_else(overflow)?;
            if ty == SqlType::Int {
                // INT arithmetic wraps in Flink (Java's int).
                Ok(Value::Int(v as i32))
            } else {
                Ok(Value::BigInt(v))
            }
        }
        SqlType::Timestamp | SqlType::TimestampLtz | SqlType::Interval => {
            let (x, y) = (a.as_i64().unwrap_or(0), b.as_i64().unwrap_or(0));
            let v = if matches!(op, BinaryOperator::Plus) {
                x + y
            } else {
                x - y
            };
            Ok(match ty {
                SqlType::Timestamp => Value::Timestamp(v),
                SqlType::TimestampLtz => Value::TimestampLtz(v),
                _ => Value::Interval(v),
            })
        }
        other => Err(format!("no arithmetic on {other}")),
    }
}

/// `n / d` rounded half away from zero (Flink's decimal rounding).
fn round_div(n: i128, d: i128) -> i128 {
    let q = n / d;
    let r = n % d;
    if 2 * r.abs() >= d.abs() {
        q + if (n < 0) == (d < 0) { 1 } else { -1 }
    } else {
        q
    }
}

/// SQL `LIKE` with `%` and `_`.
fn like(s: &str, p: &str) -> bool {
    let s: Vec<char> = s.chars().collect();
    let p: Vec<char> = p.chars().collect();
    // Greedy match with backtracking to the last `%`.
    let (mut i, mut j) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while i < s.len() {
        if j < p.len() && (p[j] == '_' || p[j] == s[i]) {
            i += 1;
            j += 1;
        } else if j < p.len() && p[j] == '%' {
            star = Some(j);
            mark = i;
            j += 1;
        } else if let Some(st) = star {
            j = st + 1;
            mark += 1;
            i = mark;
        } else {
            return false;
        }
    }
    p[j..].iter().all(|c| *c == '%')
}

fn case(
    operand: Option<&Expr>,
    conditions: &[sqlparser::ast::CaseWhen],
    else_result: Option<&Expr>,
    scope: &Scope,
    at: Position,
) -> Result<Compiled, SqlError> {
    let operand = operand.map(|o| compile(o, scope)).transpose()?;
    let mut branches = Vec::new();
    let mut ty: Option<SqlType> = None;
    for w in conditions {
        let cond = compile(&w.condition, scope)?;
        let result = compile(&w.result, scope)?;
        ty = Some(unify(ty, result.ty, at)?);
        branches.push((cond, result));
    }
    let otherwise = else_result.map(|x| compile(x, scope)).transpose()?;
    if let Some(o) = &otherwise {
        ty = Some(unify(ty, o.ty, at)?);
    }
    let ty = ty.unwrap_or(SqlType::String);
    let operand = operand.map(|c| c.eval);
    let branches: Vec<(Condition, Eval, SqlType)> = branches
        .into_iter()
        .map(|(c, r)| (Condition::of(&c), r.eval, r.ty))
        .collect();
    let otherwise = otherwise.map(|c| (c.eval, c.ty));
    Ok(Compiled {
        shape: Shape::Computed,
        eval: Arc::new(move |r| {
            let subject = operand.as_ref().map(|f| f(r)).transpose()?;
            for (cond, result, rty) in &branches {
                let hit = match &subject {
                    Some(s) => s.compare(&(cond.eval)(r)?) == Some(Ordering::Equal),
                    None => cond.passes(r)?,
                };
                if hit {
                    // Most branches have the CASE's type already: no call.
                    return if *rty == ty {
                        result(r)
                    } else {
                        cast(result(r)?, *rty, ty)
                    };
                }
            }
            match &otherwise {
                Some((f, oty)) if *oty == ty => f(r),
                Some((f, oty)) => cast(f(r)?, *oty, ty),
                None => Ok(Value::Null),
            }
        }),
        ty,
    })
}

/// The common type of CASE branches (numbers widen).
pub(crate) fn unify(a: Option<SqlType>, b: SqlType, at: Position) -> Result<SqlType, SqlError> {
    let Some(a) = a else { return Ok(b) };
    if a == b || b == SqlType::Null {
        return Ok(a);
    }
    if a == SqlType::Null {
        return Ok(b);
    }
    if a.is_numeric() && b.is_numeric() {
        return Ok(numeric_result(&BinaryOperator::Plus, a, b).unwrap_or(SqlType::Double));
    }
    Err(SqlError::validation(
        format!("branches of types {a} and {b} do not agree"),
        at,
    ))
}

/// Converts `v` of type `from` to type `to`.
pub(crate) fn cast(v: Value, from: SqlType, to: SqlType) -> Result<Value, String> {
    if v.is_null() || from == to {
        return Ok(v);
    }
    let fail = || format!("cannot cast {v} ({from}) to {to}");
    Ok(match to {
        SqlType::String => Value::string(&v.to_string()),
        SqlType::Double => Value::Double(v.as_f64().ok_or_else(fail)?),
        SqlType::Int | SqlType::BigInt => {
            let i = match &v {
                Value::Double(d) => d.trunc() as i64,
                Value::Decimal(u, s) => (u.get() / 10i128.pow(u32::from(*s))) as i64,
                Value::String(s) => s.trim().parse().map_err(|_| fail())?,
                Value::Boolean(b) => i64::from(*b),
                other => other.as_i64().ok_or_else(fail)?,
            };
            if to == SqlType::Int {
                Value::Int(i as i32)
            } else {
                Value::BigInt(i)
            }
        }
        SqlType::Decimal(p, s) => match &v {
            Value::Decimal(u, from_s) => {
                let u = if *from_s <= s {
                    rescale(u.get(), *from_s, s).ok_or_else(fail)?
                } else {
                    round_div(u.get(), 10i128.pow(u32::from(from_s - s)))
                };
                // Too many digits for the precision: Flink's cast fails.
                if u.unsigned_abs() >= 10u128.pow(u32::from(p)) {
                    return Err(fail());
                }
                Value::decimal(u, s)
            }
            Value::Int(_) | Value::BigInt(_) => {
                let u = rescale(i128::from(v.as_i64().unwrap_or(0)), 0, s).ok_or_else(fail)?;
                if u.unsigned_abs() >= 10u128.pow(u32::from(p)) {
                    return Err(fail());
                }
                Value::decimal(u, s)
            }
            Value::String(text) => Value::parse(text, to).map_err(|_| fail())?,
            other => {
                Value::parse(&other.to_string(), SqlType::Decimal(p, s)).map_err(|_| fail())?
            }
        },
        SqlType::Boolean => match &v {
            Value::String(s) => Value::parse(s, to).map_err(|_| fail())?,
            other => Value::Boolean(other.as_i64().ok_or_else(fail)? != 0),
        },
        SqlType::Timestamp | SqlType::TimestampLtz | SqlType::Date => match &v {
            Value::String(s) => Value::parse(s, to)?,
            Value::Timestamp(ms) | Value::TimestampLtz(ms) => match to {
                SqlType::Date => Value::Date(ms.div_euclid(86_400_000) as i32),
                SqlType::Timestamp => Value::Timestamp(*ms),
                _ => Value::TimestampLtz(*ms),
            },
            Value::Date(d) => {
                let ms = i64::from(*d) * 86_400_000;
                if to == SqlType::TimestampLtz {
                    Value::TimestampLtz(ms)
                } else {
                    Value::Timestamp(ms)
                }
            }
            _ => return Err(fail()),
        },
        SqlType::Bytes => match &v {
            Value::String(s) => Value::Bytes(Arc::from(s.as_bytes())),
            _ => return Err(fail()),
        },
        SqlType::Interval | SqlType::Null => return Err(fail()),
    })
}

/// The arguments of a call, as expressions.
fn args(func: &sqlparser::ast::Function, at: Position) -> Result<Vec<&Expr>, SqlError> {
    match &func.args {
        FunctionArguments::None => Ok(Vec::new()),
        FunctionArguments::List(list) => {
            if list.duplicate_treatment.is_some() {
                return Err(SqlError::unsupported(
                    format!("DISTINCT in {} here", func.name),
                    at,
                ));
            }
            list.args
                .iter()
                .map(|a| match a {
                    FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Ok(e),
                    other => Err(SqlError::unsupported(format!("the argument {other}"), at)),
                })
                .collect()
        }
        FunctionArguments::Subquery(_) => Err(SqlError::unsupported("subqueries as arguments", at)),
    }
}

thread_local! {
    /// The watermark of the calc evaluating a row, for `CURRENT_WATERMARK`:
    /// `None` outside a calc that tracks it.
    static CALC_WATERMARK: std::cell::Cell<Option<i64>> = const { std::cell::Cell::new(None) };
}

/// `f`, its expressions' `CURRENT_WATERMARK` being `watermark`.
pub(crate) fn with_calc_watermark<R>(watermark: i64, f: impl FnOnce() -> R) -> R {
    CALC_WATERMARK.set(Some(watermark));
    let result = f();
    CALC_WATERMARK.set(None);
    result
}

/// Whether `e` is a call of `PROCTIME()`.
pub(crate) fn is_proctime(e: &Expr) -> bool {
    matches!(e, Expr::Function(f) if f.name.to_string().eq_ignore_ascii_case("PROCTIME"))
}

/// Whether `name` is an aggregate function (planned by the aggregation,
/// not here).
pub(crate) fn is_aggregate(name: &str) -> bool {
    matches!(
        name.to_ascii_uppercase().as_str(),
        "COUNT"
            | "SUM"
            | "MIN"
            | "MAX"
            | "AVG"
            | "LISTAGG"
            | "FIRST_VALUE"
            | "LAST_VALUE"
            | "VAR_POP"
            | "VAR_SAMP"
            | "VARIANCE"
            | "STDDEV_POP"
            | "STDDEV_SAMP"
            | "STDDEV"
            | "LAG"
            | "LEAD"
    )
}

/// `EXTRACT(field FROM x)` (and `HOUR(x)`, …) of a date or timestamp, in
/// UTC: a BIGINT, as in Flink.
fn extract(field: &DateTimeField, x: Compiled, e: &Expr) -> Result<Compiled, SqlError> {
    let days = match x.ty {
        SqlType::Date => true,
        SqlType::Timestamp | SqlType::TimestampLtz => false,
        other => {
            return Err(SqlError::validation(
                format!("cannot extract {field} from {other}"),
                at(e),
            ))
        }
    };
    // The time of day straight from the milliseconds: through the
    // calendar fields, every HOUR() worked out the date as well.
    // As an integer operation (its operand unused), so that a timestamp
    // column's field compared with a constant (`HOUR(ts) >= 8`) is one
    // fused test.
    let pick: fn(i64, i64) -> Option<i64> = match field {
        DateTimeField::Year => |ms, _| Some(crate::time::fields(ms).year),
        DateTimeField::Month => |ms, _| Some(i64::from(crate::time::fields(ms).month)),
        DateTimeField::Day => |ms, _| Some(i64::from(crate::time::fields(ms).day)),
        DateTimeField::Hour if !days => |ms, _| Some(ms.rem_euclid(86_400_000) / 3_600_000),
        DateTimeField::Minute if !days => |ms, _| Some(ms.rem_euclid(3_600_000) / 60_000),
        DateTimeField::Second if !days => |ms, _| Some(ms.rem_euclid(60_000) / 1000),
        DateTimeField::Millisecond if !days => |ms, _| Some(ms.rem_euclid(1000)),
        DateTimeField::Dow | DateTimeField::DayOfWeek => {
            |ms, _| Some(crate::builtin::day_of_week(ms))
        }
        DateTimeField::Doy | DateTimeField::DayOfYear => {
            |ms, _| Some(crate::builtin::day_of_year(ms))
        }
        DateTimeField::Week(None) => |ms, _| Some(crate::builtin::iso_week(ms)),
        DateTimeField::Quarter => |ms, _| Some(crate::builtin::quarter(ms)),
        other => {
            return Err(SqlError::unsupported(
                format!("extracting {other} from {}", x.ty),
                at(e),
            ))
        }
    };
    let shape = match x.shape {
        // A date column's integer is days, not milliseconds.
        Shape::Column(column) if !days => Shape::IntOp {
            column,
            op: pick,
            operand: 0,
            int: false,
        },
        _ => Shape::Computed,
    };
    let f = x.eval;
    Ok(Compiled {
        shape,
        eval: Arc::new(move |r| {
            let ms = match f(r)? {
                Value::Date(d) => i64::from(d) * 86_400_000,
                v => match v.as_i64() {
                    Some(ms) => ms,
                    None => return Ok(Value::Null),
                },
            };
            Ok(pick(ms, 0).map_or(Value::Null, Value::BigInt))
        }),
        ty: SqlType::BigInt,
    })
}

fn function(
    func: &sqlparser::ast::Function,
    scope: &Scope,
    at: Position,
) -> Result<Compiled, SqlError> {
    let name = func.name.to_string().to_ascii_uppercase();
    if func.over.is_some() {
        return Err(SqlError::unsupported(format!("{name} … OVER here"), at));
    }
    if is_aggregate(&name) {
        return Err(SqlError::validation(
            format!("the aggregate {name} is only allowed in the SELECT list of a GROUP BY query"),
            at,
        ));
    }
    let exprs = args(func, at)?;
    let call = crate::builtin::Call {
        name: &name,
        exprs: &exprs,
        scope,
        at,
    };
    if let Some(c) = crate::builtin::compile(&call)? {
        return Ok(c);
    }
    let compiled: Vec<Compiled> = exprs
        .iter()
        .map(|e| compile(e, scope))
        .collect::<Result<_, _>>()?;
    let arity = |n: usize| -> Result<(), SqlError> {
        if compiled.len() == n {
            Ok(())
        } else {
            Err(SqlError::validation(
                format!("{name} takes {n} argument(s), not {}", compiled.len()),
                at,
            ))
        }
    };
    let string_fn = |f: fn(&str) -> Value, ty: SqlType| -> Result<Compiled, SqlError> {
        arity(1)?;
        expect_type(&compiled[0], SqlType::String, exprs[0])?;
        let g = compiled[0].eval.clone();
        Ok(Compiled {
            shape: Shape::Computed,
            eval: Arc::new(move |r| {
                Ok(match g(r)? {
                    Value::String(s) => f(&s),
                    _ => Value::Null,
                })
            }),
            ty,
        })
    };
    match name.as_str() {
        // The watermark the row's calc has seen (Flink's: the one before
        // the row's own), NULL before the first; of the argument's type.
        "GROUPING" | "GROUPING_ID" => crate::grouping_sets::grouping(&exprs, scope, at),
        "CURRENT_WATERMARK" => {
            arity(1)?;
            let ty = compiled[0].ty;
            if !ty.is_timestamp() {
                return Err(SqlError::validation(
                    format!("CURRENT_WATERMARK takes a time attribute, not {ty}"),
                    at,
                ));
            }
            Ok(Compiled {
                shape: Shape::Computed,
                eval: Arc::new(move |_| match CALC_WATERMARK.get() {
                    None => Err(
                        "CURRENT_WATERMARK is supported in a WHERE and a SELECT list \
                                 only"
                            .into(),
                    ),
                    Some(i64::MIN) => Ok(Value::Null),
                    Some(w) if ty == SqlType::TimestampLtz => Ok(Value::TimestampLtz(w)),
                    Some(w) => Ok(Value::Timestamp(w)),
                }),
                ty,
            })
        }
        "UPPER" => string_fn(|s| Value::string(&s.to_uppercase()), SqlType::String),
        "LOWER" => string_fn(|s| Value::string(&s.to_lowercase()), SqlType::String),
        "CHAR_LENGTH" | "CHARACTER_LENGTH" => {
            string_fn(|s| Value::Int(s.chars().count() as i32), SqlType::Int)
        }
        "CONCAT" => {
            let fs: Vec<Eval> = compiled.into_iter().map(|c| c.eval).collect();
            Ok(Compiled {
                shape: Shape::Computed,
                eval: Arc::new(move |r| {
                    let mut out = String::new();
                    for f in &fs {
                        let v = f(r)?;
                        if v.is_null() {
                            return Ok(Value::Null);
                        }
                        out.push_str(&v.to_string());
                    }
                    Ok(Value::string(&out))
                }),
                ty: SqlType::String,
            })
        }
        // IFNULL(a, b) is COALESCE(a, b).
        "COALESCE" | "IFNULL" => {
            if name == "IFNULL" {
                arity(2)?;
            }
            let mut ty = None;
            for c in &compiled {
                ty = Some(unify(ty, c.ty, at)?);
            }
            let ty = ty.ok_or_else(|| SqlError::validation("COALESCE needs arguments", at))?;
            let fs: Vec<(Eval, SqlType)> = compiled.into_iter().map(|c| (c.eval, c.ty)).collect();
            Ok(Compiled {
                shape: Shape::Computed,
                eval: Arc::new(move |r| {
                    for (f, fty) in &fs {
                        let v = f(r)?;
                        if !v.is_null() {
                            return cast(v, *fty, ty);
                        }
                    }
                    Ok(Value::Null)
                }),
                ty,
            })
        }
        "NULLIF" => {
            // NULL when the two are equal, else the first (Flink's CASE WHEN
            // a = b THEN NULL ELSE a END, with `a` evaluated once). The
            // equality is compiled for its type check alone.
            arity(2)?;
            binary(&BinaryOperator::Eq, exprs[0], exprs[1], scope, at)?;
            let (a, b) = (compiled[0].eval.clone(), compiled[1].eval.clone());
            Ok(Compiled {
                shape: Shape::Computed,
                eval: Arc::new(move |r| {
                    let v = a(r)?;
                    Ok(match v.compare(&b(r)?) {
                        Some(std::cmp::Ordering::Equal) => Value::Null,
                        _ => v,
                    })
                }),
                ty: compiled[0].ty,
            })
        }
        "IF" => {
            arity(3)?;
            expect_type(&compiled[0], SqlType::Boolean, exprs[0])?;
            let ty = unify(Some(compiled[1].ty), compiled[2].ty, at)?;
            let (c, t, f) = (
                Condition::of(&compiled[0]),
                compiled[1].clone(),
                compiled[2].clone(),
            );
            Ok(Compiled {
                shape: Shape::Computed,
                eval: Arc::new(move |r| {
                    if c.passes(r)? {
                        cast((t.eval)(r)?, t.ty, ty)
                    } else {
                        cast((f.eval)(r)?, f.ty, ty)
                    }
                }),
                ty,
            })
        }
        "ABS" => {
            arity(1)?;
            let c = compiled[0].clone();
            if !c.ty.is_numeric() {
                return Err(SqlError::validation(format!("ABS of {}", c.ty), at));
            }
            let ty = c.ty;
            Ok(Compiled {
                shape: Shape::Computed,
                eval: Arc::new(move |r| {
                    Ok(match (c.eval)(r)? {
                        Value::Int(v) => Value::Int(v.wrapping_abs()),
                        Value::BigInt(v) => Value::BigInt(v.wrapping_abs()),
                        Value::Double(v) => Value::Double(v.abs()),
                        Value::Decimal(v, s) => Value::decimal(v.get().abs(), s),
                        other => other,
                    })
                }),
                ty,
            })
        }
        "MOD" => {
            arity(2)?;
            arithmetic(
                BinaryOperator::Modulo,
                compiled[0].clone(),
                compiled[1].clone(),
                at,
            )
        }
        "TO_TIMESTAMP_LTZ" => {
            arity(2)?;
            let (n, precision) = (compiled[0].clone(), compiled[1].clone());
            if !n.ty.is_numeric() {
                return Err(SqlError::validation(
                    format!(
                        "TO_TIMESTAMP_LTZ takes a number of seconds or milliseconds, not {}",
                        n.ty
                    ),
                    at,
                ));
            }
            // The precision is a constant, 0 (seconds) or 3 (milliseconds).
            let scale = match (precision.eval)(&[]) {
                Ok(Value::Int(0)) => 1000,
                Ok(Value::Int(3)) => 1,
                _ => {
                    return Err(SqlError::validation(
                        "TO_TIMESTAMP_LTZ's precision must be 0 or 3",
                        at,
                    ))
                }
            };
            // Of a column (a table's event time from its epoch
            // milliseconds): also written in place.
            let shape = match n.shape {
                Shape::Column(i) => {
                    Shape::WritesAt(SlotEval(Arc::new(move |row: &mut [Value], slot| {
                        match row[i].as_i64() {
                            Some(v) => crate::value::put(&mut row[slot], || {
                                Value::TimestampLtz(v.saturating_mul(scale))
                            }),
                            None => row[slot] = Value::Null,
                        }
                        Ok(())
                    })))
                }
                _ => Shape::Computed,
            };
            Ok(Compiled {
                shape,
                eval: Arc::new(move |r| {
                    Ok(match (n.eval)(r)?.as_i64() {
                        Some(v) => Value::TimestampLtz(v.saturating_mul(scale)),
                        None => Value::Null,
                    })
                }),
                ty: SqlType::TimestampLtz,
            })
        }
        "YEAR" | "QUARTER" | "MONTH" | "WEEK" | "DAYOFYEAR" | "DAYOFMONTH" | "DAYOFWEEK"
        | "HOUR" | "MINUTE" | "SECOND" => {
            arity(1)?;
            let field = match name.as_str() {
                "YEAR" => DateTimeField::Year,
                "QUARTER" => DateTimeField::Quarter,
                "MONTH" => DateTimeField::Month,
                "WEEK" => DateTimeField::Week(None),
                "DAYOFYEAR" => DateTimeField::DayOfYear,
                "DAYOFMONTH" => DateTimeField::Day,
                "DAYOFWEEK" => DateTimeField::DayOfWeek,
                "HOUR" => DateTimeField::Hour,
                "MINUTE" => DateTimeField::Minute,
                _ => DateTimeField::Second,
            };
            extract(&field, compiled[0].clone(), exprs[0])
        }
        "DATE_FORMAT" => {
            arity(2)?;
            let (ts, pattern) = (compiled[0].clone(), compiled[1].clone());
            if !matches!(ts.ty, SqlType::Timestamp | SqlType::TimestampLtz) {
                return Err(SqlError::validation(
                    format!("DATE_FORMAT formats a TIMESTAMP, not {}", ts.ty),
                    position(exprs[0].span()),
                ));
            }
            expect_type(&pattern, SqlType::String, exprs[1])?;
            // A constant pattern is read once, and a wrong one fails the
            // statement, not its first row.
            if let Shape::Constant(Value::String(text)) = &pattern.shape {
                let parsed = crate::time::DatePattern::parse(text)
                    .map_err(|e| SqlError::validation(e, position(exprs[1].span())))?;
                // Rows come in time order, more or less: the text of the
                // last span formatted (a day, for a date) is kept and
                // shared while the rows stay in it.
                let span = parsed.granularity();
                let id = crate::time::new_format_id();
                // Of a column (q15's day of a bid's time), the time is read
                // where it is: returned by a call, it was copied out of
                // memory it had just been written to, and waited for it.
                let column = match ts.shape {
                    Shape::Column(i) => Some(i),
                    _ => None,
                };
                return Ok(Compiled {
                    shape: Shape::Computed,
                    eval: Arc::new(move |r| {
                        let ms = match column {
                            Some(i) => r[i].as_i64(),
                            None => (ts.eval)(r)?.as_i64(),
                        };
                        let Some(ms) = ms else {
                            return Ok(Value::Null);
                        };
                        Ok(crate::time::formatted(id, ms.div_euclid(span), || {
                            let mut out = String::with_capacity(24);
                            parsed.format(ms, &mut out);
                            Value::string(&out)
                        }))
                    }),
                    ty: SqlType::String,
                });
            }
            Ok(Compiled {
                shape: Shape::Computed,
                eval: Arc::new(move |r| {
                    let (Some(ms), Value::String(p)) = ((ts.eval)(r)?.as_i64(), (pattern.eval)(r)?)
                    else {
                        return Ok(Value::Null);
                    };
                    crate::time::date_format(ms, &p).map(|s| Value::string(&s))
                }),
                ty: SqlType::String,
            })
        }
        "REPLACE" => {
            arity(3)?;
            for (c, e) in compiled.iter().zip(&exprs) {
                expect_type(c, SqlType::String, e)?;
            }
            let fs: Vec<Eval> = compiled.into_iter().map(|c| c.eval).collect();
            Ok(Compiled {
                shape: Shape::Computed,
                eval: Arc::new(move |r| match (fs[0](r)?, fs[1](r)?, fs[2](r)?) {
                    (Value::String(s), Value::String(from), Value::String(to)) => {
                        Ok(Value::string(&s.replace(&*from, &to)))
                    }
                    _ => Ok(Value::Null),
                }),
                ty: SqlType::String,
            })
        }
        other => match crate::function::lookup(other) {
            Some(udf) => {
                let body = udf.body;
                if let Some(read) = ReadArguments::of(&compiled) {
                    return Ok(Compiled {
                        shape: Shape::Computed,
                        eval: Arc::new(move |r| read.call(&body, r)),
                        ty: udf.result,
                    });
                }
                let mut fs: Vec<Eval> = compiled.into_iter().map(|c| c.eval).collect();
                // The arguments of one or two on the stack: no allocation
                // per row.
                let eval: Eval = match (fs.pop(), fs.pop(), fs.is_empty()) {
                    (Some(a), None, _) => Arc::new(move |r| body(&[a(r)?])),
                    (Some(b), Some(a), true) => Arc::new(move |r| body(&[a(r)?, b(r)?])),
                    (b, a, _) => {
                        fs.extend(a);
                        fs.extend(b);
                        Arc::new(move |r| {
                            let args = fs.iter().map(|f| f(r)).collect::<Result<Vec<_>, _>>()?;
                            body(&args)
                        })
                    }
                };
                Ok(Compiled {
                    shape: Shape::Computed,
                    eval,
                    ty: udf.result,
                })
            }
            None => Err(SqlError::unsupported(format!("the function {other}"), at)),
        },
    }
}

/// A function's arguments when each is a column or a constant (at most
/// [`ReadArguments::MOST`]): lent to the function as they are, with no
/// clone per row (a string's clone is two atomic operations on its
/// count).
struct ReadArguments(Vec<Read>);

enum Read {
    Column(usize),
    Constant(Value),
}

impl ReadArguments {
    const MOST: usize = 4;

    fn of(args: &[Compiled]) -> Option<ReadArguments> {
        if args.len() > Self::MOST {
            return None;
        }
        args.iter()
            .map(|a| match &a.shape {
                Shape::Column(i) => Some(Read::Column(*i)),
                Shape::Constant(v) => Some(Read::Constant(v.clone())),
                _ => None,
            })
            .collect::<Option<Vec<_>>>()
            .map(ReadArguments)
    }

    #[inline]
    fn call(&self, body: &crate::function::FunctionBody, row: &[Value]) -> Result<Value, String> {
        const NULL: Value = Value::Null;
        let mut args = std::mem::ManuallyDrop::new([NULL; Self::MOST]);
        for (arg, read) in args.iter_mut().zip(&self.0) {
            let from = match read {
                Read::Column(i) => &row[*i],
                Read::Constant(v) => v,
            };
            // SAFETY: a bitwise copy of a value that outlives the call
            // (the row or the constant), written over a NULL (nothing to
            // drop) and never dropped itself (`ManuallyDrop`): the function
            // sees it through a shared reference only, so it can clone it
            // (taking its own count) but never free it.
            unsafe { std::ptr::write(arg, std::ptr::read(from)) };
        }
        body(&args[..self.0.len()])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlparser::dialect::GenericDialect;
    use sqlparser::parser::Parser;

    fn parse(sql: &str) -> Expr {
        Parser::new(&GenericDialect {})
            .try_with_sql(sql)
            .unwrap()
            .parse_expr()
            .unwrap()
    }

    fn eval(sql: &str, row: &[Value]) -> Result<Value, String> {
        let scope = Scope::of(vec![
            ("a".into(), SqlType::Int),
            ("s".into(), SqlType::String),
            ("d".into(), SqlType::Decimal(10, 2)),
            ("ts".into(), SqlType::Timestamp),
        ]);
        let e = parse(sql);
        let c = compile(&e, &scope).map_err(|e| e.to_string())?;
        (c.eval)(row)
    }

    /// A comparison of column-and-constant arithmetic with a constant is
    /// one step; it must answer as the two steps would.
    #[test]
    fn fused_integer_comparisons_answer_as_the_two_steps() {
        let at = |a: Value| [a, Value::Null, Value::Null, Value::Null];
        let ok = |sql: &str, a: i32| eval(sql, &at(Value::Int(a))).unwrap().to_string();
        assert_eq!(ok("MOD(a, 123) = 0", 246), "TRUE");
        assert_eq!(ok("MOD(a, 123) = 0", 247), "FALSE");
        assert_eq!(ok("MOD(a, 10) >= 5", -7), "FALSE");
        assert_eq!(ok("a + 1 > 7", 7), "TRUE");
        assert_eq!(ok("a - 3 <> 4", 7), "FALSE");
        // INT arithmetic wraps before it is compared.
        assert_eq!(ok("a + 1 < 0", i32::MAX), "TRUE");
        // Not an integer constant: compared as numbers.
        assert_eq!(ok("MOD(a, 3) = 1.5", 7), "FALSE");
        assert_eq!(ok("MOD(a, 3) = NULL", 7), "NULL");
        assert_eq!(
            eval("MOD(a, 3) = 1", &at(Value::Null)).unwrap().to_string(),
            "NULL"
        );
        // Where the arithmetic fails, its own error.
        let e = eval("a / 0 = 1", &at(Value::Int(1))).unwrap_err();
        assert!(e.contains("division by zero"), "{e}");
    }

    /// The time of day read from the milliseconds is the calendar's,
    /// before 1970 too.
    #[test]
    fn hour_minute_and_second_are_the_calendars() {
        let ms = [
            0,
            10_000,
            86_399_999,
            86_400_000 + 3_723_456,
            -1,
            -86_400_000 - 3_723_456,
            1_700_000_000_123,
        ];
        for t in ms {
            for kind in [Value::Timestamp(t), Value::TimestampLtz(t)] {
                let row = [Value::Null, Value::Null, Value::Null, kind];
                let field = |sql: &str| eval(sql, &row).unwrap().to_string();
                let f = crate::time::fields(t);
                assert_eq!(field("HOUR(ts)"), f.hour.to_string(), "{t}");
                assert_eq!(field("MINUTE(ts)"), f.minute.to_string(), "{t}");
                assert_eq!(field("SECOND(ts)"), f.second.to_string(), "{t}");
                assert_eq!(field("EXTRACT(DAY FROM ts)"), f.day.to_string(), "{t}");
                // Compared with a constant, as one fused test.
                for (sql, hit) in [
                    ("HOUR(ts) >= 8", f.hour >= 8),
                    ("HOUR(ts) <= 0", f.hour == 0),
                    ("MINUTE(ts) = 2", f.minute == 2),
                    ("SECOND(ts) <> 3", f.second != 3),
                ] {
                    let want = if hit { "TRUE" } else { "FALSE" };
                    assert_eq!(field(sql), want, "{sql} at {t}");
                }
            }
        }
        let null = [Value::Null, Value::Null, Value::Null, Value::Null];
        assert_eq!(eval("HOUR(ts) > 1", &null).unwrap().to_string(), "NULL");
    }

    /// AND, OR and NOT answer by SQL's three-valued logic through their
    /// tests as through their values; an error stops the row unless the
    /// left side decides without the right one.
    #[test]
    fn conditions_follow_three_valued_logic() {
        let scope = Scope::of(vec![
            ("a".into(), SqlType::Int),
            ("s".into(), SqlType::String),
        ]);
        let row = [Value::Int(0), Value::Null];
        let compiled = |sql: &str| {
            let e = parse(sql);
            compile(&e, &scope).unwrap()
        };
        // What each term is for the row: TRUE, FALSE, NULL or an error,
        // through every kind of comparison.
        let terms = [
            ("a = 0", 'T'),
            ("a + 1 > 0", 'T'),
            ("a = 1", 'F'),
            ("0.5 * a > 1", 'F'),
            ("s = 'x'", 'N'),
            ("a = NULL", 'N'),
            ("a / 0 = 1", 'E'),
            ("1 / a > 0", 'E'),
        ];
        let and = |x: char, y: char| match (x, y) {
            ('E', _) | ('F', _) => x,
            (_, 'E') | (_, 'F') => y,
            ('N', _) | (_, 'N') => 'N',
            _ => 'T',
        };
        let or = |x: char, y: char| match (x, y) {
            ('E', _) | ('T', _) => x,
            (_, 'E') | (_, 'T') => y,
            ('N', _) | (_, 'N') => 'N',
            _ => 'F',
        };
        let not = |x: char| match x {
            'T' => 'F',
            'F' => 'T',
            other => other,
        };
        let check = |sql: &str, want: char| {
            let c = compiled(sql);
            let value = match (c.eval)(&row) {
                Ok(Value::Boolean(true)) => 'T',
                Ok(Value::Boolean(false)) => 'F',
                Ok(Value::Null) => 'N',
                Ok(other) => panic!("{sql} is {other}"),
                Err(e) => {
                    assert!(e.contains("division by zero"), "{sql}: {e}");
                    'E'
                }
            };
            assert_eq!(value, want, "the value of {sql}");
            let passes = match Condition::of(&c).passes(&row) {
                Ok(p) => p.to_string(),
                Err(_) => "error".into(),
            };
            let wanted = match want {
                'T' => "true",
                'E' => "error",
                _ => "false",
            };
            assert_eq!(passes, wanted, "whether the row passes {sql}");
        };
        for (x, tx) in terms {
            check(&format!("NOT ({x})"), not(tx));
            for (y, ty) in terms {
                check(&format!("({x}) AND ({y})"), and(tx, ty));
                check(&format!("({x}) OR ({y})"), or(tx, ty));
                check(
                    &format!("CASE WHEN ({x}) AND ({y}) THEN 1 ELSE 0 END = 1"),
                    {
                        match and(tx, ty) {
                            'T' => 'T',
                            'E' => 'E',
                            _ => 'F',
                        }
                    },
                );
            }
        }
    }

    /// A DECIMAL constant times a column, compared with a constant, is
    /// one test of unscaled integers; it must answer as the subtraction
    /// compared with zero does.
    #[test]
    fn scaled_comparisons_answer_as_the_general_ones() {
        let at = |a: Value| [a, Value::Null, Value::Null, Value::Null];
        for a in [-1101, -7, 0, 7, 1101, i32::MAX, i32::MIN] {
            for (product, k) in [
                ("0.908 * a", "6"),
                ("0.908 * a", "6.356"),
                ("0.908 * a", "6.3"),
                ("0.908 * a", "6.3561"),
                ("0.908 * a", "-1000"),
                ("a * 0.5", "3.5"),
                ("0.908 * a", "1000000"),
            ] {
                for op in ["=", "<>", "<", "<=", ">", ">="] {
                    let fused = format!("{product} {op} {k}");
                    let general = format!("{product} - {k} {op} 0");
                    assert_eq!(
                        eval(&fused, &at(Value::Int(a))).unwrap(),
                        eval(&general, &at(Value::Int(a))).unwrap(),
                        "{fused} for a = {a}"
                    );
                }
            }
        }
        let null = eval("0.908 * a > 1", &at(Value::Null)).unwrap();
        assert_eq!(null.to_string(), "NULL");
    }

    /// Two scaled comparisons of one product, one bounding it below and
    /// one above, joined by AND, are one test that multiplies once; it
    /// must answer as the two do.
    #[test]
    fn a_scaled_range_answers_as_its_two_comparisons() {
        let at = |a: Value| [a, Value::Null, Value::Null, Value::Null];
        let scope = Scope::of(vec![("a".into(), SqlType::Int)]);
        let range = |sql: &str| {
            let e = parse(sql);
            match compile(&e, &scope).unwrap().shape {
                Shape::Tests(Tested(_, r)) => r,
                _ => None,
            }
        };
        for (low, high) in [(">", "<"), (">=", "<="), (">", "<="), (">=", "<")] {
            for (k1, k2) in [("6", "1000"), ("6.356", "6.356"), ("-1000", "6.3")] {
                let one = format!("0.908 * a {low} {k1}");
                let two = format!("0.908 * a {high} {k2}");
                for sql in [format!("{one} AND {two}"), format!("{two} AND {one}")] {
                    let r = range(&sql).unwrap_or_else(|| panic!("one range: {sql}"));
                    assert!(r.low.is_some() && r.high.is_some(), "{sql}: {r:?}");
                    let general =
                        format!("(0.908 * a - {k1} {low} 0) AND (0.908 * a - {k2} {high} 0)");
                    for a in [-1101, -7, 0, 7, 1101, i32::MAX, i32::MIN] {
                        assert_eq!(
                            eval(&sql, &at(Value::Int(a))).unwrap(),
                            eval(&general, &at(Value::Int(a))).unwrap(),
                            "{sql} for a = {a}"
                        );
                    }
                    let null = eval(&sql, &at(Value::Null)).unwrap();
                    assert_eq!(null.to_string(), "NULL", "{sql}");
                }
            }
        }
        // Not one range: two lower bounds, other products, OR.
        assert_eq!(
            range("0.908 * a > 1 AND 0.908 * a > 2").and_then(|r| r.high),
            None
        );
        assert_eq!(
            range("0.908 * a > 1 AND 0.5 * a < 2").and_then(|r| r.high),
            None
        );
        assert_eq!(range("0.908 * a > 1 OR 0.908 * a < 2"), None);
    }

    #[test]
    fn expressions_follow_sql() {
        let row = [
            Value::Int(7),
            Value::string("Weir"),
            Value::decimal(1050, 2),
            Value::Timestamp(10_000),
        ];
        let ok = |sql: &str| eval(sql, &row).unwrap().to_string();
        assert_eq!(ok("a * 2 + 1"), "15");
        assert_eq!(ok("a / 2"), "3");
        assert_eq!(ok("d * 2"), "21.00");
        assert_eq!(ok("d + 1"), "11.50");
        assert_eq!(ok("a > 5 AND s = 'Weir'"), "TRUE");
        assert_eq!(ok("a BETWEEN 8 AND 9"), "FALSE");
        assert_eq!(ok("a IN (1, 7)"), "TRUE");
        assert_eq!(ok("UPPER(s) || '!'"), "WEIR!");
        assert_eq!(ok("CHAR_LENGTH(s)"), "4");
        assert_eq!(ok("s LIKE 'W%r'"), "TRUE");
        assert_eq!(ok("CASE WHEN a > 10 THEN 'big' ELSE 'small' END"), "small");
        assert_eq!(ok("CASE a WHEN 7 THEN 1 END"), "1");
        assert_eq!(ok("CAST(a AS STRING) || s"), "7Weir");
        assert_eq!(ok("CAST('12' AS INT) + a"), "19");
        assert_eq!(ok("ts - INTERVAL '2' SECOND"), "1970-01-01 00:00:08.000");
        assert_eq!(ok("COALESCE(NULL, s)"), "Weir");
        assert_eq!(ok("IF(a = 7, 'seven', 'other')"), "seven");
        assert_eq!(ok("SUBSTRING(s FROM 2 FOR 2)"), "ei");
        assert_eq!(ok("NULL = 1 OR TRUE"), "TRUE");
        assert_eq!(ok("NULL = 1 AND TRUE"), "NULL");
        assert_eq!(ok("1.5 + 1"), "2.5");
        // Flink's decimal division: scale max(6, s1 + p2 + 1).
        assert_eq!(ok("d / 4"), "2.6250000000000");
        assert_eq!(ok("0.908 * a"), "6.356");
        assert_eq!(ok("CAST(d AS DECIMAL(5, 1))"), "10.5");
        assert_eq!(ok("CAST(a AS DECIMAL(4, 2))"), "7.00");
        assert_eq!(ok("HOUR(ts + INTERVAL '5' HOUR)"), "5");
        assert_eq!(ok("EXTRACT(SECOND FROM ts)"), "10");
        assert_eq!(ok("YEAR(ts) + MONTH(ts) + DAYOFMONTH(ts)"), "1972");
        assert_eq!(
            ok("DATE_FORMAT(ts, 'yyyy-MM-dd HH:mm')"),
            "1970-01-01 00:00"
        );
        assert_eq!(ok("REPLACE(s, 'ei', 'a')"), "War");
        assert_eq!(ok("TO_TIMESTAMP_LTZ(a, 3)"), "1970-01-01 00:00:00.007");
        assert_eq!(ok("TO_TIMESTAMP_LTZ(a, 0)"), "1970-01-01 00:00:07.000");
    }

    /// An expression that writes its value straight into a row's slot
    /// writes what its `eval` returns, NULLs included.
    #[test]
    fn values_written_in_place_are_the_values_evaluated() {
        let scope = Scope::of(vec![
            ("a".into(), SqlType::Int),
            ("s".into(), SqlType::String),
            ("d".into(), SqlType::Decimal(10, 2)),
            ("ts".into(), SqlType::Timestamp),
            ("b".into(), SqlType::BigInt),
        ]);
        let rows = [
            [
                Value::Int(7),
                Value::string("x"),
                Value::decimal(1050, 2),
                Value::Timestamp(1),
                Value::BigInt(-12_345),
            ],
            [
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
            ],
        ];
        for sql in [
            "0.908 * a",
            "0.908 * b",
            "b * 0.05",
            "a * 0.908",
            "a * 2.5",
            "d * 2",
            "0.5 * d",
            "TO_TIMESTAMP_LTZ(a, 3)",
        ] {
            let e = parse(sql);
            let c = compile(&e, &scope).unwrap();
            let Some(writer) = c.shape.writer() else {
                panic!("{sql} is not written in place");
            };
            for row in &rows {
                let mut values = row.to_vec();
                values.push(Value::string("old"));
                (writer.0)(&mut values, 5).unwrap();
                assert_eq!(values[5], (c.eval)(row).unwrap(), "{sql} of {row:?}");
            }
        }
    }

    #[test]
    fn errors_fail_loudly() {
        let row = [Value::Int(7), Value::string("x"), Value::Null, Value::Null];
        assert_eq!(eval("a / 0", &row).unwrap_err(), "division by zero: 7 / 0");
        // A constant that fails is not folded away: it fails each row.
        assert_eq!(eval("1 / 0", &row).unwrap_err(), "division by zero: 1 / 0");
        assert_eq!(
            eval("a + 2147483647", &row).unwrap(),
            Value::Int(-2147483642)
        );
        assert_eq!(eval("a < NULL", &row).unwrap(), Value::Null);
        // A long chain compiles in time near-linear in its length (folding
        // once tried every node per ancestor: 2^40 attempts here).
        let chain: Vec<String> = (0..40).map(|i| format!("a = {i}")).collect();
        assert_eq!(
            eval(&chain.join(" OR "), &row).unwrap(),
            Value::Boolean(true)
        );
        assert!(eval("CAST(s AS INT)", &row)
            .unwrap_err()
            .contains("cannot cast x"));
        let e = eval("nope + 1", &row).unwrap_err();
        assert!(
            e.contains("column 'nope' not found; the input has a, s, d, ts"),
            "{e}"
        );
        let e = eval("a = 'x'", &row).unwrap_err();
        assert!(e.contains("cannot compare INT with STRING"), "{e}");
        let e = eval("SOUNDEX(s)", &row).unwrap_err();
        assert!(e.contains("not supported: the function SOUNDEX"), "{e}");
    }
}
