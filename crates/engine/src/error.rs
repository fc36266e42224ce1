//! The engine API's one error type: what kind of failure it is (bad input with where, an
//! impossible policy, the backend, I/O), each with the one-line message the program
//! prints, so that a caller raises a type of its own for each (the Python package's
//! exceptions) and never parses text.

use std::fmt;

use crate::input::catalog::ReadError;
use crate::input::message::one_line;

/// Why a call of the engine's API failed, with its message on one line.
#[derive(Debug)]
pub enum Error {
    /// The input could not be read: its name, and where, and which field.
    Input {
        /// Where in the input.
        at: Place,
        /// The message.
        message: String,
    },
    /// What was asked cannot be done: a limit, an option's value, options together.
    Policy {
        /// The message.
        message: String,
    },
    /// Redis, or the way to it, failed.
    Backend {
        /// The message.
        message: String,
    },
    /// The system refused to open, read or write a file.
    Io {
        /// What kind of refusal.
        kind: std::io::ErrorKind,
        /// The message.
        message: String,
    },
}

/// Where an input could not be read: its name, and the line (or row) and field if the
/// fault is one field's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Place {
    /// The input's name: its path, `<stdin>` or `<arrow>`.
    pub source: String,
    /// The line the row starts on, or the row (counted from 1), with which of the two it
    /// is (`line`, or `row` for a Parquet file's and Arrow data's rows).
    pub line: Option<(&'static str, u64)>,
    /// The column whose field could not be read.
    pub column: Option<String>,
}

impl Place {
    /// Where `read` says the input could not be read.
    pub fn of(read: &ReadError) -> Place {
        match read {
            ReadError::Field { name, counts, line, field, .. } => Place {
                source: name.clone(),
                line: Some((counts, *line)),
                column: Some(field.clone()),
            },
            ReadError::Layout { name, .. }
            | ReadError::Io { name, .. }
            | ReadError::Rewind { name, .. } => {
                Place { source: name.clone(), line: None, column: None }
            }
            ReadError::Stopped => Place { source: String::new(), line: None, column: None },
        }
    }
}

impl Error {
    /// The message, on one line: each cause after the one it explains, `outer: inner`.
    pub fn message(&self) -> &str {
        match self {
            Error::Input { message, .. }
            | Error::Policy { message }
            | Error::Backend { message }
            | Error::Io { message, .. } => message,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for Error {}

/// Sorts an error of the engine's internals by the first of its causes whose kind is
/// known, from the outermost: what is none of them is what was asked.
impl From<anyhow::Error> for Error {
    fn from(err: anyhow::Error) -> Error {
        Error::of(&err)
    }
}

/// An error of reading is the input's, or of its reading.
impl From<ReadError> for Error {
    fn from(err: ReadError) -> Error {
        Error::of(&err.into())
    }
}

impl Error {
    /// Sorts `err` by the first of its causes whose kind is known, from the outermost,
    /// leaving `err` to its caller: what is none of them is what was asked.
    pub fn of(err: &anyhow::Error) -> Error {
        let message = error_line(err);
        for cause in err.chain() {
            if let Some(known) = cause.downcast_ref::<Error>() {
                return known.with_message(message);
            }
            if let Some(read) = cause.downcast_ref::<ReadError>() {
                return match read {
                    ReadError::Io { error, .. } | ReadError::Rewind { error, .. } => {
                        Error::Io { kind: error.kind(), message }
                    }
                    _ => Error::Input { at: Place::of(read), message },
                };
            }
            if cause.is::<crate::redis::Unavailable>() {
                return Error::Backend { message };
            }
            if let Some(io) = cause.downcast_ref::<std::io::Error>() {
                return Error::Io { kind: io.kind(), message };
            }
        }
        Error::Policy { message }
    }
}

impl Error {
    /// This error, of the same kind, said with `message`.
    fn with_message(&self, message: String) -> Error {
        match self {
            Error::Input { at, .. } => Error::Input { at: at.clone(), message },
            Error::Policy { .. } => Error::Policy { message },
            Error::Backend { .. } => Error::Backend { message },
            Error::Io { kind, .. } => Error::Io { kind: *kind, message },
        }
    }
}

/// What makes an error of the engine's own types one of the API's.
macro_rules! policy_errors {
    ($($error:ty),*) => {$(
        impl From<$error> for Error {
            fn from(err: $error) -> Error {
                Error::Policy { message: one_line(&err.to_string()) }
            }
        }
    )*};
}

policy_errors!(
    crate::limit::LimitError,
    crate::limits::PolicyError,
    crate::input::asked::AskedError
);

/// Renders an error and its causes on one line, `outer: inner`, leaving out a cause whose
/// words the line already holds.
pub fn error_line(err: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in err.chain() {
        let text = cause.to_string();
        if line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    one_line(&line)
}

/// A result of the engine's API.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use anyhow::Context;

    use super::*;

    #[test]
    fn an_error_is_sorted_by_its_first_known_cause_and_keeps_the_whole_line() {
        let field = ReadError::Field {
            name: "log.csv".into(),
            counts: "line",
            line: 4,
            field: "time".into(),
            value: "noon".into(),
            reason: "not a time".into(),
        };
        let read: anyhow::Result<()> = Err(field.into());
        let err = Error::from(read.context("replaying").unwrap_err());
        let Error::Input { at, message } = &err else { panic!("{err:?}") };
        assert_eq!(
            (at.source.as_str(), at.line, at.column.as_deref()),
            ("log.csv", Some(("line", 4)), Some("time"))
        );
        assert_eq!(message, "replaying: log.csv: line 4, field `time`: \"noon\" is not a time");
        let refused = std::io::Error::new(std::io::ErrorKind::PermissionDenied, "denied");
        let io = Error::from(anyhow::Error::new(refused));
        assert!(matches!(io, Error::Io { kind: std::io::ErrorKind::PermissionDenied, .. }));
        let burst: std::result::Result<crate::limit::Limit, _> =
            "algo=gcra,rate=1/s,burst=0".parse();
        let wrong = burst.unwrap_err();
        assert!(matches!(Error::from(wrong), Error::Policy { .. }));
        // Once sorted, an error keeps its kind through the internals' contexts.
        let again = Error::from(anyhow::Error::new(err).context("again"));
        assert!(matches!(again, Error::Input { .. }), "{again:?}");
        assert!(again.message().starts_with("again: replaying: log.csv: line 4"));
    }
}
