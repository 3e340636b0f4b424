//! The Nexmark event generator, after the published model (Beam's and
//! Flink's `nexmark` generators): event `n` depends on `n` alone (a
//! `java.util.Random` seeded with the event id), so any subtask can
//! generate any range, and the stream is the same for a seed at any speed.
//!
//! - Of every 50 events, 1 is a person, 3 are auctions, 46 are bids.
//! - Bids go to a hot auction half the time (the first of the latest
//!   hundred), and come from a hot bidder three times in four; auctions
//!   have a hot seller three times in four.
//! - Prices are log-uniform (`10^(6u) * 100`); four hot channels take half
//!   the bids.
//! - `extra` pads people, auctions and bids to 200, 500 and 100 bytes on
//!   average.
//! - Event time advances by `1 / rate` per event from a fixed base time,
//!   however fast the events are produced.
//!
//! Random letters are slices of one static buffer rather than fresh
//! strings: the same lengths and distribution of sizes, without an
//! allocation per event.

use std::sync::OnceLock;

use crate::model::{Auction, Bid, Event, Person};
use crate::random::JavaRandom;
use crate::text::Text;

const PERSON_PROPORTION: u64 = 1;
const AUCTION_PROPORTION: u64 = 3;
const BID_PROPORTION: u64 = 46;
const TOTAL_PROPORTION: u64 = PERSON_PROPORTION + AUCTION_PROPORTION + BID_PROPORTION;

/// The three kinds of Nexmark events, each at fixed places of every 50
/// events of the stream (one person, three auctions, 46 bids).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    Person,
    Auction,
    Bid,
}

impl EventKind {
    /// The first place of this kind's events in every 50, and how many.
    fn places(self) -> (u64, u64) {
        match self {
            EventKind::Person => (0, PERSON_PROPORTION),
            EventKind::Auction => (PERSON_PROPORTION, AUCTION_PROPORTION),
            EventKind::Bid => (PERSON_PROPORTION + AUCTION_PROPORTION, BID_PROPORTION),
        }
    }

    /// How many of the events `0..events` are of this kind.
    pub fn count(self, events: u64) -> u64 {
        let (first, each) = self.places();
        events / TOTAL_PROPORTION * each
            + (events % TOTAL_PROPORTION).saturating_sub(first).min(each)
    }

    /// The number in the stream of this kind's event `i` (from 0): a
    /// reader of one kind generates only its own events.
    pub fn nth(self, i: u64) -> u64 {
        let (first, each) = self.places();
        i / each * TOTAL_PROPORTION + first + i % each
    }

    /// Whether event `n` of the stream is of this kind.
    pub fn holds(self, n: u64) -> bool {
        let (first, each) = self.places();
        (first..first + each).contains(&(n % TOTAL_PROPORTION))
    }
}

const FIRST_PERSON_ID: u64 = 1000;
const FIRST_AUCTION_ID: u64 = 1000;
const FIRST_CATEGORY_ID: u64 = 10;
const NUM_CATEGORIES: i32 = 5;
const PERSON_ID_LEAD: u64 = 10;
const AUCTION_ID_LEAD: u64 = 10;
const HOT_SELLER_RATIO: u64 = 100;
const HOT_AUCTION_RATIO: u64 = 100;
const HOT_BIDDER_RATIO: u64 = 100;
const HOT_CHANNELS_RATIO: i32 = 2;
const CHANNELS_NUMBER: i32 = 10_000;
const MIN_STRING_LENGTH: i32 = 3;

const US_STATES: [&str; 6] = ["AZ", "CA", "ID", "OR", "WA", "WY"];
const US_CITIES: [&str; 10] = [
    "Phoenix",
    "Los Angeles",
    "San Francisco",
    "Boise",
    "Portland",
    "Bend",
    "Redmond",
    "Seattle",
    "Kent",
    "Cheyenne",
];
const FIRST_NAMES: [&str; 11] = [
    "Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter",
];
const LAST_NAMES: [&str; 9] = [
    "Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris",
];
const HOT_CHANNELS: [&str; 4] = ["Google", "Facebook", "Baidu", "Apple"];
const HOT_URLS: [&str; 4] = [
    "https://www.nexmark.com/googl/item.htm?query=1",
    "https://www.nexmark.com/fcbk/item.htm?query=1",
    "https://www.nexmark.com/bdu/item.htm?query=1",
    "https://www.nexmark.com/appl/item.htm?query=1",
];

