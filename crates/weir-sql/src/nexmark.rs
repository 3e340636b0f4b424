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

use weir::prelude::*;
use weir_nexmark::{Event, EventPool, GeneratorConfig, NexmarkGenerator, Text};

use crate::catalog::TableDef;
use crate::connector::{check_options, connector_error, TableRows};
use crate::error::SqlError;
use crate::expr::Eval;
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

fn text(t: &Text) -> Value {
    match t {
        Text::Shared(s) => Value::String(crate::value::Str::shared(s.clone())),
        Text::Static(s) => Value::static_str(s),
    }
}

fn big(v: u64) -> Value {
    Value::BigInt(v as i64)
}

/// Field `i` (of the table's schema) of `e`, if `e` is of the table.
fn field(e: &Event, table: usize, i: usize) -> Value {
    match (e, table) {
        (Event::Bid(b), 0) => match i {
            0 => big(b.auction),
            1 => big(b.bidder),
            2 => big(b.price),
            3 => text(&b.channel),
            4 => text(&b.url),
            5 => Value::Timestamp(b.date_time),
            _ => text(&b.extra),
        },
        (Event::Auction(a), 1) => match i {
            0 => big(a.id),
            1 => text(&a.item_name),
            2 => text(&a.description),
            3 => big(a.initial_bid),
            4 => big(a.reserve),
            5 => Value::Timestamp(a.date_time),
            6 => Value::Timestamp(a.expires),
            7 => big(a.seller),
            8 => big(a.category),
            _ => text(&a.extra),
        },
        (Event::Person(p), _) => match i {
            0 => big(p.id),
            1 => text(&p.name),
            2 => text(&p.email_address),
            3 => text(&p.credit_card),
            4 => text(&p.city),
            5 => text(&p.state),
            6 => Value::Timestamp(p.date_time),
            _ => text(&p.extra),
        },
        _ => Value::Null,
    }
}

pub(crate) fn nexmark_source(
    env: &StreamExecutionEnvironment,
    table: &TableDef,
    rows: &TableRows,
    physical: &[bool],
) -> Result<DataStream<Row>, SqlError> {
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
    // 'pool.size': the events are replayed from a pool generated up front
    // (as weir-bench's DataStream queries read them), so that a benchmark
    // measures the query, not the generator.
    let pool = match table.option("pool.size") {
        None => None,
        Some(text) => {
            let size: u64 = text.parse().ok().filter(|n| *n > 0).ok_or_else(|| {
                connector_error(table, "'pool.size' must be a positive number of events")
            })?;
            Some(std::sync::Arc::new(EventPool::new(&generator, size)))
        }
    };
    let computed: Vec<Eval> = rows.computed.clone();
    let order = rows.order.clone();
    // Without computed columns each column of the row is a field of the
    // event (the query's columns only, when the scan keeps fewer).
    let plain = computed.is_empty();
    let stream = env
        .from_generator(count, move |i| match &pool {
            Some(pool) => pool.event(i),
            None => generator.event(i),
        })
        .uid(&crate::plan::state_uid(&format!(
            "Source[{}; nexmark]",
            table.name.to_lowercase()
        )))
        .flat_map(move |e: Event, out: &mut Collector<Row>| {
            let of_table = matches!(
                (&e, which),
                (Event::Bid(_), 0) | (Event::Auction(_), 1) | (Event::Person(_), 2)
            );
            if !of_table {
                return;
            }
            if plain {
                let values: Vec<Value> = order
                    .iter()
                    .map(|&p| fields[p].map_or(Value::Null, |f| field(&e, which, f)))
                    .collect();
                out.collect(Row::insert(values));
                return;
            }
            let mut values: Vec<Value> = fields
                .iter()
                .map(|f| f.map_or(Value::Null, |f| field(&e, which, f)))
                .collect();
            {
                let physical = values.len();
                for c in &computed {
                    let v = c(&values[..physical]).unwrap_or(Value::Null);
                    values.push(v);
                }
                values = order.iter().map(|&i| values[i].clone()).collect();
            }
            out.collect(Row::insert(values));
        })
        .name(&format!("Source: {}[nexmark]", table.name));
    Ok(stream)
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
                [_, _] => Ok(Value::Null),
                _ => Err(format!("{COUNT_CHAR} takes (STRING, STRING)")),
            }),
        },
    );
}
