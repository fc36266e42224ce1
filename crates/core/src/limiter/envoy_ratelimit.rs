//! envoyproxy/ratelimit's Redis fixed window: epoch windows of one unit, every hit counted.

use std::fmt::Write as _;

use super::export::{self, BurstRule, Export, ExportAsk, ExportKey};
use std::num::NonZeroU64;

use super::promise::{Bound, Limit};
use super::{Decision, KeyedState, Rule};
use crate::units::rate::Rate;
use crate::units::time::Timestamp;

/// The units envoy's ratelimit service counts in, by name and in seconds (`UnitToDivider`,
/// `src/utils/utilities.go`): a month is 30 days and a year 365.
pub const UNITS: [(&str, i64); 7] = [
    ("second", 1),
    ("minute", 60),
    ("hour", 3_600),
    ("day", 86_400),
    ("week", 604_800),
    ("month", 2_592_000),
    ("year", 31_536_000),
];

/// envoyproxy/ratelimit's fixed window on Redis (`src/redis/fixed_cache_impl.go`, `DoLimit`
/// and `pipelineAppend`; the window in `src/limiter/cache_key.go`, `GenerateCacheKey`; the
/// verdict in `src/limiter/base_limiter.go`, `GetResponseDescriptorStatus`), at commit
/// f2fb157. A request's key names its window, `now / unit · unit` in Go's integers: `now`
/// the whole seconds of `UnixNow` (floored), divided by truncation toward zero. Each
/// request `INCRBY`s it by its hits (the cost; a cost of 0 is 1, as `GetHitsAddends` makes
/// a request's `hits_addend` of 0), `EXPIRE`s it a unit later, and is over the limit if the
/// count after is above N. Refused requests count.
///
/// From 1970 on, a window is one unit long and its hits are less than a unit apart, so the
/// key never expires while it is read. Truncation makes the window named 0 span (−unit,
/// unit), and there a key idle for a unit expires (when Redis's clock in ms is past its
/// time): this model expires it so, as envoy does with `EXPIRATION_JITTER_MAX_SECONDS=0`.
/// (By default envoy adds 0 to 300 s of random jitter to each expiry.)
///
/// `STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT` changes nothing for one limit: a key whose
/// count would pass N is "near limit" itself, and `getHitsAddend` increments it. Among
/// several limits of one request, it increments only those, and leaves the others: which
/// is how `--limit` layers settle a refused event, so layers of this model decide as
/// envoy does with it set.
#[derive(Clone, Debug)]
pub struct EnvoyRatelimit {
    limit: u64,
    /// The unit, in whole seconds.
    unit: i64,
    state: Count,
}

/// One key's count, the window it is for, and its last hit's time in ms, from which its
/// expiry counts.
#[derive(Clone, Copy, Debug, Default)]
pub struct Count {
    window: i64,
    hits: u64,
    last_ms: i64,
}

impl EnvoyRatelimit {
    /// The hits `count` holds as a hit at `now` finds it: none if its window is over or
    /// its key expired.
    fn counted(&self, count: &Count, now: Timestamp) -> u64 {
        let micros = now.as_micros();
        let window = micros.div_euclid(1_000_000) / self.unit;
        let expired = micros.div_euclid(1_000) > count.last_ms.saturating_add(self.unit.saturating_mul(1_000));
        if window != count.window || expired { 0 } else { count.hits }
    }

    /// Returns the limiter for N per one of envoy's units.
    pub fn new(rate: Rate) -> EnvoyRatelimit {
        // Envoy's units are whole seconds (`refuses` takes no other period).
        let unit = (rate.period().as_micros() / 1_000_000).max(1);
        EnvoyRatelimit { limit: rate.count(), unit, state: Count::default() }
    }
}

impl KeyedState for EnvoyRatelimit {
    type State = Count;
    type Keys = super::Apart;

    #[inline]
    fn step(&self, count: &mut Count, now: Timestamp, cost: u64, force: bool) -> Decision {
        let micros = now.as_micros();
        // Go: `UnixNow()` floors to whole seconds; `now / divider` truncates toward zero.
        let window = micros.div_euclid(1_000_000) / self.unit;
        let ms = micros.div_euclid(1_000);
        let expired = ms > count.last_ms.saturating_add(self.unit.saturating_mul(1_000));
        if window != count.window || expired {
            *count = Count { window, hits: 0, last_ms: ms };
        }
        count.hits = count.hits.saturating_add(cost.max(1));
        count.last_ms = ms;
        Decision { passed: force || count.hits <= self.limit, wait: 0 }
    }

