//! What one limiter decided on one key's events, and what the events themselves show.

use std::num::NonZeroU64;

use crate::limiter::promise::PromiseCheck;
use crate::limiter::{Algorithm, LeakyQueue, Limiter, Waits};
use crate::report;
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
    pub(super) events: u64,
    pub(super) window: BusiestWindow,
    pub(super) lossless: MinBucketFinder,
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

    /// Counts an event at `time`, no earlier than the last, that costs `cost` units.
    #[inline]
    pub fn push(&mut self, time: Timestamp, cost: u64) {
        self.window.push_cost(time, cost);
        self.count(time, cost);
    }

    /// Counts an event as [`push`](Demand::push) does, but for the busiest window, which
    /// only a listed key needs.
    #[inline]
    pub(super) fn count(&mut self, time: Timestamp, cost: u64) {
        self.events += 1;
        self.lossless.push_cost(time, cost);
    }

    /// Counts an event as [`push`](Demand::push) does, but for the smallest bucket: over
    /// many keys, that is the largest any key needs, found key by key.
    #[inline]
    pub(super) fn push_total(&mut self, time: Timestamp, cost: u64) {
        self.events += 1;
        self.window.push_cost(time, cost);
    }

    /// Forgets every event, keeping the memory it took.
    pub(super) fn clear(&mut self) {
        self.events = 0;
        self.window.clear();
        self.lossless = MinBucketFinder::new(self.lossless.result().rate);
    }
}

/// What one limiter decided on one key's events: what passed, its busiest window, its
/// promise and, for a leaky queue, the waits. It records decisions made elsewhere, by an
/// [`Engine`](super::Engine), and never decides.
#[derive(Clone, Debug)]
pub struct Lane {
    settings: Settings,
    pub(super) passed: u64,
    busiest: BusiestWindow,
    pub(super) promise: PromiseCheck,
    queue: Option<(Waits, LeakyQueue)>,
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
            queue: algorithm.delays().then(|| (Waits::new(rate), LeakyQueue::unbounded(rate))),
        }
    }

    /// Records whether an event at `time`, no earlier than the last, that costs `cost`
    /// units passed, and returns it. A leaky queue's waits are found again from the
    /// admitted events, so that its promise is checked apart from the engine that decided.
    #[inline]
    pub fn record(&mut self, time: Timestamp, cost: u64, passed: bool) -> bool {
        if passed {
            self.busiest.push_cost(time, cost);
        }
        self.count(time, cost, passed)
    }

    /// Records a decision as [`record`](Lane::record) does, but for the busiest window,
    /// which only a listed key needs.
    // Always inlined, as the busiest window's push is: it runs for every event of every
    // lane.
    #[inline(always)]
    pub(super) fn count(&mut self, time: Timestamp, cost: u64, passed: bool) -> bool {
        if passed {
            self.passed += 1;
            self.promise.passed(time, cost);
            if let Some((waits, queue)) = &mut self.queue {
                waits.record(queue.take(time, cost, false));
            }
        }
        passed
    }

    /// Forgets every event, keeping the memory it took.
    pub(super) fn clear(&mut self) {
        self.passed = 0;
        self.busiest.clear();
        self.promise.clear();
        if let Some(queue) = &mut self.queue {
            *queue = (Waits::new(self.settings.rate), LeakyQueue::unbounded(self.settings.rate));
        }
    }

    pub(super) fn waits(&self) -> Option<Waits> {
        self.queue.as_ref().map(|(waits, _)| *waits)
    }

    /// Returns the report of this lane over `demand`, naming the input, and the key if it is
    /// one key's; `fleet` says what fleet it ran on, if any.
    pub fn report(
        &self,
        demand: &Demand,
        input: &str,
        key: Option<String>,
        fleet: Option<&report::FleetReport>,
    ) -> report::LimiterReport {
        let Settings { algorithm, rate, burst, .. } = self.settings;
        report::LimiterReport {
            input: input.to_owned(),
            key,
            algorithm,
            rate,
            burst: algorithm.uses_burst().then_some(burst.get()),
            events: demand.events,
            passed: self.passed,
            dropped: demand.events - self.passed,
            busiest_window: self.busiest.busiest().into(),
            demand_busiest_window: demand.window.busiest().into(),
            min_bucket: Some(demand.lossless.result().min_bucket),
            worst_key: None,
            queue: self.waits().map(Into::into),
            promise: self.promise.result(self.waits()),
            fleet: fleet.cloned().map(Box::new),
            by_key: None,
        }
    }
}
