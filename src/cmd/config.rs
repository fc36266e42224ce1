//! `ratelimit config --for SYSTEM`: the snippet that runs a limit on that system, in its units.

use std::fmt::Write as _;
use std::num::NonZeroU64;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, ValueEnum};

use super::write_stdout;
use crate::cli::args::{NginxArgs, parse_burst};
use crate::limiter::{Algorithm, ENVOY_UNITS, nginx_rate};
use crate::units::rate::Rate;

/// `ratelimit config`.
#[derive(Debug, Args)]
pub struct ConfigArgs {
    /// The system to configure.
    #[arg(long = "for", value_enum, value_name = "SYSTEM")]
    pub system: System,
    /// The rate, N per period: the model of the system replays it as written here.
    #[arg(short = 'r', long, value_name = "RATE")]
    pub rate: Rate,
    /// The burst, for nginx: its burst= (the requests beyond the first) [default: 0].
    #[arg(short = 'b', long, value_name = "B", value_parser = parse_burst)]
    pub burst: Option<NonZeroU64>,
    /// The column the limit is per, named as the system's key.
    #[arg(short = 'k', long, value_name = "COLUMN")]
    pub key: Option<String>,

    #[command(flatten)]
    pub nginx: NginxArgs,
}

/// The systems `config` writes for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum System {
    /// nginx's limit_req_zone and limit_req.
    Nginx,
    /// envoyproxy/ratelimit's YAML descriptors.
    EnvoyRatelimit,
    /// Python's limits.
    Limits,
    /// Traefik's rateLimit middleware (dynamic configuration, YAML).
    Traefik,
    /// envoy's local_ratelimit filter's token bucket.
    EnvoyLocal,
    /// HAProxy's stick table of http_req_rate and a deny rule.
    Haproxy,
}

pub(super) fn run(args: &ConfigArgs) -> Result<ExitCode> {
    let given = args.nginx.given();
    if let Some((flag, _)) = given.0.first().filter(|_| args.system != System::Nginx) {
        anyhow::bail!(
            "--{flag} applies to nginx, not {}",
            args.system.to_possible_value().map_or_else(String::new, |v| v.get_name().to_owned())
        );
    }
    let text = match args.system {
        System::Nginx => nginx(args),
        System::EnvoyRatelimit => envoy(args),
        System::Limits => limits(args),
        System::Traefik => traefik(args),
        System::EnvoyLocal => envoy_local(args),
        System::Haproxy => haproxy(args),
    };
    write_stdout(text.as_bytes())
}

/// `limit_req_zone` and `limit_req`. nginx writes N r/s or N r/m; a rate it cannot write
/// becomes the fastest one it can that is no faster, said in a comment.
fn nginx(args: &ConfigArgs) -> String {
    let rate = args.rate;
    let burst = args.burst.map_or(0, NonZeroU64::get);
    let key = args.key.as_deref().map_or("$binary_remote_addr".to_owned(), |k| format!("${k}"));
    let mut text = format!("# ratelimit: nginx at {rate}, burst {burst}\n");
    let (count, unit) = match nginx_rate(rate) {
        Some((count, 1)) => (count, "s"),
        Some((count, _)) => (count, "m"),
        None => {
            // N per P is N·60 s/P a minute: floored, it limits no less than asked.
            let per_minute =
                i128::from(rate.count()) * 60_000_000 / i128::from(rate.period().as_micros());
            let count = u64::try_from(per_minute).unwrap_or(u64::MAX).max(1);
            let _ = writeln!(
                text,
                "# {rate} is not N r/s or N r/m, which is all nginx writes: {count}r/m is {}",
                if per_minute == 0 {
                    "the slowest it can, and faster than asked"
                } else {
                    "the nearest that is no faster"
                }
            );
            (count, "m")
        }
    };
    let milli = u128::from(count) * 1000;
    if unit == "m" && milli % 60 != 0 {
        let _ = writeln!(
            text,
            "# nginx keeps {count}r/m as {} thousandths of a request a second, truncated: \
             --algo nginx --rate {count}/m replays that",
            milli / 60
        );
    }
    let _ = writeln!(text, "limit_req_zone {key} zone=ratelimit:10m rate={count}r/{unit};");
    let burst = if burst == 0 { String::new() } else { format!(" burst={burst}") };
    // nginx's default, delay=0, is written as nothing; a dry run is a directive of its own.
    let delay = match (args.nginx.delay, args.nginx.nodelay) {
        (Some(delay), _) if delay > 0 => format!(" delay={delay}"),
        (_, true) => " nodelay".to_owned(),
        _ => String::new(),
    };
    let _ = writeln!(text, "limit_req zone=ratelimit{burst}{delay};");
    if args.nginx.dry_run {
        let _ = writeln!(text, "limit_req_dry_run on;");
    }
    text
}

/// The descriptor YAML of envoy's ratelimit service, whose units are one second, minute,
/// hour, day, week, month or year: a rate of another period becomes N a unit in the
/// smallest unit that holds it in whole requests, said in a comment.
fn envoy(args: &ConfigArgs) -> String {
    let rate = args.rate;
    let (n, p) = (i128::from(rate.count()), i128::from(rate.period().as_micros()));
    let mut text = format!("# ratelimit: envoy-ratelimit at {rate}\n");
    // N·10¹²·3.2·10⁷ stays far inside an i128.
    let per_unit = |seconds: i64| n * i128::from(seconds) * 1_000_000;
    let exact = ENVOY_UNITS.iter().find(|&&(_, s)| i128::from(s) * 1_000_000 == p);
    let (unit, count) = match exact {
        Some(&(unit, _)) => (unit, n),
        None => {
            let fits = ENVOY_UNITS.iter().find(|&&(_, s)| per_unit(s) % p == 0 && per_unit(s) >= p);
            let &(unit, s) = fits.unwrap_or(&ENVOY_UNITS[ENVOY_UNITS.len() - 1]);
            let count = (per_unit(s) / p).max(1);
            let _ = writeln!(
                text,
                "# {rate} is not N a unit: {count} a {unit} passes as many on average, but all \
                 of them may come at once in one {unit}'s window"
            );
            (unit, count)
        }
    };
    let key = args.key.as_deref().unwrap_or("generic_key");
    let _ = write!(
        text,
        "domain: ratelimit\ndescriptors:\n  - key: {key}\n    rate_limit:\n      unit: {unit}\n      \
         requests_per_unit: {count}\n"
    );
    text
}

