//! redis-cell's `CL.THROTTLE`: GCRA in integer nanoseconds, its interval cut to a whole
//! nanosecond, its key expiring in whole milliseconds.

use std::fmt::Write as _;
use std::num::NonZeroU64;

use super::export::{BurstRule, Export, ExportAsk, ExportKey};
use super::promise::{Bound, Limit};
use super::{Decision, KeyedState, OwnSize, PerKey, Rule, SystemSizer};
use crate::event::{Event, Key};
use crate::units::rate::Rate;
use crate::units::time::Timestamp;

/// redis-cell's `CL.THROTTLE key max_burst count period [quantity]` (redis-cell 0.2.2, as
/// crates.io has it: `cell::RateLimiter::rate_limit` over the Redis store), instruction for
/// instruction in its integers:
///
/// - The emission interval I is `⌊period_ns / count⌋` in doubles, cut to whole ns; the
///   tolerance is I·(max_burst + 1): `max_burst` is the bucket less one.
/// - `tat` is the key's value, or now if the key is missing; `new_tat = max(now, tat) +
///   I·quantity`. The request is limited if `now < new_tat − tolerance`; else the key is set
///   to `new_tat` and expires in `new_tat − now`, **cut to whole milliseconds**, on Redis'
///   millisecond clock: a key can go a fraction of a millisecond before its tat, and the
///   next request then finds it missing.
/// - A limited request writes nothing.
///
/// Periods are whole seconds (its `period` argument); the clock is the server's, in ns.
#[derive(Clone, Debug)]
pub struct RedisCell {
    /// I, in ns.
    interval: i64,
    /// I·(max_burst + 1), in ns.
    tolerance: i64,
    state: Cell,
}

/// One key's value (tat, in ns since the epoch) and the millisecond after which Redis
/// expires it; none while the key is missing.
#[derive(Clone, Copy, Debug, Default)]
pub struct Cell(Option<(i64, i64)>);

impl RedisCell {
    /// Returns `CL.THROTTLE` at `count` per `period` with a bucket of `burst`
    /// (`max_burst` = burst − 1).
    #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)] // As redis-cell does.
    pub fn new(rate: Rate, burst: NonZeroU64) -> RedisCell {
        let period_ns = rate.period().as_micros().saturating_mul(1000);
        let interval = (period_ns as f64 / rate.count() as f64) as i64;
        let burst = i64::try_from(burst.get()).unwrap_or(i64::MAX);
        RedisCell { interval, tolerance: interval.saturating_mul(burst), state: Cell::default() }
    }

    /// The key's tat, if Redis still holds the key at millisecond `ms`.
    #[inline]
    fn tat(cell: &Cell, ms: i64) -> Option<i64> {
        cell.0.filter(|&(_, expires)| ms <= expires).map(|(tat, _)| tat)
    }
}

impl KeyedState for RedisCell {
    type State = Cell;
    type Keys = super::Apart;

    #[inline]
    fn step(&self, cell: &mut Cell, now: Timestamp, cost: u64, force: bool) -> Decision {
        let micros = now.as_micros();
        let (now, ms) = (micros.saturating_mul(1000), micros.div_euclid(1000));
        let tat = Self::tat(cell, ms).unwrap_or(now);
        let quantity = i64::try_from(cost).unwrap_or(i64::MAX);
        let new_tat = now.max(tat).saturating_add(self.interval.saturating_mul(quantity));
        let limited = now < new_tat.saturating_sub(self.tolerance);
        if !limited || force {
            // `set_expire(ttl.num_milliseconds())`: the TTL cut toward zero.
            let ttl_ms = (new_tat - now) / 1_000_000;
            *cell = Cell(Some((new_tat, ms.saturating_add(ttl_ms))));
        }
        Decision { passed: force || !limited, wait: 0 }
    }

    /// Once Redis has let the key go, the next request finds it missing, as a fresh key's.
    fn at_rest(&self, cell: &Cell, now: Timestamp) -> bool {
        Self::tat(cell, now.as_micros().div_euclid(1000)).is_none()
    }

