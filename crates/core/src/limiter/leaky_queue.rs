//! Leaky bucket as a queue: events wait for their turn, and overflow is dropped.

use std::num::NonZeroU64;

use super::promise::{Bound, Limit};
use super::{Decision, KeyedState, RedisScript, Rule};
use crate::units::rate::Rate;
use crate::units::time::{Timestamp, human_duration};

/// A queue drained at one event per interval I = P/N, as nginx's `limit_req` with `burst`
/// and without `nodelay`. An admitted event leaves at `d = max(t, previous departure + I)`;
/// an event that would wait longer than `(b − 1)·I` is dropped.
///
/// It admits exactly what [`Gcra`](super::Gcra) admits, but delays instead of passing at
/// once; it promises that no admitted event waits longer than `(b − 1)·I`. Times are kept in
/// units of 1/N µs, like GCRA's.
#[derive(Clone, Debug)]
pub struct LeakyQueue {
    n: i128,
    interval: i128,
    /// b·I: the most an admitted event's wait plus its cost in intervals may be.
    capacity: i128,
    /// When the queue is free for the next event: the last admitted event's departure plus
    /// its cost in intervals; [`LeakyQueue::EMPTY`] before the first.
    free_at: i128,
}

/// How long admitted events waited in a [`LeakyQueue`], in units of 1/N µs. With the
/// feature `serde` it reads back as it is written: a part of a replay tells its waits so.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Waits {
    /// How many admitted events waited at all.
    pub delayed: u64,
    /// How many events were admitted.
    pub admitted: u64,
    /// The longest wait.
    pub longest: i128,
    /// The sum of all waits; it saturates rather than overflows. One wait is below 2^103
    /// units ((b − 1)·P, with b ≤ 10^12 and P < 2^63 µs), so the sum is exact for at least
    /// 2^24 events even at the largest waits there can be, and for any real catalog.
    pub total: i128,
    /// N, the number of wait units in a microsecond.
    pub units_per_micro: i128,
}

impl Waits {
    /// Returns the waits of no events, for a rate of N per period.
    pub fn new(rate: Rate) -> Waits {
        Waits { units_per_micro: rate.n(), ..Waits::default() }
    }

    /// Counts a decision: an admitted event and its wait.
    pub fn record(&mut self, decision: Decision) {
        if decision.passed {
            self.admit(decision.wait);
        }
    }

    /// Counts an admitted event that waited `wait` units.
    fn admit(&mut self, wait: i128) {
        self.admitted += 1;
        self.delayed += u64::from(wait > 0);
        self.longest = self.longest.max(wait);
        self.total = self.total.saturating_add(wait);
    }

    /// Returns the waits of two queues with the same rate taken together.
    pub fn merge(&self, other: &Waits) -> Waits {
        Waits {
            delayed: self.delayed + other.delayed,
            admitted: self.admitted + other.admitted,
            longest: self.longest.max(other.longest),
            total: self.total.saturating_add(other.total),
            units_per_micro: self.units_per_micro,
        }
    }

    /// Returns the longest wait, rounded to the nearest microsecond, for reports.
    pub fn longest_micros(&self) -> i128 {
        self.micros(self.longest, 1)
    }

    /// Returns the mean wait of admitted events (zero if none was admitted), counting those
    /// that did not wait as zero, rounded to the nearest microsecond, for reports.
    pub fn mean_micros(&self) -> i128 {
        self.micros(self.total, i128::from(self.admitted.max(1)))
    }

    /// Returns units / (N · count) µs, rounded half up. The divisor is below 2^105 (N is
    /// at most 10^12, the count below 2^64), so twice the remainder cannot overflow.
    fn micros(&self, units: i128, count: i128) -> i128 {
        let divisor = self.units_per_micro * count;
        let (quotient, remainder) = (units / divisor, units % divisor);
        quotient + i128::from(2 * remainder >= divisor)
    }
}

impl LeakyQueue {
    /// The departure of no event: no time is this early (times are years 0000 to 9999, at
    /// most 2^58 µs from the epoch, and N at most 10^12, so departures stay within 2^99
    /// units), so it marks a queue that has admitted nothing.
    const EMPTY: i128 = i128::MIN;

    /// Returns an empty queue with room for `burst − 1` waiting events.
    pub fn new(rate: Rate, burst: NonZeroU64) -> LeakyQueue {
        LeakyQueue {
            n: rate.n(),
            interval: rate.p(),
            capacity: i128::from(burst.get()) * rate.p(),
            free_at: LeakyQueue::EMPTY,
        }
    }
}

impl LeakyQueue {
    /// Returns an empty queue that admits every event, however long it waits. Given only
    /// the events another queue at `rate` admitted, it finds again how long each waited:
    /// a wait depends on the admitted events alone.
    pub fn unbounded(rate: Rate) -> LeakyQueue {
        LeakyQueue {
            n: rate.n(),
            interval: rate.p(),
            capacity: i128::MAX,
            free_at: LeakyQueue::EMPTY,
        }
    }
}

impl KeyedState for LeakyQueue {
    type State = i128;
    type Keys = super::Apart;

