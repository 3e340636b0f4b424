//! Nexmark's three kinds of events: people register, open auctions, bid.
//!
//! Strings are [`Text`]: a generated event is cloned for the price of a
//! copy.

use serde::{Deserialize, Serialize};

pub use crate::text::Text;

/// A new person registers.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Person {
    pub id: u64,
    pub name: Text,
    pub email_address: Text,
    pub credit_card: Text,
    pub city: Text,
    pub state: Text,
    /// Event time, ms since the epoch.
    pub date_time: i64,
    pub extra: Text,
}

/// A person opens an auction.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Auction {
    pub id: u64,
    pub item_name: Text,
    pub description: Text,
    pub initial_bid: u64,
    pub reserve: u64,
    /// Event time, ms since the epoch.
    pub date_time: i64,
    /// When the auction closes, ms since the epoch.
    pub expires: i64,
    pub seller: u64,
    pub category: u64,
    pub extra: Text,
}

/// A person bids on an auction.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Bid {
    pub auction: u64,
    pub bidder: u64,
    pub price: u64,
    pub channel: Text,
    pub url: Text,
    /// Event time, ms since the epoch.
    pub date_time: i64,
    pub extra: Text,
}

/// One Nexmark event.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Event {
    // People and auctions are 4 % of events: boxed, every event moves as
    // few bytes as a bid.
    Person(Box<Person>),
    Auction(Box<Auction>),
    Bid(Bid),
}

impl Event {
    /// The event's time, ms since the epoch.
    pub fn date_time(&self) -> i64 {
        match self {
            Event::Person(p) => p.date_time,
            Event::Auction(a) => a.date_time,
            Event::Bid(b) => b.date_time,
        }
    }

    /// The bid, if this is one.
    pub fn bid(&self) -> Option<&Bid> {
        match self {
            Event::Bid(b) => Some(b),
            _ => None,
        }
    }
}
