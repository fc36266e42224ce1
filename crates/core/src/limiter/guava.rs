//! Guava's `RateLimiter`, SmoothBursty: a pay-later bucket of one second of permits that
//! starts empty, in Java's doubles and long microseconds.

use std::num::NonZeroU64;

use super::export::{BurstRule, Export, ExportAsk, ExportKey};
use super::promise::{Bound, Limit};
use super::{Decision, KeyedState, OwnSize, Params, PerKey, Rule, SystemSizer};
use crate::event::{Event, Key};
use crate::units::rate::Rate;
use crate::units::time::{Span, Timestamp};

/// Guava's `RateLimiter.create(permitsPerSecond)` (Guava 31.1, as Debian packages it:
/// `SmoothRateLimiter.reserveEarliestAvailable`, `resync`, `SmoothBursty`), asked
/// `tryAcquire(cost, 0, MICROSECONDS)` for each request, one limiter a key made at its
/// first request, operation for operation in Java's arithmetic:
///
/// - `permitsPerSecond` is N·10⁶/P (P in µs), a double; the stable interval I is
///   10⁶/permitsPerSecond µs. Its clock is a stopwatch in whole µs from the limiter's making.
/// - A request passes if `nextFreeTicket ≤ now`, **whatever it costs**: it pays later, by
///   pushing `nextFreeTicket` into the future for the permits it took beyond those stored.
/// - Idle time stores permits, `(now − nextFreeTicket)/I`, at most `maxPermits` =
///   permitsPerSecond (one second of them); the limiter **starts with none stored**.
///
/// So after an idle second it passes bursts of permitsPerSecond + 1, as `gcra` at burst
/// R + 1 does, but at its start, one. A cost above 2³¹ − 1 (Guava's `int`) is taken as
/// 2³¹ − 1; a cost of 0, which Guava refuses with an exception, asks for nothing.
#[derive(Clone, Debug)]
pub struct Guava {
    curve: Curve,
    state: Smooth,
}

/// How a smooth limiter turns stored permits into time: the part of `SmoothRateLimiter`
/// that SmoothBursty and SmoothWarmingUp set apart.
#[derive(Clone, Copy, Debug)]
pub(super) struct Curve {
    /// `stableIntervalMicros`.
    pub stable: f64,
    /// `maxPermits`.
    pub max: f64,
    /// `coolDownIntervalMicros()`: the time idleness takes to store one permit.
    pub cool_down: f64,
    /// The permits stored when the limiter is made.
    pub initial: f64,
    /// SmoothWarmingUp's `thresholdPermits` and `slope`; none for SmoothBursty, whose
    /// stored permits cost no time.
    pub warm: Option<(f64, f64)>,
}

/// One key's limiter: `nextFreeTicketMicros`, from the limiter's making, and
/// `storedPermits`; and when it was made (µs since the epoch). None before its first
/// request.
#[derive(Clone, Copy, Debug, Default)]
pub struct Smooth(Option<Ticket>);

/// A made limiter's state.
#[derive(Clone, Copy, Debug)]
pub struct Ticket {
    made: i64,
    next_free: i64,
    stored: f64,
}

/// Java's `Math.min` on doubles: NaN if either is (Rust's `f64::min` would drop it, and
/// Guava's zero warm-up turns on it).
#[inline]
fn java_min(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() { f64::NAN } else { a.min(b) }
}

/// Java's `(long)` of a double: toward zero, saturating, NaN as 0, as Rust's `as` is.
#[inline]
#[allow(clippy::cast_possible_truncation)]
fn java_long(x: f64) -> i64 {
    x as i64
}

impl Curve {
    /// `permitsPerSecond` and `stableIntervalMicros` at `rate`.
    #[allow(clippy::cast_precision_loss)] // N·10⁶ and P are below 2⁵³: exact.
    pub fn rates(rate: Rate) -> (f64, f64) {
        let per_second = (rate.count() as f64 * 1e6) / rate.period().as_micros() as f64;
        (per_second, 1e6 / per_second)
    }

    /// SmoothBursty with `maxBurstSeconds` 1.
    fn bursty(rate: Rate) -> Curve {
        let (per_second, stable) = Curve::rates(rate);
        Curve { stable, max: 1.0 * per_second, cool_down: stable, initial: 0.0, warm: None }
    }

    /// `storedPermitsToWaitTime`: the time taking `take` of `stored` permits costs.
    fn stored_wait(&self, stored: f64, mut take: f64) -> i64 {
        let Some((threshold, slope)) = self.warm else { return 0 };
        let above = stored - threshold;
        let mut micros: i64 = 0;
        if above > 0.0 {
            let taken = java_min(above, take);
            let time = |permits: f64| self.stable + permits * slope;
            let length = time(above) + time(above - taken);
            micros = java_long(taken * length / 2.0);
            take -= taken;
        }
        micros.wrapping_add(java_long(self.stable * take))
    }

