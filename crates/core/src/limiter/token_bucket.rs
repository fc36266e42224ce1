//! Token bucket: a bucket of b tokens, refilled continuously at N per period.

use std::num::NonZeroU64;

use super::{Decision, KeyedState, RedisScript, Rule};
use crate::units::rate::Rate;
use crate::units::time::Timestamp;

/// A bucket of capacity b that starts full and gains N tokens per period, continuously.
/// An event passes if a whole token is there, and takes it.
///
/// It promises at most `b + N·T/P` passed events in any interval of length T. Tokens are
/// counted in units of 1/P of a token, so refilling for `dt` microseconds adds exactly
/// `N·dt` units and no fraction is ever lost.
#[derive(Clone, Debug)]
pub struct TokenBucket {
    refill: i128,
    token: i128,
    capacity: i128,
    state: Level,
}

/// What a token bucket changes as events come: its level, and when it was last filled.
#[derive(Clone, Copy, Debug, Default)]
pub struct Level {
    level: i128,
    last: i64,
}

impl TokenBucket {
    /// Returns a full bucket of `burst` tokens.
    pub fn new(rate: Rate, burst: NonZeroU64) -> TokenBucket {
        let capacity = i128::from(burst.get()) * rate.p();
        let state = Level { level: capacity, last: i64::MIN };
        TokenBucket { refill: rate.n(), token: rate.p(), capacity, state }
    }
}

impl TokenBucket {
    /// Brings `state` to `now`: the tokens that came since its last event, up to capacity.
    #[inline]
    fn refill(&self, state: &mut Level, now: Timestamp) {
        let now = now.as_micros();
        let Level { level, last } = state;
        let elapsed = (i128::from(now) - i128::from(*last)).max(0);
        *level = (*level + self.refill * elapsed).min(self.capacity);
        *last = now;
    }
}

impl KeyedState for TokenBucket {
    type State = Level;
    type Keys = super::Apart;

    #[inline]
    fn step(&self, state: &mut Level, now: Timestamp, cost: u64, force: bool) -> Decision {
        self.refill(state, now);
        let Level { level, .. } = state;
        // c tokens, each P units; c ≤ MAX_COST keeps this far inside 128 bits.
        let tokens = super::spend(cost, self.token);
        let pass = force || *level >= tokens;
        if pass {
            *level -= tokens;
        }
        Decision { passed: pass, wait: 0 }
    }

    /// Once the bucket has refilled, it stays full until an event, as a fresh one is.
    fn at_rest(&self, state: &Level, now: Timestamp) -> bool {
        let elapsed = (i128::from(now.as_micros()) - i128::from(state.last)).max(0);
        state.level + self.refill * elapsed >= self.capacity
    }

    /// A bucket is never below empty after an event: full again after a whole refill.
    fn rests_after(&self, last: Timestamp) -> Option<Timestamp> {
        let wait = i64::try_from((self.capacity + self.refill - 1) / self.refill).ok()?;
        Timestamp::from_micros(last.as_micros().checked_add(wait)?)
    }

    fn give_back(&self, state: &mut Level, now: Timestamp, units: u64) {
        self.refill(state, now);
        state.level = (state.level + super::spend(units, self.token)).min(self.capacity);
    }

    fn owed(&self, state: &Level, now: Timestamp) -> u64 {
        let mut state = *state;
        self.refill(&mut state, now);
        let below = (-state.level).max(0);
        u64::try_from((below + self.token - 1) / self.token).unwrap_or(u64::MAX)
    }

    fn state_mut(&mut self) -> &mut Level {
        &mut self.state
    }
}

impl Rule for TokenBucket {
    type Params = super::NoParams;

    #[cfg(test)]
    fn by_the_rule(rate: Rate, b: u64, events: &[(i128, u64)]) -> Vec<bool> {
        let (n, p, b) = (rate.n(), rate.p(), i128::from(b));
        let (mut level, mut last) = (b * p, None::<i128>);
        super::tests::by_rule(events, |_, t, c| {
            if let Some(last) = last {
                level = (level + (t - last) * n).min(b * p);
            }
            last = Some(t);
            let ok = level >= c * p;
            level -= if ok { c * p } else { 0 };
            ok
        })
    }

