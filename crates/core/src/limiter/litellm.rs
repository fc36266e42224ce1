//! LiteLLM's v3 limiter: a window of whole seconds opened by the first hit, reserved at
//! pre-call and reconciled on success into whatever window is open then.

use std::num::NonZeroU64;

use super::promise::{Bound, Limit};
use super::{Decision, KeyedState, Rule};
use crate::units::rate::Rate;
use crate::units::time::Timestamp;

/// LiteLLM's proxy limiter, v3 (`litellm` 1.110.2, `proxy/hooks/parallel_request_limiter_v3.py`),
/// as its Redis scripts keep one descriptor's counter:
///
/// - **Pre-call** (`check_and_increment_by_n`): `now` is the server's clock in whole
///   seconds. The window has expired if none is open or `now − start ≥ P`, and the count is
///   then 0. A hit of cost c > 0 is refused if `count + c > N` (of cost 0, if `count ≥ N`);
///   refused, it changes nothing. Admitted into an expired window, it opens one at `now`
///   with the count c; else the count grows by c.
/// - **On success** (`token_increment`): the count grows by the real cost less the
///   reservation (a refund when negative), **whatever window is open then**: a request
///   reserved in one window and completed in the next settles in the next, and a refund can
///   take its count below 0. With no window open, the settlement is lost.
///
/// Counts are integers; LiteLLM's Lua keeps them in doubles, which are exact below 2^53.
#[derive(Clone, Debug)]
pub struct Litellm {
    limit: i64,
    period: i64,
    state: Window,
}

/// One descriptor's window: where it opened (a whole second, in µs) and its count, which a
/// refund may take below 0; none before the first hit.
#[derive(Clone, Copy, Debug, Default)]
pub struct Window {
    start: Option<i64>,
    count: i64,
}

/// The whole second that holds `now`, in µs: the server's `TIME` as the scripts read it.
#[inline]
fn second(now: Timestamp) -> i64 {
    super::aligned::floor_to(now.as_micros(), 1_000_000)
}

impl Litellm {
    /// Returns the limiter for N per P.
    pub fn new(rate: Rate) -> Litellm {
        // A count is at most N plus what settlements add, each at most MAX_COST: kept in
        // i64 and saturating, far past where LiteLLM's doubles stop being exact.
        let limit = i64::try_from(rate.count()).unwrap_or(i64::MAX);
        Litellm { limit, period: rate.period().as_micros(), state: Window::default() }
    }

    /// The count of the window open at `now`, if one is.
    #[inline]
    fn open(&self, window: &Window, now: Timestamp) -> Option<i64> {
        let start = window.start?;
        (second(now) - start < self.period).then_some(window.count)
    }
}

/// A cost as a count: at most [`MAX_COST`](super::MAX_COST), so it always fits.
#[inline]
fn units(cost: u64) -> i64 {
    i64::try_from(cost).unwrap_or(i64::MAX)
}

impl KeyedState for Litellm {
    type State = Window;
    type Keys = super::Apart;

    #[inline]
    fn step(&self, window: &mut Window, now: Timestamp, cost: u64, force: bool) -> Decision {
        let open = self.open(window, now);
        let count = open.unwrap_or(0);
        let c = units(cost);
        let refused = if c > 0 { count.saturating_add(c) > self.limit } else { count >= self.limit };
        let pass = force || !refused;
        if pass {
            *window = match open {
                Some(count) => Window { start: window.start, count: count.saturating_add(c) },
                None => Window { start: Some(second(now)), count: c },
            };
        }
        Decision { passed: pass, wait: 0 }
    }

    /// Once the window has expired, the next hit opens one, as a fresh key's does.
    fn at_rest(&self, window: &Window, now: Timestamp) -> bool {
        self.open(window, now).is_none()
    }

    /// A window opens at the second of a hit, no later than the last, and lasts a period,
    /// as the whole seconds of `now` see it.
    fn rests_after(&self, last: Timestamp) -> Option<Timestamp> {
        let over = second(last).checked_add(self.period)?;
        Timestamp::from_micros(super::aligned::ceil_to(over, 1_000_000)?)
    }

    /// The success callback's refund: into the window open now, below 0 if it must.
    fn give_back(&self, window: &mut Window, now: Timestamp, units: u64) {
        if let Some(count) = self.open(window, now) {
            window.count = count.saturating_sub(self::units(units));
        }
    }

    /// The success callback's extra charge: into the window open now, or lost.
    fn settle_charge(&self, window: &mut Window, now: Timestamp, cost: u64) {
        if let Some(count) = self.open(window, now) {
            window.count = count.saturating_add(units(cost));
        }
    }

    fn owed(&self, window: &Window, now: Timestamp) -> u64 {
        let over = self.open(window, now).map_or(0, |count| count.saturating_sub(self.limit));
        u64::try_from(over).unwrap_or(0)
    }

    fn state_mut(&mut self) -> &mut Window {
        &mut self.state
    }
}

impl Rule for Litellm {
    type Params = super::NoParams;

