//! Text built-ins: `LPAD`, `RPAD`, `LTRIM`, `RTRIM`, `LOCATE` (and
//! `POSITION … IN`), `INITCAP`, `REPEAT`, `CONCAT_WS`, `SPLIT_INDEX`,
//! `REGEXP`, `REGEXP_EXTRACT`, `REGEXP_REPLACE`, `SUBSTR` (and
//! `SUBSTRING`'s positions), `LEFT`, `RIGHT`, `REVERSE`, `ASCII`, `CHR`,
//! `TRIM` of other characters than spaces, and the digests (`MD5`,
//! `SHA224`…`SHA512`, `SHA2`) and Base64 (`TO_BASE64`, `FROM_BASE64`)
//! of a text's UTF-8.
//!
//! Positions and lengths count characters. A regular expression that is
//! a constant is compiled once, and a wrong one fails the statement; one
//! computed per row that does not compile gives NULL, as in Flink.

use std::sync::Arc;

use base64::prelude::{Engine, BASE64_STANDARD};
use md5::Digest;
use regex::Regex;

use super::{common_type, int, strict, text, Call, Kind};
use crate::error::SqlError;
use crate::expr::{Compiled, Shape};
use crate::types::SqlType;
use crate::value::Value;

pub(super) fn compile(call: &Call) -> Result<Option<Compiled>, SqlError> {
    Ok(Some(match call.name {
        "LPAD" | "RPAD" => {
            let left = call.name == "LPAD";
            texts(call, &[Kind::Text, Kind::Integer, Kind::Text], move |v| {
                Ok(pad(text(&v[0]), int(&v[1]), text(&v[2]), left)
                    .map_or(Value::Null, |s| Value::string(&s)))
            })?
        }
        "LTRIM" => texts(call, &[Kind::Text], |v| {
            Ok(Value::string(text(&v[0]).trim_start_matches(' ')))
        })?,
        "RTRIM" => texts(call, &[Kind::Text], |v| {
            Ok(Value::string(text(&v[0]).trim_end_matches(' ')))
        })?,
        "LOCATE" => {
            let kinds = optional_last(call, &[Kind::Text, Kind::Text, Kind::Integer]);
            typed(call, kinds, SqlType::Int, |v| {
                let from = v.get(2).map_or(1, int);
                Ok(Value::Int(locate(text(&v[0]), text(&v[1]), from)))
            })?
        }
        "INITCAP" => texts(call, &[Kind::Text], |v| {
            Ok(Value::string(&initcap(text(&v[0]))))
        })?,
        "REPEAT" => texts(call, &[Kind::Text, Kind::Integer], |v| {
            let n = usize::try_from(int(&v[1])).unwrap_or(0);
            Ok(Value::string(&text(&v[0]).repeat(n)))
        })?,
        "CONCAT_WS" => concat_ws(call)?,
        "SPLIT_INDEX" => {
            texts(call, &[Kind::Text, Kind::Text, Kind::Integer], |v| {
                Ok(split_index(text(&v[0]), text(&v[1]), int(&v[2]))
                    .map_or(Value::Null, Value::string))
            })?
        }
        "REGEXP" => regex_call(call, 2..=2, SqlType::Boolean, |s, re, _| {
            Value::Boolean(re.is_match(s))
        })?,
        "REGEXP_EXTRACT" => regex_call(call, 2..=3, SqlType::String, |s, re, rest| {
            let group = rest.first().map_or(0, int);
            usize::try_from(group)
                .ok()
                .and_then(|g| re.captures(s)?.get(g))
                .map_or(Value::Null, |m| Value::string(m.as_str()))
        })?,
        "REGEXP_REPLACE" => regex_call(call, 3..=3, SqlType::String, |s, re, rest| {
            // The replacement is taken as it is written: Flink does not
            // read `$1` in it as a group.
            Value::string(&re.replace_all(s, regex::NoExpand(text(&rest[0]))))
        })?,
        "SUBSTR" => {
            let kinds = optional_last(call, &[Kind::Text, Kind::Integer, Kind::Integer]);
            texts(call, kinds, |v| {
                let len = v.get(2).map(int);
                Ok(Value::string(&substring_sql(text(&v[0]), int(&v[1]), len)))
            })?
        }
        "LEFT" => texts(call, &[Kind::Text, Kind::Integer], |v| {
            let n = usize::try_from(int(&v[1])).unwrap_or(0);
            Ok(Value::string(
                &text(&v[0]).chars().take(n).collect::<String>(),
            ))
        })?,
        "RIGHT" => texts(call, &[Kind::Text, Kind::Integer], |v| {
            let s = text(&v[0]);
            let n = usize::try_from(int(&v[1])).unwrap_or(0);
            let skip = s.chars().count().saturating_sub(n);
            Ok(Value::string(&s.chars().skip(skip).collect::<String>()))
        })?,
        "REVERSE" => texts(call, &[Kind::Text], |v| {
            Ok(Value::string(
                &text(&v[0]).chars().rev().collect::<String>(),
            ))
        })?,
        // The first byte of the text's UTF-8, signed (Flink reads it as a
        // Java byte); 0 for empty text.
        "ASCII" => typed(call, &[Kind::Text], SqlType::Int, |v| {
            Ok(Value::Int(
                text(&v[0]).bytes().next().map_or(0, |b| i32::from(b as i8)),
            ))
        })?,
        // The character of the code's low byte; empty text for a negative
        // code.
        "CHR" => typed(call, &[Kind::Integer], SqlType::String, |v| {
            let code = int(&v[0]);
            Ok(Value::string(&if code < 0 {
                String::new()
            } else {
                char::from((code & 0xff) as u8).to_string()
            }))
        })?,
        "BTRIM" => {
            let kinds = optional_last(call, &[Kind::Text, Kind::Text]);
            texts(call, kinds, |v| {
                let chars = v.get(1).map_or(" ", text);
                Ok(Value::string(trim_chars(text(&v[0]), chars, true, true)))
            })?
        }
        "STARTSWITH" => typed(call, &[Kind::Text, Kind::Text], SqlType::Boolean, |v| {
            Ok(Value::Boolean(text(&v[0]).starts_with(text(&v[1]))))
        })?,
        "ENDSWITH" => typed(call, &[Kind::Text, Kind::Text], SqlType::Boolean, |v| {
            Ok(Value::Boolean(text(&v[0]).ends_with(text(&v[1]))))
        })?,
        "INSTR" => typed(call, &[Kind::Text, Kind::Text], SqlType::Int, |v| {
            Ok(Value::Int(locate(text(&v[1]), text(&v[0]), 1)))
        })?,
        "TRANSLATE" => texts(call, &[Kind::Text, Kind::Text, Kind::Text], |v| {
            Ok(Value::string(&translate(
                text(&v[0]),
                text(&v[1]),
                text(&v[2]),
            )))
        })?,
        "ELT" => elt(call)?,
        "REGEXP_COUNT" => regex_call(call, 2..=2, SqlType::Int, |s, re, _| {
            Value::Int(re.find_iter(s).count() as i32)
        })?,
        "REGEXP_INSTR" => regex_call(call, 2..=2, SqlType::Int, |s, re, _| {
            Value::Int(
                re.find(s)
                    .map_or(0, |m| s[..m.start()].chars().count() as i32 + 1),
            )
        })?,
        "REGEXP_SUBSTR" => regex_call(call, 2..=2, SqlType::String, |s, re, _| {
            re.find(s)
                .map_or(Value::Null, |m| Value::string(m.as_str()))
        })?,
        "URL_ENCODE" => texts(call, &[Kind::Text], |v| {
            Ok(Value::string(&url_encode(text(&v[0]))))
        })?,
        "URL_DECODE" => texts(call, &[Kind::Text], |v| {
            Ok(url_decode(text(&v[0])).map_or(Value::Null, |s| Value::string(&s)))
        })?,
        // A BIGINT's bits (its two's complement when negative), or its
        // hexadecimal; `HEX` of a text is the hexadecimal of its UTF-8.
        "BIN" => texts(call, &[Kind::Integer], |v| {
            Ok(Value::string(&format!("{:b}", int(&v[0]))))
        })?,
        "HEX" => {
            let args = call.args(1..=1)?;
            let of_text = args[0].ty == SqlType::String;
            if !of_text {
                call.expect(&args[0], 0, Kind::Integer)?;
            }
            strict(&args, SqlType::String, move |v| {
                Ok(Value::string(&if of_text {
                    hex(text(&v[0]).as_bytes()).to_uppercase()
                } else {
                    format!("{:X}", int(&v[0]))
                }))
            })
        }
        "UUID" => {
            call.arity(0..=0)?;
            if crate::expr::folding() {
                return Err(call.error("not a constant"));
            }
            Compiled {
                shape: Shape::Computed,
                eval: Arc::new(|_| uuid().map(|u| Value::string(&u))),
                ty: SqlType::String,
            }
        }
        "MD5" => texts(call, &[Kind::Text], |v| {
            Ok(Value::string(&hex(&md5::Md5::digest(
                text(&v[0]).as_bytes(),
            ))))
        })?,
        "SHA224" => digest::<sha2::Sha224>(call)?,
        "SHA256" => digest::<sha2::Sha256>(call)?,
        "SHA384" => digest::<sha2::Sha384>(call)?,
        "SHA512" => digest::<sha2::Sha512>(call)?,
        "SHA2" => {
            let args = call.args(2..=2)?;
            let bits = call.constant_int(&args[1], 1)?;
            let digest: fn(&[u8]) -> String = match bits {
                224 => |b| hex(&sha2::Sha224::digest(b)),
                256 => |b| hex(&sha2::Sha256::digest(b)),
                384 => |b| hex(&sha2::Sha384::digest(b)),
                512 => |b| hex(&sha2::Sha512::digest(b)),
                _ => return Err(call.error("SHA2's length is 224, 256, 384 or 512")),
            };
            call.expect(&args[0], 0, Kind::Text)?;
            strict(&args[..1], SqlType::String, move |v| {
                Ok(Value::string(&digest(text(&v[0]).as_bytes())))
            })
        }
        "TO_BASE64" => texts(call, &[Kind::Text], |v| {
            Ok(Value::string(&BASE64_STANDARD.encode(text(&v[0]))))
        })?,
        // Text that is not Base64 of UTF-8 fails the job, as in Flink.
        "FROM_BASE64" => texts(call, &[Kind::Text], |v| {
            let bytes = BASE64_STANDARD
                .decode(text(&v[0]))
                .map_err(|e| format!("FROM_BASE64('{}'): {e}", text(&v[0])))?;
            Ok(Value::string(&String::from_utf8_lossy(&bytes)))
        })?,
        _ => return Ok(None),
    }))
}

