//! The Nexmark queries in SQL (`examples/sql/nexmark/`) against the
//! DataStream versions of `weir-nexmark`, over the same generated events.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use weir::prelude::*;
use weir_nexmark::queries;
use weir_nexmark::{EventPool, GeneratorConfig, NexmarkGenerator};

mod support;

const EVENTS: u64 = 20_000;

/// The rows the SQL query prints, as their values (`+I[a, b]` → `[a, b]`).
fn sql_rows(query: &str) -> Vec<Vec<String>> {
    sql_rows_of(query, EVENTS)
}

fn sql_rows_of(query: &str, events: u64) -> Vec<Vec<String>> {
    inserted(&script(query, events))
}

/// The rows a script's query inserts, as their values.
fn inserted(script: &str) -> Vec<Vec<String>> {
    support::changelog(script)
        .expect("the query runs")
        .iter()
        .filter_map(|l| l.strip_prefix("+I["))
        .map(values)
        .collect()
}

/// `a, b]` → `[a, b]`.
fn values(line: &str) -> Vec<String> {
    line.trim_end_matches(']')
        .split(", ")
        .map(str::to_string)
        .collect()
}

/// What an updating query's changelog leaves: its final rows.
fn sql_table(query: &str, events: u64) -> Vec<Vec<String>> {
    table_of(&script(query, events))
}

/// What an updating script's changelog leaves.
fn table_of(script: &str) -> Vec<Vec<String>> {
    let lines = support::changelog(script).expect("the query runs");
    assert!(
        lines.iter().any(|l| l.starts_with("-U")),
        "the query updates its rows"
    );
    support::materialize(&lines)
        .iter()
        .map(|r| values(&r[1..]))
        .collect()
}

fn script(query: &str, events: u64) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/sql/nexmark")
        .join(format!("{query}.sql"));
    std::fs::read_to_string(&path)
        .expect("the query file")
        .replace(
            "'events.num' = '100000'",
            &format!("'events.num' = '{events}'"),
        )
}

fn events(env: &StreamExecutionEnvironment) -> DataStream<weir_nexmark::Event> {
    queries::events(
        env,
        NexmarkGenerator::new(GeneratorConfig::default()),
        EVENTS,
        1,
    )
}

fn timestamp(ms: i64) -> String {
    // As SQL prints a TIMESTAMP(3). The generator's first event is at
    // 2023-11-14 22:13:20 UTC (1 700 000 000 000 ms) and EVENTS of them at
    // 10 000 a second span two seconds, well within that hour.
    let base = 1_700_000_000_000;
    let off = ms - base;
    let (s, m) = (off / 1000, off % 1000);
    let (h, mi, sec) = (
        22 + (13 * 60 + 20 + s) / 3600,
        (13 * 60 + 20 + s) / 60 % 60,
        (20 + s) % 60,
    );
    format!("2023-11-14 {h:02}:{mi:02}:{sec:02}.{m:03}")
}

fn counted(rows: Vec<Vec<String>>) -> HashMap<Vec<String>, usize> {
    let mut m = HashMap::new();
    for r in rows {
        *m.entry(r).or_insert(0) += 1;
    }
    m
}

#[test]
fn q0_passes_every_bid_through() {
    let env = StreamExecutionEnvironment::new();
    let expected: Vec<Vec<String>> = queries::q0(&events(&env))
        .execute_and_collect()
        .expect("q0")
        .into_iter()
        .map(|b| {
            vec![
                b.auction.to_string(),
                b.bidder.to_string(),
                b.price.to_string(),
                timestamp(b.date_time),
                b.extra.to_string(),
            ]
        })
        .collect();
    assert!(expected.len() > 15_000, "{} bids", expected.len());
    assert_eq!(counted(sql_rows("q0")), counted(expected));
}