    /// A request passes only with its new tat at most the tolerance past it, and its key
    /// lives that, cut to whole ms: gone from the millisecond after.
    fn rests_after(&self, last: Timestamp) -> Option<Timestamp> {
        let ms = last.as_micros().div_euclid(1000);
        let ttl_ms = self.tolerance / 1_000_000;
        Timestamp::from_micros(ms.checked_add(ttl_ms)?.checked_add(1)?.checked_mul(1000)?)
    }

    fn state_mut(&mut self) -> &mut Cell {
        &mut self.state
    }
}

/// redis-cell's smallest `max_burst` at a rate. A request it lets through sets the key to
/// `max(now, tat) + I·quantity`, and the key's TTL is that less now, whatever the burst: so
/// with none refused, every key's tat is known whatever the burst, and a request passes iff
/// `tat − now ≤ I·(max_burst + 1)`. The smallest `max_burst` is the most `⌈(tat − now)/I⌉`
/// any request reaches, less one: found in one pass.
#[derive(Clone, Debug)]
pub struct MaxBurst {
    /// Each key's cell, as redis-cell keeps it when it refuses nothing.
    keys: PerKey<RedisCell>,
    /// I, in ns.
    interval: i64,
    /// The most `tat − now` a request reached, in ns, and its key.
    most: (i64, Option<Key>),
}

impl MaxBurst {
    /// Returns the finder at `rate`.
    pub fn new(rate: Rate) -> MaxBurst {
        let cell = RedisCell::new(rate, NonZeroU64::MIN);
        MaxBurst { interval: cell.interval.max(1), keys: PerKey::new(cell), most: (0, None) }
    }
}

impl SystemSizer for MaxBurst {
    fn push(&mut self, event: Event) {
        let slot = usize::try_from(event.key).unwrap_or(usize::MAX);
        // Charged whatever the burst: the cells of a redis-cell that refuses nothing.
        self.keys.charge(slot, event.time, event.cost);
        let now = event.time.as_micros().saturating_mul(1000);
        let ahead = self.keys.state(slot).and_then(|cell| cell.0).map_or(0, |(tat, _)| tat - now);
        if ahead > self.most.0 {
            self.most = (ahead, Some(event.key));
        }
    }

    fn result(&mut self) -> (u64, Option<Key>) {
        // ⌈ahead / I⌉, ahead ≥ 0.
        let intervals = (self.most.0 + self.interval - 1) / self.interval;
        let bucket = u64::try_from(intervals).unwrap_or(0).max(1);
        (bucket - 1, self.most.1)
    }
}

/// A rate in `CL.THROTTLE`'s words: `count` per `period` seconds; `None` without both.
fn rate_from_words(given: &[(&str, &str)]) -> Option<super::RateRead> {
    let word = |key: &str| given.iter().find(|(k, _)| *k == key).map(|(_, v)| v.trim());
    Some(format!("{}/{}s", word("count")?, word("period")?).parse())
}

/// A rate as `CL.THROTTLE` takes it: `count=N,period=S`, if P is whole seconds.
fn rate_as_words(rate: Rate) -> Option<String> {
    let micros = rate.period().as_micros();
    (micros % 1_000_000 == 0)
        .then(|| format!("count={},period={}", rate.count(), micros / 1_000_000))
}

/// redis-cell, as `config --for redis-cell` writes it: the command.
const EXPORT: Export = Export {
    system: "redis-cell",
    help: "redis-cell's CL.THROTTLE command",
    burst: BurstRule::FromZero,
    key: super::export::any_quoted,
    write,
};

/// The command for one request; the key is the limit's, quoted as redis-cli reads it.
fn write(ask: &ExportAsk<'_>) -> String {
    let rate = ask.rate;
    let mut text = format!("# ratelimit: redis-cell at {rate}\n");
    if let Some(why) = <RedisCell as Rule>::refuses(rate) {
        let _ = writeln!(text, "# {why}");
    }
    let max_burst = ask.burst.unwrap_or(rate.count().saturating_sub(1));
    let period = (rate.period().as_micros() / 1_000_000).max(1);
    let key = match ask.key {
        Some(ExportKey::Quoted(name)) => cli_quoted(&format!("ratelimit:{name}")),
        _ => "ratelimit".to_owned(),
    };
    let _ = writeln!(text, "CL.THROTTLE {key} {max_burst} {} {period} 1", rate.count());
    text
}