/// `OVERLAY(s PLACING r FROM pos [FOR len])`: `s` with its `len`
/// characters (by default as many as `r` has) from `pos` replaced by `r`;
/// `s` itself when `pos` is past its last character.
pub(crate) fn overlay(args: &[Compiled]) -> Compiled {
    strict(args, SqlType::String, |v| {
        let (s, r) = (text(&v[0]), text(&v[1]));
        let from = usize::try_from(int(&v[2]).max(1) - 1).unwrap_or(0);
        // Past the end, nothing is placed (as Flink has it).
        if from >= s.chars().count() {
            return Ok(v[0].clone());
        }
        let len = v.get(3).map_or(r.chars().count() as i64, int);
        let skip = from.saturating_add(usize::try_from(len).unwrap_or(0));
        let mut out: String = s.chars().take(from).collect();
        out.push_str(r);
        out.extend(s.chars().skip(skip));
        Ok(Value::string(&out))
    })
}

/// `TRANSLATE(s, from, to)`: each character of `from` in `s` replaced by
/// the one at its place in `to`, or removed when `to` is shorter.
fn translate(s: &str, from: &str, to: &str) -> String {
    let to: Vec<char> = to.chars().collect();
    s.chars()
        .filter_map(|c| match from.chars().position(|f| f == c) {
            Some(i) => to.get(i).copied(),
            None => Some(c),
        })
        .collect()
}

