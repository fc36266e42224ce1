//! `Limit` and `Policy`: the engine's limits as Python objects, checked whole when built.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyInt, PyString};
use ratelimit_core::policy::MAX_LAYERS;
use ratelimit_core::settle::Charge;
use ratelimit_core::units::time::Span;
use ratelimit_engine::limit::{self, LimitError};
use ratelimit_engine::settled::{self, LayerSpec, Sum};

use crate::errors::policy_error;
use crate::keywords::suggestion;

/// One limit: a limiter at a rate, with its burst, the column that keys it, what each
/// event costs it, its own parameters, and the length of its busiest window; or a layer
/// settled after the response (`charge=`, `reserve=`, a cost summed over columns, or a
/// cap on requests in flight), which a replay with `duration=` or `end=` takes.
#[pyclass(module = "ratelimit_replay", name = "Limit", frozen, eq, from_py_object)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PyLimit {
    pub(crate) layer: LayerSpec,
    /// The busiest window's length, as given and read.
    pub(crate) window: Option<(String, Span)>,
}

impl PyLimit {
    /// The limit of one that charges at arrival: a `PolicyError` for a layer settled
    /// after the response, which only a replay with completions takes.
    pub(crate) fn limit(&self) -> PyResult<limit::Limit> {
        self.layer.limit().ok_or_else(|| {
            policy_error(format!(
                "Limit {} is settled after the response: give duration= or end=, when each \
                 request completes",
                self.layer
            ))
        })
    }

    /// Checks the layer as its limiter takes it, with its busiest window: a rate HAProxy
    /// cannot count, a burst past the largest, is a `PolicyError`.
    fn checked(self) -> PyResult<PyLimit> {
        let Some(limit) = self.layer.limit().or_else(|| self.rate_limit().cloned()) else {
            return Ok(self);
        };
        let window = self.window.as_ref().map(|&(_, span)| span);
        limit.settings(window, true, "").map_err(|err| policy_error(err.to_string()))?;
        Ok(self)
    }

    /// The rate limit it holds, if it is one.
    fn rate_limit(&self) -> Option<&limit::Limit> {
        match &self.layer.bound {
            settled::Bound::Rate(limit) => Some(limit),
            settled::Bound::Concurrency(_) => None,
        }
    }
}

#[pymethods]
impl PyLimit {
    /// Builds the limit, checked as the limiter takes it: a name no limit takes is a
    /// `TypeError`, a value that makes no limit a `PolicyError`.
    #[new]
    #[pyo3(signature = (
        algo, rate=None, *, burst=None, window=None, cost=None, key=None, charge=None,
        reserve=None, max=None, **params
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        algo: &str,
        rate: Option<&str>,
        burst: Option<i64>,
        window: Option<&str>,
        cost: Option<&Bound<'_, PyAny>>,
        key: Option<&str>,
        charge: Option<&str>,
        reserve: Option<&Bound<'_, PyAny>>,
        max: Option<i64>,
        params: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyLimit> {
        let mut named: Vec<(String, Option<String>)> = vec![("algo".into(), Some(algo.into()))];
        named.extend(rate.map(|rate| ("rate".into(), Some(rate.into()))));
        named.extend(burst.map(|burst| ("burst".into(), Some(burst.to_string()))));
        if let Some(cost) = cost {
            named.push(("cost".into(), Some(word(cost, "cost")?)));
        }
        named.extend(key.map(|key| ("key".into(), Some(key.into()))));
        named.extend(charge.map(|charge| ("charge".into(), Some(charge.into()))));
        if let Some(reserve) = reserve {
            named.push(("reserve".into(), Some(word(reserve, "reserve")?)));
        }
        named.extend(max.map(|max| ("max".into(), Some(max.to_string()))));
        for (name, value) in params.into_iter().flat_map(|params| params.iter()) {
            let name: String = name.extract()?;
            let own = own_name(&name)?;
            // A bare parameter (nginx's nodelay) is True, or left out.
            if value.is_instance_of::<PyBool>() {
                if value.extract::<bool>()? {
                    named.push((own.into(), None));
                }
                continue;
            }
            named.push((own.into(), Some(word(&value, &name)?)));
        }
        let layer = LayerSpec::from_named(named.iter().map(|(n, v)| (n.as_str(), v.as_deref())))
            .map_err(|err| match err {
                LimitError::Unknown { name } => unexpected(&name),
                invalid => policy_error(invalid.to_string()),
            })?;
        let window = match window {
            Some(text) => Some((text.to_owned(), crate::keywords::window(text)?)),
            None => None,
        };
        // Settled now, as a replay would, so that a limit its limiter refuses (a rate
        // HAProxy cannot count, a burst past the largest) is refused as it is built.
        PyLimit { layer, window }.checked()
    }

