//! The `nexmark` connector: the Nexmark benchmark's bids, auctions or
//! people as a bounded table, from Weir's deterministic generator (the
//! same events the DataStream queries of `weir-nexmark` read).
//!
//! ```sql
//! CREATE TABLE bid (auction BIGINT, bidder BIGINT, price BIGINT,
//!   channel STRING, url STRING, dateTime TIMESTAMP(3), extra STRING,
//!   WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND
//! ) WITH ('connector' = 'nexmark', 'table' = 'bid', 'events.num' = '1000000');
//! ```

use std::sync::Arc;

use weir::prelude::*;
use weir_nexmark::{
    Auction, Bid, Event, EventKind, EventPool, GeneratorConfig, NexmarkGenerator, Pass, Person,
    Text,
};

use crate::catalog::TableDef;
use crate::connector::{
    check_options, connector_error, Probe, Probes, ScanRows, TableRows, Watermarks,
};
use crate::error::SqlError;
use crate::types::SqlType;
use crate::value::{Row, Value};

/// The columns of each Nexmark table, named as Flink's Nexmark DDL names
/// them.
const BID: &[(&str, SqlType)] = &[
    ("auction", SqlType::BigInt),
    ("bidder", SqlType::BigInt),
    ("price", SqlType::BigInt),
    ("channel", SqlType::String),
    ("url", SqlType::String),
    ("dateTime", SqlType::Timestamp),
    ("extra", SqlType::String),
];
const AUCTION: &[(&str, SqlType)] = &[
    ("id", SqlType::BigInt),
    ("itemName", SqlType::String),
    ("description", SqlType::String),
    ("initialBid", SqlType::BigInt),
    ("reserve", SqlType::BigInt),
    ("dateTime", SqlType::Timestamp),
    ("expires", SqlType::Timestamp),
    ("seller", SqlType::BigInt),
    ("category", SqlType::BigInt),
    ("extra", SqlType::String),
];
const PERSON: &[(&str, SqlType)] = &[
    ("id", SqlType::BigInt),
    ("name", SqlType::String),
    ("emailAddress", SqlType::String),
    ("creditCard", SqlType::String),
    ("city", SqlType::String),
    ("state", SqlType::String),
    ("dateTime", SqlType::Timestamp),
    ("extra", SqlType::String),
];

/// A string field as a value, sharing the event's string.
#[inline(always)]
fn text(t: &Text) -> Value {
    match t {
        Text::Shared(s) => Value::String(crate::value::Str::shared(s.clone())),
        Text::Static(s) => Value::static_str(s),
    }
}

#[inline(always)]
fn big(v: u64) -> Value {
    Value::BigInt(v as i64)
}

/// The most fields a Nexmark table has (auction's ten).
const MOST_FIELDS: usize = 10;

/// Field `f` (of the table's schema) of a bid, an auction or a person, as
/// replayed in pass `pass` (of a pool; the default pass for an event
/// generated).
///
/// Each is built straight into the row's buffer: a value built elsewhere
/// and copied in was read back a piece at a time from stores of other
/// widths, which stalled the CPU on every value.
#[inline(always)]
fn bid_field(b: &Bid, f: usize, pass: &Pass) -> Value {
    match f {
        0 => big(b.auction + pass.auctions),
        1 => big(b.bidder + pass.people),
        2 => big(b.price),
        3 => text(&b.channel),
        4 => text(&b.url),
        5 => Value::Timestamp(b.date_time + pass.ms),
        _ => text(&b.extra),
    }
}

#[inline(always)]
fn auction_field(a: &Auction, f: usize, pass: &Pass) -> Value {
    match f {
        0 => big(a.id + pass.auctions),
        1 => text(&a.item_name),
        2 => text(&a.description),
        3 => big(a.initial_bid),
        4 => big(a.reserve),
        5 => Value::Timestamp(a.date_time + pass.ms),
        6 => Value::Timestamp(a.expires + pass.ms),
        7 => big(a.seller + pass.people),
        8 => big(a.category),
        _ => text(&a.extra),
    }
}

#[inline(always)]
fn person_field(p: &Person, f: usize, pass: &Pass) -> Value {
    match f {
        0 => big(p.id + pass.people),
        1 => text(&p.name),
        2 => text(&p.email_address),
        3 => text(&p.credit_card),
        4 => text(&p.city),
        5 => text(&p.state),
        6 => Value::Timestamp(p.date_time + pass.ms),
        _ => text(&p.extra),
    }
}

