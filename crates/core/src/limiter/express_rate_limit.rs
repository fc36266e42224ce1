//! express-rate-limit's memory store: a window per key opened by its first hit, in whole
//! milliseconds, every hit counted; or, before v7, one reset of every key at once.

use std::fmt::Write as _;
use std::num::NonZeroU64;

use super::aligned::{ceil_to, floor_to};
use super::export::{self, BurstRule, Export, ExportAsk, ExportKey};
use super::params::{ParamError, Parameters};
use super::promise::{Bound, Limit};
use super::{Decision, KeyedState, Params, Rule};
use crate::units::rate::Rate;
use crate::units::time::Timestamp;

/// The express-rate-limit middleware on its default `MemoryStore`:
///
/// - **v7 and later** (`reset=per-key`, the default; followed: 8.7.4, `increment`,
///   `getClient`, `resetClient`): the clock is `Date.now()`, whole milliseconds. A key's
///   window opens at its first hit and ends `windowMs` later; a hit at or after its end
///   opens a new one. Every hit adds 1, refused or not, and a hit passes if the count is
///   then at most `limit`. (The store's `setInterval` only forgets keys whose window has
///   ended.)
/// - **v6 and earlier** (`reset=global`; followed: 6.11.2): one `setInterval` every
///   `windowMs` clears every key at once. The interval is taken to have started at a whole
///   multiple of `windowMs` since the epoch, so every key's windows are `[k·W, (k+1)·W)`:
///   a key's first hit may find its window nearly over.
///
/// Each request counts once, whatever it costs. Node's timers fire at most 2³¹ − 1 ms
/// apart, so a longer window is refused (Node would fire it every millisecond).
#[derive(Clone, Debug)]
pub struct ExpressRateLimit {
    limit: u64,
    /// `windowMs`, in µs.
    window: i64,
    reset: Reset,
    state: Client,
}

/// When keys' counts go back to 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Reset {
    /// Each key's own window, opened by its first hit (v7 and later).
    #[default]
    PerKey,
    /// Every key at once, every `windowMs` (v6 and earlier).
    Global,
}

/// express-rate-limit's own parameters: `reset=per-key|global`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExpressParams {
    /// When counts go back to 0.
    pub reset: Reset,
}

impl std::fmt::Display for ExpressParams {
    /// `reset=global`, or nothing for the default.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.reset {
            Reset::PerKey => Ok(()),
            Reset::Global => f.write_str("reset=global"),
        }
    }
}

impl Parameters for ExpressParams {
    const KEYS: &'static [&'static str] = &["reset"];

    fn parse(given: &[(&str, Option<&str>)]) -> Result<ExpressParams, ParamError> {
        let mut params = ExpressParams::default();
        for (i, &(key, value)) in given.iter().enumerate() {
            if key != "reset" {
                return Err(ParamError::NotMine(key.to_owned()));
            }
            if i > 0 {
                return Err(ParamError::Conflict("reset= is given twice"));
            }
            params.reset = match value {
                Some("per-key") => Reset::PerKey,
                Some("global") => Reset::Global,
                value => {
                    let value = value.unwrap_or_default().to_owned();
                    let why = "is not per-key (v7 and later) or global (v6 and earlier)";
                    return Err(ParamError::Value { key: key.into(), value, why });
                }
            };
        }
        Ok(params)
    }

    fn shown(&self) -> Option<String> {
        (self.reset == Reset::Global).then(|| self.to_string())
    }
}

/// One key's count and when its window ends (µs, a whole millisecond); none before its
/// first hit. Under `reset=global`, `ends` is the end of the epoch-aligned window.
#[derive(Clone, Copy, Debug, Default)]
pub struct Client {
    count: u64,
    ends: Option<i64>,
}

/// `Date.now()` at `now`: its whole millisecond, in µs.
#[inline]
pub(super) fn millisecond(now: Timestamp) -> i64 {
    floor_to(now.as_micros(), 1000)
}

/// The longest delay Node's timers keep, in µs: 2³¹ − 1 ms (`TIMEOUT_MAX`).
pub(super) const NODE_TIMEOUT_MAX: i64 = ((1 << 31) - 1) * 1000;

