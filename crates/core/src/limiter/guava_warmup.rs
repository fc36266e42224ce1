//! Guava's `RateLimiter` with a warm-up, SmoothWarmingUp: it starts cold and full, and
//! spends stored permits slower than the stable rate.

use std::num::NonZeroU64;

use super::export::{BurstRule, Export};
use super::guava::{Curve, GUAVA_WORDS, Smooth};
use super::params::{ParamError, Parameters};
use super::promise::{Bound, Limit};
use super::{Decision, KeyedState, Rule};
use crate::units::rate::Rate;
use crate::units::time::{Span, Timestamp};

/// Guava's `RateLimiter.create(permitsPerSecond, warmupPeriod, unit)` (Guava 31.1,
/// `SmoothWarmingUp`; `cold-factor=` is the package-private factory's `coldFactor`, 3 in
/// the public one), asked `tryAcquire(cost, 0, MICROSECONDS)`, one limiter a key made at its
/// first request, in Java's doubles:
///
/// - With I the stable interval and w the warm-up (µs): `thresholdPermits` = 0.5·w/I,
///   `maxPermits` = threshold + 2·w/(I + coldFactor·I); idleness stores a permit every
///   w/maxPermits µs. It **starts full**, that is cold.
/// - Permits stored above the threshold cost time to spend, on a line from I to
///   coldFactor·I: a cold limiter passes requests *slower* than the stable rate, and warms
///   as it is used. Like SmoothBursty, a request passes whenever the next free ticket has
///   come, and pays later.
///
/// Its quirks are Guava's own: at 10/s with a 500 ms warm-up, a request every 100 ms
/// alternates between passing and not, for ever (guava#3552); with a warm-up of 0, the
/// stored permits become NaN after the first idle gap, and it stops limiting (guava#2730).
#[derive(Clone, Debug)]
pub struct GuavaWarmup {
    rate: Rate,
    curve: Curve,
    state: Smooth,
}

/// SmoothWarmingUp's parameters: `warmup=DUR` (the rate's period unless given) and
/// `cold-factor=F` (3 unless given).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WarmupParams {
    /// The warm-up period; the rate's period if `None`.
    pub warmup: Option<Span>,
    /// The cold factor, the bits of a double; 3 if `None`.
    pub cold_factor: Option<u64>,
}

impl WarmupParams {
    /// The cold factor, as Java reads the decimal written.
    fn cold(self) -> f64 {
        self.cold_factor.map_or(3.0, f64::from_bits)
    }
}

impl std::fmt::Display for WarmupParams {
    /// `warmup=DUR,cold-factor=F`, each only if given.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut words = Vec::new();
        if let Some(warmup) = self.warmup {
            words.push(format!("warmup={}", warmup.compact()));
        }
        if self.cold_factor.is_some() {
            words.push(format!("cold-factor={}", self.cold()));
        }
        f.write_str(&words.join(","))
    }
}

impl Parameters for WarmupParams {
    const KEYS: &'static [&'static str] = &["warmup", "cold-factor"];

    fn parse(given: &[(&str, Option<&str>)]) -> Result<WarmupParams, ParamError> {
        let mut params = WarmupParams::default();
        for &(key, value) in given {
            let bad = |why| ParamError::Value {
                key: key.into(),
                value: value.unwrap_or_default().into(),
                why,
            };
            match key {
                "warmup" => {
                    let why = "is not a length of time, such as 500ms or 3s (0 for none)";
                    let span = match value {
                        Some("0") => Span::from_micros(0),
                        Some(text) => text.parse::<Span>().ok(),
                        None => None,
                    };
                    if params.warmup.replace(span.ok_or_else(|| bad(why))?).is_some() {
                        return Err(ParamError::Conflict("warmup= is given twice"));
                    }
                }
                "cold-factor" => {
                    let why = "is not a number of 1 or more, such as 3 or 2.5";
                    let factor = value.and_then(|v| v.trim().parse::<f64>().ok());
                    let factor = factor.filter(|f| f.is_finite() && *f >= 1.0 && *f <= 1e6);
                    let bits = factor.ok_or_else(|| bad(why))?.to_bits();
                    if params.cold_factor.replace(bits).is_some() {
                        return Err(ParamError::Conflict("cold-factor= is given twice"));
                    }
                }
                _ => return Err(ParamError::NotMine(key.to_owned())),
            }
        }
        Ok(params)
    }

    fn shown(&self) -> Option<String> {
        Some(self.to_string()).filter(|s| !s.is_empty())
    }
}