    const NAME: &'static str = "token-bucket";
    const PASSES_AS_GCRA: bool = true;
    const HELP: &'static str = "A bucket of b tokens that starts full and refills at N per P";
    const USES_BURST: bool = true;
    // Fewer events charged leave at least as much room.
    const ADMITS_ANY_PART: bool = true;
    const GIVES_BACK: bool = true;
    const REDIS: Option<RedisScript> = Some(RedisScript::TokenBucket);

    fn new_limit(rate: Rate, burst: NonZeroU64) -> TokenBucket {
        TokenBucket::new(rate, burst)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::burst;
    use super::super::tests::{decisions, secs};
    use super::*;

    #[test]
    fn a_full_bucket_passes_a_burst_then_refills() {
        let mut tb = TokenBucket::new("1/10s".parse().unwrap(), burst(3));
        // Three tokens at 0 s; the fourth event finds none; 10 s later one token is back.
        let times = secs(&[0, 0, 0, 0, 9, 10, 10, 25, 30, 30]);
        let want = [true, true, true, false, false, true, false, true, true, false];
        assert_eq!(decisions(&mut tb, &times), want);
    }

    #[test]
    fn the_bucket_never_holds_more_than_its_capacity() {
        let mut tb = TokenBucket::new("1/s".parse().unwrap(), burst(2));
        let times = secs(&[0, 1_000, 1_000, 1_000]);
        assert_eq!(decisions(&mut tb, &times), [true, true, true, false]);
    }

    #[test]
    fn a_partial_token_is_not_enough() {
        // 7 per hour: a token takes 3600/7 s ≈ 514.2857 s, which is not a whole number of
        // microseconds. At 514.285714 s the bucket is 1/7 µs short; at 514.285715 s it is not.
        let mut tb = TokenBucket::new("7/h".parse().unwrap(), burst(1));
        let at = |us| Timestamp::from_micros(us).unwrap();
        let times = [at(0), at(514_285_714), at(514_285_715)];
        assert_eq!(decisions(&mut tb, &times), [true, false, true]);
    }

    /// A token bucket in f64 tokens and seconds, as a float implementation would write it.
    fn float_bucket(per_sec: f64, burst: f64, times: &[f64]) -> Vec<bool> {
        let (mut tokens, mut last) = (burst, f64::NEG_INFINITY);
        times
            .iter()
            .map(|&t| {
                tokens = (tokens + (t - last).max(0.0) * per_sec).min(burst);
                last = t;
                let pass = tokens >= 1.0;
                if pass {
                    tokens -= 1.0;
                }
                pass
            })
            .collect()
    }

    #[test]
    fn eleven_per_day_refills_exactly_eleven_tokens_in_a_day() {
        // Empty a bucket of 11 at 11/d at midnight; a day later it is full again. In f64
        // the refill is 86400 · (11/86400) = 10.999999999999998, so floats pass only 10.
        let mut day = vec![0; 11];
        day.extend([86_400; 12]);
        let count = |d: &[bool]| d.iter().filter(|&&p| p).count();
        let float =
            float_bucket(11.0 / 86_400.0, 11.0, &day.iter().map(|&s| s as f64).collect::<Vec<_>>());
        assert_eq!(count(&float[11..]), 10, "the float failure guarded against");
        let mut tb = TokenBucket::new("11/d".parse().unwrap(), burst(11));
        let passed = decisions(&mut tb, &secs(&day));
        assert_eq!((count(&passed[..11]), count(&passed[11..])), (11, 11));
    }

    #[test]
    fn given_back_the_level_rises_to_capacity_and_no_further_and_owed_counts_past_empty() {
        // 1 a second, burst 3: 3 at 0 s, 5 given back at 1 s: full (3), not 6.
        let bucket = TokenBucket::new("1/s".parse().unwrap(), burst(3));
        let mut level = bucket.state;
        let at = |s: i64| Timestamp::from_micros(s * 1_000_000).unwrap();
        assert!(bucket.step(&mut level, at(0), 3, false).passed);
        bucket.give_back(&mut level, at(1), 5);
        assert!(bucket.step(&mut level, at(1), 3, false).passed);
        assert!(!bucket.step(&mut level, at(1), 1, false).passed);
        // Forced 4 more at 1 s: −4, owed 4; at 2.5 s, −2.5: owed 3 (rounded up).
        bucket.step(&mut level, at(1), 4, true);
        let half = Timestamp::from_micros(2_500_000).unwrap();
        assert_eq!((bucket.owed(&level, at(1)), bucket.owed(&level, half), bucket.owed(&level, at(5))), (4, 3, 0));
    }
}
