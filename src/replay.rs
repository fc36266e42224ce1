//! Replaying events through one limiter, and gathering what its report needs.

use crate::catalog::Sink;
use crate::limiter::{Algorithm, AnyLimiter, Limiter};
use crate::min_bucket::MinBucket;
use crate::promise::PromiseCheck;
use crate::rate::Rate;
use crate::report;
use crate::time::{Span, Timestamp};
use crate::window::BusiestWindow;

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
        let Settings { algorithm, rate, burst, window } = settings;
        Lane {
            settings,
            limiter: algorithm.build(rate, burst),
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
        }
    }
}

/// Limiters side by side over the same events: one demand, one lane each.
#[derive(Clone, Debug)]
pub struct Replayer {
    demand: Demand,
    lanes: Vec<Lane>,
}

impl Replayer {
    /// Returns a replayer with one lane per settings; all must share a rate and a window.
    pub fn new(settings: &[Settings]) -> Replayer {
        let first = settings.first().expect("at least one limiter");
        Replayer {
            demand: Demand::new(first.rate, first.window),
            lanes: settings.iter().map(|&s| Lane::new(s)).collect(),
        }
    }

    /// Decides on an event in every lane; returns whether the first lane passed it.
    #[inline]
    pub fn decide(&mut self, time: Timestamp) -> bool {
        self.demand.push(time);
        let mut first = None;
        for lane in &mut self.lanes {
            let pass = lane.decide(time);
            first.get_or_insert(pass);
        }
        first.unwrap_or(false)
    }

    /// Decides on an event in every lane, and writes each lane's decision to `decisions`.
    pub fn decide_each(&mut self, time: Timestamp, decisions: &mut Vec<bool>) {
        self.demand.push(time);
        decisions.clear();
        decisions.extend(self.lanes.iter_mut().map(|lane| lane.decide(time)));
    }

    /// Returns one report per lane, naming the input `input`.
    pub fn reports(&self, input: &str) -> Vec<report::Replay> {
        self.lanes.iter().map(|lane| lane.report(&self.demand, input)).collect()
    }
}

impl Sink for Replayer {
    fn event(&mut self, time: Timestamp) {
        self.decide(time);
    }
}