/// The generator's settings (Nexmark's defaults).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GeneratorConfig {
    /// Events per second of event time (Nexmark's `firstEventRate`).
    pub rate: u64,
    /// Event time of the first event, ms since the epoch.
    pub base_time: i64,
    /// Mixed into every event's random seed: another stream per seed.
    pub seed: u64,
    /// People who make new bids and auctions (`numActivePeople`).
    pub active_people: u64,
    /// Auctions open at once (`numInFlightAuctions`).
    pub in_flight_auctions: u64,
    /// Average sizes in bytes, padded with `extra`.
    pub avg_person_bytes: i32,
    pub avg_auction_bytes: i32,
    pub avg_bid_bytes: i32,
}

impl Default for GeneratorConfig {
    fn default() -> Self {
        GeneratorConfig {
            rate: 10_000,
            // 2023-11-14T22:13:20Z: fixed, so runs compare.
            base_time: 1_700_000_000_000,
            seed: 0,
            active_people: 1000,
            in_flight_auctions: 100,
            avg_person_bytes: 200,
            avg_auction_bytes: 500,
            avg_bid_bytes: 100,
        }
    }
}

/// Random letters (and a space in 13), sliced for every generated string.
fn letters() -> &'static str {
    static LETTERS: OnceLock<String> = OnceLock::new();
    LETTERS.get_or_init(|| {
        let mut r = JavaRandom::new(0x5eed);
        (0..1 << 20)
            .map(|_| {
                if r.next_int(13) == 0 {
                    ' '
                } else {
                    char::from(b'a' + r.next_int(26) as u8)
                }
            })
            .collect()
    })
}

/// Letters only (`extra`).
fn plain_letters() -> &'static str {
    static PLAIN: OnceLock<String> = OnceLock::new();
    PLAIN.get_or_init(|| {
        let mut r = JavaRandom::new(0xe47a);
        (0..1 << 20)
            .map(|_| char::from(b'a' + r.next_int(26) as u8))
            .collect()
    })
}

/// `len` characters of `text` from a random place.
fn slice(r: &mut JavaRandom, text: &'static str, len: usize) -> &'static str {
    let len = len.min(text.len());
    let start = r.next_int((text.len() - len + 1) as i32) as usize;
    &text[start..start + len]
}

/// Nexmark's `nextString`: 3 to `max_len` random letters and spaces.
fn next_string(r: &mut JavaRandom, max_len: i32) -> &'static str {
    let len = MIN_STRING_LENGTH + r.next_int(max_len - MIN_STRING_LENGTH);
    slice(r, letters(), len as usize).trim()
}

/// Nexmark's `nextExtra`: padding to about `avg` bytes, ±20 %.
fn next_extra(r: &mut JavaRandom, current: i32, avg: i32) -> &'static str {
    if current > avg {
        return "";
    }
    let wanted = avg - current;
    let delta = (f64::from(wanted) * 0.2).round() as i32;
    let size = wanted - delta + if delta == 0 { 0 } else { r.next_int(2 * delta) };
    slice(r, plain_letters(), size as usize)
}

/// Nexmark's log-uniform price: `round(10^(6u) * 100)`.
fn next_price(r: &mut JavaRandom) -> u64 {
    (10f64.powf(r.next_double() * 6.0) * 100.0).round() as u64
}

/// The numbers of the person and auction an event id falls after.
fn last_base0_person_id(event_id: u64) -> u64 {
    // With one person per epoch, the epoch's person is the last one.
    event_id / TOTAL_PROPORTION * PERSON_PROPORTION + (PERSON_PROPORTION - 1)
}

