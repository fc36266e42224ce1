//! `Parts`: a replay in parts (Spark's and Dask's partitions), asked once on the driver
//! and pickled to every executor, and what each part tells, merged in Rust. The engine's
//! `parts` are the calls; this file only hands them Arrow data and hands back arrays.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef, BooleanArray, Int64Array};
use arrow_schema::{DataType, Field};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};
use pyo3_arrow::PyArray;
use pyo3_arrow::input::AnyRecordBatch;
use ratelimit_engine::error::Error;
use ratelimit_engine::limits::LimitPolicy;
use ratelimit_engine::parts::{self, BlockRows, Job, Method, Part};
use ratelimit_engine::replay::Replayed;
use ratelimit_input::catalog::Source;

use crate::errors::{Data, raise};
use crate::keywords;
use crate::limit::PyLimit;

/// Arrow arrays, each a column.
type Columns<'py> = Vec<Bound<'py, PyAny>>;

/// Layers split for a replay in parts: the keyed layers' parts, their column, and each
/// global layer's place, spec, whether it is weighed, and its parts alone.
type Split = (Parts, String, Vec<(usize, String, bool, Parts)>);

/// A replay in parts of one limit (or layers all or nothing, with `layered`), its reading
/// and report keywords those of `replay`, checked whole when made. Executors unpickle it
/// from what it was made of.
#[pyclass(module = "ratelimit_replay._native", frozen)]
pub(crate) struct Parts {
    job: Job,
    /// What it was made of, to pickle it: the limits, `layered`, the window and the
    /// keywords.
    made_of: Py<PyTuple>,
}

/// The error of a part's call, raised as the engine's kind of it says.
fn raised(err: Error) -> PyErr {
    raise(err, Data::Arrow)
}

/// The rows of Arrow `data`, named `name` in reports and messages.
fn source(data: AnyRecordBatch, name: String) -> PyResult<Source> {
    Ok(Source::Arrow(crate::table(data, name)?))
}

