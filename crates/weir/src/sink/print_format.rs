//! How `print()`, `print_to_err()` and `write_as_text()` show a record:
//! as Flink does, which prints Java's `toString()` of each value —
//! `(to,2)` for a tuple, `2.0` for a double, `[a, b]` for a list, `null`
//! for nothing.
//!
//! [`PrintFormat`] is implemented for strings, numbers, `bool`, `char`,
//! tuples (up to twelve fields, as Flink's `Tuple1`…`Tuple12` print
//! them), `Option`, `Vec`, slices, references and boxes of those. A type of
//! your own that implements `Display` prints with it after one line:
//!
//! ```
//! use std::fmt;
//!
//! struct Order {
//!     id: u32,
//! }
//!
//! impl fmt::Display for Order {
//!     fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
//!         write!(f, "order {}", self.id)
//!     }
//! }
//!
//! weir::print_with_display!(Order);
//!
//! assert_eq!(weir::sink::Printed(&(Order { id: 7 }, 2.0)).to_string(), "(order 7,2.0)");
//! ```

use std::fmt::{self, Display, Formatter};

/// A value `print()` can show. By implementing this trait, you promise
/// that `fmt_print` writes the value on one line (a line break would split
/// the record across printed lines).
pub trait PrintFormat {
    /// Writes the value as Flink's `print()` shows it.
    fn fmt_print(&self, f: &mut Formatter<'_>) -> fmt::Result;
}

/// A value shown in its [`PrintFormat`] (`Printed(&x).to_string()`).
#[derive(Debug, Clone, Copy)]
pub struct Printed<'a, T: ?Sized>(pub &'a T);

impl<T: PrintFormat + ?Sized> Display for Printed<'_, T> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        self.0.fmt_print(f)
    }
}

/// Prints the listed types with their `Display` implementation:
/// `weir::print_with_display!(MyType, OtherType);`.
#[macro_export]
macro_rules! print_with_display {
    ($($t:ty),+ $(,)?) => {
        $(
            impl $crate::sink::PrintFormat for $t {
                fn fmt_print(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                    ::std::fmt::Display::fmt(self, f)
                }
            }
        )+
    };
}

print_with_display!(
    str,
    String,
    std::borrow::Cow<'_, str>,
    bool,
    char,
    i8,
    i16,
    i32,
    i64,
    i128,
    isize,
    u8,
    u16,
    u32,
    u64,
    u128,
    usize,
    std::num::NonZeroU32,
    std::num::NonZeroU64,
    std::net::IpAddr,
    std::net::SocketAddr,
);

/// Java's `Double.toString`: `2.0`, `0.5`, `1.0E7`, `1.5E-5`, `NaN`,
/// `Infinity`: plain between 10⁻³ and 10⁷, scientific outside, always with
/// a fractional digit.
fn fmt_java_double(d: f64, f: &mut Formatter<'_>) -> fmt::Result {
    if d.is_nan() {
        return f.write_str("NaN");
    }
    if d.is_infinite() {
        return f.write_str(if d > 0.0 { "Infinity" } else { "-Infinity" });
    }
    let magnitude = d.abs();
    if magnitude == 0.0 || (1e-3..1e7).contains(&magnitude) {
        let plain = d.to_string();
        return if plain.contains('.') {
            f.write_str(&plain)
        } else {
            write!(f, "{plain}.0")
        };
    }
    // Rust writes `1.5e-5`; Java `1.5E-5`, and `1.0E7` with a fraction.
    let scientific = format!("{d:e}");
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    if mantissa.contains('.') {
        write!(f, "{mantissa}E{exponent}")
    } else {
        write!(f, "{mantissa}.0E{exponent}")
    }
}

impl PrintFormat for f64 {
    fn fmt_print(&self, f: &mut Formatter<'_>) -> fmt::Result {
        fmt_java_double(*self, f)
    }
}

impl PrintFormat for f32 {
    fn fmt_print(&self, f: &mut Formatter<'_>) -> fmt::Result {
        // Through the shortest decimal of the f32, not of its f64 widening
        // (0.1f32 prints 0.1, as Java's Float.toString).
        let shortest: f64 = self.to_string().parse().unwrap_or(f64::from(*self));
        fmt_java_double(shortest, f)
    }
}

impl PrintFormat for () {
    fn fmt_print(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str("()")
    }
}

impl<T: PrintFormat + ?Sized> PrintFormat for &T {
    fn fmt_print(&self, f: &mut Formatter<'_>) -> fmt::Result {
        (**self).fmt_print(f)
    }
}

