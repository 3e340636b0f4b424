//! Values and rows: a compact dynamic row of typed columns, serialisable
//! for state and checkpoints, shown as Flink shows them.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ptr::NonNull;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use weir::sink::PrintFormat;

use crate::time::{format_date, format_timestamp, parse_date, parse_timestamp};
use crate::types::SqlType;

/// A string value in two words: borrowed from static text (a
/// generator's, at no cost), shared (an `Arc<str>`), or, up to 15 bytes
/// (on 64-bit little-endian machines), held in the two words themselves. For the first
/// two, the words are the text's pointer and its length, the length's top
/// bit saying which of the two it is. (An enum would take three words, and
/// make every [`Value`] a word larger.)
///
/// Short text held inline costs no allocation and no reference count: a
/// computed day (`DATE_FORMAT(ts, 'yyyy-MM-dd')`) used as a key is copied
/// into the key and dropped with the row as the integers beside it are,
/// where a shared one paid an atomic increment and decrement for each.
#[repr(C)]
pub struct Str {
    /// The text's address; inline, its first bytes.
    ptr: *const u8,
    /// The length in bytes, `SHARED` set when `ptr` is an `Arc<str>`'s;
    /// inline, the rest of the text, and (in the top byte) `INLINE` and
    /// the length.
    len: usize,
}

/// The bit of [`Str::len`] that marks shared text (a `str` is at most
/// `isize::MAX` bytes long, so a length never has it).
const SHARED: usize = 1 << (usize::BITS - 1);

/// Whether text is ever held inline: on 64-bit little-endian machines,
/// where the length word's top byte is the `Str`'s last, and no `str` is
/// 2^62 bytes long (so a length never has the `INLINE` bit).
const INLINES: bool = cfg!(all(target_endian = "little", target_pointer_width = "64"));

/// The bit of [`Str::len`] that marks text held inline (none, where text
/// is never inline).
const INLINE: usize = if INLINES { 1 << (usize::BITS - 2) } else { 0 };

/// The longest text held inline: all the bytes of a [`Str`] but the top
/// one of its length.
pub(crate) const INLINE_MAX: usize = if INLINES {
    std::mem::size_of::<Str>() - 1
} else {
    0
};

// SAFETY: a `Str` is a `&'static str`, an `Arc<str>` (both `Send` and
// `Sync`) or bytes of its own; it never gives out mutable access to the
// text.
unsafe impl Send for Str {}
unsafe impl Sync for Str {}

impl Str {
    /// Static text, not copied.
    pub fn from_static(s: &'static str) -> Str {
        Str {
            ptr: s.as_ptr(),
            len: s.len(),
        }
    }

    /// A copy of `s`: inline when it is short, else shared.
    pub fn new(s: &str) -> Str {
        if !INLINES || s.len() > INLINE_MAX {
            return Str::shared(Arc::from(s));
        }
        let mut bytes = [0u8; std::mem::size_of::<Str>()];
        bytes[..s.len()].copy_from_slice(s.as_bytes());
        // The top byte of the length word (its last, little-endian): the
        // flag and the length.
        bytes[INLINE_MAX] = ((INLINE >> (usize::BITS - 8)) | s.len()) as u8;
        // SAFETY: `Str` is two words (`repr(C)`) of which any bits are
        // valid; an inline `Str`'s pointer word is text, never read as an
        // address.
        unsafe { std::mem::transmute::<[u8; std::mem::size_of::<Str>()], Str>(bytes) }
    }

    /// Shared text: the `Arc` is held (and released when the last clone
    /// is dropped).
    pub fn shared(s: Arc<str>) -> Str {
        let len = s.len();
        let raw = Arc::into_raw(s);
        Str {
            ptr: raw as *const u8,
            len: len | SHARED,
        }
    }

    fn is_shared(&self) -> bool {
        self.len & SHARED != 0
    }

    fn is_inline(&self) -> bool {
        self.len & INLINE != 0
    }

    /// The `Arc<str>`'s pointer, as `Arc::into_raw` gave it.
    fn raw(&self) -> *const str {
        std::ptr::slice_from_raw_parts(self.ptr, self.len & !SHARED) as *const str
    }
}

impl Clone for Str {
    fn clone(&self) -> Str {
        if self.is_shared() {
            // SAFETY: `raw` is the pointer of an `Arc<str>` this `Str`
            // holds a count of; the count is increased for the clone.
            unsafe { Arc::increment_strong_count(self.raw()) };
        }
        Str {
            ptr: self.ptr,
            len: self.len,
        }
    }
}

impl Drop for Str {
    fn drop(&mut self) {
        if self.is_shared() {
            // SAFETY: this `Str` holds one count of the `Arc<str>` at
            // `raw`, given back here exactly once.
            unsafe { drop(Arc::from_raw(self.raw())) };
        }
    }
}

impl std::ops::Deref for Str {
    type Target = str;
    fn deref(&self) -> &str {
        if self.is_inline() {
            let len = (self.len >> (usize::BITS - 8)) & 0x3f;
            // SAFETY: an inline `Str`'s first `len` bytes are a copy of a
            // `str`'s, and live as long as it does.
            return unsafe {
                std::str::from_utf8_unchecked(std::slice::from_raw_parts(
                    (self as *const Str).cast::<u8>(),
                    len,
                ))
            };
        }
        // SAFETY: `ptr` and the length are those of a `str` that lives as
        // long as this `Str` (static, or kept alive by the count it holds).
        unsafe { &*self.raw() }
    }
}

impl fmt::Debug for Str {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl PartialEq for Str {
    fn eq(&self, other: &Str) -> bool {
        **self == **other
    }
}

impl Eq for Str {}

impl PartialOrd for Str {
    fn partial_cmp(&self, other: &Str) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Str {
    fn cmp(&self, other: &Str) -> Ordering {
        (**self).cmp(&**other)
    }
}

impl Hash for Str {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (**self).hash(state)
    }
}

impl Serialize for Str {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self)
    }
}

impl<'de> Deserialize<'de> for Str {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Str, D::Error> {
        let s = String::deserialize(d)?;
        Ok(Str::new(&s))
    }
}

/// A DECIMAL's unscaled value: an `i128` kept as two words at 8-byte
/// alignment, so that a [`Value`] takes 24 bytes rather than 32 (rows,
/// keys and accumulators are a quarter smaller, and cheaper to move). It
/// serialises as the `i128` it holds.
///
/// Two words rather than a packed `i128`: a packed field was written and
/// copied through the stack in pieces shifted by a few bytes, which the
/// CPU could not forward from store to load.
#[derive(Clone, Copy)]
pub struct Unscaled {
    low: u64,
    high: i64,
}

impl Unscaled {
    #[inline]
    pub fn get(self) -> i128 {
        (i128::from(self.high) << 64) | i128::from(self.low)
    }
}

impl From<i128> for Unscaled {
    #[inline]
    fn from(v: i128) -> Unscaled {
        Unscaled {
            low: v as u64,
            high: (v >> 64) as i64,
        }
    }
}