fn last_base0_auction_id(event_id: u64) -> u64 {
    let mut epoch = event_id / TOTAL_PROPORTION;
    let mut offset = event_id % TOTAL_PROPORTION;
    if offset < PERSON_PROPORTION {
        // Before this epoch's auctions: the last one of the previous epoch.
        if epoch == 0 {
            return 0;
        }
        epoch -= 1;
        offset = AUCTION_PROPORTION - 1;
    } else if offset >= PERSON_PROPORTION + AUCTION_PROPORTION {
        offset = AUCTION_PROPORTION - 1;
    } else {
        offset -= PERSON_PROPORTION;
    }
    epoch * AUCTION_PROPORTION + offset
}

/// Generates Nexmark events by number.
#[derive(Debug, Clone, Copy)]
pub struct NexmarkGenerator {
    config: GeneratorConfig,
    /// Event-time gap between events, in µs.
    delay_us: u64,
}

impl NexmarkGenerator {
    /// A generator with `config`.
    pub fn new(config: GeneratorConfig) -> Self {
        NexmarkGenerator {
            config,
            delay_us: 1_000_000 / config.rate.max(1),
        }
    }

    /// Its settings.
    pub fn config(&self) -> &GeneratorConfig {
        &self.config
    }

    /// Event time of event `n`.
    pub fn timestamp(&self, n: u64) -> i64 {
        self.config.base_time + (n * self.delay_us / 1000) as i64
    }

    /// Event `n` of the stream.
    pub fn event(&self, n: u64) -> Event {
        let mut r = JavaRandom::new(n ^ self.config.seed);
        let time = self.timestamp(n);
        match n % TOTAL_PROPORTION {
            o if o < PERSON_PROPORTION => Event::Person(Box::new(self.person(n, time, &mut r))),
            o if o < PERSON_PROPORTION + AUCTION_PROPORTION => {
                Event::Auction(Box::new(self.auction(n, time, &mut r)))
            }
            _ => Event::Bid(self.bid(n, time, &mut r)),
        }
    }

    /// A person among the active ones (Nexmark's `nextBase0PersonId`).
    fn next_base0_person_id(&self, n: u64, r: &mut JavaRandom) -> u64 {
        let people = last_base0_person_id(n) + 1;
        let active = people.min(self.config.active_people);
        people - active + r.next_long_below(active + PERSON_ID_LEAD)
    }

    /// An auction among those in flight (Nexmark's `nextBase0AuctionId`).
    fn next_base0_auction_id(&self, n: u64, r: &mut JavaRandom) -> u64 {
        let max = last_base0_auction_id(n);
        let min = max.saturating_sub(self.config.in_flight_auctions);
        min + r.next_long_below(max - min + 1 + AUCTION_ID_LEAD)
    }

    fn person(&self, n: u64, time: i64, r: &mut JavaRandom) -> Person {
        let first = FIRST_NAMES[r.next_int(FIRST_NAMES.len() as i32) as usize];
        let last = LAST_NAMES[r.next_int(LAST_NAMES.len() as i32) as usize];
        let name: &'static str = names()[&(first, last)];
        let email = next_string(r, 7).len() + 1 + next_string(r, 5).len() + 4;
        let card = 19;
        let city = US_CITIES[r.next_int(US_CITIES.len() as i32) as usize];
        let state = US_STATES[r.next_int(US_STATES.len() as i32) as usize];
        let size = 8 + name.len() + email + card + city.len() + state.len();
        Person {
            id: last_base0_person_id(n) + FIRST_PERSON_ID,
            name: Text::Static(name),
            email_address: Text::Static(slice(r, letters(), email)),
            credit_card: Text::Static(slice(r, digits(), card)),
            city: Text::Static(city),
            state: Text::Static(state),
            date_time: time,
            extra: Text::Static(next_extra(r, size as i32, self.config.avg_person_bytes)),
        }
    }

