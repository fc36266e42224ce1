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
use ratelimit_engine::error::Error;
use ratelimit_engine::limits::LimitPolicy;
use ratelimit_engine::lossless::Found;
use ratelimit_engine::policy_report::{LayerNeeds, ReplayReport};
use ratelimit_engine::replay::{ReplayOptions, Replayed};
use ratelimit_input::asked::Names;
use ratelimit_input::progress::Stop;

use crate::errors::{policy_error, raise};
use crate::keywords::suggestion;
use crate::keywords::{self, Given};
use crate::limit::PyLimit;

/// Replays `data` (a path, or Arrow data) through `limits`: one limit alone unless `layered`, else
/// all or nothing. `window` is the busiest windows' length; `options` are the reading and running
/// keywords. Returns the report as JSON, as the program prints it, and each row's decision as Arrow
/// arrays (whether it passed, then with layers whether each admitted it). The notes of the reading
/// are warned of, as `RatelimitWarning`s. With `needs`, the JSON is each layer's need instead
/// (`min-bucket --limit`'s), and no decision is kept.
#[pyfunction]
#[pyo3(signature = (data, limits, layered, window=None, *, options=None, needs=false))]
pub(crate) fn replay<'py>(
    py: Python<'py>,
    data: Given,
    limits: Vec<PyLimit>,
    layered: bool,
    window: Option<&str>,
    options: Option<&Bound<'py, PyDict>>,
    needs: bool,
) -> PyResult<(Bound<'py, PyBytes>, Vec<Bound<'py, PyAny>>)> {
    let (kind, source) = data.source()?;
    let policy = policy(limits, layered)?;
    let mut run = ReplayOptions::default();
    let mut running = keywords::Running::default();
    let asked = keywords::read(
        "replay",
        options,
        &[&keywords::REPLAY, &keywords::RUNNING],
        |name, value| {
            match name {
                "top" => run.top = value.extract()?,
                "stop_counting_over_limit" => run.stop_counting_over_limit = value.extract()?,
                _ => return running.read(name, value),
            }
            Ok(true)
        },
    )?;
    let keywords::Running { redis, fleet } = running;
    run.redis = redis.target();
    run.window = window.map(keywords::window).transpose()?;
    run.decisions = !needs;
    let error = |err: Error| raise(err, kind);
    if let LimitPolicy::One(limit) = &policy {
        let planned = fleet.one_share(limit.key.as_deref(), 1, Names::Keywords);
        run.fleet = planned.map_err(|err| error(err.into()))?;
    } else if fleet.servers.is_some() {
        return Err(policy_error("a fleet runs one limit: give a Limit, not a Policy"));
    }
    let settled = policy.settle_on(&asked, &source, Names::Keywords, &fleet);
    let mut read = settled.map_err(|err| error(err.into()))?;
    let work = |stop: Stop| {
        read.stop = stop;
        let Replayed { report, decisions, notes } =
            ratelimit_engine::replay::replay(&policy, &source, &read, &run)?;
        Ok(Found { found: (report, decisions), notes })
    };
    let (report, decisions) = crate::lossless::found(py, work, kind)?;
    let json = match &report {
        ReplayReport::Layers(layers) if needs => serde_json::to_vec(&LayerNeeds::of(layers)),
        _ => serde_json::to_vec(&report),
    };
    let json = json.map_err(|e| policy_error(e.to_string()))?;
    let columns = columns(py, decisions.unwrap_or_default())?;
    Ok((PyBytes::new(py, &json), columns))
}

/// The policy of `limits`: one limit alone unless `layered`, else all or nothing.
pub(crate) fn policy(limits: Vec<PyLimit>, layered: bool) -> PyResult<LimitPolicy> {
    let limits: Vec<_> = limits.iter().map(PyLimit::limit).collect::<PyResult<_>>()?;
    match (layered, &limits[..]) {
        (false, [one]) => Ok(LimitPolicy::One(one.clone())),
        (false, _) => Err(policy_error("one limit alone is one Limit")),
        (true, _) => Ok(LimitPolicy::AllOrNothing(limits)),
    }
}

/// Splits the keywords of `function`'s shorthand (`replay(data, algo=..., rate=...,
/// nodelay=True, time_format=...)`, and `compare`'s) into the limit's own parameters and
/// the call's reading and running keywords; a keyword that is neither is a `TypeError`
/// that names it, with the one it may mean.
#[pyfunction]
pub(crate) fn shorthand<'py>(
    py: Python<'py>,
    function: &str,
    flags: &Bound<'py, PyDict>,
) -> PyResult<(Bound<'py, PyDict>, Bound<'py, PyDict>)> {
    let own: &[&str] = match function {
        "compare" => &keywords::COMPARE,
        "report" => &keywords::REPORT,
        _ => &keywords::REPLAY,
    };
    let running = || own.iter().chain(&keywords::RUNNING);
    let (params, options) = (PyDict::new(py), PyDict::new(py));
    for (name, value) in flags.iter() {
        let text: String = name.extract()?;
        if keywords::READING.contains(&text.as_str()) || running().any(|&each| each == text) {
            options.set_item(name, value)?;
        } else if crate::limit::is_param(&text) {
            params.set_item(name, value)?;
        } else {
            let common = ["algo", "algos", "rate", "burst", "window", "key", "cost", "limits"];
            let params = crate::limit::param_keywords();
            let known = keywords::READING.iter().chain(running()).chain(&common).copied();
            let hint = suggestion(&text, known.chain(params.iter().map(String::as_str)));
            let message = format!("{function}() got an unexpected keyword argument '{text}'{hint}");
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