#[test]
fn a_table_of_some_bid_fields_in_another_order_reads_each_from_its_field() {
    // The DDL names fields out of Nexmark's order, leaves some out, and
    // adds a computed column (which sends rows through the source's other
    // path: the physical columns first, then the computed ones).
    let events_num = 2_000;
    let script = format!(
        "CREATE TABLE b (extra STRING, url STRING, price BIGINT, auction BIGINT, \
           dateTime TIMESTAMP(3), doubled AS price * 2, \
           WATERMARK FOR dateTime AS dateTime) \
         WITH ('connector' = 'nexmark', 'table' = 'bid', 'events.num' = '{events_num}');\n\
         SELECT auction, url, doubled, extra, dateTime FROM b;"
    );
    let rows: Vec<Vec<String>> = inserted(&script);
    let generator = NexmarkGenerator::new(GeneratorConfig::default());
    let expected: Vec<Vec<String>> = (0..events_num)
        .filter_map(|n| match generator.event(n) {
            weir_nexmark::Event::Bid(b) => Some(vec![
                b.auction.to_string(),
                b.url.to_string(),
                (b.price * 2).to_string(),
                b.extra.to_string(),
                timestamp(b.date_time),
            ]),
            _ => None,
        })
        .collect();
    assert!(expected.len() > 1_500, "{} bids", expected.len());
    assert_eq!(counted(rows), counted(expected));
}

#[test]
fn a_filtered_scan_stamps_the_bids_it_keeps_and_those_it_drops() {
    // The `WHERE` over a string and a number is decided before a bid's row
    // is made. The bids kept must still carry their own event time into
    // the windows, and the watermark must follow the bids dropped: it runs
    // 5 s ahead of the latest bid, after every bid, so a kept bid in the
    // last 5 s of its window is late if any bid before it, kept or not,
    // was 5 s from that window's end.
    let events_num = 2_000;
    let script = format!(
        "SET 'pipeline.auto-watermark-interval' = '0';\n\
         CREATE TABLE b (auction BIGINT, channel STRING, dateTime TIMESTAMP(3), \
           WATERMARK FOR dateTime AS dateTime + INTERVAL '5' SECOND) \
         WITH ('connector' = 'nexmark', 'table' = 'bid', 'events.num' = '{events_num}', \
           'first-event.rate' = '10');\n\
         CREATE VIEW kept AS SELECT auction, dateTime FROM b \
           WHERE channel = 'Google' AND MOD(auction, 2) = 0;\n\
         SELECT window_start, COUNT(*) AS n \
         FROM TABLE(TUMBLE(TABLE kept, DESCRIPTOR(dateTime), INTERVAL '10' SECOND)) \
         GROUP BY window_start, window_end;"
    );
    let sql: Vec<Vec<String>> = inserted(&script);
    let generator = NexmarkGenerator::new(GeneratorConfig {
        rate: 10,
        ..GeneratorConfig::default()
    });
    let (mut watermark, mut late) = (i64::MIN, 0);
    let mut per_window: HashMap<i64, u64> = HashMap::new();
    for n in 0..events_num {
        let weir_nexmark::Event::Bid(b) = generator.event(n) else {
            continue;
        };
        if b.channel.to_string() == "Google" && b.auction % 2 == 0 {
            let start = b.date_time.div_euclid(10_000) * 10_000;
            if start + 10_000 - 1 <= watermark {
                late += 1;
            } else {
                *per_window.entry(start).or_default() += 1;
            }
        }
        watermark = watermark.max(b.date_time + 5_000);
    }
    let expected: Vec<Vec<String>> = per_window
        .into_iter()
        .map(|(start, n)| vec![timestamp(start), n.to_string()])
        .collect();
    assert!(
        expected.len() > 10 && late > 10,
        "{late} late: {expected:?}"
    );
    assert_eq!(counted(sql), counted(expected));
}

#[test]
fn q1_converts_prices_as_the_datastream_query() {
    let env = StreamExecutionEnvironment::new();
    let expected: Vec<Vec<String>> = queries::q1(&events(&env))
        .execute_and_collect()
        .expect("q1")
        .into_iter()
        .map(|b| {
            vec![
                b.auction.to_string(),
                b.bidder.to_string(),
                b.price.to_string(),
            ]
        })
        .collect();
    // SQL's price is the exact DECIMAL 0.908 × price; the DataStream query
    // keeps its integer part.
    let sql: Vec<Vec<String>> = sql_rows("q1")
        .into_iter()
        .map(|r| {
            let whole = r[2].split('.').next().unwrap_or_default().to_string();
            assert!(r[2].contains('.'), "a DECIMAL with scale 3: {}", r[2]);
            vec![r[0].clone(), r[1].clone(), whole]
        })
        .collect();
    assert_eq!(counted(sql), counted(expected));
}