impl fmt::Debug for Unscaled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.get(), f)
    }
}

impl Serialize for Unscaled {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.get().serialize(s)
    }
}

impl<'de> Deserialize<'de> for Unscaled {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Unscaled, D::Error> {
        i128::deserialize(d).map(Unscaled::from)
    }
}

/// One value of a column.
#[derive(Debug, Serialize, Deserialize)]
pub enum Value {
    Null,
    Boolean(bool),
    Int(i32),
    BigInt(i64),
    Double(f64),
    /// Unscaled value and scale: `Value::decimal(1234, 2)` is 12.34.
    Decimal(Unscaled, u8),
    String(Str),
    Bytes(Arc<[u8]>),
    /// Days since 1970-01-01.
    Date(i32),
    /// Milliseconds since 1970-01-01 00:00:00 (no time zone).
    Timestamp(i64),
    /// An instant, milliseconds since the epoch.
    TimestampLtz(i64),
    /// A duration in milliseconds.
    Interval(i64),
}

const _: () = assert!(
    std::mem::size_of::<Value>() == 24 && std::mem::align_of::<Value>() == 8,
    "Value::clone copies a value as three words"
);

impl Clone for Value {
    #[inline]
    fn clone(&self) -> Value {
        // Copied as a `Value`, the bytes between the tag and the payload
        // went through the stack in two overlapping pieces and were read
        // back at once, a stall on every clone (a fifth of a windowed
        // GROUP BY's time, keying its rows): copied a word at a time.
        let mut copy = std::mem::MaybeUninit::<Value>::uninit();
        // SAFETY: `copy` is valid for writes of a `Value`, and holds one
        // once written.
        unsafe {
            write_clone(copy.as_mut_ptr(), self);
            copy.assume_init()
        }
    }
}

/// Replaces `slot` with `make()`'s value, written straight into it: a
/// value assigned whole is built on the stack first and read back in
/// other widths than it was written in. `make` must not panic (it makes a
/// number's value, or clones a value).
#[inline(always)]
pub(crate) fn put(slot: &mut Value, make: impl FnOnce() -> Value) {
    let slot: *mut Value = slot;
    // SAFETY: `slot` is a live value, dropped once and written again at
    // once; dropping a value and `make` do not unwind (a failed
    // allocation or a count's overflow aborts), so the dropped value is
    // never seen.
    unsafe {
        std::ptr::drop_in_place(slot);
        slot.write(make());
    }
}

/// Replaces `slot` with a clone of `from`, copied from where it is a word
/// at a time: [`put`] with `from.clone()` moved the clone through the
/// stack, its bytes after the tag in two overlapping pieces that were
/// read back at once (a stall per value; [`push_clone`] avoids the same
/// for a value pushed).
#[inline(always)]
pub(crate) fn put_clone(slot: &mut Value, from: &Value) {
    let slot: *mut Value = slot;
    // SAFETY: `slot` is a live value, dropped once (dropping does not
    // unwind) and overwritten at once.
    unsafe {
        std::ptr::drop_in_place(slot);
        write_clone(slot, from);
    }
}

/// Pushes `make()`'s value onto `values`, written straight into its slot
/// (as [`put`] does).
#[inline(always)]
pub(crate) fn push_made(values: &mut Vec<Value>, make: impl FnOnce() -> Value) {
    values.reserve(1);
    let len = values.len();
    // SAFETY: `reserve` made room for one more value at `len`; the length
    // counts it once it is written, and `make` does not unwind (see `put`).
    unsafe {
        values.as_mut_ptr().add(len).write(make());
        values.set_len(len + 1);
    }
}

/// Pushes a clone of `v` onto `values`, copied from `v` into its slot a
/// word at a time (a clone returned whole went through the stack).
#[inline(always)]
pub(crate) fn push_clone(values: &mut Vec<Value>, v: &Value) {
    values.reserve(1);
    let len = values.len();
    // SAFETY: `reserve` made room at `len`, counted once written.
    unsafe {
        write_clone(values.as_mut_ptr().add(len), v);
        values.set_len(len + 1);
    }
}

/// Writes a clone of `v` at `to`, copied from `v` a word at a time.
///
/// # Safety
///
/// `to` is valid for writes of a `Value`; what it held is not dropped.
#[inline(always)]
unsafe fn write_clone(to: *mut Value, v: &Value) {
    // A shared string's or bytes' count is taken for the copy, as in
    // `Value::clone`.
    match v {
        Value::String(s) => std::mem::forget(s.clone()),
        Value::Bytes(b) => std::mem::forget(b.clone()),
        _ => {}
    }
    // SAFETY: a `Value` is three words (asserted above), and every
    // variant but the two whose count was just taken holds plain numbers:
    // a copy of its bytes is a clone. The words are copied as possibly
    // uninitialised (the bytes between a tag and its payload are padding).
    unsafe {
        let from = (v as *const Value).cast::<std::mem::MaybeUninit<u64>>();
        let to = to.cast::<std::mem::MaybeUninit<u64>>();
        for i in 0..3 {
            to.add(i).write(from.add(i).read());
        }
    }
}

/// Moves `v`, a value just returned through memory, into `slot` (leaving
/// NULL or a copy of a number behind), reading its tag and payload in the
/// widths they were written in: a value read whole right after it was
/// written a piece at a time waits for the pieces to reach the cache.
#[inline(always)]
pub(crate) fn move_into(v: &mut Value, slot: &mut Value) {
    match *v {
        Value::BigInt(x) => put(slot, || Value::BigInt(x)),
        Value::Int(x) => put(slot, || Value::Int(x)),
        Value::Boolean(x) => put(slot, || Value::Boolean(x)),
        Value::Timestamp(x) => put(slot, || Value::Timestamp(x)),
        Value::Decimal(x, s) => put(slot, || Value::Decimal(x, s)),
        Value::Null => put(slot, || Value::Null),
        _ => *slot = std::mem::replace(v, Value::Null),
    }
}

impl Value {
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// A DECIMAL of `unscaled` at `scale`: `decimal(1234, 2)` is 12.34.
    pub fn decimal(unscaled: i128, scale: u8) -> Value {
        Value::Decimal(Unscaled::from(unscaled), scale)
    }

    /// A string value.
    pub fn string(s: &str) -> Value {
        Value::String(Str::new(s))
    }

    /// A string value of static text (no copy).
    pub fn static_str(s: &'static str) -> Value {
        Value::String(Str::from_static(s))
    }