/// `ELT(n, a, b, …)`: the `n`th of the values (from 1), NULL past them.
fn elt(call: &Call) -> Result<Compiled, SqlError> {
    let args = call.args(2..=usize::MAX)?;
    call.expect(&args[0], 0, Kind::Integer)?;
    let ty = common_type(&args[1..], call)?;
    let index = args[0].eval.clone();
    let values: Vec<_> = args[1..].iter().map(|c| (c.eval.clone(), c.ty)).collect();
    Ok(Compiled {
        shape: Shape::Computed,
        eval: Arc::new(move |row| {
            let n = index(row)?.as_i64();
            match n.and_then(|n| values.get(usize::try_from(n).ok()?.checked_sub(1)?)) {
                Some((eval, from)) => crate::expr::cast(eval(row)?, *from, ty),
                None => Ok(Value::Null),
            }
        }),
        ty,
    })
}

/// As Java's `URLEncoder` writes text (UTF-8): letters, digits and `.-*_`
/// as they are, a space as `+`, every other byte as `%XX`.
fn url_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'.' | b'-' | b'*' | b'_' => {
                out.push(char::from(b))
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// As Java's `URLDecoder` reads text: `+` is a space, `%XX` a byte;
/// `None` for a broken escape or bytes that are not UTF-8.
fn url_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let pair = s.get(i + 1..i + 3)?;
                out.push(u8::from_str_radix(pair, 16).ok()?);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).ok()
}

