//! A table's computed columns (`k AS MOD(id, 10000)`) as its sources make
//! them: each computed from the physical and metadata values of a row and
//! written straight into its slot. A computed column that fails (division
//! by zero, a bad cast) fails the job and names the column, as Flink's
//! source does; it never becomes a NULL.

use std::sync::Arc;

use crate::expr::{Compiled, Eval, Shape, SlotEval};
use crate::value::{put, Value};

/// A table's computed columns, in the order they follow its physical and
/// metadata columns.
#[derive(Clone, Default)]
pub(crate) struct ComputedColumns {
    columns: Arc<[ComputedColumn]>,
}

struct ComputedColumn {
    /// What a failure names: `computed column 'k' of table 'src'`.
    what: String,
    write: Write,
}

/// How a column's value is written. A value returned through memory and
/// copied into its slot right away is read back in other widths than it
/// was stored in, a stall on every row; the first two shapes build the
/// value where it is stored.
enum Write {
    /// Integer arithmetic of a column and a constant; `eval` says why it
    /// failed.
    IntOp {
        column: usize,
        op: fn(i64, i64) -> Option<i64>,
        operand: i64,
        int: bool,
        eval: Eval,
    },
    /// Written in place by the expression itself.
    At(SlotEval),
    Eval(Eval),
}

impl ComputedColumns {
    /// The columns `columns` (`(name, compiled)`) of table `table`.
    pub fn new(table: &str, columns: Vec<(String, Compiled)>) -> ComputedColumns {
        let columns = columns
            .into_iter()
            .map(|(name, c)| ComputedColumn {
                what: format!("computed column '{name}' of table '{table}'"),
                write: match c.shape {
                    Shape::IntOp {
                        column,
                        op,
                        operand,
                        int,
                    } => Write::IntOp {
                        column,
                        op,
                        operand,
                        int,
                        eval: c.eval,
                    },
                    shape => match shape.writer() {
                        Some(at) => Write::At(at.clone()),
                        None => Write::Eval(c.eval),
                    },
                },
            })
            .collect();
        ComputedColumns { columns }
    }

    pub fn len(&self) -> usize {
        self.columns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.columns.is_empty()
    }

    /// Appends every computed column's value to `values` (a row's physical
    /// and metadata values).
    pub fn append(&self, values: &mut Vec<Value>) -> Result<(), String> {
        let base = values.len();
        for (i, c) in self.columns.iter().enumerate() {
            values.push(Value::Null);
            c.write_at(values, base, base + i)?;
        }
        Ok(())
    }

    /// Writes computed column `i`'s value into `values[slot]`, from
    /// `values[..base]`, the row's physical and metadata values.
    #[inline]
    pub fn write_at(
        &self,
        i: usize,
        values: &mut [Value],
        base: usize,
        slot: usize,
    ) -> Result<(), String> {
        self.columns[i].write_at(values, base, slot)
    }
}

impl ComputedColumn {
    #[inline]
    fn write_at(&self, values: &mut [Value], base: usize, slot: usize) -> Result<(), String> {
        let failed = |e: String| format!("{}: {e}", self.what);
        match &self.write {
            Write::IntOp {
                column,
                op,
                operand,
                int,
                eval,
            } => match values[*column].as_i64() {
                None => values[slot] = Value::Null,
                Some(x) => match op(x, *operand) {
                    Some(v) if *int => put(&mut values[slot], || Value::Int(v as i32)),
                    Some(v) => put(&mut values[slot], || Value::BigInt(v)),
                    // Division by zero or overflow: the expression says
                    // which.
                    None => {
                        let e = eval(&values[..base]).err().unwrap_or_default();
                        return Err(failed(e));
                    }
                },
            },
            Write::At(at) => (at.0)(values, slot).map_err(failed)?,
            Write::Eval(eval) => values[slot] = eval(&values[..base]).map_err(failed)?,
        }
        Ok(())
    }
}