    fn auction(&self, n: u64, time: i64, r: &mut JavaRandom) -> Auction {
        let id = last_base0_auction_id(n) + FIRST_AUCTION_ID;
        let seller = if r.next_int(4) > 0 {
            // A hot seller: the first of the latest hundred people.
            (last_base0_person_id(n) / HOT_SELLER_RATIO) * HOT_SELLER_RATIO
        } else {
            self.next_base0_person_id(n, r)
        } + FIRST_PERSON_ID;
        let category = FIRST_CATEGORY_ID + r.next_int(NUM_CATEGORIES) as u64;
        let initial_bid = next_price(r);
        let expires = time + self.auction_length_ms(n, time, r);
        let item_name = next_string(r, 20);
        let description = next_string(r, 100);
        let reserve = initial_bid + next_price(r);
        let size = 8 + item_name.len() + description.len() + 8 * 5;
        Auction {
            id,
            item_name: Text::Static(item_name),
            description: Text::Static(description),
            initial_bid,
            reserve,
            date_time: time,
            expires,
            seller,
            category,
            extra: Text::Static(next_extra(r, size as i32, self.config.avg_auction_bytes)),
        }
    }

    /// An auction lasts on average until `in_flight_auctions` more auctions
    /// were opened (Nexmark's `nextAuctionLengthMs`).
    fn auction_length_ms(&self, n: u64, time: i64, r: &mut JavaRandom) -> i64 {
        let events_for_auctions =
            (self.config.in_flight_auctions * TOTAL_PROPORTION) / AUCTION_PROPORTION;
        let horizon = self.timestamp(n + events_for_auctions) - time;
        1 + r.next_long_below((horizon * 2).max(1) as u64) as i64
    }

    fn bid(&self, n: u64, time: i64, r: &mut JavaRandom) -> Bid {
        let auction = if r.next_int(2) > 0 {
            // A hot auction: the first of the latest hundred.
            (last_base0_auction_id(n) / HOT_AUCTION_RATIO) * HOT_AUCTION_RATIO
        } else {
            self.next_base0_auction_id(n, r)
        } + FIRST_AUCTION_ID;
        let bidder = if r.next_int(4) > 0 {
            // A hot bidder: the second of the latest hundred people, so
            // hot bidders and hot sellers differ.
            (last_base0_person_id(n) / HOT_BIDDER_RATIO) * HOT_BIDDER_RATIO + 1
        } else {
            self.next_base0_person_id(n, r)
        } + FIRST_PERSON_ID;
        let price = next_price(r);
        let (channel, url) = if r.next_int(HOT_CHANNELS_RATIO) > 0 {
            let i = r.next_int(HOT_CHANNELS.len() as i32) as usize;
            (HOT_CHANNELS[i], HOT_URLS[i])
        } else {
            let i = r.next_int(CHANNELS_NUMBER) as usize;
            (channels()[i].as_str(), channel_urls()[i].as_str())
        };
        Bid {
            auction,
            bidder,
            price,
            channel: Text::Static(channel),
            url: Text::Static(url),
            date_time: time,
            extra: Text::Static(next_extra(r, 32, self.config.avg_bid_bytes)),
        }
    }
}

/// Events generated once and replayed: event `n` is pool event `n mod
/// size` with its ids and times moved on by as many people, auctions and
/// milliseconds as a whole pool holds, so the stream goes on as the
/// generator's would, but repeats the same random draws every `size`
/// events. Replaying costs a copy per event instead of the generator's
/// draws, so a benchmark measures the engine, not the generator.
#[derive(Debug, Clone)]
pub struct EventPool {
    events: Vec<Event>,
    /// `⌊2⁶⁴ / len⌋ + 1`: `n / len` by a multiplication (a division per
    /// event costs more than the copy).
    reciprocal: u128,
    people: u64,
    auctions: u64,
    span_ms: i64,
}

impl EventPool {
    /// Events `0..size` of `generator` (`size` rounded up to whole epochs
    /// of 50 events).
    pub fn new(generator: &NexmarkGenerator, size: u64) -> Self {
        Self::generated(generator, size, |_| true)
    }

