//! The Nexmark queries as Weir jobs, each from the event stream to its
//! results, following the queries' SQL (as in Flink's `nexmark` suite).
//!
//! Streaming joins (q3, q4) key the one event stream by the join key and
//! keep each side in keyed state, which is what a keyed two-input operator
//! does.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use weir::prelude::*;

use crate::generator::NexmarkGenerator;
use crate::model::{Auction, Bid, Event, Person, Text};

/// The queries, by name.
pub const QUERIES: [&str; 13] = [
    "q0", "q1", "q2", "q3", "q4", "q5", "q7", "q8", "q11", "q12", "q14", "q15", "q16",
];

/// Events `0..count` of `generator`, from `parallelism` source subtasks
/// that interleave event numbers (subtask `s` makes `s, s + p, …`, as
/// Nexmark's parallel generators do), with event-time timestamps and
/// watermarks. `count` should be a multiple of the parallelism (else the
/// subtasks' shares overlap at the end).
pub fn events(
    env: &StreamExecutionEnvironment,
    generator: NexmarkGenerator,
    count: u64,
    parallelism: u32,
) -> DataStream<Event> {
    events_from(env, move |n| generator.event(n), count, parallelism)
}

/// As [`events`], with event `n` from `event(n)` (e.g. an
/// [`EventPool`](crate::EventPool)).
pub fn events_from(
    env: &StreamExecutionEnvironment,
    event: impl Fn(u64) -> Event + Send + Sync + 'static,
    count: u64,
    parallelism: u32,
) -> DataStream<Event> {
    let p = u64::from(parallelism.max(1));
    // Where each subtask's index range starts (the generator source gives
    // subtask `s` the range `[s·n/p, (s+1)·n/p)`).
    let starts: Vec<u64> = (0..p).map(|s| s * count / p).collect();
    env.add_parallel_source(
        GeneratorSource::new(count, move |i| event(interleaved(i, &starts))),
        "Nexmark",
    )
    .set_parallelism(parallelism.max(1))
    .assign_timestamps_and_watermarks(
        WatermarkStrategy::for_monotonous_timestamps()
            .with_timestamp_assigner(|e: &Event, _| e.date_time()),
    )
}

/// The event number a subtask emits as index `i`: subtask `s` emits
/// `s, s + p, s + 2p, …`, as Nexmark's parallel generators do.
#[inline]
fn interleaved(i: u64, starts: &[u64]) -> u64 {
    let p = starts.len() as u64;
    if p == 1 {
        return i;
    }
    let s = starts.iter().rposition(|start| *start <= i).unwrap_or(0);
    (i - starts[s]) * p + s as u64
}

/// The bids of the stream.
pub fn bids(events: &DataStream<Event>) -> DataStream<Bid> {
    events.flat_map(|e: Event, out: &mut Collector<Bid>| {
        if let Event::Bid(b) = e {
            out.collect(b);
        }
    })
}

fn auctions(events: &DataStream<Event>) -> DataStream<Auction> {
    events.flat_map(|e: Event, out: &mut Collector<Auction>| {
        if let Event::Auction(a) = e {
            out.collect(*a);
        }
    })
}

fn people(events: &DataStream<Event>) -> DataStream<Person> {
    events.flat_map(|e: Event, out: &mut Collector<Person>| {
        if let Event::Person(p) = e {
            out.collect(*p);
        }
    })
}

/// q0, pass-through: every bid (one operator selects bids, as Flink's
/// plan of the query is one `Calc`).
pub fn q0(events: &DataStream<Event>) -> DataStream<Bid> {
    bids(events)
}

/// A bid with its price in euros (q1, q14).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct EuroBid {
    pub auction: u64,
    pub bidder: u64,
    /// `0.908 × price`, rounded down.
    pub price: u64,
    pub date_time: i64,
    pub extra: Text,
}

/// The dollar-to-euro rate of q1 and q14, in thousandths.
const EURO_PER_MILLE: u64 = 908;