#[test]
fn q2_selects_the_same_bids() {
    let env = StreamExecutionEnvironment::new();
    let expected: Vec<Vec<String>> = queries::q2(&events(&env))
        .execute_and_collect()
        .expect("q2")
        .into_iter()
        .map(|(a, p)| vec![a.to_string(), p.to_string()])
        .collect();
    assert!(!expected.is_empty());
    assert_eq!(counted(sql_rows("q2")), counted(expected));
}

/// The rows of the DataStream q3 over `stream`, as SQL prints them.
fn q3_rows(stream: &DataStream<weir_nexmark::Event>) -> Vec<Vec<String>> {
    queries::q3(stream)
        .execute_and_collect()
        .expect("q3")
        .into_iter()
        .map(|(name, city, state, id)| {
            vec![
                name.to_string(),
                city.to_string(),
                state.to_string(),
                id.to_string(),
            ]
        })
        .collect()
}

#[test]
fn q3_joins_auctions_and_people_as_the_datastream_query() {
    // More events: sellers in those states with category 10 are rare.
    let events = 200_000;
    let env = StreamExecutionEnvironment::new();
    let stream = queries::events(
        &env,
        NexmarkGenerator::new(GeneratorConfig::default()),
        events,
        1,
    );
    let expected = q3_rows(&stream);
    assert!(!expected.is_empty(), "q3 found nothing to compare");
    assert_eq!(counted(sql_rows_of("q3", events)), counted(expected));
}

#[test]
fn q3_over_a_replayed_pool_joins_as_the_datastream_query_over_it() {
    // A 'pool.size' table reads each event where the pool holds it, moved
    // on by its pass: twenty passes of 10 000 events, the people and
    // auctions of each probed by the query's filters.
    let (events, pool) = (200_000, 10_000);
    let replayed = EventPool::new(&NexmarkGenerator::new(GeneratorConfig::default()), pool);
    let env = StreamExecutionEnvironment::new();
    let stream = queries::events_from(&env, move |n| replayed.event(n), events, 1);
    let expected = q3_rows(&stream);
    let ids: HashSet<&str> = expected.iter().map(|r| r[3].as_str()).collect();
    assert!(
        ids.iter()
            .any(|id| id.parse::<u64>().is_ok_and(|id| id >= 1000 + pool / 50 * 3)),
        "q3 found no auction of a later pass: {ids:?}"
    );
    let script = script("q3", events).replace(
        &format!("'events.num' = '{events}'"),
        &format!("'events.num' = '{events}', 'pool.size' = '{pool}'"),
    );
    assert_eq!(counted(inserted(&script)), counted(expected));
}

#[test]
fn q4_ends_with_the_datastream_query_averages() {
    let env = StreamExecutionEnvironment::new();
    // The DataStream query emits each category's running average as
    // auctions close (all of them, at the end of the input); the SQL
    // query's table ends with the same averages.
    let mut last = HashMap::new();
    for (category, average) in queries::q4(&events(&env))
        .execute_and_collect()
        .expect("q4")
    {
        last.insert(category, average);
    }
    let mut expected: Vec<Vec<String>> = last
        .into_iter()
        .map(|(c, a)| vec![c.to_string(), a.to_string()])
        .collect();
    expected.sort();
    assert!(expected.len() >= 5, "{expected:?}");
    let mut sql = sql_table("q4", EVENTS);
    sql.sort();
    assert_eq!(sql, expected);
    // The same with a task on each side of every keyed exchange (Flink's
    // topology): the averages' retractions cross threads in order.
    let split = format!(
        "SET 'pipeline.operator-chaining.chain-keyed-exchanges' = 'false';\n{}",
        script("q4", EVENTS)
    );
    let mut sql = table_of(&split);
    sql.sort();
    assert_eq!(sql, expected);
}

