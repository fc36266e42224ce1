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
    export::write(&mut out, args.output.format, styles.stdout, &found)?;
    out.flush()?;
    // 1 is the answer "limited", not an error.
    Ok(if found.allowed { ExitCode::SUCCESS } else { ExitCode::from(1) })
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
