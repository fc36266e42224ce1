//! nginx's `limit_req`, to its own arithmetic: milli-requests, whole milliseconds, truncation.

use std::num::NonZeroU64;

use super::params::{ParamError, Parameters};
use super::promise::Limit;
use super::zone::{Zone, ZoneSize};
use super::{Decision, Held, KeyStore, KeyedState, Rule};
use crate::units::rate::Rate;
use crate::units::time::Timestamp;

/// nginx's `limit_req zone=… burst=B`, as `ngx_http_limit_req_module.c`
/// of nginx 1.22.1 decides (`ngx_http_limit_req_lookup`, lines 399–520; the rate from
/// `ngx_http_limit_req_zone`, line 939; the burst, line 1060):
///
/// - The rate is kept in milli-requests a second, truncated: `N·1000/scale`, with scale 1
///   for r/s and 60 for r/m, so `1r/m` leaks 16 a second, one request each 62.5 s.
/// - Times are whole milliseconds, floored.
/// - A key's first request is not charged: its node starts with no excess.
/// - Then `excess = stored − ⌊rate·ms/1000⌋ + 1000`, at least 0, where `ms` is the time
///   since the node's `last` (below −60 s it counts as 1 ms, below 0 as 0). Above
///   `B·1000` the request is refused and nothing changes; else the excess is stored, and
///   `last` moves to now if `ms` is not 0, so the truncated part of the leak is lost.
/// - A request admitted with more excess than `delay=D` allows waits for it to leak to D
///   (its parameters, `Delay`); the decisions do not depend on it.
///
/// Its burst b here is nginx's `burst=B` plus one, the requests that pass at once from
/// rest: `--burst B` gives `burst=B`, and no `--burst` nginx's default, 0. nginx counts each
/// request once: the command line gives it no cost (`SPENDS_COST`), and a cost c given
/// here counts as c requests. Keys share the zone: a new key frees up to two idle nodes,
/// kept in order by its own store of keys, [`Zoned`]; and when the zone's memory is full
/// (`zone=`, 10m by default: [`ZoneSize::nodes`]), the least recently used node whatever
/// it holds.
#[derive(Clone, Debug)]
pub struct Nginx {
    /// The rate in milli-requests a second, truncated as nginx truncates it.
    milli: i128,
    /// `B·1000`: the most excess a passed request may leave.
    most: i128,
    /// `D·1000` for `delay=D`: the most excess a passed request may leave and be served at
    /// once; `None` with `nodelay`.
    served: Option<i128>,
    /// N, the wait units in a microsecond ([`Decision::wait`]).
    n: i128,
    /// The nodes its zone holds.
    nodes: usize,
    state: Node,
}

/// When nginx serves a request it admits, nginx's own parameters: at once, or once its
/// excess has leaked to `delay=D` (`limit_req`'s parameters; `limit_req_dry_run` delays
/// nothing, and refuses nothing, but decides and charges the same). None given is nginx's
/// default, `delay=0`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delay {
    /// `delay=D`: a request admitted with more than D requests of excess waits until it
    /// has leaked to D. nginx's default is `delay=0`.
    Beyond(u64),
    /// `nodelay`: every admitted request at once.
    Never,
    /// `limit_req_dry_run on`: nothing delayed or refused; the refused are those nginx
    /// logs as `REJECTED_DRY_RUN`. Beside it, `limit_req`'s own `delay=` or `nodelay`,
    /// which nginx takes, and the dry run overrides.
    DryRun(Beside),
}

/// What `limit_req` says of delays beside `limit_req_dry_run on`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Beside {
    /// Nothing: nginx's default, `delay=0`.
    #[default]
    Nothing,
    /// `delay=D`.
    Delay(u64),
    /// `nodelay`.
    NoDelay,
}

impl Default for Delay {
    /// nginx's default, `delay=0`.
    fn default() -> Delay {
        Delay::Beyond(0)
    }
}