    /// `tryAcquire(cost, 0, MICROSECONDS)` on `state` at `now`; with `force`, the permits
    /// are reserved whatever it decides.
    pub fn try_acquire(&self, state: &mut Smooth, now: Timestamp, cost: u64, force: bool) -> Decision {
        let now = now.as_micros();
        let ticket =
            state.0.get_or_insert(Ticket { made: now, next_free: 0, stored: self.initial });
        // The stopwatch reads µs since the limiter was made.
        let now = now.saturating_sub(ticket.made);
        let passed = ticket.next_free <= now;
        if (passed || force) && cost > 0 {
            // `resync`, then `reserveEarliestAvailable`.
            if now > ticket.next_free {
                #[allow(clippy::cast_precision_loss)] // As Java widens a long.
                let fresh = (now - ticket.next_free) as f64 / self.cool_down;
                ticket.stored = java_min(self.max, ticket.stored + fresh);
                ticket.next_free = now;
            }
            // Guava's permits are an `int`: at most 2³¹ − 1, exact in a double.
            #[allow(clippy::cast_precision_loss)]
            let required = cost.min(0x7fff_ffff) as f64;
            let spend = java_min(required, ticket.stored);
            let fresh = required - spend;
            let wait = self.stored_wait(ticket.stored, spend).wrapping_add(java_long(fresh * self.stable));
            ticket.next_free = ticket.next_free.saturating_add(wait);
            ticket.stored -= spend;
        }
        Decision { passed: passed || force, wait: 0 }
    }
}

impl Guava {
    /// Returns SmoothBursty at N per P.
    pub fn new(rate: Rate) -> Guava {
        Guava { curve: Curve::bursty(rate), state: Smooth::default() }
    }
}

impl KeyedState for Guava {
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

/// Guava's smallest whole `permitsPerSecond` with which SmoothBursty refuses none of the
/// events, each key its own limiter: its one setting, since its bucket is one second of
/// permits. A faster limiter stores more, sooner, and pays its debts sooner, so the least is
/// found by doubling and bisection, each probe a replay of every event kept. A key's first
/// two requests at one µs are refused at any rate below 10⁶ a second (the first leaves the
/// second a debt of one interval): none may do, up to 10¹² a second.
#[derive(Clone, Debug, Default)]
pub struct PermitsPerSecond {
    events: Vec<Event>,
}

impl SystemSizer for PermitsPerSecond {
    fn push(&mut self, event: Event) {
        self.events.push(event);
    }

