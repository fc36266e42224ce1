//! go-redis/redis_rate: GCRA in a Redis Lua script, in doubles of seconds since 2017.

use std::fmt::Write as _;
use std::num::NonZeroU64;

use super::export::{BurstRule, Export, ExportAsk, ExportKey};
use super::promise::{Bound, Limit};
use super::{Decision, KeyedState, Rule};
use crate::units::rate::Rate;
use crate::units::time::Timestamp;

/// go-redis/redis_rate v10's `AllowN` (its script `script_allow_n.lua`), operation for
/// operation in the doubles its Lua computes in:
///
/// - `period` is Go's `Duration.Seconds()`, a double; the emission interval is
///   `period / rate`, the burst offset `interval · burst`, the increment `interval · n`.
/// - `now` is the server's `TIME` as seconds since 2017-01-01, `(sec − 1483228800) +
///   usec/10⁶`, a double; `tat` is the key's value (a double written exactly) or now, then
///   at least now.
/// - The request is refused if `(now − (tat + increment − offset)) / interval < 0`: a
///   request on the exact boundary can be refused, as the doubles round (30/s refuses some
///   that an exact GCRA passes).
/// - Let through, the key is set to the new tat and expires in ⌈new tat − now⌉ whole
///   seconds, on Redis' millisecond clock (not set at all if that is not above 0).
///
/// The burst is the bucket (Go's `Limit.Burst`; `PerSecond(n)` makes it n).
#[derive(Clone, Debug)]
pub struct RedisRate {
    /// The emission interval, in seconds.
    interval: f64,
    /// `interval · burst`, in seconds.
    offset: f64,
    state: Key,
}

/// One key's value (tat, in seconds since 2017) and the millisecond after which Redis
/// expires it; none while the key is missing.
#[derive(Clone, Copy, Debug, Default)]
pub struct Key(Option<(f64, i64)>);

/// 2017-01-01T00:00:00Z, the script's epoch, in seconds since 1970.
const JAN_1_2017: i64 = 1_483_228_800;

/// `TIME` as the script reads it: seconds since 2017, and µs over 10⁶.
#[allow(clippy::cast_precision_loss)] // As Lua adds them, in doubles.
fn script_now(now: Timestamp) -> f64 {
    let micros = now.as_micros();
    let (sec, usec) = (micros.div_euclid(1_000_000), micros.rem_euclid(1_000_000));
    (sec - JAN_1_2017) as f64 + usec as f64 / 1_000_000.0
}

impl RedisRate {
    /// Returns redis_rate at `rate` per `period` with `burst`.
    #[allow(clippy::cast_precision_loss)] // As Go and Lua convert them.
    pub fn new(rate: Rate, burst: NonZeroU64) -> RedisRate {
        let period = super::traefik::seconds(rate.period().as_micros().saturating_mul(1000));
        let interval = period / rate.count() as f64;
        RedisRate { interval, offset: interval * burst.get() as f64, state: Key::default() }
    }

    /// The key's tat, if Redis still holds it at millisecond `ms`.
    #[inline]
    fn tat(key: &Key, ms: i64) -> Option<f64> {
        key.0.filter(|&(_, expires)| ms <= expires).map(|(tat, _)| tat)
    }
}

impl KeyedState for RedisRate {
    type State = Key;
    type Keys = super::Apart;

    fn step(&self, key: &mut Key, now: Timestamp, cost: u64, force: bool) -> Decision {
        let ms = now.as_micros().div_euclid(1000);
        let now = script_now(now);
        let tat = Self::tat(key, ms).unwrap_or(now).max(now);
        #[allow(clippy::cast_precision_loss)] // As Lua reads Go's int.
        let new_tat = tat + self.interval * cost as f64;
        let diff = now - (new_tat - self.offset);
        let refused = diff / self.interval < 0.0;
        if !refused || force {
            let reset_after = new_tat - now;
            if reset_after > 0.0 {
                // `SET … EX math.ceil(reset_after)`: whole seconds from this millisecond.
                #[allow(clippy::cast_possible_truncation)] // Far below 2⁶³ ms.
                let seconds = reset_after.ceil() as i64;
                *key = Key(Some((new_tat, ms.saturating_add(seconds.saturating_mul(1000)))));
            }
        }
        Decision { passed: force || !refused, wait: 0 }
    }

    /// Once Redis has let the key go, the next request finds it missing, as a fresh key's.
    fn at_rest(&self, key: &Key, now: Timestamp) -> bool {
        Self::tat(key, now.as_micros().div_euclid(1000)).is_none()
    }

    /// A request is let through only with its new tat at most the offset past now, and
    /// its key lives ⌈that⌉ seconds: gone from the millisecond after.
    fn rests_after(&self, last: Timestamp) -> Option<Timestamp> {
        #[allow(clippy::cast_possible_truncation)]
        let seconds = self.offset.ceil() as i64;
        let ms = last.as_micros().div_euclid(1000).checked_add(seconds.checked_mul(1000)?)?;
        Timestamp::from_micros(ms.checked_add(1)?.checked_mul(1000)?)
    }

    fn state_mut(&mut self) -> &mut Key {
        &mut self.state
    }
}

/// redis_rate, as `config --for redis-rate` writes it.
const EXPORT: Export = Export {
    system: "redis-rate",
    help: "go-redis/redis_rate's Limit (Go)",
    burst: BurstRule::FromOne,
    key: super::export::any_quoted,
    write,
};