impl std::fmt::Display for Delay {
    /// As nginx writes it: `delay=D`, `nodelay`, or `dry-run` (`limit_req_dry_run on`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Delay::Beyond(d) => write!(f, "delay={d}"),
            Delay::Never => f.write_str("nodelay"),
            Delay::DryRun(Beside::Nothing) => f.write_str("dry-run"),
            Delay::DryRun(Beside::Delay(d)) => write!(f, "delay={d}, dry-run"),
            Delay::DryRun(Beside::NoDelay) => f.write_str("nodelay, dry-run"),
        }
    }
}

/// nginx's own parameters: when it serves what it admits, and its zone's size.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NginxParams {
    /// `delay=D`, `nodelay`, and `limit_req_dry_run`.
    pub delay: Delay,
    /// `limit_req_zone`'s `zone=NAME:SIZE`.
    pub zone: ZoneSize,
}

impl std::fmt::Display for NginxParams {
    /// The delay as nginx writes it, and a zone of other than 10m.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.delay)?;
        match self.zone == ZoneSize::default() {
            true => Ok(()),
            false => write!(f, ", zone={}", self.zone),
        }
    }
}

impl Parameters for NginxParams {
    const KEYS: &'static [&'static str] = &["delay", "nodelay", "dry-run", "zone"];

    fn parse(given: &[(&str, Option<&str>)]) -> Result<NginxParams, ParamError> {
        let (zone, rest): (Vec<_>, Vec<_>) = given.iter().partition(|(key, _)| *key == "zone");
        let zone = match zone[..] {
            [] => ZoneSize::default(),
            [(_, Some(value))] => value.parse().map_err(|why| ParamError::Value {
                key: "zone".into(),
                value: value.into(),
                why,
            })?,
            _ => {
                let why = "is not a size, such as 10m or 64k";
                return Err(ParamError::Value { key: "zone".into(), value: String::new(), why });
            }
        };
        Ok(NginxParams { delay: Delay::parse(&rest)?, zone })
    }

    fn shown(&self) -> Option<String> {
        Some(self.to_string())
    }

    fn tells_waits(&self) -> bool {
        self.delay.tells_waits()
    }
}

impl Delay {
    /// Reads `delay=`, `nodelay` and `dry-run` from what was given (the zone aside), as
    /// [`NginxParams`] parses them; none given is nginx's default.
    fn parse(given: &[(&str, Option<&str>)]) -> Result<Delay, ParamError> {
        // nginx reads `limit_req_dry_run` apart from `limit_req`'s delay=/nodelay.
        let (mut delay, mut dry_run) = (None, false);
        for &(key, value) in given {
            let found = match (key, value) {
                ("delay", Some(value)) => Delay::Beyond(value.trim().parse().map_err(|_| {
                    ParamError::Value {
                        key: key.to_owned(),
                        value: value.to_owned(),
                        why: "is not a whole number of requests",
                    }
                })?),
                ("delay", None) => {
                    let why = "is not a whole number of requests";
                    return Err(ParamError::Value { key: key.into(), value: String::new(), why });
                }
                ("nodelay", None) => Delay::Never,
                ("dry-run", None) => {
                    dry_run = true;
                    continue;
                }
                ("nodelay" | "dry-run", Some(value)) => {
                    let why = "takes no value";
                    return Err(ParamError::Value { key: key.into(), value: value.into(), why });
                }
                _ => return Err(ParamError::NotMine(key.to_owned())),
            };
            if delay.replace(found).is_some() {
                return Err(ParamError::Conflict(
                    "delay= and nodelay say different things: give one",
                ));
            }
        }
        Ok(match (dry_run, delay) {
            (false, delay) => delay.unwrap_or_default(),
            (true, None) => Delay::DryRun(Beside::Nothing),
            (true, Some(Delay::Beyond(d))) => Delay::DryRun(Beside::Delay(d)),
            (true, Some(_)) => Delay::DryRun(Beside::NoDelay),
        })
    }

    /// Whether nginx, so set, makes what it admits wait (`delay=`).
    fn tells_waits(self) -> bool {
        matches!(self, Delay::Beyond(_))
    }
}

/// One key's node in the zone: none before its first request.
#[derive(Clone, Copy, Debug, Default)]
pub struct Node(Option<Excess>);

