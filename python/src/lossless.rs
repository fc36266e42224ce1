//! `min_bucket`, `min_rate` and `curve`: the engine's smallest lossless sizes of a path or
//! of Arrow data, with the GIL released, handed back as the JSON the program prints; and
//! `Sizing`, the same asked of Spark's and Dask's chunks.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};
use pyo3_arrow::input::AnyRecordBatch;
use ratelimit_core::limiter::Algorithm;
use ratelimit_engine::error::Error;
use ratelimit_engine::lossless::{self, Found, MinBucketAsk};
use ratelimit_engine::recommend::RecommendAsk;
use ratelimit_input::asked::Names;
use ratelimit_input::catalog::{ReadOptions, Source};
use ratelimit_input::cost::Cost;
use ratelimit_input::progress::Stop;

use crate::errors::{Data, policy_error, raise};
use crate::keywords::{self, Given, word, words};

/// The sizings the package asks of the engine.
pub(crate) enum Asked {
    /// The smallest bucket at each rate.
    MinBucket(MinBucketAsk),
    /// The smallest rate for each burst.
    MinRate(Vec<u64>),
    /// The whole curve.
    Curve,
    /// The frontier of bursts that leave a share of keys untouched, and a point of it.
    Recommend(RecommendAsk),
}

/// Finds the smallest lossless bucket at each of `rates` (each a rate, a comma list or a
/// range, as `--rate` takes them) of `data` (a path, or Arrow data), keyed by `key` and weighed by
/// `cost` if given. The keywords of `options` are what to read, `top`, `cover` and `system` (nginx,
/// haproxy or traefik). Returns the program's JSON.
#[pyfunction]
#[pyo3(signature = (data, rates, *, key=None, cost=None, options=None))]
pub(crate) fn min_bucket<'py>(
    py: Python<'py>,
    data: Given,
    rates: Vec<String>,
    key: Option<String>,
    cost: Option<&Bound<'py, PyAny>>,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyBytes>> {
    let mut ask = MinBucketAsk { top: 10, ..MinBucketAsk::default() };
    ask.rates = read_rates(&rates)?;
    let known = ["top", "cover", "system", "for"];
    let mut asked = keywords::read("min_bucket", options, &[&known], |name, value| {
        match name {
            "top" => ask.top = value.extract()?,
            "cover" => ask.cover = Some(read_cover(&word(value)?)?),
            "system" | "for" => ask.system = Some(system_of(&word(value)?)?),
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    asked.cost = cost_of(cost)?;
    let sizing = Asked::MinBucket(ask);
    size(py, sizing, data, &asked, key.as_deref())
}

/// Finds the smallest lossless rate for each of `bursts` of `data` (a bucket for each
/// value of its `key` column, if given: the highest any key needs), weighed by `cost` if
/// given; the keywords of `options` are what to read. Returns the program's JSON.
#[pyfunction]
#[pyo3(signature = (data, bursts, *, key=None, cost=None, options=None))]
pub(crate) fn min_rate<'py>(
    py: Python<'py>,
    data: Given,
    bursts: &Bound<'py, PyAny>,
    key: Option<String>,
    cost: Option<&Bound<'py, PyAny>>,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyBytes>> {
    let mut each = Vec::new();
    for text in words(bursts)? {
        for one in text.split(',') {
            match one.trim().parse::<u64>() {
                Ok(burst) if burst > 0 => each.push(burst),
                _ => {
                    return Err(policy_error(format!(
                        "burst={one}: a burst is a whole number, at least 1"
                    )));
                }
            }
        }
    }
    let mut asked = keywords::read("min_rate", options, &[], |_, _| Ok(false))?;
    asked.cost = cost_of(cost)?;
    size(py, Asked::MinRate(each), data, &asked, key.as_deref())
}

/// Draws the whole burst–rate curve of `data` (whose `key`
/// column, if given, must be there), weighed by `cost` if given; the keywords of `options`
/// are what to read. Returns the program's JSON.
#[pyfunction]
#[pyo3(signature = (data, *, key=None, cost=None, options=None))]
pub(crate) fn curve<'py>(
    py: Python<'py>,
    data: Given,
    key: Option<String>,
    cost: Option<&Bound<'py, PyAny>>,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyBytes>> {
    let mut asked = keywords::read("curve", options, &[], |_, _| Ok(false))?;
    asked.cost = cost_of(cost)?;
    size(py, Asked::Curve, data, &asked, key.as_deref())
}

