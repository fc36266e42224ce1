//! Limits settled after the response, decided live: a request is decided when it comes
//! (reserving its estimate) and settled when its response ends, by its ticket, with the
//! real counts.

use std::collections::HashMap;
use std::time::Instant;

use ratelimit_core::settle::{Amount, Charge, Settling};
use schemars::JsonSchema;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::live_limiter::Clock;
use crate::redis::{LiveLayer, LivePolicy, RedisTarget, settle_kind};
use crate::settled::{Bound, LayerSpec, Sum, key_column};
use crate::units::time::Timestamp;

/// The most keys a live settling holds: each key's limiters stay, as a settling's do.
pub const MOST_KEYS: usize = 1 << 24;

/// The most requests open at once: each holds its values until it is settled.
pub const MOST_OPEN: usize = 1 << 24;

/// A live decision on a request settled after the response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Admission {
    /// Whether every layer admitted it.
    pub passed: bool,
    /// The ticket that settles it, if it passed.
    pub ticket: Option<u64>,
    /// The layers that refused it, by their place (from 0).
    pub refused: Vec<usize>,
    /// How long until it would pass, in µs, were nothing else to happen but time: 0 if it
    /// passed; `None` if some layer never would.
    pub retry_after_us: Option<i64>,
}

/// Layers settled after the response, decided live in memory: [`decide`] a request with
/// the values its estimates and arrival costs sum, then [`settle`] it by its ticket with
/// the real counts. Times must not go back.
///
/// [`decide`]: LiveSettling::decide
/// [`settle`]: LiveSettling::settle
pub struct LiveSettling {
    specs: Vec<LayerSpec>,
    settling: Settling,
    keyed: bool,
    keys: HashMap<Vec<u8>, u32>,
    /// Each open request's key and the values it was decided with.
    open: HashMap<u64, HashMap<String, u64>>,
    last: Option<Timestamp>,
    clock: Clock,
}

impl LiveSettling {
    /// Makes a live settling of `specs` (1 to 16 layers, the keyed ones keyed by one
    /// column), each rate checked as a replay checks it.
    pub fn new(specs: &[LayerSpec]) -> Result<LiveSettling> {
        let policy = |message: String| Error::Policy { message };
        let keyed = key_column(specs).map_err(|e| policy(e.to_string()))?.is_some();
        let layers = crate::settled::layers(specs, None)?;
        let settling = Settling::new(&layers).map_err(|e| policy(e.to_string()))?;
        Ok(LiveSettling {
            specs: specs.to_vec(),
            settling,
            keyed,
            keys: HashMap::new(),
            open: HashMap::new(),
            last: None,
            clock: Clock::start(),
        })
    }

    /// Decides a request of `key` at `now` (the clock's time if `None`), each layer asked
    /// its estimate (with `reserve=`), 1 (with `charge=completion`) or its cost, summed
    /// from `values` (a column's name to its value): every column those sums name must be
    /// there. A request that passes is open until [`settle`](LiveSettling::settle)d.
    pub fn decide(
        &mut self,
        now: Option<Timestamp>,
        key: Option<&[u8]>,
        values: &HashMap<String, u64>,
    ) -> Result<Admission> {
        let now = self.now(now)?;
        let key = self.key(key)?;
        if self.open.len() >= MOST_OPEN {
            let message = format!("{MOST_OPEN} requests are open: settle some first");
            return Err(Error::Policy { message });
        }
        let mut amounts = Vec::with_capacity(self.specs.len());
        for spec in &self.specs {
            let reserve = match &spec.reserve {
                Some(sum) => total(sum, values, "decide()")?,
                None => 0,
            };
            // The real cost is not known yet unless it is charged on arrival.
            let cost = match spec.settles_after() {
                true => 0,
                false => total(&spec.cost, values, "decide()")?,
            };
            amounts.push(Amount { reserve, cost });
        }
        let (refused, ticket) = (self.settling.open(now, key, &amounts))
            .map_err(|e| Error::Policy { message: e.to_string() })?;
        self.last = Some(now);
        let refused_layers = (0..self.specs.len()).filter(|n| refused & (1 << n) != 0).collect();
        let retry_after_us = match refused {
            0 => Some(0),
            _ => {
                let probe = ratelimit_core::settle::Request { arrival: now, completion: now, key };
                self.settling.retry_after(probe, &amounts, refused)
            }
        };
        if let Some(ticket) = ticket {
            self.open.insert(ticket, values.clone());
        }
        Ok(Admission { passed: refused == 0, ticket, refused: refused_layers, retry_after_us })
    }

