//! Python `limits`' sliding-window counter: the exact `sliding-counter`, floored in floats.

use std::num::NonZeroU64;

use super::promise::{Limit, Seen, Watch};
use super::sliding_counter::{Counters, SlidingCounter};
use super::{Decision, KeyedState, Rule};
use crate::units::rate::Rate;
use crate::units::time::Timestamp;

/// `limits`' `SlidingWindowCounterRateLimiter` on its `MemoryStorage` (limits 5.8.0,
/// `storage/memory.py`, `acquire_sliding_window_entry` lines 184–215 and
/// `_get_sliding_window_info` lines 217–231; the windows from `storage/base.py`,
/// `sliding_window_keys`). Windows are P long from the epoch; a hit of cost c at r into
/// its window passes if `⌊prev·(P − r)/P⌋ + cur + c ≤ N`, and then adds c to cur.
///
/// For whole numbers k and N, `⌊w⌋ + k ≤ N` holds exactly when `w + k − 1 < N`, the
/// exact `sliding-counter`'s rule: the two decide alike, and this model is that limiter.
/// `limits` computes w in floats, so where w is a whole number its floor can fall one
/// lower there, and it passes a hit the exact rule refuses; before 1970, its windows are
/// cut by truncation, not by floor.
#[derive(Clone, Debug)]
pub struct LimitsSlidingWindow(SlidingCounter);

impl KeyedState for LimitsSlidingWindow {
    type State = Counters;

    #[inline]
    fn step(&self, counts: &mut Counters, now: Timestamp, cost: u64, force: bool) -> Decision {
        self.0.step(counts, now, cost, force)
    }

    fn state_mut(&mut self) -> &mut Counters {
        self.0.state_mut()
    }
}

impl Rule for LimitsSlidingWindow {
    const NAME: &'static str = "limits-sliding-window";
    const HELP: &'static str =
        "Python limits' sliding-window counter: ⌊prev·(P − elapsed)/P⌋ + cur + c ≤ N";
    const USES_BURST: bool = false;
    const WATCH: Watch = SlidingCounter::WATCH;
    const SYSTEM: bool = true;

    fn refuses(rate: Rate) -> Option<String> {
        super::limits_fixed_window::whole_seconds(rate)
    }

    fn new_limit(rate: Rate, _burst: NonZeroU64) -> LimitsSlidingWindow {
        LimitsSlidingWindow(SlidingCounter::new(rate))
    }

    fn promise(limit: &Limit) -> String {
        SlidingCounter::promise(limit)
    }

    fn measured(limit: &Limit, seen: &Seen) -> String {
        SlidingCounter::measured(limit, seen)
    }

    fn held(limit: &Limit, seen: &Seen) -> bool {
        SlidingCounter::held(limit, seen)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{decisions, secs};
    use super::*;

    #[test]
    fn the_floored_weighted_count_decides_as_the_exact_counter() {
        // 3 per 60 s: three pass at 0, 1, 2. At 70 s (10 s into the next window) the
        // previous one weighs ⌊3·50/60⌋ = ⌊2.5⌋ = 2, and 2 + 0 + 1 ≤ 3: it passes; at 80 s,
        // ⌊3·40/60⌋ = 2, and 2 + 1 + 1 > 3: refused; at 100 s, ⌊3·20/60⌋ = 1, and
        // 1 + 1 + 1 ≤ 3: it passes; at 101 s, ⌊3·19/60⌋ = 0, 0 + 2 + 1 ≤ 3: it passes.
        let times = secs(&[0, 1, 2, 70, 80, 100, 101, 102]);
        let want = [true, true, true, true, false, true, true, false];
        let rate: Rate = "3/60s".parse().unwrap();
        let mut limiter = LimitsSlidingWindow::new_limit(rate, NonZeroU64::MIN);
        assert_eq!(decisions(&mut limiter, &times), want);
        assert_eq!(decisions(&mut SlidingCounter::new(rate), &times), want);
    }
}