/// Traefik's `rateLimit` middleware: `average` per `period` (a Go duration, whole), and
/// its burst (Traefik's default is 1); `--algo traefik` replays it, float64 and all.
fn traefik(args: &ConfigArgs) -> String {
    let rate = args.rate;
    let micros = rate.period().as_micros();
    let period = match micros {
        m if m % 1_000_000 == 0 => format!("{}s", m / 1_000_000),
        m if m % 1000 == 0 => format!("{}ms", m / 1000),
        m => format!("{m}us"),
    };
    let burst = args.burst.map_or(1, NonZeroU64::get);
    let source = args.key.as_deref().map_or(String::new(), |key| {
        format!("        sourceCriterion:\n          requestHeaderName: {key}\n")
    });
    format!(
        "# ratelimit: traefik at {rate}, burst {burst} (--algo traefik replays it)\n\
         http:\n  middlewares:\n    ratelimit:\n      rateLimit:\n        average: {}\n        \
         period: {period}\n        burst: {burst}\n{source}",
        rate.count()
    )
}

/// envoy's `local_ratelimit` token bucket: `max_tokens` (the burst, default N),
/// `tokens_per_fill` (N) and `fill_interval` (P, whole milliseconds, at least 50).
fn envoy_local(args: &ConfigArgs) -> String {
    let rate = args.rate;
    let ms = rate.period().as_micros() / 1000;
    let mut text = format!("# ratelimit: envoy-local at {rate} (--algo envoy-local replays it)\n");
    if let Some(why) = Algorithm::EnvoyLocal.refuses(rate) {
        let _ = writeln!(text, "# {why}");
    }
    let interval = match ms.max(50) {
        ms if ms % 1000 == 0 => format!("{}s", ms / 1000),
        ms => format!("{}.{:03}s", ms / 1000, ms % 1000),
    };
    let burst = args.burst.map_or(rate.count(), NonZeroU64::get);
    let _ = write!(
        text,
        "token_bucket:\n  max_tokens: {burst}\n  tokens_per_fill: {}\n  fill_interval: {interval}\n",
        rate.count()
    );
    text
}

/// The `limits` item, in its string notation and as Python, with the strategy the models
/// replay.
fn limits(args: &ConfigArgs) -> String {
    let rate = args.rate;
    let micros = rate.period().as_micros();
    let seconds = (micros / 1_000_000).max(1);
    let mut text =
        format!("# ratelimit: limits-fixed-window, -moving-window or -sliding-window at {rate}\n");
    if let Some(why) = Algorithm::LimitsFixedWindow.refuses(rate) {
        let _ = writeln!(text, "# {why}: it becomes {} per {seconds} s", rate.count());
    }
    let n = rate.count();
    let _ = write!(
        text,
        "from limits import parse, storage, strategies\n\
         item = parse(\"{n} per {seconds} second\")\n\
         limiter = strategies.MovingWindowRateLimiter(storage.MemoryStorage())\n\
         # limiter.hit(item, key) for each request{}\n",
        args.key.as_deref().map_or(String::new(), |k| format!(", key being its {k}"))
    );
    text
}

/// A stick table of `http_req_rate(P)`, tracked per key (the client's address, or a header),
/// and `deny if { sc_http_req_rate(0) gt N }`; `--algo haproxy` replays it. Entries expire
/// two periods after their last request, when a kept counter reads as a new one would.
fn haproxy(args: &ConfigArgs) -> String {
    let rate = args.rate;
    let mut text = format!("# ratelimit: haproxy at {rate} (--algo haproxy replays it)\n");
    // HAProxy's periods are whole milliseconds below 2^31; a longer one is taken at the
    // most, the count scaled down (no faster than asked while it stays at least 1), and a
    // fraction of a millisecond rounded up (slower).
    // Widening, so exact (From is not const).
    const MOST: i64 = i32::MAX as i64;
    let micros = rate.period().as_micros();
    let (mut count, mut ms) = (rate.count(), micros / 1000 + i64::from(micros % 1000 != 0));
    let mut faster = "";
    if ms > MOST {
        let scaled = i128::from(count) * i128::from(MOST) * 1000 / i128::from(micros);
        faster = if scaled == 0 { ", faster than asked" } else { "" };
        (count, ms) = (u64::try_from(scaled).unwrap_or(u64::MAX).max(1), MOST);
    }
    if let Some(why) = Algorithm::Haproxy.refuses(rate) {
        let _ = writeln!(text, "# {why}: it becomes {count} per {ms} ms{faster}");
    }
    let (kind, track) = match args.key.as_deref() {
        Some(key) => ("string len 64", format!("req.hdr({key})")),
        None => ("ip", "src".to_owned()),
    };
    let expire = ms.saturating_mul(2).min(MOST);
    let _ = write!(
        text,
        "# in the frontend:\n    \
         stick-table type {kind} size 1m expire {expire}ms store http_req_rate({ms}ms)\n    \
         http-request track-sc0 {track}\n    \
         http-request deny deny_status 429 if {{ sc_http_req_rate(0) gt {count} }}\n"
    );
    text
}