    fn result(&mut self) -> (u64, Option<Key>) {
        let refuses_none = |per_second: u64| {
            let second = Span::from_micros(1_000_000);
            let Some(Ok(rate)) = second.map(|second| Rate::new(per_second, second)) else {
                return false;
            };
            let mut keys = PerKey::new(Guava::new(rate));
            let slot = |key: Key| usize::try_from(key).unwrap_or(usize::MAX);
            self.events.iter().all(|e| keys.decide(slot(e.key), e.time, e.cost).passed)
        };
        let least = super::system_size::least_from_one(Rate::MAX_COUNT, refuses_none);
        (least.unwrap_or(NONE_DOES), None)
    }
}

/// What [`PermitsPerSecond`] finds when no rate up to 10¹² a second refuses none.
const NONE_DOES: u64 = u64::MAX;

/// Guava's rate: `permitsPerSecond`, a decimal (`0.5`, `2`); `None` without it.
fn rate_from_words(given: &[(&str, &str)]) -> Option<super::RateRead> {
    let word = |key: &str| given.iter().find(|(k, _)| *k == key).map(|(_, v)| v.trim());
    let per_second = word("permitsPerSecond")?;
    Some(per_second_rate(per_second))
}

/// A decimal number a second as a rate, in lowest terms: `0.5` is 1/2s, `2.5` is 5/2s.
pub(super) fn per_second_rate(text: &str) -> super::RateRead {
    let millionths = crate::units::decimal::parse_exact(text.as_bytes(), 6).ok();
    match millionths.and_then(|m| u64::try_from(m).ok()) {
        Some(millionths) => {
            let gcd = crate::sizing::curve::gcd(millionths.max(1), 1_000_000);
            format!("{}/{}s", millionths / gcd, 1_000_000 / gcd).parse()
        }
        // Not a decimal to the millionth: the rate parser says why.
        None => format!("{text}/s").parse(),
    }
}

/// A rate as Guava writes it, if it is a decimal a second it can write exactly.
fn rate_as_words(rate: Rate) -> Option<String> {
    let micros = u64::try_from(rate.period().as_micros()).ok()?;
    // N/P a second, as a decimal with at most six places: N·10⁶/P must be whole.
    let scaled = rate.count().checked_mul(1_000_000)?.checked_mul(1_000_000)?;
    (scaled % micros == 0).then(|| {
        let millionths = scaled / micros;
        let (whole, rest) = (millionths / 1_000_000, millionths % 1_000_000);
        match rest {
            0 => format!("permitsPerSecond={whole}"),
            _ => format!("permitsPerSecond={}", format!("{whole}.{rest:06}").trim_end_matches('0')),
        }
    })
}

/// The rate's words, as Guava's limiters read and write them.
pub(super) const GUAVA_WORDS: super::RateWords = super::RateWords {
    system: "Guava",
    keys: &["permitsPerSecond"],
    how: "permitsPerSecond=R, a decimal such as 0.5 or 20",
    read: rate_from_words,
    written: rate_as_words,
};

/// Guava, as `config --for guava` writes it.
const EXPORT: Export = Export {
    system: "guava",
    help: "Guava's RateLimiter (Java)",
    burst: BurstRule::Without,
    key: any_key,
    write,
};

/// Any key but none: Guava has no keys, so a key is one limiter for each of its values,
/// and its text is never written.
pub(super) fn any_key(key: &str) -> Result<ExportKey, super::export::KeyRefused> {
    match key.is_empty() {
        true => Err(super::export::KeyRefused::Empty),
        false => Ok(ExportKey::Quoted(String::new())),
    }
}

/// `RateLimiter.create`, bursty or warming up, one a key if asked (the key's value is the
/// application's to find: it is not written).
pub(super) fn write(ask: &ExportAsk<'_>) -> String {
    let rate = ask.rate;
    let (per_second, _) = Curve::rates(rate);
    let (warm, create) = match ask.params {
        Params::GuavaWarmup(params) => {
            let warmup = params.warmup.map_or(rate.period().as_micros(), |w| w.as_micros());
            let note = format!(", warmup={}", crate::units::time::human_duration(warmup));
            (note, format!("RateLimiter.create({per_second:?}, Duration.ofNanos({}L))", i128::from(warmup) * 1000))
        }
        _ => (String::new(), format!("RateLimiter.create({per_second:?})")),
    };
    let mut text = format!("// ratelimit: guava at {rate}{warm}\n");
    text.push_str("import com.google.common.util.concurrent.RateLimiter;\n");
    match ask.key {
        Some(_) => text.push_str(&format!(
            "import java.time.Duration;\nimport java.util.Map;\nimport java.util.concurrent.ConcurrentHashMap;\n\n\
             // One limiter a key, made at its first request.\n\
             Map<String, RateLimiter> limiters = new ConcurrentHashMap<>();\n\
             // limiters.computeIfAbsent(key, k -> {create}).tryAcquire(cost) for each request\n"
        )),
        None => text.push_str(&format!(
            "import java.time.Duration;\n\nRateLimiter limiter = {create};\n\
             // limiter.tryAcquire(cost) for each request\n"
        )),
    }
    text
}

impl Rule for Guava {
    type Params = super::NoParams;

    #[cfg(test)]
    fn by_the_rule(rate: Rate, _b: u64, events: &[(i128, u64)]) -> Vec<bool> {
        // A pay-later bucket of one second of permits, empty at its first request, in the
        // same doubles: permits stored while idle, a request passing whenever the next free
        // ticket has come.
        let (per_second, interval) = Curve::rates(rate);
        let (mut made, mut next, mut stored) = (None, 0i128, 0.0f64);
        events
            .iter()
            .map(|&(t, c)| {
                let t = t - *made.get_or_insert(t);
                let ok = next <= t;
                if ok && c > 0 {
                    if t > next {
                        #[allow(clippy::cast_precision_loss)]
                        let idle = (t - next) as f64 / interval;
                        stored = per_second.min(stored + idle);
                        next = t;
                    }
                    #[allow(clippy::cast_precision_loss)]
                    let spend = (c as f64).min(stored);
                    #[allow(clippy::cast_possible_truncation)]
                    let wait = ((c as f64 - spend) * interval) as i64;
                    next += i128::from(wait);
                    stored -= spend;
                }
                ok
            })
            .collect()
    }

