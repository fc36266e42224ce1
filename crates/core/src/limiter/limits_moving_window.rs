//! Python `limits`' moving window: a log of hits, counted over [t − P, t].

use std::fmt::Write as _;

use super::export::{self, BurstRule, Export, ExportAsk, ExportKey};
use std::num::NonZeroU64;

use super::promise::{Bound, Limit};
use super::sliding_log::{Log, SlidingLog};
use super::{Decision, KeyedState, Rule};
use crate::units::rate::Rate;
use crate::units::time::{Span, Timestamp};

/// `limits`' `MovingWindowRateLimiter` on its `MemoryStorage` (limits 5.8.0,
/// `strategies.py` lines 85–99; `storage/memory.py`, `acquire_entry` lines 135–158). A hit
/// of cost c passes if the log's (N − c + 1)-th newest entry is older than `t − P` (or is
/// not there), and then adds c entries at t: at most N entries in the closed [t − P, t],
/// where the exact `sliding-log` counts the half-open (t − P, t]. In whole microseconds
/// that is a sliding log of P + 1 µs, which is how it is kept.
#[derive(Clone, Debug)]
pub struct LimitsMovingWindow(SlidingLog);

impl LimitsMovingWindow {
    /// Returns the limiter for N per P, P a whole number of seconds.
    pub fn new(rate: Rate) -> LimitsMovingWindow {
        let closed = rate.period().as_micros().saturating_add(1);
        let period = Span::from_micros(closed).map_or(rate.period(), |span| span);
        let closed = Rate::new(rate.count(), period).unwrap_or(rate);
        LimitsMovingWindow(SlidingLog::new(closed))
    }
}

impl KeyedState for LimitsMovingWindow {
    type State = Log;
    type Keys = super::Apart;

    #[inline]
    fn step(&self, log: &mut Log, now: Timestamp, cost: u64, force: bool) -> Decision {
        self.0.step(log, now, cost, force)
    }

    #[inline]
    fn admits(&self, log: &mut Log, now: Timestamp, cost: u64) -> bool {
        self.0.admits(log, now, cost)
    }

    fn at_rest(&self, log: &Log, now: Timestamp) -> bool {
        self.0.at_rest(log, now)
    }

    fn rests_after(&self, last: Timestamp) -> Option<Timestamp> {
        self.0.rests_after(last)
    }

    fn state_mut(&mut self) -> &mut Log {
        self.0.state_mut()
    }
}

/// Python's `limits`, as `config --for limits` writes it.
const EXPORT: Export = Export {
    system: "limits",
    help: "Python's limits",
    burst: BurstRule::Without,
    key: export::any_quoted,
    write,
};

/// The `limits` item, in its string notation and as Python, with the strategy the models
/// replay.
fn write(ask: &ExportAsk<'_>) -> String {
    let rate = ask.rate;
    let micros = rate.period().as_micros();
    let seconds = (micros / 1_000_000).max(1);
    let mut text =
        format!("# ratelimit: limits-fixed-window, -moving-window or -sliding-window at {rate}\n");
    if let Some(why) = <super::LimitsFixedWindow as Rule>::refuses(rate) {
        let _ = writeln!(text, "# {why}: it becomes {} per {seconds} s", rate.count());
    }
    let n = rate.count();
    let _ = write!(
        text,
        "from limits import parse, storage, strategies\n\
         item = parse(\"{n} per {seconds} second\")\n\
         limiter = strategies.MovingWindowRateLimiter(storage.MemoryStorage())\n\
         # limiter.hit(item, key) for each request{}\n",
        match ask.key {
            Some(ExportKey::Quoted(column)) => format!(", key being its {}", export::quoted(column)),
            _ => String::new(),
        }
    );
    text
}

impl Rule for LimitsMovingWindow {
    type Params = super::NoParams;

    #[cfg(test)]
    fn by_the_rule(rate: Rate, _b: u64, events: &[(i128, u64)]) -> Vec<bool> {
        let (n, p) = (rate.n(), rate.p());
        super::tests::by_rule(events, |passed, t, c| {
            super::tests::used(passed, |s| s >= t - p) + c <= n
        })
    }

    const NAME: &'static str = "limits-moving-window";
    const HELP: &'static str = "Python limits' moving window: at most N hits in [t − P, t]";
    const USES_BURST: bool = false;
    const MODELS: Option<&'static str> = Some("Python's limits 5.8.0, MovingWindowRateLimiter");
    const QUIRKS: Option<&'static str> = Some("whole-second periods; a hit whose cost does not fit is refused whole");
    const PROVEN: Option<&'static str> = Some("Python's limits 5.8.0 from PyPI, its clock patched (tests/cli/limits_peer.rs)");
    const EXPORT: Option<Export> = Some(EXPORT);

    fn refuses(rate: Rate) -> Option<String> {
        super::limits_fixed_window::whole_seconds(rate)
    }

    fn new_limit(rate: Rate, _burst: NonZeroU64) -> LimitsMovingWindow {
        LimitsMovingWindow::new(rate)
    }

    fn promise(limit: &Limit) -> String {
        SlidingLog::promise(limit)
    }

    fn bound(limit: &Limit) -> Bound {
        SlidingLog::bound(limit)
    }


}

#[cfg(test)]
mod tests {
    use super::super::tests::{decisions, secs};
    use super::*;

    #[test]
    fn a_hit_exactly_p_before_still_counts() {
        // 2 per 60 s: at 60 the hit at 0 is still in [0, 60]; at 60.000001 it is not.
        let mut limiter = LimitsMovingWindow::new("2/60s".parse().unwrap());
        let mut times = secs(&[0, 30, 60]);
        times.push(Timestamp::from_micros(60_000_001).unwrap());
        assert_eq!(decisions(&mut limiter, &times), [true, true, false, true]);
        // The exact sliding log passes the hit at 60.
        let mut exact = SlidingLog::new("2/60s".parse().unwrap());
        assert_eq!(decisions(&mut exact, &secs(&[0, 30, 60])), [true, true, true]);
    }
}