    #[inline]
    fn step(&self, state: &mut i128, now: Timestamp, cost: u64, force: bool) -> Decision {
        let arrival = i128::from(now.as_micros()) * self.n;
        // EMPTY is below every arrival, so an empty queue lets the event leave at once.
        let departure = arrival.max(*state);
        let wait = departure - arrival;
        // It admits as GCRA does: wait + c·I ≤ b·I, so with c = 1 no wait over (b − 1)·I.
        let spend = super::spend(cost, self.interval);
        if wait + spend > self.capacity && !force {
            return Decision { passed: false, wait: 0 };
        }
        *state = departure + spend;
        Decision { passed: true, wait }
    }

    /// Once the queue has emptied, every later event leaves at once, as from a fresh one.
    fn at_rest(&self, free_at: &i128, now: Timestamp) -> bool {
        *free_at <= i128::from(now.as_micros()) * self.n
    }

    /// An event is admitted only with the queue at most b·I long: empty b·I later.
    fn rests_after(&self, last: Timestamp) -> Option<Timestamp> {
        let wait = i64::try_from(self.capacity.checked_add(self.n - 1)? / self.n).ok()?;
        Timestamp::from_micros(last.as_micros().checked_add(wait)?)
    }

    /// Taken past full (a charge after the response), the queue is longer than b·I.
    fn owed(&self, free_at: &i128, now: Timestamp) -> u64 {
        super::gcra::owed(*free_at, now, self.n, self.capacity, self.interval)
    }

    fn state_mut(&mut self) -> &mut i128 {
        &mut self.free_at
    }
}

impl Rule for LeakyQueue {
    type Params = super::NoParams;

    #[cfg(test)]
    fn by_the_rule(rate: Rate, b: u64, events: &[(i128, u64)]) -> Vec<bool> {
        // It admits exactly what GCRA passes.
        super::Gcra::by_the_rule(rate, b, events)
    }

    const NAME: &'static str = "leaky-queue";
    const PASSES_AS_GCRA: bool = true;
    const HELP: &'static str =
        "A queue drained at N per P that drops what would wait over (b − 1)·P/N";
    const USES_BURST: bool = true;
    // Fewer events charged leave at least as much room.
    const ADMITS_ANY_PART: bool = true;
    const DELAYS: bool = true;
    const REDIS: Option<RedisScript> = Some(RedisScript::Gcra);

    fn new_limit(rate: Rate, burst: NonZeroU64) -> LeakyQueue {
        LeakyQueue::new(rate, burst)
    }

    /// No admitted event waits longer than (b − 1)·I.
    fn promise(limit: &Limit) -> String {
        let longest = limit.longest_wait() / limit.rate.n();
        format!("no wait over (b - 1)·I = {}", human_duration(longest))
    }

    fn bound(limit: &Limit) -> Bound {
        Bound::Wait { longest: limit.longest_wait() }
    }


}

#[cfg(test)]
mod tests {
    use super::super::tests::burst;
    use super::super::tests::secs;
    use super::*;
    use crate::limiter::Limiter;

    /// Runs the queue over the times; returns its decisions and the waits it recorded.
    fn decisions(q: &mut LeakyQueue, rate: Rate, times: &[Timestamp]) -> (Vec<bool>, Waits) {
        let mut waits = Waits::new(rate);
        let decided = times.iter().map(|&t| q.decide(t)).inspect(|&d| waits.record(d));
        (decided.map(|d| d.passed).collect(), waits)
    }

    #[test]
    fn queues_up_to_burst_minus_one_and_reports_waits() {
        // 1 per 10 s, burst 3: one leaves now, two may wait (10 s and 20 s), the fourth
        // would wait 30 s and is dropped.
        let rate = "1/10s".parse().unwrap();
        let mut q = LeakyQueue::new(rate, burst(3));
        let times = secs(&[0, 0, 0, 0, 25, 26]);
        // At 25 s the queue's last departure was 20 s, so it leaves at 30 s (waits 5 s);
        // at 26 s it would leave at 40 s (waits 14 s).
        let (decided, waits) = decisions(&mut q, rate, &times);
        assert_eq!(decided, [true, true, true, false, true, true]);
        assert_eq!(waits.admitted, 5);
        assert_eq!(waits.delayed, 4);
        assert_eq!(waits.longest_micros(), 20_000_000);
        assert_eq!(waits.mean_micros(), (10 + 20 + 5 + 14) * 1_000_000 / 5);
    }

    #[test]
    fn burst_one_never_delays() {
        let rate = "1/s".parse().unwrap();
        let mut q = LeakyQueue::new(rate, burst(1));
        let (decided, waits) = decisions(&mut q, rate, &secs(&[0, 0, 1, 2, 2]));
        assert_eq!(decided, [true, false, true, true, false]);
        assert_eq!(waits.delayed, 0);
    }

    #[test]
    fn waits_are_exact_fractions_of_an_interval() {
        // 3 per second: I = 1/3 s. Two events at 0 s: the second waits exactly 1/3 s.
        let rate = "3/s".parse().unwrap();
        let mut q = LeakyQueue::new(rate, burst(2));
        let (decided, waits) = decisions(&mut q, rate, &secs(&[0, 0]));
        assert_eq!(decided, [true, true]);
        assert_eq!(waits.longest, 1_000_000);
        assert_eq!(waits.units_per_micro, 3);
        assert_eq!(waits.longest_micros(), 333_333);
        assert_eq!(waits.mean_micros(), 166_667);
    }
}