/// The `Limit` and the call, keyed as asked (a Go string literal reads `quoted`'s escapes).
fn write(ask: &ExportAsk<'_>) -> String {
    let rate = ask.rate;
    let burst = ask.burst.unwrap_or(rate.count());
    let micros = rate.period().as_micros();
    let period = match micros {
        m if m % 1_000_000 == 0 => format!("{} * time.Second", m / 1_000_000),
        m if m % 1000 == 0 => format!("{} * time.Millisecond", m / 1000),
        m => format!("{m} * time.Microsecond"),
    };
    let key = match ask.key {
        Some(ExportKey::Quoted(name)) => super::export::quoted(name),
        _ => "\"ratelimit\"".to_owned(),
    };
    let mut text = format!("// ratelimit: redis-rate at {rate}, burst {burst}\n");
    let _ = write!(
        text,
        "limit := redis_rate.Limit{{Rate: {}, Burst: {burst}, Period: {period}}}\n\
         res, err := limiter.AllowN(ctx, {key}, limit, cost) // res.Allowed > 0: let through\n",
        rate.count()
    );
    text
}

impl Rule for RedisRate {
    type Params = super::NoParams;

    #[cfg(test)]
    fn by_the_rule(rate: Rate, b: u64, events: &[(i128, u64)]) -> Vec<bool> {
        // The script, line by line: TIME in seconds since 2017, tat from the key while it
        // lives (⌈reset⌉ whole seconds from the millisecond it was set), refused when the
        // remaining is below 0.
        #[allow(clippy::cast_precision_loss)]
        let period = (rate.p() / 1_000_000) as f64 + (rate.p() % 1_000_000 * 1000) as f64 / 1e9;
        #[allow(clippy::cast_precision_loss)]
        let (interval, burst) = (period / rate.n() as f64, b as f64);
        let mut key: Option<(f64, i128)> = None;
        events
            .iter()
            .map(|&(t, c)| {
                let ms = t.div_euclid(1000);
                #[allow(clippy::cast_precision_loss)]
                let now = (t.div_euclid(1_000_000) - 1_483_228_800) as f64
                    + t.rem_euclid(1_000_000) as f64 / 1_000_000.0;
                let stored = key.filter(|&(_, until)| ms <= until).map(|(tat, _)| tat);
                let tat = stored.unwrap_or(now).max(now);
                #[allow(clippy::cast_precision_loss)]
                let new_tat = tat + interval * c as f64;
                let allow_at = new_tat - interval * burst;
                let ok = (now - allow_at) / interval >= 0.0;
                if ok && new_tat - now > 0.0 {
                    #[allow(clippy::cast_possible_truncation)]
                    let seconds = (new_tat - now).ceil() as i128;
                    key = Some((new_tat, ms + seconds * 1000));
                }
                ok
            })
            .collect()
    }

    const NAME: &'static str = "redis-rate";
    const HELP: &'static str = "go-redis/redis_rate: GCRA in a Lua script, in doubles of \
                                seconds since 2017; refuses some exact boundaries";
    const USES_BURST: bool = true;
    const MODELS: Option<&'static str> = Some("go-redis/redis_rate v10, script_allow_n.lua");
    const QUIRKS: Option<&'static str> = Some(
        "its doubles refuse some requests on the exact boundary that an exact GCRA passes; the \
         key expires in ⌈reset⌉ whole seconds",
    );
    const PROVEN: Option<&'static str> = Some(
        "a transcription of script_allow_n.lua, line by line, in its own tests (no registry this \
         machine reaches ships the script)",
    );
    const EXPORT: Option<Export> = Some(EXPORT);

    fn new_limit(rate: Rate, burst: NonZeroU64) -> RedisRate {
        RedisRate::new(rate, burst)
    }

    fn bound(limit: &Limit) -> Bound {
        // A double's rounding can let one in a hair early: one more in the bucket.
        Bound::Bucket { burst: limit.burst.saturating_add(1) }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{burst, decisions};
    use super::*;
    use crate::limiter::Gcra;

    #[test]
    fn its_doubles_refuse_some_requests_on_the_exact_boundary() {
        // 20/s with a burst of 1, a request every 50 ms to the µs: each comes exactly when
        // its interval has passed, so an exact GCRA passes them all; the script's seconds
        // since 2017 (about 2.5·10⁸, kept to 3·10⁻⁸ s) and its 0.05 s interval are doubles,
        // and 15,752 of the 39,380 land a hair short.
        let rate: Rate = "20/s".parse().unwrap();
        let start = 1_735_689_600_000_000i64;
        let times: Vec<Timestamp> =
            (0..39_380i64).map(|i| Timestamp::from_micros(start + i * 50_000).unwrap()).collect();
        let exact = decisions(&mut Gcra::new(rate, burst(1)), &times);
        assert!(exact.iter().all(|&p| p));
        let theirs = decisions(&mut RedisRate::new(rate, burst(1)), &times);
        assert_eq!(theirs.iter().filter(|&&p| !p).count(), 15_752);
    }

    #[test]
    fn a_burst_passes_at_once_then_one_an_interval() {
        // 1/s, burst 3: three at once, the fourth at 1 s.
        let mut rr = RedisRate::new("1/s".parse().unwrap(), burst(3));
        let at = |us: i64| Timestamp::from_micros(1_735_689_600_000_000 + us).unwrap();
        let got = decisions(&mut rr, &[at(0), at(0), at(0), at(0), at(999_999), at(1_000_000)]);
        assert_eq!(got, [true, true, true, false, false, true]);
    }
}
