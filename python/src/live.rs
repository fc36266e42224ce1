//! `Limiter`: the engine's live limiter, deciding one event a call, with the GIL released.

use std::sync::Mutex;

use pyo3::prelude::*;
use ratelimit_core::units::time::Timestamp;
use std::collections::HashMap;

use ratelimit_engine::live_limiter::{LiveLimiter, LiveOptions};
use ratelimit_engine::live_settled::{LiveSettling, RedisSettling};

use crate::errors::{Data, policy_error, raise};
use crate::keywords;
use crate::limit::PyLimit;

/// One limit, or several all or nothing, decided live: each call decides one event, with
/// the GIL released (a Redis round trip is waited for by this thread alone).
#[pyclass(module = "ratelimit_replay._native")]
pub(crate) struct Limiter(Mutex<LiveLimiter>);

#[pymethods]
impl Limiter {
    /// Makes the live limiter of `limits`, in Redis at the URLs `redis` if any are given
    /// (a cluster's seed nodes), its keys under `redis_prefix`, each round trip at most
    /// `redis_timeout` long; `empty_key` is the key value read as an empty key.
    #[new]
    #[pyo3(signature = (limits, *, redis=Vec::new(), redis_prefix=None, redis_timeout=None, empty_key=None, stop_counting_over_limit=false))]
    fn new(
        py: Python<'_>,
        limits: Vec<PyLimit>,
        redis: Vec<String>,
        redis_prefix: Option<String>,
        redis_timeout: Option<&str>,
        empty_key: Option<Vec<u8>>,
        stop_counting_over_limit: bool,
    ) -> PyResult<Limiter> {
        let timeout = redis_timeout.map(keywords::timeout).transpose()?;
        let redis = keywords::Redis { urls: redis, prefix: redis_prefix, timeout }.target();
        let options = LiveOptions { redis, empty_key, stop_counting_over_limit };
        let limits: Vec<_> = limits.iter().map(PyLimit::limit).collect::<PyResult<_>>()?;
        let made = py.detach(|| LiveLimiter::new(&limits, &options));
        let limiter = made.map_err(|err| raise(err, Data::File))?;
        Ok(Limiter(Mutex::new(limiter)))
    }

    /// Decides on an event of `key` that costs `cost` (the limit's own if `None`), at
    /// `micros` µs after 1970 (the clock's time if `None`): (passed, wait µs, remaining,
    /// retry after µs or None).
    #[pyo3(signature = (micros, key, cost))]
    fn decide(
        &self,
        py: Python<'_>,
        micros: Option<i64>,
        key: Option<&[u8]>,
        cost: Option<u64>,
    ) -> PyResult<(bool, u64, u64, Option<i64>)> {
        let now = time(micros)?;
        // One decision at a time: a thread that shares the limiter waits its turn.
        let decided = py.detach(|| {
            let mut limiter = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            limiter.decide(now, key, cost)
        });
        let outcome = decided.map_err(|err| raise(err, Data::File))?;
        Ok((outcome.passed, outcome.wait_us, outcome.remaining, outcome.retry_after_us))
    }
}

/// A live request's decision, as Python takes it: whether it passed, its ticket, the layers
/// that refused it, and its retry-after in µs.
type Admitted = (bool, Option<u64>, Vec<usize>, Option<i64>);

/// Layers settled after the response, decided live: in memory, each request decided with
/// the values its estimates sum, then settled by its ticket with the real counts; or in
/// Redis, at the server's clock, each a script call.
#[pyclass(module = "ratelimit_replay._native")]
pub(crate) struct SettlingLimiter(Mutex<Live>);

/// Where a live settling keeps its limiters.
enum Live {
    Memory(LiveSettling),
    Redis(RedisSettling),
}

