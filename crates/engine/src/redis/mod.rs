//! Shared limits in Redis: each limiter as a Lua script that decides atomically.
//!
//! Every decision is made inside Redis by `EVALSHA`, falling back to loading the script on
//! `NOSCRIPT`. A replay passes each event's own time in; a live `check` lets the script read
//! the server's clock. The scripts compute in Lua's doubles, which hold integers exactly
//! below 2^53: `Remote::new` refuses sizes whose values could go past 2^52, and replays
//! refuse times outside 1970–2112 (below 2^52 µs), so every value stays exact and every
//! decision equals the one made in memory.

mod cluster;
mod connection;
mod engine;
mod layers;
mod live;
mod pipeline;
mod server;
mod settle;

pub use cluster::slot_of;
pub use connection::Redis;
pub use engine::{RedisEngine, Scripts};
pub use layers::{RemoteLayers, SHARED};
pub use pipeline::prepare;
pub use server::{Server, Unavailable};
pub use settle::{LiveLayer, LivePolicy, RedisStore, settle_kind};

use std::borrow::Cow;
use std::fmt::Display;
use std::sync::LazyLock;

use anyhow::{Result, bail};
use redis::{ServerErrorKind, Value};

use crate::limiter::{Algorithm, Decision, RedisScript};
use crate::recorder::Settings;
use crate::units::rate::Rate;
use crate::units::time::Timestamp;

/// A Redis server or cluster to run limiters in: its URLs, the prefix of every key, and the
/// longest a round trip may take.
#[derive(Clone, Debug)]
pub struct RedisTarget {
    /// The server's URL, as `redis://host:6379/0`, or the seed nodes of a cluster.
    pub urls: Vec<String>,
    /// The prefix of every key written.
    pub prefix: String,
    /// The longest a round trip may take.
    pub timeout: std::time::Duration,
}

/// Where replays and checks keep their keys, unless told otherwise.
pub const DEFAULT_PREFIX: &str = "ratelimit:";

/// How long a replay's keys live, in ms of real time. Replays run on catalog time, so a
/// key's natural lifetime means nothing; it must only outlast the replay's use of it.
pub const REPLAY_TTL_MS: i64 = 600_000;

/// The largest value a script's arithmetic may reach: 2^52, half the exact range of a double.
pub const EXACT: i128 = 1 << 52;

impl Redis {
    /// Loads a script into the server's cache.
    pub fn load(&mut self, script: &Script) -> Result<()> {
        match self.call(redis::cmd("SCRIPT").arg("LOAD").arg(&script.code))? {
            Value::BulkString(hash) if hash == script.hash.as_bytes() => Ok(()),
            other => {
                bail!("Redis at {}: SCRIPT LOAD gave an unexpected reply: {other:?}", self.url())
            }
        }
    }
}

/// Returns true if a reply is Redis saying it does not have the script.
pub fn is_noscript(reply: &Value) -> bool {
    matches!(reply, Value::ServerError(e) if e.kind() == Some(ServerErrorKind::NoScript))
}

/// A Lua script: its text and its SHA1, by which `EVALSHA` calls it.
#[derive(Debug)]
pub struct Script {
    code: String,
    hash: String,
}

impl Script {
    fn new(code: String) -> Script {
        let hash = redis::Script::new(&code).get_hash().to_owned();
        Script { code, hash }
    }

    /// Returns the SHA1 by which `EVALSHA` calls it.
    pub fn hash(&self) -> &str {
        &self.hash
    }
}

const COMMON: &str = include_str!("lua/common.lua");

/// The limiters' bodies, by [`kind`]: each runs as a function of (KEYS, ARGV, charge).
const BODIES: [&str; 5] = [
    include_str!("lua/fixed_window.lua"),
    include_str!("lua/sliding_log.lua"),
    include_str!("lua/sliding_counter.lua"),
    include_str!("lua/token_bucket.lua"),
    include_str!("lua/gcra.lua"),
];

