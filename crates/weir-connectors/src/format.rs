//! Record formats for text lines and message values (Flink's `csv` and
//! `json` formats): JSON lines and CSV, to and from serde types. Used by
//! the file source ([`crate::file`]), and by the Kafka source and sink for
//! values; [`RecordFormat::encode`] in a `map` feeds the file sink.
//!
//! Errors name what was wrong and where inside the record (the CSV field
//! by number and name); the caller adds the file and line, or the topic,
//! partition and offset.

use std::marker::PhantomData;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::Serialize;

/// Decodes records from bytes (a line, a message value) and encodes them.
pub trait RecordFormat<T>: Send + Sync + 'static {
    /// The record in `bytes`, or why it is malformed.
    fn decode(&self, bytes: &[u8]) -> Result<T, String>;
    /// The record as bytes (no line end).
    fn encode(&self, record: &T) -> Result<Vec<u8>, String>;
    /// Whether the first line of a file names the columns (not a record).
    fn has_header(&self) -> bool {
        false
    }
    /// Takes the column names from a file's first line.
    fn read_header(&mut self, _line: &[u8]) -> Result<(), String> {
        Ok(())
    }
}

/// One JSON document per record (JSON lines in files).
pub struct JsonLines<T> {
    _type: PhantomData<fn() -> T>,
}

impl<T> JsonLines<T> {
    /// The format.
    pub fn new() -> Self {
        JsonLines { _type: PhantomData }
    }
}

impl<T> Default for JsonLines<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Clone for JsonLines<T> {
    fn clone(&self) -> Self {
        Self::new()
    }
}

impl<T: Serialize + DeserializeOwned + 'static> RecordFormat<T> for JsonLines<T> {
    fn decode(&self, bytes: &[u8]) -> Result<T, String> {
        serde_json::from_slice(bytes).map_err(|e| format!("not the expected JSON: {e}"))
    }

    fn encode(&self, record: &T) -> Result<Vec<u8>, String> {
        serde_json::to_vec(record).map_err(|e| format!("cannot be JSON: {e}"))
    }
}

/// Comma-separated values, one record per line: fields by name when there
/// is a header (a file's first line, or [`with_columns`](Self::with_columns)),
/// else by position; quoted fields as RFC 4180 has them.
pub struct Csv<T> {
    header: bool,
    columns: Option<Arc<csv::StringRecord>>,
    delimiter: u8,
    _type: PhantomData<fn() -> T>,
}

impl<T> Clone for Csv<T> {
    fn clone(&self) -> Self {
        Csv {
            header: self.header,
            columns: self.columns.clone(),
            delimiter: self.delimiter,
            _type: PhantomData,
        }
    }
}

impl<T> Default for Csv<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Csv<T> {
    /// Fields by position, separated by commas.
    pub fn new() -> Self {
        Csv {
            header: false,
            columns: None,
            delimiter: b',',
            _type: PhantomData,
        }
    }

    /// A file's first line names the columns; fields go to the struct
    /// fields of those names (in any order; extra columns are ignored).
    pub fn with_header(mut self) -> Self {
        self.header = true;
        self
    }

    /// The columns' names, for input without a header line (message
    /// values).
    pub fn with_columns(mut self, names: &[&str]) -> Self {
        self.columns = Some(Arc::new(csv::StringRecord::from(names.to_vec())));
        self
    }

    /// Another delimiter, e.g. `b';'` or `b'\t'`.
    pub fn with_delimiter(mut self, delimiter: u8) -> Self {
        self.delimiter = delimiter;
        self
    }

    fn parse_fields(&self, bytes: &[u8]) -> Result<csv::StringRecord, String> {
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .delimiter(self.delimiter)
            .flexible(true)
            .from_reader(bytes);
        let mut record = csv::StringRecord::new();
        match reader.read_record(&mut record) {
            Ok(true) => Ok(record),
            Ok(false) => Err("an empty line".to_string()),
            Err(e) => Err(format!("not CSV: {e}")),
        }
    }
}

impl<T: Serialize + DeserializeOwned + 'static> RecordFormat<T> for Csv<T> {
    fn decode(&self, bytes: &[u8]) -> Result<T, String> {
        let record = self.parse_fields(bytes)?;
        record
            .deserialize(self.columns.as_deref())
            .map_err(|e| match e.kind() {
                csv::ErrorKind::Deserialize { err, .. } => {
                    let field = err.field().map_or(String::new(), |i| {
                        let name = self
                            .columns
                            .as_ref()
                            .and_then(|c| c.get(i as usize))
                            .map_or(String::new(), |n| format!(" ('{n}')"));
                        format!("field {}{name}: ", i + 1)
                    });
                    format!("{field}{}", err.kind())
                }
                _ => e.to_string(),
            })
    }

    fn encode(&self, record: &T) -> Result<Vec<u8>, String> {
        let mut writer = csv::WriterBuilder::new()
            .has_headers(false)
            .delimiter(self.delimiter)
            .from_writer(Vec::new());
        writer
            .serialize(record)
            .map_err(|e| format!("cannot be CSV: {e}"))?;
        let mut bytes = writer
            .into_inner()
            .map_err(|e| format!("cannot be CSV: {e}"))?;
        while bytes.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
            bytes.pop();
        }
        Ok(bytes)
    }

    fn has_header(&self) -> bool {
        self.header
    }

    fn read_header(&mut self, line: &[u8]) -> Result<(), String> {
        let names = self.parse_fields(line)?;
        self.columns = Some(Arc::new(
            names.iter().map(str::trim).collect::<csv::StringRecord>(),
        ));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Order {
        id: String,
        user: String,
        money: f64,
    }

    #[test]
    fn csv_by_position_by_header_and_back() {
        let by_position = Csv::<Order>::new();
        let order = by_position.decode(b"o1,alice,12.5").expect("decodes");
        assert_eq!(
            order,
            Order {
                id: "o1".into(),
                user: "alice".into(),
                money: 12.5
            }
        );
        assert_eq!(
            by_position.encode(&order).expect("encodes"),
            b"o1,alice,12.5"
        );
        // Quoted fields keep their commas.
        let quoted = by_position.decode(b"\"o,2\",bob,1").expect("decodes");
        assert_eq!(quoted.id, "o,2");
        let mut by_name = Csv::<Order>::new().with_header();
        by_name.read_header(b"money,id,user").expect("a header");
        assert_eq!(by_name.decode(b"12.5,o1,alice").expect("decodes"), order);
    }

    #[test]
    fn csv_errors_name_the_field() {
        let by_name = Csv::<Order>::new().with_columns(&["id", "user", "money"]);
        let err = by_name.decode(b"o1,alice,lots").expect_err("not a number");
        assert!(err.contains("field 3 ('money')"), "{err}");
        let err = Csv::<Order>::new()
            .decode(b"o1,alice")
            .expect_err("too short");
        assert!(!err.is_empty());
    }

    #[test]
    fn json_lines_both_ways() {
        let json = JsonLines::<Order>::new();
        let order = json
            .decode(br#"{"id":"o1","user":"alice","money":2.0}"#)
            .expect("decodes");
        assert_eq!(order.money, 2.0);
        assert_eq!(
            json.encode(&order).expect("encodes"),
            br#"{"id":"o1","user":"alice","money":2.0}"#
        );
        let err = json.decode(br#"{"id":"o1"}"#).expect_err("fields missing");
        assert!(err.contains("missing field"), "{err}");
    }
}
