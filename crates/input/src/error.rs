//! Why a catalog could not be read: one line that names the input, the line and the field.

use crate::message::{one_line, quoted};

use super::keys::Key;

/// Why a catalog could not be read. Each message is one line that names the input and,
/// where there is one, the line and the field.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The input cannot be opened or read.
    #[error("cannot read {name}: {error}")]
    Io {
        /// The input's name.
        name: String,
        /// What the system said.
        error: std::io::Error,
    },
    /// A file that was read once cannot be read again from its start.
    #[error("cannot rewind {name}: {error}")]
    Rewind {
        /// The input's name.
        name: String,
        /// What the system said.
        error: std::io::Error,
    },
    /// The header, or a row's shape, is not what the command needs.
    #[error("{name}: {problem}")]
    Layout {
        /// The input's name.
        name: String,
        /// What is wrong, on one line.
        problem: String,
    },
    /// The caller asked the read to stop ([`Stop`](crate::progress::Stop)).
    #[error("stopped, as asked")]
    Stopped,
    /// A field cannot be read.
    #[error("{name}: {counts} {line}, field `{field}`: {} is {reason}", quoted(value))]
    Field {
        /// The input's name.
        name: String,
        /// What `line` counts: `line` in text, `row` in a Parquet file.
        counts: &'static str,
        /// The line the row starts on (or the row, counted from 1).
        line: u64,
        /// The column's name.
        field: String,
        /// The field's text.
        value: String,
        /// What it is not.
        reason: String,
    },
}

/// What reading returns: a value, or why it failed.
pub(super) type Result<T, E = ReadError> = std::result::Result<T, E>;

/// A layout error: the header, or a row's shape.
pub(super) fn layout(name: &str, problem: String) -> ReadError {
    ReadError::Layout { name: name.to_owned(), problem }
}

/// Returns the error for a field that cannot be read, on line `line` of input `name` (or
/// what `counts` says `line` counts).
pub(super) fn field_error(
    name: &str,
    (counts, line): (&'static str, u64),
    field: &str,
    text: &[u8],
    reason: String,
) -> ReadError {
    ReadError::Field {
        name: name.to_owned(),
        counts,
        line,
        field: field.to_owned(),
        value: String::from_utf8_lossy(text).into_owned(),
        reason,
    }
}

/// Returns the key a table gave, or the error of a table with no number left for it.
pub(super) fn keys_error(name: &str, line: u64, key: Option<Key>) -> Result<Key> {
    key.ok_or_else(|| layout(name, format!("line {line}: more than {} keys", Key::MAX)))
}

/// The error of a row whose fields the header's do not match in number.
pub(super) fn unequal_lengths(name: &str, line: u64, expected: u64, found: u64) -> ReadError {
    layout(name, format!("line {line}: expected {expected} fields like the header, found {found}"))
}

/// Turns a CSV error into one line that names the input and the line.
pub(super) fn csv_error(name: &str, err: csv::Error) -> ReadError {
    match err.kind() {
        csv::ErrorKind::Io(e) => {
            let error = std::io::Error::new(e.kind(), e.to_string());
            ReadError::Io { name: name.to_owned(), error }
        }
        csv::ErrorKind::UnequalLengths { pos, expected_len, len } => {
            let line = pos.as_ref().map_or(0, |p| p.line());
            unequal_lengths(name, line, *expected_len, *len)
        }
        _ => layout(name, one_line(&err.to_string())),
    }
}
