//! Limits settled after the response on Spark and Dask: the engine's plan, a part of whole
//! keys replayed where it lies, and the parts merged on the driver.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use ratelimit_engine::error::Error;
use ratelimit_engine::lossless::Found;
use ratelimit_engine::parts::Method;
use ratelimit_engine::settled;
use ratelimit_engine::settled::parts::{self, FlightBlock, FlightEvent, Part};
use ratelimit_input::asked::Names;

use crate::errors::{policy_error, raise};
use crate::limit::PyLimit;
use crate::settled::{completion, layers as specs, read_only};

/// How requests through `limits`, completing after `duration` or at `end`, are replayed
/// exactly in parts: `("by key", KEY)`, or `("one pass", WHY)`.
#[pyfunction]
#[pyo3(signature = (limits, *, duration=None, end=None))]
pub(crate) fn settled_method(
    limits: Vec<PyLimit>,
    duration: Option<&str>,
    end: Option<&str>,
) -> PyResult<(String, String)> {
    crate::settled::completes(&limits, completion(duration, end)?.as_ref())?;
    let (specs, _) = specs(limits, None)?;
    let method = parts::method(&specs).map_err(|err| policy_error(err.to_string()))?;
    Ok(match method {
        Method::ByKey => {
            let key = settled::key_column(&specs).ok().flatten().unwrap_or_default();
            ("by key".to_owned(), key.to_owned())
        }
        Method::OnePass(why) => ("one pass".to_owned(), why.to_owned()),
        Method::Ranges { .. } => ("one pass".to_owned(), "no key".to_owned()),
    })
}

/// What a part's replay hands back: its figures (JSON), and each admitted request's
/// arrival, completion (µs) and row (from 0).
type Replayed = (Vec<u8>, Vec<i64>, Vec<i64>, Vec<u64>);

/// What `settled_part` hands to Python: [`Replayed`], the figures as bytes.
type Handed<'py> = (Bound<'py, PyBytes>, Vec<i64>, Vec<i64>, Vec<u64>);

/// Replays `data` (whole keys, as Arrow data) through `limits`, as `replay(...,
/// duration=)` does, and returns the part's figures and its admitted requests.
#[pyfunction]
#[pyo3(signature = (data, limits, window=None, *, duration=None, end=None, options=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn settled_part<'py>(
    py: Python<'py>,
    data: crate::keywords::Given,
    limits: Vec<PyLimit>,
    window: Option<&str>,
    duration: Option<&str>,
    end: Option<&str>,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Handed<'py>> {
    let completion = completion(duration, end)?;
    let (specs, window) = specs(limits, window)?;
    let key = settled::key_column(&specs).map_err(|err| policy_error(err.to_string()))?;
    let asked = read_only("replay", options)?;
    let (kind, source) = data.source()?;
    // An nginx variable names an access log's field, as `--key` takes it: $binary_remote_addr.
    let key = key.map(ratelimit_engine::limit::column);
    let settled = asked.settle(&source, key.as_deref().map(|key| (key, "key=")), Names::Keywords);
    let mut read = settled.map_err(|err| raise(err.into(), kind))?;
    let work = |stop| -> Result<Found<Replayed>, Error> {
        read.stop = stop;
        let (part, flights) =
            parts::replay_part(&source, &read, &specs, completion.as_ref(), window)?;
        let json =
            serde_json::to_vec(&part).map_err(|e| Error::Policy { message: e.to_string() })?;
        let arrivals = flights.iter().map(|f| f.arrival).collect();
        let completions = flights.iter().map(|f| f.completion).collect();
        // Arrow data counts rows from 1 in messages; a table is indexed from 0.
        let rows = flights.iter().map(|f| f.row.saturating_sub(1)).collect();
        Ok(Found { found: (json, arrivals, completions, rows), notes: Vec::new() })
    };
    let (json, arrivals, completions, rows) = crate::lossless::found(py, work, kind)?;
    Ok((PyBytes::new(py, &json), arrivals, completions, rows))
}

/// Merges `parts` (each part's figures, of whole keys) into the report of one pass through
/// `limits`, named `input`; `blocks` (`(first, change, most)` each) cut every admitted
/// request's arrival and completion in time order, for the peak in flight of all keys.
/// Returns the report's JSON, as `ratelimit replay --duration` prints it.
#[pyfunction]
#[pyo3(signature = (limits, parts, blocks, *, input, window=None))]
pub(crate) fn settled_merge<'py>(
    py: Python<'py>,
    limits: Vec<PyLimit>,
    parts: Vec<Vec<u8>>,
    blocks: Vec<(i64, i64, i64)>,
    input: &str,
    window: Option<&str>,
) -> PyResult<Bound<'py, PyBytes>> {
    let (specs, window) = specs(limits, window)?;
    let parts: Vec<Part> = (parts.iter())
        .map(|part| {
            serde_json::from_slice(part)
                .map_err(|e| policy_error(format!("a part does not read: {e}")))
        })
        .collect::<PyResult<_>>()?;
    let mut blocks: Vec<FlightBlock> = blocks
        .into_iter()
        .map(|(first, change, most)| FlightBlock { first, change, most })
        .collect();
    let peak = parts::peak(&mut blocks);
    let report = parts::merge(input, &specs, window, &parts, peak)
        .map_err(|err| policy_error(err.to_string()))?;
    let json = serde_json::to_vec(&report).map_err(|e| policy_error(e.to_string()))?;
    Ok(PyBytes::new(py, &json))
}

/// Sums up a range of admitted requests' events in time order, the first at `first`, each
/// a kind: 0 a completion, 1 an arrival, 2 an arrival that completes at once. Returns
/// `(first, change, most)`: how many more are in flight after it, and the most more within
/// it.
#[pyfunction]
pub(crate) fn flight_block(first: i64, kinds: Vec<u8>) -> PyResult<(i64, i64, i64)> {
    let events = kinds.iter().map(|&kind| match kind {
        0 => Ok(FlightEvent::Completes),
        1 => Ok(FlightEvent::Arrives),
        2 => Ok(FlightEvent::Passes),
        other => Err(policy_error(format!("{other} is no kind of flight event"))),
    });
    let events: Vec<FlightEvent> = events.collect::<PyResult<_>>()?;
    let FlightBlock { first, change, most } = parts::block(first, events);
    Ok((first, change, most))
}
