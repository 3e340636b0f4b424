//! `JSON_VALUE(json, path)` and `JSON_EXISTS(json, path)`: a JSON text
//! read once, checked whole, for the value a path names.
//!
//! Paths are SQL/JSON's in lax mode with member and element steps: `$`,
//! `$.a.b`, `$['a b']`, `$.a[0]`. As Flink does by default, text that is
//! not JSON, a path that finds nothing, an object or an array give NULL
//! (`JSON_EXISTS`: FALSE); a scalar is its text, a number as Java's
//! `BigDecimal` writes it (`1.50` stays `1.50`, `1e3` is `1E+3`).

use super::{strict, text, Call, Kind};
use crate::error::SqlError;
use crate::expr::{Compiled, Shape};
use crate::types::SqlType;
use crate::value::Value;

pub(super) fn compile(call: &Call) -> Result<Option<Compiled>, SqlError> {
    let exists = match call.name {
        "JSON_VALUE" => false,
        "JSON_EXISTS" => true,
        _ => return Ok(None),
    };
    let args = call.args(2..=2)?;
    call.expect(&args[0], 0, Kind::Text)?;
    call.expect(&args[1], 1, Kind::Text)?;
    let Shape::Constant(Value::String(path)) = &args[1].shape else {
        return Err(call.error(format!("{}'s path must be a constant", call.name)));
    };
    let steps = parse_path(path).map_err(|e| call.error(format!("{}: {e}", call.name)))?;
    Ok(Some(if exists {
        strict(&args[..1], SqlType::Boolean, move |v| {
            Ok(Value::Boolean(find(text(&v[0]), &steps).is_some()))
        })
    } else {
        strict(&args[..1], SqlType::String, move |v| {
            Ok(match find(text(&v[0]), &steps) {
                Some(Found::Text(s)) => Value::string(&s),
                Some(Found::Number(n)) => Value::string(&big_decimal_text(n)),
                Some(Found::Literal(l)) => Value::static_str(l),
                _ => Value::Null,
            })
        })
    }))
}

#[derive(Debug, Clone, PartialEq)]
enum Step {
    Member(String),
    Element(usize),
}

fn parse_path(path: &str) -> Result<Vec<Step>, String> {
    let bad = || format!("'{path}' is not a JSON path this engine reads ($.a, $['a'], $.a[0])");
    let path = path.trim();
    let path = path.strip_prefix("lax ").map_or(path, str::trim_start);
    let mut rest = path.strip_prefix('$').ok_or_else(bad)?;
    let mut steps = Vec::new();
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            let name = &r[..end];
            if name.is_empty() || name == "*" {
                return Err(bad());
            }
            steps.push(Step::Member(name.to_string()));
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']').ok_or_else(bad)?;
            let inside = r[..end].trim();
            let quoted = inside
                .strip_prefix('\'')
                .and_then(|s| s.strip_suffix('\''))
                .or_else(|| inside.strip_prefix('"').and_then(|s| s.strip_suffix('"')));
            steps.push(match quoted {
                Some(name) => Step::Member(name.to_string()),
                None => Step::Element(inside.parse().map_err(|_| bad())?),
            });
            rest = &r[end + 1..];
        } else {
            return Err(bad());
        }
    }
    Ok(steps)
}

/// What a path found.
#[derive(Debug, PartialEq)]
enum Found<'a> {
    Text(String),
    Number(&'a str),
    Literal(&'static str),
    Null,
    Composite,
}

/// The value `steps` names in `json`, if `json` is JSON and has it.
fn find<'a>(json: &'a str, steps: &[Step]) -> Option<Found<'a>> {
    let mut reader = Reader {
        s: json.as_bytes(),
        text: json,
        i: 0,
    };
    let mut found = None;
    reader.value(Some(steps), &mut found, 0)?;
    reader.space();
    (reader.i == reader.s.len()).then_some(found).flatten()
}

struct Reader<'a> {
    s: &'a [u8],
    text: &'a str,
    i: usize,
}

impl<'a> Reader<'a> {
    fn space(&mut self) {
        while self.s.get(self.i).is_some_and(|b| b" \t\r\n".contains(b)) {
            self.i += 1;
        }
    }

    fn eat(&mut self, b: u8) -> Option<()> {
        self.space();
        (self.s.get(self.i) == Some(&b)).then(|| self.i += 1)
    }

