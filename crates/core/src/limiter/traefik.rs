//! Traefik's `rateLimit` middleware: Go's `x/time/rate` in float64, and its `maxDelay` rule.

use super::export::{self, BurstRule, Export, ExportAsk, ExportKey};
use std::num::NonZeroU64;

use super::{Decision, KeyedState, Rule};
use crate::units::rate::Rate;
use crate::units::time::Timestamp;

/// Traefik's in-memory `rateLimit` (`pkg/middlewares/ratelimiter/rate_limiter.go`, `New` and
/// `ServeHTTP`) over `golang.org/x/time/rate` 0.3.0 (`rate.go`: `reserveN`, `advance`,
/// `CancelAt`, `durationFromTokens`, `tokensFromDuration`), in their float64 arithmetic,
/// reproduced operation for operation, since it is that arithmetic that decides:
///
/// - The limit is `average·10⁹ / period_ns` tokens a second, a float64; a source's bucket
///   starts full (`burst` tokens; Traefik's default burst is 1).
/// - Each request reserves a token: tokens ← min(tokens + elapsed·limit, burst) − 1, and
///   waits `⌊10⁹·(−tokens/limit)⌋` ns if that is below 0.
/// - A wait above `maxDelay` (`10⁹ / (2·⌊limit⌋)` ns, or 500 ms below one a second) is
///   refused with 429, and the reservation cancelled: its token comes back. Otherwise the
///   request passes after its wait (the wait is not reported here).
/// - A source's bucket is forgotten after `ttl` whole seconds without a request (2 s at a
///   limit of one a second or more, else 1 + ⌊1/limit⌋ s, in `ttlmap`'s whole seconds),
///   and comes back full. The map is taken to be large enough (Traefik holds 65 536).
#[derive(Clone, Debug)]
pub struct Traefik {
    limit: f64,
    burst: f64,
    /// `maxDelay`, in ns.
    max_delay: i64,
    /// `ttl`, in seconds.
    ttl: i64,
    state: Bucket,
}

/// One source's bucket: its tokens, when they were counted (ns), and the second of its last
/// request; none before the first.
#[derive(Clone, Copy, Debug, Default)]
pub struct Bucket(Option<Tokens>);

/// What a bucket holds.
#[derive(Clone, Copy, Debug)]
pub struct Tokens {
    tokens: f64,
    last: i64,
    second: i64,
}

/// `time.Duration(d).Seconds()`: whole seconds and the rest, each to float64.
#[allow(clippy::cast_precision_loss)] // As Go converts them.
pub(super) fn seconds(nanos: i64) -> f64 {
    (nanos / 1_000_000_000) as f64 + (nanos % 1_000_000_000) as f64 / 1e9
}

impl Traefik {
    /// Returns the middleware at `average` per `period` with `burst`.
    #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)] // As Go does.
    pub fn new(rate: Rate, burst: NonZeroU64) -> Traefik {
        // float64(average·time.Second) / float64(period); refuses() keeps both in an int64
        // (the saturation is never reached), so the limit is at least 10⁹/(2⁶³ − 1), and
        // at most 9.2·10⁹·10⁹/10³ (a period of 1 µs).
        let average = i64::try_from(rate.count()).unwrap_or(i64::MAX).saturating_mul(1_000_000_000);
        let period = rate.period().as_micros().saturating_mul(1000);
        let limit = average as f64 / period as f64;
        // So 1/limit is below 9.3·10⁹ and ⌊limit⌋·2 below 2·10¹⁶: both fit an i64.
        let (max_delay, ttl) = if limit < 1.0 {
            (500_000_000, 1 + (1.0 / limit) as i64)
        } else {
            (1_000_000_000 / ((limit as i64).saturating_mul(2)).max(1), 2)
        };
        Traefik { limit, burst: burst.get() as f64, max_delay, ttl, state: Bucket::default() }
    }

