//! Errors of parsing, validating, planning and running SQL: each says where
//! in the script (line and column) and what was expected.

use std::fmt;

/// A place in a script: line and column, both from 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Position {
    pub line: u64,
    pub column: u64,
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}, column {}", self.line, self.column)
    }
}

/// What went wrong with a SQL script.
#[derive(Debug, thiserror::Error)]
pub enum SqlError {
    /// The text is not SQL this dialect parses.
    #[error("SQL parse error: {0}")]
    Parse(String),
    /// Valid SQL that names something unknown or mistyped.
    #[error("{message} (at {at})")]
    Validation { message: String, at: Position },
    /// SQL that Weir does not run (yet): named, never answered wrongly.
    #[error("not supported: {feature} (at {at})")]
    Unsupported { feature: String, at: Position },
    /// A table's `WITH` options are missing or wrong.
    #[error("table '{table}': {message}")]
    Connector { table: String, message: String },
    /// A `SET` key has a value it cannot take.
    #[error("'{key}': {message}")]
    Setting { key: String, message: String },
    /// Writing results or plans.
    #[error("writing the results: {0}")]
    Output(std::io::Error),
    /// Reading a script file.
    #[error("reading '{path}': {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    /// The job failed.
    #[error(transparent)]
    Job(#[from] weir::Error),
}

impl From<sqlparser::parser::ParserError> for SqlError {
    fn from(e: sqlparser::parser::ParserError) -> Self {
        match e {
            sqlparser::parser::ParserError::ParserError(m)
            | sqlparser::parser::ParserError::TokenizerError(m) => SqlError::Parse(m),
            other => SqlError::Parse(other.to_string()),
        }
    }
}

impl SqlError {
    pub(crate) fn validation(message: impl Into<String>, at: Position) -> Self {
        SqlError::Validation {
            message: message.into(),
            at,
        }
    }

    pub(crate) fn unsupported(feature: impl Into<String>, at: Position) -> Self {
        SqlError::Unsupported {
            feature: feature.into(),
            at,
        }
    }
}

/// The position a sqlparser span starts at.
pub(crate) fn position(span: sqlparser::tokenizer::Span) -> Position {
    Position {
        line: span.start.line,
        column: span.start.column,
    }
}
