//! `replay(..., duration=)` and `min_limit`: the engine's limits settled after the
//! response, of a path or of Arrow data, with the GIL released.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use ratelimit_core::units::time::Span;
use ratelimit_engine::error::Error;
use ratelimit_engine::lossless::Found;
use ratelimit_engine::settled::min_limit::{MinLimitAsk, find};
use ratelimit_engine::settled::presets::{self as preset_data};
use ratelimit_engine::settled::retry::Retry;
use ratelimit_engine::settled::{self, LayerSpec, RequestsAsk, Sum, parse_charge};
use ratelimit_input::asked::Names;
use ratelimit_input::catalog::{ReadOptions, ReadStats, Source};
use ratelimit_input::requests::Completion;

use crate::errors::{policy_error, raise};
use crate::keywords::{self, Given, word};
use crate::limit::PyLimit;

/// Replays the requests of `data` (a path, or Arrow data) through `limits`, all or
/// nothing, each charged as it says: completing after its `duration` column or at its
/// `end` column (as it arrives, without either, if no limit settles after). `window` is the busiest windows' length (each rate's period if
/// `None`); `options` are the reading keywords. Returns the report as JSON, as `ratelimit
/// replay --duration` prints it.
#[pyfunction]
#[pyo3(signature = (data, limits, window=None, *, duration=None, end=None, retry=None, options=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn settled_replay<'py>(
    py: Python<'py>,
    data: Given,
    limits: Vec<PyLimit>,
    window: Option<&str>,
    duration: Option<&str>,
    end: Option<&str>,
    retry: Option<&str>,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyBytes>> {
    let retry = retry
        .map(|text| text.parse::<Retry>().map_err(|e| policy_error(format!("retry={text}: {e}"))))
        .transpose()?;
    let completion = completion(duration, end)?;
    completes(&limits, completion.as_ref())?;
    let (specs, window) = layers(limits, window)?;
    let key = settled::key_column(&specs).map_err(|err| policy_error(err.to_string()))?;
    run(py, "replay", data, key, options, |source, read| {
        let ask = RequestsAsk {
            completion: completion.as_ref(),
            window,
            retry: retry.as_ref(),
            redis: None,
        };
        settled::replay(source, read, &specs, ask)
    })
}

/// Finds the smallest limit L a period `per` (a bucket of L refilled at L a period) that
/// refuses none of the requests of `data`, each costing `cost` (a number, a column or a
/// sum of columns), charged as `charge` says (reserving `reserve` if given), completing
/// after `duration` or at `end`, keyed by `key`; or with `concurrency`, the fewest
/// requests in flight a cap needs. Returns the JSON `ratelimit min-limit` prints.
#[pyfunction]
#[pyo3(signature = (
    data, *, per=None, cost=None, reserve=None, charge=None, duration=None, end=None,
    key=None, concurrency=false, options=None
))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn min_limit<'py>(
    py: Python<'py>,
    data: Given,
    per: Option<&str>,
    cost: Option<&Bound<'py, PyAny>>,
    reserve: Option<&Bound<'py, PyAny>>,
    charge: Option<&str>,
    duration: Option<&str>,
    end: Option<&str>,
    key: Option<&str>,
    concurrency: bool,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyBytes>> {
    let per = per
        .map(|text| text.parse::<Span>().map_err(|e| policy_error(format!("per={text}: {e}"))))
        .transpose()?;
    let cost = cost.map(|cost| sum(cost, "cost")).transpose()?.unwrap_or(Sum::number(1));
    let reserve = reserve.map(|reserve| sum(reserve, "reserve")).transpose()?;
    let charge = charge.map(|text| parse_charge(text).map_err(policy_error)).transpose()?;
    let completion = completion(duration, end)?;
    let ask =
        MinLimitAsk::settle(per, cost, charge, reserve, completion, concurrency, Names::Keywords)
            .map_err(policy_error)?;
    run(py, "min_limit", data, key, options, |source, read| find(source, read, &ask))
}