    /// A refused hit counts, wherever it was refused.
    fn refuse(&self, state: &mut Self::State, now: Timestamp, cost: u64) {
        self.step(state, now, cost, false);
    }

    /// With no hit counted, or a count the next hit starts again (its window over, or
    /// expired), every later hit counts from nothing, as a fresh key's does.
    fn at_rest(&self, count: &Count, now: Timestamp) -> bool {
        self.counted(count, now) == 0
    }

    /// Envoy's AI gateway asks at arrival with a descriptor's `hits_addend` of 0, which
    /// `GetHitsAddends` keeps at 0 ("check only"): the count stays as it is, and the request
    /// is over the limit only if the count already is above N. (Its `INCRBY` of 0 renews the
    /// key's expiry, which changes no decision outside the window named 0; see above.)
    fn admits_uncharged(&self, count: &mut Count, now: Timestamp) -> bool {
        self.counted(count, now) <= self.limit
    }

    fn state_mut(&mut self) -> &mut Count {
        &mut self.state
    }
}

/// envoyproxy/ratelimit, as `config --for envoy-ratelimit` writes it.
const EXPORT: Export = Export {
    system: "envoy-ratelimit",
    help: "envoyproxy/ratelimit's YAML descriptors",
    burst: BurstRule::Without,
    key: export::any_quoted,
    write,
};

/// The descriptor YAML of envoy's ratelimit service, whose units are one second, minute,
/// hour, day, week, month or year: a rate of another period becomes N a unit in the
/// smallest unit that holds it in whole requests, said in a comment.
fn write(ask: &ExportAsk<'_>) -> String {
    let rate = ask.rate;
    let (n, p) = (i128::from(rate.count()), i128::from(rate.period().as_micros()));
    let mut text = format!("# ratelimit: envoy-ratelimit at {rate}\n");
    // N·10¹²·3.2·10⁷ stays far inside an i128.
    let per_unit = |seconds: i64| n * i128::from(seconds) * 1_000_000;
    let exact = UNITS.iter().find(|&&(_, s)| i128::from(s) * 1_000_000 == p);
    let (unit, count) = match exact {
        Some(&(unit, _)) => (unit, n),
        None => {
            let fits = UNITS.iter().find(|&&(_, s)| per_unit(s) % p == 0 && per_unit(s) >= p);
            let &(unit, s) = fits.unwrap_or(&UNITS[UNITS.len() - 1]);
            let count = (per_unit(s) / p).max(1);
            let _ = writeln!(
                text,
                "# {rate} is not N a unit: {count} a {unit} passes as many on average, but all \
                 of them may come at once in one {unit}'s window"
            );
            (unit, count)
        }
    };
    let key = match ask.key {
        Some(ExportKey::Quoted(key)) => export::quoted(key),
        _ => "generic_key".to_owned(),
    };
    let _ = write!(
        text,
        "domain: ratelimit\ndescriptors:\n  - key: {key}\n    rate_limit:\n      unit: {unit}\n      \
         requests_per_unit: {count}\n"
    );
    text
}

impl Rule for EnvoyRatelimit {
    type Params = super::NoParams;

    #[cfg(test)]
    fn by_the_rule(rate: Rate, _b: u64, events: &[(i128, u64)]) -> Vec<bool> {
        // The hits counted: back from this one, those named for the same window (whole
        // seconds, then Go's truncating division by the unit in seconds), until a gap of more
        // than a unit in ms, when the key had expired. Every hit, passed or not, is kept.
        let (n, p) = (rate.n(), rate.p());
        let mut hits: Vec<(i128, i128)> = Vec::new();
        super::tests::by_rule(events, |_, t, c| {
            hits.push((t, c.max(1)));
            let unit = (p / 1_000_000).max(1);
            let name = |t: i128| t.div_euclid(1_000_000) / unit;
            let mut counted = 0;
            for (i, &(s, c)) in hits.iter().enumerate().rev() {
                let idle = hits.get(i + 1).is_some_and(|&(next, _)| {
                    next.div_euclid(1000) > s.div_euclid(1000) + unit * 1000
                });
                if name(s) != name(t) || idle {
                    break;
                }
                counted += c;
            }
            counted <= n
        })
    }