/// The system keyword (`system=`, or `for=`): a limiter's name.
pub(crate) fn system_of(text: &str) -> PyResult<Algorithm> {
    text.parse().map_err(|_| policy_error(format!("system={text} is no limiter")))
}

/// The cost keyword: a column's name, or a number of units.
pub(crate) fn cost_of(cost: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Cost>> {
    let Some(cost) = cost else { return Ok(None) };
    let text = word(cost)?;
    let parsed = text.parse().map_err(|e| policy_error(format!("cost={text}: {e}")))?;
    Ok(Some(parsed))
}

/// A `min_bucket` (or, with no rate, a `curve`) in chunks, for Spark's and Dask's
/// partitions: asked once on the driver, checked whole, and sent to every executor, which
/// unpickles it from what it was made of.
#[pyclass(module = "ratelimit_replay._native", frozen)]
pub(crate) struct Sizing {
    chunked: ratelimit_engine::parts::Chunked,
    /// What it was made of, to pickle it.
    made_of: Py<PyTuple>,
}

#[pymethods]
impl Sizing {
    /// Asks for the smallest lossless bucket at each of `rates` (the whole curve if none),
    /// keyed by `key` and weighed by `cost` if given; the keywords of `options` are what
    /// to read, `top` and `cover`.
    #[new]
    #[pyo3(signature = (rates, key=None, cost=None, options=None))]
    fn new(
        py: Python<'_>,
        rates: Vec<String>,
        key: Option<String>,
        cost: Option<&Bound<'_, PyAny>>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Sizing> {
        let made_of = (rates.clone(), key.clone(), cost, options).into_pyobject(py)?.unbind();
        let mut chunked = ratelimit_engine::parts::Chunked {
            rates: Vec::new(),
            key,
            cost: cost_of(cost)?,
            asked: ratelimit_input::asked::Asked::default(),
            top: 10,
            cover: None,
        };
        chunked.rates = read_rates(&rates)?;
        let (mut top, mut cover) = (10, None);
        chunked.asked =
            keywords::read("min_bucket", options, &[&["top", "cover"]], |name, value| {
                match name {
                    "top" => top = value.extract()?,
                    "cover" => cover = Some(read_cover(&word(value)?)?),
                    _ => return Ok(false),
                }
                Ok(true)
            })?;
        (chunked.top, chunked.cover) = (top, cover);
        Ok(Sizing { chunked, made_of })
    }

    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<crate::Reduced<'py>> {
        let class = py.get_type::<Sizing>().into_any();
        Ok((class, self.made_of.bind(py).clone()))
    }
}

/// Returns what a chunk of rows tells (a Spark partition's: a range of one stream in time
/// order, or whole keys): lines of text, to be merged with the other chunks' by
/// `merge_chunks`. `name` names the chunk in messages. The GIL is released meanwhile.
#[pyfunction]
pub(crate) fn chunk_lines(
    py: Python<'_>,
    sizing: &Sizing,
    data: AnyRecordBatch,
    name: String,
) -> PyResult<Vec<String>> {
    let given = Source::Arrow(crate::table(data, name)?);
    let lines = py.detach(|| ratelimit_engine::parts::chunk_lines(&sizing.chunked, given));
    lines.map_err(|err| raise(err, Data::Arrow))
}

/// Merges every chunk's lines (of one stream, in its order) into what `ratelimit
/// min-bucket --format json` prints for all the rows.
#[pyfunction]
pub(crate) fn merge_chunks<'py>(
    py: Python<'py>,
    sizing: &Sizing,
    chunks: Vec<Vec<String>>,
) -> PyResult<Bound<'py, PyBytes>> {
    let merged = py.detach(|| ratelimit_engine::parts::merge_chunks(&sizing.chunked, &chunks));
    let merged = merged.map_err(|err| raise(err, Data::Arrow))?;
    Ok(PyBytes::new(py, &merged))
}