    #[cfg(test)]
    fn by_the_rule(rate: Rate, _b: u64, events: &[(i128, u64)]) -> Vec<bool> {
        let (n, p) = (rate.n(), rate.p());
        // The open window's second and what its admitted hits cost.
        let mut opened: Option<(i128, i128)> = None;
        super::tests::by_rule(events, |_, t, c| {
            let s = t.div_euclid(1_000_000) * 1_000_000;
            let count = match opened {
                Some((start, count)) if s - start < p => count,
                _ => 0,
            };
            let pass = if c > 0 { count + c <= n } else { count < n };
            if pass {
                opened = match opened {
                    Some((start, count)) if s - start < p => Some((start, count + c)),
                    _ => Some((s, c)),
                };
            }
            pass
        })
    }

    const NAME: &'static str = "litellm";
    const HELP: &'static str = "LiteLLM's v3 limiter: a window of whole seconds opened by the \
                                first hit, reserved and reconciled into the window open then";
    const USES_BURST: bool = false;
    const GIVES_BACK: bool = true;
    const CHARGES_AFTER: bool = false;
    const MODELS: Option<&'static str> =
        Some("LiteLLM 1.110.2, parallel_request_limiter_v3 (its Redis scripts)");
    const QUIRKS: Option<&'static str> = Some("a settlement lands in whatever window is open at completion, and a refund can take a count below 0");
    const PROVEN: Option<&'static str> = Some("LiteLLM 1.110.2's own Redis scripts on a frozen redis-server (python/tests/test_litellm_peer.py)");

    fn new_limit(rate: Rate, _burst: NonZeroU64) -> Litellm {
        Litellm::new(rate)
    }

    /// On arrival, as `limits`' window opened by a hit; what success callbacks add or
    /// refund is the system's, not promised.
    fn promise(limit: &Limit) -> String {
        super::limits_fixed_window::opened_by_a_hit(limit)
    }

    fn bound(limit: &Limit) -> Bound {
        super::limits_fixed_window::opened_by_a_hit_bound(limit)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::secs;
    use super::*;
    use crate::limiter::Limiter;

    fn at(micros: i64) -> Timestamp {
        Timestamp::from_micros(micros).unwrap()
    }

    #[test]
    fn the_window_opens_at_the_second_of_the_first_hit() {
        // 100 a minute. The first hit, at 10.7 s, opens the window at 10 s: it closes at 70
        // s, not at 70.7 s, and a hit at 69.9 s still counts in it.
        let mut limiter = Litellm::new("100/60s".parse().unwrap());
        assert!(limiter.take(at(10_700_000), 60, false).passed);
        assert!(!limiter.take(at(69_900_000), 41, false).passed, "60 + 41 > 100");
        assert!(limiter.take(at(69_900_000), 40, false).passed, "60 + 40 = 100");
        assert!(!limiter.take(at(69_999_999), 0, false).passed, "a cost of 0 at 100 of 100");
        assert!(limiter.take(at(70_000_000), 100, false).passed, "the window reopens at 70 s");
        assert_eq!(limiter.state.start, Some(70_000_000));
    }

    #[test]
    fn a_refund_lands_in_the_window_open_at_completion_and_may_go_below_zero() {
        // 100 a minute: a request reserves 90 at 0 s; at 60 s another opens the next window
        // with 10; the first completes at 61 s having used 20, and its refund of 70 lands
        // in the second window: 10 − 70 = −60, so 160 more pass in it.
        let limiter = Litellm::new("100/60s".parse().unwrap());
        let mut window = Window::default();
        assert!(limiter.step(&mut window, secs(&[0])[0], 90, false).passed);
        assert!(limiter.step(&mut window, secs(&[60])[0], 10, false).passed);
        limiter.give_back(&mut window, secs(&[61])[0], 70);
        assert_eq!(window.count, -60);
        assert!(limiter.step(&mut window, secs(&[62])[0], 160, false).passed);
        assert!(!limiter.step(&mut window, secs(&[62])[0], 1, false).passed);
    }

    #[test]
    fn a_settlement_with_no_window_open_is_lost() {
        // 10 a minute: 10 reserved at 0 s, the window over at 60 s; a charge of 5 more at
        // 75 s finds none open and changes nothing (the next hit opens a window at 0).
        let limiter = Litellm::new("10/60s".parse().unwrap());
        let mut window = Window::default();
        assert!(limiter.step(&mut window, secs(&[0])[0], 10, false).passed);
        limiter.settle_charge(&mut window, secs(&[30])[0], 5);
        assert_eq!((window.count, limiter.owed(&window, secs(&[30])[0])), (15, 5));
        limiter.settle_charge(&mut window, secs(&[75])[0], 5);
        limiter.give_back(&mut window, secs(&[76])[0], 3);
        assert_eq!(window.count, 15);
        assert!(limiter.at_rest(&window, secs(&[76])[0]));
        assert!(limiter.step(&mut window, secs(&[77])[0], 10, false).passed);
        assert_eq!((window.start, window.count), (Some(77_000_000), 10));
    }
}