/// Returns a limiter's index in [`BODIES`]; the leaky queue runs GCRA's, which gives the
/// wait.
fn kind(script: RedisScript) -> usize {
    match script {
        RedisScript::FixedWindow => 0,
        RedisScript::SlidingLog => 1,
        RedisScript::SlidingCounter => 2,
        RedisScript::TokenBucket => 3,
        RedisScript::Gcra => 4,
    }
}

/// The scripts, each the shared helpers and one limiter, charging when it admits. The body
/// runs as the script itself, not as a function it calls: measured, a call is then about a
/// tenth quicker in Redis.
static SCRIPTS: LazyLock<[Script; 5]> = LazyLock::new(|| {
    BODIES.map(|body| Script::new(format!("{COMMON}\nlocal charge = true\n{body}")))
});

/// The scripts that decide a batch of calls of one limiter in one `EVALSHA`, in order:
/// each a `redis` that keeps each key's hash in the run (`batch_cache.lua`), the shared
/// helpers, the limiter as a function, and `batch.lua`'s loop.
static BATCHES: LazyLock<[Script; 5]> = LazyLock::new(|| {
    std::array::from_fn(|kind| {
        let body = BODIES[kind];
        // A call's arguments, written into one table: its time, its set, and the member
        // name of the sliding log's.
        let fixed = FIXED[kind];
        let member = kind == self::kind(RedisScript::SlidingLog);
        let mut each = vec!["ARGV[a + 2]".to_owned()];
        each.extend((1..=fixed).map(|i| format!("set[{i}]")));
        if member {
            each.push("ARGV[a + 3]".to_owned());
        }
        let places: Vec<String> = (1..=each.len()).map(|i| format!("argv[{i}]")).collect();
        let wait = kind == self::kind(RedisScript::Gcra);
        let arguments = format!(
            "local PER, WAIT = {}, {wait}\nlocal function arguments(argv, a, sets)\n  local \
             set = sets[ARGV[a + 1]]\n  {} = {}\nend\n",
            3 + usize::from(member),
            places.join(", "),
            each.join(", ")
        );
        let function = format!("local function decide(KEYS, ARGV, charge)\n{body}end\n");
        let (cache, run) = (include_str!("lua/batch_cache.lua"), include_str!("lua/batch.lua"));
        // A hash's fields stay numbers in the copy, written as text once, by `flush`; the
        // sliding log's go to Redis as they are written.
        let numbers = if member { "" } else { "local function int(x)\n  return x\nend\n" };
        Script::new(format!("{cache}\n{COMMON}\n{numbers}{function}{arguments}{run}"))
    })
});

/// How many fixed arguments each limiter's call takes after its time, by [`kind`]: its
/// own (`Remote::new`) and the time to live.
const FIXED: [usize; 5] = [4, 4, 4, 5, 8];

/// The script of several limits at once: the shared helpers, every limiter, and the layers.
static LAYERS: LazyLock<Script> = LazyLock::new(|| {
    let mut code = format!("{COMMON}\n");
    for (i, body) in BODIES.iter().enumerate() {
        code += &format!("local function limit_{i}(KEYS, ARGV, charge)\n{body}end\n");
    }
    let names: Vec<String> = (0..BODIES.len()).map(|i| format!("limit_{i}")).collect();
    code += &format!("local LIMITERS = {{{}}}\n", names.join(", "));
    code += include_str!("lua/layers.lua");
    Script::new(code)
});

/// Returns a limiter's script.
pub fn script(kind: RedisScript) -> &'static Script {
    &SCRIPTS[self::kind(kind)]
}

/// Returns the script that decides several limits at once.
pub fn layers_script() -> &'static Script {
    &LAYERS
}

/// One limiter in Redis: its script, and the arguments every call passes after the time.
#[derive(Clone, Debug)]
pub struct Remote {
    algorithm: Algorithm,
    rate: Rate,
    burst: u64,
    /// The units each call takes.
    cost: u64,
    script: RedisScript,
    n: i64,
    /// The arguments after the time, written once rather than on every call.
    args: Vec<String>,
}

