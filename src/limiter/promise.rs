//! What each limiter promises, and a check, on the events it passed, that it kept it.

use crate::limiter::{Algorithm, AlignedWindows, Step, Waits};
use crate::report;
use crate::sizing::min_bucket::MinBucketFinder;
use crate::sizing::window::BusiestWindow;
use crate::units::rate::Rate;
use crate::units::time::{Timestamp, human_duration};

/// Watches the events one limiter passed and measures what its promise bounds.
///
/// - fixed-window: at most N per aligned window, and so at most 2N in any period;
/// - sliding-log: at most N in any period;
/// - sliding-counter: an approximation; at most N per aligned window, and the worst period
///   is reported;
/// - token-bucket and gcra: at most b + r·T in any interval of length T, which holds if and
///   only if the passed events fit a bucket of b at rate r;
/// - leaky-queue: no admitted event waits longer than (b − 1)·I.
#[derive(Clone, Debug)]
pub struct PromiseCheck {
    algorithm: Algorithm,
    rate: Rate,
    burst: u64,
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
        use Algorithm::*;
        let period = rate.period();
        PromiseCheck {
            algorithm,
            rate,
            burst,
            aligned: matches!(algorithm, FixedWindow | SlidingCounter).then(|| AlignedMax {
                windows: AlignedWindows::new(),
                count: 0,
                max: 0,
            }),
            period: matches!(algorithm, FixedWindow | SlidingLog | SlidingCounter)
                .then(|| BusiestWindow::new(period)),
            bucket: matches!(algorithm, TokenBucket | Gcra).then(|| MinBucketFinder::new(rate)),
        }
    }

    /// Counts a passed event.
    #[inline]
    pub fn passed(&mut self, time: Timestamp) {
        if let Some(aligned) = &mut self.aligned {
            if aligned.windows.advance(time.as_micros(), self.rate.period().as_micros())
                != Step::Same
            {
                aligned.count = 0;
            }
            aligned.count += 1;
            aligned.max = aligned.max.max(aligned.count);
        }
        if let Some(period) = &mut self.period {
            period.push(time);
        }
        if let Some(bucket) = &mut self.bucket {
            bucket.push(time);
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
            *bucket = MinBucketFinder::new(self.rate);
        }
    }

    /// Says what the limiter promises, without what was measured.
    pub fn statement(&self) -> String {
        let (n, p, b) = (self.rate.count(), self.rate.period(), self.burst);
        match self.algorithm {
            Algorithm::FixedWindow => {
                format!("at most {n} per aligned {p} window, so at most {} in any {p}", 2 * n)
            }
            Algorithm::SlidingLog => format!("at most {n} in any {p}"),
            Algorithm::SlidingCounter => {
                format!("about {n} per {p}, approximate: at most {n} per aligned window")
            }
            Algorithm::TokenBucket | Algorithm::Gcra => {
                format!("at most b + r·T = {b} + T·{} in any interval T", self.rate)
            }
            Algorithm::LeakyQueue => {
                format!("no wait over (b - 1)·I = {}", human_duration(self.longest_wait_micros()))
            }
        }
    }

    /// The longest wait a leaky queue allows, (b − 1)·I, in units of 1/N µs.
    fn longest_wait(&self) -> i128 {
        i128::from(self.burst - 1) * self.rate.p()
    }

    fn longest_wait_micros(&self) -> i128 {
        self.longest_wait() / self.rate.n()
    }

    /// What was measured: the most in one aligned window, the most in one period, and the
    /// smallest bucket the passed events fit.
    fn measured(&self) -> (u64, u64, u64) {
        let aligned = self.aligned.as_ref().map_or(0, |a| a.max);
        let worst = self.period.as_ref().map_or(0, |w| w.busiest().count);
        let fit = self.bucket.as_ref().map_or(0, |b| b.result().min_bucket);
        (aligned, worst, fit)
    }

    /// Returns whether the limiter kept its promise; `waits` are a leaky queue's.
    pub fn held(&self, waits: Option<Waits>) -> bool {
        let n = self.rate.count();
        let (aligned, worst, fit) = self.measured();
        match self.algorithm {
            Algorithm::FixedWindow => aligned <= n && worst <= 2 * n,
            Algorithm::SlidingLog => worst <= n,
            Algorithm::SlidingCounter => aligned <= n,
            Algorithm::TokenBucket | Algorithm::Gcra => fit <= self.burst,
            Algorithm::LeakyQueue => waits.is_none_or(|w| w.longest <= self.longest_wait()),
        }
    }

    /// Says what the limiter promises, what was measured, and whether it held; `waits` are
    /// a leaky queue's.
    pub fn result(&self, waits: Option<Waits>) -> report::Promise {
        let p = self.rate.period();
        let (aligned, worst, fit) = self.measured();
        let measured = match self.algorithm {
            Algorithm::FixedWindow => format!(": saw {aligned} and {worst}"),
            Algorithm::SlidingLog => format!(": saw {worst}"),
            Algorithm::SlidingCounter => format!(" (saw {aligned}); the worst {p} saw {worst}"),
            Algorithm::TokenBucket | Algorithm::Gcra => {
                format!(": the passed events fit a bucket of {fit}")
            }
            Algorithm::LeakyQueue => {
                let waits = waits.expect("a leaky queue reports its waits");
                format!(": the longest was {}", human_duration(waits.longest_micros()))
            }
        };
        report::Promise { text: format!("{}{measured}", self.statement()), held: self.held(waits) }
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
    fn check(algorithm: Algorithm, burst: u64, passed: &[Timestamp]) -> report::Promise {
        let mut check = PromiseCheck::new(algorithm, "2/h".parse().unwrap(), burst);
        passed.iter().for_each(|&t| check.passed(t));
        check.result(None)
    }

    #[test]
    fn a_sliding_log_that_passed_three_in_an_hour_broke_it() {
        assert!(check(Algorithm::SlidingLog, 0, &at(&[0, 30, 60, 90])).held);
        let broken = check(Algorithm::SlidingLog, 0, &at(&[0, 30, 59]));
        assert_eq!(
            broken,
            report::Promise { text: "at most 2 in any 1h: saw 3".into(), held: false }
        );
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
