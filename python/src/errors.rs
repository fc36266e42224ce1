//! The package's exceptions (`ratelimit_replay.errors`), raised from the engine's errors
//! with what each knows: where the input is bad, which argument is not one.

use pyo3::prelude::*;
use pyo3::types::PyDict;
use ratelimit_engine::error::{Error, Place};

/// Where an error's input came from: Arrow data names its rows from 0, a file its lines
/// (or a Parquet file its rows) from 1.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Data {
    /// A path, read as the program reads a FILE.
    File,
    /// Arrow data handed over.
    Arrow,
}

/// Returns the exception of the engine's `err`: `InputError` with where, `PolicyError`,
/// `BackendError`, or Python's own `OSError` for a file the system refused.
pub(crate) fn raise(err: Error, data: Data) -> PyErr {
    Python::attach(|py| match err {
        Error::Input { at, message } => input_error(py, message, &at, data),
        Error::Policy { message } => error(py, "PolicyError", message, None),
        Error::Backend { message } => error(py, "BackendError", message, None),
        Error::Io { kind, message } => std::io::Error::new(kind, message).into(),
    })
}

/// Raises `ratelimit_replay.errors.PolicyError` with `message`.
pub(crate) fn policy_error(message: impl Into<String>) -> PyErr {
    Python::attach(|py| error(py, "PolicyError", message.into(), None))
}

/// The warning category of the engine's notes: `ratelimit_replay.errors.RatelimitWarning`.
pub(crate) fn warning(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    errors(py)?.getattr("RatelimitWarning")
}

/// `InputError`, with the path and line of a file, or the row of Arrow data (from 0), and
/// the column, where the read says them.
fn input_error(py: Python<'_>, message: String, at: &Place, data: Data) -> PyErr {
    let fields = PyDict::new(py);
    let set = |name: &str, value: Bound<'_, PyAny>| fields.set_item(name, value);
    let filled = (|| {
        if let Some(column) = &at.column {
            set("column", column.into_pyobject(py)?.into_any())?;
        }
        match at.line {
            Some(("row", row)) => set("row", row.saturating_sub(1).into_pyobject(py)?.into_any())?,
            Some((_, line)) => set("line", line.into_pyobject(py)?.into_any())?,
            None => {}
        }
        if data == Data::File && !at.source.is_empty() {
            set("path", at.source.as_str().into_pyobject(py)?.into_any())?;
        }
        PyResult::Ok(())
    })();
    match filled {
        Ok(()) => error(py, "InputError", message, Some(fields)),
        Err(err) => err,
    }
}

/// Raises the class `name` of `ratelimit_replay.errors` with `message` and `fields`.
fn error(py: Python<'_>, name: &str, message: String, fields: Option<Bound<'_, PyDict>>) -> PyErr {
    let made = errors(py)
        .and_then(|module| module.getattr(name))
        .and_then(|class| class.call((message,), fields.as_ref()));
    match made {
        Ok(exception) => PyErr::from_value(exception),
        Err(err) => err,
    }
}

/// The module `ratelimit_replay.errors`.
fn errors(py: Python<'_>) -> PyResult<Bound<'_, PyModule>> {
    py.import("ratelimit_replay.errors")
}