/// The query's events, `events` of them.
fn many_events(env: &StreamExecutionEnvironment, events: u64) -> DataStream<weir_nexmark::Event> {
    queries::events(
        env,
        NexmarkGenerator::new(GeneratorConfig::default()),
        events,
        1,
    )
}

#[test]
fn q7_finds_the_highest_bids_of_the_datastream_query() {
    // 35 s of events: four windows.
    let events = 350_000;
    let env = StreamExecutionEnvironment::new();
    let expected: Vec<Vec<String>> = queries::q7(&many_events(&env, events))
        .execute_and_collect()
        .expect("q7")
        .into_iter()
        .map(|(auction, price, bidder, time)| {
            vec![
                auction.to_string(),
                price.to_string(),
                bidder.to_string(),
                timestamp(time),
            ]
        })
        .collect();
    assert!(expected.len() >= 4, "{expected:?}");
    let sql: Vec<Vec<String>> = sql_rows_of("q7", events)
        .into_iter()
        .map(|r| r[..4].to_vec())
        .collect();
    assert_eq!(counted(sql), counted(expected.clone()));
    // Two scans, each dropping the bids below the maxima it has seen
    // itself, into the join's two subtasks: the same rows.
    let parallel = format!("SET 'parallelism.default' = '2';\n{}", script("q7", events));
    let sql: Vec<Vec<String>> = inserted(&parallel)
        .into_iter()
        .map(|r| r[..4].to_vec())
        .collect();
    assert_eq!(counted(sql), counted(expected));
}

#[test]
fn q8_finds_the_new_sellers_of_the_datastream_query() {
    let events = 350_000;
    let env = StreamExecutionEnvironment::new();
    let expected: Vec<Vec<String>> = queries::q8(&many_events(&env, events))
        .execute_and_collect()
        .expect("q8")
        .into_iter()
        .map(|(id, name, start)| vec![id.to_string(), name.to_string(), timestamp(start)])
        .collect();
    assert!(expected.len() >= 10, "{expected:?}");
    assert_eq!(counted(sql_rows_of("q8", events)), counted(expected));
}

#[test]
fn q11_counts_the_sessions_of_the_datastream_query() {
    let events = 200_000;
    let env = StreamExecutionEnvironment::new();
    let expected: Vec<Vec<String>> = queries::q11(&many_events(&env, events))
        .execute_and_collect()
        .expect("q11")
        .into_iter()
        .map(|(bidder, n, start, end)| {
            vec![
                bidder.to_string(),
                n.to_string(),
                timestamp(start),
                timestamp(end),
            ]
        })
        .collect();
    assert!(
        expected.iter().any(|r| r[1] != "1"),
        "some session has several bids"
    );
    assert_eq!(counted(sql_rows_of("q11", events)), counted(expected));
}

#[test]
fn q14_computes_what_the_datastream_query_computes() {
    let env = StreamExecutionEnvironment::new();
    let expected: Vec<Vec<String>> = queries::q14(&events(&env))
        .execute_and_collect()
        .expect("q14")
        .into_iter()
        .map(|r| {
            vec![
                r.auction.to_string(),
                r.bidder.to_string(),
                r.price.to_string(),
                r.bid_time_type.to_string(),
                timestamp(r.date_time),
                r.c_counts.to_string(),
            ]
        })
        .collect();
    assert!(expected.len() > 1000, "{} rows", expected.len());
    assert!(expected.iter().any(|r| r[5] != "0"), "some extra has a 'c'");
    // SQL's price is the exact DECIMAL; the DataStream query keeps its
    // integer part.
    let sql: Vec<Vec<String>> = sql_rows("q14")
        .into_iter()
        .map(|r| {
            let whole = r[2].split('.').next().unwrap_or_default().to_string();
            vec![
                r[0].clone(),
                r[1].clone(),
                whole,
                r[3].clone(),
                r[4].clone(),
                r[6].clone(),
            ]
        })
        .collect();
    assert_eq!(counted(sql), counted(expected));
}

