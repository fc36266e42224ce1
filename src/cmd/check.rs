//! `ratelimit check`: one live decision in Redis, for scripts; the exit code is the answer.

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

use anyhow::Result;

use super::write_result;
use crate::cli::args::CheckArgs;
use crate::cli::config::Styles;
use crate::engine::redis::{Remote, Server};
use crate::render::formats;
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
    let table = |w: &mut dyn Write| formats::check_line(w, &found, styles.stdout);
    write_result(&mut out, args.output.format, &found, std::slice::from_ref(&found), table)?;
    out.flush()?;
    // 1 is the answer "limited", not an error.
    Ok(if found.allowed { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
