//! rate-limiter-flexible's `RateLimiterMemory`: a window opened by the first consume, in
//! JavaScript's doubles of milliseconds, refused points counted, and `blockDuration`.

use std::fmt::Write as _;
use std::num::NonZeroU64;

use super::export::{BurstRule, Export, ExportAsk, ExportKey};
use super::express_rate_limit::{NODE_TIMEOUT_MAX, millisecond, node_window};
use super::params::{ParamError, Parameters};
use super::promise::{Bound, Limit};
use super::{Decision, KeyedState, Params, Rule};
use crate::units::rate::Rate;
use crate::units::time::{Span, Timestamp};

/// rate-limiter-flexible's `RateLimiterMemory` (11.4.0: `RateLimiterMemory.consume`,
/// `MemoryStorage.incrby` and `set`), in its own double arithmetic, since it decides:
///
/// - `duration` is seconds, a double (the rate's period P: `P/10⁶` s, as JavaScript reads
///   the decimal), and a window lasts `duration·1000` ms, a double. The clock is
///   `Date.now()`, whole milliseconds.
/// - `consume(key, c)` adds c to the key's record while `expiresAt − now > 0`; else it
///   starts a new record of c that expires at `now + duration·1000`. Refused points count.
/// - The consume passes if the record's points are then at most `points` (N).
/// - With `blockDuration` (`block=DUR`), the consume that first goes over (its record was
///   at most N before it) rewrites the record to expire `blockDuration·1000` ms from now:
///   every consume until then is refused, and counted.
///
/// With `store=redis` (`RateLimiterRedis`, its Lua `SET key 0 EX s NX`, `INCRBY`, `PTTL`,
/// and a block's `SET key points EX s`), a window or a block lasts `⌊ms/1000⌋` whole seconds
/// on Redis' clock, through its last millisecond (Redis expires a key once its clock is past
/// it): 1.5 s is 1 s, and a window under a second never ends.
///
/// Node's timers fire at most 2³¹ − 1 ms apart: a longer duration or block is refused.
#[derive(Clone, Debug)]
pub struct RateLimiterFlexible {
    points: u64,
    /// `duration·1000`, in ms.
    duration: f64,
    /// `blockDuration·1000`, in ms; 0 for none.
    block: f64,
    /// Whether its store is Redis, whose keys expire in whole seconds.
    redis: bool,
    state: Record,
}

/// rate-limiter-flexible's own parameters: `store=memory|redis` and `block=DUR`, its
/// `blockDuration`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlexibleParams {
    /// How long a key is blocked after its first overrun; none if zero.
    pub block: Option<Span>,
    /// Whether it is `RateLimiterRedis` rather than `RateLimiterMemory`.
    pub redis: bool,
}

impl std::fmt::Display for FlexibleParams {
    /// `store=redis` and `block=DUR`, each only if given.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut words = Vec::new();
        if self.redis {
            words.push("store=redis".to_owned());
        }
        if let Some(block) = self.block {
            words.push(format!("block={}", block.compact()));
        }
        f.write_str(&words.join(","))
    }
}

/// Reads `block=DUR` (a length of time; 0 for none), the one parameter of the Node
/// limiters that block a key after it goes over.
pub(super) fn block_param(given: &[(&str, Option<&str>)]) -> Result<Option<Span>, ParamError> {
    let mut block = None;
    for (i, &(key, value)) in given.iter().enumerate() {
        if key != "block" {
            return Err(ParamError::NotMine(key.to_owned()));
        }
        if i > 0 {
            return Err(ParamError::Conflict("block= is given twice"));
        }
        let why = "is not a length of time whole in milliseconds, such as 60s or 1500ms";
        let span = match value {
            Some("0") => None,
            Some(text) => Some(text.parse::<Span>().ok().filter(|s| s.as_micros() % 1000 == 0)),
            None => Some(None),
        };
        block = match span {
            None => None,
            Some(Some(span)) if span.is_zero() => None,
            Some(Some(span)) if span.as_micros() <= NODE_TIMEOUT_MAX => Some(span),
            Some(_) => {
                let value = value.unwrap_or_default().to_owned();
                return Err(ParamError::Value { key: key.into(), value, why });
            }
        };
    }
    Ok(block)
}