/// q1, currency conversion: bids with `0.908 × price` (selection and
/// projection in one operator, as Flink plans it).
pub fn q1(events: &DataStream<Event>) -> DataStream<EuroBid> {
    events.flat_map(|e: Event, out: &mut Collector<EuroBid>| {
        if let Some(row) = q1_row(e) {
            out.collect(row);
        }
    })
}

/// q1's row of one event, if it is a bid.
#[inline]
pub fn q1_row(e: Event) -> Option<EuroBid> {
    match e {
        Event::Bid(b) => Some(EuroBid {
            auction: b.auction,
            bidder: b.bidder,
            price: b.price * EURO_PER_MILLE / 1000,
            date_time: b.date_time,
            extra: b.extra,
        }),
        _ => None,
    }
}

/// q2, selection: `(auction, price)` of bids on every 123rd auction.
pub fn q2(events: &DataStream<Event>) -> DataStream<(u64, u64)> {
    events.flat_map(|e: Event, out: &mut Collector<(u64, u64)>| {
        if let Some(row) = q2_row(e) {
            out.collect(row);
        }
    })
}

/// q2's row of one event, if it is a bid on every 123rd auction.
#[inline]
pub fn q2_row(e: Event) -> Option<(u64, u64)> {
    match e {
        Event::Bid(b) if b.auction % 123 == 0 => Some((b.auction, b.price)),
        _ => None,
    }
}

/// q3 keeps, per person, the person (once seen) and their auctions that
/// arrived before them.
#[derive(Clone, Default)]
struct LocalItems {
    person: Option<ValueState<(Text, Text, Text)>>,
    waiting: Option<ListState<u64>>,
}

impl KeyedProcessFunction<u64, Event, (Text, Text, Text, u64)> for LocalItems {
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.person = Some(ctx.get_state(&ValueStateDescriptor::new("person"))?);
        self.waiting = Some(ctx.get_list_state(&ListStateDescriptor::new("auctions"))?);
        Ok(())
    }

    fn process_element(
        &mut self,
        e: Event,
        _ctx: &mut ProcessContext<'_, u64>,
        out: &mut Collector<'_, (Text, Text, Text, u64)>,
    ) -> FunctionResult {
        let (person, waiting) = (
            self.person.as_ref().ok_or("not opened")?,
            self.waiting.as_ref().ok_or("not opened")?,
        );
        match e {
            Event::Person(p) => {
                for auction in waiting.get()? {
                    out.collect((p.name.clone(), p.city.clone(), p.state.clone(), auction));
                }
                waiting.clear()?;
                person.update((p.name, p.city, p.state))?;
            }
            Event::Auction(a) => match person.value()? {
                Some((name, city, state)) => out.collect((name, city, state, a.id)),
                None => waiting.add(a.id)?,
            },
            Event::Bid(_) => {}
        }
        Ok(())
    }
}

/// q3, local item suggestion: `(name, city, state, auction)` of auctions in
/// category 10 by sellers in Oregon, Idaho or California (a streaming join
/// on the seller, both sides kept).
pub fn q3(events: &DataStream<Event>) -> DataStream<(Text, Text, Text, u64)> {
    events
        .filter(|e: &Event| match e {
            Event::Person(p) => matches!(&*p.state, "OR" | "ID" | "CA"),
            Event::Auction(a) => a.category == 10,
            Event::Bid(_) => false,
        })
        .key_by(|e: &Event| match e {
            Event::Person(p) => p.id,
            Event::Auction(a) => a.seller,
            Event::Bid(b) => b.bidder,
        })
        .process(LocalItems::default())
}

/// What q4 keeps per auction until it closes.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct OpenAuction {
    /// `(opened, expires, category)` once the auction arrived.
    auction: Option<(i64, i64, u64)>,
    /// The highest valid bid so far.
    best: Option<u64>,
    /// Bids that arrived before their auction: `(time, price)`.
    early: Vec<(i64, u64)>,
}

#[derive(Clone, Default)]
struct ClosingPrices {
    open: Option<ValueState<OpenAuction>>,
}