    /// The value as an `f64`, for numbers.
    pub(crate) fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Int(v) => Some(f64::from(*v)),
            Value::BigInt(v) => Some(*v as f64),
            Value::Double(v) => Some(*v),
            Value::Decimal(v, s) => Some(v.get() as f64 / 10f64.powi(i32::from(*s))),
            _ => None,
        }
    }

    /// The value as an `i64`, for integers and time values.
    pub(crate) fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(v) => Some(i64::from(*v)),
            Value::BigInt(v)
            | Value::Timestamp(v)
            | Value::TimestampLtz(v)
            | Value::Interval(v) => Some(*v),
            Value::Date(v) => Some(i64::from(*v)),
            _ => None,
        }
    }

    /// Parses `text` (as a CSV field holds it) as a value of type `t`.
    pub(crate) fn parse(text: &str, t: SqlType) -> Result<Value, String> {
        let bad = || format!("'{text}' is not a valid {t}");
        let trimmed = text.trim();
        Ok(match t {
            SqlType::Boolean => match trimmed.to_ascii_lowercase().as_str() {
                "true" => Value::Boolean(true),
                "false" => Value::Boolean(false),
                _ => return Err(bad()),
            },
            SqlType::Int => Value::Int(trimmed.parse().map_err(|_| bad())?),
            SqlType::BigInt => Value::BigInt(trimmed.parse().map_err(|_| bad())?),
            SqlType::Double => Value::Double(trimmed.parse().map_err(|_| bad())?),
            SqlType::Decimal(p, s) => parse_decimal(trimmed, p, s).ok_or_else(bad)?,
            SqlType::String => Value::string(text),
            SqlType::Bytes => Value::Bytes(Arc::from(text.as_bytes())),
            SqlType::Date => Value::Date(parse_date(trimmed).ok_or_else(bad)?),
            SqlType::Timestamp => Value::Timestamp(parse_timestamp(trimmed).ok_or_else(bad)?),
            SqlType::TimestampLtz => Value::TimestampLtz(parse_timestamp(trimmed).ok_or_else(bad)?),
            SqlType::Interval => Value::Interval(trimmed.parse().map_err(|_| bad())?),
            SqlType::Null => return Err(bad()),
        })
    }

    /// Compares two values of comparable types; `None` if either is NULL
    /// or they do not compare.
    pub(crate) fn compare(&self, other: &Value) -> Option<Ordering> {
        use Value::*;
        match (self, other) {
            (Null, _) | (_, Null) => None,
            (Boolean(a), Boolean(b)) => Some(a.cmp(b)),
            (String(a), String(b)) => Some(a.cmp(b)),
            (Bytes(a), Bytes(b)) => Some(a.cmp(b)),
            (Decimal(a, sa), Decimal(b, sb)) => {
                let s = (*sa).max(*sb);
                Some(rescale(a.get(), *sa, s)?.cmp(&rescale(b.get(), *sb, s)?))
            }
            (Date(a), Date(b)) => Some(a.cmp(b)),
            // A TIMESTAMP against a TIMESTAMP_LTZ: both in UTC, the
            // session time zone here.
            (Timestamp(a) | TimestampLtz(a), Timestamp(b) | TimestampLtz(b))
            | (Interval(a), Interval(b)) => Some(a.cmp(b)),
            (Int(_) | BigInt(_), Int(_) | BigInt(_)) => Some(self.as_i64()?.cmp(&other.as_i64()?)),
            // Exactly, at the decimal's scale: through a double, large
            // values compared wrong (and the conversion cost more than
            // the comparison).
            (Decimal(a, s), Int(_) | BigInt(_)) => {
                Some(decimal_against_integer(a.get(), *s, other.as_i64()?))
            }
            (Int(_) | BigInt(_), Decimal(b, s)) => {
                Some(decimal_against_integer(b.get(), *s, self.as_i64()?).reverse())
            }
            _ if self.as_f64().is_some() && other.as_f64().is_some() => {
                self.as_f64()?.partial_cmp(&other.as_f64()?)
            }
            _ => None,
        }
    }
}

/// How a decimal (`unscaled` at `scale`) compares with an integer.
fn decimal_against_integer(unscaled: i128, scale: u8, integer: i64) -> Ordering {
    match rescale(i128::from(integer), 0, scale) {
        Some(scaled) => unscaled.cmp(&scaled),
        // Past any decimal's range at this scale: the integer's sign
        // decides (zero always rescales).
        None if integer > 0 => Ordering::Less,
        None => Ordering::Greater,
    }
}

/// `v` at scale `from`, rescaled to scale `to` (≥ `from`).
pub(crate) fn rescale(v: i128, from: u8, to: u8) -> Option<i128> {
    v.checked_mul(10i128.checked_pow(u32::from(to.checked_sub(from)?))?)
}

fn parse_decimal(text: &str, precision: u8, scale: u8) -> Option<Value> {
    let (neg, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    if int.is_empty() && frac.is_empty()
        || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let mut unscaled: i128 = 0;
    for b in int.bytes() {
        unscaled = unscaled
            .checked_mul(10)?
            .checked_add(i128::from(b - b'0'))?;
    }
    let mut frac_digits = frac.bytes();
    for _ in 0..scale {
        let d = frac_digits.next().map_or(0, |b| b - b'0');
        unscaled = unscaled.checked_mul(10)?.checked_add(i128::from(d))?;
    }
    // Flink rounds half up when a value has more fractional digits.
    if frac_digits.next().is_some_and(|b| b >= b'5') {
        unscaled += 1;
    }
    if unscaled >= 10i128.pow(u32::from(precision)) {
        return None;
    }
    Some(Value::decimal(
        if neg { -unscaled } else { unscaled },
        scale,
    ))
}

/// A double as Java's `Double.toString` writes it (as Flink shows it):
/// `1.0`, `0.001`, `1.0E7`, `1.0E-4`.
pub(crate) fn format_double(v: f64) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    let abs = v.abs();
    if (1e-3..1e7).contains(&abs) {
        let s = format!("{v}");
        if s.contains('.') {
            s
        } else {
            format!("{s}.0")
        }
    } else {
        // Shortest digits that round-trip, in scientific notation.
        let s = format!("{v:e}");
        let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
        let mantissa = if mantissa.contains('.') {
            mantissa.to_string()
        } else {
            format!("{mantissa}.0")
        };
        format!("{mantissa}E{exp}")
    }
}

impl fmt::Display for Value {
    /// As Flink casts the value to a string (and prints it in rows).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("NULL"),
            Value::Boolean(b) => f.write_str(if *b { "TRUE" } else { "FALSE" }),
            Value::Int(v) => write!(f, "{v}"),
            Value::BigInt(v) => write!(f, "{v}"),
            Value::Double(v) => f.write_str(&format_double(*v)),
            Value::Decimal(v, s) => {
                let v = v.get();
                let s = usize::from(*s);
                let digits = v.unsigned_abs().to_string();
                let digits = format!("{digits:0>width$}", width = s + 1);
                let (int, frac) = digits.split_at(digits.len() - s);
                let sign = if v < 0 { "-" } else { "" };
                if s == 0 {
                    write!(f, "{sign}{int}")
                } else {
                    write!(f, "{sign}{int}.{frac}")
                }
            }
            Value::String(s) => f.write_str(s),
            Value::Bytes(b) => {
                f.write_str("x'")?;
                for byte in b.iter() {
                    write!(f, "{byte:02x}")?;
                }
                f.write_str("'")
            }
            Value::Date(d) => f.write_str(&format_date(*d)),
            Value::Timestamp(ms) | Value::TimestampLtz(ms) => f.write_str(&format_timestamp(*ms)),
            Value::Interval(ms) => {
                let sign = if *ms < 0 { "-" } else { "+" };
                let a = ms.unsigned_abs();
                write!(
                    f,
                    "{sign}{} {:02}:{:02}:{:02}.{:03}",
                    a / 86_400_000,
                    a / 3_600_000 % 24,
                    a / 60_000 % 60,
                    a / 1000 % 60,
                    a % 1000
                )
            }
        }
    }
}