/// What a script decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// Whether the cost was taken.
    pub allowed: bool,
    /// How many more units would pass now.
    pub remaining: i64,
    /// When a cost this size would pass, in µs from now; zero if it did.
    pub retry_after_us: i64,
    /// When the limiter is back to where it started, in µs from now.
    pub reset_after_us: i64,
    /// For GCRA and the leaky queue, how long the event waits, in units of 1/N µs.
    pub wait: i128,
}

impl Remote {
    /// Returns the limiter at `rate` with `burst` (N for limiters without one), taking `cost`
    /// units a call, if every value its script forms stays exact.
    pub fn new(algorithm: Algorithm, rate: Rate, burst: u64, cost: u64) -> Result<Remote> {
        let Some(script) = algorithm.redis_script() else {
            bail!("{} cannot run in Redis", algorithm.name());
        };
        let (n, p) = (rate.n(), rate.p());
        let b = if algorithm.uses_burst() { i128::from(burst) } else { n };
        let c = i128::from(cost);
        if c > b {
            let what = if algorithm.uses_burst() { "the burst" } else { "N" };
            bail!("a cost of {cost} can never pass: it is more than {what}, {b}");
        }
        if b.max(n) * p > EXACT {
            bail!(
                "with Redis, max(N, burst) × P must stay below 2^52 µs to keep the scripts \
                 exact; {} with a burst of {burst} is too large",
                rate
            );
        }
        let args = match script {
            RedisScript::Gcra => {
                let (cp, bp) = (c * p, b * p);
                vec![n, p / n, p % n, cp / n, cp % n, bp / n, bp % n]
            }
            RedisScript::TokenBucket => vec![n, p, b * p, c * p],
            RedisScript::FixedWindow | RedisScript::SlidingLog | RedisScript::SlidingCounter => {
                vec![n, p, c]
            }
        };
        let args = args.into_iter().map(|a| a.to_string()).collect();
        Ok(Remote { algorithm, rate, burst, cost, script, n: rate.n64(), args })
    }