    /// Reads one value; when `path` is `Some([])` this is the value the
    /// path names, and it goes into `found`.
    fn value(
        &mut self,
        path: Option<&[Step]>,
        found: &mut Option<Found<'a>>,
        depth: u32,
    ) -> Option<()> {
        if depth > 512 {
            return None;
        }
        self.space();
        let here = path.is_some_and(|p| p.is_empty());
        match *self.s.get(self.i)? {
            b'{' => {
                self.i += 1;
                if here {
                    *found = Some(Found::Composite);
                }
                if self.eat(b'}').is_some() {
                    return Some(());
                }
                loop {
                    self.space();
                    let key = self.string()?;
                    self.eat(b':')?;
                    let next = match path {
                        Some([Step::Member(m), rest @ ..]) if *m == key => Some(rest),
                        _ => None,
                    };
                    self.value(next, found, depth + 1)?;
                    if self.eat(b',').is_none() {
                        return self.eat(b'}');
                    }
                }
            }
            b'[' => {
                self.i += 1;
                if here {
                    *found = Some(Found::Composite);
                }
                if self.eat(b']').is_some() {
                    return Some(());
                }
                let mut index = 0;
                loop {
                    let next = match path {
                        Some([Step::Element(e), rest @ ..]) if *e == index => Some(rest),
                        _ => None,
                    };
                    self.value(next, found, depth + 1)?;
                    index += 1;
                    if self.eat(b',').is_none() {
                        return self.eat(b']');
                    }
                }
            }
            b'"' => {
                let s = self.string()?;
                if here {
                    *found = Some(Found::Text(s));
                }
                Some(())
            }
            b't' | b'f' | b'n' => {
                for (word, f) in [
                    ("true", Found::Literal("true")),
                    ("false", Found::Literal("false")),
                    ("null", Found::Null),
                ] {
                    if self.s[self.i..].starts_with(word.as_bytes()) {
                        self.i += word.len();
                        if here {
                            *found = Some(f);
                        }
                        return Some(());
                    }
                }
                None
            }
            _ => {
                let start = self.i;
                self.number()?;
                if here {
                    *found = Some(Found::Number(&self.text[start..self.i]));
                }
                Some(())
            }
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while self.s.get(self.i).is_some_and(u8::is_ascii_digit) {
            self.i += 1;
        }
        self.i - start
    }

    fn number(&mut self) -> Option<()> {
        if self.s.get(self.i) == Some(&b'-') {
            self.i += 1;
        }
        let int_start = self.i;
        if self.digits() == 0 || (self.s[int_start] == b'0' && self.i - int_start > 1) {
            return None;
        }
        if self.s.get(self.i) == Some(&b'.') {
            self.i += 1;
            if self.digits() == 0 {
                return None;
            }
        }
        if matches!(self.s.get(self.i), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.s.get(self.i), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if self.digits() == 0 {
                return None;
            }
        }
        Some(())
    }

    /// A string's text, its escapes read.
    fn string(&mut self) -> Option<String> {
        if self.s.get(self.i) != Some(&b'"') {
            return None;
        }
        self.i += 1;
        let mut out = String::new();
        loop {
            let start = self.i;
            while !matches!(self.s.get(self.i), Some(b'"' | b'\\') | None) {
                if self.s[self.i] < 0x20 {
                    return None;
                }
                self.i += 1;
            }
            out.push_str(&self.text[start..self.i]);
            match *self.s.get(self.i)? {
                b'"' => {
                    self.i += 1;
                    return Some(out);
                }
                _ => {
                    self.i += 1;
                    let c = match *self.s.get(self.i)? {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let unit = self.hex4()?;
                            if (0xd800..0xdc00).contains(&unit) {
                                if !self.s[self.i + 1..].starts_with(b"\\u") {
                                    return None;
                                }
                                self.i += 2;
                                let low = self.hex4()?;
                                let code = 0x10000
                                    + ((unit - 0xd800) << 10)
                                    + (low.checked_sub(0xdc00)?);
                                char::from_u32(code)?
                            } else {
                                char::from_u32(unit)?
                            }
                        }
                        _ => return None,
                    };
                    out.push(c);
                    self.i += 1;
                }
            }
        }
    }