impl KeyedProcessFunction<u64, Event, (u64, u64)> for ClosingPrices {
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.open = Some(ctx.get_state(&ValueStateDescriptor::new("auction"))?);
        Ok(())
    }

    fn process_element(
        &mut self,
        e: Event,
        ctx: &mut ProcessContext<'_, u64>,
        _out: &mut Collector<'_, (u64, u64)>,
    ) -> FunctionResult {
        let state = self.open.as_ref().ok_or("not opened")?;
        let mut open = state.value()?.unwrap_or_default();
        match e {
            Event::Auction(a) => {
                for (time, price) in std::mem::take(&mut open.early) {
                    if (a.date_time..=a.expires).contains(&time) {
                        open.best = Some(open.best.map_or(price, |b| b.max(price)));
                    }
                }
                open.auction = Some((a.date_time, a.expires, a.category));
                ctx.timer_service().register_event_time_timer(a.expires);
            }
            Event::Bid(b) => match open.auction {
                Some((from, to, _)) if (from..=to).contains(&b.date_time) => {
                    open.best = Some(open.best.map_or(b.price, |p| p.max(b.price)));
                }
                Some(_) => return Ok(()),
                None => open.early.push((b.date_time, b.price)),
            },
            Event::Person(_) => return Ok(()),
        }
        state.update(open)?;
        Ok(())
    }

    fn on_timer(
        &mut self,
        _timestamp: i64,
        _ctx: &mut ProcessContext<'_, u64>,
        out: &mut Collector<'_, (u64, u64)>,
    ) -> FunctionResult {
        let state = self.open.as_ref().ok_or("not opened")?;
        if let Some(OpenAuction {
            auction: Some((_, _, category)),
            best: Some(price),
            ..
        }) = state.value()?
        {
            out.collect((category, price));
        }
        state.clear()?;
        Ok(())
    }
}

/// q4, average closing price per category: each auction's highest bid
/// within its lifetime, when it closes, then the running average (rounded
/// down) per category: `(category, average)` at every close.
pub fn q4(events: &DataStream<Event>) -> DataStream<(u64, u64)> {
    events
        .filter(|e: &Event| !matches!(e, Event::Person(_)))
        .key_by(|e: &Event| match e {
            Event::Auction(a) => a.id,
            Event::Bid(b) => b.auction,
            Event::Person(p) => p.id,
        })
        .process(ClosingPrices::default())
        .key_by(|c: &(u64, u64)| c.0)
        .map(RunningAverage::default())
}

#[derive(Clone, Default)]
struct RunningAverage {
    sum: Option<ValueState<(u64, u64)>>,
}

impl MapFunction<(u64, u64), (u64, u64)> for RunningAverage {
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.sum = Some(ctx.get_state(&ValueStateDescriptor::new("sum"))?);
        Ok(())
    }

    fn map(&mut self, (category, price): (u64, u64)) -> (u64, u64) {
        let Some(state) = self.sum.as_ref() else {
            return (category, price);
        };
        let (sum, n) = state.value().ok().flatten().unwrap_or((0, 0));
        let (sum, n) = (sum + price, n + 1);
        let _ = state.update((sum, n));
        (category, sum / n)
    }
}

/// q5, hot items: per sliding window (10 s every 2 s), the auctions with
/// the most bids: `(auction, bids, window end)`.
pub fn q5(events: &DataStream<Event>) -> DataStream<(u64, u64, i64)> {
    bids(events)
        .key_by(|b: &Bid| b.auction)
        .window(SlidingEventTimeWindows::of(
            Duration::from_secs(10),
            Duration::from_secs(2),
        ))
        .aggregate_with(
            Count,
            |auction: &u64,
             ctx: &mut ProcessWindowContext<'_, TimeWindow>,
             counts: Elements<'_, u64>,
             out: &mut Collector<'_, (u64, u64, i64)>| {
                for n in counts {
                    out.collect((*auction, *n, ctx.window().end));
                }
                Ok(())
            },
        )
        // Every sliding window's counts carry its end - 1: one tumbling
        // window of the slide holds exactly them.
        .window_all(TumblingEventTimeWindows::of(Duration::from_secs(2)))
        .process(
            |_ctx: &mut ProcessWindowContext<'_, TimeWindow>,
             counts: Elements<'_, (u64, u64, i64)>,
             out: &mut Collector<'_, (u64, u64, i64)>| {
                let max = counts.clone().map(|c| c.1).max().unwrap_or(0);
                for c in counts.filter(|c| c.1 == max) {
                    out.collect(*c);
                }
                Ok(())
            },
        )
}