/// Where each value of a row comes from: a field of the event, or nothing
/// (NULL). A field's last use is `Last`, any use before it `Again` (read
/// again later): a row with no `Again` is built by [`Slots`].
#[derive(Clone, Copy)]
enum FieldUse {
    Null,
    Again(usize),
    Last(usize),
}

/// The uses of `fields` in order, each field's last one a [`FieldUse::Last`].
fn field_uses(fields: impl DoubleEndedIterator<Item = Option<usize>>) -> Vec<FieldUse> {
    let mut seen = [false; MOST_FIELDS];
    let mut uses: Vec<FieldUse> = fields
        .rev()
        .map(|f| match f {
            None => FieldUse::Null,
            Some(f) if seen[f] => FieldUse::Again(f),
            Some(f) => {
                seen[f] = true;
                FieldUse::Last(f)
            }
        })
        .collect();
    uses.reverse();
    uses
}

/// Where each field of an event goes in its row, when no field is read
/// twice: the row is then built by straight-line code that writes each
/// field it reads into its place (a loop over [`FieldUse`]s jumps through
/// a table per value, and that jump was the costliest part of a scan).
#[derive(Clone, Debug)]
struct Slots {
    /// The row position of each field (`None`: not read).
    at: [Option<u8>; MOST_FIELDS],
    /// The positions that hold NULL.
    nulls: Vec<u8>,
    len: usize,
}

impl Slots {
    /// The slots of `uses`, if no field is read twice.
    fn of(uses: &[FieldUse]) -> Option<Slots> {
        let mut at = [None; MOST_FIELDS];
        let mut nulls = Vec::new();
        for (p, u) in uses.iter().enumerate() {
            let p = u8::try_from(p).ok()?;
            match *u {
                FieldUse::Null => nulls.push(p),
                FieldUse::Last(f) if at[f].is_none() => at[f] = Some(p),
                FieldUse::Last(_) | FieldUse::Again(_) => return None,
            }
        }
        Some(Slots {
            at,
            nulls,
            len: uses.len(),
        })
    }
}

/// `values`, an empty buffer with room for them, with each field `slots`
/// places (made by `field`) and the NULLs in place.
#[inline(always)]
fn place<const FIELDS: usize>(
    values: Vec<Value>,
    slots: &Slots,
    mut field: impl FnMut(usize) -> Value,
) -> Vec<Value> {
    // The buffer is taken apart and put together again at the end, so that
    // its parts stay in registers and the row's `Vec` is written once,
    // whole. Kept in memory and moved out, it was stored in pieces of one
    // width and read back in another, which stalled the CPU on every row.
    let mut values = std::mem::ManuallyDrop::new(values);
    let (ptr, capacity) = (values.as_mut_ptr(), values.capacity());
    assert!(values.is_empty() && slots.len <= capacity);
    // A loop of a constant count: unrolled, each `field(f)` is the one
    // field's code, with no jump through a table.
    for f in 0..FIELDS {
        if let Some(p) = slots.at[f] {
            // SAFETY: `p < slots.len <= capacity`, and nothing is there yet.
            unsafe { ptr.add(p as usize).write(field(f)) };
        }
    }
    for &p in &slots.nulls {
        // SAFETY: as above.
        unsafe { ptr.add(p as usize).write(Value::Null) };
    }
    // SAFETY: the buffer's own pointer and capacity; `Slots::of` gave each
    // of the positions `0..len` to exactly one field or NULL, so all of
    // them were written above.
    unsafe { Vec::from_raw_parts(ptr, slots.len, capacity) }
}

/// How a row is built of an event's fields.
#[derive(Clone)]
enum Build {
    Slots(Slots),
    Uses(Vec<FieldUse>),
}

impl Build {
    fn of(uses: Vec<FieldUse>) -> Build {
        match Slots::of(&uses) {
            Some(slots) => Build::Slots(slots),
            None => Build::Uses(uses),
        }
    }

    /// The row values of `e` as pass `pass` replays it, if it is of table
    /// `table`, in a buffer with room for `more` values after them.
    #[inline(always)]
    fn values(&self, e: &Event, pass: &Pass, table: usize, more: usize) -> Option<Vec<Value>> {
        Some(match (e, table) {
            (Event::Bid(b), 0) => self.fill::<{ BID.len() }>(more, |f| bid_field(b, f, pass)),
            (Event::Auction(a), 1) => {
                self.fill::<{ AUCTION.len() }>(more, |f| auction_field(a, f, pass))
            }
            (Event::Person(p), 2) => {
                self.fill::<{ PERSON.len() }>(more, |f| person_field(p, f, pass))
            }
            _ => return None,
        })
    }

