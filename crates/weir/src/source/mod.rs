//! Built-in sources: collections, sequences, generators, text files and
//! sockets. Sources of external systems (Kafka, …) live in `weir-connectors`.

mod collection;
mod generator;
mod index_ranges;
mod socket;
mod split;
mod text_file;

pub use collection::{CollectionSource, SequenceSource};
pub use generator::GeneratorSource;
pub use socket::SocketTextSource;
pub(crate) use split::SplitWatermarkSource;
pub use split::{SplitContext, SplitSourceFunction};
pub use text_file::TextFileSource;
