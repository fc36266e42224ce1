//! The keywords of the package's calls: what to read (the engine's `Asked`), and where
//! limits run, each named as the program's flag is; an unknown one is a `TypeError` that
//! names it, with the one it may mean.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyList, PyString, PyTuple};
use ratelimit_core::units::time::Span;
use ratelimit_engine::fleet_ask::FleetAsk;
use ratelimit_engine::redis::{DEFAULT_PREFIX, RedisTarget};
use ratelimit_input::asked::{self, Asked};
use ratelimit_input::format::InputFormat;

use std::path::PathBuf;

use pyo3_arrow::input::AnyRecordBatch;
use ratelimit_input::catalog::Source;

use crate::errors::{Data, policy_error};

/// The keywords of what to read.
pub(crate) const READING: [&str; 15] = [
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
    "ties",
];

/// What a call reads: a path (a `str` or an `os.PathLike`), or Arrow data (anything that
/// speaks the Arrow PyCapsule interface), named `<arrow>`.
#[derive(FromPyObject)]
pub(crate) enum Given {
    /// A file, read as the program reads a FILE.
    Path(PathBuf),
    /// Arrow data.
    Arrow(AnyRecordBatch),
}

impl Given {
    /// The source, and how its errors count rows.
    pub(crate) fn source(self) -> PyResult<(Data, Source)> {
        match self {
            Given::Path(path) => {
                // A folder, or a pattern, is the files in it, as the program reads them.
                let source = Source::of_paths(std::slice::from_ref(&path));
                Ok((Data::File, source.map_err(crate::read_file_error)?))
            }
            Given::Arrow(data) => {
                Ok((Data::Arrow, Source::Arrow(crate::table(data, "<arrow>".to_owned())?)))
            }
        }
    }
}

/// The keywords of where limits run: Redis, or a simulated fleet.
pub(crate) const RUNNING: [&str; 8] =
    ["redis", "redis_prefix", "redis_timeout", "servers", "route", "seed", "share", "sync"];

/// The keywords `replay` takes beside what to read and where limits run.
pub(crate) const REPLAY: [&str; 2] = ["top", "stop_counting_over_limit"];

/// The keywords `report` takes beside what to read and where limits run.
pub(crate) const REPORT: [&str; 2] = ["top", "cover"];

/// The keywords `compare` takes beside what to read and where limits run.
pub(crate) const COMPARE: [&str; 2] = ["top", "window"];