    /// The values `field` gives for each use, in a buffer with room for
    /// `more` values after them.
    #[inline(always)]
    fn fill<const FIELDS: usize>(
        &self,
        more: usize,
        mut field: impl FnMut(usize) -> Value,
    ) -> Vec<Value> {
        match self {
            Build::Slots(slots) => place::<FIELDS>(Row::buffer(slots.len + more), slots, field),
            Build::Uses(uses) => {
                let mut values = Row::buffer(uses.len() + more);
                // One `extend` of a known length: each value is written
                // straight into the buffer (a `push` per value, which may
                // grow the buffer, built each value on the stack first).
                values.extend(uses.iter().map(|u| match *u {
                    FieldUse::Null => Value::Null,
                    FieldUse::Again(f) | FieldUse::Last(f) => field(f),
                }));
                values
            }
        }
    }
}

/// The probes of a Nexmark table's rows: a few of an event's fields
/// copied into a stand-in row, without making the event's row.
#[derive(Clone)]
struct EventProbes {
    /// The table (0 bid, 1 auction, 2 person).
    which: usize,
    /// Where each value of the row comes from.
    uses: Vec<FieldUse>,
}

/// A probe of some of an event's fields: where each goes in the row.
#[derive(Clone)]
struct EventProbe {
    which: usize,
    at: [Option<u8>; MOST_FIELDS],
}

impl Probes<Event> for EventProbes {
    type Probe = EventProbe;

    fn probe(&self, columns: &[bool]) -> Option<(EventProbe, Row)> {
        if columns.len() != self.uses.len() {
            return None;
        }
        let mut at = [None; MOST_FIELDS];
        for (p, u) in self.uses.iter().enumerate().filter(|(p, _)| columns[*p]) {
            match *u {
                FieldUse::Null => {}
                // A field in two of the probed columns: not one place.
                FieldUse::Again(f) | FieldUse::Last(f) if at[f].is_some() => return None,
                FieldUse::Again(f) | FieldUse::Last(f) => at[f] = Some(u8::try_from(p).ok()?),
            }
        }
        let probe = EventProbe {
            which: self.which,
            at,
        };
        Some((probe, Row::insert(vec![Value::Null; self.uses.len()])))
    }
}

impl EventProbe {
    /// Copies the probed fields of `e`, as pass `pass` replays it, into
    /// their places in `row`; false if `e` is of another table.
    #[inline(always)]
    fn copy(&self, e: &Event, pass: &Pass, row: &mut Row) -> bool {
        // A loop of a constant count, unrolled as in `place`; the fields
        // are copied, since the event may yet be made into its row.
        #[inline(always)]
        fn copy<const FIELDS: usize>(
            at: &[Option<u8>; MOST_FIELDS],
            values: &mut [Value],
            mut field: impl FnMut(usize) -> Value,
        ) {
            for (f, p) in at.iter().enumerate().take(FIELDS) {
                if let Some(p) = p {
                    let slot: *mut Value = &mut values[*p as usize];
                    // Written in place, as `place` writes: a value built on
                    // the stack and assigned was read back in other widths
                    // than it was stored in, which stalled every probe.
                    // SAFETY: `slot` is a live value of `values`, dropped
                    // once and written again at once; a field is a copy of
                    // a number or a string, whose making does not unwind
                    // (a failed allocation aborts).
                    unsafe {
                        std::ptr::drop_in_place(slot);
                        slot.write(field(f));
                    }
                }
            }
        }
        let values = &mut row.values;
        match (e, self.which) {
            (Event::Bid(b), 0) => {
                copy::<{ BID.len() }>(&self.at, values, |f| bid_field(b, f, pass))
            }
            (Event::Auction(a), 1) => {
                copy::<{ AUCTION.len() }>(&self.at, values, |f| auction_field(a, f, pass))
            }
            (Event::Person(p), 2) => {
                copy::<{ PERSON.len() }>(&self.at, values, |f| person_field(p, f, pass))
            }
            _ => return false,
        }
        true
    }
}

impl Probe<Event> for EventProbe {
    #[inline(always)]
    fn probe(&self, e: &mut Event, row: &mut Row) -> Result<bool, String> {
        Ok(self.copy(e, &Pass::default(), row))
    }
}