/// Says why a system run by Node's timers cannot run at `rate`, if it cannot: its
/// `what` is whole milliseconds, and at most 2³¹ − 1 of them.
pub(super) fn node_window(rate: Rate, what: &str) -> Option<String> {
    let micros = rate.period().as_micros();
    if micros % 1000 != 0 {
        return Some(format!("{what} is whole milliseconds, and {rate}'s period is not"));
    }
    (micros > NODE_TIMEOUT_MAX).then(|| {
        format!(
            "{what} is at most 2147483647 ms (24.8 days): Node fires a longer timer every \
             millisecond, and {rate}'s period is longer"
        )
    })
}

impl ExpressRateLimit {
    /// Returns the middleware at `limit` per `windowMs`, each key's window its own.
    pub fn new(rate: Rate) -> ExpressRateLimit {
        let window = rate.period().as_micros();
        ExpressRateLimit { limit: rate.count(), window, reset: Reset::PerKey, state: Client::default() }
    }

    /// The end of the key's window, if it is still open at `now` (times come in order, so
    /// it opened no later).
    #[inline]
    fn ends(&self, client: &Client, now: i64) -> Option<i64> {
        client.ends.filter(|&end| end > now)
    }

    /// Where a window opened at `now` ends.
    #[inline]
    fn opened_at(&self, now: i64) -> i64 {
        match self.reset {
            Reset::PerKey => now.saturating_add(self.window),
            Reset::Global => floor_to(now, self.window).saturating_add(self.window),
        }
    }
}

impl KeyedState for ExpressRateLimit {
    type State = Client;
    type Keys = super::Apart;

    #[inline]
    fn step(&self, client: &mut Client, now: Timestamp, _cost: u64, force: bool) -> Decision {
        let now = millisecond(now);
        if self.ends(client, now).is_none() {
            *client = Client { count: 0, ends: Some(self.opened_at(now)) };
        }
        // `increment` counts the hit before the middleware compares: refused hits count.
        client.count = client.count.saturating_add(1);
        Decision { passed: force || client.count <= self.limit, wait: 0 }
    }

    /// A refused hit counts, wherever it was refused.
    fn refuse(&self, client: &mut Client, now: Timestamp, cost: u64) {
        self.step(client, now, cost, false);
    }

    /// Once its window has ended, a key's next hit opens a new one, as a fresh key's does.
    fn at_rest(&self, client: &Client, now: Timestamp) -> bool {
        self.ends(client, millisecond(now)).is_none()
    }

    /// The last hit's window ends at most `windowMs` after its millisecond: at rest from
    /// the first millisecond not before that.
    fn rests_after(&self, last: Timestamp) -> Option<Timestamp> {
        Timestamp::from_micros(ceil_to(millisecond(last).checked_add(self.window)?, 1000)?)
    }

    fn state_mut(&mut self) -> &mut Client {
        &mut self.state
    }
}

/// A rate in express-rate-limit's options: `limit` (or v6's `max`) per `windowMs`
/// (60000 unless given); `None` without a limit.
fn rate_from_words(given: &[(&str, &str)]) -> Option<super::RateRead> {
    let word = |key: &str| given.iter().find(|(k, _)| *k == key).map(|(_, v)| v.trim());
    let limit = word("limit").or_else(|| word("max"))?;
    Some(format!("{limit}/{}ms", word("windowMs").unwrap_or("60000")).parse())
}

/// A rate as express-rate-limit's options: `windowMs=W,limit=N`.
fn rate_as_words(rate: Rate) -> Option<String> {
    let micros = rate.period().as_micros();
    (micros % 1000 == 0).then(|| format!("windowMs={},limit={}", micros / 1000, rate.count()))
}

/// express-rate-limit, as `config --for express-rate-limit` writes it.
const EXPORT: Export = Export {
    system: "express-rate-limit",
    help: "express-rate-limit's options (JavaScript)",
    burst: BurstRule::Without,
    key: client_or_quoted,
    write,
};

