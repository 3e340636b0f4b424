//! Built-in sources: collections, sequences, generators, text files and
//! sockets. Sources of external systems (Kafka, …) live in `weir-connectors`.

mod collection;
mod generator;
mod socket;
mod text_file;

pub use collection::{CollectionSource, SequenceSource};
pub use generator::GeneratorSource;
pub use socket::SocketTextSource;
pub use text_file::TextFileSource;
