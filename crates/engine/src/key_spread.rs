//! What a keyed replay's keys add up to: the figures over keys, made of whole keys, to be
//! added to other keys' when keys are split among machines.

use crate::input::catalog::{Key, KeyTable, slot};
use crate::lane::Settings;
use serde::{Deserialize, Serialize};

use crate::limiter::Waits;
use crate::limiter::promise::{PromiseCheck, Seen};
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
    /// Each lane's: the events of the empty key it let through uncounted.
    pub not_accounted: Vec<u64>,
    /// Each lane's: each key's dropped events, weighted by its events.
    pub dropped: Vec<Histogram>,
    /// Each lane's: how its keys' limiters kept their promises.
    pub promises: Vec<KeyPromises>,
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
        self.promises.resize(lanes, KeyPromises::default());
        self.not_accounted.resize(lanes, 0);
        self.waits.resize(lanes, None);
        for n in 0..other.dropped.len() {
            self.dropped[n].merge(&other.dropped[n]);
            self.promises[n].merge(&other.promises[n]);
            self.not_accounted[n] += other.not_accounted.get(n).copied().unwrap_or(0);
            if let Some(waits) = other.waits[n] {
                self.waits[n] = Some(self.waits[n].map_or(waits, |w| w.merge(&waits)));
            }
        }
    }
}

/// How the keys' limiters of one lane kept their promises: how many broke it, and the
/// most any key's passed events measured of what it bounds (each measure the worst key's).
/// A key breaks a bound exactly when its measure passes it, so the worst measures break it
/// exactly when some key does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyPromises {
    /// How many keys' limiters broke their promise.
    pub broken: usize,
    /// The most in one epoch-aligned window, of any key.
    aligned: u64,
    /// The most in any one period, of any key.
    period: u64,
    /// The largest bucket any key's passed events fit.
    bucket: u64,
    /// The keys' waits together, for a leaky queue.
    waits: Option<Waits>,
}

impl KeyPromises {
    /// Adds one key's limiter, whose `check` watched its passed events; `waits` are a
    /// leaky queue's.
    pub(crate) fn add(&mut self, check: &PromiseCheck, waits: Option<Waits>) {
        let seen = check.seen(waits);
        self.broken += usize::from(!check.held(waits));
        self.merge(&KeyPromises {
            broken: 0,
            aligned: seen.aligned,
            period: seen.period,
            bucket: seen.bucket,
            waits,
        });
    }

    /// Adds other keys' limiters of the same lane.
    pub(crate) fn merge(&mut self, other: &KeyPromises) {
        self.broken += other.broken;
        self.aligned = self.aligned.max(other.aligned);
        self.period = self.period.max(other.period);
        self.bucket = self.bucket.max(other.bucket);
        if let Some(waits) = other.waits {
            self.waits = Some(self.waits.map_or(waits, |w| w.merge(&waits)));
        }
    }

    /// Returns the promise over all `keys` keys, for `check`'s limiter: held if every
    /// key's limiter kept it, its figures the worst key's.
    pub fn promise(&self, check: &PromiseCheck, keys: usize) -> report::Promise {
        let text = match self.broken {
            0 => format!("{}, for each key: held by all {keys}", check.statement()),
            n => format!("{}, for each key: broken by {n} of {keys}", check.statement()),
        };
        let (aligned, period, bucket, waits) = (self.aligned, self.period, self.bucket, self.waits);
        let worst = check.judged(Seen { aligned, period, bucket, waits });
        report::Promise { text, held: self.broken == 0, bound: worst.bound }
    }
}

/// The empty key of a keyed replay, where a lane lets its events through uncounted (its
/// system does not account them): its need and events are set aside, out of the keys'
/// sizing and of that lane's promise, and added back for a lane that counts them.
#[derive(Clone, Debug)]
pub(crate) struct EmptyAside {
    /// The empty key's slot, if some lane lets it through.
    key: Option<usize>,
    /// Each lane's say: whether it lets the empty key through.
    skips: Vec<bool>,
    /// The empty key's need and events, once met.
    need: Option<(u64, u64)>,
    /// Each lane's: the events it let through uncounted.
    pub(crate) not_accounted: Vec<u64>,
}

impl EmptyAside {
    /// Returns what sets aside the empty key of `table`, for lanes with `settings`.
    pub(crate) fn of(table: &KeyTable, settings: &[Settings]) -> EmptyAside {
        let skips: Vec<bool> = settings.iter().map(|s| s.algorithm.skips_empty_key()).collect();
        let key = table.find(b"").filter(|_| skips.contains(&true)).map(slot);
        EmptyAside { key, not_accounted: vec![0; skips.len()], skips, need: None }
    }

    /// Whether key `key`, of `events` events needing a bucket of `need`, is set aside.
    pub(crate) fn sets_aside(&mut self, key: usize, need: u64, events: u64) -> bool {
        let aside = self.key == Some(key);
        if aside {
            self.need = Some((need, events));
        }
        aside
    }

    /// Whether lane `n` lets key `key`'s `events` through uncounted; counts them if so.
    pub(crate) fn lets_through(&mut self, key: usize, n: usize, events: u64) -> bool {
        let through = self.row(key, n);
        if through {
            self.not_accounted[n] += events;
        }
        through
    }

    /// Whether lane `n` lets key `key` through: a row of that key says how many.
    pub(crate) fn row(&self, key: usize, n: usize) -> bool {
        self.key == Some(key) && self.skips[n]
    }

    /// Adds what other keys set aside.
    pub(crate) fn merge(&mut self, other: EmptyAside) {
        self.need = self.need.or(other.need);
        for (all, part) in self.not_accounted.iter_mut().zip(other.not_accounted) {
            *all += part;
        }
    }

    /// Lane `n`'s report of it: the events it let through, for a lane that lets the empty
    /// key through, and how many keys its promise leaves out.
    pub(crate) fn report(&self, n: usize) -> (Option<u64>, usize) {
        let skips = self.skips[n];
        (skips.then_some(self.not_accounted[n]), usize::from(skips && self.need.is_some()))
    }

    /// Lane `n`'s sizing of the keys: `min_buckets` and `worst`, the figures of the keys
    /// not set aside, with the empty key's added back if the lane counts it (the first by
    /// name of those that need as much).
    pub(crate) fn sizing(
        &self,
        n: usize,
        min_buckets: &Histogram,
        worst: Option<(Key, u64)>,
    ) -> (Histogram, Option<(Key, u64)>) {
        let mut sizes = min_buckets.clone();
        match (self.need, self.key) {
            (Some((need, events)), Some(key)) if !self.skips[n] => {
                sizes.add(need, events);
                let empty = (Key::try_from(key).unwrap_or(Key::MAX), need);
                (sizes, worst.filter(|&(_, most)| most > need).or(Some(empty)))
            }
            _ => (sizes, worst),
        }
    }
}