    /// As [`EventPool::new`], for a reader of `kind`'s events only: the
    /// others are not generated (a person reader's pool draws 2 events in
    /// 50), and [`EventPool::event`] of one of them is an empty bid.
    pub fn of_kind(generator: &NexmarkGenerator, size: u64, kind: EventKind) -> Self {
        Self::generated(generator, size, |n| kind.holds(n))
    }

    fn generated(generator: &NexmarkGenerator, size: u64, keep: impl Fn(u64) -> bool) -> Self {
        let size = size.max(1).div_ceil(TOTAL_PROPORTION) * TOTAL_PROPORTION;
        let epochs = size / TOTAL_PROPORTION;
        let empty = || {
            Event::Bid(Bid {
                auction: 0,
                bidder: 0,
                price: 0,
                channel: Text::Static(""),
                url: Text::Static(""),
                date_time: 0,
                extra: Text::Static(""),
            })
        };
        EventPool {
            events: (0..size)
                .map(|n| if keep(n) { generator.event(n) } else { empty() })
                .collect(),
            reciprocal: (u128::from(u64::MAX) / u128::from(size)) + 1,
            people: epochs * PERSON_PROPORTION,
            auctions: epochs * AUCTION_PROPORTION,
            span_ms: generator.timestamp(size) - generator.timestamp(0),
        }
    }

    /// The pool's own events, as generated (the first pass of the replay).
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// What each further pass adds: `(people, auctions, milliseconds)` to
    /// every person and seller id, auction id, and time. With
    /// [`EventPool::events`], all another program needs to replay the
    /// same stream.
    pub fn pass_step(&self) -> (u64, u64, i64) {
        (self.people, self.auctions, self.span_ms)
    }

    /// Event `n` of the replayed stream.
    #[inline]
    pub fn event(&self, n: u64) -> Event {
        let (e, pass) = self.get(n);
        let mut e = e.clone();
        pass.apply(&mut e);
        e
    }

    /// Event `n` of the replayed stream as the pool's own event and its
    /// pass: read in place, without the copy [`EventPool::event`] makes.
    #[inline]
    pub fn get(&self, n: u64) -> (&Event, Pass) {
        let len = self.events.len() as u64;
        // The estimate is the quotient or one more.
        let mut pass = ((u128::from(n) * self.reciprocal) >> 64) as u64;
        if pass * len > n {
            pass -= 1;
        }
        let i = n - pass * len;
        let pass = Pass {
            people: pass * self.people,
            auctions: pass * self.auctions,
            ms: pass as i64 * self.span_ms,
        };
        (&self.events[i as usize], pass)
    }
}

/// What a pass of an [`EventPool`]'s replay adds to its events: to every
/// person and seller id, to every auction id, and to every time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pass {
    /// Added to person and seller ids.
    pub people: u64,
    /// Added to auction ids (an auction's own and a bid's).
    pub auctions: u64,
    /// Added to every time (an auction's `expires` too).
    pub ms: i64,
}

impl Pass {
    /// `e` as this pass replays it.
    #[inline]
    pub fn apply(&self, e: &mut Event) {
        match e {
            Event::Person(p) => {
                p.id += self.people;
                p.date_time += self.ms;
            }
            Event::Auction(a) => {
                a.id += self.auctions;
                a.seller += self.people;
                a.date_time += self.ms;
                a.expires += self.ms;
            }
            Event::Bid(b) => {
                b.auction += self.auctions;
                b.bidder += self.people;
                b.date_time += self.ms;
            }
        }
    }
}

/// Every "First Last" name, made once.
fn names() -> &'static std::collections::HashMap<(&'static str, &'static str), &'static str> {
    static NAMES: OnceLock<std::collections::HashMap<(&'static str, &'static str), &'static str>> =
        OnceLock::new();
    NAMES.get_or_init(|| {
        let mut m = std::collections::HashMap::new();
        for f in FIRST_NAMES {
            for l in LAST_NAMES {
                let name: &'static str = Box::leak(format!("{f} {l}").into_boxed_str());
                m.insert((f, l), name);
            }
        }
        m
    })
}

