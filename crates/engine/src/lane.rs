//! What one limiter decided on one key's events, and what the events themselves show.

pub use crate::policy::Settings;

use crate::input::catalog::Timeline;
use crate::limiter::promise::PromiseCheck;
use crate::limiter::{Decision, LeakyQueue, Limiter, Waits};
use crate::report;
use crate::sizing::min_bucket::MinBucketFinder;
use crate::sizing::window::BusiestWindow;
use crate::units::rate::Rate;
use crate::units::time::{Span, Timestamp};

/// What a limiter's events cost, in units: what it passed, and the events that cost more
/// than it ever holds (which never pass), with the first of them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Spent {
    /// The units it passed.
    pub passed: u128,
    /// How many events cost more than its capacity.
    pub too_big: u64,
    /// The first of them: its time and its cost.
    pub first_too_big: Option<(Timestamp, u64)>,
}

impl Spent {
    /// Counts an event at `time` that costs `cost`, and whether it passed a limiter that
    /// holds at most `capacity` units.
    #[inline(always)]
    pub fn add(&mut self, time: Timestamp, cost: u64, passed: bool, capacity: u64) {
        if passed {
            self.passed += u128::from(cost);
        } else if cost > capacity {
            self.too_big += 1;
            self.first_too_big = self.first_too_big.or(Some((time, cost)));
        }
    }

    /// Returns what a report says of them, over demand's `units`; `None` unless `weighted`.
    pub fn report(
        &self,
        units: u128,
        weighted: bool,
    ) -> (Option<report::Units>, Option<report::TooBig>) {
        if !weighted {
            return (None, None);
        }
        let spent =
            report::Units { events: units, passed: self.passed, dropped: units - self.passed };
        let too_big = self.first_too_big.map(|(time, cost)| report::TooBig {
            events: self.too_big,
            first: report::Heavy { time, cost },
        });
        (Some(spent), too_big)
    }
}

/// What all the events show, whatever the limiter: their count, the busiest window of
/// demand, and the smallest lossless bucket at the rate.
#[derive(Clone, Debug)]
pub struct Demand {
    pub(super) events: u64,
    /// What the events cost together.
    pub(super) units: u128,
    /// Whether any event cost other than 1.
    pub(super) weighted: bool,
    pub(super) window: BusiestWindow,
    pub(super) lossless: MinBucketFinder,
}

impl Demand {
    /// Returns a tally of no events, for windows of `window` and buckets at `rate`.
    pub fn new(rate: Rate, window: Span) -> Demand {
        Demand {
            events: 0,
            units: 0,
            weighted: false,
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
        self.units += u128::from(cost);
        self.weighted |= cost != 1;
        self.lossless.push_cost(time, cost);
    }

    /// Counts an event as [`push`](Demand::push) does, but for the smallest bucket: over
    /// many keys, that is the largest any key needs, found key by key.
    #[inline]
    pub(super) fn push_total(&mut self, time: Timestamp, cost: u64) {
        self.events += 1;
        self.units += u128::from(cost);
        self.weighted |= cost != 1;
        self.window.push_cost(time, cost);
    }

    /// Forgets every event, keeping the memory it took.
    pub(super) fn clear(&mut self) {
        self.events = 0;
        self.units = 0;
        self.weighted = false;
        self.window.clear();
        self.lossless = MinBucketFinder::new(self.lossless.result().rate);
    }
}

/// What one limiter decided on one key's events: what passed, its busiest window, its
/// promise and, for a limiter that delays, the waits. It records decisions made elsewhere, by an
/// [`Engine`](super::Engine), and never decides.
#[derive(Clone, Debug)]
pub struct Lane {
    settings: Settings,
    pub(super) passed: u64,
    pub(super) spent: Spent,
    capacity: u64,
    busiest: BusiestWindow,
    pub(super) promise: PromiseCheck,
    /// The waits, for a limiter that delays, and for a leaky queue the queue that finds
    /// them again.
    queue: Option<(Waits, Option<LeakyQueue>)>,
}

impl Lane {
    /// Returns a lane that has seen no events.
    pub fn new(settings: Settings) -> Lane {
        let Settings { algorithm, rate, burst, window, .. } = settings;
        Lane {
            settings,
            passed: 0,
            spent: Spent::default(),
            capacity: settings.capacity(),
            busiest: BusiestWindow::new(window),
            promise: PromiseCheck::new(algorithm, rate, burst.get()),
            queue: Lane::queue(settings),
        }
    }

    /// The waits a lane of `settings` keeps, if it delays.
    fn queue(settings: Settings) -> Option<(Waits, Option<LeakyQueue>)> {
        let rate = settings.rate;
        let queue = settings.algorithm.delays().then(|| LeakyQueue::unbounded(rate));
        (queue.is_some() || settings.tells_waits()).then(|| (Waits::new(rate), queue))
    }

    /// Records the `decision` on an event at `time`, no earlier than the last, that costs
    /// `cost` units, and returns whether it passed. A leaky queue's waits are found again
    /// from the admitted events, so that its promise is checked apart from the engine that
    /// decided; nginx's are as it decided them.
    #[inline]
    pub fn record(&mut self, time: Timestamp, cost: u64, decision: Decision) -> bool {
        if decision.passed {
            self.busiest.push_cost(time, cost);
        }
        self.count(time, cost, decision)
    }

