//! Python `limits`' sliding-window counter, as its memory storage keeps its counters.

use std::num::NonZeroU64;

use super::promise::{Bound, Limit};
use super::sliding_counter::SlidingCounter;
use super::{Decision, KeyedState, Rule};
use crate::units::rate::Rate;
use crate::units::time::Timestamp;

/// `limits`' `SlidingWindowCounterRateLimiter` on its `MemoryStorage` (limits 5.8.0,
/// `storage/memory.py`, `acquire_sliding_window_entry` lines 184–215, `incr` and `get`, and
/// `_get_sliding_window_info` lines 217–231; the windows from `storage/base.py`,
/// `sliding_window_keys`). A hit at t reads two counters, named `int((t − P)/P)` and
/// `int(t/P)`, and with r = t mod P passes if `⌊prev·(P − r)/P⌋ + cur + c ≤ N`; it then
/// adds c to the current one. A counter expires 2·P after the hit that made it.
///
/// From P after the epoch on, the names are the epoch-aligned windows, no counter read
/// has expired, and for whole numbers k and N, `⌊w⌋ + k ≤ N` holds exactly when
/// `w + k − 1 < N`: this model decides as the exact `sliding-counter` does (a property
/// test checks it). Before that, `int()` truncates toward zero: the window named 0 spans
/// (−P, P), so in its second half the current counter is also the previous one, and the
/// counter named 0 may expire before the window after it is done reading it. `limits`
/// computes w in floats, so where w is a whole number its floor can fall one lower
/// there, and it passes a hit this exact rule refuses.
#[derive(Clone, Debug)]
pub struct LimitsSlidingWindow {
    limit: u64,
    period: i64,
    state: Counters,
}

/// The counters of one key that can still be read: `limits`' memory storage keeps a
/// counter until it expires, and a replay's time only moves on, so that a hit reads only
/// the counters of its two windows.
#[derive(Clone, Debug, Default)]
pub struct Counters {
    kept: [Option<Counter>; 2],
}

/// One counter: its window's name, its count, and when it expires, in µs.
#[derive(Clone, Copy, Debug)]
struct Counter {
    window: i64,
    count: u64,
    expires: i64,
}

impl Counters {
    /// Returns the count of `window`'s counter at `now`, forgetting it once expired, as the
    /// storage's `get` does.
    fn get(&mut self, window: i64, now: i64) -> u64 {
        for kept in &mut self.kept {
            match kept {
                Some(counter) if counter.window == window && counter.expires <= now => *kept = None,
                Some(counter) if counter.window == window => return counter.count,
                _ => {}
            }
        }
        0
    }

    /// Adds `amount` to `window`'s counter at `now`, as the storage's `incr` does: a counter
    /// that was 0 expires `expiry` from now. Counters of windows before `oldest` are
    /// forgotten: no later hit reads them.
    fn incr(&mut self, window: i64, now: i64, expiry: i64, amount: u64, oldest: i64) {
        self.get(window, now);
        let slot = match self.kept.iter().position(|k| k.is_some_and(|c| c.window == window)) {
            Some(slot) => slot,
            None => {
                for kept in &mut self.kept {
                    if kept.is_some_and(|c| c.window < oldest) {
                        *kept = None;
                    }
                }
                // Besides `window`, only `oldest` can still be read, so a slot is free; were
                // none, the older counter would go.
                let free = self.kept.iter().position(Option::is_none);
                let slot = free.unwrap_or_else(|| {
                    let window = |k: &Option<Counter>| k.map_or(i64::MIN, |c| c.window);
                    usize::from(window(&self.kept[1]) < window(&self.kept[0]))
                });
                self.kept[slot] = Some(Counter { window, count: 0, expires: 0 });
                slot
            }
        };
        if let Some(counter) = &mut self.kept[slot] {
            counter.count = counter.count.saturating_add(amount);
            if counter.count == amount {
                counter.expires = now.saturating_add(expiry);
            }
        }
    }
}

impl KeyedState for LimitsSlidingWindow {
    type State = Counters;
    type Keys = super::Apart;

