//! `replay`: the engine's replay of a path or of Arrow data through a `Limit` or a `Policy`,
//! its reading options given as keywords, with the GIL released.

use std::sync::Arc;

use arrow_array::BooleanArray;
use arrow_schema::{DataType, Field};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use pyo3_arrow::PyArray;
use ratelimit_engine::decisions::Decisions;
use ratelimit_engine::limits::LimitPolicy;
use ratelimit_engine::replay::{ReplayOptions, Replayed};
use ratelimit_input::asked::Names;
use ratelimit_input::progress::Stop;

use crate::errors::{policy_error, raised};
use crate::keywords::{self, Given};
use crate::limit::{PyLimit, suggestion};

/// The keywords a replay takes beside what to read ([`keywords::READING`]).
const RUNNING: [&str; 5] =
    ["top", "stop_counting_over_limit", "redis", "redis_prefix", "redis_timeout"];

/// Replays `data` (a path, or Arrow data) through `limits`: one limit alone unless `layered`, else all or
/// nothing. `window` is the busiest windows' length; `options` are the reading and
/// running keywords. Returns the report as JSON, as the program prints it, and each row's
/// decision as Arrow arrays (whether it passed, then with layers whether each admitted it).
/// The notes of the reading are warned of, as `RatelimitWarning`s.
#[pyfunction]
#[pyo3(signature = (data, limits, layered, window=None, *, options=None))]
pub(crate) fn replay<'py>(
    py: Python<'py>,
    data: Given,
    limits: Vec<PyLimit>,
    layered: bool,
    window: Option<&str>,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<(Bound<'py, PyBytes>, Vec<Bound<'py, PyAny>>)> {
    let (kind, source) = data.source()?;
    let limits: Vec<_> = limits.into_iter().map(|limit| limit.limit).collect();
    let policy = match (layered, &limits[..]) {
        (false, [one]) => LimitPolicy::One(one.clone()),
        (false, _) => return Err(policy_error("one limit alone is one Limit")),
        (true, _) => LimitPolicy::AllOrNothing(limits),
    };
    let mut run = ReplayOptions::default();
    let mut redis = keywords::Redis::default();
    let asked = keywords::read("replay", options, &RUNNING, |name, value| {
        match name {
            "top" => run.top = value.extract()?,
            "stop_counting_over_limit" => run.stop_counting_over_limit = value.extract()?,
            _ => return redis.read(name, value),
        }
        Ok(true)
    })?;
    run.redis = redis.target();
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
        if keywords::READING.contains(&text.as_str()) || RUNNING.contains(&text.as_str()) {
            options.set_item(name, value)?;
        } else if crate::limit::is_param(&text) {
            params.set_item(name, value)?;
        } else {
            let common = ["algo", "rate", "burst", "window", "key", "cost", "limits"];
            let params = crate::limit::param_keywords();
            let known = keywords::READING.iter().chain(&RUNNING).chain(&common).copied();
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