/// Counts elements.
#[derive(Clone, Copy)]
pub struct Count;

impl<T> AggregateFunction<T, u64, u64> for Count {
    fn create_accumulator(&mut self) -> u64 {
        0
    }
    fn add(&mut self, _value: T, acc: &mut u64) {
        *acc += 1;
    }
    fn get_result(&mut self, acc: &u64) -> u64 {
        *acc
    }
    fn merge(&mut self, a: u64, b: u64) -> u64 {
        a + b
    }
}

/// The highest price of a window and the bids that have it.
#[derive(Clone, Copy)]
struct HighestBids;

type Q7 = (u64, u64, u64, i64);

impl AggregateFunction<Bid, (u64, Vec<Q7>), Vec<Q7>> for HighestBids {
    fn create_accumulator(&mut self) -> (u64, Vec<Q7>) {
        (0, Vec::new())
    }
    fn add(&mut self, b: Bid, acc: &mut (u64, Vec<Q7>)) {
        if b.price > acc.0 || acc.1.is_empty() {
            acc.0 = b.price;
            acc.1.clear();
        }
        if b.price == acc.0 {
            acc.1.push((b.auction, b.price, b.bidder, b.date_time));
        }
    }
    fn get_result(&mut self, acc: &(u64, Vec<Q7>)) -> Vec<Q7> {
        acc.1.clone()
    }
    fn merge(&mut self, mut a: (u64, Vec<Q7>), b: (u64, Vec<Q7>)) -> (u64, Vec<Q7>) {
        match a.0.cmp(&b.0) {
            std::cmp::Ordering::Less => b,
            std::cmp::Ordering::Greater => a,
            std::cmp::Ordering::Equal => {
                a.1.extend(b.1);
                a
            }
        }
    }
}

/// q7, highest bid: per 10 s tumbling window, the bids with the highest
/// price: `(auction, price, bidder, time)`.
pub fn q7(events: &DataStream<Event>) -> DataStream<Q7> {
    bids(events)
        .window_all(TumblingEventTimeWindows::of(Duration::from_secs(10)))
        .aggregate(HighestBids)
        .flat_map(|bids: Vec<Q7>, out: &mut Collector<Q7>| {
            for b in bids {
                out.collect(b);
            }
        })
}

/// q8, monitor new users: people who opened an auction in the 10 s
/// tumbling window they registered in: `(id, name, window start)`.
pub fn q8(events: &DataStream<Event>) -> DataStream<(u64, Text, i64)> {
    people(events)
        .co_group(&auctions(events))
        .where_(|p: &Person| p.id)
        .equal_to(|a: &Auction| a.seller)
        .window(TumblingEventTimeWindows::of(Duration::from_secs(10)))
        .apply(
            |_id: &u64,
             people: Vec<&Person>,
             auctions: Vec<&Auction>,
             out: &mut Collector<'_, (u64, Text, i64)>| {
                if auctions.is_empty() {
                    return;
                }
                let mut seen = Vec::new();
                for p in people {
                    let start = TimeWindow::window_start(p.date_time, 0, 10_000);
                    if !seen.contains(&(p.id, start)) {
                        seen.push((p.id, start));
                        out.collect((p.id, p.name.clone(), start));
                    }
                }
            },
        )
}

