//! Sliding log: at most N events in any period, by remembering each passed event.

use std::collections::VecDeque;

use std::num::NonZeroU64;

use super::promise::{Bound, Limit};
use super::{Decision, KeyedState, RedisScript, Rule};
use crate::units::rate::Rate;
use crate::units::time::Timestamp;

/// Keeps the times of passed events and passes an event at t of cost c if and only if the
/// costs of the events passed in `(t − P, t]`, plus c, are at most N: with costs of 1, if
/// fewer than N events passed.
///
/// It promises at most N passed events in any interval of one period. The price is memory:
/// it keeps up to N times.
#[derive(Clone, Debug)]
pub struct SlidingLog {
    limit: u64,
    period: i64,
    log: Log,
}

/// The times of the passed events still in the window, oldest first. The newest is kept
/// apart, so that a key with at most one time in its window allocates nothing: with
/// millions of keys, most have one. Their costs are kept only once an event costs other
/// than 1, so that a log of events that cost 1 costs no more than their times.
#[derive(Clone, Debug)]
pub struct Log {
    newest: i64,
    older: VecDeque<i64>,
    weighted: Option<Box<Costs>>,
}

/// The costs of a log's events, in the same order as their times, and their sum.
#[derive(Clone, Debug)]
struct Costs {
    each: VecDeque<u64>,
    total: u64,
}

impl Default for Log {
    /// An empty log, which allocates nothing.
    fn default() -> Log {
        Log { newest: Log::NONE, older: VecDeque::new(), weighted: None }
    }
}

impl Log {
    /// No time is this early (times are years 0000 to 9999), so it marks no newest time.
    const NONE: i64 = i64::MIN;

    fn front(&self) -> Option<i64> {
        self.older.front().copied().or((self.newest != Log::NONE).then_some(self.newest))
    }

    fn pop_front(&mut self) {
        if self.older.pop_front().is_none() {
            self.newest = Log::NONE;
        }
        if let Some(costs) = &mut self.weighted {
            // Costs are pushed with every time once they are kept (and filled in for the
            // times before), and popped with every time: the two queues have one length.
            let cost = costs.each.pop_front().expect("a cost for every time");
            costs.total -= cost;
        }
    }

    fn len(&self) -> usize {
        self.older.len() + usize::from(self.newest != Log::NONE)
    }

    /// The sum of the costs in the log.
    fn used(&self) -> u64 {
        // A usize count always fits in a u64 on the platforms this builds for.
        self.weighted.as_ref().map_or(self.len() as u64, |costs| costs.total)
    }

    fn push_back(&mut self, time: i64, cost: u64) {
        if cost != 1 && self.weighted.is_none() {
            let each = std::iter::repeat_n(1, self.len()).collect();
            self.weighted = Some(Box::new(Costs { each, total: self.used() }));
        }
        if let Some(costs) = &mut self.weighted {
            costs.each.push_back(cost);
            costs.total = costs.total.saturating_add(cost);
        }
        if self.newest != Log::NONE {
            self.older.push_back(self.newest);
        }
        self.newest = time;
    }
}

impl SlidingLog {
    /// Returns a limiter with an empty log.
    pub fn new(rate: Rate) -> SlidingLog {
        let limit = rate.count();
        let room = usize::try_from(limit).unwrap_or(usize::MAX).min(1 << 12);
        SlidingLog {
            limit,
            period: rate.period().as_micros(),
            log: Log { newest: Log::NONE, older: VecDeque::with_capacity(room), weighted: None },
        }
    }
}

impl KeyedState for SlidingLog {
    type State = Log;
    type Keys = super::Apart;

    #[inline]
    fn step(&self, state: &mut Log, now: Timestamp, cost: u64, force: bool) -> Decision {
        // Tidied first, forced or not, so that the log keeps only its window.
        let fits = self.admits(state, now, cost);
        let pass = force || fits;
        let now = now.as_micros();
        // An event that costs nothing changes nothing, and takes no room in the log.
        if pass && cost > 0 {
            state.push_back(now, cost);
        }
        Decision { passed: pass, wait: 0 }
    }