    /// Settles the open request of `ticket` at `now` (the clock's time if `None`): each
    /// layer's real cost is `cost` if given, else its `cost=` sum of the values it was
    /// decided with and `values` (which add to them, or replace them).
    pub fn settle(
        &mut self,
        ticket: u64,
        now: Option<Timestamp>,
        cost: Option<u64>,
        values: &HashMap<String, u64>,
    ) -> Result<()> {
        let now = self.now(now)?;
        let Some(mut known) = self.open.get(&ticket).cloned() else {
            let message = format!(
                "no open request has ticket {ticket}: it was never given, or is settled already"
            );
            return Err(Error::Policy { message });
        };
        known.extend(values.iter().map(|(k, v)| (k.clone(), *v)));
        let costs = (self.specs.iter())
            .map(|spec| match cost {
                Some(cost) => Ok(cost),
                None => total(&spec.cost, &known, "settle()"),
            })
            .collect::<Result<Vec<u64>>>()?;
        (self.settling.close(ticket, now, &costs))
            .map_err(|e| Error::Policy { message: e.to_string() })?;
        self.open.remove(&ticket);
        self.last = Some(now);
        Ok(())
    }

    /// The requests open: decided, passed, and not yet settled.
    pub fn open(&self) -> usize {
        self.open.len()
    }

    /// The time of a call: `now`, or the clock's; never before the last call's.
    fn now(&self, now: Option<Timestamp>) -> Result<Timestamp> {
        let now = now.unwrap_or_else(|| self.clock.at(Instant::now()));
        match self.last {
            Some(last) if now < last => {
                let message = format!(
                    "{now} is before {last}, the time of the last call: a limit's clock never goes back"
                );
                Err(Error::Policy { message })
            }
            _ => Ok(now),
        }
    }

    /// The number of `key`, as the keyed layers see it (0 for none).
    fn key(&mut self, key: Option<&[u8]>) -> Result<u32> {
        let (true, Some(key)) = (self.keyed, key) else { return Ok(0) };
        if let Some(&number) = self.keys.get(key) {
            return Ok(number);
        }
        if self.keys.len() >= MOST_KEYS {
            let message = format!("{MOST_KEYS} keys are held: a live settling holds no more");
            return Err(Error::Policy { message });
        }
        let number = u32::try_from(self.keys.len()).unwrap_or(u32::MAX);
        self.keys.insert(key.to_vec(), number);
        Ok(number)
    }
}

/// What a live check of a policy settled after the response did in Redis: decided a
/// request of `key` (or, with `settled`, settled one decided before), and each layer's
/// answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct SettledCheck {
    /// The key checked.
    pub key: String,
    /// Whether this call settled a request (else it decided one).
    pub settled: bool,
    /// Whether every layer admitted it (always true once settled).
    pub allowed: bool,
    /// Each layer, in the order given.
    pub layers: Vec<SettledCheckLayer>,
}

/// One layer's answer to a live check.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct SettledCheckLayer {
    /// The layer, as `--limit` writes it.
    pub spec: String,
    /// Whether it admitted the request.
    pub allowed: bool,
    /// What it took on arrival (decided) or settled (given back, or taken after), in units,
    /// given back as a negative number; for a cap, the request in flight (1) or out (−1).
    pub units: i64,
}

/// How a live check in Redis is asked.
#[derive(Clone, Copy, Debug)]
pub struct Asked<'a> {
    /// To settle a request decided before (else to decide one).
    pub settle: bool,
    /// The real cost of every layer, if one is given; else each layer's sum of the values.
    pub cost: Option<u64>,
    /// How messages name the call: the program's `check` (`--value` then names a value), or
    /// a Python method such as `decide()`.
    pub call: &'a str,
}