impl Parameters for FlexibleParams {
    const KEYS: &'static [&'static str] = &["store", "block"];

    fn parse(given: &[(&str, Option<&str>)]) -> Result<FlexibleParams, ParamError> {
        let (store, rest): (Vec<_>, Vec<_>) = given.iter().partition(|(key, _)| *key == "store");
        let redis = match store[..] {
            [] | [(_, Some("memory"))] => false,
            [(_, Some("redis"))] => true,
            [(_, value)] => {
                let value = value.unwrap_or_default().to_owned();
                let why = "is not memory (RateLimiterMemory) or redis (RateLimiterRedis)";
                return Err(ParamError::Value { key: "store".into(), value, why });
            }
            _ => return Err(ParamError::Conflict("store= is given twice")),
        };
        Ok(FlexibleParams { block: block_param(&rest)?, redis })
    }

    fn shown(&self) -> Option<String> {
        Some(self.to_string()).filter(|shown| !shown.is_empty())
    }
}

/// A key's record: its points and when it expires (ms, a double); none before the first
/// consume.
#[derive(Clone, Copy, Debug, Default)]
pub struct Record(Option<(u64, f64)>);

/// A length of time in µs as rate-limiter-flexible keeps it: seconds, a double, times 1000.
#[allow(clippy::cast_precision_loss)] // As JavaScript reads the seconds a user writes.
fn milliseconds(micros: i64) -> f64 {
    (micros as f64 / 1e6) * 1000.0
}

/// `Date.now()` at `now`, as a JavaScript number.
#[allow(clippy::cast_precision_loss)] // Exact: whole milliseconds are far below 2⁵³.
fn date_now(now: Timestamp) -> f64 {
    (millisecond(now) / 1000) as f64
}

impl RateLimiterFlexible {
    /// Returns the limiter at `points` per `duration`, without a block.
    pub fn new(rate: Rate) -> RateLimiterFlexible {
        RateLimiterFlexible {
            points: rate.count(),
            duration: milliseconds(rate.period().as_micros()),
            block: 0.0,
            redis: false,
            state: Record::default(),
        }
    }

    /// When a record made at `now` (ms) for `ms` expires: `now + ms` in memory; in Redis,
    /// `EX ⌊ms/1000⌋` whole seconds, the key living through its last millisecond (Redis
    /// expires a key once its clock is past it), or never if that is 0 seconds.
    #[allow(clippy::cast_precision_loss)] // Whole milliseconds, far below 2⁵³.
    fn expiry(&self, now: f64, ms: f64) -> f64 {
        if !self.redis {
            return now + ms;
        }
        match (ms / 1000.0).floor() {
            0.0 => f64::INFINITY,
            seconds => now + seconds * 1000.0 + 1.0,
        }
    }

    /// The record's points, if it has not expired at `now` (ms).
    #[inline]
    fn live(record: &Record, now: f64) -> Option<u64> {
        let (points, expires) = record.0?;
        (expires - now > 0.0).then_some(points)
    }
}

impl KeyedState for RateLimiterFlexible {
    type State = Record;
    type Keys = super::Apart;

    #[inline]
    fn step(&self, record: &mut Record, now: Timestamp, cost: u64, force: bool) -> Decision {
        let now = date_now(now);
        // `incrby`: into the live record, or a new one (Redis: `SET … EX s NX`, `INCRBY`,
        // and `EXPIRE` if the key had none).
        let consumed = match Self::live(record, now) {
            Some(points) => {
                let consumed = points.saturating_add(cost);
                let expires = record.0.map_or(f64::INFINITY, |(_, expires)| expires);
                let expires = match self.redis && expires.is_infinite() {
                    true => self.expiry(now, self.duration),
                    false => expires,
                };
                record.0 = Some((consumed, expires));
                consumed
            }
            None => {
                record.0 = Some((cost, self.expiry(now, self.duration)));
                cost
            }
        };
        let passed = consumed <= self.points;
        // Blocked only the first time it goes over: its record was at most N before.
        if !passed && !force && self.block > 0.0 && consumed - cost <= self.points {
            record.0 = Some((consumed, self.expiry(now, self.block)));
        }
        Decision { passed: force || passed, wait: 0 }
    }