/// q11, user sessions: bids per bidder per session (10 s gap):
/// `(bidder, bids, start, end)`.
pub fn q11(events: &DataStream<Event>) -> DataStream<(u64, u64, i64, i64)> {
    bids(events)
        .key_by(|b: &Bid| b.bidder)
        .window(EventTimeSessionWindows::with_gap(Duration::from_secs(10)))
        .aggregate_with(
            Count,
            |bidder: &u64,
             ctx: &mut ProcessWindowContext<'_, TimeWindow>,
             counts: Elements<'_, u64>,
             out: &mut Collector<'_, (u64, u64, i64, i64)>| {
                for n in counts {
                    out.collect((*bidder, *n, ctx.window().start, ctx.window().end));
                }
                Ok(())
            },
        )
}

/// q12, processing-time windows: bids per bidder per 10 s of processing
/// time: `(bidder, bids)`.
pub fn q12(events: &DataStream<Event>) -> DataStream<(u64, u64)> {
    bids(events)
        .key_by(|b: &Bid| b.bidder)
        .window(TumblingProcessingTimeWindows::of(Duration::from_secs(10)))
        .aggregate_with(
            Count,
            |bidder: &u64,
             _ctx: &mut ProcessWindowContext<'_, TimeWindow>,
             counts: Elements<'_, u64>,
             out: &mut Collector<'_, (u64, u64)>| {
                for n in counts {
                    out.collect((*bidder, *n));
                }
                Ok(())
            },
        )
}

/// A q14 result.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Q14 {
    pub auction: u64,
    pub bidder: u64,
    /// `0.908 × price`, rounded down.
    pub price: u64,
    /// `dayTime` (8 to 18 h), `nightTime` (up to 6 h or from 20 h) or
    /// `otherTime`, by the UTC hour of the bid.
    pub bid_time_type: &'static str,
    pub date_time: i64,
    /// How often `c` occurs in `extra` (the query's user function).
    pub c_counts: u64,
}

/// q14, calculation: euro prices between 1 M and 50 M, with the time of
/// day and a user function over `extra`.
pub fn q14(events: &DataStream<Event>) -> DataStream<Q14> {
    events.flat_map(|e: Event, out: &mut Collector<Q14>| {
        let Event::Bid(b) = e else {
            return;
        };
        let price = b.price * EURO_PER_MILLE / 1000;
        if price <= 1_000_000 || price >= 50_000_000 {
            return;
        }
        out.collect(Q14 {
            auction: b.auction,
            bidder: b.bidder,
            price,
            bid_time_type: time_type(b.date_time),
            date_time: b.date_time,
            c_counts: count_char(&b.extra, 'c'),
        });
    })
}

/// q14's `CASE` on the hour of the day (UTC).
pub fn time_type(date_time: i64) -> &'static str {
    let hour = date_time.rem_euclid(86_400_000) / 3_600_000;
    match hour {
        8..=18 => "dayTime",
        0..=6 | 20..=23 => "nightTime",
        _ => "otherTime",
    }
}

/// q14's user function: occurrences of `c` in `s`.
pub fn count_char(s: &str, c: char) -> u64 {
    if c.is_ascii() {
        // An ASCII byte of UTF-8 is always that character, never part of
        // another: count bytes, which needs no decoding.
        return count_byte(s.as_bytes(), c as u8);
    }
    s.chars().filter(|x| *x == c).count() as u64
}

/// How many of `bytes` are `b`. Sixteen bytes at a time go into
/// byte-wide counters, one per lane, which the compiler makes one vector
/// compare and add; the lanes are summed before one can overflow. A
/// plain `filter().count()` widens every match to 64 bits and took about
/// three times as long on Nexmark's `extra` texts (about 70 bytes).
fn count_byte(bytes: &[u8], b: u8) -> u64 {
    const LANES: usize = 16;
    let mut total = 0u64;
    let mut lanes = [0u8; LANES];
    let mut steps = 0u8;
    let mut blocks = bytes.chunks_exact(LANES);
    for block in &mut blocks {
        for (lane, &x) in lanes.iter_mut().zip(block) {
            *lane += u8::from(x == b);
        }
        steps += 1;
        if steps == u8::MAX {
            total += lanes.iter().map(|&n| u64::from(n)).sum::<u64>();
            (lanes, steps) = ([0; LANES], 0);
        }
    }
    total += lanes.iter().map(|&n| u64::from(n)).sum::<u64>();
    total + blocks.remainder().iter().filter(|&&x| x == b).count() as u64
}