#[test]
fn q15_ends_with_the_datastream_query_statistics() {
    let env = StreamExecutionEnvironment::new();
    let expected: Vec<Vec<String>> = queries::q15(&events(&env))
        .execute_and_collect()
        .expect("q15")
        .into_iter()
        .map(|d| {
            let mut row = vec![timestamp(d.day)[..10].to_string()];
            for counts in [d.bids, d.bidders, d.auctions] {
                row.extend(counts.iter().map(u64::to_string));
            }
            row
        })
        .collect();
    assert_eq!(expected.len(), 1, "{expected:?}");
    assert!(
        expected[0][1..5].iter().all(|n| n != "0"),
        "{expected:?}: every rank has bids"
    );
    assert_eq!(sql_table("q15", EVENTS), expected);
    // With mini-batch (set in q15.sql) the day's row changes once per
    // bundle of bids, not with each of the ~18 000 bids.
    let lines = support::changelog(&script("q15", EVENTS)).expect("q15 runs");
    let updates = lines.iter().filter(|l| l.starts_with("+U")).count();
    assert!(updates < 2000, "{updates} updates");
}

#[test]
fn q16_ends_with_the_datastream_query_statistics_per_channel() {
    let env = StreamExecutionEnvironment::new();
    let first = 1_700_000_000_000i64;
    let mut expected: Vec<Vec<String>> = queries::q16(&events(&env))
        .execute_and_collect()
        .expect("q16")
        .into_iter()
        .map(|c| {
            // The events span two seconds of one day: the first event's.
            assert_eq!(c.stats.day, first - first % 86_400_000);
            let mut row = vec![
                c.channel.to_string(),
                timestamp(first)[..10].to_string(),
                format!("{:02}:{:02}", c.minute / 60, c.minute % 60),
            ];
            for counts in [c.stats.bids, c.stats.bidders, c.stats.auctions] {
                row.extend(counts.iter().map(u64::to_string));
            }
            row
        })
        .collect();
    expected.sort();
    assert!(expected.len() >= 4, "{expected:?}");
    let mut sql = sql_table("q16", EVENTS);
    sql.sort();
    assert_eq!(sql, expected);
}

#[test]
fn q5_ends_with_the_hot_items_of_the_datastream_query() {
    let events = 100_000;
    let env = StreamExecutionEnvironment::new();
    let expected: Vec<Vec<String>> = queries::q5(&many_events(&env, events))
        .execute_and_collect()
        .expect("q5")
        .into_iter()
        .map(|(auction, n, _end)| vec![auction.to_string(), n.to_string()])
        .collect();
    assert!(expected.len() >= 5, "{expected:?}");
    // Insert-only, as Flink plans it: the per-window maximum is a window
    // aggregation over the counts' windows, and the join a window join.
    let lines = support::changelog(&script("q5", events)).expect("the query runs");
    assert!(lines.iter().all(|l| l.starts_with("+I[")), "{lines:?}");
    let sql = lines
        .iter()
        .filter_map(|l| l.strip_prefix("+I["))
        .map(values)
        .collect();
    assert_eq!(counted(sql), counted(expected));
}

#[test]
fn q12_counts_every_bid_of_each_bidder_once() {
    // Processing-time windows: which window a bid falls in depends on the
    // clock; over all windows each bidder's bids count once.
    let generator = NexmarkGenerator::new(GeneratorConfig::default());
    let mut expected: HashMap<String, u64> = HashMap::new();
    for n in 0..EVENTS {
        if let weir_nexmark::Event::Bid(b) = generator.event(n) {
            *expected.entry(b.bidder.to_string()).or_default() += 1;
        }
    }
    let mut got: HashMap<String, u64> = HashMap::new();
    for row in sql_rows("q12") {
        *got.entry(row[0].clone()).or_default() += row[1].parse::<u64>().expect("a count");
        // The windows are of the wall clock, not of the events' times
        // (all on 2023-11-14).
        assert!(!row[2].starts_with("2023-11-14"), "{row:?}");
    }
    assert_eq!(got, expected);
}