    /// Records a decision as [`record`](Lane::record) does, but for the busiest window,
    /// which only a listed key needs.
    // Always inlined, as the busiest window's push is: it runs for every event of every
    // lane.
    #[inline(always)]
    pub(super) fn count(&mut self, time: Timestamp, cost: u64, decision: Decision) -> bool {
        let passed = decision.passed;
        self.spent.add(time, cost, passed, self.capacity);
        if passed {
            self.passed += 1;
            self.promise.passed(time, cost);
            match &mut self.queue {
                Some((waits, Some(queue))) => waits.record(queue.take(time, cost, false)),
                Some((waits, None)) => waits.record(decision),
                None => {}
            }
        }
        passed
    }

    /// Forgets every event, keeping the memory it took.
    pub(super) fn clear(&mut self) {
        self.passed = 0;
        self.spent = Spent::default();
        self.busiest.clear();
        self.promise.clear();
        if self.queue.is_some() {
            self.queue = Lane::queue(self.settings);
        }
    }

    pub(super) fn waits(&self) -> Option<Waits> {
        self.queue.as_ref().map(|(waits, _)| *waits)
    }

    /// Returns the report of this lane over `demand`, naming the input, and the key if it is
    /// one key's; `fleet` says what fleet it ran on, if any. A `weighted` report (some
    /// event of the run cost other than 1) gives units too.
    pub fn report(
        &self,
        demand: &Demand,
        input: &str,
        key: Option<String>,
        fleet: Option<&report::FleetReport>,
        weighted: bool,
    ) -> report::LimiterReport {
        let Settings { algorithm, rate, burst, .. } = self.settings;
        let (units, too_big) = self.spent.report(demand.units, weighted);
        report::LimiterReport {
            input: input.to_owned(),
            key,
            algorithm,
            rate,
            burst: algorithm.shown_burst(burst),
            delay: self.settings.shown_delay(),
            events: demand.events,
            passed: self.passed,
            dropped: demand.events - self.passed,
            units,
            too_big,
            busiest_window: report::Window::of(self.busiest.busiest(), weighted),
            demand_busiest_window: report::Window::of(demand.window.busiest(), weighted),
            min_bucket: demand.lossless.result().min_bucket,
            worst_key: None,
            system_size: None,
            not_accounted: None,
            queue: self.waits().map(Into::into),
            promise: self.promise.result(self.waits()),
            fleet: fleet.cloned().map(Box::new),
            by_key: None,
        }
    }
}

/// Returns whether lane `n` passed an event, from the event's bytes of decisions.
#[inline]
pub(crate) fn lane_passed(bits: &[u8], n: usize) -> bool {
    bits[n / 8] >> (n % 8) & 1 == 1
}

/// Over all keys: the demand, and each lane's passed count and busiest window.
#[derive(Clone, Debug)]
pub(crate) struct Totals {
    pub(crate) demand: Demand,
    pub(crate) passed: Vec<u64>,
    pub(crate) spent: Vec<Spent>,
    pub(crate) busiest: Vec<BusiestWindow>,
}

impl Totals {
    /// Finds the totals over all keys from the kept events and their decisions (`stride`
    /// bytes an event), in their order.
    pub(crate) fn of(
        events: &Timeline,
        passed: &[u8],
        stride: usize,
        settings: &[Settings],
    ) -> Totals {
        let first = settings[0];
        let mut totals = Totals {
            demand: Demand::new(first.rate, first.window),
            passed: vec![0; settings.len()],
            spent: vec![Spent::default(); settings.len()],
            busiest: settings.iter().map(|s| BusiestWindow::new(s.window)).collect(),
        };
        let capacity: Vec<u64> = settings.iter().map(Settings::capacity).collect();
        let decisions = passed.chunks_exact(stride);
        for ((time, cost), bits) in events.each(0..events.len()).zip(decisions) {
            totals.demand.push_total(time, cost);
            for (n, spent) in totals.spent.iter_mut().enumerate() {
                let passed = lane_passed(bits, n);
                spent.add(time, cost, passed, capacity[n]);
                if passed {
                    totals.passed[n] += 1;
                    totals.busiest[n].push_cost(time, cost);
                }
            }
        }
        totals
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spent_counts_passed_units_and_the_events_too_big_to_pass() {
        let at = |s: i64| Timestamp::from_micros(s * 1_000_000).unwrap();
        let mut spent = Spent::default();
        // A limiter that holds 5: 3 passes, 4 is refused (not too big), 7 and 9 are too big.
        spent.add(at(0), 3, true, 5);
        spent.add(at(1), 4, false, 5);
        spent.add(at(2), 7, false, 5);
        spent.add(at(3), 9, false, 5);
        assert_eq!((spent.passed, spent.too_big, spent.first_too_big), (3, 2, Some((at(2), 7))));
        let (units, too_big) = spent.report(23, true);
        let units = units.unwrap();
        assert_eq!((units.events, units.passed, units.dropped), (23, 3, 20));
        assert_eq!(too_big.map(|t| (t.events, t.first.cost)), Some((2, 7)));
        assert_eq!(spent.report(23, false), (None, None), "units only for a weighted run");
    }
}