    /// Reserves a token at `now` (one a request, whatever it costs) and cancels it past
    /// `maxDelay`, or always (`Some(true)`: refused elsewhere), or never (`Some(false)`:
    /// charged whatever it would wait).
    fn reserve(&self, bucket: &mut Bucket, now: Timestamp, cancel: Option<bool>) -> Decision {
        let t = now.as_micros().saturating_mul(1000);
        let second = now.as_micros().div_euclid(1_000_000);
        // `advance`: a forgotten or new bucket is full, as a fresh Limiter is.
        let kept = bucket.0.filter(|b| second < b.second + self.ttl);
        let full = kept.map_or(self.burst, |b| {
            let elapsed = t - b.last.min(t);
            (b.tokens + seconds(elapsed) * self.limit).min(self.burst)
        });
        let tokens = full - 1.0;
        // float64 to Duration, as Go converts it. A wait can pass an int64 (periods near
        // the 292 years refuses() allows, or a fleet's forced charges, which take tokens
        // far below 0): Rust's conversion then saturates where Go's is undefined, and the
        // request is refused either way.
        #[allow(clippy::cast_possible_truncation)]
        let wait = if tokens < 0.0 { (1e9 * (-tokens / self.limit)) as i64 } else { 0 };
        if cancel.unwrap_or(wait > self.max_delay) {
            // `CancelAt` at the same instant: no time to advance, and the token back.
            let back = ((tokens + 0.0 * self.limit) + 1.0).min(self.burst);
            *bucket = Bucket(Some(Tokens { tokens: back, last: t, second }));
            return Decision { passed: false, wait: 0 };
        }
        *bucket = Bucket(Some(Tokens { tokens, last: t, second }));
        Decision { passed: true, wait: 0 }
    }
}

/// Traefik, as `config --for traefik` writes it.
const EXPORT: Export = Export {
    system: "traefik",
    help: "Traefik's rateLimit middleware (dynamic configuration, YAML)",
    burst: BurstRule::FromOne,
    key: export::client_or_header,
    write,
};

/// Traefik's `rateLimit` middleware: `average` per `period` (a Go duration, whole), and
/// its burst (Traefik's default is 1); `--algo traefik` replays it, float64 and all.
fn write(ask: &ExportAsk<'_>) -> String {
    let rate = ask.rate;
    let micros = rate.period().as_micros();
    let period = match micros {
        m if m % 1_000_000 == 0 => format!("{}s", m / 1_000_000),
        m if m % 1000 == 0 => format!("{}ms", m / 1000),
        m => format!("{m}us"),
    };
    let burst = ask.burst.unwrap_or(1);
    // Traefik's default source is the client's address; without a key, the request's host
    // (one limit a host: Traefik has none for all requests at once).
    let source = match ask.key {
        Some(ExportKey::Client) => String::new(),
        Some(ExportKey::Header(name)) => {
            format!("        sourceCriterion:\n          requestHeaderName: {name}\n")
        }
        Some(ExportKey::Variable(_) | ExportKey::Quoted(_)) | None => {
            "        sourceCriterion:\n          requestHost: true\n".to_owned()
        }
    };
    format!(
        "# ratelimit: traefik at {rate}, burst {burst} (--algo traefik replays it)\n\
         http:\n  middlewares:\n    ratelimit:\n      rateLimit:\n        average: {}\n        \
         period: {period}\n        burst: {burst}\n{source}",
        rate.count()
    )
}

impl Rule for Traefik {
    type Params = super::NoParams;