/// A day's bidding statistics (q15): totals and by price rank (below
/// 10 000, below 1 000 000, from 1 000 000): bids, distinct bidders,
/// distinct auctions.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct DayStats {
    /// The day's first millisecond (UTC).
    pub day: i64,
    /// `[total, rank 1, rank 2, rank 3]`.
    pub bids: [u64; 4],
    pub bidders: [u64; 4],
    pub auctions: [u64; 4],
}

/// q15's price rank of a bid: 1, 2 or 3.
pub fn price_rank(price: u64) -> usize {
    match price {
        p if p < 10_000 => 1,
        p if p < 1_000_000 => 2,
        _ => 3,
    }
}

/// The distinct sets behind [`DayStats`].
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct DaySets {
    bids: [u64; 4],
    bidders: [std::collections::HashSet<u64>; 4],
    auctions: [std::collections::HashSet<u64>; 4],
}

#[derive(Clone, Copy)]
struct BidStatistics;

impl AggregateFunction<Bid, DaySets, DaySets> for BidStatistics {
    fn create_accumulator(&mut self) -> DaySets {
        DaySets::default()
    }
    fn add(&mut self, b: Bid, acc: &mut DaySets) {
        for i in [0, price_rank(b.price)] {
            acc.bids[i] += 1;
            acc.bidders[i].insert(b.bidder);
            acc.auctions[i].insert(b.auction);
        }
    }
    fn get_result(&mut self, acc: &DaySets) -> DaySets {
        acc.clone()
    }
    fn merge(&mut self, mut a: DaySets, b: DaySets) -> DaySets {
        for i in 0..4 {
            a.bids[i] += b.bids[i];
            a.bidders[i].extend(&b.bidders[i]);
            a.auctions[i].extend(&b.auctions[i]);
        }
        a
    }
}

/// q15, bidding statistics per day: bids, distinct bidders and distinct
/// auctions, in total and by price rank, one row when the day ends (Flink's
/// query emits a changelog of updates; this its final rows).
pub fn q15(events: &DataStream<Event>) -> DataStream<DayStats> {
    bids(events)
        .key_by(|b: &Bid| b.date_time.div_euclid(86_400_000))
        .window(TumblingEventTimeWindows::of(Duration::from_secs(86_400)))
        .aggregate_with(
            BidStatistics,
            |_day: &i64,
             ctx: &mut ProcessWindowContext<'_, TimeWindow>,
             sets: Elements<'_, DaySets>,
             out: &mut Collector<'_, DayStats>| {
                for s in sets {
                    out.collect(DayStats {
                        day: ctx.window().start,
                        bids: s.bids,
                        bidders: s.bidders.each_ref().map(|b| b.len() as u64),
                        auctions: s.auctions.each_ref().map(|a| a.len() as u64),
                    });
                }
                Ok(())
            },
        )
}

/// A channel's bidding statistics of a day (q16): q15's, and the last
/// minute of the day a bid came in.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ChannelDayStats {
    pub channel: Text,
    /// The day's last minute (UTC) with a bid of the channel, in minutes
    /// since midnight (SQL's `MAX(DATE_FORMAT(dateTime, 'HH:mm'))`).
    pub minute: i64,
    pub stats: DayStats,
}

#[derive(Clone, Copy)]
struct ChannelStatistics;

/// A channel's day so far: q15's sets, and the latest bid time.
type ChannelDay = (DaySets, i64);

impl AggregateFunction<Bid, ChannelDay, ChannelDay> for ChannelStatistics {
    fn create_accumulator(&mut self) -> ChannelDay {
        (DaySets::default(), i64::MIN)
    }
    fn add(&mut self, b: Bid, acc: &mut ChannelDay) {
        acc.1 = acc.1.max(b.date_time);
        BidStatistics.add(b, &mut acc.0);
    }
    fn get_result(&mut self, acc: &ChannelDay) -> ChannelDay {
        acc.clone()
    }
    fn merge(&mut self, a: ChannelDay, b: ChannelDay) -> ChannelDay {
        (BidStatistics.merge(a.0, b.0), a.1.max(b.1))
    }
}