/// Reads rates, each a rate, a comma list or a range, as `--rate` takes them.
pub(crate) fn read_rates(rates: &[String]) -> PyResult<Vec<ratelimit_core::units::rate::Rate>> {
    let mut all = Vec::new();
    // Each a rate, or a range; commas part several, as `--rate` splits them.
    for text in rates.iter().flat_map(|text| text.split(',')) {
        let parsed = ratelimit_core::units::rate::parse_rates(text);
        all.extend(parsed.map_err(|e| policy_error(format!("rate={text}: {e}")))?);
    }
    Ok(all)
}

/// Reads a share of keys, as `--cover` takes it.
pub(crate) fn read_cover(text: &str) -> PyResult<ratelimit_core::sizing::quantile::Percent> {
    text.parse().map_err(|e| policy_error(format!("cover={text}: {e}")))
}

/// Sizes the source as `sizing` asks, reading it as `asked` says, keyed by `key`: with the
/// GIL released, Ctrl-C stopping it, and the reading's notes warned of.
pub(crate) fn size<'py>(
    py: Python<'py>,
    sizing: Asked,
    data: Given,
    asked: &ratelimit_input::asked::Asked,
    key: Option<&str>,
) -> PyResult<Bound<'py, PyBytes>> {
    let (kind, source) = data.source()?;
    let error = |err: Error| raise(err, kind);
    // An nginx variable names an access log's field, as `--key` takes it: $binary_remote_addr.
    let key = key.map(ratelimit_engine::limit::column);
    let settled = asked.settle(&source, key.as_deref().map(|key| (key, "key=")), Names::Keywords);
    let mut read = settled.map_err(|err| error(err.into()))?;
    let work = |stop| {
        read.stop = stop;
        sized(&sizing, &source, &read)
    };
    answered(py, work, kind)
}

/// Runs `work` with the GIL released, Ctrl-C stopping its reads, warns of its notes, and
/// returns the JSON it found; its error raised as what `kind` of source says.
pub(crate) fn answered<'py>(
    py: Python<'py>,
    work: impl FnOnce(Stop) -> anyhow::Result<Found<Vec<u8>>> + Send,
    kind: Data,
) -> PyResult<Bound<'py, PyBytes>> {
    let found = found(py, |stop| work(stop).map_err(Error::from), kind)?;
    Ok(PyBytes::new(py, &found))
}

/// Runs `work` with the GIL released, Ctrl-C stopping its reads, warns of its notes (as
/// of the package's function that called this crate), and returns what it found; its
/// error raised as what `kind` of source says.
pub(crate) fn found<T: Send>(
    py: Python<'_>,
    work: impl FnOnce(Stop) -> Result<Found<T>, Error> + Send,
    kind: Data,
) -> PyResult<T> {
    let (found, interrupted) = py.detach(|| crate::interruptible(work));
    if let Some(interrupt) = interrupted {
        return Err(interrupt);
    }
    let Found { found, notes } = found.map_err(|err| raise(err, kind))?;
    crate::warn(py, &notes, 2)?;
    Ok(found)
}

/// Sizes as `sizing` asks, and returns the program's JSON.
fn sized(sizing: &Asked, source: &Source, read: &ReadOptions) -> anyhow::Result<Found<Vec<u8>>> {
    Ok(match sizing {
        Asked::MinBucket(ask) => {
            let Found { found, notes } = lossless::min_bucket(source, read, ask, Names::Keywords)?;
            Found { found: serde_json::to_vec(&found)?, notes }
        }
        Asked::MinRate(bursts) => {
            let Found { found, notes } = lossless::min_rate(source, read, bursts)?;
            Found { found: serde_json::to_vec(&found)?, notes }
        }
        Asked::Curve => {
            let Found { found, notes } = lossless::curve(source, read)?;
            Found { found: serde_json::to_vec(&found.segments)?, notes }
        }
        Asked::Recommend(ask) => {
            let Found { found, notes } =
                ratelimit_engine::recommend::recommend(source, read, ask, Names::Keywords)?;
            Found { found: serde_json::to_vec(&found)?, notes }
        }
    })
}
