//! Shared limits in Redis: each limiter as a Lua script that decides atomically.
//!
//! Every decision is made inside Redis by `EVALSHA`, falling back to loading the script on
//! `NOSCRIPT`. A replay passes each event's own time in; a live `check` lets the script read
//! the server's clock. The scripts compute in Lua's doubles, which hold integers exactly
//! below 2^53: `Remote::new` refuses sizes whose values could go past 2^52, and replays
//! refuse times outside 1970–2112 (below 2^52 µs), so every value stays exact and every
//! decision equals the one made in memory.

mod replay;

pub use replay::RedisReplay;

use std::fmt::Display;
use std::sync::LazyLock;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use redis::{Connection, ErrorKind, ServerErrorKind};

use crate::limiter::Algorithm;
use crate::rate::Rate;
use crate::time::Timestamp;

/// Where replays and checks keep their keys, unless told otherwise.
pub const DEFAULT_PREFIX: &str = "ratelimit:";

/// How long a replay's keys live, in ms of real time. Replays run on catalog time, so a
/// key's natural lifetime means nothing; it must only outlast the replay's use of it.
pub const REPLAY_TTL_MS: i64 = 600_000;

/// The largest value a script's arithmetic may reach: 2^52, half the exact range of a double.
pub const EXACT: i128 = 1 << 52;

/// How long to wait for Redis before giving up.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
const IO_TIMEOUT: Duration = Duration::from_secs(10);

/// A connection to Redis 7 or later.
pub struct Redis {
    url: String,
    con: Connection,
}

impl Redis {
    /// Connects, with a timeout, and checks that the server is Redis 7 or later.
    pub fn connect(url: &str) -> Result<Redis> {
        let fail = || format!("cannot reach Redis at {url}");
        let client =
            redis::Client::open(url).with_context(|| format!("{url} is not a Redis URL"))?;
        let mut con = client.get_connection_with_timeout(CONNECT_TIMEOUT).with_context(fail)?;
        con.set_read_timeout(Some(IO_TIMEOUT)).with_context(fail)?;
        con.set_write_timeout(Some(IO_TIMEOUT)).with_context(fail)?;
        let info: String = redis::cmd("INFO").arg("server").query(&mut con).with_context(fail)?;
        check_version(&info).with_context(|| format!("Redis at {url}"))?;
        Ok(Redis { url: url.to_owned(), con })
    }

    /// Returns the URL, for messages.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Returns the connection.
    pub fn connection(&mut self) -> &mut Connection {
        &mut self.con
    }

    /// Loads a limiter's script into the server's cache.
    pub fn load(&mut self, algorithm: Algorithm) -> Result<()> {
        script(algorithm)
            .load(&mut self.con)
            .with_context(|| format!("Redis at {}: cannot load a script", self.url))?;
        Ok(())
    }
}

/// Accepts Redis 7 or later, from the text of `INFO server`.
fn check_version(info: &str) -> Result<()> {
    let version = info
        .lines()
        .find_map(|line| line.strip_prefix("redis_version:"))
        .map(str::trim)
        .ok_or_else(|| anyhow!("does not say its version"))?;
    let major: u32 = version.split('.').next().and_then(|m| m.parse().ok()).unwrap_or(0);
    if major < 7 {
        bail!("is version {version}; ratelimit needs Redis 7.0 or later (for PEXPIRE ... NX)");
    }
    Ok(())
}

/// Returns true if an error is Redis saying it does not have the script.
pub fn is_noscript(err: &redis::RedisError) -> bool {
    err.kind() == ErrorKind::Server(ServerErrorKind::NoScript)
}

const COMMON: &str = include_str!("lua/common.lua");

/// The scripts, each the shared helpers followed by one limiter.
static SCRIPTS: LazyLock<[redis::Script; 5]> = LazyLock::new(|| {
    [
        include_str!("lua/fixed_window.lua"),
        include_str!("lua/sliding_log.lua"),
        include_str!("lua/sliding_counter.lua"),
        include_str!("lua/token_bucket.lua"),
        include_str!("lua/gcra.lua"),
    ]
    .map(|body| redis::Script::new(&format!("{COMMON}\n{body}")))
});

/// Returns the script of an algorithm; the leaky queue runs GCRA's, which gives the wait.
pub fn script(algorithm: Algorithm) -> &'static redis::Script {
    let index = match algorithm {
        Algorithm::FixedWindow => 0,
        Algorithm::SlidingLog => 1,
        Algorithm::SlidingCounter => 2,
        Algorithm::TokenBucket => 3,
        Algorithm::Gcra | Algorithm::LeakyQueue => 4,
    };
    &SCRIPTS[index]
}