impl<T: PrintFormat + ?Sized> PrintFormat for Box<T> {
    fn fmt_print(&self, f: &mut Formatter<'_>) -> fmt::Result {
        (**self).fmt_print(f)
    }
}

impl<T: PrintFormat + ?Sized> PrintFormat for std::sync::Arc<T> {
    fn fmt_print(&self, f: &mut Formatter<'_>) -> fmt::Result {
        (**self).fmt_print(f)
    }
}

/// `None` is Java's `null`; `Some(x)` is `x`.
impl<T: PrintFormat> PrintFormat for Option<T> {
    fn fmt_print(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Some(v) => v.fmt_print(f),
            None => f.write_str("null"),
        }
    }
}

/// As Java's `List.toString()`: `[a, b, c]`.
impl<T: PrintFormat> PrintFormat for [T] {
    fn fmt_print(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        for (i, v) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            v.fmt_print(f)?;
        }
        f.write_str("]")
    }
}

impl<T: PrintFormat> PrintFormat for Vec<T> {
    fn fmt_print(&self, f: &mut Formatter<'_>) -> fmt::Result {
        self.as_slice().fmt_print(f)
    }
}

impl<T: PrintFormat, const N: usize> PrintFormat for [T; N] {
    fn fmt_print(&self, f: &mut Formatter<'_>) -> fmt::Result {
        self.as_slice().fmt_print(f)
    }
}

/// As Flink's `TupleN.toString()`: `(a,b,c)`, fields without spaces.
macro_rules! tuple_print_format {
    ($first:ident $(, $rest:ident)*) => {
        impl<$first: PrintFormat $(, $rest: PrintFormat)*> PrintFormat for ($first, $($rest,)*) {
            #[allow(non_snake_case)]
            fn fmt_print(&self, f: &mut Formatter<'_>) -> fmt::Result {
                let ($first, $($rest,)*) = self;
                f.write_str("(")?;
                $first.fmt_print(f)?;
                $(
                    f.write_str(",")?;
                    $rest.fmt_print(f)?;
                )*
                f.write_str(")")
            }
        }
    };
}

tuple_print_format!(A);
tuple_print_format!(A, B);
tuple_print_format!(A, B, C);
tuple_print_format!(A, B, C, D);
tuple_print_format!(A, B, C, D, E);
tuple_print_format!(A, B, C, D, E, F);
tuple_print_format!(A, B, C, D, E, F, G);
tuple_print_format!(A, B, C, D, E, F, G, H);
tuple_print_format!(A, B, C, D, E, F, G, H, I);
tuple_print_format!(A, B, C, D, E, F, G, H, I, J);
tuple_print_format!(A, B, C, D, E, F, G, H, I, J, K);
tuple_print_format!(A, B, C, D, E, F, G, H, I, J, K, L);

#[cfg(test)]
mod tests {
    use super::*;

    fn printed<T: PrintFormat + ?Sized>(v: &T) -> String {
        Printed(v).to_string()
    }

    #[test]
    fn values_print_as_flink_prints_them() {
        assert_eq!(printed(&("to".to_string(), 2u64)), "(to,2)");
        assert_eq!(printed(&("a", 1i32, true)), "(a,1,true)");
        assert_eq!(printed(&(7u8,)), "(7)");
        assert_eq!(printed(&(1, (2, "x"))), "(1,(2,x))");
        assert_eq!(printed(&vec![1, 2, 3]), "[1, 2, 3]");
        assert_eq!(printed(&Vec::<u8>::new()), "[]");
        assert_eq!(printed(&Some(("k", None::<i64>))), "(k,null)");
        assert_eq!(printed("plain"), "plain");
        assert_eq!(printed(&'c'), "c");
    }

    #[test]
    fn doubles_print_as_java_prints_them() {
        for (d, java) in [
            (2.0, "2.0"),
            (-0.5, "-0.5"),
            (0.0, "0.0"),
            (35.5, "35.5"),
            (1e7, "1.0E7"),
            (1.5e-5, "1.5E-5"),
            (123_456_789.0, "1.23456789E8"),
            (0.001, "0.001"),
            (f64::NAN, "NaN"),
            (f64::NEG_INFINITY, "-Infinity"),
        ] {
            assert_eq!(printed(&d), java, "{d}");
        }
        assert_eq!(printed(&0.1f32), "0.1");
        assert_eq!(printed(&3f32), "3.0");
    }
}
