//! `compare`: the engine's limits side by side over a path or Arrow data, with the GIL
//! released, handed back as the JSON the program prints.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use ratelimit_core::limiter::Algorithm;
use ratelimit_engine::Backend;
use ratelimit_engine::compare as engine;
use ratelimit_engine::error::Error;
use ratelimit_engine::limit::{self, Limit};
use ratelimit_engine::limits;
use ratelimit_engine::lossless::Found;
use ratelimit_input::asked::Names;

use crate::errors::{policy_error, raise};
use crate::keywords::{self, Given, word, words};
use crate::limit::PyLimit;

/// Replays `data` (a path, or Arrow data) through `algos` (the program's own six if none)
/// side by side at `rate`, with `burst` where the limiter has one and a limiter's own
/// `params` where it takes them, keyed by `key` and weighed by `cost` if given. The
/// keywords of `options` are what to read, `top`, `window` and Redis's. Returns the
/// program's JSON: each limiter's report.
#[pyfunction]
#[pyo3(signature = (data, rate, *, burst=None, algos=None, key=None, cost=None, params=None, options=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn compare<'py>(
    py: Python<'py>,
    data: Given,
    rate: &str,
    burst: Option<u64>,
    algos: Option<&Bound<'py, PyAny>>,
    key: Option<String>,
    cost: Option<&Bound<'py, PyAny>>,
    params: Option<&Bound<'py, PyDict>>,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyBytes>> {
    let mut algorithms: Vec<Algorithm> = Vec::new();
    for name in algos.map(words).transpose()?.unwrap_or_default() {
        for each in name.split(',') {
            let algorithm = each
                .parse()
                .map_err(|_| policy_error(format!("algos: {each} is not a limiter")))?;
            if !algorithms.contains(&algorithm) {
                algorithms.push(algorithm);
            }
        }
    }
    if algorithms.is_empty() {
        algorithms = Algorithm::ALL.into_iter().filter(|a| !a.is_system()).collect();
    }
    // One limit at the rate, with its burst and parameters, checked as each limiter takes it.
    let mut named: Vec<(String, Option<String>)> = vec![
        ("algo".into(), Some(algorithms[0].name().into())),
        ("rate".into(), Some(rate.into())),
    ];
    for (name, value) in params.into_iter().flat_map(|params| params.iter()) {
        let name: String = name.extract()?;
        match value.extract::<bool>() {
            Ok(true) => named.push((name.replace('_', "-"), None)),
            Ok(false) => {}
            Err(_) => named.push((name.replace('_', "-"), Some(word(&value)?))),
        }
    }
    let made = Limit::from_named(named.iter().map(|(n, v)| (n.as_str(), v.as_deref())));
    let mut base = made.map_err(|err| policy_error(err.to_string()))?;
    base.burst = burst;
    let (mut top, mut window, mut running) = (10, None, keywords::Running::default());
    let own: &[&[&str]] = &[&keywords::COMPARE, &keywords::RUNNING];
    let mut asked = keywords::read("compare", options, own, |name, value| {
        match name {
            "top" => top = value.extract()?,
            "window" => window = Some(keywords::window(&word(value)?)?),
            _ => return running.read(name, value),
        }
        Ok(true)
    })?;
    asked.cost = crate::lossless::cost_of(cost)?;
    let keywords::Running { redis, fleet } = running;
    let (kind, source) = data.source()?;
    let error = |err: Error| raise(err, kind);
    let key_column = fleet.key_column(key.as_deref(), Names::Keywords);
    let settled = asked.settle(&source, key_column, Names::Keywords);
    let mut read = settled.map_err(|err| error(err.into()))?;
    if let Some(why) = limit::cost_refused(&read.cost, algorithms.iter().copied(), "cost=") {
        return Err(policy_error(why));
    }
    let settings =
        engine::settings(&base, &algorithms, window, "").map_err(|err| error(err.into()))?;
    // One limiter on a fleet, with no share mode asked: the modes side by side.
    let planned = fleet.plan(settings, key.as_deref(), true, Names::Keywords);
    let (settings, fleet) = planned.map_err(|err| error(err.into()))?;
    let target = redis.target();
    let work = |stop| {
        read.stop = stop;
        let backend = Backend::new(&settings, target.as_ref(), fleet)?;
        let Found { found, notes } = engine::limiters(&settings, &source, &read, &backend, top)?;
        Ok(Found { found: serde_json::to_vec(&found.lanes)?, notes })
    };
    crate::lossless::answered(py, work, kind)
}

/// Has each of `limits`, a whole configuration, decide every row of `data` on its own,
/// side by side; with two, says what changes from the first to the second. The keywords
/// of `options` are what to read, `top` and Redis's. Returns the program's JSON.
#[pyfunction]
#[pyo3(signature = (data, limits, *, options=None))]
pub(crate) fn configurations<'py>(
    py: Python<'py>,
    data: Given,
    limits: Vec<PyLimit>,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyBytes>> {
    let limits: Vec<Limit> = limits.iter().map(PyLimit::limit).collect::<PyResult<_>>()?;
    let (mut top, mut running) = (10, keywords::Running::default());
    let own: &[&[&str]] = &[&keywords::COMPARE, &keywords::RUNNING];
    let asked = keywords::read("compare", options, own, |name, value| {
        match name {
            "top" => top = value.extract()?,
            _ => return running.read(name, value),
        }
        Ok(true)
    })?;
    if running.fleet.servers.is_some() {
        return Err(policy_error(
            "servers= shapes a fleet, where one limiter's share modes are compared: give rate=, \
             not limits=",
        ));
    }
    let (kind, source) = data.source()?;
    let error = |err: Error| raise(err, kind);
    let layers = limits::layers(&limits, None, false, "configurations");
    let layers = layers.map_err(|err| error(err.into()))?.layers;
    let settled =
        limits::settle_together(&limits, "configurations", &asked, &source, Names::Keywords);
    let mut read = settled.map_err(|err| error(err.into()))?;
    let target = running.redis.target();
    let work = |stop| {
        read.stop = stop;
        let found =
            engine::configurations((&limits, &layers), &source, &read, target.as_ref(), top)?;
        Ok(Found { found: serde_json::to_vec(&found.found.result)?, notes: found.notes })
    };
    crate::lossless::answered(py, work, kind)
}