    /// Returns this limiter taking `cost` units a call (itself if it already does), or
    /// `None` if a call of that cost can never pass (more than the burst, or N): then it
    /// would change nothing, and need not be sent. Its values stay exact: a cost that can
    /// pass is at most the burst.
    pub fn costing(&self, cost: u64) -> Option<Cow<'_, Remote>> {
        if cost == self.cost {
            return Some(Cow::Borrowed(self));
        }
        Remote::new(self.algorithm, self.rate, self.burst, cost).ok().map(Cow::Owned)
    }

    /// Returns the script this limiter runs.
    pub fn script(&self) -> &'static Script {
        script(self.script)
    }

    /// Returns the script that decides a batch of this limiter's calls at once.
    pub fn batch_script(&self) -> &'static Script {
        &BATCHES[kind(self.script)]
    }

    /// Returns the arguments of a call after its time, as a batch gives them once for all
    /// the calls of this cost: the limiter's own, and the time to live.
    pub fn fixed_args(&self, ttl_ms: i64) -> Vec<String> {
        let mut args = self.args.clone();
        args.push(ttl_ms.to_string());
        args
    }

    /// Returns the `EVALSHA` command that decides `calls` in order in one run of the batch
    /// script, whose reply echoes `number`, the batch's: each call the number of its key among `keys` and of its set among `sets`
    /// (from 1; each set as [`Remote::fixed_args`] gives it), its time, and for the sliding
    /// log its member name.
    pub fn batch_command(
        &self,
        keys: &[&[u8]],
        sets: &[Vec<String>],
        calls: &[(usize, usize, Timestamp, u64)],
        number: u64,
    ) -> redis::Cmd {
        let mut cmd = redis::cmd("EVALSHA");
        cmd.arg(&self.batch_script().hash).arg(keys.len()).arg(keys);
        cmd.arg(number).arg(sets.len()).arg(sets.first().map_or(0, Vec::len));
        for set in sets {
            cmd.arg(set);
        }
        let member = self.script == RedisScript::SlidingLog;
        for &(key, set, now, call) in calls {
            cmd.arg(key).arg(set).arg(now.as_micros());
            if member {
                cmd.arg(call);
            }
        }
        cmd
    }

    /// Reads the reply of batch `number`: whether each of its `calls` calls was allowed,
    /// and how long it waits (GCRA's and the leaky queue's; else 0). A reply that does not
    /// echo the batch's number is refused, whatever its length.
    pub fn batch_decisions(
        &self,
        reply: &Value,
        calls: usize,
        number: u64,
    ) -> Result<Vec<Decision>> {
        let ints = integers(reply)?;
        let width = if self.script == RedisScript::Gcra { 3 } else { 1 };
        let Some((&echoed, ints)) = ints.split_first() else {
            bail!("a batch script gave an empty reply for batch {number}");
        };
        if u64::try_from(echoed).ok() != Some(number) {
            bail!("the reply to batch {number} was that of batch {echoed}");
        }
        if ints.len() != calls * width {
            bail!("a batch script gave {} numbers for {calls} calls", ints.len());
        }
        let n = i128::from(self.n);
        Ok(ints
            .chunks(width)
            .map(|call| Decision {
                passed: call[0] == 1,
                wait: match call {
                    [_, q, r] => i128::from(*q) * n + i128::from(*r),
                    _ => 0,
                },
            })
            .collect())
    }

    /// Returns the keys of this limiter under `base`, which should hold a hash tag such as
    /// `ratelimit:{alert:bob}`, so that all of a limiter's keys share a slot. Keys are
    /// bytes, as Redis keeps them: a key that is not UTF-8 stays itself.
    pub fn keys(&self, base: &[u8]) -> Vec<Vec<u8>> {
        let name = self.algorithm.name().as_bytes();
        // One key each, so that a cluster resharding its slot never finds a limiter split.
        vec![[base, b":", name].concat()]
    }

    /// Returns the call's arguments, after KEYS: the time (empty for the server's clock),
    /// the fixed arguments, the time to live (0 for the limiter's own) and, for the sliding
    /// log, a member name unique to the call.
    pub fn args(&self, now: Option<Timestamp>, ttl_ms: i64, member: impl Display) -> Vec<String> {
        let mut args = Vec::with_capacity(self.args.len() + 3);
        args.push(now.map_or(String::new(), |now| now.as_micros().to_string()));
        args.extend(self.args.iter().cloned());
        args.push(ttl_ms.to_string());
        if self.script == RedisScript::SlidingLog {
            args.push(member.to_string());
        }
        args
    }

    /// Returns the `EVALSHA` command for one call.
    pub fn command(
        &self,
        keys: &[Vec<u8>],
        now: Option<Timestamp>,
        ttl_ms: i64,
        member: impl Display,
    ) -> redis::Cmd {
        let mut cmd = redis::cmd("EVALSHA");
        cmd.arg(&self.script().hash).arg(keys.len()).arg(keys);
        cmd.arg(self.args(now, ttl_ms, member));
        cmd
    }

    /// Decides one call now, at the server's time, on the keys under `base`, loading the
    /// script if Redis does not have it.
    pub fn check(&self, server: &mut Server, base: &[u8], member: &str) -> Result<Outcome> {
        // Loaded only if Redis says it has not the script: one round trip a check, as a
        // filter makes one a line.
        server.uses(self.script());
        let keys = self.keys(base);
        let slot = slot_of(&keys[0]);
        let command = self.command(&keys, None, 0, member);
        let reply = server.run(&[(slot, command)])?.pop().unwrap_or(Value::Nil);
        self.outcome(&reply).map_err(|e| anyhow::anyhow!("Redis at {}: {e}", server.url()))
    }

    /// Reads a script's reply: an array of integers, or an error.
    pub fn outcome(&self, reply: &Value) -> Result<Outcome> {
        self.outcome_of(&integers(reply)?)
            .ok_or_else(|| anyhow::anyhow!("a script gave an unexpected reply: {reply:?}"))
    }

    /// Reads a script's answer: allowed, remaining, retry, reset, and a wait if it gives one.
    fn outcome_of(&self, ints: &[i64]) -> Option<Outcome> {
        let [allowed, remaining, retry, reset, rest @ ..] = ints else { return None };
        let wait = match rest {
            [q, r] => i128::from(*q) * i128::from(self.n) + i128::from(*r),
            _ => 0,
        };
        Some(Outcome {
            allowed: *allowed == 1,
            remaining: *remaining,
            retry_after_us: *retry,
            reset_after_us: *reset,
            wait,
        })
    }

    /// Returns the number by which the layered script calls this limiter's function.
    fn kind(&self) -> usize {
        kind(self.script) + 1
    }
}

