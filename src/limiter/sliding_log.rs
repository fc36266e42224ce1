//! Sliding log: at most N events in any period, by remembering each passed event.

use std::collections::VecDeque;

use std::num::NonZeroU64;

use super::promise::{Limit, Seen, Watch};
use super::{Decision, KeyedState, Limiter, Rule};
use crate::units::rate::Rate;
use crate::units::time::Timestamp;

/// Keeps the times of passed events and passes an event at t if and only if fewer than
/// N events passed in `(t − P, t]`.
///
/// It promises at most N passed events in any interval of one period. The price is memory:
/// it keeps up to N times.
#[derive(Clone, Debug)]
pub struct SlidingLog {
    limit: usize,
    period: i64,
    log: Log,
}

/// The times of the passed events still in the window, oldest first. The newest is kept
/// apart, so that a key with at most one time in its window allocates nothing: with
/// millions of keys, most have one.
#[derive(Clone, Debug)]
pub struct Log {
    newest: i64,
    older: VecDeque<i64>,
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
    }

    fn len(&self) -> usize {
        self.older.len() + usize::from(self.newest != Log::NONE)
    }

    fn push_back(&mut self, time: i64) {
        if self.newest != Log::NONE {
            self.older.push_back(self.newest);
        }
        self.newest = time;
    }
}

impl SlidingLog {
    /// Returns a limiter with an empty log.
    pub fn new(rate: Rate) -> SlidingLog {
        let limit = usize::try_from(rate.count()).unwrap_or(usize::MAX);
        SlidingLog {
            limit,
            period: rate.period().as_micros(),
            log: Log { newest: Log::NONE, older: VecDeque::with_capacity(limit.min(1 << 12)) },
        }
    }
}

impl Limiter for SlidingLog {
    #[inline]
    fn take(&mut self, now: Timestamp, force: bool) -> Decision {
        let now = now.as_micros();
        // An event at exactly t − P is a full period old and no longer counts.
        let oldest_kept = now.saturating_sub(self.period);
        while self.log.front().is_some_and(|t| t <= oldest_kept) {
            self.log.pop_front();
        }
        let pass = force || self.log.len() < self.limit;
        if pass {
            self.log.push_back(now);
        }
        Decision { passed: pass, wait: 0 }
    }
}

impl Rule for SlidingLog {
    const NAME: &'static str = "sliding-log";
    const HELP: &'static str = "At most N passed events in (t − P, t], remembering each one";
    const USES_BURST: bool = false;
    const WATCH: Watch = Watch { aligned: false, period: true, bucket: false };

    fn new_limit(rate: Rate, _burst: NonZeroU64) -> SlidingLog {
        SlidingLog::new(rate)
    }

    /// At most N in any period.
    fn promise(limit: &Limit) -> String {
        format!("at most {} in any {}", limit.rate.count(), limit.rate.period())
    }

    fn measured(_: &Limit, seen: &Seen) -> String {
        format!(": saw {}", seen.period)
    }

    fn held(limit: &Limit, seen: &Seen) -> bool {
        seen.period <= limit.rate.count()
    }
}

impl KeyedState for SlidingLog {
    type State = Log;

    fn state(&mut self) -> &mut Log {
        &mut self.log
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{decisions, secs};
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
}