impl Node {
    /// The excess the node holds, in milli-requests: 0 before its first request.
    pub(crate) fn excess(&self) -> i64 {
        self.0.map_or(0, |kept| kept.excess)
    }
}

/// What nginx keeps for a key: its excess in milli-requests, and the millisecond of its
/// last charged leak.
#[derive(Clone, Copy, Debug)]
pub struct Excess {
    excess: i64,
    last: i64,
}

impl Nginx {
    /// Returns `limit_req` at `rate` with `burst=` one less than `burst`; `rate` must be
    /// one nginx can write ([`nginx_rate`]).
    pub fn new(rate: Rate, burst: NonZeroU64) -> Nginx {
        // N·1000/scale for N r/s or r/m: N per P µs is N·10^9/P milli-requests a second.
        let micros = i128::from(rate.period().as_micros());
        Nginx {
            milli: i128::from(rate.count()) * 1_000_000_000 / micros,
            most: (i128::from(burst.get()) - 1) * 1000,
            served: None,
            n: rate.n(),
            nodes: ZoneSize::default().nodes(),
            state: Node::default(),
        }
    }

    /// Returns it serving what it admits as `delay` says.
    pub fn with_delay(self, delay: Delay) -> Nginx {
        let served = match delay {
            Delay::Beyond(d) => Some(i128::from(d) * 1000),
            Delay::Never | Delay::DryRun(_) => None,
        };
        Nginx { served, ..self }
    }

    /// How long a request admitted with `excess` waits, in units of 1/N µs: nginx's
    /// `(excess − D·1000)·1000/rate` whole milliseconds (`ngx_http_limit_req_account`,
    /// lines 567–571 and 604–613), when the excess is above D·1000.
    fn wait(&self, excess: i128) -> i128 {
        // A rate below one milli-request a second is none nginx can write (`refuses` says
        // so); made all the same, it waits as if it leaked one.
        let milli = self.milli.max(1);
        match self.served {
            Some(served) if excess > served => (excess - served) * 1000 / milli * 1000 * self.n,
            _ => 0,
        }
    }

    /// What leaks in `ms` milliseconds, in milli-requests, truncated: `rate·ms/1000`.
    fn leak(&self, ms: i64) -> i128 {
        self.milli * i128::from(ms) / 1000
    }
}

/// Returns the rate as nginx writes it, `N r/s` (scale 1) or `N r/m` (scale 60), or `None`
/// if it is neither: nginx knows no other period.
pub fn nginx_rate(rate: Rate) -> Option<(u64, u64)> {
    let micros = rate.period().as_micros();
    [(1_000_000, 1), (60_000_000, 60)].into_iter().find_map(|(unit, scale)| {
        // N per P is M per unit when N·unit is a multiple of P.
        let per_unit = i128::from(rate.count()) * unit;
        let count = (per_unit % i128::from(micros) == 0).then(|| per_unit / i128::from(micros))?;
        Some((u64::try_from(count).ok().filter(|&c| c > 0)?, scale))
    })
}

/// Returns the rate as nginx's configuration writes it, `10r/s` or `30r/m`, or `None` if
/// nginx cannot write it.
pub fn nginx_notation(rate: Rate) -> Option<String> {
    nginx_rate(rate).map(|(count, scale)| format!("{count}r/{}", if scale == 1 { "s" } else { "m" }))
}

impl KeyedState for Nginx {
    type State = Node;
    type Keys = Zoned;