#[pymethods]
impl Parts {
    #[new]
    #[pyo3(signature = (limits, layered, window=None, options=None))]
    fn new(
        py: Python<'_>,
        limits: Vec<PyLimit>,
        layered: bool,
        window: Option<&str>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Parts> {
        let made_of = (limits.clone(), layered, window, options).into_pyobject(py)?.unbind();
        let policy = crate::replay::policy(limits, layered)?;
        let (mut top, mut stop_counting) = (10, false);
        let asked = keywords::read("replay", options, &[&keywords::REPLAY], |name, value| {
            match name {
                "top" => top = value.extract()?,
                "stop_counting_over_limit" => stop_counting = value.extract()?,
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        let mut job = Job::new(policy, asked);
        (job.top, job.stop_counting) = (top, stop_counting);
        job.window = window.map(keywords::window).transpose()?;
        Ok(Parts { job, made_of })
    }

    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<crate::Reduced<'py>> {
        let class = py.get_type::<Parts>().into_any();
        Ok((class, self.made_of.bind(py).clone()))
    }

    /// How the decisions (with `report`, the report) are found exactly in parts, as the
    /// engine plans it from the registry's facts: `("by key", False, None)`, `("ranges",
    /// transfer, None)` (transfer: by GCRA's functions of the ranges), or `("one pass",
    /// False, why)`. Layers are by key where all are keyed by one column (`key`), else in
    /// one pass, unless `beside` splits them.
    #[pyo3(signature = (report=false))]
    fn method(&self, report: bool) -> PyResult<(&'static str, bool, Option<&'static str>)> {
        Ok(match self.job.method(report).map_err(raised)? {
            Method::ByKey => ("by key", false, None),
            Method::Ranges { transfer } => ("ranges", transfer, None),
            Method::OnePass(why) => ("one pass", false, Some(why)),
        })
    }

    /// The blocks of time the parts' events are cut into (µs): their width, and how far
    /// each reads on into the next.
    fn blocks(&self) -> PyResult<(i64, i64)> {
        self.job.blocks().map_err(raised)
    }

    /// The one column that keys every layer, if each key's events are decided by its own
    /// layers alone; `None` otherwise, and for one limit.
    #[getter]
    fn key(&self) -> PyResult<Option<String>> {
        parts::layers_key(&self.job).map_err(raised)
    }

    /// Layers keyed by one column beside global ones that refuse nothing beside them if
    /// they refuse nothing alone: (the keyed layers' parts, their column, and for each
    /// global layer its place, its spec, whether it is weighed, and its parts alone);
    /// `None` if they do not split so.
    fn beside(&self, py: Python<'_>) -> PyResult<Option<Split>> {
        let Some(beside) = parts::layers_beside(&self.job) else { return Ok(None) };
        // Each made of its limits, as the split gives them, and this one's window and
        // keywords.
        let made = |job: Job| -> PyResult<Parts> {
            let (limits, layered) = match &job.policy {
                LimitPolicy::AllOrNothing(limits) => (limits.clone(), true),
                LimitPolicy::One(limit) => (vec![limit.clone()], false),
            };
            let limits: Vec<PyLimit> = (limits.into_iter())
                .map(|limit| PyLimit { layer: limit.into(), window: None })
                .collect();
            let made_of = self.made_of.bind(py);
            let rest = (made_of.get_item(2)?, made_of.get_item(3)?);
            let made_of = (limits, layered, rest.0, rest.1).into_pyobject(py)?.unbind();
            Ok(Parts { job, made_of })
        };
        let keyed = made(beside.keyed)?;
        let mut global = Vec::with_capacity(beside.global.len());
        for layer in beside.global {
            global.push((layer.place, layer.spec, layer.weighed, made(layer.alone)?));
        }
        Ok(Some((keyed, beside.key, global)))
    }

    /// Replays every row of `data` (named `name`, `<arrow>` if `None`) in one pass: the
    /// report as JSON, as the program prints it, and with `decisions` each row's decision
    /// as Arrow arrays (whether it passed, then with layers whether each admitted it). The
    /// reading's notes are warned of.
    #[pyo3(signature = (data, decisions=false, name=None))]
    fn replay<'py>(
        &self,
        py: Python<'py>,
        data: AnyRecordBatch,
        decisions: bool,
        name: Option<String>,
    ) -> PyResult<(Bound<'py, PyBytes>, Option<Columns<'py>>)> {
        let given = source(data, name.unwrap_or_else(|| "<arrow>".to_owned()))?;
        let work = |stop| {
            let Replayed { report, decisions, notes } = self.job.replay(&given, decisions, stop)?;
            let json = serde_json::to_vec(&report).map_err(anyhow::Error::from)?;
            Ok(ratelimit_engine::lossless::Found { found: (json, decisions), notes })
        };
        let (json, decided) = crate::lossless::found(py, work, Data::Arrow)?;
        let decided = match decided {
            Some(decided) if decisions => Some(crate::replay::columns(py, decided)?),
            _ => None,
        };
        Ok((PyBytes::new(py, &json), decided))
    }

    /// Replays the rows of `data`, which hold whole keys (a partition's): returns the
    /// part's summary, to be merged by `merge_parts`, and for each row its decision, its
    /// event's time in µs and its cost, as Arrow arrays (null for a row that made no
    /// event).
    fn replay_part<'py>(
        &self,
        py: Python<'py>,
        data: AnyRecordBatch,
        name: String,
    ) -> PyResult<(String, Columns<'py>)> {
        let given = source(data, name)?;
        let part = py.detach(|| parts::replay_part(&self.job, &given)).map_err(raised)?;
        told(py, part)
    }

    /// Returns what a chunk of one stream tells (a partition's rows, in time order, each
    /// decided as `passed` says), with the limiter's tat `start` (1/N µs) for a leaky
    /// queue's waits: its line, and each row's event as Arrow arrays.
    #[pyo3(signature = (data, name, passed, start=None))]
    fn stream_part<'py>(
        &self,
        py: Python<'py>,
        data: AnyRecordBatch,
        name: String,
        passed: Vec<Option<bool>>,
        start: Option<i128>,
    ) -> PyResult<(String, Columns<'py>)> {
        let given = source(data, name)?;
        let part = py.detach(|| parts::stream_part(&self.job, &given, &passed, start));
        told(py, part.map_err(raised)?)
    }

    /// Returns what a range of one stream tells (a partition's rows, in time order): its
    /// first and last events' times and the instant the limiter rests from after the last
    /// (µs; `None` if unknown), or `None` without events.
    fn range_line(
        &self,
        py: Python<'_>,
        data: AnyRecordBatch,
        name: String,
    ) -> PyResult<Option<parts::RangeSpan>> {
        let given = source(data, name)?;
        py.detach(|| parts::range_line(&self.job, &given)).map_err(raised)
    }

    /// Returns GCRA's function of a range of one stream, as a partial result for
    /// `range_starts`; `None` if the limiter does not decide as GCRA, or the function has
    /// too many pieces.
    fn range_transfer(
        &self,
        py: Python<'_>,
        data: AnyRecordBatch,
        name: String,
    ) -> PyResult<Option<String>> {
        let given = source(data, name)?;
        py.detach(|| parts::range_transfer(&self.job, &given)).map_err(raised)
    }

