//! Fixed window: at most N events in each period-long window aligned to the Unix epoch.

use super::aligned::{AlignedWindows, Step};
use std::num::NonZeroU64;

use super::promise::{Bound, Limit};
use super::{Decision, KeyedState, RedisScript, Rule};
use crate::units::rate::Rate;
use crate::units::time::Timestamp;

/// Counts passed events in windows `[k·P, (k+1)·P)` and passes an event if and only if
/// fewer than N have passed in its window.
///
/// Windows are aligned to the Unix epoch, so `/h` windows are UTC clock hours. It promises
/// at most N per window, and so at most 2N in any interval of one period that straddles two.
#[derive(Clone, Debug)]
pub struct FixedWindow {
    limit: u64,
    period: i64,
    state: Counted,
}

/// What a window counter changes as events come: the window, and what passed in it.
#[derive(Clone, Debug, Default)]
pub struct Counted {
    windows: AlignedWindows,
    count: u64,
}

impl FixedWindow {
    /// Returns a limiter with no events yet.
    pub fn new(rate: Rate) -> FixedWindow {
        FixedWindow {
            limit: rate.count(),
            period: rate.period().as_micros(),
            state: Counted { windows: AlignedWindows::new(), count: 0 },
        }
    }
}

impl KeyedState for FixedWindow {
    type State = Counted;
    type Keys = super::Apart;

    #[inline]
    fn step(&self, state: &mut Counted, now: Timestamp, cost: u64, force: bool) -> Decision {
        let Counted { windows, count } = state;
        if windows.advance(now.as_micros(), self.period) != Step::Same {
            *count = 0;
        }
        // used + c ≤ N; forced events may take the count past N, and it saturates there.
        let after = count.saturating_add(cost);
        let pass = force || after <= self.limit;
        if pass {
            *count = after;
        }
        Decision { passed: pass, wait: 0 }
    }

    /// With nothing counted in the window of `now`, or that window over, the next event
    /// counts from 0, as a fresh key's does.
    fn at_rest(&self, state: &Counted, now: Timestamp) -> bool {
        let mut windows = state.windows;
        state.count == 0 || windows.advance(now.as_micros(), self.period) != Step::Same
    }

    /// The window after the last event's counts from 0.
    fn rests_after(&self, last: Timestamp) -> Option<Timestamp> {
        let last = last.as_micros();
        Timestamp::from_micros(super::aligned::floor_to(last, self.period).checked_add(self.period)?)
    }

    // Settled in the window that holds now: what an earlier window counted is gone.
    fn give_back(&self, state: &mut Counted, now: Timestamp, units: u64) {
        if state.windows.advance(now.as_micros(), self.period) != Step::Same {
            state.count = 0;
        }
        state.count = state.count.saturating_sub(units);
    }

    fn owed(&self, state: &Counted, now: Timestamp) -> u64 {
        match self.at_rest(state, now) {
            true => 0,
            false => state.count.saturating_sub(self.limit),
        }
    }

    fn state_mut(&mut self) -> &mut Counted {
        &mut self.state
    }
}

impl Rule for FixedWindow {
    type Params = super::NoParams;

    #[cfg(test)]
    fn by_the_rule(rate: Rate, _b: u64, events: &[(i128, u64)]) -> Vec<bool> {
        let (n, p) = (rate.n(), rate.p());
        super::tests::by_rule(events, |passed, t, c| {
            super::tests::used(passed, |s| s.div_euclid(p) == t.div_euclid(p)) + c <= n
        })
    }

    const NAME: &'static str = "fixed-window";
    const HELP: &'static str =
        "At most N events in each period-long window aligned to the Unix epoch";
    const USES_BURST: bool = false;
    // Fewer events charged leave at least as much room.
    const ADMITS_ANY_PART: bool = true;
    const GIVES_BACK: bool = true;
    const REDIS: Option<RedisScript> = Some(RedisScript::FixedWindow);

    fn new_limit(rate: Rate, _burst: NonZeroU64) -> FixedWindow {
        FixedWindow::new(rate)
    }

    /// At most N per aligned window, and so at most 2N in any period.
    fn promise(limit: &Limit) -> String {
        let (n, p) = (limit.rate.count(), limit.rate.period());
        format!("at most {n} per aligned {p} window, so at most {} in any {p}", 2 * n)
    }

    fn bound(limit: &Limit) -> Bound {
        Bound::Aligned { aligned: limit.rate.count(), period: 2 * limit.rate.count() }
    }


}

#[cfg(test)]
mod tests {
    use super::super::tests::{decisions, secs, weighted};
    use super::*;

    #[test]
    fn counts_within_epoch_aligned_windows() {
        let mut fw = FixedWindow::new("2/m".parse().unwrap());
        // 50 s and 59.999 s are in the window [0, 60); 60 s opens the next one.
        let mut times = secs(&[0, 10, 50, 0, 60, 61, 119, 120]);
        times[3] = Timestamp::from_micros(59_999_999).unwrap();
        let want = [true, true, false, false, true, true, false, true];
        assert_eq!(decisions(&mut fw, &times), want);
    }

    #[test]
    fn passes_two_n_across_a_window_edge() {
        let mut fw = FixedWindow::new("3/h".parse().unwrap());
        let times = secs(&[3_597, 3_598, 3_599, 3_600, 3_601, 3_602, 3_603]);
        let want = [true, true, true, true, true, true, false];
        assert_eq!(decisions(&mut fw, &times), want);
    }

    #[test]
    fn aligns_windows_before_the_epoch() {
        let mut fw = FixedWindow::new("1/m".parse().unwrap());
        let times = secs(&[-61, -60, -1, 0]);
        assert_eq!(decisions(&mut fw, &times), [true, true, false, true]);
    }

    #[test]
    fn a_weighted_event_passes_when_its_cost_still_fits_the_window() {
        // 5 a minute: 2 + 2 fit, a third 2 would make 6, a 1 makes 5; the next window
        // takes 5 at once, and 6 never fits.
        let mut fw = FixedWindow::new("5/m".parse().unwrap());
        let events = [(0, 2), (1, 2), (2, 2), (3, 1), (4, 0), (60, 5), (120, 6)];
        assert_eq!(weighted(&mut fw, &events), [true, true, false, true, true, true, false]);
    }

    #[test]
    fn given_back_a_count_falls_in_the_window_of_now_and_never_below_zero() {
        // 5 a minute. 5 at 0 s fill the window; 3 given back at 10 s let 3 more pass. Given
        // back at 70 s, in the next window, they cannot make its count negative.
        let window = FixedWindow::new("5/m".parse().unwrap());
        let mut state = Counted::default();
        let at = |s: i64| Timestamp::from_micros(s * 1_000_000).unwrap();
        assert!(window.step(&mut state, at(0), 5, false).passed);
        window.give_back(&mut state, at(10), 3);
        assert!(window.step(&mut state, at(10), 3, false).passed);
        assert!(!window.step(&mut state, at(10), 1, false).passed);
        window.step(&mut state, at(11), 4, true);
        assert_eq!(window.owed(&state, at(11)), 4);
        window.give_back(&mut state, at(70), 9);
        assert!(window.step(&mut state, at(70), 5, false).passed);
        assert_eq!(window.owed(&state, at(120)), 0);
    }
}
