//! Replaying events through one limiter, and gathering what its report needs.

use crate::catalog::Sink;
use crate::limiter::{Algorithm, AnyLimiter, Limiter};
use crate::min_bucket::MinBucket;
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

/// One limiter fed event by event, with the counts and windows its report needs.
#[derive(Clone, Debug)]
pub struct Replayer {
    settings: Settings,
    limiter: AnyLimiter,
    events: u64,
    passed: u64,
    busiest: BusiestWindow,
    demand: BusiestWindow,
    lossless: MinBucket,
}

impl Replayer {
    /// Returns a replayer that has seen no events.
    pub fn new(settings: Settings) -> Replayer {
        Replayer {
            settings,
            limiter: settings.algorithm.build(settings.rate, settings.burst),
            events: 0,
            passed: 0,
            busiest: BusiestWindow::new(settings.window),
            demand: BusiestWindow::new(settings.window),
            lossless: MinBucket::new(settings.rate),
        }
    }

    /// Decides on an event at `time`, no earlier than the last, and returns whether it passed.
    #[inline]
    pub fn decide(&mut self, time: Timestamp) -> bool {
        self.events += 1;
        self.demand.push(time);
        self.lossless.push(time);
        let pass = self.limiter.admit(time);
        if pass {
            self.passed += 1;
            self.busiest.push(time);
        }
        pass
    }

    /// Returns the report of the replay so far, naming the input `input`.
    pub fn report(&self, input: &str) -> report::Replay {
        let Settings { algorithm, rate, burst, .. } = self.settings;
        report::Replay {
            input: input.to_owned(),
            algorithm,
            rate,
            burst: algorithm.uses_burst().then_some(burst),
            events: self.events,
            passed: self.passed,
            dropped: self.events - self.passed,
            busiest_window: self.busiest.busiest().into(),
            demand_busiest_window: self.demand.busiest().into(),
            min_bucket: self.lossless.result().min_bucket,
            queue: self.limiter.waits().map(Into::into),
        }
    }
}

impl Sink for Replayer {
    fn event(&mut self, time: Timestamp) {
        self.decide(time);
    }
}