/// Reads a script's reply as integers; an error it gives is an error.
fn integers(reply: &Value) -> Result<Vec<i64>> {
    let ints: Option<Vec<i64>> = match reply {
        Value::Array(items) => {
            items.iter().map(|v| if let Value::Int(i) = v { Some(*i) } else { None }).collect()
        }
        Value::ServerError(e) => {
            let detail = ratelimit_input::message::one_line(e.details().unwrap_or_default());
            bail!("the script failed: {} {detail}", e.code())
        }
        _ => None,
    };
    ints.ok_or_else(|| anyhow::anyhow!("a script gave an unexpected reply: {reply:?}"))
}

/// Checks that a limiter with `settings` can run in Redis and take `cost` units a call,
/// every value its script forms staying exact: what a live call's cost must meet before
/// any server is asked.
pub fn cost_fits(settings: &Settings, cost: u64) -> Result<()> {
    Remote::new(settings.algorithm, settings.rate, settings.burst.get(), cost).map(drop)
}

/// Checks that a time is within what the scripts keep exact: 1970 to 2112.
pub fn check_time(time: Timestamp) -> Result<()> {
    let micros = i128::from(time.as_micros());
    if !(0..EXACT).contains(&micros) {
        bail!("with Redis, times must lie from 1970 to 2112 (0 to 2^52 µs), and {time} does not");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_past_the_exact_range_are_refused() {
        let rate = "1000000/h".parse().unwrap();
        assert!(Remote::new(Algorithm::Gcra, rate, 1_000_000, 1).is_ok());
        let rate = "10000000/h".parse().unwrap();
        let err = Remote::new(Algorithm::SlidingCounter, rate, 1, 1).unwrap_err().to_string();
        assert!(err.contains("below 2^52"), "{err}");
        let err =
            Remote::new(Algorithm::Gcra, "5/h".parse().unwrap(), 5, 6).unwrap_err().to_string();
        assert_eq!(err, "a cost of 6 can never pass: it is more than the burst, 5");
    }

    #[test]
    fn a_batch_script_takes_as_many_fixed_arguments_as_each_call_gives() {
        for algorithm in Algorithm::ALL.iter().filter(|a| a.redis_script().is_some()) {
            let remote = Remote::new(*algorithm, "7/h".parse().unwrap(), 3, 1).unwrap();
            let fixed = remote.fixed_args(600_000);
            assert_eq!(fixed.len(), FIXED[kind(remote.script)], "{}", algorithm.name());
            // A call alone takes the time, the same fixed arguments, and a member name.
            let mut one = remote.args(None, 600_000, 7);
            one.remove(0);
            one.truncate(fixed.len());
            assert_eq!(one, fixed, "{}", algorithm.name());
        }
    }

    #[test]
    fn gcra_arguments_split_intervals_into_whole_and_fractional_microseconds() {
        // 7/h: I = 3600 s / 7 = 514 285 714 µs + 2/7 µs.
        let remote = Remote::new(Algorithm::Gcra, "7/h".parse().unwrap(), 3, 2).unwrap();
        let want: [i64; 7] = [7, 514_285_714, 2, 1_028_571_428, 4, 1_542_857_142, 6];
        assert_eq!(remote.args, want.map(|a| a.to_string()));
        assert_eq!(remote.keys(b"ratelimit:{a}"), [b"ratelimit:{a}:gcra"]);
    }
}