/// `text` as redis-cli reads a quoted argument back: printable ASCII as it is, but for `"`
/// and `\\`, and every other byte of its UTF-8 as `\\xHH`.
fn cli_quoted(text: &str) -> String {
    let mut out = String::from("\"");
    for byte in text.bytes() {
        match byte {
            b'"' | b'\\' => {
                out.push('\\');
                out.push(char::from(byte));
            }
            b' '..=b'~' => out.push(char::from(byte)),
            _ => {
                let _ = write!(out, "\\x{byte:02x}");
            }
        }
    }
    out.push('"');
    out
}

impl Rule for RedisCell {
    type Params = super::NoParams;

    #[cfg(test)]
    fn by_the_rule(rate: Rate, b: u64, events: &[(i128, u64)]) -> Vec<bool> {
        // GCRA in ns at I = ⌊P/N⌋ ns and tolerance b·I, the key forgotten a whole number
        // of milliseconds after it was set: the tat kept with the last millisecond it lives.
        #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)]
        let interval = ((rate.p() * 1000) as f64 / rate.n() as f64) as i128;
        let tolerance = interval * i128::from(b);
        let mut key: Option<(i128, i128)> = None;
        events
            .iter()
            .map(|&(t, c)| {
                let (now, ms) = (t * 1000, t.div_euclid(1000));
                let tat = key.filter(|&(_, last)| ms <= last).map_or(now, |(tat, _)| tat);
                let new_tat = now.max(tat) + interval * i128::from(c);
                let ok = now >= new_tat - tolerance;
                if ok {
                    key = Some((new_tat, ms + (new_tat - now) / 1_000_000));
                }
                ok
            })
            .collect()
    }

    const NAME: &'static str = "redis-cell";
    const HELP: &'static str = "redis-cell's CL.THROTTLE: GCRA in whole ns, --burst its \
                                max_burst, its key expiring in whole ms";
    const USES_BURST: bool = true;
    const BURST_BEYOND_FIRST: bool = true;
    const BURST_WORD: Option<&'static str> = Some("max_burst");
    const MODELS: Option<&'static str> = Some("redis-cell 0.2.2 (crates.io), CL.THROTTLE");
    const QUIRKS: Option<&'static str> = Some("max_burst is the bucket less one; the interval cut to a whole ns; the key expires in whole ms, a hair before its tat");
    const PROVEN: Option<&'static str> = Some("the module built from its crate, in a redis-server frozen at each µs (python/tests/test_redis_cell_peer.py)");
    const EXPORT: Option<Export> = Some(EXPORT);
    const OWN_SIZE: Option<OwnSize> = Some(OwnSize {
        setting: "max_burst",
        help: "redis-cell's CL.THROTTLE: max_burst, in its own ns and ms arithmetic",
        finder: |rate, _| Box::new(MaxBurst::new(rate)),
        refuses: <RedisCell as Rule>::refuses,
        weighs: true,
        line: |rate, max_burst| {
            let words = rate_as_words(rate).unwrap_or_else(|| rate.to_string());
            format!("CL.THROTTLE key {max_burst} ({words}) refuses none of the events")
        },
        in_replay: false,
    });
    const RATE_WORDS: Option<super::RateWords> = Some(super::RateWords {
        system: "redis-cell",
        keys: &["count", "period"],
        how: "count=N with period=SECONDS: give both (max_burst is burst=)",
        read: rate_from_words,
        written: rate_as_words,
    });

    fn refuses(rate: Rate) -> Option<String> {
        (rate.period().as_micros() % 1_000_000 != 0).then(|| {
            format!("CL.THROTTLE's period is whole seconds, and {rate}'s is not")
        })
    }