    #[inline]
    fn step(&self, node: &mut Node, now: Timestamp, cost: u64, force: bool) -> Decision {
        let now = now.as_micros().div_euclid(1000);
        let Some(kept) = &mut node.0 else {
            // A new node: its first request is not charged, and is served at once.
            *node = Node(Some(Excess { excess: 0, last: now }));
            return Decision { passed: true, wait: 0 };
        };
        // A node opened by a chained limit's lookup has `last` at i64::MIN (nginx's 0):
        // the leak since is past any excess.
        let ms = match now.saturating_sub(kept.last) {
            ms if ms < -60_000 => 1,
            ms if ms < 0 => 0,
            ms => ms,
        };
        let excess = (i128::from(kept.excess) - self.leak(ms) + 1000 * i128::from(cost)).max(0);
        if excess > self.most && !force {
            return Decision { passed: false, wait: 0 };
        }
        // At most B·1000 ≤ 10^15 unless forced past it (a fleet's charges): then it
        // saturates, far past any burst.
        kept.excess = i64::try_from(excess).unwrap_or(i64::MAX);
        if ms != 0 {
            kept.last = now;
        }
        Decision { passed: true, wait: self.wait(excess) }
    }

    /// A key without a node (its zone freed it, or it never had one) is new to nginx.
    /// A node whose excess has leaked away is not: nginx charges its next request, and
    /// makes a new key's free.
    fn at_rest(&self, node: &Node, _now: Timestamp) -> bool {
        node.0.is_none()
    }

    fn state_mut(&mut self) -> &mut Node {
        &mut self.state
    }
}

/// nginx's zone, the store its keys share: their nodes in the order of their last lookup,
/// from which a new key frees idle ones. Empty for keys that share nothing.
#[derive(Clone, Debug)]
pub struct Zoned(Option<Zone>);

impl KeyStore<Nginx> for Zoned {
    const SHARED: bool = true;

    fn new(shared: bool) -> Zoned {
        Zoned(shared.then(Zone::new))
    }

    /// `ngx_http_limit_req_lookup`: a new key first frees up to two of the least recently
    /// looked-up nodes, if idle long enough and leaked away (`ngx_http_limit_req_expire`);
    /// any key then goes to the front. A lookup that does not account (`account` 0: a
    /// chained `limit_req` before the last) gives a new key a node with no excess and
    /// `last` 0, nginx's monotonic clock's start: its next request leaks all, and so is
    /// free.
    #[inline]
    fn look_up(&mut self, nginx: &Nginx, keys: Held<'_, Nginx>, key: usize, now: Timestamp, charged: bool) {
        let Some(zone) = &mut self.0 else { return };
        let Held { states, fresh } = keys;
        if states[key].0.is_none() {
            let mut free = |zone: &mut Zone, forced| nginx.free_last(zone, states, fresh, now, forced);
            let _ = free(zone, false) && free(zone, false);
            // The zone's memory full (`ngx_slab_alloc_locked` fails): `expire(ctx, 0)`
            // frees the least recent node, and up to two more idle ones.
            if zone.held() >= nginx.nodes {
                let _ = free(zone, true) && free(zone, false) && free(zone, false);
            }
            if !charged {
                states[key] = Node(Some(Excess { excess: 0, last: i64::MIN }));
            }
        }
        zone.touch(key);
    }

    fn renumbered(&self, kept: &[usize]) -> Zoned {
        Zoned(self.0.as_ref().map(|zone| zone.renumbered(kept)))
    }
}

impl Nginx {
    /// Frees the zone's least recently looked-up node, if `forced` or [`freed`](Nginx::freed)
    /// (idle and leaked away), and says whether it did; its key's state is `fresh` again.
    fn free_last(
        &self,
        zone: &mut Zone,
        states: &mut [Node],
        fresh: &Node,
        now: Timestamp,
        forced: bool,
    ) -> bool {
        let Some(last) = zone.tail() else { return false };
        if !forced && !self.freed(&states[last], now) {
            return false;
        }
        zone.free(last);
        states[last].clone_from(fresh);
        true
    }

    /// `ngx_http_limit_req_expire` with n = 1: whether a zone frees the node in `node`
    /// when a new key comes at `now`: idle 60 s or more (either way), its excess leaked
    /// away.
    fn freed(&self, node: &Node, now: Timestamp) -> bool {
        let Some(kept) = node.0 else { return false };
        let ms = (now.as_micros().div_euclid(1000).saturating_sub(kept.last)).saturating_abs();
        ms >= 60_000 && i128::from(kept.excess) - self.leak(ms) <= 0
    }
}

impl Rule for Nginx {
    type Params = NginxParams;