/// The client's address (express-rate-limit's default key), or anything else, named as the
/// request's property or header that holds it.
pub(super) fn client_or_quoted(key: &str) -> Result<ExportKey, export::KeyRefused> {
    match key.strip_prefix('$').unwrap_or(key) {
        "remote_addr" | "binary_remote_addr" | "client" | "ip" => Ok(ExportKey::Client),
        _ => export::any_quoted(key),
    }
}

/// The middleware's options object, with `windowMs` and `limit`, keyed by a header if
/// asked.
fn write(ask: &ExportAsk<'_>) -> String {
    let rate = ask.rate;
    let reset = match ask.params {
        Params::ExpressRateLimit(ExpressParams { reset: Reset::Global }) => " reset=global",
        _ => "",
    };
    let mut text = format!("// ratelimit: express-rate-limit at {rate}{reset}\n");
    if let Some(why) = <ExpressRateLimit as Rule>::refuses(rate) {
        let _ = writeln!(text, "// {why}");
    }
    let (limit, window) = (rate.count(), rate.period().as_micros() / 1000);
    let (import, max) = match reset {
        "" => ("import { rateLimit } from 'express-rate-limit'; // 7 or later", "limit"),
        _ => ("import rateLimit from 'express-rate-limit'; // 6 or earlier", "max"),
    };
    let _ = write!(text, "{import}\n\nconst limiter = rateLimit({{\n  windowMs: {window},\n  {max}: {limit},\n");
    if let Some(ExportKey::Quoted(name)) = ask.key {
        let name = export::js_quoted(&name.to_ascii_lowercase());
        let _ = writeln!(text, "  keyGenerator: (request) => request.headers[{name}] ?? '',");
    }
    text.push_str("});\napp.use(limiter);\n");
    text
}

impl Rule for ExpressRateLimit {
    type Params = ExpressParams;

    #[cfg(test)]
    fn by_the_rule(rate: Rate, _b: u64, events: &[(i128, u64)]) -> Vec<bool> {
        by_the_windows(rate, events, |ms, p| ms + p)
    }

    const NAME: &'static str = "express-rate-limit";
    const HELP: &'static str = "express-rate-limit: a window per key opened by its first hit, in \
                                whole ms, refused hits counted (reset=global: v6's one reset)";
    const USES_BURST: bool = false;
    const SPENDS_COST: bool = false;
    const MODELS: Option<&'static str> =
        Some("express-rate-limit 8.7.4 (reset=global: 6.11.2), MemoryStore");
    const QUIRKS: Option<&'static str> = Some("windows in whole ms opened by a key's first hit; refused hits count; v6 (reset=global) resets every key at once, so a first hit may find its window nearly over");
    const PROVEN: Option<&'static str> = Some("the npm package's middleware on node:test's fake clock (tests/cli/npm_peers.rs)");
    const EXPORT: Option<Export> = Some(EXPORT);
    const RATE_WORDS: Option<super::RateWords> = Some(super::RateWords {
        system: "express-rate-limit",
        keys: &["windowMs", "limit", "max"],
        how: "limit=N (v6: max=N), with windowMs=MS unless it is 60000: give limit=",
        read: rate_from_words,
        written: rate_as_words,
    });

    fn refuses(rate: Rate) -> Option<String> {
        node_window(rate, "express-rate-limit's windowMs")
    }

    fn new_limit(rate: Rate, _burst: NonZeroU64) -> ExpressRateLimit {
        ExpressRateLimit::new(rate)
    }

    fn with_params(self, params: ExpressParams) -> ExpressRateLimit {
        ExpressRateLimit { reset: params.reset, ..self }
    }

    fn promise(limit: &Limit) -> String {
        super::limits_fixed_window::opened_by_a_hit(limit)
    }

    fn bound(limit: &Limit) -> Bound {
        super::limits_fixed_window::opened_by_a_hit_bound(limit)
    }
}