    const NAME: &'static str = "envoy-ratelimit";
    const HELP: &'static str =
        "envoy's ratelimit service: a window of one unit from the epoch, refused hits counted";
    const USES_BURST: bool = false;
    const SKIPS_EMPTY_KEY: bool = true;
    const MODELS: Option<&'static str> = Some("envoyproxy/ratelimit f2fb157, the Redis fixed window");
    const QUIRKS: Option<&'static str> = Some("windows of one unit only (second, minute, hour, day), aligned to the epoch; every limit of a request counts its hits");
    const PROVEN: Option<&'static str> = Some("a transcription of envoy's ratelimit service, in its own tests");
    const EXPORT: Option<Export> = Some(EXPORT);
    /// `fixed_cache_impl.go`, `getHitsAddend`: without
    /// `STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT`, every limit of a request is incremented.
    const COUNTS_EVERY_LIMIT: bool = true;

    fn refuses(rate: Rate) -> Option<String> {
        let micros = rate.period().as_micros();
        (!UNITS.iter().any(|&(_, unit)| unit * 1_000_000 == micros)).then(|| {
            format!(
                "envoy's ratelimit counts per second, minute, hour, day, week, month (30 days) \
                 or year (365 days), and {rate}'s period is none of them"
            )
        })
    }

    fn new_limit(rate: Rate, _burst: NonZeroU64) -> EnvoyRatelimit {
        EnvoyRatelimit::new(rate)
    }

    fn promise(limit: &Limit) -> String {
        super::FixedWindow::promise(limit)
    }

    fn bound(limit: &Limit) -> Bound {
        super::FixedWindow::bound(limit)
    }


}

#[cfg(test)]
mod tests {
    use super::super::tests::{decisions, secs, weighted};
    use super::*;

    #[test]
    fn refused_hits_count_within_the_unit_window() {
        // 2 per minute, windows from the epoch (GenerateCacheKey: now/60·60). At 10, 20 the
        // count is 1, 2; at 30 it is 3 > 2, refused; at 59 4, refused; at 60 a new window.
        let mut limiter = EnvoyRatelimit::new("2/m".parse().unwrap());
        let got = decisions(&mut limiter, &secs(&[10, 20, 30, 59, 60, 61, 62]));
        assert_eq!(got, [true, true, false, false, true, true, false]);
        assert_eq!(limiter.state.hits, 3, "the refused third hit of the window counts");
    }

    #[test]
    fn hits_are_the_cost_and_a_cost_of_0_is_1() {
        // INCRBY of the hits: 3 then 2 pass 5 per minute; then 1 makes 6, over; a cost of 0
        // is a hits_addend of 1 (GetHitsAddends), over too.
        let mut limiter = EnvoyRatelimit::new("5/m".parse().unwrap());
        let got = weighted(&mut limiter, &[(0, 3), (1, 2), (2, 1), (3, 0)]);
        assert_eq!(got, [true, true, false, false]);
        assert_eq!(limiter.state.hits, 7);
    }

    #[test]
    fn only_envoys_units_are_taken() {
        let refuses = |text: &str| EnvoyRatelimit::refuses(text.parse().unwrap()).is_some();
        assert!(!refuses("5/s") && !refuses("5/m") && !refuses("5/h") && !refuses("5/d"));
        assert!(!refuses("5/7d") && !refuses("5/30d") && !refuses("5/365d"));
        assert!(refuses("5/2m") && refuses("5/90s"));
    }

    #[test]
    fn before_1970_windows_are_named_by_truncation_and_an_idle_key_expires() {
        // 1 a minute. −90 s and −70 s: window −1 (Go: −90/60 = −1, −70/60 = −1), the second
        // over. −30 s: window 0 (−30/60 = 0), which runs to 60 s: at 20 s the count is 2,
        // over (floored windows would have passed it), and at 25 s 3, over: the key, hit 55
        // and 5 s before, lives. At 86 s window 1 begins.
        let mut limiter = EnvoyRatelimit::new("1/m".parse().unwrap());
        let got = decisions(&mut limiter, &secs(&[-90, -70, -30, 20, 25, 86]));
        assert_eq!(got, [true, false, true, false, false, true]);
        // Window 0 idle for more than a unit: −40 s, then 25 s (65 s later), when the key
        // has expired and counts again from 0; a fraction before 1970 floors to the second
        // before it, −1 s: window 0 too.
        let mut limiter = EnvoyRatelimit::new("1/m".parse().unwrap());
        let got = decisions(&mut limiter, &secs(&[-40, 25]));
        assert_eq!(got, [true, true]);
        let mut limiter = EnvoyRatelimit::new("1/m".parse().unwrap());
        let half = Timestamp::from_micros(-500_000).unwrap();
        assert_eq!(decisions(&mut limiter, &[half, secs(&[59])[0]]), [true, false]);
    }
}
