//! Sliding-window counter: the previous window's count, weighted by its overlap.

use super::aligned::{AlignedWindows, Step};
use std::num::NonZeroU64;

use super::promise::{Bound, Limit};
use super::{Decision, KeyedState, RedisScript, Rule};
use crate::units::rate::Rate;
use crate::units::time::Timestamp;

/// Counts passed events in the current and the previous epoch-aligned window, and passes
/// an event if and only if `prev · (P − elapsed) / P + cur < N`, where `elapsed` is how far
/// the event is into the current window.
///
/// It approximates a sliding log with two counters. The estimate assumes the previous
/// window's events were spread evenly, so it promises no exact bound; `compare` reports the
/// worst count it let through in any period.
#[derive(Clone, Debug)]
pub struct SlidingCounter {
    limit: i128,
    period: i64,
    state: Counters,
}

/// What a sliding-window counter changes as events come: the current window, and what
/// passed in it and in the one before.
#[derive(Clone, Debug, Default)]
pub struct Counters {
    windows: AlignedWindows,
    prev: u64,
    cur: u64,
}

impl SlidingCounter {
    /// Returns a limiter with both counters at zero.
    pub fn new(rate: Rate) -> SlidingCounter {
        SlidingCounter {
            limit: rate.n(),
            period: rate.period().as_micros(),
            state: Counters { windows: AlignedWindows::new(), prev: 0, cur: 0 },
        }
    }
}

impl KeyedState for SlidingCounter {
    type State = Counters;
    type Keys = super::Apart;

    #[inline]
    fn step(&self, state: &mut Counters, now: Timestamp, cost: u64, force: bool) -> Decision {
        let now = now.as_micros();
        let Counters { windows, prev, cur } = state;
        match windows.advance(now, self.period) {
            Step::Same => {}
            Step::Next => (*prev, *cur) = (*cur, 0),
            Step::Later => (*prev, *cur) = (0, 0),
        }
        let p = i128::from(self.period);
        let remaining = p - i128::from(windows.elapsed(now));
        // prev·(P − elapsed)/P + cur + c − 1 < N, multiplied through by P: with c = 1, the
        // estimate before the event is below N.
        let used = i128::from(*cur) + i128::from(cost) - 1;
        let estimate = i128::from(*prev) * remaining + used * p;
        let pass = force || estimate < self.limit * p;
        if pass {
            *cur = cur.saturating_add(cost);
        }
        Decision { passed: pass, wait: 0 }
    }

    /// With both counters 0 as of `now`, every later event counts from nothing, as a fresh
    /// key's does: the window it is in weighs nothing.
    fn at_rest(&self, state: &Counters, now: Timestamp) -> bool {
        let mut windows = state.windows;
        match windows.advance(now.as_micros(), self.period) {
            Step::Same => state.prev == 0 && state.cur == 0,
            Step::Next => state.cur == 0,
            Step::Later => true,
        }
    }

    /// Two windows after the last event's, both counters are 0.
    fn rests_after(&self, last: Timestamp) -> Option<Timestamp> {
        let last = last.as_micros();
        let start = super::aligned::floor_to(last, self.period);
        Timestamp::from_micros(start.checked_add(self.period.checked_mul(2)?)?)
    }

    fn state_mut(&mut self) -> &mut Counters {
        &mut self.state
    }
}

impl Rule for SlidingCounter {
    type Params = super::NoParams;

    #[cfg(test)]
    fn by_the_rule(rate: Rate, _b: u64, events: &[(i128, u64)]) -> Vec<bool> {
        let (n, p) = (rate.n(), rate.p());
        super::tests::by_rule(events, |passed, t, c| {
            let window = t.div_euclid(p);
            let prev = super::tests::used(passed, |s| s.div_euclid(p) == window - 1);
            let cur = super::tests::used(passed, |s| s.div_euclid(p) == window);
            prev * (p - (t - window * p)) + (cur + c - 1) * p < n * p
        })
    }

    const NAME: &'static str = "sliding-counter";
    const HELP: &'static str = "prev·(P − elapsed)/P + cur < N, over two epoch-aligned windows";
    const USES_BURST: bool = false;
    // Fewer events charged leave at least as much room.
    const ADMITS_ANY_PART: bool = true;
    const REDIS: Option<RedisScript> = Some(RedisScript::SlidingCounter);

    fn new_limit(rate: Rate, _burst: NonZeroU64) -> SlidingCounter {
        SlidingCounter::new(rate)
    }

    /// An approximation: at most N per aligned window; the worst period is reported.
    fn promise(limit: &Limit) -> String {
        let (n, p) = (limit.rate.count(), limit.rate.period());
        format!("about {n} per {p}, approximate: at most {n} per aligned window")
    }

    fn bound(limit: &Limit) -> Bound {
        Bound::Approximate { aligned: limit.rate.count() }
    }


}

#[cfg(test)]
mod tests {
    use super::super::tests::{decisions, secs, weighted};
    use super::*;

    #[test]
    fn the_weighted_estimate_reaching_n_rejects() {
        // 5 per minute; 4 passed in the previous minute, 2 so far in this one; 15 s in,
        // the estimate is 4·45/60 + 2 = 5, which is not below 5.
        let mut sc = SlidingCounter::new("5/m".parse().unwrap());
        let times = secs(&[0, 1, 2, 3, 61, 62, 75]);
        let want = [true, true, true, true, true, true, false];
        assert_eq!(decisions(&mut sc, &times), want);
        // A microsecond later the estimate is just below 5: 4·(45 s − 1 µs)/60 s + 2 < 5.
        let mut sc = SlidingCounter::new("5/m".parse().unwrap());
        let mut times = secs(&[0, 1, 2, 3, 61, 62, 75]);
        times[6] = Timestamp::from_micros(75_000_001).unwrap();
        assert_eq!(decisions(&mut sc, &times), [true; 7]);
    }

    #[test]
    fn a_skipped_window_clears_both_counters() {
        let mut sc = SlidingCounter::new("1/m".parse().unwrap());
        // 60 s: the previous window holds one event, fully weighted: rejected.
        // 120 s: the window [60, 120) passed nothing, so the estimate is 0.
        // 181 s: the estimate is 1·59/60 + 0 < 1, so it passes; 240 s: 1·60/60 = 1, not.
        let times = secs(&[0, 60, 120, 181, 240]);
        assert_eq!(decisions(&mut sc, &times), [true, false, true, true, false]);
        let times = secs(&[360, 420]);
        assert_eq!(decisions(&mut sc, &times), [true, false]);
    }

    #[test]
    fn a_weighted_event_passes_when_the_estimate_plus_its_cost_less_one_is_below_n() {
        // 10 a minute. In [0, 60): 4 passes (0 + 4 − 1 < 10), 7 does not (4 + 7 − 1 = 10),
        // 6 does (4 + 6 − 1 = 9). At 90 s the previous window's 10 weigh 10·30/60 = 5, so
        // a cost of 6 reaches 10 and a cost of 5 passes.
        let mut sc = SlidingCounter::new("10/m".parse().unwrap());
        let events = [(0, 4), (1, 7), (2, 6), (90, 6), (90, 5)];
        assert_eq!(weighted(&mut sc, &events), [true, false, true, false, true]);
    }
}
