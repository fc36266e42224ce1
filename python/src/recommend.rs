//! `recommend`: the engine's frontier of a path or of Arrow data, handed back as the JSON
//! the program prints; and `RecommendParts`, the same asked of Spark's buckets of whole
//! keys, stage by stage.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};
use pyo3_arrow::input::AnyRecordBatch;
use ratelimit_engine::parts::{RecommendParts as Parts, Stage};
use ratelimit_engine::recommend::RecommendAsk;
use ratelimit_input::asked::Asked as ReadAsked;
use ratelimit_input::catalog::Source;

use crate::errors::{Data, policy_error, raise};
use crate::keywords::{self, Given, word};
use crate::lossless::{Asked, cost_of, read_rates, size, system_of};

/// Recommends a limit for `data` keyed by `key`: for each rate (each a rate, a comma list
/// or a range; none: spread over the keys' demand), the least burst that leaves the share
/// `untouched` (a percentage, `99.9%`) of the keys untouched, and one point of them. The
/// keywords of `options` are what to read, `prefer`, `window` and `system`. Returns the
/// program's JSON.
#[pyfunction]
#[pyo3(signature = (data, key, *, rates=Vec::new(), untouched=None, cost=None, options=None))]
pub(crate) fn recommend<'py>(
    py: Python<'py>,
    data: Given,
    key: String,
    rates: Vec<String>,
    untouched: Option<String>,
    cost: Option<&Bound<'py, PyAny>>,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyBytes>> {
    let (ask, mut asked) = read_ask(&rates, untouched.as_deref(), options)?;
    asked.cost = cost_of(cost)?;
    size(py, Asked::Recommend(ask), data, &asked, Some(&key))
}

/// Reads what `recommend` is asked: its rates, its share, and the keywords of `options`
/// (what to read, `prefer`, `window` and `system`).
fn read_ask(
    rates: &[String],
    untouched: Option<&str>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<(RecommendAsk, ReadAsked)> {
    let mut ask = RecommendAsk { rates: read_rates(rates)?, ..RecommendAsk::default() };
    if let Some(share) = untouched {
        ask.untouched =
            share.parse().map_err(|e| policy_error(format!("untouched={share}: {e}")))?;
    }
    let known = ["prefer", "window", "system", "for"];
    let asked = keywords::read("recommend", options, &[&known], |name, value| {
        let text = word(value)?;
        match name {
            "prefer" => {
                ask.prefer = text.parse().map_err(|e| policy_error(format!("prefer={e}")))?;
            }
            "window" => {
                let span = text.parse().map_err(|e| policy_error(format!("window={text}: {e}")))?;
                ask.window = Some(span);
            }
            "system" | "for" => ask.system = Some(system_of(&text)?),
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    Ok((ask, asked))
}

/// A `recommend` in parts, for Spark's buckets of whole keys: asked once on the driver,
/// checked whole, and sent to every executor, which unpickles it from what it was made of.
/// Each part tells a stage (`demand`, then `needs` at the rates, then `refusals` at the
/// bursts); the driver merges each.
#[pyclass(module = "ratelimit_replay._native", frozen)]
pub(crate) struct RecommendParts {
    parts: Parts,
    /// What it was made of, to pickle it.
    made_of: Py<PyTuple>,
}

#[pymethods]
impl RecommendParts {
    /// Asks for `recommend` of the rows keyed by `key`, as `recommend` takes the rest.
    #[new]
    #[pyo3(signature = (key, rates, untouched=None, options=None))]
    fn new(
        py: Python<'_>,
        key: String,
        rates: Vec<String>,
        untouched: Option<String>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<RecommendParts> {
        let made_of = (key.clone(), rates.clone(), untouched.clone(), options);
        let made_of = made_of.into_pyobject(py)?.unbind();
        let (ask, asked) = read_ask(&rates, untouched.as_deref(), options)?;
        let key = ratelimit_engine::limit::column(&key);
        let parts = Parts { ask, key, asked };
        parts.check().map_err(|err| raise(err, Data::Arrow))?;
        Ok(RecommendParts { parts, made_of })
    }

    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<crate::Reduced<'py>> {
        let class = py.get_type::<RecommendParts>().into_any();
        Ok((class, self.made_of.bind(py).clone()))
    }

    /// What a part's rows (`data`, whole keys, named `name` in messages) tell at `stage`:
    /// `demand`; `needs` at `rates`; `refusals` at `rates` and `bursts`. The GIL is
    /// released meanwhile.
    #[pyo3(signature = (stage, data, name, rates=Vec::new(), bursts=Vec::new()))]
    fn part(
        &self,
        py: Python<'_>,
        stage: &str,
        data: AnyRecordBatch,
        name: String,
        rates: Vec<String>,
        bursts: Vec<u64>,
    ) -> PyResult<String> {
        let rates = read_rates(&rates)?;
        let stage = match stage {
            "demand" => Stage::Demand,
            "needs" => Stage::Needs(rates),
            "refusals" => Stage::Refusals(rates, bursts),
            other => return Err(policy_error(format!("stage={other} is no stage of recommend"))),
        };
        let given = Source::Arrow(crate::table(data, name)?);
        let told = py.detach(|| self.parts.part(given, &stage));
        told.map_err(|err| raise(err, Data::Arrow))
    }

    /// The frontier's rates: those asked, or spread over every part's `demand`.
    fn rates(&self, demands: Vec<String>) -> PyResult<Vec<String>> {
        let rates = self.parts.rates(&demands).map_err(|err| raise(err, Data::Arrow))?;
        Ok(rates.iter().map(ToString::to_string).collect())
    }

    /// The least burst at each rate, from every part's `needs`.
    fn bursts(&self, needs: Vec<String>) -> PyResult<Vec<u64>> {
        self.parts.bursts(&needs).map_err(|err| raise(err, Data::Arrow))
    }

    /// What `ratelimit recommend --format json` prints for all the rows, from every
    /// part's `needs` and `refusals` at `rates`.
    fn answer<'py>(
        &self,
        py: Python<'py>,
        rates: Vec<String>,
        needs: Vec<String>,
        refusals: Vec<String>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let rates = read_rates(&rates)?;
        let found = self.parts.answer(&rates, &needs, &refusals);
        Ok(PyBytes::new(py, &found.map_err(|err| raise(err, Data::Arrow))?))
    }
}
