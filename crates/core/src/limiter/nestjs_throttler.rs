//! @nestjs/throttler's in-memory storage: each hit expires `ttl` ms after it, and the
//! first overrun blocks the key for `blockDuration` (by default, `ttl`).

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::num::NonZeroU64;

use super::export::{BurstRule, Export, ExportAsk, ExportKey};
use super::aligned::ceil_to;
use super::express_rate_limit::{millisecond, node_window};
use super::params::{ParamError, Parameters};
use super::promise::{Bound, Limit};
use super::rate_limiter_flexible::block_param;
use super::{Decision, KeyedState, Params, Rule};
use crate::units::rate::Rate;
use crate::units::time::{Span, Timestamp};

/// `ThrottlerGuard` over `ThrottlerStorageService` (@nestjs/throttler 6.7.1,
/// `throttler.service.js`: `increment`, `incrementWithoutBlock`, `pruneExpiredHits`): the
/// guard refuses a request exactly when `increment` says the key is blocked. The clock is
/// `Date.now()`, whole milliseconds; each counted hit expires `ttl` ms after it.
///
/// - **`blockDuration` ≤ 0** (`block=0`): a hit passes if fewer than `limit` hits are live,
///   and only a passed hit counts: a sliding log.
/// - **Otherwise** (the guard's default is `blockDuration = ttl`): a hit of a key not
///   blocked counts; if `limit` are then exceeded, the key is blocked until `blockDuration`
///   ms later and this hit refused. Hits while blocked are refused and not counted. The
///   first hit at or after the block's end clears every hit and counts as the first.
///
/// Each request counts once, whatever it costs. (Through 6.7.0 each hit expired on a timer
/// of its own, and with `blockDuration` 0 the overrun blocked the key until now: the block
/// was over at once, the hits were cleared, and the overrun passed: every hit passed.
/// 6.7.1 refuses it, and counts only the hits it passes.)
#[derive(Clone, Debug)]
pub struct NestjsThrottler {
    limit: u64,
    /// `ttl`, in µs.
    ttl: i64,
    /// `blockDuration`, in µs; 0 for none.
    block: i64,
    state: Hits,
}

/// @nestjs/throttler's own parameters: `block=DUR`, its `blockDuration`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NestParams {
    /// How long a key is blocked after it goes over.
    pub block: Block,
}

/// How long @nestjs/throttler blocks a key after it goes over.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Block {
    /// Its `ttl`: the guard's default when none is given.
    #[default]
    Ttl,
    /// Not at all (`block=0`).
    Off,
    /// For a length of time.
    For(Span),
}

impl std::fmt::Display for NestParams {
    /// `block=DUR` or `block=0`, or nothing for the default.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.block {
            Block::For(block) => write!(f, "block={}", block.compact()),
            Block::Off => f.write_str("block=0"),
            Block::Ttl => Ok(()),
        }
    }
}

impl Parameters for NestParams {
    const KEYS: &'static [&'static str] = &["block"];

    fn parse(given: &[(&str, Option<&str>)]) -> Result<NestParams, ParamError> {
        let block = match (given.is_empty(), block_param(given)?) {
            (true, _) => Block::Ttl,
            (false, None) => Block::Off,
            (false, Some(span)) => Block::For(span),
        };
        Ok(NestParams { block })
    }

    fn shown(&self) -> Option<String> {
        (self.block != Block::Ttl).then(|| self.to_string())
    }
}

/// A key's live hits, when each expires (µs, whole milliseconds), oldest first; and when
/// its block ends, if it is blocked.
#[derive(Clone, Debug, Default)]
pub struct Hits {
    expiries: VecDeque<i64>,
    blocked: Option<i64>,
}

impl NestjsThrottler {
    /// Returns the guard at `limit` per `ttl`, blocking for `ttl` after an overrun.
    pub fn new(rate: Rate) -> NestjsThrottler {
        let ttl = rate.period().as_micros();
        NestjsThrottler { limit: rate.count(), ttl, block: ttl, state: Hits::default() }
    }

    /// The number of live hits, as a count.
    #[inline]
    fn live(hits: &Hits) -> u64 {
        u64::try_from(hits.expiries.len()).unwrap_or(u64::MAX)
    }
}

impl KeyedState for NestjsThrottler {
    type State = Hits;
    type Keys = super::Apart;

    fn step(&self, hits: &mut Hits, now: Timestamp, _cost: u64, force: bool) -> Decision {
        let now = millisecond(now);
        // `pruneExpiredHits`: a hit is live while its expiry is after now.
        while hits.expiries.front().is_some_and(|&expires| expires <= now) {
            hits.expiries.pop_front();
        }
        let expires = now.saturating_add(self.ttl);
        if self.block <= 0 {
            // `incrementWithoutBlock`: refused at the limit, and then not counted.
            let blocked = !force && Self::live(hits) >= self.limit;
            if !blocked {
                hits.expiries.push_back(expires);
            }
            return Decision { passed: !blocked, wait: 0 };
        }
        if hits.blocked.is_none() {
            hits.expiries.push_back(expires);
            if Self::live(hits) > self.limit && !force {
                hits.blocked = Some(now.saturating_add(self.block));
            }
        }
        // A block that has run out is lifted by this hit, which then counts as the first.
        if hits.blocked.is_some_and(|end| end <= now) {
            hits.blocked = None;
            hits.expiries.clear();
            hits.expiries.push_back(expires);
        }
        Decision { passed: hits.blocked.is_none(), wait: 0 }
    }