/// A random (version 4) UUID.
fn uuid() -> Result<String, String> {
    let mut b = [0u8; 16];
    getrandom::getrandom(&mut b).map_err(|e| format!("UUID(): no randomness: {e}"))?;
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h = hex(&b);
    Ok(format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    ))
}

/// A digest of a text's UTF-8, in lower-case hexadecimal.
fn digest<D: Digest>(call: &Call) -> Result<Compiled, SqlError> {
    texts(call, &[Kind::Text], |v| {
        Ok(Value::string(&hex(&D::digest(text(&v[0]).as_bytes()))))
    })
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// The kinds of a call's arguments whose last is optional: all of
/// `kinds`, or all but the last when the call has one argument less.
fn optional_last<'k>(call: &Call, kinds: &'k [Kind]) -> &'k [Kind] {
    if call.exprs.len() + 1 == kinds.len() {
        &kinds[..kinds.len() - 1]
    } else {
        kinds
    }
}

/// A function of arguments of `kinds`, giving a STRING.
fn texts<F>(call: &Call, kinds: &[Kind], f: F) -> Result<Compiled, SqlError>
where
    F: Fn(&[Value]) -> Result<Value, String> + Send + Sync + 'static,
{
    typed(call, kinds, SqlType::String, f)
}

/// A function of arguments of `kinds`, giving a `ty`; NULL for a NULL
/// argument.
fn typed<F>(call: &Call, kinds: &[Kind], ty: SqlType, f: F) -> Result<Compiled, SqlError>
where
    F: Fn(&[Value]) -> Result<Value, String> + Send + Sync + 'static,
{
    let args = call.args(kinds.len()..=kinds.len())?;
    for (i, (c, kind)) in args.iter().zip(kinds).enumerate() {
        call.expect(c, i, *kind)?;
    }
    Ok(strict(&args, ty, f))
}

/// `LPAD`/`RPAD`: `s` padded (or cut) to `len` characters with `with`
/// repeated; NULL for a negative length or empty padding.
fn pad(s: &str, len: i64, with: &str, left: bool) -> Option<String> {
    let len = usize::try_from(len).ok()?;
    if with.is_empty() {
        return None;
    }
    let have = s.chars().count();
    if have >= len {
        return Some(s.chars().take(len).collect());
    }
    let fill: String = with.chars().cycle().take(len - have).collect();
    Some(if left {
        fill + s
    } else {
        s.to_string() + &fill
    })
}

