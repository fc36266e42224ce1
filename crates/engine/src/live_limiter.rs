//! A policy decided live, event by event, for a program that asks: in memory at the times it
//! gives, or in Redis at the server's clock, shared with every process that uses its keys.

use std::sync::mpsc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Result, anyhow, bail};

use crate::backend::Backend;
use crate::input::cost::Cost;
use crate::input::keys::KeyNotes;
use crate::limit::{self, Limit};
use crate::limits::LimitPolicy;
use crate::live::{Answer, Answered, Live};
use crate::recorder::Settings;
use crate::redis::RedisTarget;
use crate::replay::Settled;
use crate::units::rate::Rate;
use crate::units::time::Timestamp;

/// Where a live limiter decides, and how keys are read.
#[derive(Clone, Debug, Default)]
pub struct LiveOptions {
    /// Redis, if the limits are shared there; in this process if `None`.
    pub redis: Option<RedisTarget>,
    /// The value of a key read as the empty key (an access log's `-`), which nginx,
    /// HAProxy and envoy-ratelimit let through uncounted.
    pub empty_key: Option<Vec<u8>>,
    /// Whether envoy-ratelimit layers leave a refused event's hits uncounted in the limits
    /// it is not over, as envoy's `STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT` does.
    pub stop_counting_over_limit: bool,
}

/// One limit, or several all or nothing, decided live: each [`decide`](LiveLimiter::decide)
/// decides one event at once and says what a service may tell its client. It may move
/// between threads, and a caller may wait for it while holding nothing (Python's GIL):
/// Redis is asked from a thread of the limiter's own, which holds the connection.
pub struct LiveLimiter {
    decider: Decider,
    /// The one limit alone, if the policy is one: its algorithm, rate and own cost.
    one: Option<(Settings, Cost)>,
    /// The time of the last decision, in memory: none may come before it.
    last: Option<Timestamp>,
    clock: Clock,
    empty: KeyNotes,
}

/// A live decision on one event, and what a service may tell its client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// Whether the event passed: every limit admitted it, and each was charged.
    pub passed: bool,
    /// How long a passed event waits before it is served, in µs, rounded up: only a leaky
    /// queue, and nginx without `nodelay`, delay.
    pub wait_us: u64,
    /// How many more units would pass at once, after this decision: the least any limit
    /// holds.
    pub remaining: u64,
    /// How long until an event of this cost would pass, in µs: 0 if this one did, the
    /// longest any limit asks otherwise; `None` if some limit never would pass it.
    pub retry_after_us: Option<i64>,
    /// Each limit's own answer, in the policy's order.
    pub limits: Vec<Answer>,
}

/// Who decides a live limit's events.
enum Decider {
    /// This process, in memory.
    Here(Box<dyn Live + Send>),
    /// Redis, asked by a thread that holds the connection: each question goes to it, and
    /// its answer comes back.
    Remote {
        ask: mpsc::SyncSender<(Option<Vec<u8>>, u64)>,
        answers: mpsc::Receiver<Result<Option<Answered>>>,
    },
}

impl LiveLimiter {
    /// Makes a live limiter of `limits`: one limit, or several layers all or nothing (1 to
    /// [`MAX_LAYERS`](crate::layered::MAX_LAYERS)), each checked as a replay checks it, in
    /// memory or in Redis as `options` say. With Redis, the server is connected to and its
    /// scripts loaded now, within the target's timeout.
    pub fn new(limits: &[Limit], options: &LiveOptions) -> crate::error::Result<LiveLimiter> {
        Ok(LiveLimiter::made(limits, options)?)
    }

    /// [`new`](LiveLimiter::new), its errors the internals'.
    fn made(limits: &[Limit], options: &LiveOptions) -> Result<LiveLimiter> {
        let empty = match &options.empty_key {
            Some(value) => KeyNotes::reading_as_empty(value),
            None => KeyNotes::default(),
        };
        // Checked here, before any thread or connection: what the thread will build.
        let policy = match limits {
            [] => bail!("a live limiter needs a limit"),
            [one] => LimitPolicy::One(one.clone()),
            _ => LimitPolicy::AllOrNothing(limits.to_vec()),
        };
        let settled = Settled::of(&policy, None, options.stop_counting_over_limit)?;
        let one = match (&settled, limits) {
            (Settled::One(settings), [limit]) => Some((*settings, limit.cost.clone())),
            _ => None,
        };
        let decider = match &options.redis {
            None => Decider::Here(crate::live::in_memory(settled.policy())?),
            Some(target) => remote(settled, target.clone())?,
        };
        Ok(LiveLimiter { decider, one, last: None, clock: Clock::start(), empty })
    }