    /// With a block, a refused hit counts (it is the overrun that blocks the key); without
    /// one, it changes nothing.
    fn refuse(&self, hits: &mut Hits, now: Timestamp, cost: u64) {
        if self.block > 0 {
            self.step(hits, now, cost, false);
        }
    }

    /// With no hit live and no block in force, the next hit is decided as a fresh key's.
    fn at_rest(&self, hits: &Hits, now: Timestamp) -> bool {
        let now = millisecond(now);
        hits.expiries.back().is_none_or(|&expires| expires <= now)
            && hits.blocked.is_none_or(|end| end <= now)
    }

    /// The last hit expires `ttl` after its millisecond, and a block it set ends
    /// `blockDuration` after.
    fn rests_after(&self, last: Timestamp) -> Option<Timestamp> {
        let end = millisecond(last).checked_add(self.ttl.max(self.block))?;
        Timestamp::from_micros(ceil_to(end, 1000)?)
    }

    fn state_mut(&mut self) -> &mut Hits {
        &mut self.state
    }
}

/// A rate in @nestjs/throttler's options: `limit` per `ttl` ms; `None` without both.
fn rate_from_words(given: &[(&str, &str)]) -> Option<super::RateRead> {
    let word = |key: &str| given.iter().find(|(k, _)| *k == key).map(|(_, v)| v.trim());
    Some(format!("{}/{}ms", word("limit")?, word("ttl")?).parse())
}

/// A rate as @nestjs/throttler's options: `ttl=MS,limit=N`.
fn rate_as_words(rate: Rate) -> Option<String> {
    let micros = rate.period().as_micros();
    (micros % 1000 == 0).then(|| format!("ttl={},limit={}", micros / 1000, rate.count()))
}

/// @nestjs/throttler, as `config --for nestjs-throttler` writes it.
const EXPORT: Export = Export {
    system: "nestjs-throttler",
    help: "@nestjs/throttler's ThrottlerModule options (TypeScript)",
    burst: BurstRule::Without,
    key: super::express_rate_limit::client_or_quoted,
    write,
};

/// `ThrottlerModule.forRoot` with one throttler, and its block.
fn write(ask: &ExportAsk<'_>) -> String {
    let rate = ask.rate;
    let params = match ask.params {
        Params::NestjsThrottler(params) => *params,
        _ => NestParams::default(),
    };
    let mut text = format!("// ratelimit: nestjs-throttler at {rate}");
    if params.block != Block::Ttl {
        let _ = write!(text, " {params}");
    }
    text.push('\n');
    if let Some(why) = <NestjsThrottler as Rule>::refuses(rate) {
        let _ = writeln!(text, "// {why}");
    }
    let (ttl, limit) = (rate.period().as_micros() / 1000, rate.count());
    let _ = write!(
        text,
        "import {{ ThrottlerModule }} from '@nestjs/throttler';\n\n\
         ThrottlerModule.forRoot([\n  {{\n    ttl: {ttl},\n    limit: {limit},\n"
    );
    match params.block {
        Block::For(block) => {
            let _ = writeln!(text, "    blockDuration: {},", block.as_micros() / 1000);
        }
        Block::Off => text.push_str("    blockDuration: 0,\n"),
        Block::Ttl => {}
    }
    if let Some(ExportKey::Quoted(name)) = ask.key {
        let name = super::export::js_quoted(&name.to_ascii_lowercase());
        let _ = writeln!(text, "    getTracker: (request) => request.headers[{name}] ?? '',");
    }
    text.push_str("  },\n]);\n");
    text
}

impl Rule for NestjsThrottler {
    type Params = NestParams;

    #[cfg(test)]
    fn by_the_rule(rate: Rate, _b: u64, events: &[(i128, u64)]) -> Vec<bool> {
        // Every hit counted so far (its millisecond), whether each was refused, and when the
        // block ends: the rule as the storage's docs say it, over all hits kept.
        let (n, p) = (rate.n(), rate.p());
        let mut counted: Vec<i128> = Vec::new();
        let mut blocked: Option<i128> = None;
        events
            .iter()
            .map(|&(t, _)| {
                let ms = t.div_euclid(1000) * 1000;
                let live = |counted: &[i128]| counted.iter().filter(|&&s| s + p > ms).count();
                match blocked {
                    Some(end) if end <= ms => {
                        blocked = None;
                        counted.clear();
                        counted.push(ms);
                    }
                    Some(_) => {}
                    None => {
                        counted.push(ms);
                        if live(&counted) as i128 > n {
                            blocked = Some(ms + p);
                        }
                    }
                }
                blocked.is_none()
            })
            .collect()
    }

