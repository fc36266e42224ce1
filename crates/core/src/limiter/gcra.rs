//! GCRA, the generic cell rate algorithm: a token bucket kept as one number.

use std::num::NonZeroU64;

use super::{Decision, KeyedState, RedisScript, Rule};
use crate::units::rate::Rate;
use crate::units::time::Timestamp;

/// The generic cell rate algorithm. With emission interval I = P/N and burst b, it keeps
/// the theoretical arrival time `tat`; an event at t passes if and only if
/// `t ≥ tat − (b − 1)·I`, and then `tat ← max(tat, t) + I`.
///
/// It makes exactly the decisions of a [`TokenBucket`](super::TokenBucket) with the same
/// rate and burst, starting full. Times are counted in units of 1/N µs, in which I is the
/// whole number P, so the state is one integer and no decision depends on rounding.
#[derive(Clone, Debug)]
pub struct Gcra {
    pub(super) n: i128,
    pub(super) interval: i128,
    /// b·I: how far ahead of now tat may be after an event is taken.
    pub(super) capacity: i128,
    tat: i128,
}

impl Gcra {
    /// Returns a limiter that starts as a full bucket of `burst`.
    pub fn new(rate: Rate, burst: NonZeroU64) -> Gcra {
        Gcra {
            n: rate.n(),
            interval: rate.p(),
            capacity: i128::from(burst.get()) * rate.p(),
            // Far enough in the past to mean "a full bucket", far enough from i128::MIN
            // that nothing done to it can overflow.
            tat: i128::MIN / 2,
        }
    }
}

impl KeyedState for Gcra {
    type State = i128;
    type Keys = super::Apart;

    #[inline]
    fn step(&self, state: &mut i128, now: Timestamp, cost: u64, force: bool) -> Decision {
        let t = i128::from(now.as_micros()) * self.n;
        // max(tat, t) + c·I − t ≤ b·I: with c = 1 it is t ≥ tat − (b − 1)·I, as b ≥ 1.
        let end = (*state).max(t) + super::spend(cost, self.interval);
        let pass = force || end - t <= self.capacity;
        if pass {
            *state = end;
        }
        Decision { passed: pass, wait: 0 }
    }

    /// Once tat is past, every later event finds max(tat, t) = t, as a fresh key does.
    fn at_rest(&self, tat: &i128, now: Timestamp) -> bool {
        *tat <= i128::from(now.as_micros()) * self.n
    }

    /// An event passes only with tat at most b·I past it: tat is past b·I later.
    fn rests_after(&self, last: Timestamp) -> Option<Timestamp> {
        let wait = i64::try_from((self.capacity + self.n - 1) / self.n).ok()?;
        Timestamp::from_micros(last.as_micros().checked_add(wait)?)
    }

    // Given back, tat moves back by the units' intervals, never before now: a bucket at
    // rest is full.
    fn give_back(&self, tat: &mut i128, now: Timestamp, units: u64) {
        let t = i128::from(now.as_micros()) * self.n;
        *tat = (*tat - super::spend(units, self.interval)).max(t).min(*tat);
    }

    fn owed(&self, tat: &i128, now: Timestamp) -> u64 {
        owed(*tat, now, self.n, self.capacity, self.interval)
    }

    fn state_mut(&mut self) -> &mut i128 {
        &mut self.tat
    }
}

/// What a tat (or a leaky queue's time it is free) of `tat` owes at `now`, in units
/// rounded up: beyond empty, it is past now + b·I (`capacity`), and each interval past it
/// is a unit owed. Times are in units of 1/N µs.
pub(super) fn owed(tat: i128, now: Timestamp, n: i128, capacity: i128, interval: i128) -> u64 {
    let beyond = tat - i128::from(now.as_micros()) * n - capacity;
    u64::try_from((beyond.max(0) + interval - 1) / interval).unwrap_or(u64::MAX)
}

impl Rule for Gcra {
    type Params = super::NoParams;

    #[cfg(test)]
    fn by_the_rule(rate: Rate, b: u64, events: &[(i128, u64)]) -> Vec<bool> {
        let (n, p, b) = (rate.n(), rate.p(), i128::from(b));
        let mut tat = i128::MIN;
        super::tests::by_rule(events, |_, t, c| {
            let from = tat.max(t * n);
            let ok = from + c * p - t * n <= b * p;
            tat = if ok { from + c * p } else { tat };
            ok
        })
    }

    const NAME: &'static str = "gcra";
    const PASSES_AS_GCRA: bool = true;
    const HELP: &'static str = "The token bucket's decisions from one number, tat";
    const USES_BURST: bool = true;
    // Fewer events charged leave at least as much room.
    const ADMITS_ANY_PART: bool = true;
    const GIVES_BACK: bool = true;
    const REDIS: Option<RedisScript> = Some(RedisScript::Gcra);

    fn new_limit(rate: Rate, burst: NonZeroU64) -> Gcra {
        Gcra::new(rate, burst)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::burst;
    use super::super::tests::{decisions, secs};
    use super::*;

    #[test]
    fn burst_then_one_per_interval() {
        let mut gcra = Gcra::new("1/10s".parse().unwrap(), burst(3));
        let times = secs(&[0, 0, 0, 0, 9, 10, 10, 25, 30, 30]);
        let want = [true, true, true, false, false, true, false, true, true, false];
        assert_eq!(decisions(&mut gcra, &times), want);
    }

    /// A GCRA with burst 1 in f64 seconds, as a float implementation would write it.
    fn float_gcra(per_sec: f64, times: &[f64]) -> Vec<bool> {
        let mut tat = f64::MIN;
        times
            .iter()
            .map(|&t| {
                let pass = t >= tat;
                if pass {
                    tat = tat.max(t) + 1.0 / per_sec;
                }
                pass
            })
            .collect()
    }

    #[test]
    fn an_event_exactly_one_interval_later_passes() {
        // 10 per second, burst 1: I = 100 ms, and each event comes exactly when tat says
        // it may. In f64, 0.1 + 0.1 + 0.1 > 0.3, so floats reject the event at 300 ms.
        let ms = [0, 100, 200, 300, 399, 400];
        let float = float_gcra(10.0, &ms.map(|ms| ms as f64 / 1_000.0));
        assert_eq!(float[..4], [true, true, true, false], "the float failure guarded against");
        let mut gcra = Gcra::new("10/s".parse().unwrap(), burst(1));
        let times = ms.map(|ms| Timestamp::from_micros(ms * 1_000).unwrap());
        assert_eq!(decisions(&mut gcra, &times), [true, true, true, true, false, true]);
    }

    #[test]
    fn given_back_tat_moves_back_but_never_before_now_and_owed_counts_past_empty() {
        // 1 a second, burst 3. Three at 0 s empty it (tat 3 s); 2 given back at 1 s leave
        // tat at 1 s: full. A forced 10 at 1 s puts tat at 11 s: owed 11 − 1 − 3 = 7.
        let gcra = Gcra::new("1/s".parse().unwrap(), burst(3));
        let mut tat = i128::MIN / 2;
        let at = |s: i64| Timestamp::from_micros(s * 1_000_000).unwrap();
        assert!(gcra.step(&mut tat, at(0), 3, false).passed);
        gcra.give_back(&mut tat, at(1), 2);
        assert!(gcra.at_rest(&tat, at(1)));
        gcra.step(&mut tat, at(1), 10, true);
        assert_eq!((gcra.owed(&tat, at(1)), gcra.owed(&tat, at(8)), gcra.owed(&tat, at(9))), (7, 0, 0));
        assert_eq!(gcra.owed(&tat, at(7)), 1);
    }
}