    /// Refused points count, wherever they were refused.
    fn refuse(&self, record: &mut Record, now: Timestamp, cost: u64) {
        self.step(record, now, cost, false);
    }

    /// Once the record has expired, the next consume starts one, as a fresh key's does.
    fn at_rest(&self, record: &Record, now: Timestamp) -> bool {
        Self::live(record, date_now(now)).is_none()
    }

    /// The last consume's record expires a duration or a block after its millisecond, at
    /// most: at the first whole millisecond not before it. A Redis key of less than a
    /// second never expires.
    fn rests_after(&self, last: Timestamp) -> Option<Timestamp> {
        let now = date_now(last);
        let mut expires = self.expiry(now, self.duration);
        if self.block > 0.0 {
            expires = expires.max(self.expiry(now, self.block));
        }
        if !expires.is_finite() {
            return None;
        }
        #[allow(clippy::cast_possible_truncation)] // Below 2⁵³: both terms are.
        let ms = expires.ceil() as i64;
        Timestamp::from_micros(ms.checked_mul(1000)?)
    }

    fn state_mut(&mut self) -> &mut Record {
        &mut self.state
    }
}

/// A rate in rate-limiter-flexible's options: `points` per `duration` seconds (1 unless
/// given, decimals allowed); `None` without points.
fn rate_from_words(given: &[(&str, &str)]) -> Option<super::RateRead> {
    let word = |key: &str| given.iter().find(|(k, _)| *k == key).map(|(_, v)| v.trim());
    let points = word("points")?;
    let period = decimal_seconds(word("duration").unwrap_or("1"));
    Some(format!("{points}/{period}").parse())
}

/// Decimal seconds (`1.5`) as a period the rate parser reads (`1500000us`); text it cannot
/// read is passed on, for the parser to refuse.
pub(super) fn decimal_seconds(text: &str) -> String {
    match crate::units::decimal::parse_exact(text.as_bytes(), 6) {
        Ok(micros) if micros >= 0 => format!("{micros}us"),
        _ => format!("{text}s"),
    }
}

/// A rate as rate-limiter-flexible's options: `points=N,duration=S`.
fn rate_as_words(rate: Rate) -> Option<String> {
    Some(format!("points={},duration={}", rate.count(), seconds_text(rate.period())))
}

/// A length of time as decimal seconds: `1.5`, `3600`.
fn seconds_text(span: Span) -> String {
    let micros = span.as_micros();
    let (whole, rest) = (micros / 1_000_000, micros % 1_000_000);
    match rest {
        0 => whole.to_string(),
        _ => format!("{whole}.{rest:06}").trim_end_matches('0').to_owned(),
    }
}

/// rate-limiter-flexible, as `config --for rate-limiter-flexible` writes it.
const EXPORT: Export = Export {
    system: "rate-limiter-flexible",
    help: "rate-limiter-flexible's RateLimiterMemory (JavaScript)",
    burst: BurstRule::Without,
    key: super::express_rate_limit::client_or_quoted,
    write,
};

/// The limiter and its consume, keyed by what was asked.
fn write(ask: &ExportAsk<'_>) -> String {
    let rate = ask.rate;
    let params = match ask.params {
        Params::RateLimiterFlexible(params) => *params,
        _ => FlexibleParams::default(),
    };
    let block = params.block;
    let mut text = format!("// ratelimit: rate-limiter-flexible at {rate}");
    if params != FlexibleParams::default() {
        let _ = write!(text, " {params}");
    }
    text.push('\n');
    if let Some(why) = <RateLimiterFlexible as Rule>::refuses(rate) {
        let _ = writeln!(text, "// {why}");
    }
    let (store, client) = match params.redis {
        true => ("RateLimiterRedis", "  storeClient: redis, // an ioredis client\n"),
        false => ("RateLimiterMemory", ""),
    };
    let _ = write!(
        text,
        "const {{ {store} }} = require('rate-limiter-flexible');\n\n\
         const limiter = new {store}({{\n{client}  points: {},\n  duration: {},\n",
        rate.count(),
        seconds_text(rate.period())
    );
    if let Some(block) = block {
        let _ = writeln!(text, "  blockDuration: {},", seconds_text(block));
    }
    let key = match ask.key {
        Some(ExportKey::Quoted(name)) => format!("request.headers[{}]", super::export::js_quoted(&name.to_ascii_lowercase())),
        _ => "request.ip".to_owned(),
    };
    let _ = write!(text, "}});\n// await limiter.consume({key}, cost) for each request\n");
    text
}

