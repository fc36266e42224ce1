//! rack-attack's throttle: windows of whole seconds aligned to the epoch, every request
//! counted, throttled or not.

use std::fmt::Write as _;
use std::num::NonZeroU64;

use super::aligned::{ceil_to, floor_to};
use super::export::{BurstRule, Export, ExportAsk, ExportKey};
use super::promise::{Bound, Limit};
use super::{Decision, KeyedState, Rule};
use crate::units::rate::Rate;
use crate::units::time::Timestamp;

/// rack-attack's `throttle` (6.6.1, as Debian packages it: `Throttle#matched_by?`,
/// `Cache#count`, `key_and_expiry`) on ActiveSupport's `MemoryStore`:
///
/// - The clock is `Time.now.to_i`, whole seconds; the period is `period.to_i`, whole
///   seconds (a shorter or fractional one is refused: rack-attack would divide by zero or
///   cut it).
/// - A request's count is kept under `epoch_time / period`, the window's number: windows
///   `[k·P, (k+1)·P)` aligned to the epoch.
/// - **Every request increments the count**, throttled or not, and is throttled (429) if
///   the count is then above `limit`.
///
/// Each request counts once, whatever it costs. An empty key is a key like any other (only
/// a `nil` discriminator goes unthrottled).
#[derive(Clone, Debug)]
pub struct RackAttack {
    limit: u64,
    /// The period, in µs: whole seconds.
    period: i64,
    state: Counted,
}

/// One key's window (its number) and count; none before its first request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counted(pub(super) Option<(i64, u64)>);

impl RackAttack {
    /// Returns the throttle at `limit` per `period`.
    pub fn new(rate: Rate) -> RackAttack {
        RackAttack { limit: rate.count(), period: rate.period().as_micros(), state: Counted::default() }
    }

    /// The number of the window `now` is in: its whole second over the period, floored,
    /// as Ruby's `Integer#/` does.
    #[inline]
    fn window(&self, now: Timestamp) -> i64 {
        floor_to(now.as_micros(), 1_000_000).div_euclid(self.period.max(1))
    }

    /// The period, in whole seconds.
    pub(super) fn period_s(&self) -> i64 {
        self.period / 1_000_000
    }

    /// Counts a request in window `window`, whatever it decides, and decides it: passed if
    /// the count is then at most the limit, or with `force`.
    #[inline]
    pub(super) fn count(&self, counted: &mut Counted, window: i64, force: bool) -> Decision {
        let count = match counted.0 {
            Some((w, count)) if w == window => count.saturating_add(1),
            _ => 1,
        };
        counted.0 = Some((window, count));
        Decision { passed: force || count <= self.limit, wait: 0 }
    }

    /// Whether `counted` is of a window before `window`, or of none: a key that decides as
    /// a fresh one.
    pub(super) fn before(counted: &Counted, window: i64) -> bool {
        counted.0.is_none_or(|(w, _)| w < window)
    }
}

impl KeyedState for RackAttack {
    type State = Counted;
    type Keys = super::Apart;

    #[inline]
    fn step(&self, counted: &mut Counted, now: Timestamp, _cost: u64, force: bool) -> Decision {
        self.count(counted, self.window(now), force)
    }

    /// A throttled request counts, wherever it was throttled.
    fn refuse(&self, counted: &mut Counted, now: Timestamp, cost: u64) {
        self.step(counted, now, cost, false);
    }

    /// In a later window than its count's, a key decides as a fresh one.
    fn at_rest(&self, counted: &Counted, now: Timestamp) -> bool {
        RackAttack::before(counted, self.window(now))
    }

    /// The last request's window ends at the next multiple of the period: from the first
    /// whole second there.
    fn rests_after(&self, last: Timestamp) -> Option<Timestamp> {
        let next = self.window(last).checked_add(1)?.checked_mul(self.period)?;
        Timestamp::from_micros(ceil_to(next, 1_000_000)?)
    }

    fn state_mut(&mut self) -> &mut Counted {
        &mut self.state
    }
}

/// A rate in rack-attack's options: `limit` per `period` seconds; `None` without both.
fn rate_from_words(given: &[(&str, &str)]) -> Option<super::RateRead> {
    let word = |key: &str| given.iter().find(|(k, _)| *k == key).map(|(_, v)| v.trim());
    Some(format!("{}/{}s", word("limit")?, word("period")?).parse())
}

/// A rate as rack-attack's options: `limit=N,period=S`, if P is whole seconds.
fn rate_as_words(rate: Rate) -> Option<String> {
    let micros = rate.period().as_micros();
    (micros % 1_000_000 == 0)
        .then(|| format!("limit={},period={}", rate.count(), micros / 1_000_000))
}

/// rack-attack, as `config --for rack-attack` writes it.
const EXPORT: Export = Export {
    system: "rack-attack",
    help: "rack-attack's throttle (Ruby, config/initializers/rack_attack.rb)",
    burst: BurstRule::Without,
    key: super::export::client_or_header,
    write,
};