    const NAME: &'static str = "guava";
    const HELP: &'static str = "Guava's RateLimiter (SmoothBursty): pay later, one second of \
                                permits stored at most, none at its start";
    const USES_BURST: bool = false;
    const MODELS: Option<&'static str> = Some("Guava 31.1 (Debian's libguava-java), SmoothBursty");
    const QUIRKS: Option<&'static str> = Some("pays later, whatever a request costs; starts empty, so a key's first two requests at once get one; stores one second of permits");
    const PROVEN: Option<&'static str> = Some("Debian's libguava-java 31.1 with OpenJDK 17, a fake SleepingStopwatch (tests/cli/guava_peer.rs)");
    const RATE_WORDS: Option<super::RateWords> = Some(GUAVA_WORDS);
    const EXPORT: Option<Export> = Some(EXPORT);
    const OWN_SIZE: Option<OwnSize> = Some(OwnSize {
        setting: "permitsPerSecond",
        help: "Guava's RateLimiter.create: the least whole permitsPerSecond (its bucket is one \
               second of them), whatever --rate says",
        finder: |_, _| Box::new(PermitsPerSecond::default()),
        refuses: |_| None,
        weighs: true,
        line: |_, per_second| match per_second {
            NONE_DOES => "no permitsPerSecond up to 10^12 refuses none of the events: a key's \
                          first requests came at once, and Guava starts empty"
                .to_owned(),
            _ => format!("RateLimiter.create({per_second}) refuses none of the events"),
        },
        in_replay: false,
    });

    fn new_limit(rate: Rate, _burst: NonZeroU64) -> Guava {
        Guava::new(rate)
    }

    /// One second of permits stored, plus the one paid later.
    fn promise(limit: &Limit) -> String {
        format!("at most 1 s of permits + 1 + T·{} in any interval T, starting empty", limit.rate)
    }

    fn bound(limit: &Limit) -> Bound {
        // At most ⌊R⌋ + 1 stored and paid later at once, and R a second after: a bucket.
        let (per_second, _) = Curve::rates(limit.rate);
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let burst = per_second.floor() as u64 + 2;
        Bound::Bucket { burst }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::decisions;
    use super::*;
    use crate::limiter::Limiter;

    fn at(micros: &[i64]) -> Vec<Timestamp> {
        micros.iter().map(|&t| Timestamp::from_micros(t).unwrap()).collect()
    }

    #[test]
    fn it_starts_empty_and_stores_one_second_of_permits() {
        // 2 a second: at its start one passes (paid later, the next free at 0.5 s), not the
        // two a full bucket would pass; idle from 1.5 s to 3 s, it stores min(2, 3) = 2
        // permits, and passes 2 + 1 at once.
        let mut guava = Guava::new("2/s".parse().unwrap());
        let got = decisions(&mut guava, &at(&[0, 100_000, 200_000, 1_000_000, 1_000_000]));
        assert_eq!(got, [true, false, false, true, true]);
        let got = decisions(&mut guava, &at(&[3_000_000, 3_000_000, 3_000_000, 3_000_000]));
        assert_eq!(got, [true, true, true, false]);
    }

    #[test]
    fn a_request_pays_later_whatever_it_costs() {
        // 1 a second: 10 permits at 0 pass, and push the next free ticket to 10 s.
        let mut guava = Guava::new("1/s".parse().unwrap());
        assert!(guava.take(at(&[0])[0], 10, false).passed);
        assert!(!guava.take(at(&[9_999_999])[0], 1, false).passed);
        assert!(guava.take(at(&[10_000_000])[0], 1, false).passed);
    }

    #[test]
    fn the_least_permits_per_second_refuses_none_and_one_less_refuses_some() {
        // Two requests 100 ms apart, then three at once a second later: the first leaves a
        // debt of 1/R s, which 100 ms must cover (R ≥ 10), and the three need two stored
        // permits and one paid later after 0.9 s of idleness: 0.9·R ≥ 2 and R ≥ 2 stored.
        let times = at(&[0, 100_000, 1_100_000, 1_100_000, 1_100_000]);
        let mut finder = PermitsPerSecond::default();
        for &time in &times {
            finder.push(Event { time, key: 0, cost: 1 });
        }
        assert_eq!(finder.result(), (10, None));
        for (per_second, all) in [(10, true), (9, false)] {
            let mut guava = Guava::new(Rate::new(per_second, Span::from_micros(1_000_000).unwrap()).unwrap());
            assert_eq!(decisions(&mut guava, &times).iter().all(|&p| p), all, "{per_second}/s");
        }
        // Two at once at a key's start: only past 10⁶ a second, where the debt rounds to 0 µs.
        let mut finder = PermitsPerSecond::default();
        for &time in &at(&[0, 0]) {
            finder.push(Event { time, key: 0, cost: 1 });
        }
        assert_eq!(finder.result().0, 1_000_001);
    }

    #[test]
    fn permits_per_second_read_as_a_rate() {
        assert_eq!(per_second_rate("0.5").unwrap(), "1/2s".parse().unwrap());
        assert_eq!(per_second_rate("2.5").unwrap(), "5/2s".parse().unwrap());
        assert_eq!(per_second_rate("20").unwrap(), "20/s".parse().unwrap());
        assert!(per_second_rate("x").is_err());
        assert_eq!(rate_as_words("1/2s".parse().unwrap()).unwrap(), "permitsPerSecond=0.5");
        assert_eq!(rate_as_words("1/3s".parse().unwrap()), None);
    }
}