    /// The four hex digits after `\u` (the reader is on the `u`, and is
    /// left on the last digit).
    fn hex4(&mut self) -> Option<u32> {
        let digits = self.text.get(self.i + 1..self.i + 5)?;
        let v = u32::from_str_radix(digits, 16).ok()?;
        self.i += 4;
        Some(v)
    }
}

/// A JSON number as Java's `BigDecimal.toString` writes it: as written
/// without an exponent; with one, its digits and scale, in plain notation
/// when the scale is not negative and the exponent at least -6, else as
/// `d.dddE±n`.
fn big_decimal_text(n: &str) -> String {
    let Some(at) = n.find(['e', 'E']) else {
        return n.to_string();
    };
    let (mantissa, exponent) = (&n[..at], &n[at + 1..]);
    let Ok(exponent) = exponent.parse::<i64>() else {
        return n.to_string();
    };
    let (negative, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mantissa),
    };
    let (int, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = format!("{int}{fraction}");
    let digits = match digits.trim_start_matches('0') {
        "" => "0",
        d => d,
    };
    let scale = fraction.len() as i64 - exponent;
    let adjusted = -scale + (digits.len() as i64 - 1);
    let mut out = String::new();
    if negative {
        out.push('-');
    }
    if scale >= 0 && adjusted >= -6 {
        let scale = scale as usize;
        if scale == 0 {
            out.push_str(digits);
        } else if digits.len() > scale {
            out.push_str(&digits[..digits.len() - scale]);
            out.push('.');
            out.push_str(&digits[digits.len() - scale..]);
        } else {
            out.push_str("0.");
            out.push_str(&"0".repeat(scale - digits.len()));
            out.push_str(digits);
        }
        return out;
    }
    out.push_str(&digits[..1]);
    if digits.len() > 1 {
        out.push('.');
        out.push_str(&digits[1..]);
    }
    out.push('E');
    if adjusted >= 0 {
        out.push('+');
    }
    out.push_str(&adjusted.to_string());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(json: &str, path: &str) -> Option<String> {
        match find(json, &parse_path(path).expect("a path"))? {
            Found::Text(s) => Some(s),
            Found::Number(n) => Some(big_decimal_text(n)),
            Found::Literal(l) => Some(l.to_string()),
            _ => None,
        }
    }

    #[test]
    fn paths_find_scalars_and_nothing_else() {
        let doc = r#"{"a": {"b": [1, "x"]}, "c": null, "d e": 2, "s": "x\"y\u00e9\ud83d\ude00"}"#;
        assert_eq!(value(doc, "$.a.b[1]").as_deref(), Some("x"));
        assert_eq!(value(doc, "$.a.b[0]").as_deref(), Some("1"));
        assert_eq!(value(doc, "$['d e']").as_deref(), Some("2"));
        assert_eq!(value(doc, "$.s").as_deref(), Some("x\"yé😀"));
        assert_eq!(value(doc, "$.a"), None);
        assert_eq!(value(doc, "$.c"), None);
        assert_eq!(value(doc, "$.a.b[2]"), None);
        assert_eq!(value(doc, "$.zz"), None);
        assert_eq!(value(r#"{"a": true}"#, "lax $.a").as_deref(), Some("true"));
        // Not JSON, whole: nothing.
        assert_eq!(value(r#"{"a": 1"#, "$.a"), None);
        assert_eq!(value(r#"{"a": 1} x"#, "$.a"), None);
        assert_eq!(value(r#"{"a": 01}"#, "$.a"), None);
        assert!(parse_path("a.b").is_err());
        assert!(parse_path("$.*").is_err());
    }

    #[test]
    fn numbers_read_as_big_decimals_write_themselves() {
        assert_eq!(big_decimal_text("1.50"), "1.50");
        assert_eq!(
            big_decimal_text("12345678901234567890"),
            "12345678901234567890"
        );
        assert_eq!(big_decimal_text("1e3"), "1E+3");
        assert_eq!(big_decimal_text("1.5e3"), "1.5E+3");
        assert_eq!(big_decimal_text("1.5e-3"), "0.0015");
        assert_eq!(big_decimal_text("-2.50E1"), "-25.0");
        assert_eq!(big_decimal_text("1e-7"), "1E-7");
    }
}
