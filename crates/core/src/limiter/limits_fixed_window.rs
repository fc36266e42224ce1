//! Python `limits`' fixed window: it opens at the first hit, and every hit counts.

use std::num::NonZeroU64;

use super::promise::{Bound, Limit};
use super::{Decision, KeyedState, Rule};
use crate::units::rate::Rate;
use crate::units::time::Timestamp;

/// `limits`' `FixedWindowRateLimiter` on its `MemoryStorage` (limits 5.8.0,
/// `strategies.py` lines 144–163; `storage/memory.py`, `incr` lines 84–98 and `get` lines
/// 114–124). A hit of cost c adds c to the counter and passes if the counter is then at
/// most N: refused hits count too. The counter expires P after the hit that found it at
/// zero, and a hit at or after that time starts it again.
#[derive(Clone, Debug)]
pub struct LimitsFixedWindow {
    limit: u64,
    period: i64,
    state: Window,
}

/// One key's counter and when it expires; none before the first hit.
#[derive(Clone, Copy, Debug, Default)]
pub struct Window {
    count: u64,
    expires: Option<i64>,
}

impl LimitsFixedWindow {
    /// Returns the limiter for N per P, P a whole number of seconds.
    pub fn new(rate: Rate) -> LimitsFixedWindow {
        let (limit, period) = (rate.count(), rate.period().as_micros());
        LimitsFixedWindow { limit, period, state: Window::default() }
    }
}

/// The promise of windows opened by a hit: at most N in each, and windows P long back to
/// back at most, so 2N in any period.
pub(super) fn opened_by_a_hit(limit: &Limit) -> String {
    let (n, p) = (limit.rate.count(), limit.rate.period());
    format!("at most {n} per window opened by a hit, so at most {} in any {p}", 2 * n)
}

/// The bound [`opened_by_a_hit`] states: at most 2N in any period.
pub(super) fn opened_by_a_hit_bound(limit: &Limit) -> Bound {
    Bound::Period { most: 2 * limit.rate.count() }
}

/// Says why `limits` cannot run at `rate`: its periods are whole seconds (`get_expiry`).
pub(super) fn whole_seconds(rate: Rate) -> Option<String> {
    (rate.period().as_micros() % 1_000_000 != 0)
        .then(|| format!("limits counts a period in whole seconds, and {rate}'s is not"))
}

impl KeyedState for LimitsFixedWindow {
    type State = Window;
    type Keys = super::Apart;

    #[inline]
    fn step(&self, window: &mut Window, now: Timestamp, cost: u64, force: bool) -> Decision {
        let now = now.as_micros();
        // `get`: a counter whose expiry has come is dropped.
        if window.expires.is_none_or(|at| at <= now) {
            *window = Window::default();
        }
        window.count = window.count.saturating_add(cost);
        // `incr`: the hit that finds the counter at zero sets its expiry.
        if window.count == cost {
            window.expires = Some(now.saturating_add(self.period));
        }
        Decision { passed: force || window.count <= self.limit, wait: 0 }
    }

    /// A refused hit counts, wherever it was refused.
    fn refuse(&self, state: &mut Self::State, now: Timestamp, cost: u64) {
        self.step(state, now, cost, false);
    }

    /// Once the window has expired, the next hit starts one, as a fresh key's does.
    fn at_rest(&self, window: &Window, now: Timestamp) -> bool {
        window.expires.is_none_or(|at| at <= now.as_micros())
    }

    /// A window starts at its first hit, no later than the last, and lasts a period.
    fn rests_after(&self, last: Timestamp) -> Option<Timestamp> {
        Timestamp::from_micros(last.as_micros().checked_add(self.period)?)
    }

    fn state_mut(&mut self) -> &mut Window {
        &mut self.state
    }
}

impl Rule for LimitsFixedWindow {
    type Params = super::NoParams;

    #[cfg(test)]
    fn by_the_rule(rate: Rate, _b: u64, events: &[(i128, u64)]) -> Vec<bool> {
        let (n, p) = (rate.n(), rate.p());
        // When its window expires, and every hit's cost since it opened.
        let mut opened: Option<(i128, i128)> = None;
        super::tests::by_rule(events, |_, t, c| {
            let count = match opened {
                Some((expires, count)) if t < expires => count + c,
                _ => c,
            };
            let expires = match opened {
                Some((expires, before)) if t < expires && before != 0 => expires,
                _ => t + p,
            };
            opened = Some((expires, count));
            count <= n
        })
    }

    const NAME: &'static str = "limits-fixed-window";
    const HELP: &'static str =
        "Python limits' fixed window: opened by the first hit, refused hits counted";
    const USES_BURST: bool = false;
    const MODELS: Option<&'static str> = Some("Python's limits 5.8.0, FixedWindowRateLimiter");
    const QUIRKS: Option<&'static str> = Some("a window opened by the first hit, whole seconds; refused hits count");
    const PROVEN: Option<&'static str> = Some("Python's limits 5.8.0 from PyPI, its clock patched (tests/cli/limits_peer.rs)");

    fn refuses(rate: Rate) -> Option<String> {
        whole_seconds(rate)
    }

    fn new_limit(rate: Rate, _burst: NonZeroU64) -> LimitsFixedWindow {
        LimitsFixedWindow::new(rate)
    }

    fn promise(limit: &Limit) -> String {
        opened_by_a_hit(limit)
    }

    fn bound(limit: &Limit) -> Bound {
        opened_by_a_hit_bound(limit)
    }


}

#[cfg(test)]
mod tests {
    use super::super::tests::{decisions, secs};
    use super::*;

    #[test]
    fn the_window_opens_at_the_first_hit_and_refused_hits_count() {
        // 2 per 60 s. The window opens at 10 s: 10 and 20 pass, 30 is the third; it closes
        // at 70 (not at the epoch-aligned 60), where a new one opens.
        let mut limiter = LimitsFixedWindow::new("2/60s".parse().unwrap());
        let got = decisions(&mut limiter, &secs(&[10, 20, 30, 69, 70, 71, 72]));
        assert_eq!(got, [true, true, false, false, true, true, false]);
        // Refused hits count: at 2/60s, hits at 0, 1 and 2 leave the counter at 3.
        let mut limiter = LimitsFixedWindow::new("2/60s".parse().unwrap());
        decisions(&mut limiter, &secs(&[0, 1, 2]));
        assert_eq!(limiter.state.count, 3);
    }

    #[test]
    fn a_period_is_whole_seconds() {
        assert_eq!(whole_seconds("5/h".parse().unwrap()), None);
        assert!(whole_seconds("1/1500ms".parse().unwrap()).is_some());
    }
}