/// The probes of a Nexmark table replayed from a pool: its records are
/// event numbers, each read in place in the pool.
#[derive(Clone)]
struct PoolProbes {
    probes: EventProbes,
    pool: Arc<EventPool>,
}

/// A probe of a pooled event's fields.
#[derive(Clone)]
struct PoolProbe {
    probe: EventProbe,
    pool: Arc<EventPool>,
}

impl Probes<u64> for PoolProbes {
    type Probe = PoolProbe;

    fn probe(&self, columns: &[bool]) -> Option<(PoolProbe, Row)> {
        let (probe, row) = self.probes.probe(columns)?;
        let pool = self.pool.clone();
        Some((PoolProbe { probe, pool }, row))
    }
}

impl Probe<u64> for PoolProbe {
    #[inline(always)]
    fn probe(&self, n: &mut u64, row: &mut Row) -> Result<bool, String> {
        let (e, pass) = self.pool.get(*n);
        Ok(self.probe.copy(e, &pass, row))
    }
}

pub(crate) fn nexmark_source(
    env: &StreamExecutionEnvironment,
    table: &TableDef,
    rows: &TableRows,
    physical: &[bool],
    watermarks: Option<Watermarks>,
) -> Result<ScanRows, SqlError> {
    check_options(
        table,
        &[
            "connector",
            "table",
            "events.num",
            "first-event.rate",
            "pool.size",
        ],
    )?;
    let (which, schema) = match table.option("table") {
        Some("bid") => (0, BID),
        Some("auction") => (1, AUCTION),
        Some("person") => (2, PERSON),
        Some(other) => {
            return Err(connector_error(
                table,
                format!("'table' must be bid, auction or person, not '{other}'"),
            ))
        }
        None => {
            return Err(connector_error(
                table,
                "the option 'table' (bid, auction or person) is missing",
            ))
        }
    };
    let count: u64 = table
        .option("events.num")
        .ok_or_else(|| connector_error(table, "the option 'events.num' is missing"))?
        .parse()
        .map_err(|_| connector_error(table, "'events.num' must be a number of events"))?;
    let mut config = GeneratorConfig::default();
    if let Some(rate) = table.option("first-event.rate") {
        config.rate = rate.parse().ok().filter(|r| *r > 0).ok_or_else(|| {
            connector_error(table, "'first-event.rate' must be a positive number")
        })?;
    }
    // Each declared physical column is a field of the Nexmark table.
    let mut fields = Vec::new();
    for (name, ty) in table.physical() {
        let Some(i) = schema
            .iter()
            .position(|(f, _)| f.eq_ignore_ascii_case(name))
        else {
            return Err(connector_error(
                table,
                format!(
                    "'{name}' is not a column of Nexmark's {} table ({})",
                    table.option("table").unwrap_or_default(),
                    schema
                        .iter()
                        .map(|(f, _)| *f)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        };
        if schema[i].1 != ty {
            return Err(connector_error(
                table,
                format!("column '{name}' is {} in Nexmark, not {ty}", schema[i].1),
            ));
        }
        fields.push(i);
    }
    // Fields the query does not read stay NULL: building them (their
    // strings above all) is most of a source's work.
    let fields: Vec<Option<usize>> = fields
        .into_iter()
        .zip(physical)
        .map(|(f, read)| read.then_some(f))
        .collect();
    let generator = NexmarkGenerator::new(config);
    let kind = [EventKind::Bid, EventKind::Auction, EventKind::Person][which];
    // 'pool.size': the events are replayed from a pool generated up front
    // (as weir-bench's DataStream queries read them), so that a benchmark
    // measures the query, not the generator.
    let pool = match table.option("pool.size") {
        None => None,
        Some(text) => {
            let size: u64 = text.parse().ok().filter(|n| *n > 0).ok_or_else(|| {
                connector_error(table, "'pool.size' must be a positive number of events")
            })?;
            Some(Arc::new(EventPool::of_kind(&generator, size, kind)))
        }
    };
    let computed = rows.computed.clone();
    let order = rows.order.clone();
    // Without computed columns each column of the row is a field of the
    // event (the query's columns only, when the scan keeps fewer).
    let plain = computed.is_empty();
    let uses = if plain {
        field_uses(order.iter().map(|&p| fields[p]))
    } else {
        field_uses(fields.iter().copied())
    };
    // Only a row of the event's fields as they are can be probed: a
    // computed column is computed from the whole row.
    let probes = plain.then(|| EventProbes {
        which,
        uses: uses.clone(),
    });
    let build = Build::of(uses);
    // Each event becomes its row in the operator that stamps and filters
    // it, so that the row is still in the CPU's caches there.
    let row_of = move |e: &Event, pass: &Pass| {
        let Some(mut values) = build.values(e, pass, which, computed.len()) else {
            return Ok(None);
        };
        if !plain {
            computed.append(&mut values)?;
            values = crate::connector::in_declared_order(values, &order);
        }
        Ok(Some(Row::insert(values)))
    };
    // The table's own events only: the others are never generated (a
    // source of people skips 49 events in 50). Its position counts its
    // own events, so its uid names them.
    let uid = crate::plan::state_uid(&format!(
        "Source[{}; nexmark, {kind:?} events]",
        table.name.to_lowercase()
    ));
    let name = format!("Source: {}[nexmark]", table.name);
    let total = kind.count(count);
    Ok(match pool {
        // A pooled event is read where the pool holds it: the source
        // emits its number, not a copy of the event.
        Some(pool) => {
            let numbers = env
                .from_generator(total, move |i| kind.nth(i))
                .uid(&uid)
                .name(&name);
            let probes = probes.map(|probes| PoolProbes {
                probes,
                pool: pool.clone(),
            });
            let make = move |n: u64| {
                let (e, pass) = pool.get(n);
                row_of(e, &pass)
            };
            ScanRows::new(&table.name, numbers, make, probes, watermarks)
        }
        None => {
            let events = env
                .from_generator(total, move |i| generator.event(kind.nth(i)))
                .uid(&uid)
                .name(&name);
            let make = move |e: Event| row_of(&e, &Pass::default());
            ScanRows::new(&table.name, events, make, probes, watermarks)
        }
    })
}

/// The identifier Nexmark's queries create their user function with
/// (`CREATE FUNCTION count_char AS '…CountChar'`, q14).
pub(crate) const COUNT_CHAR: &str = "com.github.nexmark.flink.udf.CountChar";

/// Nexmark's user functions: `CountChar(s, c)`, how often the character
/// `c` occurs in `s` (BIGINT).
pub(crate) fn register_functions(functions: &mut crate::function::Functions) {
    functions.add(
        COUNT_CHAR,
        crate::function::ScalarFunction {
            result: SqlType::BigInt,
            body: std::sync::Arc::new(|args: &[Value]| match args {
                [Value::String(s), Value::String(c)] => {
                    let n = c
                        .chars()
                        .next()
                        .map_or(0, |c| weir_nexmark::queries::count_char(s, c));
                    Ok(Value::BigInt(n as i64))
                }
                // The suite's function counts nothing in a NULL string.
                [Value::Null, _] => Ok(Value::BigInt(0)),
                [_, _] => Ok(Value::Null),
                _ => Err(format!("{COUNT_CHAR} takes (STRING, STRING)")),
            }),
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bid() -> Bid {
        Bid {
            auction: 7,
            bidder: 8,
            price: 9,
            channel: Text::Static("c"),
            url: Text::Shared(std::sync::Arc::from("u")),
            date_time: 10,
            extra: Text::Shared(std::sync::Arc::from("x")),
        }
    }

    #[test]
    fn count_char_counts_as_the_suites_function() {
        let mut functions = crate::function::Functions::default();
        register_functions(&mut functions);
        let f = functions.get(COUNT_CHAR).expect("registered");
        let count = |s: Value| (f.body)(&[s, Value::string("c")]);
        assert_eq!(count(Value::string("accept")), Ok(Value::BigInt(2)));
        assert_eq!(count(Value::Null), Ok(Value::BigInt(0)));
        assert!((f.body)(&[Value::Null]).is_err());
    }

    #[test]
    fn a_field_read_twice_is_read_again_then_last() {
        let uses = field_uses([Some(4), None, Some(0), Some(4)].into_iter());
        assert!(matches!(
            uses[..],
            [
                FieldUse::Again(4),
                FieldUse::Null,
                FieldUse::Last(0),
                FieldUse::Last(4)
            ]
        ));
        let build = Build::of(uses);
        assert!(matches!(build, Build::Uses(_)));
        let values = build
            .values(&Event::Bid(bid()), &Pass::default(), 0, 0)
            .expect("a bid");
        assert_eq!(
            values,
            vec![
                Value::string("u"),
                Value::Null,
                Value::BigInt(7),
                Value::string("u")
            ]
        );
    }

    #[test]
    fn fields_read_once_are_placed_where_the_row_wants_them() {
        let build = Build::of(field_uses([Some(6), None, Some(0), Some(2)].into_iter()));
        assert!(matches!(build, Build::Slots(_)));
        let values = build
            .values(&Event::Bid(bid()), &Pass::default(), 0, 1)
            .expect("a bid");
        assert_eq!(
            values,
            vec![
                Value::string("x"),
                Value::Null,
                Value::BigInt(7),
                Value::BigInt(9)
            ]
        );
        assert!(values.capacity() >= 5, "room for a computed column");
        assert!(build
            .values(&Event::Bid(bid()), &Pass::default(), 1, 0)
            .is_none());
    }

    #[test]
    fn a_probe_copies_the_columns_asked_for_into_their_places() {
        // Row: extra, NULL, auction, price, auction again.
        let probes = EventProbes {
            which: 0,
            uses: field_uses([Some(6), None, Some(0), Some(2), Some(0)].into_iter()),
        };
        let (probe, mut row) = probes
            .probe(&[true, false, false, true, true])
            .expect("a probe");
        let mut event = Event::Bid(bid());
        assert_eq!(probe.probe(&mut event, &mut row), Ok(true));
        assert_eq!(
            row.values,
            vec![
                Value::string("x"),
                Value::Null,
                Value::Null,
                Value::BigInt(9),
                Value::BigInt(7)
            ]
        );
        // Copied: the event still makes its whole row.
        let Event::Bid(b) = &event else {
            panic!("a bid")
        };
        assert_eq!(b.extra.to_string(), "x");
        // Probed again, the values are replaced, not added to.
        assert_eq!(probe.probe(&mut event, &mut row), Ok(true));
        assert_eq!(row.values.len(), 5);
        assert!(
            probes.probe(&[true; 5]).is_none(),
            "auction in two probed columns: no one place to copy it to"
        );
        assert!(probes.probe(&[true; 4]).is_none(), "columns of another row");
        let auctions = EventProbes {
            which: 1,
            uses: probes.uses.clone(),
        };
        let (probe, mut row) = auctions
            .probe(&[true, false, true, false, false])
            .expect("a probe");
        assert_eq!(
            probe.probe(&mut Event::Bid(bid()), &mut row),
            Ok(false),
            "a bid is not an auction"
        );
    }

    #[test]
    fn an_event_of_another_table_gives_no_row() {
        // Field 0 twice: built by its uses, not by slots.
        let build = Build::of(field_uses([Some(0), Some(0)].into_iter()));
        assert!(matches!(build, Build::Uses(_)));
        for table in [1, 2] {
            let bid = Event::Bid(bid());
            assert!(build.values(&bid, &Pass::default(), table, 0).is_none());
        }
    }

    #[test]
    fn a_pooled_event_makes_the_row_of_the_event_it_replays() {
        let generator = NexmarkGenerator::new(GeneratorConfig::default());
        // Every field of each table, so each field's pass shift is read.
        for (table, kind, schema) in [
            (0, EventKind::Bid, BID),
            (1, EventKind::Auction, AUCTION),
            (2, EventKind::Person, PERSON),
        ] {
            let pool = EventPool::of_kind(&generator, 1_000, kind);
            let build = Build::of(field_uses((0..schema.len()).map(Some)));
            let probes = EventProbes {
                which: table,
                uses: field_uses((0..schema.len()).map(Some)),
            };
            let pooled = PoolProbes {
                probes: probes.clone(),
                pool: Arc::new(pool.clone()),
            };
            let columns = vec![true; schema.len()];
            let (probe, mut probed) = Probes::<u64>::probe(&pooled, &columns).expect("a probe");
            // The first pass and the third (ids and times moved on).
            for i in [0, 1, 2, 3, 2_000, 2_001, 2_002, 2_003] {
                let mut n = kind.nth(i);
                let (e, pass) = pool.get(n);
                let replayed = pool.event(n);
                let made = build.values(e, &pass, table, 0).expect("its table's event");
                let expected = build
                    .values(&replayed, &Pass::default(), table, 0)
                    .expect("its table's event");
                assert_eq!(made, expected, "event {n}");
                assert_eq!(probe.probe(&mut n, &mut probed), Ok(true));
                assert_eq!(probed.values, expected, "event {n} probed");
                if i >= 2_000 {
                    assert_ne!(made, build.values(e, &Pass::default(), table, 0).unwrap());
                }
            }
        }
    }
}