/// The character position (from 1) of `needle` in `s` at or after
/// position `from`; 0 when it is not there. Empty text is found at once.
pub(crate) fn locate(needle: &str, s: &str, from: i64) -> i32 {
    if from < 1 {
        return 0;
    }
    let Some((start, _)) = s
        .char_indices()
        .nth((from - 1) as usize)
        .or_else(|| (s.chars().count() == (from - 1) as usize).then_some((s.len(), ' ')))
    else {
        return 0;
    };
    match s[start..].find(needle) {
        Some(at) => (s[..start + at].chars().count() + 1) as i32,
        None => 0,
    }
}

/// Each word's first ASCII letter in upper case and its other ASCII
/// letters in lower case; a word is a run of ASCII letters and digits
/// (Calcite's `INITCAP`, which Flink runs: other characters are kept as
/// they are and end a word).
fn initcap(s: &str) -> String {
    let mut start = true;
    s.chars()
        .map(|c| {
            let word = c.is_ascii_alphanumeric();
            let out = if !word {
                c
            } else if start {
                c.to_ascii_uppercase()
            } else {
                c.to_ascii_lowercase()
            };
            start = !word;
            out
        })
        .collect()
}

/// `CONCAT_WS(sep, a, b, …)`: the non-NULL arguments joined by `sep`;
/// NULL only when `sep` is.
fn concat_ws(call: &Call) -> Result<Compiled, SqlError> {
    let args = call.args(1..=usize::MAX)?;
    for (i, c) in args.iter().enumerate() {
        call.expect(c, i, Kind::Text)?;
    }
    let evals: Vec<_> = args.iter().map(|c| c.eval.clone()).collect();
    Ok(Compiled {
        shape: Shape::Computed,
        eval: Arc::new(move |row| {
            let separator = evals[0](row)?;
            if separator.is_null() {
                return Ok(Value::Null);
            }
            let mut out = String::new();
            let mut first = true;
            for eval in &evals[1..] {
                let v = eval(row)?;
                if v.is_null() {
                    continue;
                }
                if !first {
                    out.push_str(text(&separator));
                }
                first = false;
                out.push_str(text(&v));
            }
            Ok(Value::string(&out))
        }),
        ty: SqlType::String,
    })
}

/// Piece `index` (from 0) of `s` split at each `separator`, empty pieces
/// kept; NULL past the last piece, for a negative index, an empty
/// separator, or empty text (which has no pieces).
fn split_index<'a>(s: &'a str, separator: &str, index: i64) -> Option<&'a str> {
    if s.is_empty() || separator.is_empty() {
        return None;
    }
    s.split(separator).nth(usize::try_from(index).ok()?)
}

/// `SUBSTRING`/`SUBSTR`: `len` characters (all, when `None`) from
/// position `pos`, counted from 1, or back from the end when negative (0
/// is 1). Empty when the position lies outside the text, before it or
/// after it (as Flink has it).
pub(crate) fn substring_sql(s: &str, pos: i64, len: Option<i64>) -> String {
    let count = s.chars().count() as i64;
    let start = match pos {
        p if p > 0 => p - 1,
        p if p < 0 => count + p,
        _ => 0,
    };
    let end = match len {
        Some(n) => start.saturating_add(n).min(count),
        None => count,
    };
    if start < 0 || start >= end {
        return String::new();
    }
    s.chars()
        .skip(start as usize)
        .take((end - start) as usize)
        .collect()
}

/// `TRIM(side chars FROM s)`: the characters of `chars` removed from the
/// start and/or the end.
pub(crate) fn trim_chars<'a>(s: &'a str, chars: &str, leading: bool, trailing: bool) -> &'a str {
    let drop = |c: char| chars.contains(c);
    let s = if leading {
        s.trim_start_matches(drop)
    } else {
        s
    };
    if trailing {
        s.trim_end_matches(drop)
    } else {
        s
    }
}