/// Digits in groups of four (credit cards).
fn digits() -> &'static str {
    static DIGITS: OnceLock<String> = OnceLock::new();
    DIGITS.get_or_init(|| {
        let mut r = JavaRandom::new(0xd161);
        let mut s = String::with_capacity(1 << 16);
        while s.len() < 1 << 16 {
            s.push_str(&format!("{:04} ", r.next_int(10_000)));
        }
        s
    })
}

fn channels() -> &'static Vec<String> {
    static CHANNELS: OnceLock<Vec<String>> = OnceLock::new();
    CHANNELS.get_or_init(|| {
        (0..CHANNELS_NUMBER)
            .map(|i| format!("channel-{i}"))
            .collect()
    })
}

fn channel_urls() -> &'static Vec<String> {
    static URLS: OnceLock<Vec<String>> = OnceLock::new();
    URLS.get_or_init(|| {
        (0..CHANNELS_NUMBER)
            .map(|i| format!("https://www.nexmark.com/channel-{i}/item.htm?query=1&channel_id={i}"))
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kinds_events_are_counted_and_found_by_number() {
        let g = NexmarkGenerator::new(GeneratorConfig::default());
        let kind = |e: &Event| match e {
            Event::Person(_) => EventKind::Person,
            Event::Auction(_) => EventKind::Auction,
            Event::Bid(_) => EventKind::Bid,
        };
        for k in [EventKind::Person, EventKind::Auction, EventKind::Bid] {
            // Every number of events, whole epochs and parts of one.
            for events in [0, 1, 2, 4, 5, 49, 50, 51, 53, 54, 120, 173] {
                let theirs: Vec<u64> = (0..events).filter(|&n| kind(&g.event(n)) == k).collect();
                assert_eq!(k.count(events), theirs.len() as u64, "{k:?} in {events}");
                let found: Vec<u64> = (0..k.count(events)).map(|i| k.nth(i)).collect();
                assert_eq!(found, theirs, "{k:?} in {events}");
            }
        }
    }

    #[test]
    fn proportions_hot_items_and_sizes_follow_the_model() {
        let g = NexmarkGenerator::new(GeneratorConfig::default());
        let n = 100_000u64;
        let (mut people, mut auctions, mut bids) = (0, 0, 0);
        let (mut hot_auction, mut hot_bidder) = (0, 0);
        let mut channels = std::collections::HashMap::new();
        let (mut bid_bytes, mut auction_bytes, mut person_bytes) = (0usize, 0usize, 0usize);
        for i in 0..n {
            match g.event(i) {
                Event::Person(p) => {
                    people += 1;
                    person_bytes += 8
                        + p.name.len()
                        + p.email_address.len()
                        + p.credit_card.len()
                        + p.city.len()
                        + p.state.len()
                        + p.extra.len();
                }
                Event::Auction(a) => {
                    auctions += 1;
                    auction_bytes +=
                        8 + a.item_name.len() + a.description.len() + 40 + a.extra.len();
                    assert!(a.expires > a.date_time);
                    assert!((10..15).contains(&a.category));
                }
                Event::Bid(b) => {
                    bids += 1;
                    bid_bytes += 32 + b.extra.len();
                    if (b.auction - FIRST_AUCTION_ID) % HOT_AUCTION_RATIO == 0 {
                        hot_auction += 1;
                    }
                    if (b.bidder - FIRST_PERSON_ID) % HOT_BIDDER_RATIO == 1 {
                        hot_bidder += 1;
                    }
                    *channels.entry(b.channel.to_string()).or_insert(0u64) += 1;
                }
            }
        }
        assert_eq!((people, auctions, bids), (2_000, 6_000, 92_000));
        // Half the bids on hot auctions, three in four from hot bidders
        // (plus the few cold picks that land on one).
        let share = |k: u64| k as f64 / bids as f64;
        assert!(
            (0.49..0.53).contains(&share(hot_auction)),
            "{}",
            share(hot_auction)
        );
        assert!(
            (0.74..0.78).contains(&share(hot_bidder)),
            "{}",
            share(hot_bidder)
        );
        let hot: u64 = HOT_CHANNELS.iter().map(|c| channels[*c]).sum();
        assert!((0.48..0.52).contains(&share(hot)));
        let avg = |bytes: usize, count: u64| bytes as f64 / count as f64;
        assert!(
            (95.0..105.0).contains(&avg(bid_bytes, bids)),
            "{}",
            avg(bid_bytes, bids)
        );
        assert!((480.0..520.0).contains(&avg(auction_bytes, auctions)));
        assert!((190.0..210.0).contains(&avg(person_bytes, people)));
    }

    #[test]
    fn events_depend_on_their_number_alone_and_time_follows_the_rate() {
        let g = NexmarkGenerator::new(GeneratorConfig::default());
        assert_eq!(g.event(12_345), g.event(12_345));
        assert_eq!(
            g.timestamp(10_000) - g.timestamp(0),
            1_000,
            "10 000 events a second"
        );
        let other = NexmarkGenerator::new(GeneratorConfig {
            seed: 7,
            ..GeneratorConfig::default()
        });
        assert_ne!(g.event(60), other.event(60));
        // Bids refer to people and auctions that exist (or are about to,
        // within the generator's lead).
        for i in 0..50_000 {
            if let Event::Bid(b) = g.event(i) {
                assert!(
                    b.auction < FIRST_AUCTION_ID + last_base0_auction_id(i) + 1 + AUCTION_ID_LEAD
                );
                assert!(b.bidder < FIRST_PERSON_ID + last_base0_person_id(i) + 1 + PERSON_ID_LEAD);
            }
        }
    }

    #[test]
    fn a_pool_replays_the_stream_with_ids_and_times_moved_on() {
        let g = NexmarkGenerator::new(GeneratorConfig::default());
        let pool = EventPool::new(&g, 1_000);
        for n in 0..1_000 {
            assert_eq!(pool.event(n), g.event(n));
        }
        for n in [999, 1_000, 1_001, 1_999, 2_000, 123_456_789, u64::MAX / 3] {
            let (pass, i) = (n / 1_000, n % 1_000);
            assert_eq!(
                pool.event(n).date_time(),
                g.timestamp(i) + pass as i64 * 100,
                "{n}"
            );
        }
        // The second pass: a person, auctions and bids 20 people, 60
        // auctions and 100 ms on.
        let (Event::Person(p0), Event::Person(p1)) = (pool.event(0), pool.event(1_000)) else {
            panic!("event 0 is a person");
        };
        assert_eq!((p1.id - p0.id, p1.date_time - p0.date_time), (20, 100));
        let (Event::Bid(b0), Event::Bid(b1)) = (pool.event(10), pool.event(1_010)) else {
            panic!("event 10 is a bid");
        };
        assert_eq!(b1.auction - b0.auction, 60);
        assert_eq!(b1.price, b0.price);
        // What another program replays the pool from.
        assert_eq!(pool.events().len(), 1_000);
        assert_eq!(pool.pass_step(), (20, 60, 100));
        // A pool for one kind's reader: the same events of that kind.
        for kind in [EventKind::Person, EventKind::Auction, EventKind::Bid] {
            let own = EventPool::of_kind(&g, 1_000, kind);
            assert_eq!(own.pass_step(), pool.pass_step());
            for i in [0, 1, 2, 19, 20, 57, 1_000, 123_456] {
                let n = kind.nth(i);
                assert!(kind.holds(n), "{kind:?} {n}");
                assert_eq!(own.event(n), pool.event(n), "{kind:?} {n}");
            }
        }
        assert!(!EventKind::Bid.holds(EventKind::Auction.nth(3)));
    }

    #[test]
    fn prices_are_log_uniform() {
        let mut r = JavaRandom::new(1);
        let mut decades = [0u32; 6];
        for _ in 0..60_000 {
            let p = next_price(&mut r) as f64;
            let d = ((p / 100.0).log10().floor() as usize).min(5);
            decades[d] += 1;
        }
        assert!(
            decades.iter().all(|c| (9_000..11_000).contains(c)),
            "{decades:?}"
        );
    }
}
