//! Each query's output on a generated stream against a plain computation
//! over all its events (collections, no engine).

use std::collections::{BTreeMap, HashMap, HashSet};

use weir::prelude::*;
use weir_nexmark::queries::{self, count_char, time_type, EuroBid, Q14};
use weir_nexmark::{Auction, Bid, Event, GeneratorConfig, NexmarkGenerator, Person, Text};

/// 1 000 events a second, so a short stream spans many windows.
fn generator() -> NexmarkGenerator {
    NexmarkGenerator::new(GeneratorConfig {
        rate: 1_000,
        ..GeneratorConfig::default()
    })
}

const EVENTS: u64 = 60_000;

fn all_events() -> Vec<Event> {
    let g = generator();
    (0..EVENTS).map(|i| g.event(i)).collect()
}

fn all_bids() -> Vec<Bid> {
    all_events()
        .into_iter()
        .filter_map(|e| e.bid().cloned())
        .collect()
}

/// The query's output over the stream, from `p` source subtasks.
fn run<O: Clone + Send + 'static>(
    p: u32,
    query: impl Fn(&DataStream<Event>) -> DataStream<O>,
) -> Vec<O> {
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(p);
    let events = queries::events(&env, generator(), EVENTS, p);
    query(&events)
        .execute_and_collect()
        .expect("the query runs")
}

fn sorted<T: Ord>(mut v: Vec<T>) -> Vec<T> {
    v.sort();
    v
}

#[test]
fn q0_passes_every_bid_through() {
    assert_eq!(run(1, queries::q0), all_bids());
}

#[test]
fn q1_converts_prices() {
    let expected: Vec<EuroBid> = all_bids()
        .into_iter()
        .map(|b| EuroBid {
            auction: b.auction,
            bidder: b.bidder,
            price: b.price * 908 / 1000,
            date_time: b.date_time,
            extra: b.extra,
        })
        .collect();
    assert_eq!(run(1, queries::q1), expected);
}

#[test]
fn q2_selects_every_123rd_auction() {
    let expected: Vec<(u64, u64)> = all_bids()
        .iter()
        .filter(|b| b.auction % 123 == 0)
        .map(|b| (b.auction, b.price))
        .collect();
    assert!(!expected.is_empty());
    assert_eq!(sorted(run(2, queries::q2)), sorted(expected));
}

#[test]
fn q3_joins_local_sellers_with_their_auctions() {
    let events = all_events();
    let people: HashMap<u64, &Person> = events
        .iter()
        .filter_map(|e| match e {
            Event::Person(p) if matches!(&*p.state, "OR" | "ID" | "CA") => Some((p.id, &**p)),
            _ => None,
        })
        .collect();
    let expected: Vec<(Text, Text, Text, u64)> = events
        .iter()
        .filter_map(|e| match e {
            Event::Auction(a) if a.category == 10 => people
                .get(&a.seller)
                .map(|p| (p.name.clone(), p.city.clone(), p.state.clone(), a.id)),
            _ => None,
        })
        .collect();
    assert!(expected.len() > 50, "{}", expected.len());
    assert_eq!(sorted(run(2, queries::q3)), sorted(expected));
}

#[test]
fn q4_averages_closing_prices_per_category() {
    let events = all_events();
    let auctions: Vec<&Auction> = events
        .iter()
        .filter_map(|e| match e {
            Event::Auction(a) => Some(&**a),
            _ => None,
        })
        .collect();
    let mut best: HashMap<u64, u64> = HashMap::new();
    let by_id: HashMap<u64, &Auction> = auctions.iter().map(|a| (a.id, *a)).collect();
    for b in events.iter().filter_map(Event::bid) {
        if let Some(a) = by_id.get(&b.auction) {
            if (a.date_time..=a.expires).contains(&b.date_time) {
                let p = best.entry(a.id).or_insert(0);
                *p = (*p).max(b.price);
            }
        }
    }
    let mut per_category: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    for (id, price) in &best {
        let c = per_category.entry(by_id[id].category).or_default();
        c.0 += price;
        c.1 += 1;
    }
    let out = run(2, queries::q4);
    // One result per closed auction; the last per category is the average
    // over all of them.
    let mut closes: BTreeMap<u64, u64> = BTreeMap::new();
    let mut last: BTreeMap<u64, u64> = BTreeMap::new();
    for (category, avg) in out {
        *closes.entry(category).or_default() += 1;
        last.insert(category, avg);
    }
    let expected_closes: BTreeMap<u64, u64> =
        per_category.iter().map(|(c, (_, n))| (*c, *n)).collect();
    let expected_avg: BTreeMap<u64, u64> = per_category
        .iter()
        .map(|(c, (sum, n))| (*c, sum / n))
        .collect();
    assert_eq!(closes, expected_closes);
    assert_eq!(last, expected_avg);
}