/// A function of a text and a regular expression (and more arguments of
/// `rest_kinds`): `f(text, regex, rest)`; NULL for a NULL argument.
fn regex_call(
    call: &Call,
    range: std::ops::RangeInclusive<usize>,
    ty: SqlType,
    f: fn(&str, &Regex, &[Value]) -> Value,
) -> Result<Compiled, SqlError> {
    let args = call.args(range)?;
    call.expect(&args[0], 0, Kind::Text)?;
    call.expect(&args[1], 1, Kind::Text)?;
    for (i, c) in args.iter().enumerate().skip(2) {
        let kind = if call.name == "REGEXP_EXTRACT" {
            Kind::Integer
        } else {
            Kind::Text
        };
        call.expect(c, i, kind)?;
    }
    if let Shape::Constant(Value::String(pattern)) = &args[1].shape {
        let re = Regex::new(pattern).map_err(|e| {
            call.error(format!(
                "{}: '{}' is not a regular expression this engine reads: {e}",
                call.name, &**pattern
            ))
        })?;
        let mut rest: Vec<Compiled> = vec![args[0].clone()];
        rest.extend(args[2..].iter().cloned());
        return Ok(strict(&rest, ty, move |v| Ok(f(text(&v[0]), &re, &v[1..]))));
    }
    Ok(strict(&args, ty, move |v| {
        Ok(match Regex::new(text(&v[1])) {
            Ok(re) => f(text(&v[0]), &re, &v[2..]),
            Err(_) => Value::Null,
        })
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substrings_count_negative_positions_from_the_end() {
        assert_eq!(substring_sql("alice smith", -3, None), "ith");
        assert_eq!(substring_sql("alice smith", 0, Some(2)), "al");
        assert_eq!(substring_sql("alice smith", -3, Some(2)), "it");
        assert_eq!(substring_sql("alice smith", -20, Some(3)), "");
        assert_eq!(substring_sql("alice smith", -20, None), "");
        assert_eq!(substring_sql("d-1", -4, None), "");
        assert_eq!(substring_sql("d-1", -3, None), "d-1");
        assert_eq!(substring_sql("Émile", 2, Some(3)), "mil");
        assert_eq!(substring_sql("abc", 5, None), "");
        assert_eq!(substring_sql("abc", 2, Some(-1)), "");
    }

    #[test]
    fn initcap_changes_ascii_letters_only() {
        assert_eq!(initcap("hello wORLD_x 9ab"), "Hello World_X 9ab");
        assert_eq!(initcap("Émile"), "ÉMile");
        assert_eq!(initcap("  carol  "), "  Carol  ");
    }

    #[test]
    fn pieces_padding_and_positions() {
        assert_eq!(split_index("a--b", "-", 1), Some(""));
        assert_eq!(split_index("a--b", "-", 2), Some("b"));
        assert_eq!(split_index("x", "-", 1), None);
        assert_eq!(split_index("", "|", 0), None);
        assert_eq!(split_index("a b", "", 1), None);
        assert_eq!(
            pad("alice smith", 8, "*", true).as_deref(),
            Some("alice sm")
        );
        assert_eq!(pad("BOB", 8, "*", true).as_deref(), Some("*****BOB"));
        assert_eq!(pad("BOB", 6, "xy", false).as_deref(), Some("BOBxyx"));
        assert_eq!(pad("BOB", 4, "", true), None);
        assert_eq!(pad("BOB", -1, "*", true), None);
        assert_eq!(locate("b", "a-b-c", 1), 3);
        assert_eq!(locate("-", "a-b-c", 3), 4);
        assert_eq!(locate("", "abc", 1), 1);
        assert_eq!(locate("z", "abc", 1), 0);
        assert_eq!(locate("l", "Émile", 1), 4);
        assert_eq!(trim_chars("abcbax", "ab", true, true), "cbax");
        assert_eq!(trim_chars("abcba", "ab", true, false), "cba");
    }
}
