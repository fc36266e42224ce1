//! envoy's local rate limit filter on its atomic token bucket: one float64, the time it
//! was empty.

use std::fmt::Write as _;

use super::export::{BurstRule, Export, ExportAsk, KeyRefused};
use std::num::NonZeroU64;

use super::{Decision, KeyedState, Rule};
use crate::units::rate::Rate;
use crate::units::time::Timestamp;

/// The smallest fill rate envoy takes: one token a year (`kMinFillRate`).
const MIN_FILL_RATE: f64 = 1.0 / (365.0 * 24.0 * 60.0 * 60.0);

/// envoy's `local_ratelimit` with `max_tokens` (the burst), `tokens_per_fill` (N) and
/// `fill_interval` (P), on the atomic bucket (`AtomicTokenBucket` in
/// `source/extensions/filters/common/local_ratelimit/local_ratelimit_impl.cc`, over
/// `AtomicTokenBucketImpl::consume` in `source/common/common/token_bucket_impl.h`, after
/// folly's `TokenBucket`), in its float64:
///
/// - The fill rate is `tokens_per_fill / (fill_interval_ms / 1000)` tokens a second.
/// - The bucket is one number, the time it was empty; at `now` it holds
///   `min(max_tokens, (now − time)·rate)`. A request needs one token: with less than 1 it
///   is refused and nothing changes, else `time ← now − (tokens − 1)/rate`.
/// - The bucket is made full when the filter is: long before the first event, here.
///
/// envoy reads its monotonic clock, whose origin a log does not record; this model reads
/// the event's time in seconds since the epoch, so where a float rounds at a boundary, it
/// may round otherwise. The timer bucket envoy uses unless
/// `envoy.reloadable_features.no_timer_based_rate_limit_token_bucket` is set adds
/// `tokens_per_fill` at each `fill_interval` from the filter's creation, a phase no log
/// records either; it is not modelled. One token a request: it takes no cost (`SPENDS_COST`).
#[derive(Clone, Debug)]
pub struct EnvoyLocal {
    max_tokens: f64,
    rate: f64,
    state: Bucket,
}

/// The time (s) the bucket was empty; none while it is as full as when made.
#[derive(Clone, Copy, Debug, Default)]
pub struct Bucket(Option<f64>);

impl EnvoyLocal {
    /// Returns the filter at N per P (P whole milliseconds, at least 50) with `burst` as
    /// `max_tokens`.
    #[allow(clippy::cast_precision_loss)] // As C++ converts them: exact for these sizes.
    pub fn new(rate: Rate, burst: NonZeroU64) -> EnvoyLocal {
        let interval = (rate.period().as_micros() / 1000) as f64 / 1000.0;
        let fill = (rate.count() as f64 / interval).max(MIN_FILL_RATE);
        EnvoyLocal { max_tokens: burst.get() as f64, rate: fill, state: Bucket::default() }
    }
}

impl KeyedState for EnvoyLocal {
    type State = Bucket;
    type Keys = super::Apart;

    #[allow(clippy::cast_precision_loss)] // Seconds as a double, as envoy reads them.
    fn step(&self, bucket: &mut Bucket, now: Timestamp, _cost: u64, force: bool) -> Decision {
        let now = now.as_micros() as f64 / 1e6;
        let tokens = bucket.0.map_or(self.max_tokens, |empty| {
            self.max_tokens.min((now - empty) * self.rate)
        });
        if tokens < 1.0 && !force {
            return Decision { passed: false, wait: 0 };
        }
        *bucket = Bucket(Some(now - (tokens - 1.0) / self.rate));
        Decision { passed: true, wait: 0 }
    }

    /// Once the bucket has refilled, it reads full until a request, as a fresh one does
    /// (the refill, in doubles as envoy's, grows with the time).
    #[allow(clippy::cast_precision_loss)] // Seconds as a double, as envoy reads them.
    fn at_rest(&self, bucket: &Bucket, now: Timestamp) -> bool {
        let now = now.as_micros() as f64 / 1e6;
        bucket.0.is_none_or(|empty| (now - empty) * self.rate >= self.max_tokens)
    }

    fn state_mut(&mut self) -> &mut Bucket {
        &mut self.state
    }
}

/// envoy's local_ratelimit, as `config --for envoy-local` writes it.
const EXPORT: Export = Export {
    system: "envoy-local",
    help: "envoy's local_ratelimit filter's token bucket",
    burst: BurstRule::FromOne,
    key: |_| {
        Err(KeyRefused::NoKeys(
            "envoy's local_ratelimit is one bucket for all the requests it sees, and takes no key",
        ))
    },
    write,
};