/// Equality as grouping and joining see it: NULL equals NULL, numbers of
/// one type by value, doubles by their bits (so that `Eq` and `Hash`
/// agree).
impl PartialEq for Value {
    fn eq(&self, other: &Value) -> bool {
        use Value::*;
        match (self, other) {
            (Null, Null) => true,
            (Boolean(a), Boolean(b)) => a == b,
            (Int(a), Int(b)) => a == b,
            (BigInt(a), BigInt(b)) => a == b,
            (Double(a), Double(b)) => a.to_bits() == b.to_bits(),
            (Decimal(a, sa), Decimal(b, sb)) => a.get() == b.get() && sa == sb,
            (String(a), String(b)) => a == b,
            (Bytes(a), Bytes(b)) => a == b,
            (Date(a), Date(b)) => a == b,
            (Timestamp(a), Timestamp(b))
            | (TimestampLtz(a), TimestampLtz(b))
            | (Interval(a), Interval(b)) => a == b,
            _ => false,
        }
    }
}

impl Eq for Value {}

impl Hash for Value {
    /// A number is hashed with its variant in one write (a key of one
    /// column hashes in one step of the hasher).
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        let number = |variant: u64, bits: u64| (u128::from(variant) << 64) | u128::from(bits);
        match self {
            Value::Null => state.write_u128(number(0, 0)),
            Value::Boolean(b) => state.write_u128(number(1, u64::from(*b))),
            Value::Int(v) => state.write_u128(number(2, *v as u64)),
            Value::BigInt(v) => state.write_u128(number(3, *v as u64)),
            Value::Double(v) => state.write_u128(number(4, v.to_bits())),
            Value::Date(d) => state.write_u128(number(5, *d as u64)),
            Value::Timestamp(v) => state.write_u128(number(6, *v as u64)),
            Value::TimestampLtz(v) => state.write_u128(number(7, *v as u64)),
            Value::Interval(v) => state.write_u128(number(8, *v as u64)),
            Value::Decimal(v, s) => {
                state.write_u8(9);
                (v.get(), s).hash(state);
            }
            Value::String(s) => {
                state.write_u8(10);
                s.hash(state);
            }
            Value::Bytes(b) => {
                state.write_u8(11);
                b.hash(state);
            }
        }
    }
}

/// The key group of a grouping key follows from its values alone, stable
/// across runs and versions (savepoints depend on it).
impl weir::prelude::StableHash for Value {
    fn stable_hash(&self) -> u64 {
        match self {
            Value::Null => 0,
            Value::Boolean(b) => b.stable_hash(),
            Value::Int(v) => v.stable_hash(),
            Value::BigInt(v)
            | Value::Timestamp(v)
            | Value::TimestampLtz(v)
            | Value::Interval(v) => v.stable_hash(),
            Value::Double(v) => v.to_bits().stable_hash(),
            Value::Decimal(v, s) => {
                let v = v.get();
                (v as i64, (v >> 64) as i64, *s).stable_hash()
            }
            Value::String(s) => (**s).stable_hash(),
            Value::Bytes(b) => b[..].stable_hash(),
            Value::Date(d) => d.stable_hash(),
        }
    }

    /// Postcard's bytes for the value, as serde writes them (the variant's
    /// index, then the payload: zigzag varints for integers, a length and
    /// the bytes for text), for the kinds keys are made of; decimals and
    /// bytes go through serde.
    #[inline]
    fn append_key_bytes(&self, buf: &mut Vec<u8>) -> bool {
        let mut piece = [0u8; KEY_PIECE];
        if let Some(len) = self.number_key_piece(&mut piece, 0) {
            append_key_piece(buf, &piece, len);
            return true;
        }
        match self {
            Value::Boolean(b) => buf.extend_from_slice(&[1, u8::from(*b)]),
            Value::Double(d) => {
                buf.push(4);
                buf.extend_from_slice(&d.to_bits().to_le_bytes());
            }
            Value::String(s) => {
                buf.push(6);
                push_varint(buf, s.len() as u64);
                buf.extend_from_slice(s.as_bytes());
            }
            _ => return false,
        }
        true
    }
}

/// The most bytes [`Value::number_key_piece`] lays out, with room for a
/// key's count before them.
pub(crate) const KEY_PIECE: usize = 16;

impl Value {
    /// Lays out the key bytes of a NULL or an integer-like value (see
    /// [`Value::append_key_bytes`]: at most eleven) in `piece` from `at`
    /// (at most [`KEY_PIECE`] - 11), returning where they end; `None`
    /// for any other value.
    #[inline(always)]
    pub(crate) fn number_key_piece(&self, piece: &mut [u8; KEY_PIECE], at: usize) -> Option<usize> {
        let (index, v) = match self {
            Value::Null => {
                piece[at] = 0;
                return Some(at + 1);
            }
            Value::Int(v) => (2, i64::from(*v)),
            Value::BigInt(v) => (3, *v),
            Value::Date(d) => (8, i64::from(*d)),
            Value::Timestamp(v) => (9, *v),
            Value::TimestampLtz(v) => (10, *v),
            Value::Interval(v) => (11, *v),
            _ => return None,
        };
        piece[at] = index;
        let mut at = at + 1;
        // Zigzag: an i32's is the i64's for the same number.
        let mut z = ((v << 1) ^ (v >> 63)) as u64;
        while z >= 0x80 {
            piece[at] = z as u8 | 0x80;
            z >>= 7;
            at += 1;
        }
        piece[at] = z as u8;
        Some(at + 1)
    }
}

/// Appends the first `len` bytes of `piece`. The whole piece is copied, a
/// fixed size the compiler copies in a store or two, and the length cut
/// after: a push a byte, each checking the room left, or a copy of a
/// length known only here (a call to `memcpy`), cost more than the key's
/// hash.
#[inline(always)]
pub(crate) fn append_key_piece(buf: &mut Vec<u8>, piece: &[u8; KEY_PIECE], len: usize) {
    let len = len.min(KEY_PIECE);
    buf.reserve(KEY_PIECE);
    let at = buf.len();
    // SAFETY: `reserve` leaves room for `KEY_PIECE` bytes after the first
    // `at`, all written here, and the length takes in only `len` of them.
    unsafe {
        std::ptr::copy_nonoverlapping(piece.as_ptr(), buf.as_mut_ptr().add(at), KEY_PIECE);
        buf.set_len(at + len);
    }
}

