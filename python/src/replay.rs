//! `replay`: the engine's replay of a path or of Arrow data through a `Limit` or a `Policy`,
//! its reading options given as keywords, with the GIL released.

use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::BooleanArray;
use arrow_schema::{DataType, Field};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyList, PyString, PyTuple};
use pyo3_arrow::PyArray;
use pyo3_arrow::input::AnyRecordBatch;
use ratelimit_engine::decisions::Decisions;
use ratelimit_engine::limits::LimitPolicy;
use ratelimit_engine::redis::{DEFAULT_PREFIX, RedisTarget};
use ratelimit_engine::replay::{ReplayOptions, Replayed};
use ratelimit_input::asked::{self, Asked, Names};
use ratelimit_input::catalog::Source;
use ratelimit_input::format::InputFormat;
use ratelimit_input::progress::Stop;

use crate::errors::{Data, policy_error, raised};
use crate::limit::{PyLimit, suggestion};

/// The keywords a replay takes beside its policy, its data and its columns.
const KEYWORDS: [&str; 19] = [
    "input_format",
    "delimiter",
    "no_headers",
    "log_format",
    "time",
    "time_format",
    "time_zone",
    "skip_bad",
    "threads",
    "since",
    "until",
    "min_mag",
    "where",
    "empty_key",
    "top",
    "redis",
    "redis_prefix",
    "redis_timeout",
    "stop_counting_over_limit",
];

/// Replays `data` (anything that speaks the Arrow PyCapsule interface, named `name`) or
/// the file at `path` through `limits`: one limit alone unless `layered`, else all or
/// nothing. `window` is the busiest windows' length; `options` are the reading and
/// running keywords. Returns the report as JSON, as the program prints it, and each row's
/// decision as Arrow arrays (whether it passed, then with layers whether each admitted it).
/// The notes of the reading are warned of, as `RatelimitWarning`s.
#[pyfunction]
#[pyo3(signature = (limits, layered, window=None, *, data=None, path=None, name=None, options=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn replay<'py>(
    py: Python<'py>,
    limits: Vec<PyLimit>,
    layered: bool,
    window: Option<&str>,
    data: Option<AnyRecordBatch>,
    path: Option<PathBuf>,
    name: Option<String>,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<(Bound<'py, PyBytes>, Vec<Bound<'py, PyAny>>)> {
    let (kind, source) = match (data, path) {
        (Some(data), None) => {
            let name = name.unwrap_or_else(|| "<arrow>".to_owned());
            (Data::Arrow, Source::Arrow(crate::table(data, name)?))
        }
        (None, Some(path)) => (Data::File, Source::Path(path)),
        _ => return Err(PyTypeError::new_err("give data or a path, not both")),
    };
    let limits: Vec<_> = limits.into_iter().map(|limit| limit.limit).collect();
    let policy = match (layered, &limits[..]) {
        (false, [one]) => LimitPolicy::One(one.clone()),
        (false, _) => return Err(policy_error("one limit alone is one Limit")),
        (true, _) => LimitPolicy::AllOrNothing(limits),
    };
    let (asked, mut run) = keywords(options)?;
    run.window = match window {
        Some(text) => {
            let bad = |e: &dyn std::fmt::Display| policy_error(format!("window='{text}': {e}"));
            Some(text.parse().map_err(|e| bad(&e))?)
        }
        None => None,
    };
    if run.window.is_some_and(|window: ratelimit_core::units::time::Span| window.is_zero()) {
        return Err(policy_error("window= must be longer than zero"));
    }
    run.decisions = true;
    let settled = policy.settle(&asked, &source, Names::Keywords);
    let mut read = settled.map_err(|err| raised(&anyhow::Error::new(err), kind))?;
    let work = |stop: Stop| {
        read.stop = stop;
        ratelimit_engine::replay::replay(&policy, &source, &read, &run)
    };
    let (replayed, interrupted) = py.detach(|| crate::interruptible(work));
    if let Some(interrupt) = interrupted {
        return Err(interrupt);
    }
    let Replayed { report, decisions, notes } = replayed.map_err(|err| raised(&err, kind))?;
    // Called by the package's `replay`.
    crate::warn(py, &notes, 2)?;
    let json = serde_json::to_vec(&report).map_err(|e| policy_error(e.to_string()))?;
    let columns = columns(py, decisions.unwrap_or_default())?;
    Ok((PyBytes::new(py, &json), columns))
}

/// Splits the keywords of a replay's shorthand (`replay(data, algo=..., rate=...,
/// nodelay=True, time_format=...)`) into the limit's own parameters and the replay's
/// reading and running keywords; a keyword that is neither is a `TypeError` that names
/// it, with the one it may mean.
#[pyfunction]
pub(crate) fn shorthand<'py>(
    py: Python<'py>,
    flags: &Bound<'py, PyDict>,
) -> PyResult<(Bound<'py, PyDict>, Bound<'py, PyDict>)> {
    let (params, options) = (PyDict::new(py), PyDict::new(py));
    for (name, value) in flags.iter() {
        let text: String = name.extract()?;
        if KEYWORDS.contains(&text.as_str()) {
            options.set_item(name, value)?;
        } else if crate::limit::is_param(&text) {
            params.set_item(name, value)?;
        } else {
            let common = ["algo", "rate", "burst", "window", "key", "cost", "limits"];
            let params = crate::limit::param_keywords();
            let known = KEYWORDS.iter().chain(&common).copied();
            let hint = suggestion(&text, known.chain(params.iter().map(String::as_str)));
            let message = format!("replay() got an unexpected keyword argument '{text}'{hint}");
            return Err(PyTypeError::new_err(message));
        }
    }
    Ok((params, options))
}

