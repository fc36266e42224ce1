//! The rate limiters of layers settled after the response, kept in Redis: each question
//! the settling asks (admits, takes, gives back, owes) is one call of `settle.lua` on the
//! key's hash, so that a settlement at completion is a script call at its time.

use std::sync::LazyLock;

use anyhow::{Result, anyhow, bail};
use redis::Value;

use ratelimit_core::settle::{Bound, SettledLayer, Store};

use super::{COMMON, EXACT, REPLAY_TTL_MS, RedisTarget, Script, Server, slot_of};
use crate::limiter::Algorithm;
use crate::units::time::Timestamp;
use ratelimit_core::event::Key;

/// The script of one call on one layer's key: the shared helpers and the settlement's.
static SETTLE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(format!(
        "{COMMON}\n{}\nreturn settle_one(KEYS[1], ARGV[1], ARGV[2], tonumber(ARGV[3]), \
         tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]), \
         tonumber(ARGV[8]))\n",
        include_str!("lua/settle.lua")
    ))
});

/// The script of a live request over every layer of a policy at once.
static POLICY: LazyLock<Script> = LazyLock::new(|| {
    let (one, policy) = (include_str!("lua/settle.lua"), include_str!("lua/settle_policy.lua"));
    Script::new(format!("{COMMON}\n{one}\n{policy}"))
});

/// The limiters the settle script keeps, as it names them: each limiter with a Redis
/// script of its own that a settlement can ask (the leaky queue delays what it admits).
const SETTLED_IN_REDIS: [(Algorithm, &str); 5] = [
    (Algorithm::TokenBucket, "token-bucket"),
    (Algorithm::Gcra, "gcra"),
    (Algorithm::FixedWindow, "fixed-window"),
    (Algorithm::SlidingCounter, "sliding-counter"),
    (Algorithm::SlidingLog, "sliding-log"),
];

/// The kind the settle script keeps a limiter of `algorithm` as; the message if it keeps
/// none.
pub fn settle_kind(algorithm: Algorithm) -> Result<&'static str, String> {
    match SETTLED_IN_REDIS.iter().find(|(a, _)| *a == algorithm) {
        Some((_, kind)) => Ok(kind),
        None => {
            let kinds: Vec<&str> = SETTLED_IN_REDIS.iter().map(|(_, kind)| *kind).collect();
            Err(format!(
                "{} is not settled in Redis: its layers settled after the response are {}",
                algorithm.name(),
                kinds.join(", ")
            ))
        }
    }
}

/// One layer's limiter as the script takes it: its kind, N, P and burst.
#[derive(Clone, Copy, Debug)]
struct Kept {
    kind: &'static str,
    n: i128,
    p: i128,
    b: i128,
}

/// The limiters of settled layers, in a Redis server or cluster: each layer's key `k` is
/// the hash `PREFIXsettle:LAYER:k`. The last failure is kept, to be told whole.
pub struct RedisStore {
    server: Server,
    prefix: String,
    layers: Vec<Option<Kept>>,
    failure: Option<anyhow::Error>,
}

impl RedisStore {
    /// Connects to `target` for `layers`: their rate limiters must be token buckets, GCRA
    /// or fixed windows (the limiters that settle), each small enough that the script's
    /// values stay exact.
    pub fn connect(target: &RedisTarget, layers: &[SettledLayer]) -> Result<RedisStore> {
        let mut kept = Vec::with_capacity(layers.len());
        for layer in layers {
            let Bound::Rate(settings) = layer.bound else {
                kept.push(None);
                continue;
            };
            let kind = settle_kind(settings.algorithm).map_err(anyhow::Error::msg)?;
            let (n, p, b) =
                (settings.rate.n(), settings.rate.p(), i128::from(settings.burst.get()));
            if b.max(n) * p > EXACT {
                bail!(
                    "with Redis, max(N, burst) × P must stay below 2^52 µs to keep the scripts \
                     exact; {} with a burst of {b} is too large",
                    settings.rate
                );
            }
            kept.push(Some(Kept { kind, n, p, b }));
        }
        let mut server = Server::connect(&target.urls, target.timeout)?;
        server.load(&SETTLE)?;
        Ok(RedisStore { server, prefix: target.prefix.clone(), layers: kept, failure: None })
    }

    /// Takes the last failure, said whole, if there was one.
    pub fn failure(&mut self) -> Option<anyhow::Error> {
        self.failure.take()
    }

    /// Runs the script's `op` on layer `layer`'s key `key` at `now` with `units`, and
    /// returns its whole-number reply.
    fn call(
        &mut self,
        op: &str,
        layer: usize,
        key: Key,
        now: Timestamp,
        units: u64,
    ) -> Result<i64, String> {
        let answered = self.ask(op, layer, key, now, units);
        answered.map_err(|err| {
            let said = format!("{err:#}");
            self.failure = Some(err);
            said
        })
    }

