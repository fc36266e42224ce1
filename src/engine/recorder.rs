//! Recording a replay: what each limiter decided, and what its report needs.

use std::num::NonZeroU64;

use crate::input::catalog::{Key, KeyTable, slot};
use crate::limiter::promise::PromiseCheck;
use crate::limiter::{Algorithm, Decision, Waits};
use crate::report::{self, KeyList, KeyQuantiles};
use crate::sizing::min_bucket::MinBucketFinder;
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
    pub burst: NonZeroU64,
    /// The length of the busiest window to report.
    pub window: Span,
}

/// What all the events show, whatever the limiter: their count, the busiest window of
/// demand, and the smallest lossless bucket at the rate.
#[derive(Clone, Debug)]
pub struct Demand {
    events: u64,
    window: BusiestWindow,
    lossless: MinBucketFinder,
}

impl Demand {
    /// Returns a tally of no events, for windows of `window` and buckets at `rate`.
    pub fn new(rate: Rate, window: Span) -> Demand {
        Demand {
            events: 0,
            window: BusiestWindow::new(window),
            lossless: MinBucketFinder::new(rate),
        }
    }

    /// Counts an event at `time`, no earlier than the last.
    #[inline]
    pub fn push(&mut self, time: Timestamp) {
        self.events += 1;
        self.window.push(time);
        self.lossless.push(time);
    }
}

/// What one limiter decided on one key's events: what passed, its busiest window, its
/// promise and, for a leaky queue, the waits. It records decisions made elsewhere, by an
/// [`Engine`](super::Engine), and never decides.
#[derive(Clone, Debug)]
pub struct Lane {
    settings: Settings,
    passed: u64,
    busiest: BusiestWindow,
    promise: PromiseCheck,
    waits: Option<Waits>,
}

impl Lane {
    /// Returns a lane that has seen no events.
    pub fn new(settings: Settings) -> Lane {
        let Settings { algorithm, rate, burst, window } = settings;
        Lane {
            settings,
            passed: 0,
            busiest: BusiestWindow::new(window),
            promise: PromiseCheck::new(algorithm, rate, burst.get()),
            waits: (algorithm == Algorithm::LeakyQueue).then(|| Waits::new(rate)),
        }
    }

    /// Records the decision on an event at `time`, no earlier than the last, and returns
    /// whether it passed.
    #[inline]
    pub fn record(&mut self, time: Timestamp, decision: Decision) -> bool {
        if decision.passed {
            self.passed += 1;
            self.busiest.push(time);
            self.promise.passed(time);
            if let Some(waits) = &mut self.waits {
                waits.record(decision);
            }
        }
        decision.passed
    }

    /// Returns the report of this lane over `demand`, naming the input `input`.
    pub fn report(&self, demand: &Demand, input: &str) -> report::LimiterReport {
        let Settings { algorithm, rate, burst, .. } = self.settings;
        report::LimiterReport {
            input: input.to_owned(),
            key: None,
            algorithm,
            rate,
            burst: algorithm.uses_burst().then_some(burst.get()),
            events: demand.events,
            passed: self.passed,
            dropped: demand.events - self.passed,
            busiest_window: self.busiest.busiest().into(),
            demand_busiest_window: demand.window.busiest().into(),
            min_bucket: demand.lossless.result().min_bucket,
            queue: self.waits.map(Into::into),
            promise: self.promise.result(self.waits),
            by_key: None,
        }
    }
}

/// The record of a replay: for each key, its demand and one lane per limiter; with keys,
/// totals over all of them as well. Optionally it keeps every decision, in event order.
#[derive(Clone, Debug)]
pub struct Recorder {
    settings: Vec<Settings>,
    keys: Vec<PerKey>,
    totals: Option<Totals>,
    trace: Option<Vec<bool>>,
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
    /// The keys, by number; `None` without a key column.
    pub names: Option<&'a KeyTable>,
}

impl Recorder {
    /// Returns a record with one lane per settings, which must share a rate and a window;
    /// `keyed` records each key apart, and their totals.
    pub fn new(settings: &[Settings], keyed: bool) -> Recorder {
        let first = settings.first().expect("at least one limiter");
        let totals = keyed.then(|| Totals {
            demand: Demand::new(first.rate, first.window),
            passed: vec![0; settings.len()],
            busiest: settings.iter().map(|s| BusiestWindow::new(s.window)).collect(),
        });
        let mut recorder =
            Recorder { settings: settings.to_vec(), keys: Vec::new(), totals, trace: None };
        recorder.add_keys_to(0);
        recorder
    }