#[test]
fn q5_finds_the_hottest_auctions_of_each_sliding_window() {
    let bids = all_bids();
    let first = bids.iter().map(|b| b.date_time).min().unwrap_or(0);
    let last = bids.iter().map(|b| b.date_time).max().unwrap_or(0);
    let mut expected = Vec::new();
    let mut end = TimeWindow::window_start(first, 0, 2_000) + 2_000;
    while end - 10_000 <= last {
        let mut counts: HashMap<u64, u64> = HashMap::new();
        for b in bids
            .iter()
            .filter(|b| b.date_time >= end - 10_000 && b.date_time < end)
        {
            *counts.entry(b.auction).or_default() += 1;
        }
        if let Some(max) = counts.values().max().copied() {
            for (a, n) in counts.iter().filter(|(_, n)| **n == max) {
                expected.push((*a, *n, end));
            }
        }
        end += 2_000;
    }
    assert!(expected.len() > 20);
    assert_eq!(sorted(run(2, queries::q5)), sorted(expected));
}

#[test]
fn q7_finds_the_highest_bids_of_each_window() {
    let bids = all_bids();
    let mut windows: BTreeMap<i64, Vec<&Bid>> = BTreeMap::new();
    for b in &bids {
        windows
            .entry(TimeWindow::window_start(b.date_time, 0, 10_000))
            .or_default()
            .push(b);
    }
    let mut expected = Vec::new();
    for bids in windows.values() {
        let max = bids.iter().map(|b| b.price).max().unwrap_or(0);
        for b in bids.iter().filter(|b| b.price == max) {
            expected.push((b.auction, b.price, b.bidder, b.date_time));
        }
    }
    assert_eq!(sorted(run(2, queries::q7)), sorted(expected));
}

#[test]
fn q8_finds_people_who_opened_auctions_in_their_first_window() {
    let events = all_events();
    let window = |t: i64| TimeWindow::window_start(t, 0, 10_000);
    let sellers: HashSet<(u64, i64)> = events
        .iter()
        .filter_map(|e| match e {
            Event::Auction(a) => Some((a.seller, window(a.date_time))),
            _ => None,
        })
        .collect();
    let expected: Vec<(u64, Text, i64)> = events
        .iter()
        .filter_map(|e| match e {
            Event::Person(p) if sellers.contains(&(p.id, window(p.date_time))) => {
                Some((p.id, p.name.clone(), window(p.date_time)))
            }
            _ => None,
        })
        .collect();
    assert!(!expected.is_empty());
    assert_eq!(sorted(run(2, queries::q8)), sorted(expected));
}

#[test]
fn q11_counts_bids_per_session() {
    let mut times: BTreeMap<u64, Vec<i64>> = BTreeMap::new();
    for b in all_bids() {
        times.entry(b.bidder).or_default().push(b.date_time);
    }
    let mut expected = Vec::new();
    for (bidder, mut ts) in times {
        ts.sort_unstable();
        let (mut start, mut end, mut n) = (ts[0], ts[0] + 10_000, 0u64);
        for t in ts {
            if t > end {
                expected.push((bidder, n, start, end));
                (start, n) = (t, 0);
            }
            end = end.max(t + 10_000);
            n += 1;
        }
        expected.push((bidder, n, start, end));
    }
    assert_eq!(sorted(run(2, queries::q11)), sorted(expected));
}

#[test]
fn q12_counts_every_bid_of_each_bidder_once() {
    let mut expected: BTreeMap<u64, u64> = BTreeMap::new();
    for b in all_bids() {
        *expected.entry(b.bidder).or_default() += 1;
    }
    let mut got: BTreeMap<u64, u64> = BTreeMap::new();
    for (bidder, n) in run(1, queries::q12) {
        *got.entry(bidder).or_default() += n;
    }
    assert_eq!(got, expected);
}

#[test]
fn q14_filters_and_calculates() {
    let expected: Vec<Q14> = all_bids()
        .into_iter()
        .filter_map(|b| {
            let price = b.price * 908 / 1000;
            (price > 1_000_000 && price < 50_000_000).then(|| Q14 {
                auction: b.auction,
                bidder: b.bidder,
                price,
                bid_time_type: time_type(b.date_time),
                date_time: b.date_time,
                c_counts: count_char(&b.extra, 'c'),
            })
        })
        .collect();
    assert!(!expected.is_empty());
    assert_eq!(run(1, queries::q14), expected);
}

