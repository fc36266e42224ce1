//! Checking a promise: what a limiter's passed events showed, measured as they come.
//!
//! What each limiter promises, and how the measures judge it, sits beside the limiter, in
//! its [`Rule`](super::Rule); this module only measures.

use super::{Algorithm, AlignedWindows, Step, Waits};
use crate::sizing::min_bucket::MinBucketFinder;
use crate::sizing::window::BusiestWindow;
use crate::units::rate::Rate;
use crate::units::time::Timestamp;

/// What a limiter promises, and whether the replay kept it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Promise {
    /// The promise, and what was measured.
    pub text: String,
    /// Whether the passed events kept it.
    pub held: bool,
}

/// A limit as a promise speaks of it: N per P, and the burst (ignored without one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limit {
    /// N per P.
    pub rate: Rate,
    /// b.
    pub burst: u64,
}

impl Limit {
    /// The longest wait a leaky queue allows, (b − 1)·I, in units of 1/N µs.
    pub fn longest_wait(&self) -> i128 {
        i128::from(self.burst - 1) * self.rate.p()
    }
}

/// Which measures a promise needs of the passed events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Watch {
    /// The most in one epoch-aligned window of one period.
    pub aligned: bool,
    /// The most in any one period.
    pub period: bool,
    /// The smallest bucket at the rate that the passed events fit.
    pub bucket: bool,
}

/// What was measured on the passed events; a measure not watched is 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seen {
    /// The most in one epoch-aligned window.
    pub aligned: u64,
    /// The most in any one period.
    pub period: u64,
    /// The smallest bucket the passed events fit.
    pub bucket: u64,
    /// A leaky queue's waits.
    pub waits: Option<Waits>,
}

/// Watches the events one limiter passed and measures what its promise bounds.
#[derive(Clone, Debug)]
pub struct PromiseCheck {
    algorithm: Algorithm,
    limit: Limit,
    aligned: Option<AlignedMax>,
    period: Option<BusiestWindow>,
    bucket: Option<MinBucketFinder>,
}

/// The most events in any one epoch-aligned window.
#[derive(Clone, Debug)]
struct AlignedMax {
    windows: AlignedWindows,
    count: u64,
    max: u64,
}

impl PromiseCheck {
    /// Returns a check for a limiter with this algorithm, rate and burst.
    pub fn new(algorithm: Algorithm, rate: Rate, burst: u64) -> PromiseCheck {
        let watch = algorithm.watch();
        PromiseCheck {
            algorithm,
            limit: Limit { rate, burst },
            aligned: watch.aligned.then(|| AlignedMax {
                windows: AlignedWindows::new(),
                count: 0,
                max: 0,
            }),
            period: watch.period.then(|| BusiestWindow::new(rate.period())),
            bucket: watch.bucket.then(|| MinBucketFinder::new(rate)),
        }
    }

    /// Counts a passed event that cost `cost` units (at most [`MAX_COST`](super::MAX_COST)).
    #[inline]
    pub fn passed(&mut self, time: Timestamp, cost: u64) {
        if let Some(aligned) = &mut self.aligned {
            let period = self.limit.rate.period().as_micros();
            if aligned.windows.advance(time.as_micros(), period) != Step::Same {
                aligned.count = 0;
            }
            // Past u64::MAX only far past any limit: the promise is broken either way.
            aligned.count = aligned.count.saturating_add(cost);
            aligned.max = aligned.max.max(aligned.count);
        }
        if let Some(period) = &mut self.period {
            period.push_cost(time, cost);
        }
        if let Some(bucket) = &mut self.bucket {
            bucket.push_cost(time, cost);
        }
    }

    /// Forgets every event, as if none had passed.
    pub fn clear(&mut self) {
        if let Some(aligned) = &mut self.aligned {
            aligned.windows = AlignedWindows::new();
            (aligned.count, aligned.max) = (0, 0);
        }
        if let Some(period) = &mut self.period {
            period.clear();
        }
        if let Some(bucket) = &mut self.bucket {
            *bucket = MinBucketFinder::new(self.limit.rate);
        }
    }

    /// Says what the limiter promises, without what was measured.
    pub fn statement(&self) -> String {
        self.algorithm.promise(&self.limit)
    }