#[pymethods]
impl SettlingLimiter {
    /// Makes the live settling of `limits`: in Redis at the URL `redis` if one is given,
    /// its keys under `redis_prefix`, each round trip at most `redis_timeout` long.
    #[new]
    #[pyo3(signature = (limits, *, redis=Vec::new(), redis_prefix=None, redis_timeout=None))]
    fn new(
        limits: Vec<PyLimit>,
        redis: Vec<String>,
        redis_prefix: Option<String>,
        redis_timeout: Option<&str>,
    ) -> PyResult<SettlingLimiter> {
        let specs: Vec<_> = limits.into_iter().map(|limit| limit.layer).collect();
        let timeout = redis_timeout.map(keywords::timeout).transpose()?;
        let target = keywords::Redis { urls: redis, prefix: redis_prefix, timeout }.target();
        let live = match target {
            Some(target) => RedisSettling::new(target, &specs).map(Live::Redis),
            None => LiveSettling::new(&specs).map(Live::Memory),
        };
        Ok(SettlingLimiter(Mutex::new(live.map_err(|err| raise(err, Data::File))?)))
    }

    /// Decides a request of `key` at `micros` µs after 1970 (the clock's time if `None`;
    /// in Redis, always the server's), its estimates summed from `values`: (passed, ticket
    /// or None, refusing layers, retry after µs or None).
    #[pyo3(signature = (micros, key, values))]
    fn decide(
        &self,
        py: Python<'_>,
        micros: Option<i64>,
        key: Option<&[u8]>,
        values: HashMap<String, u64>,
    ) -> PyResult<Admitted> {
        let now = time(micros)?;
        let decided = py.detach(|| {
            let mut live = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            match &mut *live {
                Live::Memory(live) => {
                    live.decide(now, key, &values).map_err(|err| raise(err, Data::File))
                }
                Live::Redis(live) => live
                    .decide(redis_key(micros, key)?, &values)
                    .map_err(|err| raise(err, Data::File)),
            }
        });
        let admission = decided?;
        Ok((admission.passed, admission.ticket, admission.refused, admission.retry_after_us))
    }

    /// Settles the request of `ticket` at `micros` (the clock's time if `None`; in Redis,
    /// always the server's), at the real `cost` of every layer if given, else at each
    /// layer's sum of its values.
    #[pyo3(signature = (ticket, micros, cost, values))]
    fn settle(
        &self,
        py: Python<'_>,
        ticket: u64,
        micros: Option<i64>,
        cost: Option<u64>,
        values: HashMap<String, u64>,
    ) -> PyResult<()> {
        let now = time(micros)?;
        py.detach(|| {
            let mut live = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let settled = match &mut *live {
                Live::Memory(live) => live.settle(ticket, now, cost, &values),
                Live::Redis(live) => {
                    redis_key(micros, None)?;
                    live.settle(ticket, cost, &values)
                }
            };
            settled.map_err(|err| raise(err, Data::File))
        })
    }

    /// The requests decided, passed and not yet settled.
    fn open(&self) -> usize {
        match &*self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner) {
            Live::Memory(live) => live.open(),
            Live::Redis(live) => live.open(),
        }
    }
}

/// A key as Redis names it (UTF-8; none is the empty key), for a call given no time: in
/// Redis a request is decided and settled at the server's clock.
fn redis_key(micros: Option<i64>, key: Option<&[u8]>) -> PyResult<&str> {
    if micros.is_some() {
        return Err(policy_error(
            "with redis=, requests are decided and settled at the server's clock: give no time",
        ));
    }
    std::str::from_utf8(key.unwrap_or_default())
        .map_err(|_| policy_error("with redis=, a key is UTF-8 text"))
}

/// The time `micros` µs after 1970, if given: past the years 0000–9999 is a `PolicyError`.
fn time(micros: Option<i64>) -> PyResult<Option<Timestamp>> {
    match micros {
        None => Ok(None),
        Some(micros) => Timestamp::from_micros(micros).map(Some).ok_or_else(|| {
            policy_error(format!("{micros} µs from 1970 is past the years 0000-9999"))
        }),
    }
}