    /// Decides on an event of key `key` (`None` for one limit for all) at `now` (the clock's
    /// time if `None`; in Redis, the server's clock, and `now` must be `None`), which must
    /// not go back. `cost` is the event's cost: one limit alone is charged it (its own
    /// number if `None`); layers weighed by a column are charged it (1 if `None`), and
    /// layers weighed by a number their number.
    pub fn decide(
        &mut self,
        now: Option<Timestamp>,
        key: Option<&[u8]>,
        cost: Option<u64>,
    ) -> crate::error::Result<Outcome> {
        Ok(self.decided(now, key, cost)?)
    }

    /// [`decide`](LiveLimiter::decide), its errors the internals'.
    fn decided(
        &mut self,
        now: Option<Timestamp>,
        key: Option<&[u8]>,
        cost: Option<u64>,
    ) -> Result<Outcome> {
        let remote = matches!(self.decider, Decider::Remote { .. });
        let now = match (now, remote) {
            (Some(_), true) => bail!("Redis decides at its own clock: give no time"),
            (Some(now), false) => now,
            (None, _) => self.clock.at(Instant::now()),
        };
        let cost = match (&self.one, cost) {
            (Some((_, Cost::Each(own))), None) => *own,
            (_, cost) => cost.unwrap_or(1),
        };
        if let Some((settings, _)) = &self.one {
            let given = Cost::Each(cost);
            if let Some(why) = limit::cost_refused(&given, [settings.algorithm], "cost") {
                bail!(why);
            }
        }
        if let Some(last) = self.last.filter(|&last| now < last) {
            bail!(
                "{now} is before {last}, the time of the last decision: a limit's clock never goes back"
            );
        }
        self.last = Some(now);
        let key = key.map(|key| self.empty.value(key));
        let answered = match &mut self.decider {
            Decider::Here(live) => live.answer_now(now, key, cost)?,
            Decider::Remote { ask, answers } => {
                let gone = || anyhow!("the thread that asks Redis has ended");
                ask.send((key.map(<[u8]>::to_vec), cost)).map_err(|_| gone())?;
                answers.recv().map_err(|_| gone())??.ok_or_else(gone)?
            }
        };
        let rate = self.one.as_ref().map(|(settings, _)| settings.rate);
        Ok(outcome(answered, rate))
    }
}

/// What a live engine's answer tells a client; `rate` is the one limit's, whose queue may
/// delay.
fn outcome(answered: Answered, rate: Option<Rate>) -> Outcome {
    let wait_us = rate.map_or(0, |rate| wait_micros(answered.wait, rate));
    let remaining = answered.limits.iter().map(|a| a.remaining).min().unwrap_or(0);
    let retry_after_us = answered
        .limits
        .iter()
        .map(|a| a.retry_after_us)
        .try_fold(0, |most: i64, each| each.map(|each| most.max(each)));
    Outcome { passed: answered.passed, wait_us, remaining, retry_after_us, limits: answered.limits }
}

/// A leaky queue's wait, given in units of 1/N µs of `rate` N/P, in whole microseconds,
/// rounded up.
pub fn wait_micros(wait: i128, rate: Rate) -> u64 {
    let n = rate.n();
    u64::try_from((wait + n - 1) / n).unwrap_or(u64::MAX)
}

/// Starts the thread that asks Redis at `target` for the `settled` policy, and returns how
/// to ask it. The connection lives and dies with the thread, which ends when the limiter
/// is dropped.
fn remote(settled: Settled, target: RedisTarget) -> Result<Decider> {
    let (ask, questions) = mpsc::sync_channel::<(Option<Vec<u8>>, u64)>(0);
    let (answer, answers) = mpsc::sync_channel(1);
    std::thread::Builder::new().name("ratelimit-redis".into()).spawn(move || {
        let made = Backend::new(&settled.settings(), Some(&target), None)
            .and_then(|backend| backend.live(settled.policy()));
        let mut live = match made {
            Ok(live) => {
                let _ = answer.send(Ok(None));
                live
            }
            Err(err) => return drop(answer.send(Err(err))),
        };
        let clock = Clock::start();
        for (key, cost) in questions {
            // Redis decides at its clock; the time given names the call only.
            let now = clock.at(Instant::now());
            let found = live.answer_now(now, key.as_deref(), cost).map(Some);
            if answer.send(found).is_err() {
                return;
            }
        }
    })?;
    // The first answer says whether the connection was made.
    match answers.recv() {
        Ok(Ok(_)) => Ok(Decider::Remote { ask, answers }),
        Ok(Err(err)) => Err(err),
        Err(_) => bail!("the thread that asks Redis ended before it connected"),
    }
}

