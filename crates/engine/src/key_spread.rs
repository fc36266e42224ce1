//! What a keyed replay's keys add up to: the figures over keys, made of whole keys, to be
//! added to other keys' when keys are split among machines.

use crate::limiter::Waits;
use crate::limiter::promise::PromiseCheck;
use crate::report;
use crate::sizing::quantile::Histogram;

/// What a keyed replay's keys add up to, lane by lane: whole keys, to be added to other
/// keys' ([`KeySpread::merge`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeySpread {
    /// How many keys.
    pub keys: usize,
    /// Each key's smallest lossless bucket, weighted by its events.
    pub min_buckets: Histogram,
    /// Each lane's: each key's dropped events, weighted by its events.
    pub dropped: Vec<Histogram>,
    /// Each lane's: how many keys' limiters broke their promise.
    pub broken: Vec<usize>,
    /// Each lane's: its keys' waits together, if it tells them.
    pub waits: Vec<Option<Waits>>,
}

impl KeySpread {
    /// Adds what other keys add up to.
    pub fn merge(&mut self, other: &KeySpread) {
        self.keys += other.keys;
        self.min_buckets.merge(&other.min_buckets);
        let lanes = self.dropped.len().max(other.dropped.len());
        self.dropped.resize_with(lanes, Histogram::new);
        self.broken.resize(lanes, 0);
        self.waits.resize(lanes, None);
        for n in 0..other.dropped.len() {
            self.dropped[n].merge(&other.dropped[n]);
            self.broken[n] += other.broken[n];
            if let Some(waits) = other.waits[n] {
                self.waits[n] = Some(self.waits[n].map_or(waits, |w| w.merge(&waits)));
            }
        }
    }
}

/// Returns the promise over all keys, for `check`'s limiter: held if every one of `keys`
/// keys' limiters kept it, `broken` did not.
pub fn promise_over_keys(check: &PromiseCheck, broken: usize, keys: usize) -> report::Promise {
    let text = match broken {
        0 => format!("{}, for each key: held by all {keys}", check.statement()),
        n => format!("{}, for each key: broken by {n} of {keys}", check.statement()),
    };
    report::Promise { text, held: broken == 0, bound: None }
}