    #[inline]
    fn step(&self, state: &mut Counters, now: Timestamp, cost: u64, force: bool) -> Decision {
        let (t, p) = (now.as_micros(), self.period);
        // Python's int(): toward zero. The weight's r is Python's %, toward minus infinity.
        // In 128 bits, t − P cannot wrap; each name is at most |t| + 1 in size, an i64.
        let name = |t: i128| i64::try_from(t / i128::from(p)).unwrap_or(i64::MIN);
        let (previous, current) = (name(i128::from(t) - i128::from(p)), name(i128::from(t)));
        let (prev, cur) = (state.get(previous, t), state.get(current, t));
        let r = t.rem_euclid(p);
        let weighted = i128::from(prev) * i128::from(p - r) / i128::from(p);
        let pass = force
            || (cost <= self.limit
                && weighted + i128::from(cur) + i128::from(cost) <= i128::from(self.limit));
        if pass {
            state.incr(current, t, p.saturating_mul(2), cost, previous);
        }
        Decision { passed: pass, wait: 0 }
    }

    /// With the counters of the window of `now` and of the one before at 0, or gone, every
    /// later hit counts from nothing, as a fresh key's does.
    fn at_rest(&self, state: &Counters, now: Timestamp) -> bool {
        let (t, p) = (now.as_micros(), self.period);
        let name = |t: i128| i64::try_from(t / i128::from(p)).unwrap_or(i64::MIN);
        let (previous, current) = (name(i128::from(t) - i128::from(p)), name(i128::from(t)));
        let mut state = state.clone();
        state.get(previous, t) == 0 && state.get(current, t) == 0
    }

    fn state_mut(&mut self) -> &mut Counters {
        &mut self.state
    }
}

impl Rule for LimitsSlidingWindow {
    type Params = super::NoParams;

    #[cfg(test)]
    fn by_the_rule(rate: Rate, _b: u64, events: &[(i128, u64)]) -> Vec<bool> {
        // Counters named by Python's int(), toward zero: each holds the passed hits named so
        // since it was made, and expires 2·P after the hit that made it.
        let (n, p) = (rate.n(), rate.p());
        super::tests::by_rule(events, |passed, t, c| {
            let count = |name: i128| {
                let (mut count, mut expires) = (0, i128::MIN);
                for &(s, c) in passed.iter().filter(|&&(s, _)| s / p == name) {
                    if expires <= s {
                        count = 0;
                    }
                    count += c;
                    if count == c {
                        expires = s + 2 * p;
                    }
                }
                if expires <= t { 0 } else { count }
            };
            let (prev, cur) = (count((t - p) / p), count(t / p));
            (prev * (p - t.rem_euclid(p))).div_euclid(p) + cur + c <= n
        })
    }

    const NAME: &'static str = "limits-sliding-window";
    const HELP: &'static str =
        "Python limits' sliding-window counter: ⌊prev·(P − elapsed)/P⌋ + cur + c ≤ N";
    const USES_BURST: bool = false;
    const MODELS: Option<&'static str> = Some("Python's limits 5.8.0, SlidingWindowCounterRateLimiter");
    const QUIRKS: Option<&'static str> = Some("an approximation weighing the previous window by the time left, in floats");
    const PROVEN: Option<&'static str> = Some("Python's limits 5.8.0 from PyPI, its clock patched (tests/cli/limits_peer.rs)");

    fn refuses(rate: Rate) -> Option<String> {
        super::limits_fixed_window::whole_seconds(rate)
    }

    fn new_limit(rate: Rate, _burst: NonZeroU64) -> LimitsSlidingWindow {
        LimitsSlidingWindow {
            limit: rate.count(),
            period: rate.period().as_micros(),
            state: Counters::default(),
        }
    }

    fn promise(limit: &Limit) -> String {
        SlidingCounter::promise(limit)
    }

    fn bound(limit: &Limit) -> Bound {
        SlidingCounter::bound(limit)
    }


}

#[cfg(test)]
mod tests {
    use super::super::tests::{decisions, secs};
    use super::*;