    fn new_limit(rate: Rate, burst: NonZeroU64) -> RedisCell {
        RedisCell::new(rate, burst)
    }

    /// GCRA's, at an interval cut to a whole ns: a hair faster than N per P.
    fn promise(limit: &Limit) -> String {
        format!(
            "at most b + T/I = {} + T/⌊P/N⌋ ns in any interval T (GCRA, its interval cut)",
            limit.burst
        )
    }

    fn bound(limit: &Limit) -> Bound {
        // The cut interval gains under one event a year at any rate: one more in the
        // bucket covers it.
        Bound::Bucket { burst: limit.burst.saturating_add(1) }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{burst, decisions};
    use super::*;

    fn at(micros: &[i64]) -> Vec<Timestamp> {
        micros.iter().map(|&t| Timestamp::from_micros(t).unwrap()).collect()
    }

    #[test]
    fn the_smallest_max_burst_refuses_none_and_one_less_refuses_some() {
        // 1/s: three at 0 s, two at 1.5 s. The fifth leaves tat at 5 s, 3.5 s ahead of it:
        // a bucket of ⌈3.5⌉ = 4, max_burst 3; with max_burst 2 it is refused.
        let rate: Rate = "1/s".parse().unwrap();
        let times = at(&[0, 0, 0, 1_500_000, 1_500_000]);
        let mut finder = MaxBurst::new(rate);
        for &time in &times {
            finder.push(Event { time, key: 0, cost: 1 });
        }
        let (max_burst, key) = finder.result();
        assert_eq!((max_burst, key), (3, Some(0)));
        for (burst, refused) in [(max_burst + 1, 0), (max_burst, 1)] {
            let mut cell = RedisCell::new(rate, super::super::tests::burst(burst));
            let got = decisions(&mut cell, &times);
            assert_eq!(got.iter().filter(|&&p| !p).count(), refused, "bucket {burst}");
        }
    }

    #[test]
    fn a_key_is_quoted_as_redis_cli_reads_it() {
        assert_eq!(cli_quoted("a \"b\" \\ é\n"), r#""a \"b\" \\ \xc3\xa9\x0a""#);
    }

    #[test]
    fn max_burst_is_the_bucket_less_one() {
        // CL.THROTTLE k 2 1 1: a bucket of 3 at 1/s; three pass at once, the fourth waits
        // a second.
        let mut cell = RedisCell::new("1/s".parse().unwrap(), burst(3));
        let got = decisions(&mut cell, &at(&[0, 0, 0, 0, 999_999, 1_000_000]));
        assert_eq!(got, [true, true, true, false, false, true]);
    }

    #[test]
    fn its_interval_is_cut_to_a_whole_nanosecond() {
        // 3/s: I = 333 333 333 ns, not 333 333 333⅓; after three at 0, the bucket of 1 is
        // free again at 999 999 999 ns, a third of a ns before a second.
        let cell = RedisCell::new("3/s".parse().unwrap(), burst(1));
        assert_eq!((cell.interval, cell.tolerance), (333_333_333, 333_333_333));
    }

    #[test]
    fn a_key_expires_in_whole_milliseconds_before_its_tat() {
        // 2 per 3 s: I = 1.5 s, a bucket of 1. A request at 0 sets tat at 1.5 s and the key
        // to expire in 1500 ms: at 1499.9 ms it is there (limited), at 1.5 s it passes.
        let mut cell = RedisCell::new("2/3s".parse().unwrap(), burst(1));
        let got = decisions(&mut cell, &at(&[0, 1_499_900, 1_500_000]));
        assert_eq!(got, [true, false, true]);
        // 7/s: I = 142 857 142 ns; a request at 0.4 ms sets tat at 143.257142 ms, a TTL of
        // 142 ms: the key is gone after 142.4 ms, and at 143 ms (before its tat) the next
        // request finds it missing and passes.
        let mut cell = RedisCell::new("7/s".parse().unwrap(), burst(1));
        let got = decisions(&mut cell, &at(&[400, 142_999, 143_000]));
        assert_eq!(got, [true, false, true]);
    }
}