    #[cfg(test)]
    fn by_the_rule(rate: Rate, b: u64, events: &[(i128, u64)]) -> Vec<bool> {
        // limit = N·10⁹/P_ns; maxDelay 10⁹/(2·⌊limit⌋) ns, or 0.5 s below 1/s; a bucket
        // idle for ttl whole seconds comes back full. x/time/rate's tokens and when they were
        // counted, in float64, and the second of the bucket's last request.
        let (n, p, b) = (rate.n(), rate.p(), i128::from(b));
        let mut bucket: Option<(f64, i128, i128)> = None;
        super::tests::by_rule(events, |_, t, _| {
            #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)]
            let (limit, burst) = ((n * 1_000_000_000) as f64 / (p * 1000) as f64, b as f64);
            #[allow(clippy::cast_possible_truncation)]
            let (max_delay, ttl) = if limit < 1.0 {
                (500_000_000, 1 + (1.0 / limit) as i128)
            } else {
                (1_000_000_000 / (2 * limit as i128), 2)
            };
            let (ns, second) = (t * 1000, t.div_euclid(1_000_000));
            let tokens = match bucket {
                Some((tokens, last, at)) if second < at + ttl => {
                    let elapsed = ns - last;
                    #[allow(clippy::cast_precision_loss)]
                    let secs = (elapsed / 1_000_000_000) as f64
                        + (elapsed % 1_000_000_000) as f64 / 1e9;
                    (tokens + secs * limit).min(burst) - 1.0
                }
                _ => burst - 1.0,
            };
            #[allow(clippy::cast_possible_truncation)]
            let wait = if tokens < 0.0 { (1e9 * (-tokens / limit)) as i128 } else { 0 };
            let ok = wait <= max_delay;
            bucket = Some((if ok { tokens } else { (tokens + 1.0).min(burst) }, ns, second));
            ok
        })
    }

    const NAME: &'static str = "traefik";
    const HELP: &'static str =
        "Traefik's rateLimit: x/time/rate in float64, refused past maxDelay, buckets forgotten";
    const USES_BURST: bool = true;
    const MODELS: Option<&'static str> = Some("Traefik's rateLimit over golang.org/x/time/rate 0.3.0");
    const QUIRKS: Option<&'static str> = Some("float64 tokens; a wait past maxDelay is refused and its token given back; idle buckets forgotten after whole seconds");
    const PROVEN: Option<&'static str> = Some("Go's golang.org/x/time/rate 0.3.0 (Debian's), as Traefik calls it (tests/cli/traefik.rs)");
    const EXPORT: Option<Export> = Some(EXPORT);
    const OWN_SIZE: Option<super::OwnSize> = Some(super::OwnSize {
        setting: "burst",
        help: "Traefik's rateLimit: burst, in Go's float64 arithmetic (every event kept)",
        finder: |rate, _| Box::new(super::TraefikBurst::new(rate)),
        refuses: <Traefik as Rule>::refuses,
        weighs: true,
        line: |rate, burst| {
            let (average, period) = (rate.count(), rate.period());
            format!("average={average} period={period} burst={burst} refuses none of the events")
        },
        in_replay: false,
    });
    const RATE_WORDS: Option<super::RateWords> = Some(super::RateWords {
        system: "Traefik",
        keys: &["average", "period"],
        how: "average=N, with period=PERIOD unless it is 1s: give average=",
        read: rate_from_words,
        written: rate_as_words,
    });
    const SPENDS_COST: bool = false;
    const DEFAULT_BURST: Option<u64> = Some(1);

    fn refuses(rate: Rate) -> Option<String> {
        if rate.count() > 9_223_372_036 {
            return Some(format!(
                "Traefik multiplies the average by 10⁹ in int64: {rate} is past what it holds"
            ));
        }
        // A Go Duration: int64 nanoseconds, about 292 years.
        (rate.period().as_micros() > i64::MAX / 1000).then(|| {
            format!("Traefik's period is a Go duration, at most 292 years: {rate}'s is longer")
        })
    }

    fn new_limit(rate: Rate, burst: NonZeroU64) -> Traefik {
        Traefik::new(rate, burst)
    }
}

impl KeyedState for Traefik {
    type State = Bucket;
    type Keys = super::Apart;

    fn step(&self, bucket: &mut Bucket, now: Timestamp, _cost: u64, force: bool) -> Decision {
        self.reserve(bucket, now, if force { Some(false) } else { None })
    }

    /// Refused elsewhere: the reservation is made and cancelled, as on the server that
    /// refused it.
    fn refuse(&self, bucket: &mut Bucket, now: Timestamp, _cost: u64) {
        self.reserve(bucket, now, Some(true));
    }

    /// Once Traefik's cache has let the bucket go (its time to live, in whole seconds,
    /// over), the next request finds a new one, as a fresh key's does.
    fn at_rest(&self, bucket: &Bucket, now: Timestamp) -> bool {
        let second = now.as_micros().div_euclid(1_000_000);
        bucket.0.is_none_or(|b| second >= b.second.saturating_add(self.ttl))
    }