/// Each row's decision as Arrow arrays: whether it passed, then each layer's.
pub(crate) fn columns(py: Python<'_>, decisions: Decisions) -> PyResult<Vec<Bound<'_, PyAny>>> {
    let Decisions { passed, layers } = decisions;
    let mut columns = Vec::with_capacity(1 + layers.len());
    for each in std::iter::once(passed).chain(layers) {
        let array = Arc::new(BooleanArray::from(each));
        let field = Arc::new(Field::new("passed", DataType::Boolean, true));
        columns.push(PyArray::new(array, field).into_pyobject(py)?.into_any());
    }
    Ok(columns)
}

/// Reads the keywords of a replay: what to read, and how to run.
fn keywords(options: Option<&Bound<'_, PyDict>>) -> PyResult<(Asked, ReplayOptions)> {
    let (mut asked, mut run) = (Asked::default(), ReplayOptions::default());
    let (mut redis, mut prefix, mut timeout) = (Vec::new(), None, None);
    for (name, value) in options.into_iter().flat_map(|options| options.iter()) {
        let name: String = name.extract()?;
        if value.is_none() {
            continue;
        }
        let shown = value.str()?.to_string();
        let bad = |err: &dyn std::fmt::Display| policy_error(format!("{name}={shown}: {err}"));
        match name.as_str() {
            "input_format" => {
                let text = word(&value)?;
                let format = InputFormat::named(&text).ok_or_else(|| {
                    let names: Vec<&str> = InputFormat::ALL.iter().map(|f| f.name()).collect();
                    policy_error(format!("input_format='{text}' is none of {}", names.join(", ")))
                })?;
                asked.format = Some(format);
            }
            "delimiter" => {
                asked.delimiter = Some(asked::delimiter(&word(&value)?).map_err(|e| bad(&e))?)
            }
            "no_headers" => asked.no_headers = value.extract()?,
            "log_format" => asked.log_format = Some(word(&value)?),
            "time" => asked.time_column = Some(word(&value)?),
            "time_format" => asked.time_format = Some(word(&value)?),
            "time_zone" => asked.time_zone = Some(word(&value)?),
            "skip_bad" => asked.skip_bad = value.extract()?,
            "threads" => {
                let threads: usize = value.extract()?;
                if !(1..=1024).contains(&threads) {
                    return Err(policy_error(format!("threads={threads} is not from 1 to 1024")));
                }
                asked.threads = Some(threads);
            }
            "since" => {
                let text = word(&value)?;
                let since = ratelimit_input::units::time::rfc3339(&text).map_err(|e| bad(&e))?;
                asked.since = Some(since);
            }
            "until" => asked.until = Some(word(&value)?.parse().map_err(|e| bad(&e))?),
            "min_mag" => {
                asked.min_mag = Some(asked::millionths(&word(&value)?).map_err(|e| bad(&e))?)
            }
            "where" => {
                for each in words(&value)? {
                    asked.at_least.push(each.parse().map_err(|e| bad(&e))?);
                }
            }
            "empty_key" => asked.empty_key = Some(word(&value)?),
            "top" => run.top = value.extract()?,
            "redis" => redis = words(&value)?,
            "redis_prefix" => prefix = Some(word(&value)?),
            "redis_timeout" => timeout = Some(crate::live::timeout(&word(&value)?)?),
            "stop_counting_over_limit" => run.stop_counting_over_limit = value.extract()?,
            _ => {
                let hint = suggestion(&name, KEYWORDS.iter().copied());
                let text = format!("replay() got an unexpected keyword argument '{name}'{hint}");
                return Err(PyTypeError::new_err(text));
            }
        }
    }
    run.redis = (!redis.is_empty()).then(|| RedisTarget {
        urls: redis,
        prefix: prefix.unwrap_or_else(|| DEFAULT_PREFIX.to_owned()),
        timeout: timeout.unwrap_or(std::time::Duration::from_secs(5)),
    });
    Ok((asked, run))
}

/// A keyword's value as text: a string as it is, a number as Python writes it.
fn word(value: &Bound<'_, PyAny>) -> PyResult<String> {
    if value.is_instance_of::<PyBool>() {
        return Err(PyTypeError::new_err(format!("{value} is a bool: give a value")));
    }
    match value.cast::<PyString>() {
        Ok(text) => Ok(text.to_str()?.to_owned()),
        Err(_) => Ok(value.str()?.to_str()?.to_owned()),
    }
}

/// A keyword's values: a list or tuple of them, or one.
fn words(value: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
    if value.is_instance_of::<PyList>() || value.is_instance_of::<PyTuple>() {
        return value.try_iter()?.map(|each| word(&each?)).collect();
    }
    Ok(vec![word(value)?])
}