    const NAME: &'static str = "nestjs-throttler";
    const HELP: &'static str = "@nestjs/throttler: each hit expires ttl after it; the first \
                                overrun blocks the key for block=DUR (ttl unless given)";
    const USES_BURST: bool = false;
    const SPENDS_COST: bool = false;
    const MODELS: Option<&'static str> = Some("@nestjs/throttler 6.7.1, ThrottlerStorageService");
    const QUIRKS: Option<&'static str> = Some(
        "the guard's default blockDuration is ttl: the first overrun blocks the key; with \
         blockDuration 0 a sliding log of passed hits (through 6.7.0 each overrun cleared the \
         hits and passed: it never limited)",
    );
    const PROVEN: Option<&'static str> = Some("the npm package's ThrottlerStorageService on node:test's fake clock (tests/cli/npm_peers.rs)");
    const EXPORT: Option<Export> = Some(EXPORT);
    const RATE_WORDS: Option<super::RateWords> = Some(super::RateWords {
        system: "@nestjs/throttler",
        keys: &["ttl", "limit"],
        how: "limit=N with ttl=MS: give both",
        read: rate_from_words,
        written: rate_as_words,
    });

    fn refuses(rate: Rate) -> Option<String> {
        node_window(rate, "@nestjs/throttler's ttl")
    }

    fn new_limit(rate: Rate, _burst: NonZeroU64) -> NestjsThrottler {
        NestjsThrottler::new(rate)
    }

    fn with_params(self, params: NestParams) -> NestjsThrottler {
        match params.block {
            Block::Ttl => self,
            Block::Off => NestjsThrottler { block: 0, ..self },
            Block::For(block) => NestjsThrottler { block: block.as_micros(), ..self },
        }
    }

    /// Without a block, a sliding log's; with one, at most N + 1 counted in any ttl, of
    /// which N pass.
    fn promise(limit: &Limit) -> String {
        let (n, p) = (limit.rate.count(), limit.rate.period());
        format!("at most {n} in any {p}")
    }

    fn bound(limit: &Limit) -> Bound {
        Bound::Period { most: limit.rate.count() }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::decisions;
    use super::*;

    fn ms(ms: &[i64]) -> Vec<Timestamp> {
        ms.iter().map(|&ms| Timestamp::from_micros(ms * 1000).unwrap()).collect()
    }

    fn throttler(rate: &str, block: Option<&str>) -> NestjsThrottler {
        let given: Vec<(&str, Option<&str>)> = block.map(|b| ("block", Some(b))).into_iter().collect();
        NestjsThrottler::new(rate.parse().unwrap()).with_params(NestParams::parse(&given).unwrap())
    }

    #[test]
    fn without_a_block_it_is_a_sliding_log_of_passed_hits() {
        // 2 per 1000 ms, block=0: hits at 0 and 400 pass; 500 and 999 are refused and not
        // counted, so at 1000 the hit of 0 has expired and one passes.
        let mut limiter = throttler("2/1000ms", Some("0"));
        let got = decisions(&mut limiter, &ms(&[0, 400, 500, 999, 1000, 1001, 1400]));
        assert_eq!(got, [true, true, false, false, true, false, true]);
    }

    #[test]
    fn a_hammering_client_recovers_in_6_7_1() {
        // 1 per 100 ms, block=0, a hit every 10 ms: refused hits are not counted, so the
        // client passes once every 100 ms. (6.7.0 passed every hit: each overrun cleared the
        // hits and passed.)
        let mut limiter = throttler("1/100ms", Some("0"));
        let times: Vec<i64> = (0..100).map(|i| i * 10).collect();
        let got = decisions(&mut limiter, &ms(&times));
        let passed: Vec<i64> = times.iter().zip(&got).filter(|&(_, &p)| p).map(|(&t, _)| t).collect();
        assert_eq!(passed, [0, 100, 200, 300, 400, 500, 600, 700, 800, 900]);
    }

    #[test]
    fn the_first_overrun_blocks_the_key_for_its_ttl_by_default() {
        // 2 per 1000 ms, the default block of 1000 ms: the third hit, at 10 ms, blocks the key
        // until 1010; at 1010 the block lifts and that hit counts as the first.
        let mut limiter = throttler("2/1000ms", None);
        let got = decisions(&mut limiter, &ms(&[0, 5, 10, 500, 1009, 1010, 1011, 1012]));
        assert_eq!(got, [true, true, false, false, false, true, true, false]);
        let mut limiter = throttler("2/1000ms", Some("5s"));
        let got = decisions(&mut limiter, &ms(&[0, 5, 10, 1010, 5009, 5010]));
        assert_eq!(got, [true, true, false, false, false, true]);
    }
}