/// q16, channel statistics: q15's statistics per channel and day, with
/// the last minute of the day a bid came in; one row per channel when the
/// day ends (Flink's query emits a changelog of updates; this its final
/// rows).
pub fn q16(events: &DataStream<Event>) -> DataStream<ChannelDayStats> {
    bids(events)
        .key_by(|b: &Bid| (b.channel.clone(), b.date_time.div_euclid(86_400_000)))
        .window(TumblingEventTimeWindows::of(Duration::from_secs(86_400)))
        .aggregate_with(
            ChannelStatistics,
            |(channel, _day): &(Text, i64),
             ctx: &mut ProcessWindowContext<'_, TimeWindow>,
             days: Elements<'_, ChannelDay>,
             out: &mut Collector<'_, ChannelDayStats>| {
                let day = ctx.window().start;
                for (s, last) in days {
                    out.collect(ChannelDayStats {
                        channel: channel.clone(),
                        minute: (last - day) / 60_000,
                        stats: DayStats {
                            day,
                            bids: s.bids,
                            bidders: s.bidders.each_ref().map(|b| b.len() as u64),
                            auctions: s.auctions.each_ref().map(|a| a.len() as u64),
                        },
                    });
                }
                Ok(())
            },
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `hour` o'clock plus `minutes`, on some day, in ms since the epoch.
    fn at(hour: i64, minutes: i64) -> i64 {
        19_000 * 86_400_000 + hour * 3_600_000 + minutes * 60_000
    }

    #[test]
    fn time_types_follow_the_hours_of_q14() {
        // Nexmark's q14: HOUR 8..=18 is day, <= 6 or >= 20 night, the rest
        // (7 and 19 o'clock) other.
        for (hour, kind) in [
            (0, "nightTime"),
            (6, "nightTime"),
            (7, "otherTime"),
            (8, "dayTime"),
            (18, "dayTime"),
            (19, "otherTime"),
            (20, "nightTime"),
            (23, "nightTime"),
        ] {
            assert_eq!(time_type(at(hour, 0)), kind, "{hour}:00");
            assert_eq!(time_type(at(hour, 59)), kind, "{hour}:59");
        }
        // Before the epoch the hour is still the hour of the day.
        assert_eq!(time_type(-3_600_000), "nightTime"); // 23:00 the day before
    }

    #[test]
    fn count_char_counts_occurrences() {
        assert_eq!(count_char("", 'c'), 0);
        assert_eq!(count_char("abc cc", 'c'), 3);
        assert_eq!(count_char("CCC", 'c'), 0);
        // Multi-byte characters around and as the one counted.
        assert_eq!(count_char("écçc€c", 'c'), 3);
        assert_eq!(count_char("ç€çaç", 'ç'), 3);
        assert_eq!(count_char("ç€çaç", '€'), 1);
        // Lengths around the 16-byte blocks, and past the 255 blocks
        // after which the lane counters are summed, all of one byte.
        for len in (0..70).chain([4_079, 4_080, 4_081, 10_000]) {
            let all = "c".repeat(len);
            assert_eq!(count_char(&all, 'c'), len as u64, "{len} bytes of c");
            let mixed: String = (0..len)
                .map(|i| if i % 3 == 0 { 'c' } else { 'x' })
                .collect();
            assert_eq!(
                count_char(&mixed, 'c'),
                len.div_ceil(3) as u64,
                "{len} bytes, every third a c"
            );
        }
    }

    #[test]
    fn price_ranks_follow_q15() {
        // Rank 1 below 10 000, rank 2 below 1 000 000, rank 3 from there.
        assert_eq!(price_rank(0), 1);
        assert_eq!(price_rank(9_999), 1);
        assert_eq!(price_rank(10_000), 2);
        assert_eq!(price_rank(999_999), 2);
        assert_eq!(price_rank(1_000_000), 3);
        assert_eq!(price_rank(u64::MAX), 3);
    }
}