/// One throttle, keyed by the client's address or a request header.
fn write(ask: &ExportAsk<'_>) -> String {
    let rate = ask.rate;
    let mut text = format!("# ratelimit: rack-attack at {rate}\n");
    if let Some(why) = <RackAttack as Rule>::refuses(rate) {
        let _ = writeln!(text, "# {why}");
    }
    let period = (rate.period().as_micros() / 1_000_000).max(1);
    let key = match ask.key {
        // A header's name is letters, digits, - and _: Rack's env key, as it is.
        Some(ExportKey::Header(name)) => {
            format!("request.get_header(\"HTTP_{}\")", name.to_ascii_uppercase().replace('-', "_"))
        }
        _ => "request.ip".to_owned(),
    };
    let _ = write!(
        text,
        "Rack::Attack.throttle(\"ratelimit\", limit: {}, period: {period}) do |request|\n  {key}\nend\n",
        rate.count()
    );
    text
}

impl Rule for RackAttack {
    type Params = super::NoParams;

    #[cfg(test)]
    fn by_the_rule(rate: Rate, _b: u64, events: &[(i128, u64)]) -> Vec<bool> {
        // Every request so far, by the whole second it came in.
        let p = rate.p();
        let mut seen: Vec<i128> = Vec::new();
        events
            .iter()
            .map(|&(t, _)| {
                let second = t.div_euclid(1_000_000) * 1_000_000;
                seen.push(second);
                let window = |s: i128| s.div_euclid(p);
                let count = seen.iter().filter(|&&s| window(s) == window(second)).count();
                i128::try_from(count).unwrap() <= rate.n()
            })
            .collect()
    }

    const NAME: &'static str = "rack-attack";
    const HELP: &'static str = "rack-attack's throttle: windows of whole seconds aligned to the \
                                epoch, throttled requests counted";
    const USES_BURST: bool = false;
    const SPENDS_COST: bool = false;
    const MODELS: Option<&'static str> =
        Some("rack-attack 6.6.1 (Debian's ruby-rack-attack), ActiveSupport's MemoryStore");
    const QUIRKS: Option<&'static str> = Some("windows of whole seconds aligned to the epoch; throttled requests count; period.to_i");
    const PROVEN: Option<&'static str> = Some("Debian's ruby-rack-attack 6.6.1 with ActiveSupport's MemoryStore, Time.now frozen (tests/cli/rack_attack_peer.rs)");
    const EXPORT: Option<Export> = Some(EXPORT);
    const RATE_WORDS: Option<super::RateWords> = Some(super::RateWords {
        system: "rack-attack",
        keys: &["limit", "period"],
        how: "limit=N with period=SECONDS: give both",
        read: rate_from_words,
        written: rate_as_words,
    });

    fn refuses(rate: Rate) -> Option<String> {
        (rate.period().as_micros() % 1_000_000 != 0).then(|| {
            format!("rack-attack's period is whole seconds (period.to_i), and {rate}'s is not")
        })
    }

    fn new_limit(rate: Rate, _burst: NonZeroU64) -> RackAttack {
        RackAttack::new(rate)
    }

    fn promise(limit: &Limit) -> String {
        let (n, p) = (limit.rate.count(), limit.rate.period());
        format!("at most {n} per aligned window, so at most {} in any {p}", 2 * n)
    }

    fn bound(limit: &Limit) -> Bound {
        let n = limit.rate.count();
        Bound::Aligned { aligned: n, period: 2 * n }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::decisions;
    use super::*;

    fn at(micros: &[i64]) -> Vec<Timestamp> {
        micros.iter().map(|&t| Timestamp::from_micros(t).unwrap()).collect()
    }

    #[test]
    fn windows_are_whole_seconds_aligned_to_the_epoch_and_throttled_requests_count() {
        // 2 per 2 s: 0.999 s and 1 s are in window 0 ([0, 2)); 1.5 s is the third (429,
        // counted); 2 s opens window 1.
        let mut limiter = RackAttack::new("2/2s".parse().unwrap());
        let got = decisions(&mut limiter, &at(&[999_999, 1_000_000, 1_500_000, 1_900_000, 2_000_000]));
        assert_eq!(got, [true, true, false, false, true]);
        let mut limiter = RackAttack::new("1/s".parse().unwrap());
        decisions(&mut limiter, &at(&[0, 1, 2]));
        assert_eq!(limiter.state.0, Some((0, 3)), "throttled requests count");
    }

    #[test]
    fn a_period_is_whole_seconds() {
        assert!(<RackAttack as Rule>::refuses("5/1500ms".parse().unwrap()).is_some());
        assert_eq!(<RackAttack as Rule>::refuses("5/m".parse().unwrap()), None);
        let rate = rate_from_words(&[("limit", "5"), ("period", "60")]).unwrap().unwrap();
        assert_eq!((rate, rate_as_words(rate).unwrap()), ("5/m".parse().unwrap(), "limit=5,period=60".into()));
    }
}
