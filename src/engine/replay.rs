//! Replaying events through one limiter, and gathering what its report needs.

use crate::input::catalog::{Key, Sink};
use crate::limiter::promise::PromiseCheck;
use crate::limiter::{Algorithm, AnyLimiter, Given, Limiter};
use crate::report;
use crate::sizing::min_bucket::MinBucket;
use crate::sizing::window::BusiestWindow;
use crate::units::rate::Rate;
use crate::units::time::{Span, Timestamp};

/// The settings of one replay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// The limiter.
    pub algorithm: Algorithm,
    /// Its rate.
    pub rate: Rate,
    /// Its burst; ignored by limiters without one.
    pub burst: u64,
    /// The length of the busiest window to report.
    pub window: Span,
}

/// What all the events show, whatever the limiter: their count, the busiest window of
/// demand, and the smallest lossless bucket at the rate.
#[derive(Clone, Debug)]
pub struct Demand {
    events: u64,
    window: BusiestWindow,
    lossless: MinBucket,
}

impl Demand {
    /// Returns a tally of no events, for windows of `window` and buckets at `rate`.
    pub fn new(rate: Rate, window: Span) -> Demand {
        Demand { events: 0, window: BusiestWindow::new(window), lossless: MinBucket::new(rate) }
    }

    /// Counts an event at `time`, no earlier than the last.
    #[inline]
    pub fn push(&mut self, time: Timestamp) {
        self.events += 1;
        self.window.push(time);
        self.lossless.push(time);
    }
}

/// One limiter fed event by event, with what its report needs beside the demand.
#[derive(Clone, Debug)]
pub struct Lane {
    settings: Settings,
    limiter: AnyLimiter,
    passed: u64,
    busiest: BusiestWindow,
    promise: PromiseCheck,
}

impl Lane {
    /// Returns a lane that has seen no events.
    pub fn new(settings: Settings) -> Lane {
        Lane::with(settings, settings.algorithm.build(settings.rate, settings.burst))
    }

    /// Returns a lane whose decisions are made in Redis and handed over.
    pub fn given(settings: Settings) -> Lane {
        Lane::with(settings, AnyLimiter::Given(Given::new(settings.algorithm, settings.rate)))
    }

    fn with(settings: Settings, limiter: AnyLimiter) -> Lane {
        let Settings { algorithm, rate, burst, window } = settings;
        Lane {
            settings,
            limiter,
            passed: 0,
            busiest: BusiestWindow::new(window),
            promise: PromiseCheck::new(algorithm, rate, burst),
        }
    }

    /// Decides on an event at `time`, no earlier than the last, and returns whether it passed.
    #[inline]
    pub fn decide(&mut self, time: Timestamp) -> bool {
        let pass = self.limiter.admit(time);
        if pass {
            self.passed += 1;
            self.busiest.push(time);
            self.promise.passed(time);
        }
        pass
    }

    /// Returns the report of this lane over `demand`, naming the input `input`.
    pub fn report(&self, demand: &Demand, input: &str) -> report::Replay {
        let Settings { algorithm, rate, burst, .. } = self.settings;
        let waits = self.limiter.waits();
        report::Replay {
            input: input.to_owned(),
            key: None,
            algorithm,
            rate,
            burst: algorithm.uses_burst().then_some(burst),
            events: demand.events,
            passed: self.passed,
            dropped: demand.events - self.passed,
            busiest_window: self.busiest.busiest().into(),
            demand_busiest_window: demand.window.busiest().into(),
            min_bucket: demand.lossless.result().min_bucket,
            queue: waits.map(Into::into),
            promise: self.promise.result(waits),
            key_column: None,
            key_count: None,
            keys: None,
        }
    }
}

/// Limiters side by side over the same events. Each key has its own demand and its own
/// lane per limiter; with keys, totals over all of them are kept as well.
#[derive(Clone, Debug)]
pub struct Replayer {
    settings: Vec<Settings>,
    /// Whether decisions are made in Redis and handed over.
    given: bool,
    keys: Vec<PerKey>,
    totals: Option<Totals>,
}

/// One key's demand and its lanes.
#[derive(Clone, Debug)]
struct PerKey {
    demand: Demand,
    lanes: Vec<Lane>,
}

/// Over all keys: the demand, and each lane's passed count and busiest window.
#[derive(Clone, Debug)]
struct Totals {
    demand: Demand,
    passed: Vec<u64>,
    busiest: Vec<BusiestWindow>,
}

/// How keys are named in reports.
#[derive(Clone, Copy, Debug, Default)]
pub struct KeyNames<'a> {
    /// The key column's name.
    pub column: &'a str,
    /// Each key's value, by number.
    pub names: &'a [String],
}

impl Replayer {
    /// Returns a replayer with one lane per settings, which must share a rate and a window;
    /// `keyed` gives each key its own limiters.
    pub fn new(settings: &[Settings], keyed: bool) -> Replayer {
        Replayer::with(settings, keyed, false)
    }

    /// Returns a replayer like `new`, whose decisions are made in Redis: they are handed
    /// over with `decide_given`.
    pub fn given(settings: &[Settings], keyed: bool) -> Replayer {
        Replayer::with(settings, keyed, true)
    }