    /// What was measured, with a leaky queue's `waits`.
    fn seen(&self, waits: Option<Waits>) -> Seen {
        Seen {
            aligned: self.aligned.as_ref().map_or(0, |a| a.max),
            // Past u64::MAX only far past any limit: the promise is broken either way.
            period: self
                .period
                .as_ref()
                .map_or(0, |w| u64::try_from(w.busiest().units).unwrap_or(u64::MAX)),
            bucket: self.bucket.as_ref().map_or(0, |b| b.result().min_bucket),
            waits,
        }
    }

    /// Returns whether the limiter kept its promise; `waits` are a leaky queue's.
    pub fn held(&self, waits: Option<Waits>) -> bool {
        self.algorithm.held(&self.limit, &self.seen(waits))
    }

    /// Says what the limiter promises, what was measured, and whether it held; `waits` are
    /// a leaky queue's.
    pub fn result(&self, waits: Option<Waits>) -> Promise {
        let seen = self.seen(waits);
        let measured = self.algorithm.measured(&self.limit, &seen);
        let held = self.algorithm.held(&self.limit, &seen);
        Promise { text: format!("{}{measured}", self.statement()), held }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limiter::{Algorithm, Limiter};

    fn at(minutes: &[i64]) -> Vec<Timestamp> {
        minutes.iter().map(|m| Timestamp::from_micros(m * 60_000_000).unwrap()).collect()
    }

    /// Checks a promise over `passed`, as if the limiter had passed exactly those.
    fn check(algorithm: Algorithm, burst: u64, passed: &[Timestamp]) -> Promise {
        let mut check = PromiseCheck::new(algorithm, "2/h".parse().unwrap(), burst);
        passed.iter().for_each(|&t| check.passed(t, 1));
        check.result(None)
    }

    #[test]
    fn a_sliding_log_that_passed_three_in_an_hour_broke_it() {
        assert!(check(Algorithm::SlidingLog, 0, &at(&[0, 30, 60, 90])).held);
        let broken = check(Algorithm::SlidingLog, 0, &at(&[0, 30, 59]));
        assert_eq!(broken, Promise { text: "at most 2 in any 1h: saw 3".into(), held: false });
    }

    #[test]
    fn fixed_windows_may_pass_2n_across_an_edge_but_not_n_plus_one_in_one() {
        assert!(check(Algorithm::FixedWindow, 0, &at(&[30, 50, 60, 70])).held);
        assert!(!check(Algorithm::FixedWindow, 0, &at(&[0, 10, 20])).held);
    }

    #[test]
    fn a_bucket_promise_breaks_when_the_passed_events_need_a_bigger_bucket() {
        // At 2/h, three events at once need a bucket of 3.
        assert!(check(Algorithm::Gcra, 3, &at(&[0, 0, 0])).held);
        let broken = check(Algorithm::TokenBucket, 2, &at(&[0, 0, 0]));
        assert!(!broken.held && broken.text.ends_with("fit a bucket of 3"), "{}", broken.text);
    }

    #[test]
    fn sliding_counter_reports_its_worst_period() {
        let found = check(Algorithm::SlidingCounter, 0, &at(&[40, 50, 61, 62]));
        assert!(found.held, "at most 2 per aligned window");
        assert!(found.text.ends_with("the worst 1h saw 4"), "{}", found.text);
        assert!(!check(Algorithm::SlidingCounter, 0, &at(&[1, 2, 3])).held);
    }

    #[test]
    fn a_leaky_queue_checks_its_longest_wait() {
        let rate = "2/h".parse().unwrap();
        let mut queue = crate::limiter::LeakyQueue::new(rate, crate::limiter::tests::burst(2));
        let mut waits = Waits::new(rate);
        for t in at(&[0, 0, 0]) {
            waits.record(queue.decide(t));
        }
        let check = PromiseCheck::new(Algorithm::LeakyQueue, rate, 2);
        let held = check.result(Some(waits));
        assert_eq!(held.text, "no wait over (b - 1)·I = 30m: the longest was 30m");
        assert!(held.held);
        // The same waits judged against a burst of 1, which allows none, break it.
        let check = PromiseCheck::new(Algorithm::LeakyQueue, rate, 1);
        assert!(!check.result(Some(waits)).held);
    }
}