impl GuavaWarmup {
    /// Returns SmoothWarmingUp at N per P, warming up over `warmup` µs with `cold` as its
    /// cold factor.
    pub fn new(rate: Rate, warmup: i64, cold: f64) -> GuavaWarmup {
        let (_, stable) = Curve::rates(rate);
        #[allow(clippy::cast_precision_loss)] // As Java widens the warm-up's long.
        let w = warmup as f64;
        let cold_interval = stable * cold;
        let threshold = 0.5 * w / stable;
        let max = threshold + 2.0 * w / (stable + cold_interval);
        let slope = (cold_interval - stable) / (max - threshold);
        let curve = Curve {
            stable,
            max,
            cool_down: w / max,
            initial: max,
            warm: Some((threshold, slope)),
        };
        GuavaWarmup { rate, curve, state: Smooth::default() }
    }
}

impl KeyedState for GuavaWarmup {
    type State = Smooth;
    type Keys = super::Apart;

    #[inline]
    fn step(&self, state: &mut Smooth, now: Timestamp, cost: u64, force: bool) -> Decision {
        self.curve.try_acquire(state, now, cost, force)
    }

    fn state_mut(&mut self) -> &mut Smooth {
        &mut self.state
    }
}

/// Guava with a warm-up, as `config --for guava-warmup` writes it.
const EXPORT: Export = Export {
    system: "guava-warmup",
    help: "Guava's RateLimiter with a warm-up (Java)",
    burst: BurstRule::Without,
    key: super::guava::any_key,
    write: super::guava::write,
};

impl Rule for GuavaWarmup {
    type Params = WarmupParams;

    #[cfg(test)]
    fn by_the_rule(rate: Rate, _b: u64, events: &[(i128, u64)]) -> Vec<bool> {
        // Warmed up over one period, cold factor 3: the integral of the throttling line
        // over the permits taken, in the same doubles.
        #[allow(clippy::cast_precision_loss)]
        let (w, (_, stable)) = (rate.p() as f64, Curve::rates(rate));
        let threshold = 0.5 * w / stable;
        let max = threshold + 2.0 * w / (stable + 3.0 * stable);
        let slope = (3.0 * stable - stable) / (max - threshold);
        let (mut made, mut next, mut stored) = (None, 0i128, max);
        events
            .iter()
            .map(|&(t, c)| {
                let t = t - *made.get_or_insert(t);
                let ok = next <= t;
                if ok && c > 0 {
                    if t > next {
                        #[allow(clippy::cast_precision_loss)]
                        let idle = (t - next) as f64 / (w / max);
                        stored = max.min(stored + idle);
                        next = t;
                    }
                    #[allow(clippy::cast_precision_loss)]
                    let c = c as f64;
                    let spend = c.min(stored);
                    let above = stored - threshold;
                    let mut micros = 0i128;
                    let mut rest = spend;
                    if above > 0.0 {
                        let taken = above.min(rest);
                        // Guava's permitsToTime(above) + permitsToTime(above − taken).
                        let length = (stable + above * slope) + (stable + (above - taken) * slope);
                        #[allow(clippy::cast_possible_truncation)]
                        let part = (taken * length / 2.0) as i64;
                        micros = i128::from(part);
                        rest -= taken;
                    }
                    #[allow(clippy::cast_possible_truncation)]
                    let parts = [(stable * rest) as i64, ((c - spend) * stable) as i64];
                    next += micros + i128::from(parts[0]) + i128::from(parts[1]);
                    stored -= spend;
                }
                ok
            })
            .collect()
    }