    /// The limit a ``--limit`` SPEC writes, as ``str(limit)`` gives it:
    /// ``Limit.parse("algo=gcra,rate=5/h,burst=5")``.
    #[staticmethod]
    fn parse(spec: &str) -> PyResult<PyLimit> {
        let layer: LayerSpec =
            spec.parse().map_err(|err: LimitError| policy_error(err.to_string()))?;
        PyLimit { layer, window: None }.checked()
    }

    /// The limiter's name, as `ratelimit limiters` lists it; ``concurrency`` for a cap on
    /// requests in flight.
    #[getter]
    fn algo(&self) -> &'static str {
        self.rate_limit().map_or("concurrency", |limit| limit.algorithm.name())
    }

    /// The rate: N events per period, as in ``5/h``; None for a cap in flight.
    #[getter]
    fn rate(&self) -> Option<String> {
        self.rate_limit().map(|limit| limit.rate.to_string())
    }

    /// The burst as its system writes it, if given.
    #[getter]
    fn burst(&self) -> Option<u64> {
        self.rate_limit().and_then(|limit| limit.burst)
    }

    /// The length of the busiest window to report, if given (else the rate's period).
    #[getter]
    fn window(&self) -> Option<&str> {
        self.window.as_ref().map(|(text, _)| text.as_str())
    }

    /// What each event costs (its real cost, for a layer settled after the response): a
    /// number of units, a column that holds it, or a sum of columns
    /// (``"prompt_tokens+completion_tokens"``).
    #[getter]
    fn cost<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        summed(py, &self.layer.cost)
    }

    /// When the cost is charged: ``arrival``, ``reserve`` or ``completion``.
    #[getter]
    fn charge(&self) -> &'static str {
        self.layer.charge.name()
    }

    /// The estimate reserved at arrival, with ``charge="reserve"``: a number, a column or
    /// a sum of columns; else None.
    #[getter]
    fn reserve<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.layer.reserve.as_ref().map(|sum| summed(py, sum)).transpose()
    }

    /// The most requests in flight, for a cap (``Limit("concurrency", max=4)``); else None.
    #[getter]
    fn max(&self) -> Option<u64> {
        match self.layer.bound {
            settled::Bound::Concurrency(max) => Some(max.get()),
            settled::Bound::Rate(_) => None,
        }
    }

    /// Whether it is read from requests, not events: a cost summed over columns, a charge
    /// after arrival or a cap in flight.
    #[getter]
    fn _of_requests(&self) -> bool {
        self.layer.limit().is_none()
    }

    /// The column whose values each get a state of their own, if any.
    #[getter]
    fn key(&self) -> Option<&str> {
        self.layer.key.as_deref()
    }

    /// The limiter's own parameters, as given: each with its value, True for a bare one.
    #[getter]
    fn params<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let params = PyDict::new(py);
        for (name, value) in self.rate_limit().iter().flat_map(|limit| &limit.params.0) {
            let name = name.replace('-', "_");
            match value {
                Some(value) => params.set_item(name, value)?,
                None => params.set_item(name, true)?,
            }
        }
        Ok(params)
    }

    /// The limit as ``--limit`` writes it: ``algo=gcra,rate=5/h,burst=5``.
    fn __str__(&self) -> String {
        match self.layer.limit() {
            Some(limit) => limit.to_string(),
            None => self.layer.to_string(),
        }
    }

    /// Pickled as its spec and its window: `Limit.parse` reads the spec back to the same
    /// limit.
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<crate::Reduced<'py>> {
        let rebuild = py.get_type::<PyLimit>().getattr("_unpickled")?;
        Ok((rebuild, (self.__str__(), self.window()).into_pyobject(py)?))
    }

    /// The limit pickled as `spec` and `window`.
    #[staticmethod]
    fn _unpickled(spec: &str, window: Option<&str>) -> PyResult<PyLimit> {
        let parsed = PyLimit::parse(spec)?;
        let window = match window {
            Some(text) => Some((text.to_owned(), crate::keywords::window(text)?)),
            None => None,
        };
        Ok(PyLimit { window, ..parsed })
    }

    fn __repr__(&self) -> String {
        let mut text = format!("Limit({}", quoted(self.algo()));
        if let Some(rate) = self.rate() {
            text += &format!(", {}", quoted(&rate));
        }
        if let Some(burst) = self.burst() {
            text += &format!(", burst={burst}");
        }
        if let Some(max) = self.max() {
            text += &format!(", max={max}");
        }
        if let Some((window, _)) = &self.window {
            text += &format!(", window={}", quoted(window));
        }
        let shown = |sum: &Sum| match (&sum.columns[..], sum.number) {
            ([], units) => units.to_string(),
            _ => quoted(&sum.to_string()),
        };
        if self.layer.cost != Sum::number(1) {
            text += &format!(", cost={}", shown(&self.layer.cost));
        }
        if let Some(key) = &self.layer.key {
            text += &format!(", key={}", quoted(key));
        }
        match (&self.layer.reserve, self.layer.charge) {
            (Some(reserve), _) => text += &format!(", reserve={}", shown(reserve)),
            (None, Charge::Arrival) => {}
            (None, charge) => text += &format!(", charge={}", quoted(charge.name())),
        }
        for (name, value) in self.rate_limit().iter().flat_map(|limit| &limit.params.0) {
            let name = name.replace('-', "_");
            match value {
                Some(value) => text += &format!(", {name}={}", quoted(value)),
                None => text += &format!(", {name}=True"),
            }
        }
        text + ")"
    }
}