#[test]
fn events_round_trip_through_json_lines() {
    let g = generator();
    let mut buf = Vec::new();
    weir_nexmark::json::write_events(&g, 500, &mut buf).expect("write");
    let text = String::from_utf8(buf).expect("utf-8");
    let back: Vec<Event> = text
        .lines()
        .map(|l| weir_nexmark::json::parse_event(l).expect("parse"))
        .collect();
    assert_eq!(back, (0..500).map(|i| g.event(i)).collect::<Vec<_>>());
    assert!(text
        .lines()
        .next()
        .is_some_and(|l| l.contains(r#""type":"person""#)));
}

/// 1 000 events a second from 23:59 UTC, and how many to read: the
/// stream crosses midnight after a minute.
fn across_midnight() -> (NexmarkGenerator, u64) {
    let midnight = 1_700_000_000_000 - 1_700_000_000_000 % 86_400_000 + 86_400_000;
    let g = NexmarkGenerator::new(GeneratorConfig {
        rate: 1_000,
        base_time: midnight - 60_000,
        ..GeneratorConfig::default()
    });
    (g, 200_000)
}

#[test]
fn q16_reports_each_channels_statistics_per_day() {
    let (g, n) = across_midnight();
    /// Per channel and day: the last bid's time, then bids, bidders and
    /// auctions, in total and per price rank.
    type Day = (i64, [u64; 4], [HashSet<u64>; 4], [HashSet<u64>; 4]);
    let mut days: BTreeMap<(String, i64), Day> = BTreeMap::new();
    for i in 0..n {
        if let Event::Bid(b) = g.event(i) {
            let day = b.date_time.div_euclid(86_400_000) * 86_400_000;
            let d = days.entry((b.channel.to_string(), day)).or_default();
            d.0 = d.0.max(b.date_time);
            for r in [0, queries::price_rank(b.price)] {
                d.1[r] += 1;
                d.2[r].insert(b.bidder);
                d.3[r].insert(b.auction);
            }
        }
    }
    let expected: Vec<(String, i64, queries::DayStats)> = days
        .into_iter()
        .map(|((channel, day), (last, bids, bidders, auctions))| {
            let stats = queries::DayStats {
                day,
                bids,
                bidders: bidders.each_ref().map(|s| s.len() as u64),
                auctions: auctions.each_ref().map(|s| s.len() as u64),
            };
            (channel, (last - day) / 60_000, stats)
        })
        .collect();
    // Both days, and more channels than the four hot ones.
    assert_eq!(
        expected
            .iter()
            .map(|e| e.2.day)
            .collect::<HashSet<_>>()
            .len(),
        2
    );
    assert!(expected.len() > 8, "{} channel days", expected.len());
    // The first day's last minute is 23:59; the second's is past it.
    assert!(expected.iter().any(|e| e.1 == 23 * 60 + 59));
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(2);
    let events = queries::events(&env, g, n, 2);
    let mut got: Vec<(String, i64, queries::DayStats)> = queries::q16(&events)
        .execute_and_collect()
        .expect("the query runs")
        .into_iter()
        .map(|c| (c.channel.to_string(), c.minute, c.stats))
        .collect();
    got.sort_by(|a, b| (&a.0, a.2.day).cmp(&(&b.0, b.2.day)));
    assert_eq!(got, expected);
}

#[test]
fn q15_reports_bidding_statistics_per_day() {
    let (g, n) = across_midnight();
    /// Per day: bids, bidders and auctions, in total and per price rank.
    type Day = ([u64; 4], [HashSet<u64>; 4], [HashSet<u64>; 4]);
    let mut days: BTreeMap<i64, Day> = BTreeMap::new();
    for i in 0..n {
        if let Event::Bid(b) = g.event(i) {
            let d = days
                .entry(b.date_time.div_euclid(86_400_000) * 86_400_000)
                .or_default();
            for r in [0, queries::price_rank(b.price)] {
                d.0[r] += 1;
                d.1[r].insert(b.bidder);
                d.2[r].insert(b.auction);
            }
        }
    }
    assert_eq!(days.len(), 2, "the stream spans midnight");
    let expected: Vec<queries::DayStats> = days
        .into_iter()
        .map(|(day, (bids, bidders, auctions))| queries::DayStats {
            day,
            bids,
            bidders: bidders.each_ref().map(|s| s.len() as u64),
            auctions: auctions.each_ref().map(|s| s.len() as u64),
        })
        .collect();
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(2);
    let events = queries::events(&env, g, n, 2);
    let mut got = queries::q15(&events)
        .execute_and_collect()
        .expect("the query runs");
    got.sort_by_key(|d| d.day);
    assert_eq!(got, expected);
}