    /// Forgets the times that have left the window (no later event sees them), and says
    /// whether the event fits: no copy of the log.
    #[inline]
    fn admits(&self, state: &mut Log, now: Timestamp, cost: u64) -> bool {
        // An event at exactly t − P is a full period old and no longer counts.
        let oldest_kept = now.as_micros().saturating_sub(self.period);
        while state.front().is_some_and(|t| t <= oldest_kept) {
            state.pop_front();
        }
        state.used().saturating_add(cost) <= self.limit
    }

    /// Once its newest time has left the window, the log counts nothing, as a fresh one.
    fn at_rest(&self, state: &Log, now: Timestamp) -> bool {
        state.newest == Log::NONE || state.newest <= now.as_micros().saturating_sub(self.period)
    }

    /// A period after the last event, the log holds nothing.
    fn rests_after(&self, last: Timestamp) -> Option<Timestamp> {
        Timestamp::from_micros(last.as_micros().checked_add(self.period)?)
    }

    fn state_mut(&mut self) -> &mut Log {
        &mut self.log
    }
}

impl Rule for SlidingLog {
    type Params = super::NoParams;

    #[cfg(test)]
    fn by_the_rule(rate: Rate, _b: u64, events: &[(i128, u64)]) -> Vec<bool> {
        let (n, p) = (rate.n(), rate.p());
        super::tests::by_rule(events, |passed, t, c| {
            super::tests::used(passed, |s| s > t - p) + c <= n
        })
    }

    const NAME: &'static str = "sliding-log";
    const HELP: &'static str = "At most N passed events in (t − P, t], remembering each one";
    const USES_BURST: bool = false;
    // Fewer events charged leave at least as much room.
    const ADMITS_ANY_PART: bool = true;
    const REDIS: Option<RedisScript> = Some(RedisScript::SlidingLog);

    fn new_limit(rate: Rate, _burst: NonZeroU64) -> SlidingLog {
        SlidingLog::new(rate)
    }

    /// At most N in any period.
    fn promise(limit: &Limit) -> String {
        format!("at most {} in any {}", limit.rate.count(), limit.rate.period())
    }

    fn bound(limit: &Limit) -> Bound {
        Bound::Period { most: limit.rate.count() }
    }


}

#[cfg(test)]
mod tests {
    use super::super::tests::{decisions, secs, weighted};
    use super::*;

    #[test]
    fn three_per_minute() {
        // The case from the issue: 0, 10 and 20 s pass, 30 s is the fourth in a minute,
        // and at 65 s the event from 0 s has left the window.
        let mut log = SlidingLog::new("3/60s".parse().unwrap());
        let times = secs(&[0, 10, 20, 30, 65]);
        assert_eq!(decisions(&mut log, &times), [true, true, true, false, true]);
    }

    #[test]
    fn an_event_exactly_one_period_old_has_left() {
        let mut log = SlidingLog::new("1/m".parse().unwrap());
        let times = secs(&[0, 59, 60, 61, 119, 120]);
        let want = [true, false, true, false, false, true];
        assert_eq!(decisions(&mut log, &times), want);
    }

    #[test]
    fn dropped_events_do_not_count() {
        let mut log = SlidingLog::new("2/m".parse().unwrap());
        let times = secs(&[0, 1, 2, 3, 60, 61, 62]);
        let want = [true, true, false, false, true, true, false];
        assert_eq!(decisions(&mut log, &times), want);
    }

    #[test]
    fn a_weighted_event_passes_when_the_costs_in_the_last_period_leave_room() {
        // 5 a minute. At 60 s the 3 from 0 s has left, leaving the 2 from 20 s; at 70 s the
        // log holds 2 + 3, so a 1 does not fit; at 81 s the 2 from 20 s has left too.
        let mut log = SlidingLog::new("5/m".parse().unwrap());
        let events = [(0, 3), (10, 3), (20, 2), (60, 3), (61, 0), (70, 1), (81, 1)];
        assert_eq!(weighted(&mut log, &events), [true, false, true, true, true, false, true]);
        // Costs of 1 after weighted ones are counted as 1 each.
        let mut log = SlidingLog::new("3/m".parse().unwrap());
        let events = [(0, 1), (1, 1), (2, 2), (3, 1), (4, 1)];
        assert_eq!(weighted(&mut log, &events), [true, true, false, true, false]);
    }
}