/// Appends `v` as postcard's varint: seven bits a byte, low first, the top
/// bit set on every byte but the last.
#[inline]
pub(crate) fn push_varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push(v as u8 | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

/// What a row means in a changelog (Flink's `RowKind`).
///
/// A word wide: a row (a `Vec` and its kind) has the room anyway, and a
/// one-byte kind was stored as a byte and copied, with the row, as a word,
/// a load the CPU cannot serve from the store and stalls on, for every
/// row a function returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[repr(u64)]
pub enum RowKind {
    Insert,
    UpdateBefore,
    UpdateAfter,
    Delete,
}

impl RowKind {
    /// Whether the row takes back an earlier one (`-U`, `-D`).
    pub fn is_retraction(self) -> bool {
        matches!(self, RowKind::UpdateBefore | RowKind::Delete)
    }

    /// `+I`, `-U`, `+U`, `-D`.
    pub fn short(self) -> &'static str {
        match self {
            RowKind::Insert => "+I",
            RowKind::UpdateBefore => "-U",
            RowKind::UpdateAfter => "+U",
            RowKind::Delete => "-D",
        }
    }
}

/// A row of a table or query result, with its changelog kind.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Row {
    pub kind: RowKind,
    pub values: Vec<Value>,
}

impl Row {
    /// Starts loading the row's values into cache (a row made on another
    /// thread is in that core's cache until read). A hint.
    #[inline]
    pub fn prefetch(&self) {
        weir_state::prefetch_slice(&self.values);
    }

    /// An insert-only row.
    pub fn insert(values: impl Into<Vec<Value>>) -> Row {
        Row {
            kind: RowKind::Insert,
            values: values.into(),
        }
    }

    /// The row's values, taken out of it.
    pub fn into_values(mut self) -> Vec<Value> {
        std::mem::take(&mut self.values)
    }

    /// An empty buffer for a row of `n` values: one a dropped row of this
    /// thread gave back, or another thread had too many of, when there is
    /// one.
    ///
    /// A row's values live in their own allocation. Rows come and go a
    /// batch (a thousand or so) at a time, which outruns the allocator's
    /// per-thread cache: each new row then got memory freed a batch ago,
    /// cold in the CPU's caches, and writing it was the largest single cost
    /// of a plain scan. Buffers given back here are reused last-freed
    /// first, still warm.
    pub fn buffer(n: usize) -> Vec<Value> {
        if (1..=POOLED_WIDTH).contains(&n) {
            let reused = FREE_BUFFERS
                .try_with(|free| {
                    let pool = &mut free.borrow_mut().0[n - 1];
                    if pool.is_empty() {
                        take_stashed(n, pool);
                    }
                    let taken = pool.pop();
                    // The buffer two rows on, readied for writing while
                    // this one is filled: handed back by the thread that
                    // read its row, each line's first write waited for
                    // that core to give the line up (more than a quarter
                    // of q16's source thread, in samples).
                    if let Some(next) = pool.iter().rev().nth(BUFFERS_AHEAD - 1) {
                        weir_state::prefetch_range_for_write(
                            next.as_ptr() as usize,
                            n * std::mem::size_of::<Value>(),
                        );
                    }
                    taken
                })
                .ok()
                .flatten();
            if let Some(ptr) = reused {
                // SAFETY: `recycle` kept this pointer of an empty `Vec`
                // whose capacity was `n`, and nothing else holds it.
                return unsafe { Vec::from_raw_parts(ptr.as_ptr(), 0, n) };
            }
        }
        Vec::with_capacity(n)
    }

    /// Gives a row's buffer back for [`Row::buffer`] to reuse: this
    /// thread's, or, when it keeps enough of its width, half of those go
    /// to the other threads (or are freed, when they have enough too).
    pub fn recycle(values: Vec<Value>) {
        keep_buffer(values, &FREE_BUFFERS, |capacity, pool, buffer| {
            if pool.len() >= POOLED_PER_WIDTH {
                stash(capacity, pool);
            }
            pool.push(buffer);
        });
    }

    /// Gives back the buffer of a row made on another thread (one that
    /// came through an exchange) to the rows' makers, through the stash.
    ///
    /// Reading a row leaves its buffer's lines shared with the thread that
    /// wrote them. Kept here, the next row made on this thread would take
    /// it from the top of the pool, and its first store would wait for the
    /// other core to give the line up: a result row of a `GROUP BY` built
    /// that way spent most of its time on that store. The thread that
    /// made the row waits for that instead, when it takes the buffer from
    /// the stash for a new row; a source's thread has time to spare.
    pub fn hand_back(values: Vec<Value>) {
        keep_buffer(values, &HANDED_BACK, |capacity, list, buffer| {
            list.push(buffer);
            if list.len() >= HANDED_BACK_AT_ONCE {
                stash_part(capacity, list, list.len());
            }
        });
    }
}

/// Empties `values` and gives its buffer to `keep` with its capacity and
/// this thread's list of that capacity in `lists`; frees it instead when
/// it is of a width not kept, or the thread is being torn down.
#[inline(always)]
fn keep_buffer(
    mut values: Vec<Value>,
    lists: &'static std::thread::LocalKey<std::cell::RefCell<FreeBuffers>>,
    keep: impl FnOnce(usize, &mut Vec<NonNull<Value>>, NonNull<Value>),
) {
    let capacity = values.capacity();
    if !(1..=POOLED_WIDTH).contains(&capacity) {
        return;
    }
    values.clear();
    let mut values = std::mem::ManuallyDrop::new(values);
    let buffer = NonNull::new(values.as_mut_ptr()).unwrap_or(NonNull::dangling());
    // A thread being torn down keeps nothing.
    let kept = lists
        .try_with(|lists| match lists.try_borrow_mut() {
            Ok(mut lists) => {
                keep(capacity, &mut lists.0[capacity - 1], buffer);
                true
            }
            _ => false,
        })
        .unwrap_or(false);
    if !kept {
        // SAFETY: `values` was not kept, so it is freed here once.
        unsafe { std::mem::ManuallyDrop::drop(&mut values) };
    }
}

/// How many buffers [`Row::hand_back`] gathers before it moves them to the
/// stash, under one lock.
const HANDED_BACK_AT_ONCE: usize = 512;

/// Where an operator's input rows were made, which decides where their
/// buffers go once it has read them: to this thread's pool, or handed
/// back ([`Row::hand_back`]) when they came from another thread.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum InputRows {
    /// Made on the operator's thread, by an operator before it in its
    /// chain.
    #[default]
    Local,
    /// Made by other tasks: the operator heads its own.
    FromOtherThreads,
}

impl InputRows {
    /// Where the input rows of the operator opened with `ctx` are made.
    pub fn of(ctx: &weir::prelude::RuntimeContext) -> InputRows {
        if ctx.heads_task {
            InputRows::FromOtherThreads
        } else {
            InputRows::Local
        }
    }