    /// The cache lets the bucket go its time to live after the last request's second.
    fn rests_after(&self, last: Timestamp) -> Option<Timestamp> {
        let second = last.as_micros().div_euclid(1_000_000).checked_add(self.ttl)?;
        Timestamp::from_micros(second.checked_mul(1_000_000)?)
    }

    fn state_mut(&mut self) -> &mut Bucket {
        &mut self.state
    }
}

/// Traefik's rate, `average` requests a `period` (1s unless given); `None` without an
/// average.
fn rate_from_words(given: &[(&str, &str)]) -> Option<super::RateRead> {
    let word = |key: &str| given.iter().find(|(k, _)| *k == key).map(|(_, v)| v.trim());
    let average = word("average")?;
    Some(format!("{average}/{}", word("period").unwrap_or("1s")).parse())
}

/// A rate as Traefik writes it: `average=N,period=P`.
#[allow(clippy::unnecessary_wraps)] // The shape every system's writer has.
fn rate_as_words(rate: Rate) -> Option<String> {
    Some(format!("average={},period={}", rate.count(), rate.period()))
}

#[cfg(test)]
mod tests {
    use super::super::tests::{burst, decisions};
    use super::*;

    fn at(ms: &[i64]) -> Vec<Timestamp> {
        ms.iter().map(|&ms| Timestamp::from_micros(ms * 1000).unwrap()).collect()
    }

    #[test]
    fn a_wait_within_max_delay_passes_and_one_past_it_is_refused() {
        // 10/s, burst 1: maxDelay is 10⁹/(2·10) = 50 ms. At 0 the full token goes; at 60 ms
        // 0.6 tokens are there, a wait of 40 ms: it passes (and leaves −0.4); at 70 ms the
        // bucket holds −0.3: a wait of 130 ms, refused, and its token comes back.
        let mut traefik = Traefik::new("10/s".parse().unwrap(), burst(1));
        let got = decisions(&mut traefik, &at(&[0, 60, 70, 160]));
        // At 160 ms: −0.3 + 0.9 = 0.6, a wait of 40 ms: it passes.
        assert_eq!(got, [true, true, false, true]);
    }

    #[test]
    fn below_one_a_second_the_max_delay_is_half_a_second() {
        // 1 per 10 s, burst 1: maxDelay 500 ms, ttl 1 + 10 = 11 s. At 0 it passes; at 9.6 s
        // 0.96 tokens, a wait of 400 ms: passes; at 19.4 s, −0.04 + 0.98 = 0.94, a wait of
        // 600 ms: refused.
        let mut traefik = Traefik::new("1/10s".parse().unwrap(), burst(1));
        let got = decisions(&mut traefik, &at(&[0, 9_600, 19_400]));
        assert_eq!(got, [true, true, false]);
        assert_eq!((traefik.max_delay, traefik.ttl), (500_000_000, 11));
    }

    #[test]
    fn a_period_past_a_go_duration_or_an_average_past_int64_is_refused() {
        let refuses = |text: &str| Traefik::refuses(text.parse().unwrap());
        assert_eq!(refuses("1/100000d"), None);
        let long = refuses("1/110000d").unwrap();
        assert_eq!(long, "Traefik's period is a Go duration, at most 292 years: 1/110000d's is longer");
        assert!(refuses("9223372037/s").is_some());
    }

    #[test]
    fn a_bucket_idle_for_its_ttl_comes_back_full() {
        // 1/s, burst 5: ttl 2 s. Five at 0 empty it; a sixth at 0 would wait 1 s > 500 ms.
        // At 2 s (two whole seconds on) the bucket is forgotten and full again: five pass,
        // where the kept bucket would hold only 2 tokens.
        let mut traefik = Traefik::new("1/s".parse().unwrap(), burst(5));
        let times = at(&[0, 0, 0, 0, 0, 0, 2_000, 2_000, 2_000, 2_000, 2_000]);
        let got = decisions(&mut traefik, &times);
        assert_eq!(got, [true, true, true, true, true, false, true, true, true, true, true]);
    }
}