/// Layers settled after the response, decided live in Redis at the server's clock: each
/// request decided in one script call, all or nothing, and settled by its ticket in
/// another, as `check --settle` settles it; the open tickets, and the values each was
/// decided with, are kept here (at most [`MOST_OPEN`]). A live settlement runs on one
/// server, not a cluster.
pub struct RedisSettling {
    redis: Live,
    next: u64,
    open: HashMap<u64, (String, HashMap<String, u64>)>,
}

/// A policy asked in Redis: its layers, how the settle script keeps each, the keys'
/// prefix, and the server, connected once.
struct Live {
    specs: Vec<LayerSpec>,
    kinds: Vec<Kind>,
    prefix: String,
    policy: LivePolicy,
}

/// How the settle script keeps a layer: its kind, and its N, P (µs) and burst.
type Kind = (&'static str, (i128, i128, i128));

impl Live {
    /// Checks `specs` as a replay does, and connects to `target`.
    fn connect(target: &RedisTarget, specs: &[LayerSpec]) -> Result<Live> {
        let kinds = kinds(specs)?;
        let policy = LivePolicy::connect(target).map_err(|e| Error::of(&e))?;
        let (specs, prefix) = (specs.to_vec(), target.prefix.clone());
        Ok(Live { specs, kinds, prefix, policy })
    }

    /// Decides a request of `key` (or settles one decided before) in one script call, as
    /// [`check_in_redis`] says.
    fn ask(
        &mut self,
        key: &str,
        values: &HashMap<String, u64>,
        asked: Asked<'_>,
    ) -> Result<SettledCheck> {
        let Asked { settle, cost, call } = asked;
        let signed = |units: u64| i64::try_from(units).unwrap_or(i64::MAX);
        let mut layers = Vec::with_capacity(self.specs.len());
        let mut units = Vec::with_capacity(self.specs.len());
        for (n, (spec, &(kind, sizes))) in self.specs.iter().zip(&self.kinds).enumerate() {
            let whose = if spec.key.is_some() { key } else { SHARED_KEY };
            let name = format!("{}{whose}:settle:{n}", self.prefix).into_bytes();
            let estimate = match &spec.reserve {
                Some(sum) => total(sum, values, call)?,
                None => 0,
            };
            let real = |values| match cost {
                Some(cost) => Ok(cost),
                None => total(&spec.cost, values, call),
            };
            let cap = kind == "cap";
            let (asked, taken) = match (cap, spec.charge) {
                (true, _) => (1, 0),
                (false, Charge::Arrival) if !settle => {
                    let cost = real(values)?;
                    (cost, cost)
                }
                (false, Charge::Arrival) => (0, 0),
                (false, Charge::Reserve) => (estimate, estimate),
                (false, Charge::Completion) => (1, 0),
            };
            let settlement = match (cap, spec.charge, settle) {
                (_, _, false) | (true, _, true) | (false, Charge::Arrival, true) => ("none", 0),
                (false, Charge::Reserve, true) => {
                    let cost = real(values)?;
                    match estimate >= cost {
                        true => ("give", estimate - cost),
                        false => ("take", cost - estimate),
                    }
                }
                (false, Charge::Completion, true) => ("take", real(values)?),
            };
            // A cap moves one request in flight, in or out.
            units.push(match settlement {
                _ if cap => {
                    if settle {
                        -1
                    } else {
                        1
                    }
                }
                _ if !settle => signed(taken),
                ("give", given) => -signed(given),
                (_, taken_after) => signed(taken_after),
            });
            layers.push(LiveLayer { key: name, kind, sizes, asked, taken, settle: settlement });
        }
        let answers = self.policy.ask(&layers, settle).map_err(|e| Error::of(&e))?;
        let all = answers.iter().all(|&a| a);
        let layers = (self.specs.iter().zip(answers).zip(units))
            .map(|((spec, allowed), units)| SettledCheckLayer {
                spec: spec.to_string(),
                allowed,
                // A refused request takes nothing from any layer.
                units: if all || settle { units } else { 0 },
            })
            .collect();
        Ok(SettledCheck { key: key.to_owned(), settled: settle, allowed: all, layers })
    }
}

impl RedisSettling {
    /// Makes a live settling of `specs` in Redis at `target`, connected once.
    pub fn new(target: RedisTarget, specs: &[LayerSpec]) -> Result<RedisSettling> {
        let redis = Live::connect(&target, specs)?;
        Ok(RedisSettling { redis, next: 0, open: HashMap::new() })
    }

    /// Decides a request of `key` at the server's clock, its estimates and arrival costs
    /// summed from `values`: its ticket, if it passed, settles it. No retry-after is known.
    pub fn decide(&mut self, key: &str, values: &HashMap<String, u64>) -> Result<Admission> {
        if self.open.len() >= MOST_OPEN {
            let message = format!("{MOST_OPEN} requests are open: settle some first");
            return Err(Error::Policy { message });
        }
        let asked = Asked { settle: false, cost: None, call: "decide()" };
        let found = self.redis.ask(key, values, asked)?;
        let refused: Vec<usize> =
            (found.layers.iter().enumerate()).filter(|(_, l)| !l.allowed).map(|(n, _)| n).collect();
        let ticket = found.allowed.then(|| {
            self.next += 1;
            self.open.insert(self.next, (key.to_owned(), values.clone()));
            self.next
        });
        let retry_after_us = found.allowed.then_some(0);
        Ok(Admission { passed: found.allowed, ticket, refused, retry_after_us })
    }

    /// Settles the request of `ticket` at the server's clock: at the real `cost` of every
    /// layer if given, else at each layer's sum of the values it was decided with and
    /// `values`.
    pub fn settle(
        &mut self,
        ticket: u64,
        cost: Option<u64>,
        values: &HashMap<String, u64>,
    ) -> Result<()> {
        let Some((key, decided)) = self.open.get(&ticket) else {
            let message = format!("request {ticket} is not open: it was settled, or never passed");
            return Err(Error::Policy { message });
        };
        let mut all = decided.clone();
        all.extend(values.iter().map(|(name, &value)| (name.clone(), value)));
        let asked = Asked { settle: true, cost, call: "settle()" };
        self.redis.ask(key, &all, asked)?;
        self.open.remove(&ticket);
        Ok(())
    }

    /// The requests decided, passed and not yet settled.
    pub fn open(&self) -> usize {
        self.open.len()
    }
}

/// Decides a request of `key` over `specs` in Redis at `target`, at the server's clock, all
/// or nothing in one script call: each layer asked its estimate, 1 or its cost, summed
/// from `values`; a cap one more in flight. With `settle`, settles instead a request
/// decided before with the same values and its real counts: each reservation given back
/// (or the rest taken), each charge after the response taken, each cap one fewer.
pub fn check_in_redis(
    target: &RedisTarget,
    specs: &[LayerSpec],
    key: &str,
    values: &HashMap<String, u64>,
    asked: Asked<'_>,
) -> Result<SettledCheck> {
    Live::connect(target, specs)?.ask(key, values, asked)
}

/// How the settle script keeps each layer of `specs`, if they settle in Redis: as a replay
/// settles them (one key column, a reservation only where the limiter gives back), each a
/// kind the script keeps.
fn kinds(specs: &[LayerSpec]) -> Result<Vec<Kind>> {
    key_column(specs).map_err(|e| Error::Policy { message: e.to_string() })?;
    let layers = crate::settled::layers(specs, None)?;
    Settling::new(&layers).map_err(|e| Error::Policy { message: e.to_string() })?;
    specs.iter().map(in_redis).collect()
}

/// How the settle script keeps `spec`'s layer: its kind (`cap`, `token-bucket`, `gcra`,
/// `fixed-window`) and its N, P (µs) and burst; a limiter it does not keep is an error.
fn in_redis(spec: &LayerSpec) -> Result<Kind> {
    let limit = match &spec.bound {
        Bound::Concurrency(max) => return Ok(("cap", (1, 1, i128::from(max.get())))),
        Bound::Rate(limit) => limit,
    };
    let settings =
        limit.settings(None, true, "").map_err(|e| Error::Policy { message: e.to_string() })?;
    let kind = settle_kind(settings.algorithm).map_err(|message| Error::Policy { message })?;
    let (n, p) = (settings.rate.n(), settings.rate.p());
    Ok((kind, (n, p, i128::from(settings.burst.get()))))
}

/// The key that layers without `key=` share in Redis.
const SHARED_KEY: &str = "_shared";

/// The total of `sum` over `values`: a column it names that `values` lacks is an error,
/// for `call`.
fn total(sum: &Sum, values: &HashMap<String, u64>, call: &str) -> Result<u64> {
    let mut each = Vec::with_capacity(sum.columns.len());
    for column in &sum.columns {
        match values.get(column) {
            Some(&value) => each.push(value),
            None => {
                // `call` is a Python method (`decide()`) or the program's command.
                let message = match call.strip_suffix("()") {
                    Some(_) => format!("{call} needs a value for {column}, which {sum} sums"),
                    None => format!("{call} needs --value {column}=N, which {sum} sums"),
                };
                return Err(Error::Policy { message });
            }
        }
    }
    sum.total(each).ok_or_else(|| Error::Policy {
        message: format!(
            "{sum} is more than {}, the most a request may cost",
            ratelimit_core::limiter::MAX_COST
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: i64) -> Option<Timestamp> {
        Timestamp::from_micros(1_735_689_600_000_000 + ms * 1000)
    }

    #[test]
    fn a_reservation_decided_live_is_given_back_when_its_response_is_settled() {
        // 500 tokens a minute, reserving prompt + max_tokens: 230 and 240 pass (470), 220
        // does not fit. Settled at 2 s for 150, 80 come back to the 30 left and 2 s of refill
        // (16⅔): 126⅔, so that 120 fits, where 46⅔ would not hold it.
        let spec: LayerSpec = "algo=gcra,rate=500/m,burst=500,reserve=prompt_tokens+max_tokens,cost=prompt_tokens+completion_tokens,key=user".parse().unwrap();
        let mut live = LiveSettling::new(&[spec]).unwrap();
        let asked = |prompt: u64, most: u64| {
            HashMap::from([("prompt_tokens".to_owned(), prompt), ("max_tokens".to_owned(), most)])
        };
        let first = live.decide(at(0), Some(b"a"), &asked(30, 200)).unwrap();
        let second = live.decide(at(0), Some(b"a"), &asked(40, 200)).unwrap();
        let third = live.decide(at(0), Some(b"a"), &asked(20, 200)).unwrap();
        assert!(first.passed && second.passed && !third.passed);
        assert_eq!((third.refused.as_slice(), third.ticket), (&[0][..], None));
        // Another user has a bucket of its own.
        assert!(live.decide(at(0), Some(b"b"), &asked(20, 200)).unwrap().passed);
        assert!(!live.decide(at(2_000), Some(b"a"), &asked(20, 100)).unwrap().passed);
        let done = HashMap::from([("completion_tokens".to_owned(), 120)]);
        live.settle(first.ticket.unwrap(), at(2_000), None, &done).unwrap();
        assert!(live.decide(at(2_000), Some(b"a"), &asked(20, 100)).unwrap().passed);
        assert_eq!(live.open(), 3);
        let again = live.settle(first.ticket.unwrap(), at(2_000), Some(1), &HashMap::new());
        assert!(again.unwrap_err().to_string().starts_with("no open request has ticket"));
        let missing = live.decide(at(2_000), Some(b"a"), &HashMap::new()).unwrap_err();
        assert_eq!(
            missing.to_string(),
            "decide() needs a value for prompt_tokens, which prompt_tokens+max_tokens sums"
        );
        let back = live.decide(at(1_000), Some(b"a"), &asked(1, 1)).unwrap_err();
        assert!(back.to_string().contains("a limit's clock never goes back"), "{back}");
    }
}