    /// Gives back the buffer of an input row the operator is done with.
    #[inline]
    pub fn release(self, values: Vec<Value>) {
        match self {
            InputRows::Local => Row::recycle(values),
            InputRows::FromOtherThreads => Row::hand_back(values),
        }
    }
}

/// The widest rows whose buffers are kept for reuse.
const POOLED_WIDTH: usize = 16;
/// How many rows ahead [`Row::buffer`] readies a buffer for writing.
const BUFFERS_AHEAD: usize = 2;
/// How many buffers of each width a thread keeps: a few batches' worth,
/// since a chain of operators holds more than one batch of rows at once
/// (a `GROUP BY` makes two result rows per input row while the input
/// batch's rows are still alive).
const POOLED_PER_WIDTH: usize = 4096;

/// The buffers of dropped rows, by capacity (index `capacity - 1`), each
/// kept as its pointer alone: a buffer is given back and taken again many
/// times per batch, and a `Vec` moved in and out of the pool was stored
/// and reloaded in pieces of different widths, which stalls the CPU.
struct FreeBuffers([Vec<NonNull<Value>>; POOLED_WIDTH]);

impl Drop for FreeBuffers {
    fn drop(&mut self) {
        for (i, kept) in self.0.iter_mut().enumerate() {
            for ptr in kept.drain(..) {
                // SAFETY: each pointer is of an empty `Vec` of capacity
                // `i + 1` that only this pool held.
                drop(unsafe { Vec::from_raw_parts(ptr.as_ptr(), 0, i + 1) });
            }
        }
    }
}

/// Buffers on their way between threads, by capacity, as addresses.
/// Rows made on one thread (a source's) are dropped on another (the
/// operator's after a keyed exchange): the first would allocate a buffer
/// for every row and the second free one, to the first thread's arena of
/// the allocator. A thread whose pool of a width is full moves half of it
/// here, and one whose pool is empty takes a batch from here before it
/// allocates: a lock for a few thousand buffers.
static STASHED: [std::sync::Mutex<Vec<usize>>; POOLED_WIDTH] =
    [const { std::sync::Mutex::new(Vec::new()) }; POOLED_WIDTH];

/// The most buffers of a width on their way between threads (beyond them,
/// buffers are freed): 16 Ki, a few handovers' worth; 6 MiB of the
/// widest, 60 MiB were every width full.
const STASHED_MAX: usize = 1 << 14;

/// Moves half of `pool` (buffers of capacity `capacity`) to the stash,
/// freeing those it has no room for.
fn stash(capacity: usize, pool: &mut Vec<NonNull<Value>>) {
    stash_part(capacity, pool, pool.len() / 2);
}

/// Moves the last `moved` buffers of `pool` (of capacity `capacity`) to
/// the stash, freeing those it has no room for.
fn stash_part(capacity: usize, pool: &mut Vec<NonNull<Value>>, moved: usize) {
    let at = pool.len() - moved;
    let room = match STASHED[capacity - 1].lock() {
        Ok(mut stashed) => {
            let room = STASHED_MAX.saturating_sub(stashed.len()).min(moved);
            stashed.extend(pool[at..at + room].iter().map(|p| p.as_ptr() as usize));
            room
        }
        Err(_) => 0,
    };
    for ptr in pool.drain(at..).skip(room) {
        // SAFETY: each pointer is of an empty `Vec` of capacity
        // `capacity` that only this pool held, and was not stashed.
        drop(unsafe { Vec::from_raw_parts(ptr.as_ptr(), 0, capacity) });
    }
}

/// Takes up to half a pool's worth of stashed buffers of capacity
/// `capacity` into `pool`.
fn take_stashed(capacity: usize, pool: &mut Vec<NonNull<Value>>) {
    let Ok(mut stashed) = STASHED[capacity - 1].lock() else {
        return;
    };
    let from = stashed.len().saturating_sub(POOLED_PER_WIDTH / 2);
    pool.extend(
        stashed
            .drain(from..)
            .filter_map(|a| NonNull::new(a as *mut Value)),
    );
}

thread_local! {
    static FREE_BUFFERS: std::cell::RefCell<FreeBuffers> =
        const { std::cell::RefCell::new(FreeBuffers([const { Vec::new() }; POOLED_WIDTH])) };
    /// Buffers [`Row::hand_back`] gathers for the stash.
    static HANDED_BACK: std::cell::RefCell<FreeBuffers> =
        const { std::cell::RefCell::new(FreeBuffers([const { Vec::new() }; POOLED_WIDTH])) };
}

impl Drop for Row {
    fn drop(&mut self) {
        Row::recycle(std::mem::take(&mut self.values));
    }
}

impl fmt::Display for Row {
    /// As Flink's print connector writes it: `+I[1, abc, NULL]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}[", self.kind.short())?;
        for (i, v) in self.values.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{v}")?;
        }
        f.write_str("]")
    }
}

