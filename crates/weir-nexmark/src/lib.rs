//! Nexmark for Weir: the event generator of the published model, the
//! queries as Weir jobs, and JSON lines to feed other engines the same
//! events.

mod generator;
pub mod json;
mod model;
pub mod queries;
mod random;
mod text;

pub use generator::{EventKind, EventPool, GeneratorConfig, NexmarkGenerator, Pass};
pub use model::{Auction, Bid, Event, Person, Text};
pub use random::JavaRandom;