    #[cfg(test)]
    fn by_the_rule(rate: Rate, b: u64, events: &[(i128, u64)]) -> Vec<bool> {
        // limit_req: the rate in milli-requests a second, truncated; whole ms; the first
        // request free; a truncated leak, lost when `last` moves.
        let (n, p, b) = (rate.n(), rate.p(), i128::from(b));
        // Its node (excess in milli-requests, last whole ms), none before the first.
        let mut node: Option<(i128, i128)> = None;
        super::tests::by_rule(events, |_, t, c| {
            let (milli, now) = (n * 1_000_000_000 / p, t.div_euclid(1000));
            match node {
                None => {
                    node = Some((0, now));
                    true
                }
                Some((excess, at)) => {
                    let ms = now - at;
                    let excess = (excess - milli * ms / 1000 + 1000 * c).max(0);
                    let ok = excess <= (b - 1) * 1000;
                    if ok {
                        node = Some((excess, if ms == 0 { at } else { now }));
                    }
                    ok
                }
            }
        })
    }

    const NAME: &'static str = "nginx";
    const HELP: &'static str =
        "nginx's limit_req, to its arithmetic: milli-requests, whole ms, truncated";
    const USES_BURST: bool = true;
    const BURST_BEYOND_FIRST: bool = true;
    const SKIPS_EMPTY_KEY: bool = true;
    const MODELS: Option<&'static str> = Some("nginx 1.22.1, limit_req");
    const QUIRKS: Option<&'static str> = Some("burst= counts the requests beyond the first; the excess is kept in thousandths of a request and leaks truncated; a full zone frees its least recently used key");
    const PROVEN: Option<&'static str> = Some("Debian's nginx under libfaketime, one HTTP request an event (tests/cli/nginx.rs)");
    const EXPORT: Option<super::Export> = Some(export::EXPORT);
    const OWN_SIZE: Option<super::OwnSize> = Some(super::OwnSize {
        setting: "burst",
        help: "nginx's limit_req: burst=, in its milli-request arithmetic",
        finder: |rate, params| match params {
            super::Params::Nginx(params) => Box::new(super::NginxBurst::in_zone(rate, params.zone)),
            _ => Box::new(super::NginxBurst::new(rate)),
        },
        refuses: |rate| {
            let neither = format!("nginx writes a rate as N r/s or N r/m, and {rate} is neither");
            nginx_rate(rate).is_none().then_some(neither)
        },
        weighs: false,
        line: |rate, burst| {
            let rate = nginx_notation(rate).unwrap_or_else(|| rate.to_string());
            format!("rate={rate} burst={burst} refuses none of the events")
        },
        in_replay: true,
    });
    const RATE_WORDS: Option<super::RateWords> = Some(super::RateWords {
        system: "nginx",
        // nginx's `10r/s` is read by `rate=` itself.
        keys: &[],
        how: "rate=Nr/s or rate=Nr/m",
        read: |_| None,
        written: |rate| nginx_notation(rate).map(|rate| format!("rate={rate}")),
    });
    const SPENDS_COST: bool = false;
    const DEFAULT_BURST: Option<u64> = Some(0);

    fn refuses(rate: Rate) -> Option<String> {
        nginx_rate(rate).is_none().then(|| {
            format!("nginx writes a rate as N r/s or N r/m, and {rate} is neither: limit_req cannot run at it")
        })
    }

    fn new_limit(rate: Rate, burst: NonZeroU64) -> Nginx {
        Nginx::new(rate, burst)
    }

    fn with_params(self, params: NginxParams) -> Nginx {
        Nginx { nodes: params.zone.nodes(), ..self.with_delay(params.delay) }
    }

    /// The token bucket's promise with b = burst + 1; the rate nginx keeps is at most the
    /// exact one, but times floored to the millisecond can leak up to 1 ms early.
    fn promise(limit: &Limit) -> String {
        format!("at most burst + 1 + r·T = {} + T·{} in any interval T", limit.burst, limit.rate)
    }
}

mod export;
#[cfg(test)]
mod tests;