/// envoy's `local_ratelimit` token bucket: `max_tokens` (the burst, default N),
/// `tokens_per_fill` (N) and `fill_interval` (P, whole milliseconds, at least 50).
fn write(ask: &ExportAsk<'_>) -> String {
    let rate = ask.rate;
    let ms = rate.period().as_micros() / 1000;
    let mut text = format!("# ratelimit: envoy-local at {rate} (--algo envoy-local replays it)\n");
    if let Some(why) = <EnvoyLocal as Rule>::refuses(rate) {
        let _ = writeln!(text, "# {why}");
    }
    let interval = match ms.max(50) {
        ms if ms % 1000 == 0 => format!("{}s", ms / 1000),
        ms => format!("{}.{:03}s", ms / 1000, ms % 1000),
    };
    let burst = ask.burst.unwrap_or(rate.count());
    let _ = write!(
        text,
        "token_bucket:\n  max_tokens: {burst}\n  tokens_per_fill: {}\n  fill_interval: {interval}\n",
        rate.count()
    );
    text
}

impl Rule for EnvoyLocal {
    type Params = super::NoParams;

    #[cfg(test)]
    fn by_the_rule(rate: Rate, b: u64, events: &[(i128, u64)]) -> Vec<bool> {
        // The time (s, float64) the bucket was empty.
        let (n, p, b) = (rate.n(), rate.p(), i128::from(b));
        let mut empty: Option<f64> = None;
        super::tests::by_rule(events, |_, t, _| {
            #[allow(clippy::cast_precision_loss)]
            let (rate, now, most) = (
                (n as f64 / ((p / 1000) as f64 / 1000.0)).max(1.0 / 31_536_000.0),
                t as f64 / 1e6,
                b as f64,
            );
            let tokens = empty.map_or(most, |at| most.min((now - at) * rate));
            let ok = tokens >= 1.0;
            if ok {
                empty = Some(now - (tokens - 1.0) / rate);
            }
            ok
        })
    }

    const NAME: &'static str = "envoy-local";
    const HELP: &'static str =
        "envoy's local rate limit, atomic bucket: min(max, (now − time)·rate) in float64";
    const USES_BURST: bool = true;
    const MODELS: Option<&'static str> = Some("envoy's local_ratelimit token bucket");
    const QUIRKS: Option<&'static str> = Some("float64 tokens; fill_interval whole milliseconds, at least 50");
    const PROVEN: Option<&'static str> = Some("a transcription of envoy's AtomicTokenBucketImpl, in its own tests");
    const EXPORT: Option<Export> = Some(EXPORT);
    const SPENDS_COST: bool = false;

    fn refuses(rate: Rate) -> Option<String> {
        let micros = rate.period().as_micros();
        if micros % 1000 != 0 || micros < 50_000 {
            return Some(format!(
                "envoy's fill_interval is whole milliseconds, at least 50, and {rate}'s is not"
            ));
        }
        (rate.count() > u64::from(u32::MAX))
            .then(|| format!("envoy's tokens_per_fill is 32 bits: {rate} counts more"))
    }

    fn new_limit(rate: Rate, burst: NonZeroU64) -> EnvoyLocal {
        EnvoyLocal::new(rate, burst)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{burst, decisions};
    use super::*;

    fn at(ms: &[i64]) -> Vec<Timestamp> {
        ms.iter().map(|&ms| Timestamp::from_micros(ms * 1000).unwrap()).collect()
    }

    #[test]
    fn one_token_a_request_from_a_bucket_kept_as_the_time_it_was_empty() {
        // 1 per second, max_tokens 2. Full at 0: two pass (time = 0 − 1/1, then 0 − 0/1 =
        // 0); a third at 0 finds min(2, 0·1) = 0 tokens, refused. At 0.5 s, 0.5 tokens:
        // refused; at 1 s, exactly 1: passes (time = 1).
        let mut envoy = EnvoyLocal::new("1/s".parse().unwrap(), burst(2));
        let got = decisions(&mut envoy, &at(&[0, 0, 0, 500, 1_000, 1_999, 3_000]));
        // At 1.999 s: 0.999 tokens, refused; at 3 s: 2 (the bucket is full again).
        assert_eq!(got, [true, true, false, false, true, false, true]);
    }

    #[test]
    fn the_fill_rate_is_tokens_per_fill_over_the_interval_in_seconds() {
        // 3 per 1.5 s: 2 tokens a second. max_tokens 1: a request every 0.5 s passes, one
        // at 0.499 s after it does not.
        let mut envoy = EnvoyLocal::new("3/1500ms".parse().unwrap(), burst(1));
        assert_eq!(envoy.rate, 2.0);
        let got = decisions(&mut envoy, &at(&[0, 500, 999, 1_000]));
        assert_eq!(got, [true, true, false, true]);
        let refuses = |text: &str| EnvoyLocal::refuses(text.parse().unwrap()).is_some();
        assert!(refuses("1/40ms") && refuses("1/1500us") && !refuses("1/50ms"));
    }
}
