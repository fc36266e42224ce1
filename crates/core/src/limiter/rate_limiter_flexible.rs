//! rate-limiter-flexible's `RateLimiterMemory`: a window opened by the first consume, in
//! JavaScript's doubles of milliseconds, refused points counted, and `blockDuration`.

use std::fmt::Write as _;
use std::num::NonZeroU64;

use super::export::{BurstRule, Export, ExportAsk, ExportKey};
use super::express_rate_limit::{millisecond, node_window};
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
/// Node's timers fire at most 2³¹ − 1 ms apart: a longer duration or block is refused.
#[derive(Clone, Debug)]
pub struct RateLimiterFlexible {
    points: u64,
    /// `duration·1000`, in ms.
    duration: f64,
    /// `blockDuration·1000`, in ms; 0 for none.
    block: f64,
    state: Record,
}

/// rate-limiter-flexible's own parameters: `block=DUR`, its `blockDuration`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlexibleParams {
    /// How long a key is blocked after its first overrun; none if zero.
    pub block: Option<Span>,
}

impl std::fmt::Display for FlexibleParams {
    /// `block=DUR`, or nothing without a block.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.block {
            Some(block) => write!(f, "block={}", block.compact()),
            None => Ok(()),
        }
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
            Some(Some(span)) if span.as_micros() <= NODE_MAX => Some(span),
            Some(_) => {
                let value = value.unwrap_or_default().to_owned();
                return Err(ParamError::Value { key: key.into(), value, why });
            }
        };
    }
    Ok(block)
}

/// Node's longest timer, 2³¹ − 1 ms, in µs.
const NODE_MAX: i64 = ((1 << 31) - 1) * 1000;

impl Parameters for FlexibleParams {
    const KEYS: &'static [&'static str] = &["block"];

    fn parse(given: &[(&str, Option<&str>)]) -> Result<FlexibleParams, ParamError> {
        Ok(FlexibleParams { block: block_param(given)? })
    }

    fn shown(&self) -> Option<String> {
        self.block.map(|_| self.to_string())
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
            state: Record::default(),
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
        // `incrby`: into the live record, or a new one.
        let consumed = match Self::live(record, now) {
            Some(points) => {
                let consumed = points.saturating_add(cost);
                record.0 = record.0.map(|(_, expires)| (consumed, expires));
                consumed
            }
            None => {
                record.0 = Some((cost, now + self.duration));
                cost
            }
        };
        let passed = consumed <= self.points;
        // Blocked only the first time it goes over: its record was at most N before.
        if !passed && !force && self.block > 0.0 && consumed - cost <= self.points {
            record.0 = Some((consumed, now + self.block));
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
    /// most: at the first whole millisecond not before it.
    fn rests_after(&self, last: Timestamp) -> Option<Timestamp> {
        let expires = date_now(last) + self.duration.max(self.block);
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
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !digits(whole) || !digits(fraction) || fraction.len() > 6 {
        return format!("{text}s");
    }
    format!("{whole}{fraction:0<6}us").trim_start_matches('0').to_owned()
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
    let block = match ask.params {
        Params::RateLimiterFlexible(FlexibleParams { block: Some(block) }) => Some(*block),
        _ => None,
    };
    let mut text = format!("// ratelimit: rate-limiter-flexible at {rate}");
    if let Some(block) = block {
        let _ = write!(text, " block={}", block.compact());
    }
    text.push('\n');
    if let Some(why) = <RateLimiterFlexible as Rule>::refuses(rate) {
        let _ = writeln!(text, "// {why}");
    }
    let _ = write!(
        text,
        "const {{ RateLimiterMemory }} = require('rate-limiter-flexible');\n\n\
         const limiter = new RateLimiterMemory({{\n  points: {},\n  duration: {},\n",
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
    const HELP: &'static str = "rate-limiter-flexible's RateLimiterMemory: a window opened by \
                                the first consume, refused points counted, block=DUR";
    const USES_BURST: bool = false;
    const MODELS: Option<&'static str> = Some("rate-limiter-flexible 11.4.0, RateLimiterMemory");
    const QUIRKS: Option<&'static str> = Some("refused points count; the first overrun blocks the key for blockDuration; duration·1000 in doubles (1.001 s is 1000.9999999999999 ms)");
    const PROVEN: Option<&'static str> = Some("the npm package's RateLimiterMemory on node:test's fake clock (tests/cli/npm_peers.rs)");
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
        RateLimiterFlexible { block, ..self }
    }

    fn promise(limit: &Limit) -> String {
        super::limits_fixed_window::opened_by_a_hit(limit)
    }

    fn bound(limit: &Limit) -> Bound {
        Bound::Period { most: 2 * limit.rate.count() }
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
        assert_eq!(block_param(&[("block", Some("0"))]), Ok(None));
    }
}