    /// Decides the rows of a range of one stream by GCRA from tat `start` (1/N µs): each
    /// row's decision as an Arrow array.
    fn decide_range<'py>(
        &self,
        py: Python<'py>,
        data: AnyRecordBatch,
        name: String,
        start: i128,
    ) -> PyResult<Bound<'py, PyAny>> {
        let given = source(data, name)?;
        let passed = py.detach(|| parts::decide_range(&self.job, &given, start)).map_err(raised)?;
        let array: ArrayRef = Arc::new(BooleanArray::from(passed));
        let field = Arc::new(Field::new("passed", DataType::Boolean, true));
        Ok(PyArray::new(array, field).into_pyobject(py)?.into_any())
    }

    /// Returns a line for each block of time in `data` (columns `block`, `t`, `c`,
    /// `passed`, `own`, sorted by block and time), to be merged by `merge_parts`.
    fn block_lines(&self, py: Python<'_>, data: AnyRecordBatch) -> PyResult<Vec<String>> {
        let columns = BlockColumns::of(data)?;
        let rows = BlockRows {
            blocks: &columns.blocks,
            times: &columns.times,
            costs: &columns.costs,
            passed: &columns.passed,
            own: &columns.own,
        };
        py.detach(|| parts::block_lines(&self.job, &rows)).map_err(raised)
    }

    /// Merges every part's summary and every block's line into what `ratelimit replay
    /// --format json` prints for all the rows.
    fn merge_parts<'py>(
        &self,
        py: Python<'py>,
        parts: Vec<String>,
        blocks: Vec<String>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let merged = py.detach(|| parts::merge_parts(&self.job, &parts, &blocks));
        Ok(PyBytes::new(py, &merged.map_err(raised)?))
    }
}

/// Returns the tat each range starts with (1/N µs), the ranges' functions composed in
/// order from the first's fresh tat.
#[pyfunction]
pub(crate) fn range_starts(lines: Vec<String>) -> PyResult<Vec<i128>> {
    parts::range_starts(&lines).map_err(raised)
}

/// A part's summary, and each row's decision, event time and cost, as Arrow arrays
/// `passed`, `t` and `c`.
fn told(py: Python<'_>, part: Part) -> PyResult<(String, Columns<'_>)> {
    let costs: Vec<Option<i64>> =
        part.costs.iter().map(|c| c.map(|c| i64::try_from(c).unwrap_or(i64::MAX))).collect();
    let columns: [(&str, ArrayRef); 3] = [
        ("passed", Arc::new(BooleanArray::from(part.passed))),
        ("t", Arc::new(Int64Array::from(part.times))),
        ("c", Arc::new(Int64Array::from(costs))),
    ];
    let mut arrays = Vec::with_capacity(columns.len());
    for (name, array) in columns {
        let field = Arc::new(Field::new(name, array.data_type().clone(), true));
        arrays.push(PyArray::new(array, field).into_pyobject(py)?.into_any());
    }
    Ok((part.summary, arrays))
}

/// The columns of blocks of time, as Arrow hands them over.
#[derive(Default)]
struct BlockColumns {
    blocks: Vec<i64>,
    times: Vec<i64>,
    costs: Vec<u64>,
    passed: Vec<bool>,
    own: Vec<bool>,
}

impl BlockColumns {
    /// Reads the columns `block`, `t`, `c`, `passed` and `own` of `data`.
    fn of(data: AnyRecordBatch) -> PyResult<BlockColumns> {
        let mut columns = BlockColumns::default();
        for batch in data.into_reader()? {
            let batch = batch
                .map_err(|err| PyValueError::new_err(format!("cannot read a block: {err}")))?;
            let column = |name: &str| {
                batch
                    .column_by_name(name)
                    .cloned()
                    .ok_or_else(|| PyValueError::new_err(format!("a block has no column {name}")))
            };
            let longs = |name: &str| -> PyResult<Vec<i64>> {
                let array = column(name)?;
                let longs = array
                    .as_primitive_opt::<Int64Type>()
                    .ok_or_else(|| PyValueError::new_err(format!("{name} is not a long")))?;
                Ok(longs.values().to_vec())
            };
            let flags = |name: &str| -> PyResult<Vec<bool>> {
                let array = column(name)?;
                let flags = array
                    .as_boolean_opt()
                    .ok_or_else(|| PyValueError::new_err(format!("{name} is not a boolean")))?;
                Ok(flags.iter().map(|f| f.unwrap_or(false)).collect())
            };
            columns.blocks.extend(longs("block")?);
            columns.times.extend(longs("t")?);
            columns.costs.extend(longs("c")?.into_iter().map(|c| u64::try_from(c).unwrap_or(0)));
            columns.passed.extend(flags("passed")?);
            columns.own.extend(flags("own")?);
        }
        Ok(columns)
    }
}
