//! `Limiter`: the engine's live limiter, deciding one event a call, with the GIL released.

use std::sync::Mutex;

use pyo3::prelude::*;
use ratelimit_core::units::time::Timestamp;
use ratelimit_engine::live_limiter::{LiveLimiter, LiveOptions};

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
        let now = match micros {
            None => None,
            Some(micros) => match Timestamp::from_micros(micros) {
                Some(now) => Some(now),
                None => {
                    return Err(policy_error(format!(
                        "{micros} µs from 1970 is past the years 0000-9999"
                    )));
                }
            },
        };
        // One decision at a time: a thread that shares the limiter waits its turn.
        let decided = py.detach(|| {
            let mut limiter = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            limiter.decide(now, key, cost)
        });
        let outcome = decided.map_err(|err| raise(err, Data::File))?;
        Ok((outcome.passed, outcome.wait_us, outcome.remaining, outcome.retry_after_us))
    }
}