    #[test]
    fn the_floored_weighted_count_decides_as_the_exact_counter() {
        // 3 per 60 s, ten windows after the epoch: three pass at 600, 601, 602. At 670 s
        // (10 s into the next window) the previous one weighs ⌊3·50/60⌋ = ⌊2.5⌋ = 2, and
        // 2 + 0 + 1 ≤ 3: it passes; at 675 s, ⌊3·45/60⌋ = 2, and 2 + 1 + 1 > 3: refused; at
        // 700 s, ⌊3·20/60⌋ = 1, and 1 + 1 + 1 ≤ 3: it passes; at 701 s, ⌊3·19/60⌋ = 0,
        // 0 + 2 + 1 ≤ 3: it passes; at 702 s, 0 + 3 + 1 > 3. limits 5.8.0 decides the same.
        let times = secs(&[600, 601, 602, 670, 675, 700, 701, 702]);
        let want = [true, true, true, true, false, true, true, false];
        let rate: Rate = "3/60s".parse().unwrap();
        let mut limiter = LimitsSlidingWindow::new_limit(rate, NonZeroU64::MIN);
        assert_eq!(decisions(&mut limiter, &times), want);
        assert_eq!(decisions(&mut SlidingCounter::new(rate), &times), want);
    }

    #[test]
    fn windows_around_the_epoch_are_named_by_truncation_and_expire_as_limits_keeps_them() {
        // 1 per 10 s. −15 s: window −1, nothing before: passes (counter −1 expires at 5 s).
        // −5 s: window 0 (int(−0.5)), previous −1 holds 1 at r = 5: ⌊1·5/10⌋ = 0, passes;
        // counter 0 holds 1 and expires at 15 s. 3 s: window 0 again, and its previous,
        // int(−0.7), is 0 too: ⌊1·7/10⌋ + 1 + 1 = 2 > 1, refused (the exact counter, with
        // windows [−10, 0) and [0, 10), passes it). 12 s: window 1, previous 0 still holds 1:
        // ⌊1·8/10⌋ + 0 + 1 = 1, passes. 16 s: counter 0 expired at 15 s, counter 1 holds 1:
        // 0 + 1 + 1 = 2, refused. Python's limits 5.8.0 decides the same.
        let rate: Rate = "1/10s".parse().unwrap();
        let mut limiter = LimitsSlidingWindow::new_limit(rate, NonZeroU64::MIN);
        let times = secs(&[-15, -5, 3, 12, 16]);
        assert_eq!(decisions(&mut limiter, &times), [true, true, false, true, false]);
        // 2 per 10 s, as limits 5.8.0 decided these times with its clock patched to each.
        let mut limiter = LimitsSlidingWindow::new_limit("2/10s".parse().unwrap(), NonZeroU64::MIN);
        let times = secs(&[-25, -24, -15, -14, -5, -4, 1, 2, 3, 9, 11, 14, 17, 21]);
        let limits = [true, true, true, true, true, true, false, false, false, false, true, false, true, true];
        assert_eq!(decisions(&mut limiter, &times), limits);
    }

    proptest::proptest! {
        /// From P after the epoch on, the windows are the aligned ones and no counter read
        /// has expired: the model decides as the exact sliding counter.
        #[test]
        fn from_one_period_after_the_epoch_it_decides_as_the_exact_counter(
            n in 1u64..6,
            seconds in 1i64..20,
            gaps in proptest::collection::vec((0i64..15_000_000, 1u64..4), 1..80),
        ) {
            use crate::limiter::Limiter;
            let rate = Rate::new(n, crate::units::time::Span::from_micros(seconds * 1_000_000).unwrap()).unwrap();
            let mut model = LimitsSlidingWindow::new_limit(rate, NonZeroU64::MIN);
            let mut exact = SlidingCounter::new(rate);
            let mut t = seconds * 1_000_000;
            for (gap, cost) in gaps {
                t += gap;
                let now = Timestamp::from_micros(t).unwrap();
                proptest::prop_assert_eq!(model.take(now, cost, false), exact.take(now, cost, false), "at {}", t);
            }
        }
    }
}
