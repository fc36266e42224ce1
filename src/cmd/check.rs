//! `ratelimit check`: one live decision in Redis, for scripts; the exit code is the answer.

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

use anyhow::{Result, anyhow, bail};
use clap::Args;

use crate::cli::args::{OutputArgs, RateArgs, RedisArgs, parse_cost};
use crate::cli::config::Styles;
use crate::engine::recorder::Settings;
use crate::engine::redis::{RedisTarget, Remote, Server};
use crate::limiter::Algorithm;
use crate::render::export;
use crate::report;
use crate::units::time::Span;

pub(super) fn run(args: &CheckArgs, styles: &Styles) -> Result<ExitCode> {
    let (settings, target) = args.resolve()?;
    let remote = Remote::new(settings.algorithm, settings.rate, settings.burst.get(), args.cost)?;
    let mut server = Server::connect(&target.urls, target.timeout)?;
    let base = format!("{}{{{}}}", target.prefix, args.key);
    // A sliding log's entries need names no other call uses.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let member = format!("{}:{nanos}", std::process::id());
    let outcome = remote.check(&mut server, &base, &member)?;
    let span = |micros: i64| Span::from_micros(micros.max(0)).expect("not negative");
    let limit =
        if settings.algorithm.uses_burst() { settings.burst.get() } else { settings.rate.count() };
    let found = report::Check {
        key: args.key.clone(),
        algorithm: settings.algorithm,
        rate: settings.rate,
        cost: args.cost,
        allowed: outcome.allowed,
        limit,
        remaining: u64::try_from(outcome.remaining).unwrap_or(0),
        retry_after_s: span(outcome.retry_after_us),
        reset_after_s: span(outcome.reset_after_us),
    };
    let mut out = BufWriter::new(io::stdout().lock());
    if args.headers {
        out.write_all(headers(&found, &settings).as_bytes())?;
    } else {
        export::write(&mut out, args.output.format, styles.stdout, &found)?;
    }
    out.flush()?;
    // 1 is the answer "limited", not an error.
    Ok(if found.allowed { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// Returns the decision as the IETF `RateLimit-Policy` and `RateLimit` header lines
/// (draft-ietf-httpapi-ratelimit-headers), for a service to pass on: the policy, named for
/// the limiter, holds `q` units a `w` seconds (a window's N a period; a bucket's burst and
/// the time to refill it whole), and `r` remain, all back in `t` seconds (whole seconds,
/// rounded up, as the fields take).
fn headers(check: &report::Check, settings: &Settings) -> String {
    let seconds = |micros: i128| (micros + 999_999).div_euclid(1_000_000).max(0);
    let window = if settings.algorithm.uses_burst() {
        // b·I = b·P/N, rounded up.
        let (n, p) = (settings.rate.n(), settings.rate.p());
        (i128::from(settings.burst.get()) * p + n - 1) / n
    } else {
        settings.rate.p()
    };
    let name = check.algorithm.name();
    format!(
        "RateLimit-Policy: \"{name}\";q={};w={}\nRateLimit: \"{name}\";r={};t={}\n",
        check.limit,
        seconds(window),
        check.remaining,
        seconds(i128::from(check.reset_after_s.as_micros())),
    )
}

pub(super) const CHECK_AFTER_HELP: &str = "\
The decision is made atomically in Redis, at the server's time, so that every process
checking the same KEY shares one limit. It prints the capacity remaining, when a call of
this cost could pass (retry after) and when the limiter is back to full (reset after), as
redis-cell's CL.THROTTLE does.

Example: ratelimit check \"alert:$user\" --rate 5/h --burst 5 --redis \"$REDIS_URL\" && send_alert

Exit status: 0 allowed, 1 limited, 2 error (a cost larger than the burst is an error: it
could never pass).";

/// `ratelimit check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The key to limit, such as alert:bob; it is stored as PREFIX{KEY}:ALGO.
    #[arg(value_name = "KEY")]
    pub key: String,

    /// The limiter.
    #[arg(long, value_enum, value_name = "ALGO", default_value_t = Algorithm::Gcra)]
    pub algo: Algorithm,

    #[command(flatten)]
    pub size: RateArgs,

    /// How many units to take at once, all or nothing.
    #[arg(long, value_name = "N", default_value_t = 1, allow_hyphen_values = true, value_parser = parse_cost)]
    pub cost: u64,

    #[command(flatten)]
    pub remote: RedisArgs,

    /// Print the decision as the IETF RateLimit-Policy and RateLimit header lines
    /// (draft-ietf-httpapi-ratelimit-headers) for a service to pass on, instead of the
    /// report; the exit code is the answer still.
    #[arg(long, conflicts_with = "format")]
    pub headers: bool,

    #[command(flatten)]
    pub output: OutputArgs,
}

impl CheckArgs {
    /// Settles the one limiter `check` runs, and the server it runs in.
    pub fn resolve(&self) -> Result<(Settings, RedisTarget)> {
        if self.algo.delays() {
            bail!(
                "check decides at once; a leaky queue delays instead: use gcra, which admits \
                 the same"
            );
        }
        let settings = self.size.settings(self.algo, None, true)?;
        let target = self.remote.target()?.ok_or_else(|| {
            anyhow!("check needs --redis URL: it decides in the Redis server its callers share")
        })?;
        Ok((settings, target))
    }
}

#[cfg(test)]
mod tests {
    use std::num::NonZeroU64;

    use super::*;

    #[test]
    fn headers_give_the_policy_and_what_remains() {
        let settings = |algorithm, rate: &str, burst| Settings {
            algorithm,
            rate: rate.parse().unwrap(),
            burst: NonZeroU64::new(burst).unwrap(),
            window: Span::from_micros(1).unwrap(),
        };
        let check = |algorithm, limit, remaining, reset_micros| report::Check {
            key: "k".into(),
            algorithm,
            rate: "5/h".parse().unwrap(),
            cost: 1,
            allowed: true,
            limit,
            remaining,
            retry_after_s: Span::from_micros(0).unwrap(),
            reset_after_s: Span::from_micros(reset_micros).unwrap(),
        };
        // GCRA at 5/h with a burst of 5, after one call: 4 left, whole again in 12 min;
        // the burst refills in 5 × 12 min.
        let gcra = headers(
            &check(Algorithm::Gcra, 5, 4, 720_000_000),
            &settings(Algorithm::Gcra, "5/h", 5),
        );
        assert_eq!(gcra, "RateLimit-Policy: \"gcra\";q=5;w=3600\nRateLimit: \"gcra\";r=4;t=720\n");
        // A fixed window of 3 per 10 s, 0.4 s from its end: the window, and t rounded up.
        let window = check(Algorithm::FixedWindow, 3, 0, 400_000);
        let fixed = headers(&window, &settings(Algorithm::FixedWindow, "3/10s", 3));
        assert_eq!(
            fixed,
            "RateLimit-Policy: \"fixed-window\";q=3;w=10\nRateLimit: \"fixed-window\";r=0;t=1\n"
        );
        // A burst of 7 at 2/3s refills in 10.5 s: w rounds up to 11.
        let bucket = headers(
            &check(Algorithm::TokenBucket, 7, 7, 0),
            &settings(Algorithm::TokenBucket, "2/3s", 7),
        );
        assert!(bucket.starts_with("RateLimit-Policy: \"token-bucket\";q=7;w=11\n"), "{bucket}");
    }
}