/// One limiter in Redis: its script, and the arguments every call passes after the time.
#[derive(Clone, Debug)]
pub struct Remote {
    algorithm: Algorithm,
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
        let args = match algorithm {
            Algorithm::Gcra | Algorithm::LeakyQueue => {
                let (cp, bp) = (c * p, b * p);
                vec![n, p / n, p % n, cp / n, cp % n, bp / n, bp % n]
            }
            Algorithm::TokenBucket => vec![n, p, b * p, c * p],
            Algorithm::FixedWindow | Algorithm::SlidingLog | Algorithm::SlidingCounter => {
                vec![n, p, c]
            }
        };
        let args = args.into_iter().map(|a| a.to_string()).collect();
        Ok(Remote { algorithm, n: n as i64, args })
    }

    /// Returns the keys of this limiter under `base`, which should hold a hash tag such as
    /// `ratelimit:{alert:bob}`, so that all of a limiter's keys share a slot.
    pub fn keys(&self, base: &str) -> Vec<String> {
        let name = self.algorithm.name();
        match self.algorithm {
            Algorithm::SlidingCounter => {
                vec![format!("{base}:{name}:0"), format!("{base}:{name}:1")]
            }
            _ => vec![format!("{base}:{name}")],
        }
    }

    /// Returns the call's arguments, after KEYS: the time (empty for the server's clock),
    /// the fixed arguments, the time to live (0 for the limiter's own) and, for the sliding
    /// log, a member name unique to the call.
    pub fn args(&self, now: Option<Timestamp>, ttl_ms: i64, member: impl Display) -> Vec<String> {
        let mut args = Vec::with_capacity(self.args.len() + 3);
        args.push(now.map_or(String::new(), |now| now.as_micros().to_string()));
        args.extend(self.args.iter().cloned());
        args.push(ttl_ms.to_string());
        if self.algorithm == Algorithm::SlidingLog {
            args.push(member.to_string());
        }
        args
    }

    /// Returns the `EVALSHA` command for one call.
    pub fn command(
        &self,
        keys: &[String],
        now: Option<Timestamp>,
        ttl_ms: i64,
        member: impl Display,
    ) -> redis::Cmd {
        let mut cmd = redis::cmd("EVALSHA");
        cmd.arg(script(self.algorithm).get_hash()).arg(keys.len()).arg(keys);
        cmd.arg(self.args(now, ttl_ms, member));
        cmd
    }

    /// Decides one call now, at the server's time, on the keys under `base`. `EVALSHA`
    /// falls back to sending the script if Redis does not have it.
    pub fn check(&self, redis: &mut Redis, base: &str, member: &str) -> Result<Outcome> {
        let script = script(self.algorithm);
        let mut call = script.prepare_invoke();
        for key in self.keys(base) {
            call.key(key);
        }
        for arg in self.args(None, 0, member) {
            call.arg(arg);
        }
        let url = redis.url().to_owned();
        let reply: Vec<i64> =
            call.invoke(redis.connection()).with_context(|| format!("Redis at {url}"))?;
        self.outcome(&reply)
    }

    /// Reads a script's reply.
    pub fn outcome(&self, reply: &[i64]) -> Result<Outcome> {
        let [allowed, remaining, retry, reset, rest @ ..] = reply else {
            bail!("a script gave an unexpected reply: {reply:?}");
        };
        let wait = match rest {
            [q, r] => i128::from(*q) * i128::from(self.n) + i128::from(*r),
            _ => 0,
        };
        Ok(Outcome {
            allowed: *allowed == 1,
            remaining: *remaining,
            retry_after_us: *retry,
            reset_after_us: *reset,
            wait,
        })
    }
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
    fn redis_6_is_refused() {
        let info = "# Server\r\nredis_version:6.2.6\r\nredis_mode:standalone\r\n";
        let err = check_version(info).unwrap_err().to_string();
        assert_eq!(
            err,
            "is version 6.2.6; ratelimit needs Redis 7.0 or later (for PEXPIRE ... NX)"
        );
        assert!(check_version("redis_version:7.0.15\r\n").is_ok());
        assert!(check_version("redis_version:8.2.1\r\n").is_ok());
        assert!(check_version("no version here").is_err());
    }

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
    fn gcra_arguments_split_intervals_into_whole_and_fractional_microseconds() {
        // 7/h: I = 3600 s / 7 = 514 285 714 µs + 2/7 µs.
        let remote = Remote::new(Algorithm::Gcra, "7/h".parse().unwrap(), 3, 2).unwrap();
        let want: [i64; 7] = [7, 514_285_714, 2, 1_028_571_428, 4, 1_542_857_142, 6];
        assert_eq!(remote.args, want.map(|a| a.to_string()));
        assert_eq!(remote.keys("ratelimit:{a}"), ["ratelimit:{a}:gcra"]);
    }
}