/// A sum as Python has it: an int for a number alone, else the text (a column, or
/// columns summed).
fn summed<'py>(py: Python<'py>, sum: &Sum) -> PyResult<Bound<'py, PyAny>> {
    Ok(match &sum.columns[..] {
        [] => sum.number.into_pyobject(py)?.into_any(),
        _ => sum.to_string().into_pyobject(py)?.into_any(),
    })
}

/// Limits that decide together, all or nothing: an event passes only if every one admits
/// it, and one refused charges none.
#[pyclass(module = "ratelimit_replay", name = "Policy", frozen)]
#[derive(Clone, Debug)]
pub(crate) struct PyPolicy {
    pub(crate) limits: Vec<PyLimit>,
}

#[pymethods]
impl PyPolicy {
    /// Builds the policy of `limits`, checked whole: 1 to 16 of them, the keyed ones all
    /// keyed by one column and the weighed ones weighed by one, with one busiest window.
    #[new]
    fn new(limits: Vec<PyLimit>) -> PyResult<PyPolicy> {
        if limits.is_empty() || limits.len() > MAX_LAYERS {
            let n = limits.len();
            return Err(policy_error(format!("a policy has 1 to {MAX_LAYERS} limits, not {n}")));
        }
        // Limits that charge at arrival read one key column and one cost column; layers
        // settled after the response, one key column.
        let each: Option<Vec<limit::Limit>> = limits.iter().map(|l| l.layer.limit()).collect();
        match each {
            Some(each) => ratelimit_engine::limits::columns(&each, "the limits of a policy")
                .map(drop)
                .map_err(|err| policy_error(err.to_string()))?,
            None => {
                let layers: Vec<LayerSpec> = limits.iter().map(|l| l.layer.clone()).collect();
                ratelimit_engine::settled::key_column(&layers)
                    .map(drop)
                    .map_err(|err| policy_error(err.to_string()))?
            }
        }
        let mut windows = limits.iter().filter_map(|l| l.window.as_ref());
        if let Some((first, span)) = windows.next()
            && let Some((other, _)) = windows.find(|(_, other)| other != span)
        {
            return Err(policy_error(format!(
                "the limits of a policy report one busiest window, and these give two: \
                 {first} and {other}"
            )));
        }
        Ok(PyPolicy { limits })
    }