    fn ask(&mut self, op: &str, layer: usize, key: Key, now: Timestamp, units: u64) -> Result<i64> {
        let Some(Some(kept)) = self.layers.get(layer).copied() else {
            bail!("layer {} has no rate to settle in Redis", layer + 1);
        };
        let Kept { kind, n, p, b } = kept;
        let u = i128::from(units);
        if u * p > EXACT {
            bail!("{units} units at {n}/{p}µs leave the exact range of Redis numbers (2^52)");
        }
        let name = format!("{}settle:{layer}:{key}", self.prefix).into_bytes();
        let mut cmd = redis::cmd("EVALSHA");
        cmd.arg(SETTLE.hash()).arg(1).arg(&name).arg(op).arg(kind).arg(now.as_micros());
        cmd.arg(n.to_string()).arg(p.to_string()).arg(b.to_string()).arg(units);
        cmd.arg(REPLAY_TTL_MS);
        let replies = self.server.run(&[(slot_of(&name), cmd)])?;
        match replies.first() {
            Some(Value::Int(answer)) => Ok(*answer),
            Some(Value::ServerError(error)) => Err(anyhow!(
                "Redis at {}: {}",
                self.server.url(),
                error.details().unwrap_or("an error")
            )),
            other => {
                bail!("Redis at {}: settle gave an unexpected reply: {other:?}", self.server.url())
            }
        }
    }
}

impl Store for RedisStore {
    fn admits(
        &mut self,
        layer: usize,
        key: Key,
        now: Timestamp,
        cost: u64,
    ) -> Result<bool, String> {
        Ok(self.call("check", layer, key, now, cost)? == 1)
    }

    fn charge(&mut self, layer: usize, key: Key, now: Timestamp, cost: u64) -> Result<(), String> {
        self.call("take", layer, key, now, cost).map(drop)
    }

    fn give_back(
        &mut self,
        layer: usize,
        key: Key,
        now: Timestamp,
        units: u64,
    ) -> Result<(), String> {
        self.call("give", layer, key, now, units).map(drop)
    }

    fn owed(&mut self, layer: usize, key: Key, now: Timestamp) -> Result<u64, String> {
        let owed = self.call("owed", layer, key, now, 0)?;
        u64::try_from(owed).map_err(|_| format!("Redis said a limiter owes {owed}"))
    }
}

/// One layer of a live request in Redis, as the policy's script is told it: its key, its
/// kind (`token-bucket`, `gcra`, `fixed-window`, or `cap`), N per P µs with a burst of b
/// (a cap's b is its most in flight), the units asked and taken on arrival, and what its
/// settlement does (`give`, `take` or `none`) with how many units.
#[derive(Clone, Debug)]
pub struct LiveLayer {
    /// The layer's key in Redis.
    pub key: Vec<u8>,
    /// What it is.
    pub kind: &'static str,
    /// N, P (µs) and b.
    pub sizes: (i128, i128, i128),
    /// The units asked on arrival.
    pub asked: u64,
    /// The units taken on arrival, if it admits.
    pub taken: u64,
    /// What settling does, and with how many units.
    pub settle: (&'static str, u64),
}

/// One Redis server that live settlements ask, its policy script loaded: connected once,
/// asked as often as requests come. One server, not a cluster: a policy's layers' keys
/// may lie in several slots.
pub struct LivePolicy {
    server: Server,
}

impl LivePolicy {
    /// Connects to `target` and loads the policy script.
    pub fn connect(target: &RedisTarget) -> Result<LivePolicy> {
        let mut server = Server::connect(&target.urls, target.timeout)?;
        if server.is_cluster() {
            bail!(
                "a live settlement runs on one Redis server, not a cluster: its layers' keys lie in several slots"
            );
        }
        server.load(&POLICY)?;
        Ok(LivePolicy { server })
    }

    /// Decides (or, with `settle`, settles) a live request over `layers` at once, in one
    /// call at the server's clock: each layer's answer, in order (all true once settled).
    pub fn ask(&mut self, layers: &[LiveLayer], settle: bool) -> Result<Vec<bool>> {
        let server = &mut self.server;
        for layer in layers {
            let (n, p, b) = layer.sizes;
            let units = i128::from(layer.asked.max(layer.taken).max(layer.settle.1));
            if b.max(n) * p > EXACT || units * p > EXACT {
                bail!(
                    "with Redis, the sizes and units of a settled layer times P must stay below 2^52"
                );
            }
        }
        let mut cmd = redis::cmd("EVALSHA");
        cmd.arg(POLICY.hash()).arg(layers.len());
        for layer in layers {
            cmd.arg(&layer.key);
        }
        cmd.arg(if settle { "settle" } else { "decide" }).arg("").arg(REPLAY_TTL_MS);
        for layer in layers {
            let (n, p, b) = layer.sizes;
            cmd.arg(layer.kind).arg(n.to_string()).arg(p.to_string()).arg(b.to_string());
            cmd.arg(layer.asked).arg(layer.taken).arg(layer.settle.0).arg(layer.settle.1);
        }
        let name = layers.first().map_or(&b""[..], |l| &l.key[..]);
        let replies = server.run(&[(slot_of(name), cmd)])?;
        let url = server.url().to_owned();
        match replies.first() {
            Some(Value::Int(1)) if settle => Ok(vec![true; layers.len()]),
            Some(Value::Array(answers)) if !settle && answers.len() == layers.len() => answers
                .iter()
                .map(|a| match a {
                    Value::Int(answer) => Ok(*answer == 1),
                    other => Err(anyhow!("Redis at {url}: an answer of {other:?}")),
                })
                .collect(),
            Some(Value::ServerError(error)) => {
                Err(anyhow!("Redis at {url}: {}", error.details().unwrap_or("an error")))
            }
            other => bail!("Redis at {url}: a live settlement gave an unexpected reply: {other:?}"),
        }
    }
}