/// Decides `events` by windows counted in whole milliseconds: a hit with no window open
/// opens one ending at `end(ms, P)`; every hit counts, and passes while the count is at most
/// N. The written rule of the window limiters run by Node.
#[cfg(test)]
pub(super) fn by_the_windows(
    rate: Rate,
    events: &[(i128, u64)],
    end: impl Fn(i128, i128) -> i128,
) -> Vec<bool> {
    let (n, p) = (rate.n(), rate.p());
    // Where the open window ends, and how many hits it has counted.
    let mut open: Option<(i128, i128)> = None;
    events
        .iter()
        .map(|&(t, _)| {
            let ms = t.div_euclid(1000) * 1000;
            let (ends, count) = match open {
                Some((ends, count)) if ms < ends => (ends, count + 1),
                _ => (end(ms, p), 1),
            };
            open = Some((ends, count));
            count <= n
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::tests::decisions;
    use super::*;

    fn ms(ms: &[i64]) -> Vec<Timestamp> {
        ms.iter().map(|&ms| Timestamp::from_micros(ms * 1000).unwrap()).collect()
    }

    #[test]
    fn a_window_opens_at_the_first_hit_and_refused_hits_count() {
        // 2 per 1500 ms: the window opens at 1000 ms and ends at 2500; 1000.4 ms is the same
        // millisecond as 1000, and 2499 is the third hit (refused, and counted). At 2500 a
        // new window opens.
        let mut limiter = ExpressRateLimit::new("2/1500ms".parse().unwrap());
        let times = [1_000_000, 1_000_400, 2_499_000, 2_500_000, 2_500_999, 2_501_000];
        let times: Vec<Timestamp> = times.map(|t| Timestamp::from_micros(t).unwrap()).into();
        assert_eq!(decisions(&mut limiter, &times), [true, true, false, true, true, false]);
        assert_eq!(limiter.state.count, 3, "the refused hit at 2501 ms counts");
    }

    #[test]
    fn v6s_global_reset_clears_every_key_at_once() {
        // 2 per 1000 ms, reset=global: windows [0, 1000), [1000, 2000), …; a key first seen
        // at 999 ms has one millisecond of its window left, and at 1000 it starts anew.
        let params = ExpressParams { reset: Reset::Global };
        let mut limiter = ExpressRateLimit::new("2/1000ms".parse().unwrap()).with_params(params);
        let got = decisions(&mut limiter, &ms(&[999, 999, 999, 1000, 1001, 1002, 1999, 2000]));
        assert_eq!(got, [true, true, false, true, true, false, false, true]);
        // Per key, the window opened at 999 ms runs to 1999.
        let mut limiter = ExpressRateLimit::new("2/1000ms".parse().unwrap());
        let got = decisions(&mut limiter, &ms(&[999, 999, 999, 1000, 1001, 1002, 1999, 2000]));
        assert_eq!(got, [true, true, false, false, false, false, true, true]);
    }

    #[test]
    fn a_window_is_whole_milliseconds_within_nodes_timers() {
        assert_eq!(node_window("5/1500ms".parse().unwrap(), "windowMs"), None);
        assert!(node_window("5/1500us".parse().unwrap(), "windowMs").is_some());
        assert_eq!(node_window("1/2147483647ms".parse().unwrap(), "windowMs"), None);
        assert!(node_window("1/2147483648ms".parse().unwrap(), "windowMs").is_some());
    }

    #[test]
    fn a_key_is_written_as_a_javascript_string() {
        assert_eq!(export::js_quoted("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(export::js_quoted("é\n😀"), r#""\u00e9\u000a\ud83d\ude00""#);
    }

    #[test]
    fn its_options_read_as_a_rate() {
        let rate = |words: &[(&str, &str)]| rate_from_words(words).map(|r| r.unwrap().to_string());
        assert_eq!(rate(&[("limit", "5"), ("windowMs", "1500")]).as_deref(), Some("5/1500ms"));
        assert_eq!(rate(&[("max", "100")]).as_deref(), Some("100/m"));
        assert_eq!(rate(&[("windowMs", "1500")]), None);
        assert_eq!(rate_as_words("5/1500ms".parse().unwrap()).unwrap(), "windowMs=1500,limit=5");
    }
}