/// Reads `options` (keyword to value; a `None` value is not given): the reading keywords
/// into what to read, and the others by `other`, which says whether it took each.
/// `function` names the call in the `TypeError` of a keyword neither takes, whose
/// suggestion is among [`READING`] and `known`.
pub(crate) fn read(
    function: &str,
    options: Option<&Bound<'_, PyDict>>,
    known: &[&[&str]],
    mut other: impl FnMut(&str, &Bound<'_, PyAny>) -> PyResult<bool>,
) -> PyResult<Asked> {
    let mut asked = Asked::default();
    for (name, value) in options.into_iter().flat_map(|options| options.iter()) {
        let name: String = name.extract()?;
        if value.is_none() || reading(&mut asked, &name, &value)? || other(&name, &value)? {
            continue;
        }
        let hint =
            suggestion(&name, READING.iter().chain(known.iter().copied().flatten()).copied());
        let text = format!("{function}() got an unexpected keyword argument '{name}'{hint}");
        return Err(PyTypeError::new_err(text));
    }
    Ok(asked)
}

/// Reads reading keyword `name` into `asked`, and says whether it is one.
fn reading(asked: &mut Asked, name: &str, value: &Bound<'_, PyAny>) -> PyResult<bool> {
    let shown = value.str()?.to_string();
    let bad = |err: &dyn std::fmt::Display| policy_error(format!("{name}={shown}: {err}"));
    match name {
        "input_format" => {
            let text = word(value)?;
            let format = InputFormat::named(&text).ok_or_else(|| {
                let names: Vec<&str> = InputFormat::ALL.iter().map(|f| f.name()).collect();
                policy_error(format!("input_format={text} is none of {}", names.join(", ")))
            })?;
            asked.format = Some(format);
        }
        "delimiter" => {
            asked.delimiter = Some(asked::delimiter(&word(value)?).map_err(|e| bad(&e))?);
        }
        "no_headers" => asked.no_headers = value.extract()?,
        "log_format" => asked.log_format = Some(word(value)?),
        "time" => asked.time_column = Some(word(value)?),
        "time_format" => asked.time_format = Some(word(value)?),
        "time_zone" => asked.time_zone = Some(word(value)?),
        "skip_bad" => asked.skip_bad = value.extract()?,
        "threads" => {
            let threads: usize = value.extract()?;
            if !(1..=1024).contains(&threads) {
                return Err(policy_error(format!("threads={threads} is not from 1 to 1024")));
            }
            asked.threads = Some(threads);
        }
        "since" => {
            let since = ratelimit_input::units::time::rfc3339(&word(value)?);
            asked.since = Some(since.map_err(|e| bad(&e))?);
        }
        "until" => asked.until = Some(word(value)?.parse().map_err(|e| bad(&e))?),
        "min_mag" => {
            asked.min_mag = Some(asked::millionths(&word(value)?).map_err(|e| bad(&e))?);
        }
        "where" => {
            for each in words(value)? {
                asked.at_least.push(each.parse().map_err(|e| bad(&e))?);
            }
        }
        "empty_key" => asked.empty_key = Some(word(value)?),
        "ties" => asked.ties = word(value)?.parse().map_err(|e: String| bad(&e))?,
        _ => return Ok(false),
    }
    Ok(true)
}

/// Where limits run, as the [`RUNNING`] keywords say: Redis, or a simulated fleet.
#[derive(Default)]
pub(crate) struct Running {
    /// Redis, if asked.
    pub(crate) redis: Redis,
    /// The fleet, as asked.
    pub(crate) fleet: FleetAsk,
}

impl Running {
    /// Reads keyword `name` of where limits run, and says whether it is one.
    pub(crate) fn read(&mut self, name: &str, value: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(self.redis.read(name, value)? || fleet(&mut self.fleet, name, value)?)
    }
}

/// Where limits run in Redis, as its keywords say: at the URLs of `redis` (a cluster's seed
/// nodes), under `redis_prefix`, each round trip at most `redis_timeout`.
#[derive(Default)]
pub(crate) struct Redis {
    /// The URLs: a server's, or a cluster's seed nodes; none for no Redis.
    pub(crate) urls: Vec<String>,
    /// The prefix of every key, if not the program's.
    pub(crate) prefix: Option<String>,
    /// The longest a round trip may take, if not 5 s.
    pub(crate) timeout: Option<std::time::Duration>,
}

impl Redis {
    /// Reads Redis keyword `name`, and says whether it is one.
    pub(crate) fn read(&mut self, name: &str, value: &Bound<'_, PyAny>) -> PyResult<bool> {
        match name {
            "redis" => self.urls = words(value)?,
            "redis_prefix" => self.prefix = Some(word(value)?),
            "redis_timeout" => self.timeout = Some(timeout(&word(value)?)?),
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The Redis asked for, if any.
    pub(crate) fn target(self) -> Option<RedisTarget> {
        (!self.urls.is_empty()).then(|| RedisTarget {
            urls: self.urls,
            prefix: self.prefix.unwrap_or_else(|| DEFAULT_PREFIX.to_owned()),
            timeout: self.timeout.unwrap_or(std::time::Duration::from_secs(5)),
        })
    }
}

/// Reads fleet keyword `name` into `fleet`, and says whether it is one.
pub(crate) fn fleet(fleet: &mut FleetAsk, name: &str, value: &Bound<'_, PyAny>) -> PyResult<bool> {
    let bad = |err: &dyn std::fmt::Display| policy_error(format!("{name}={value}: {err}"));
    match name {
        "servers" => fleet.servers = Some(value.extract()?),
        "route" => fleet.route = Some(word(value)?.parse().map_err(|e: String| bad(&e))?),
        "seed" => fleet.seed = Some(value.extract()?),
        "share" => fleet.share = Some(word(value)?.parse().map_err(|e: String| bad(&e))?),
        "sync" => {
            for each in words(value)? {
                fleet.sync.push(each.parse().map_err(|e| bad(&e))?);
            }
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// Reads the busiest windows' length, longer than zero.
pub(crate) fn window(text: &str) -> PyResult<Span> {
    let span: Span = text.parse().map_err(|e| policy_error(format!("window={text}: {e}")))?;
    if span.is_zero() {
        return Err(policy_error("window must be longer than zero"));
    }
    Ok(span)
}

/// Reads a Redis round trip's longest time, as `--redis-timeout` takes it.
pub(crate) fn timeout(text: &str) -> PyResult<std::time::Duration> {
    let span: Span = text.parse().map_err(|err| policy_error(format!("redis_timeout: {err}")))?;
    match u64::try_from(span.as_micros()) {
        Ok(micros) if micros > 0 => Ok(std::time::Duration::from_micros(micros)),
        _ => Err(policy_error("redis_timeout must be longer than zero")),
    }
}

/// ` (did you mean 'KNOWN'?)` for the one of `known` that `name` may misspell, as the
/// engine offers it; empty if none is close.
pub(crate) fn suggestion<'a>(name: &str, known: impl Iterator<Item = &'a str>) -> String {
    ratelimit_engine::suggest::did_you_mean(name, known)
}

/// A keyword's value as text: a string as it is, a number as Python writes it.
pub(crate) fn word(value: &Bound<'_, PyAny>) -> PyResult<String> {
    if value.is_instance_of::<PyBool>() {
        return Err(PyTypeError::new_err(format!("{value} is a bool: give a value")));
    }
    match value.cast::<PyString>() {
        Ok(text) => Ok(text.to_str()?.to_owned()),
        Err(_) => Ok(value.str()?.to_str()?.to_owned()),
    }
}

/// A keyword's values: a list or tuple of them, or one.
pub(crate) fn words(value: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
    if value.is_instance_of::<PyList>() || value.is_instance_of::<PyTuple>() {
        return value.try_iter()?.map(|each| word(&each?)).collect();
    }
    Ok(vec![word(value)?])
}