    /// The layers of a provider's preset, `PROVIDER:TIER:MODEL`, as `ratelimit presets`
    /// lists them: ``Policy.preset("anthropic:tier-2:claude-sonnet")``.
    #[staticmethod]
    fn preset(name: &str) -> PyResult<PyPolicy> {
        let layers = ratelimit_engine::settled::presets::one(name).map_err(policy_error)?;
        PyPolicy::new(layers.into_iter().map(|layer| PyLimit { layer, window: None }).collect())
    }

    /// Its limits, in order.
    #[getter]
    fn limits(&self) -> Vec<PyLimit> {
        self.limits.clone()
    }

    fn __len__(&self) -> usize {
        self.limits.len()
    }

    fn __repr__(&self) -> String {
        let each: Vec<String> = self.limits.iter().map(PyLimit::__repr__).collect();
        format!("Policy([{}])", each.join(", "))
    }
}

/// The name a limit takes for keyword `name`: the same, or with `_` for `-` (`dry_run` is
/// nginx's `dry-run`); a `TypeError` if no limit takes it.
fn own_name(name: &str) -> PyResult<&'static str> {
    let dashed = name.replace('_', "-");
    // The common names have keywords of their own.
    let mut own = own_names().filter(|&own| own == name || own == dashed);
    own.next().ok_or_else(|| unexpected(name))
}

/// Whether keyword `name` is a limiter's own parameter, or a system's rate word.
pub(crate) fn is_param(name: &str) -> bool {
    let dashed = name.replace('_', "-");
    own_names().any(|own| own == name || own == dashed)
}

/// The keywords of a limiter's own parameters and a system's rate words (`dry_run`).
pub(crate) fn param_keywords() -> Vec<String> {
    own_names().map(|own| own.replace('-', "_")).collect()
}

/// The `TypeError` of a keyword `name` no limit takes, with the one it may mean.
fn unexpected(name: &str) -> PyErr {
    let keywords = ["algo", "rate", "burst", "window", "cost", "key"];
    let all: Vec<String> =
        keywords.iter().map(|k| (*k).to_owned()).chain(param_keywords()).collect();
    let hint = suggestion(name, all.iter().map(String::as_str));
    PyTypeError::new_err(format!("Limit() got an unexpected keyword argument '{name}'{hint}"))
}

/// `text` as Python's `repr` writes a str: in single quotes.
fn quoted(text: &str) -> String {
    format!("'{}'", text.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// The names of a limit that are not [`limit::COMMON`]: a system's rate words, and each
/// limiter's own parameters.
fn own_names() -> impl Iterator<Item = &'static str> {
    limit::Limit::names().into_iter().filter(|name| !limit::COMMON.contains(name))
}

/// The text of a value given by keyword `name`: a str as it is, an int in decimal.
fn word(value: &Bound<'_, PyAny>, name: &str) -> PyResult<String> {
    if value.is_instance_of::<PyString>() {
        return value.extract();
    }
    if value.is_instance_of::<PyInt>() && !value.is_instance_of::<PyBool>() {
        return Ok(value.str()?.to_string());
    }
    let kind = value.get_type().name()?;
    Err(PyTypeError::new_err(format!("Limit() argument '{name}' must be str or int, not {kind}")))
}