    fn with(settings: &[Settings], keyed: bool, given: bool) -> Replayer {
        let first = settings.first().expect("at least one limiter");
        let totals = keyed.then(|| Totals {
            demand: Demand::new(first.rate, first.window),
            passed: vec![0; settings.len()],
            busiest: settings.iter().map(|s| BusiestWindow::new(s.window)).collect(),
        });
        let mut replayer =
            Replayer { settings: settings.to_vec(), given, keys: Vec::new(), totals };
        replayer.add_keys_to(0);
        replayer
    }

    /// Makes sure key `key` has its state; keys arrive numbered in order.
    #[inline]
    fn add_keys_to(&mut self, key: usize) {
        if key < self.keys.len() {
            return;
        }
        self.add_keys(key);
    }

    #[cold]
    fn add_keys(&mut self, key: usize) {
        while self.keys.len() <= key {
            let first = self.settings[0];
            let lane = if self.given { Lane::given } else { Lane::new };
            let lanes = self.settings.iter().map(|&s| lane(s)).collect();
            self.keys.push(PerKey { demand: Demand::new(first.rate, first.window), lanes });
        }
    }

    /// Decides on an event in every lane of its key, and calls `each` with every lane's
    /// number and decision.
    #[inline]
    fn decide_with(&mut self, time: Timestamp, key: Key, mut each: impl FnMut(usize, bool)) {
        self.add_keys_to(key as usize);
        let state = &mut self.keys[key as usize];
        state.demand.push(time);
        let lanes = &mut state.lanes;
        match &mut self.totals {
            None => lanes.iter_mut().enumerate().for_each(|(n, lane)| each(n, lane.decide(time))),
            Some(totals) => {
                totals.demand.push(time);
                for (n, lane) in lanes.iter_mut().enumerate() {
                    let pass = lane.decide(time);
                    if pass {
                        totals.passed[n] += 1;
                        totals.busiest[n].push(time);
                    }
                    each(n, pass);
                }
            }
        }
    }

    /// Decides on an event with its key in every lane; returns whether the first passed it.
    #[inline]
    pub fn decide(&mut self, time: Timestamp, key: Key) -> bool {
        let mut first = false;
        self.decide_with(time, key, |n, pass| first |= n == 0 && pass);
        first
    }

    /// Takes each lane's decision on an event, made elsewhere: whether it passed and a leaky
    /// queue's wait, in units of 1/N µs, one per lane in order.
    pub fn decide_given(
        &mut self,
        time: Timestamp,
        key: Key,
        decisions: impl IntoIterator<Item = (bool, i128)>,
    ) {
        self.add_keys_to(key as usize);
        for (lane, (pass, wait)) in self.keys[key as usize].lanes.iter_mut().zip(decisions) {
            if let AnyLimiter::Given(given) = &mut lane.limiter {
                given.set(pass, wait);
            }
        }
        self.decide(time, key);
    }

    /// Decides on an event in every lane, and writes each lane's decision to `decisions`.
    pub fn decide_each(&mut self, time: Timestamp, key: Key, decisions: &mut Vec<bool>) {
        decisions.clear();
        self.decide_with(time, key, |_, pass| decisions.push(pass));
    }

    /// Returns one report per lane, naming the input `input`; with keys, each gives the
    /// totals and lists every key, most dropped first.
    pub fn reports(&self, input: &str, keys: KeyNames) -> Vec<report::Replay> {
        let Some(totals) = &self.totals else {
            let only = &self.keys[0];
            return only.lanes.iter().map(|lane| lane.report(&only.demand, input)).collect();
        };
        (0..self.settings.len())
            .map(|n| {
                let mut per_key: Vec<report::Replay> = self
                    .keys
                    .iter()
                    .zip(keys.names)
                    .map(|(state, name)| {
                        let mut report = state.lanes[n].report(&state.demand, input);
                        report.key = Some(name.clone());
                        report
                    })
                    .collect();
                let mut total = self.keys[0].lanes[n].report(&totals.demand, input);
                total.passed = totals.passed[n];
                total.dropped = total.events - total.passed;
                total.busiest_window = totals.busiest[n].busiest().into();
                total.min_bucket = per_key.iter().map(|r| r.min_bucket).max().unwrap_or(0);
                let waits = self.keys.iter().filter_map(|k| k.lanes[n].limiter.waits());
                total.queue = waits.reduce(|a, b| a.merge(&b)).map(Into::into);
                total.promise = promise_over_keys(&self.keys[0].lanes[n].promise, &per_key);
                total.key_column = Some(keys.column.to_owned());
                total.key_count = Some(per_key.len());
                per_key.sort_by(|a, b| b.dropped.cmp(&a.dropped).then_with(|| a.key.cmp(&b.key)));
                total.keys = Some(per_key);
                total
            })
            .collect()
    }
}

/// The promise over all keys: held if every key's limiter kept it.
fn promise_over_keys(check: &PromiseCheck, per_key: &[report::Replay]) -> report::Promise {
    let broken: Vec<&str> =
        per_key.iter().filter(|r| !r.promise.held).filter_map(|r| r.key.as_deref()).collect();
    let text = match broken.len() {
        0 => format!("{}, for each key: held by all {}", check.statement(), per_key.len()),
        n => format!("{}, for each key: broken by {n} of {}", check.statement(), per_key.len()),
    };
    report::Promise { text, held: broken.is_empty() }
}

impl Sink for Replayer {
    fn event(&mut self, time: Timestamp, key: Key) -> anyhow::Result<()> {
        self.decide(time, key);
        Ok(())
    }
}
