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
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Promise {
    /// The promise, and what was measured.
    pub text: String,
    /// Whether the passed events kept it.
    pub held: bool,
    /// The promise's figures, and what was measured, for a program to read; none where
    /// the promise is said of many keys at once.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub bound: Option<Measured>,
}

/// What a limiter promises of the events it passes, as figures: its kind of bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    /// At most b + r·T in any interval T: the passed events fit a bucket of b at the rate.
    Bucket {
        /// b, in units.
        burst: u64,
    },
    /// At most `most` units in any one period.
    Period {
        /// The most.
        most: u64,
    },
    /// At most `aligned` units in each epoch-aligned window of one period, and so at most
    /// `period` in any one period.
    Aligned {
        /// The most in an aligned window.
        aligned: u64,
        /// The most in any period.
        period: u64,
    },
    /// About N a period, approximate: at most `aligned` units in each epoch-aligned window;
    /// the worst period is measured and shown, not promised.
    Approximate {
        /// The most in an aligned window.
        aligned: u64,
    },
    /// No admitted event waits longer than `longest`, in units of 1/N µs.
    Wait {
        /// The longest wait.
        longest: i128,
    },
}

/// A promise's figures and what was measured of them, as the JSON gives them: `kind` says
/// which bound, and the times are seconds.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "serde", serde(tag = "kind", rename_all = "snake_case"))]
pub enum Measured {
    /// At most b + r·T in any interval T, and the smallest bucket the passed events fit.
    Bucket {
        /// b, in units.
        burst: u64,
        /// The smallest bucket at the rate that the passed events fit.
        fit: u64,
    },
    /// At most `most` units in any period of `period_s` seconds, and the most seen.
    Period {
        /// The most promised.
        most: u64,
        /// The period, in seconds.
        period_s: f64,
        /// The most the passed events put in any period.
        seen: u64,
    },
    /// At most `aligned` units in each aligned window and `most` in any period, and the
    /// most seen of each.
    Aligned {
        /// The most promised in an aligned window.
        aligned: u64,
        /// The most promised in any period.
        most: u64,
        /// The period, in seconds.
        period_s: f64,
        /// The most the passed events put in an aligned window.
        seen_aligned: u64,
        /// The most they put in any period.
        seen: u64,
    },
    /// At most `aligned` units in each aligned window, approximate; the most seen there,
    /// and in the worst period.
    Approximate {
        /// The most promised in an aligned window.
        aligned: u64,
        /// The period, in seconds.
        period_s: f64,
        /// The most the passed events put in an aligned window.
        seen_aligned: u64,
        /// The most they put in any period.
        seen: u64,
    },
    /// No admitted event waits longer than `longest_s`, and the longest seen.
    Wait {
        /// The longest wait promised, in seconds.
        longest_s: f64,
        /// The longest an admitted event waited, in seconds.
        seen_s: f64,
    },
}

impl Bound {
    /// Which measures of the passed events the bound needs.
    pub fn watch(self) -> Watch {
        match self {
            Bound::Bucket { .. } => Watch { aligned: false, period: false, bucket: true },
            Bound::Period { .. } => Watch { aligned: false, period: true, bucket: false },
            Bound::Aligned { .. } | Bound::Approximate { .. } => {
                Watch { aligned: true, period: true, bucket: false }
            }
            Bound::Wait { .. } => Watch { aligned: false, period: false, bucket: false },
        }
    }

    /// Says what was measured, as the statement of the promise goes on: for a period of
    /// `period`.
    pub fn measured(self, seen: &Seen, period: crate::units::time::Span) -> String {
        match self {
            Bound::Bucket { .. } => format!(": the passed events fit a bucket of {}", seen.bucket),
            Bound::Period { .. } => format!(": saw {}", seen.period),
            Bound::Aligned { .. } => format!(": saw {} and {}", seen.aligned, seen.period),
            Bound::Approximate { .. } => {
                format!(" (saw {}); the worst {period} saw {}", seen.aligned, seen.period)
            }
            Bound::Wait { .. } => {
                let longest = seen.waits.map_or(0, |w| w.longest_micros());
                format!(": the longest was {}", crate::units::time::human_duration(longest))
            }
        }
    }

    /// Returns whether what was measured kept the bound.
    pub fn held(self, seen: &Seen) -> bool {
        match self {
            Bound::Bucket { burst } => seen.bucket <= burst,
            Bound::Period { most } => seen.period <= most,
            Bound::Aligned { aligned, period } => seen.aligned <= aligned && seen.period <= period,
            Bound::Approximate { aligned } => seen.aligned <= aligned,
            Bound::Wait { longest } => seen.waits.is_none_or(|w| w.longest <= longest),
        }
    }

    /// Returns the bound's figures with what was measured, for a period of `period`
    /// and a rate of `n` per it (a wait's units are 1/n µs).
    pub fn figures(self, seen: &Seen, period: crate::units::time::Span, n: i128) -> Measured {
        let period_s = period.as_secs_f64();
        match self {
            Bound::Bucket { burst } => Measured::Bucket { burst, fit: seen.bucket },
            Bound::Period { most } => Measured::Period { most, period_s, seen: seen.period },
            Bound::Aligned { aligned, period: most } => Measured::Aligned {
                aligned,
                most,
                period_s,
                seen_aligned: seen.aligned,
                seen: seen.period,
            },
            Bound::Approximate { aligned } => Measured::Approximate {
                aligned,
                period_s,
                seen_aligned: seen.aligned,
                seen: seen.period,
            },
            Bound::Wait { longest } => {
                // Seconds, for people and programs to read; no decision depends on them.
                #[allow(clippy::cast_precision_loss)]
                let seconds = |units: i128| units as f64 / n.max(1) as f64 / 1e6;
                Measured::Wait {
                    longest_s: seconds(longest),
                    seen_s: seconds(seen.waits.map_or(0, |w| w.longest)),
                }
            }
        }
    }
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
        let watch = algorithm.bound(&Limit { rate, burst }).watch();
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
    pub fn seen(&self, waits: Option<Waits>) -> Seen {
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
        self.algorithm.bound(&self.limit).held(&self.seen(waits))
    }

    /// Says what the limiter promises, what was measured, and whether it held; `waits` are
    /// a leaky queue's.
    pub fn result(&self, waits: Option<Waits>) -> Promise {
        self.judged(self.seen(waits))
    }

    /// Says what the limiter promises and whether it held, of passed events measured as
    /// `seen`: here, or as parts of a stream measured apart and merged.
    pub fn judged(&self, seen: Seen) -> Promise {
        let (bound, period) = (self.algorithm.bound(&self.limit), self.limit.rate.period());
        let (measured, held) = (bound.measured(&seen, period), bound.held(&seen));
        let figures = bound.figures(&seen, period, self.limit.rate.n());
        Promise { text: format!("{}{measured}", self.statement()), held, bound: Some(figures) }
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
        assert_eq!((broken.text.as_str(), broken.held), ("at most 2 in any 1h: saw 3", false));
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