/// Reads `data` as the reading keywords of `options` say (`function` takes no other),
/// keyed by `key`, and answers by `answer`: with the GIL released, Ctrl-C stopping it,
/// and the reading's notes warned of. Returns the answer's JSON.
fn run<'py, T: serde::Serialize>(
    py: Python<'py>,
    function: &str,
    data: Given,
    key: Option<&str>,
    options: Option<&Bound<'py, PyDict>>,
    answer: impl FnOnce(&Source, &ReadOptions) -> Result<(T, ReadStats), Error> + Send,
) -> PyResult<Bound<'py, PyBytes>> {
    let asked = read_only(function, options)?;
    let (kind, source) = data.source()?;
    // An nginx variable names an access log's field, as `--key` takes it: $binary_remote_addr.
    let key = key.map(ratelimit_engine::limit::column);
    let settled = asked.settle(&source, key.as_deref().map(|key| (key, "key=")), Names::Keywords);
    let mut read = settled.map_err(|err| raise(err.into(), kind))?;
    let work = |stop| {
        read.stop = stop;
        let (found, stats) = answer(&source, &read)?;
        let notes = ratelimit_engine::notes::notes(&source, &read, &stats);
        let json = serde_json::to_vec(&found).map_err(|e| Error::Policy { message: e.to_string() });
        Ok(Found { found: json?, notes })
    };
    let found = crate::lossless::found(py, work, kind)?;
    Ok(PyBytes::new(py, &found))
}

/// Replays the requests of `data` through every preset `preset` names
/// (`PROVIDER:*:MODEL`, or one tier), completing after `duration` or at `end`, and names
/// the smallest that refuses none. Returns the JSON `ratelimit min-limit --preset`
/// prints.
#[pyfunction]
#[pyo3(signature = (data, preset, *, duration=None, end=None, options=None))]
pub(crate) fn min_tier<'py>(
    py: Python<'py>,
    data: Given,
    preset: &str,
    duration: Option<&str>,
    end: Option<&str>,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyBytes>> {
    let completion = completion(duration, end)?;
    run(py, "min_tier", data, None, options, |source, read| {
        preset_data::fit(source, read, completion.as_ref(), preset)
    })
}

/// The providers' presets, as `ratelimit presets --format json` lists them.
#[pyfunction]
pub(crate) fn presets<'py>(py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
    let listed = preset_data::listed().map_err(policy_error)?;
    let json = serde_json::to_vec(&listed).map_err(|e| policy_error(e.to_string()))?;
    Ok(PyBytes::new(py, &json))
}

/// The layers of `limits`, and the busiest windows' length: `window` if given, else the
/// first a limit gives.
pub(crate) fn layers(
    limits: Vec<PyLimit>,
    window: Option<&str>,
) -> PyResult<(Vec<LayerSpec>, Option<Span>)> {
    let window = match window {
        Some(text) => Some(keywords::window(text)?),
        None => limits.iter().find_map(|limit| limit.window.as_ref().map(|&(_, span)| span)),
    };
    Ok((limits.into_iter().map(|limit| limit.layer).collect(), window))
}

/// Says whether `limits` can be replayed with `completion`: a limit settled after the
/// response needs to know when each request completes.
pub(crate) fn completes(limits: &[PyLimit], completion: Option<&Completion>) -> PyResult<()> {
    match limits.iter().find(|limit| limit.layer.settles_after()) {
        Some(layer) if completion.is_none() => Err(policy_error(format!(
            "Limit {} is settled after the response: give duration= or end=, when each \
             request completes",
            layer.layer
        ))),
        _ => Ok(()),
    }
}

/// When requests complete: after a `duration` column, or at an `end` column; not both.
pub(crate) fn completion(
    duration: Option<&str>,
    end: Option<&str>,
) -> PyResult<Option<Completion>> {
    if duration.is_some() && end.is_some() {
        return Err(policy_error("give duration= or end=, not both"));
    }
    Ok(Completion::given(duration, end))
}

/// Reads the reading keywords of `options` for `function`, which takes no other: limits
/// settled after the response run in memory, not on Redis or a fleet.
pub(crate) fn read_only(
    function: &str,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<ratelimit_input::asked::Asked> {
    keywords::read(function, options, &[], |name, _| {
        if keywords::RUNNING.contains(&name) {
            let message = format!(
                "{name}= is not taken by limits settled after the response, which run in memory"
            );
            return Err(policy_error(message));
        }
        Ok(false)
    })
}

/// A sum given by keyword `name`: a number, a column, or columns summed (`"a+b"`).
fn sum(value: &Bound<'_, PyAny>, name: &str) -> PyResult<Sum> {
    let text = word(value)?;
    text.parse().map_err(|e| policy_error(format!("{name}={text}: {e}")))
}