    const NAME: &'static str = "guava-warmup";
    const HELP: &'static str = "Guava's RateLimiter with a warm-up (SmoothWarmingUp): starts \
                                cold and full, warmup=DUR (the period), cold-factor=F (3)";
    const USES_BURST: bool = false;
    const MODELS: Option<&'static str> =
        Some("Guava 31.1 (Debian's libguava-java), SmoothWarmingUp");
    const QUIRKS: Option<&'static str> = Some("starts cold and full; at 10/s with 500 ms it alternates for minutes (guava#3552); a zero warm-up stops limiting (guava#2730)");
    const PROVEN: Option<&'static str> = Some("Debian's libguava-java 31.1 with OpenJDK 17, a fake SleepingStopwatch (tests/cli/guava_peer.rs)");
    const RATE_WORDS: Option<super::RateWords> = Some(GUAVA_WORDS);
    const EXPORT: Option<Export> = Some(EXPORT);

    fn new_limit(rate: Rate, _burst: NonZeroU64) -> GuavaWarmup {
        GuavaWarmup::new(rate, rate.period().as_micros(), 3.0)
    }

    fn with_params(self, params: WarmupParams) -> GuavaWarmup {
        let warmup = params.warmup.unwrap_or(self.rate.period());
        GuavaWarmup::new(self.rate, warmup.as_micros(), params.cold())
    }

    /// Its stored permits, at most maxPermits (N, with the default warm-up of one period
    /// and cold factor 3), and one paid later; spent no faster than the stable rate.
    fn promise(limit: &Limit) -> String {
        let n = limit.rate.count();
        format!("at most maxPermits + 1 + T·{} in any interval T ({n} + 1 warmed up over one period)", limit.rate)
    }

    fn bound(limit: &Limit) -> Bound {
        Bound::Bucket { burst: limit.rate.count().saturating_add(1) }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::decisions;
    use super::*;

    fn every(step_ms: i64, count: i64) -> Vec<Timestamp> {
        (0..count).map(|i| Timestamp::from_micros(i * step_ms * 1000).unwrap()).collect()
    }

    #[test]
    fn at_10_a_second_with_half_a_second_of_warm_up_it_alternates() {
        // guava#3552: a request every 100 ms, at a stable 10/s. Cold, one in three passes;
        // warmer, every other one, for most of two minutes; only then all. (Guava 31.1's
        // own decisions, the same in the peer test.)
        let mut guava = GuavaWarmup::new("10/s".parse().unwrap(), 500_000, 3.0);
        let got = decisions(&mut guava, &every(100, 3000));
        let text: String = got.iter().map(|&p| if p { '1' } else { '0' }).collect();
        assert_eq!(&text[..40], "1001001001001001001001010101010101010101");
        assert_eq!(got.iter().filter(|&&p| p).count(), 2397);
        assert!(text.ends_with(&"1".repeat(100)));
    }

    #[test]
    fn a_zero_warm_up_stops_limiting() {
        // guava#2730: with no warm-up, the first idle gap makes the stored permits NaN
        // (0/0 permits a µs), and from then on every request passes. At 1/s, a request
        // every 7 ms: the first passes, the next 142 wait for 1 s, and at 1.001 s the gap
        // comes.
        let mut guava = GuavaWarmup::new("1/s".parse().unwrap(), 0, 3.0);
        let got = decisions(&mut guava, &every(7, 1000));
        assert!(got[0] && got[1..143].iter().all(|&p| !p));
        assert!(got[143..].iter().all(|&p| p));
    }

    #[test]
    fn its_parameters_are_a_warm_up_and_a_cold_factor() {
        let params = WarmupParams::parse(&[("warmup", Some("500ms")), ("cold-factor", Some("2.5"))]);
        assert_eq!(params.unwrap().to_string(), "warmup=500ms,cold-factor=2.5");
        assert!(WarmupParams::parse(&[("cold-factor", Some("0.5"))]).is_err());
        assert!(WarmupParams::parse(&[("warmup", Some("soon"))]).is_err());
    }
}