/// The wall clock, read once, and a monotonic clock since: times that never go back, even
/// when the system's clock is set back.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    wall: i64,
    started: Instant,
}

impl Clock {
    /// Starts the clock now.
    pub fn start() -> Clock {
        let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        Clock { wall: i64::try_from(since.as_micros()).unwrap_or(0), started: Instant::now() }
    }

    /// How long since the clock started.
    pub fn elapsed(&self) -> std::time::Duration {
        self.started.elapsed()
    }

    /// Returns the time of an instant since the start.
    pub fn at(&self, when: Instant) -> Timestamp {
        let elapsed = i64::try_from(when.duration_since(self.started).as_micros()).unwrap_or(0);
        Timestamp::from_micros(self.wall.saturating_add(elapsed)).unwrap_or(Timestamp::EPOCH)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> Option<Timestamp> {
        Timestamp::from_micros(1_700_000_000_000_000 + seconds * 1_000_000)
    }

    #[test]
    fn one_limit_decides_as_its_limiter_and_tells_what_remains() {
        let gcra: Limit = "algo=gcra,rate=1/m,burst=2".parse().unwrap();
        let mut live = LiveLimiter::new(&[gcra], &LiveOptions::default()).unwrap();
        let passed: Vec<(bool, u64, Option<i64>)> = [0, 1, 2, 61]
            .iter()
            .map(|&s| live.decide(at(s), Some(b"a"), None).unwrap())
            .map(|o| (o.passed, o.remaining, o.retry_after_us))
            .collect();
        // Two at once; the third waits for the minute's token, 58 s on; at 61 s one has come.
        assert_eq!(
            passed,
            [
                (true, 1, Some(0)),
                (true, 0, Some(0)),
                (false, 0, Some(58_000_000)),
                (true, 0, Some(0))
            ]
        );
    }

    #[test]
    fn layers_pass_all_or_nothing_and_a_column_weighed_layer_takes_the_calls_cost() {
        // 3 requests a minute, and 10 tokens a minute weighed by the call's cost.
        let requests: Limit = "algo=gcra,rate=3/m,burst=3".parse().unwrap();
        let tokens: Limit = "algo=gcra,rate=10/m,burst=10,cost=tokens".parse().unwrap();
        let mut live = LiveLimiter::new(&[requests, tokens], &LiveOptions::default()).unwrap();
        let got: Vec<(bool, u64)> = [(0, 4), (1, 4), (2, 4), (3, 1), (4, 1)]
            .iter()
            .map(|&(s, cost)| live.decide(at(s), None, Some(cost)).unwrap())
            .map(|o| (o.passed, o.remaining))
            .collect();
        // The third is over 10 tokens (and charges nothing); the fourth is the third
        // request; the fifth is over 3 requests.
        assert_eq!(got, [(true, 2), (true, 1), (false, 1), (true, 0), (false, 0)]);
    }

    #[test]
    fn a_clock_that_goes_back_is_refused() {
        let gcra: Limit = "algo=gcra,rate=5/h,burst=5".parse().unwrap();
        let mut live = LiveLimiter::new(&[gcra], &LiveOptions::default()).unwrap();
        live.decide(at(10), None, None).unwrap();
        let err = live.decide(at(9), None, None).unwrap_err().to_string();
        assert!(err.ends_with("the time of the last decision: a limit's clock never goes back"));
    }

    #[test]
    fn a_leaky_queues_wait_is_told_in_whole_microseconds_rounded_up() {
        // 3/s: a wait of 1 unit is 1/3 µs, told as 1 µs; 3 units are 1 µs.
        let rate: Rate = "3/s".parse().unwrap();
        assert_eq!([0, 1, 3, 4].map(|w| wait_micros(w, rate)), [0, 1, 1, 2]);
    }
}