impl Rule for RateLimiterFlexible {
    type Params = FlexibleParams;

    #[cfg(test)]
    fn by_the_rule(rate: Rate, _b: u64, events: &[(i128, u64)]) -> Vec<bool> {
        // Its points and when they expire, as JavaScript computes it: whole milliseconds
        // plus the duration in seconds times 1000, all doubles.
        #[allow(clippy::cast_precision_loss)]
        let (n, duration) = (rate.n(), (rate.p() as f64 / 1e6) * 1000.0);
        let mut record: Option<(i128, f64)> = None;
        events
            .iter()
            .map(|&(t, c)| {
                #[allow(clippy::cast_precision_loss)]
                let (now, c) = (t.div_euclid(1000) as f64, i128::from(c));
                let points = match record {
                    Some((points, expires)) if expires - now > 0.0 => points + c,
                    _ => {
                        record = Some((0, now + duration));
                        c
                    }
                };
                record = record.map(|(_, expires)| (points, expires));
                points <= n
            })
            .collect()
    }

    const NAME: &'static str = "rate-limiter-flexible";
    const HELP: &'static str = "rate-limiter-flexible: a window opened by the first consume, \
                                refused points counted, block=DUR; store=memory|redis";
    const USES_BURST: bool = false;
    const MODELS: Option<&'static str> =
        Some("rate-limiter-flexible 11.4.0, RateLimiterMemory (store=redis: RateLimiterRedis)");
    const QUIRKS: Option<&'static str> = Some(
        "refused points count; the first overrun blocks the key for blockDuration; duration·1000 \
         in doubles (1.001 s is 1000.9999999999999 ms); store=redis cuts windows to whole \
         seconds, and one under a second never ends",
    );
    const PROVEN: Option<&'static str> = Some(
        "the npm package's RateLimiterMemory on node:test's fake clock (tests/cli/npm_peers.rs), \
         and its RateLimiterRedis through ioredis on a frozen redis-server \
         (python/tests/test_rlf_redis_peer.py)",
    );
    const EXPORT: Option<Export> = Some(EXPORT);
    const RATE_WORDS: Option<super::RateWords> = Some(super::RateWords {
        system: "rate-limiter-flexible",
        keys: &["points", "duration"],
        how: "points=N, with duration=SECONDS unless it is 1: give points=",
        read: rate_from_words,
        written: rate_as_words,
    });

    fn refuses(rate: Rate) -> Option<String> {
        node_window(rate, "rate-limiter-flexible's duration, in milliseconds,")
    }

    fn new_limit(rate: Rate, _burst: NonZeroU64) -> RateLimiterFlexible {
        RateLimiterFlexible::new(rate)
    }

    fn with_params(self, params: FlexibleParams) -> RateLimiterFlexible {
        let block = params.block.map_or(0.0, |block| milliseconds(block.as_micros()));
        RateLimiterFlexible { block, redis: params.redis, ..self }
    }

    fn promise(limit: &Limit) -> String {
        super::limits_fixed_window::opened_by_a_hit(limit)
    }

    fn bound(limit: &Limit) -> Bound {
        super::limits_fixed_window::opened_by_a_hit_bound(limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limiter::Limiter;

    /// Its decisions on events of (µs, cost).
    fn weighted(limiter: &mut RateLimiterFlexible, events: &[(i64, u64)]) -> Vec<bool> {
        let at = |t: i64| Timestamp::from_micros(t).unwrap();
        events.iter().map(|&(t, cost)| limiter.take(at(t), cost, false).passed).collect()
    }

    fn blocking(rate: &str, block: &str) -> RateLimiterFlexible {
        let params = FlexibleParams::parse(&[("block", Some(block))]).unwrap();
        RateLimiterFlexible::new(rate.parse().unwrap()).with_params(params)
    }

    #[test]
    fn a_window_opens_at_the_first_consume_and_refused_points_count() {
        // 5 points a second: 3 at 0 ms, 3 more at 10 ms (6 > 5, refused, counted), 0 at 20
        // ms (still 6: refused); at 1000 ms the record has expired.
        let mut limiter = RateLimiterFlexible::new("5/s".parse().unwrap());
        let got = weighted(&mut limiter, &[(0, 3), (10_000, 3), (20_000, 0), (1_000_000, 5)]);
        assert_eq!(got, [true, false, false, true]);
    }

    #[test]
    fn the_first_overrun_blocks_the_key_for_block_duration() {
        // 2 a second, block=10s: the third consume at 100 ms blocks the key until 10.1 s;
        // the window would have reopened at 1 s, but every consume until 10.1 s is refused.
        let mut limiter = blocking("2/s", "10s");
        let times = [0, 1, 100_000, 1_500_000, 10_099_000, 10_100_000, 10_100_000, 10_100_000];
        let events: Vec<(i64, u64)> = times.iter().map(|&t| (t, 1)).collect();
        let got = weighted(&mut limiter, &events);
        assert_eq!(got, [true, true, false, false, false, true, true, false]);
    }

    fn redis(rate: &str) -> RateLimiterFlexible {
        let params = FlexibleParams::parse(&[("store", Some("redis"))]).unwrap();
        RateLimiterFlexible::new(rate.parse().unwrap()).with_params(params)
    }

    #[test]
    fn its_redis_store_cuts_a_window_to_whole_seconds_and_keeps_its_last_millisecond() {
        // 2 per 1.5 s in Redis: `EX 1`, the key living to the end of millisecond 1000. Two at
        // 0, a third at 1000 ms still in the window (refused), and at 1001 ms a new one.
        let mut limiter = redis("2/1500ms");
        let got = weighted(&mut limiter, &[(0, 1), (1, 1), (1_000_999, 1), (1_001_000, 1)]);
        assert_eq!(got, [true, true, false, true]);
        // In memory the window is 1500 ms, and ends before its last millisecond.
        let mut limiter = RateLimiterFlexible::new("2/1500ms".parse().unwrap());
        let got = weighted(&mut limiter, &[(0, 1), (1, 1), (1_499_999, 1), (1_500_000, 1)]);
        assert_eq!(got, [true, true, false, true]);
    }

    #[test]
    fn its_redis_store_never_expires_a_window_under_a_second() {
        // 2 per 500 ms in Redis: `⌊0.5⌋ = 0` seconds, no EXPIRE: the count only grows.
        let mut limiter = redis("2/500ms");
        let got = weighted(&mut limiter, &[(0, 1), (600_000, 1), (3_600_000_000, 1)]);
        assert_eq!(got, [true, true, false]);
        assert_eq!(limiter.rests_after(Timestamp::from_micros(0).unwrap()), None);
    }

    #[test]
    fn its_window_is_seconds_times_1000_in_doubles() {
        // 1.001 s is 1000.9999999999999 ms as JavaScript multiplies it: the window opened at
        // 0 has expired at 1001 ms, as at 1000.9999999999999.
        let limiter = RateLimiterFlexible::new("1/1001ms".parse().unwrap());
        assert!(limiter.duration < 1001.0, "{}", limiter.duration);
        assert_eq!(limiter.rests_after(Timestamp::from_micros(0).unwrap()).unwrap().as_micros(), 1_001_000);
    }

    #[test]
    fn its_options_read_as_a_rate() {
        assert_eq!(decimal_seconds("1.5"), "1500000us");
        assert_eq!(decimal_seconds("60"), "60000000us");
        assert_eq!(decimal_seconds("0.001"), "1000us");
        assert_eq!(decimal_seconds("x"), "xs");
        let rate = rate_from_words(&[("points", "5"), ("duration", "1.5")]).unwrap().unwrap();
        assert_eq!(rate, "5/1500ms".parse().unwrap());
        assert_eq!(rate_as_words(rate).unwrap(), "points=5,duration=1.5");
        assert!(block_param(&[("block", Some("1500us"))]).is_err());
        let params = FlexibleParams::parse(&[("store", Some("redis")), ("block", Some("3s"))]);
        assert_eq!(params.unwrap().to_string(), "store=redis,block=3s");
        assert!(FlexibleParams::parse(&[("store", Some("mongo"))]).is_err());
        assert_eq!(block_param(&[("block", Some("0"))]), Ok(None));
    }
}