    /// Keeps every decision from now on, lane by lane for each event in order; see
    /// [`trace`](Recorder::trace).
    pub fn keep_trace(&mut self) {
        self.trace = Some(Vec::new());
    }

    /// Returns every decision kept since [`keep_trace`](Recorder::keep_trace): for each
    /// event in order, one per lane.
    pub fn trace(&self) -> &[bool] {
        self.trace.as_deref().unwrap_or_default()
    }

    /// Returns the number of lanes: one per limiter.
    pub fn lanes(&self) -> usize {
        self.settings.len()
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
            let lanes = self.settings.iter().map(|&s| Lane::new(s)).collect();
            self.keys.push(PerKey { demand: Demand::new(first.rate, first.window), lanes });
        }
    }

    /// Records an event at `time` with its key, and each lane's decision on it, in lane
    /// order; events must come in time order.
    #[inline]
    pub fn record(
        &mut self,
        time: Timestamp,
        key: Key,
        decisions: impl IntoIterator<Item = Decision>,
    ) {
        self.add_keys_to(slot(key));
        let state = &mut self.keys[slot(key)];
        state.demand.push(time);
        let lanes = state.lanes.iter_mut().zip(decisions);
        match &mut self.totals {
            None => {
                for (lane, decision) in lanes {
                    let pass = lane.record(time, decision);
                    if let Some(trace) = &mut self.trace {
                        trace.push(pass);
                    }
                }
            }
            Some(totals) => {
                totals.demand.push(time);
                for (n, (lane, decision)) in lanes.enumerate() {
                    let pass = lane.record(time, decision);
                    if pass {
                        totals.passed[n] += 1;
                        totals.busiest[n].push(time);
                    }
                    if let Some(trace) = &mut self.trace {
                        trace.push(pass);
                    }
                }
            }
        }
    }

    /// Returns one report per lane, naming the input `input`; with keys, each gives the
    /// totals and lists every key, most dropped first.
    pub fn reports(&self, input: &str, keys: KeyNames) -> Vec<report::LimiterReport> {
        let Some(totals) = &self.totals else {
            let only = &self.keys[0];
            return only.lanes.iter().map(|lane| lane.report(&only.demand, input)).collect();
        };
        (0..self.settings.len())
            .map(|n| {
                let mut per_key: Vec<report::LimiterReport> = self
                    .keys
                    .iter()
                    .zip(keys.names.into_iter().flat_map(KeyTable::names))
                    .map(|(state, name)| {
                        let mut report = state.lanes[n].report(&state.demand, input);
                        report.key = Some(name);
                        report
                    })
                    .collect();
                let mut total = self.keys[0].lanes[n].report(&totals.demand, input);
                total.passed = totals.passed[n];
                total.dropped = total.events - total.passed;
                total.busiest_window = totals.busiest[n].busiest().into();
                total.min_bucket = per_key.iter().map(|r| r.min_bucket).max().unwrap_or(0);
                let waits = self.keys.iter().filter_map(|k| k.lanes[n].waits);
                total.queue = waits.reduce(|a, b| a.merge(&b)).map(Into::into);
                total.promise = promise_over_keys(&self.keys[0].lanes[n].promise, &per_key);
                let key_count = per_key.len();
                let key_quantiles = KeyQuantiles::of(
                    per_key.iter().map(|r| r.min_bucket).collect(),
                    Some(per_key.iter().map(|r| r.dropped).collect()),
                );
                per_key.sort_by(|a, b| b.dropped.cmp(&a.dropped).then_with(|| a.key.cmp(&b.key)));
                let key_column = keys.column.to_owned();
                total.by_key =
                    Some(KeyList { key_column, key_count, key_quantiles, keys: per_key });
                total
            })
            .collect()
    }
}

/// The promise over all keys: held if every key's limiter kept it.
fn promise_over_keys(check: &PromiseCheck, per_key: &[report::LimiterReport]) -> report::Promise {
    let broken: Vec<&str> =
        per_key.iter().filter(|r| !r.promise.held).filter_map(|r| r.key.as_deref()).collect();
    let text = match broken.len() {
        0 => format!("{}, for each key: held by all {}", check.statement(), per_key.len()),
        n => format!("{}, for each key: broken by {n} of {}", check.statement(), per_key.len()),
    };
    report::Promise { text, held: broken.is_empty() }
}