/// As Flink's `print` connector writes a row: a NULL is `null` there
/// (the row's own text), where a query's results show `NULL`.
impl PrintFormat for Row {
    fn fmt_print(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}[", self.kind.short())?;
        for (i, v) in self.values.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            match v {
                Value::Null => f.write_str("null")?,
                v => write!(f, "{v}")?,
            }
        }
        f.write_str("]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A value of every kind moved into a slot that held a shared string
    /// (dropped) or a number is the same value there.
    #[test]
    fn a_value_moved_into_a_slot_is_that_value() {
        let values = [
            Value::Null,
            Value::Boolean(true),
            Value::Int(-7),
            Value::BigInt(1 << 40),
            Value::Double(2.5),
            Value::decimal(-12345, 2),
            Value::string("short"),
            Value::string(&"long".repeat(10)),
            Value::Bytes(Arc::from(&b"ab"[..])),
            Value::Date(19000),
            Value::Timestamp(1_700_000_000_123),
            Value::TimestampLtz(-5),
            Value::Interval(3_600_000),
        ];
        for v in &values {
            for old in [Value::string(&"old".repeat(10)), Value::BigInt(1)] {
                let mut moved = v.clone();
                let mut slot = old;
                move_into(&mut moved, &mut slot);
                assert_eq!(format!("{slot:?}"), format!("{v:?}"));
            }
        }
    }

    /// A decimal against an integer compares exactly, either way round:
    /// through a double, 2^53 + 1 and 2^53 were equal.
    #[test]
    fn a_decimal_compares_exactly_with_an_integer() {
        use Ordering::*;
        let cases = [
            (Value::decimal(12345, 2), Value::BigInt(123), Greater),
            (Value::decimal(12345, 2), Value::Int(124), Less),
            (Value::decimal(12300, 2), Value::BigInt(123), Equal),
            (Value::decimal(-5, 1), Value::Int(0), Less),
            (
                Value::decimal(9_007_199_254_740_993, 0),
                Value::BigInt(9_007_199_254_740_992),
                Greater,
            ),
            // The integer at the decimal's scale is past an i128.
            (Value::decimal(1, 38), Value::BigInt(i64::MAX), Less),
            (Value::decimal(1, 38), Value::BigInt(i64::MIN), Greater),
        ];
        for (decimal, integer, order) in cases {
            assert_eq!(
                decimal.compare(&integer),
                Some(order),
                "{decimal} vs {integer}"
            );
            assert_eq!(
                integer.compare(&decimal),
                Some(order.reverse()),
                "{integer} vs {decimal}"
            );
        }
        assert_eq!(Value::decimal(1, 0).compare(&Value::Null), None);
    }

    /// A value of each kind, the string (seventh) and bytes (ninth) sharing
    /// `text` and `bytes`.
    fn one_of_each_kind(text: &Arc<str>, bytes: &Arc<[u8]>) -> Vec<Value> {
        vec![
            Value::Null,
            Value::Boolean(true),
            Value::Int(-7),
            Value::BigInt(i64::MIN),
            Value::Double(2.5),
            Value::decimal(i128::MAX, 3),
            Value::String(Str::shared(Arc::clone(text))),
            Value::static_str("static"),
            Value::Bytes(Arc::clone(bytes)),
            Value::Date(19_000),
            Value::Timestamp(1_700_000_000_000),
            Value::TimestampLtz(-1),
            Value::Interval(86_400_000),
        ]
    }

    /// `put_clone` drops what the slot held and leaves an equal value
    /// that holds its own count of a shared string or bytes.
    #[test]
    fn a_value_put_as_a_clone_is_equal_and_owns_its_share() {
        let old: Arc<str> = Arc::from("replaced");
        let text: Arc<str> = Arc::from("shared text");
        let bytes: Arc<[u8]> = Arc::from(&b"\x00\xff"[..]);
        let values = one_of_each_kind(&text, &bytes);
        let mut slots: Vec<Value> = values
            .iter()
            .map(|_| Value::String(Str::shared(Arc::clone(&old))))
            .collect();
        for (slot, v) in slots.iter_mut().zip(&values) {
            put_clone(slot, v);
        }
        assert_eq!(Arc::strong_count(&old), 1, "each slot's value was dropped");
        assert_eq!(format!("{slots:?}"), format!("{values:?}"));
        assert_eq!(Arc::strong_count(&text), 3);
        assert_eq!(Arc::strong_count(&bytes), 3);
        drop(values);
        assert_eq!(
            format!("{:?}", slots[6]),
            format!("{:?}", Value::string("shared text"))
        );
        drop(slots);
        assert_eq!(Arc::strong_count(&text), 1);
        assert_eq!(Arc::strong_count(&bytes), 1);
    }

    #[test]
    fn a_clone_of_each_kind_of_value_is_equal_and_owns_its_share() {
        let text: Arc<str> = Arc::from("shared text");
        let bytes: Arc<[u8]> = Arc::from(&b"\x00\xff"[..]);
        let values = one_of_each_kind(&text, &bytes);
        let clones: Vec<Value> = values.iter().map(Value::clone).collect();
        for (v, c) in values.iter().zip(&clones) {
            assert_eq!(std::mem::discriminant(v), std::mem::discriminant(c));
            assert_eq!(format!("{v:?}"), format!("{c:?}"));
        }
        assert_eq!(Arc::strong_count(&text), 3, "the clone holds a count");
        assert_eq!(Arc::strong_count(&bytes), 3, "the clone holds a count");
        drop(values);
        assert_eq!(Arc::strong_count(&text), 2);
        assert_eq!(
            format!("{:?}", clones[6]),
            format!("{:?}", Value::string("shared text"))
        );
        drop(clones);
        assert_eq!(Arc::strong_count(&text), 1);
        assert_eq!(Arc::strong_count(&bytes), 1);
    }

    #[test]
    fn strings_hold_their_text_and_release_it() {
        let text: Arc<str> = Arc::from("shared text");
        let shared = Str::shared(Arc::clone(&text));
        assert_eq!(Arc::strong_count(&text), 2);
        let copies: Vec<Str> = (0..3).map(|_| shared.clone()).collect();
        assert_eq!(Arc::strong_count(&text), 5);
        assert!(copies.iter().all(|c| &**c == "shared text"));
        drop(copies);
        drop(shared);
        assert_eq!(Arc::strong_count(&text), 1);
        let fixed = Str::from_static("static");
        assert_eq!(&*fixed.clone(), "static");
        assert_eq!(&*Str::from_static(""), "");
        assert_eq!(Value::string("é").to_string(), "é");
    }

    /// The addresses of the buffers for 100 rows of `width` values that a
    /// thread of its own takes.
    fn buffers_a_new_thread_takes(width: usize) -> Vec<usize> {
        std::thread::spawn(move || {
            let buffers: Vec<Vec<Value>> = (0..100).map(|_| Row::buffer(width)).collect();
            buffers
                .iter()
                .map(|b| b.as_ptr() as usize)
                .collect::<Vec<_>>()
        })
        .join()
        .expect("the second thread")
    }

    /// The buffers of rows dropped on one thread, beyond what its pool
    /// keeps, are the buffers another thread's new rows get.
    #[test]
    fn buffers_one_thread_has_too_many_of_go_to_another() {
        // A width no other test's rows have.
        const WIDTH: usize = 14;
        let (given_tx, given_rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        // The first thread stays alive until the second is done: a thread
        // that ended would hand its memory on to the next one anyway.
        let first = std::thread::spawn(move || {
            let buffers: Vec<Vec<Value>> = (0..POOLED_PER_WIDTH * 2)
                .map(|_| Vec::with_capacity(WIDTH))
                .collect();
            let addresses: std::collections::HashSet<usize> =
                buffers.iter().map(|b| b.as_ptr() as usize).collect();
            buffers.into_iter().for_each(Row::recycle);
            given_tx.send(addresses).expect("sent");
            done_rx.recv().expect("the second thread is done");
        });
        let given = given_rx.recv().expect("the first thread's buffers");
        let taken = buffers_a_new_thread_takes(WIDTH);
        done_tx.send(()).expect("sent");
        first.join().expect("the first thread");
        let reused = taken.iter().filter(|a| given.contains(a)).count();
        assert_eq!(reused, taken.len());
    }

    /// A buffer handed back is not the next one its thread takes (as a
    /// recycled one is); gathered, such buffers go to another thread.
    #[test]
    fn buffers_handed_back_go_to_another_thread() {
        // A width no other test's rows have.
        const WIDTH: usize = 15;
        let (given_tx, given_rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let first = std::thread::spawn(move || {
            let one = Vec::<Value>::with_capacity(WIDTH);
            let at = one.as_ptr() as usize;
            Row::hand_back(one);
            let next = Row::buffer(WIDTH);
            let kept_here = next.as_ptr() as usize == at;
            let buffers: Vec<Vec<Value>> = (0..HANDED_BACK_AT_ONCE)
                .map(|_| Vec::with_capacity(WIDTH))
                .collect();
            let mut addresses: std::collections::HashSet<usize> =
                buffers.iter().map(|b| b.as_ptr() as usize).collect();
            addresses.insert(at);
            buffers.into_iter().for_each(Row::hand_back);
            given_tx.send((kept_here, addresses)).expect("sent");
            done_rx.recv().expect("the second thread is done");
            drop(next);
        });
        let (kept_here, given) = given_rx.recv().expect("the first thread's buffers");
        assert!(
            !kept_here,
            "a handed-back buffer was taken again by its thread"
        );
        let taken = buffers_a_new_thread_takes(WIDTH);
        done_tx.send(()).expect("sent");
        first.join().expect("the first thread");
        let reused = taken.iter().filter(|a| given.contains(a)).count();
        assert_eq!(reused, taken.len());
    }

    /// Text up to `INLINE_MAX` bytes is held inline, longer text shared;
    /// either way it reads, compares, hashes, clones and serialises as
    /// the same text static or shared does.
    #[test]
    fn short_strings_are_held_inline_and_act_as_any_string() {
        use std::collections::hash_map::DefaultHasher;
        let hash = |s: &Str| {
            let mut h = DefaultHasher::new();
            s.hash(&mut h);
            h.finish()
        };
        assert_eq!(std::mem::size_of::<Str>(), 16);
        let long = "é-0123456789abcdefghij";
        for end in 0..=long.len() {
            let Some(text) = long.get(..end) else {
                continue;
            };
            let s = Str::new(text);
            assert_eq!(s.is_inline(), text.len() <= INLINE_MAX, "{text:?}");
            assert_eq!(s.is_shared(), text.len() > INLINE_MAX, "{text:?}");
            assert_eq!(&*s, text);
            let copy = s.clone();
            drop(s);
            assert_eq!(&*copy, text);
            let shared = Str::shared(Arc::from(text));
            assert_eq!(copy, shared);
            assert_eq!(hash(&copy), hash(&shared));
            assert_eq!(copy.cmp(&shared), Ordering::Equal);
            let json = serde_json::to_string(&copy).expect("serialises");
            let back: Str = serde_json::from_str(&json).expect("reads back");
            assert_eq!(&*back, text);
            assert_eq!(back.is_inline(), copy.is_inline());
        }
        assert!(INLINE_MAX >= "2015-07-15".len() || !INLINES);
        assert!(matches!(Value::string("2015-07-15"), Value::String(s) if s.is_inline()));
        assert!(Str::new("a") < Str::new("b"));
    }

    #[test]
    fn a_value_is_three_words_and_a_decimal_serialises_as_before() {
        // Rows, keys and accumulators are vectors of values: their size is
        // the engine's memory per row.
        assert_eq!(std::mem::size_of::<Value>(), 24);
        // State written while a DECIMAL held an aligned `i128` reads back.
        let json = serde_json::to_string(&Value::decimal(-1234, 2)).expect("serialises");
        assert_eq!(json, r#"{"Decimal":[-1234,2]}"#);
        let back: Value = serde_json::from_str(&json).expect("reads back");
        assert_eq!(back, Value::decimal(-1234, 2));
        assert_eq!(back.to_string(), "-12.34");
        // Its two words hold all of an `i128`.
        for v in [-1, i128::from(i64::MIN) - 1, 1 << 100, i128::MAX, i128::MIN] {
            assert_eq!(Unscaled::from(v).get(), v);
        }
    }

    #[test]
    fn values_print_as_flink_casts_them_to_strings() {
        assert_eq!(format_double(11.0), "11.0");
        assert_eq!(format_double(0.5), "0.5");
        assert_eq!(format_double(1e7), "1.0E7");
        assert_eq!(format_double(1.5e-4), "1.5E-4");
        assert_eq!(format_double(-2.25), "-2.25");
        assert_eq!(Value::decimal(1234, 2).to_string(), "12.34");
        assert_eq!(Value::decimal(-5, 2).to_string(), "-0.05");
        assert_eq!(Value::decimal(7, 0).to_string(), "7");
        let row = Row::insert(vec![
            Value::BigInt(1),
            Value::string("a b"),
            Value::Null,
            Value::Boolean(true),
            Value::Timestamp(1_586_937_900_000),
        ]);
        assert_eq!(
            row.to_string(),
            "+I[1, a b, NULL, TRUE, 2020-04-15 08:05:00.000]"
        );
        // Flink's `print` connector writes a NULL as the row's own text does.
        struct Printed<'a>(&'a Row);
        impl fmt::Display for Printed<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt_print(f)
            }
        }
        assert_eq!(
            Printed(&row).to_string(),
            "+I[1, a b, null, TRUE, 2020-04-15 08:05:00.000]"
        );
    }

    #[test]
    fn a_dropped_rows_buffer_is_reused_for_a_row_of_its_width() {
        let mut values = Row::buffer(3);
        values.extend([Value::BigInt(1), Value::string("a"), Value::Null]);
        let at = values.as_ptr();
        drop(Row::insert(values));
        // Had the buffer gone back to the allocator, an allocation of its
        // size would be given it now.
        let same_size = Vec::<u8>::with_capacity(3 * std::mem::size_of::<Value>());
        let reused = Row::buffer(3);
        assert_eq!(reused.as_ptr(), at);
        assert_ne!(same_size.as_ptr() as *const Value, at);
        assert!(reused.is_empty() && reused.capacity() == 3);
        // Another width does not take it.
        drop(Row::insert(reused));
        let narrower = Row::buffer(2);
        assert_ne!(narrower.as_ptr(), at);
    }

    #[test]
    fn fields_parse_by_type() {
        assert_eq!(Value::parse("42", SqlType::Int), Ok(Value::Int(42)));
        assert!(Value::parse("", SqlType::BigInt).is_err());
        assert_eq!(Value::parse("", SqlType::String), Ok(Value::string("")));
        assert_eq!(
            Value::parse("12.345", SqlType::Decimal(10, 2)),
            Ok(Value::decimal(1235, 2))
        );
        assert!(Value::parse("123456", SqlType::Decimal(5, 2)).is_err());
        assert!(Value::parse("x", SqlType::Int)
            .unwrap_err()
            .contains("'x' is not a valid INT"));
        assert_eq!(
            Value::parse("2020-04-15 08:05:00", SqlType::Timestamp),
            Ok(Value::Timestamp(1_586_937_900_000))
        );
    }

    #[test]
    fn values_compare_across_numeric_types() {
        assert_eq!(
            Value::Int(2).compare(&Value::BigInt(3)),
            Some(Ordering::Less)
        );
        assert_eq!(
            Value::Int(2).compare(&Value::Double(1.5)),
            Some(Ordering::Greater)
        );
        assert_eq!(
            Value::decimal(150, 2).compare(&Value::decimal(15, 1)),
            Some(Ordering::Equal)
        );
        assert_eq!(Value::Null.compare(&Value::Int(1)), None);
    }
}
