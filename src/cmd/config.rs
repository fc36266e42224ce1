//! `ratelimit config --for SYSTEM`: the snippet that runs a limit on that system, in its units.

use std::fmt::Write as _;
use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::{Args, ValueEnum};

use super::write_stdout;
use crate::cli::args::NginxArgs;
use crate::cli::config::MAX_BURST;
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
    /// The burst, as the system writes it: nginx's burst= (the requests beyond the first)
    /// [default: 0]; Traefik's burst [default: 1]; envoy-local's max_tokens [default: N].
    /// The others have none.
    #[arg(short = 'b', long, value_name = "B", allow_hyphen_values = true)]
    pub burst: Option<u64>,
    /// What the limit is per, as the system names it: an nginx variable
    /// ($binary_remote_addr, $http_x_api_key), or a request header's name; remote_addr
    /// (and client) is the client's address. Without it, one limit for all requests.
    #[arg(short = 'k', long, value_name = "KEY", allow_hyphen_values = true)]
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
    let name =
        args.system.to_possible_value().map_or_else(String::new, |v| v.get_name().to_owned());
    let given = args.nginx.given();
    if let Some((flag, _)) = given.0.first().filter(|_| args.system != System::Nginx) {
        bail!("--{flag} applies to nginx, not {name}");
    }
    match (args.system, args.burst) {
        (System::Nginx, _) | (_, None) => {}
        (System::Traefik | System::EnvoyLocal, Some(0)) => {
            bail!("--burst 0: {name}'s burst is at least 1")
        }
        (System::Traefik | System::EnvoyLocal, Some(b)) if b > MAX_BURST => {
            bail!("--burst may be at most {MAX_BURST}")
        }
        (System::Traefik | System::EnvoyLocal, Some(_)) => {}
        (_, Some(_)) => bail!("--burst applies to nginx, traefik and envoy-local; {name} has none"),
    }
    if args.burst.is_some_and(|b| b > MAX_BURST) {
        bail!("--burst may be at most {MAX_BURST}");
    }
    let key = args.key.as_deref().map(|key| Key::of(args.system, key)).transpose()?;
    let text = match args.system {
        System::Nginx => nginx(args, key.as_ref()),
        System::EnvoyRatelimit => envoy(args, key.as_ref()),
        System::Limits => limits(args, key.as_ref()),
        System::Traefik => traefik(args, key.as_ref()),
        System::EnvoyLocal => envoy_local(args),
        System::Haproxy => haproxy(args, key.as_ref()),
    };
    write_stdout(text.as_bytes())
}

/// What a limit is per, as one token of the system's own syntax: never text that could
/// end a directive, open a comment or quote, or start a statement of its own.
enum Key {
    /// The client's address: nginx's `$binary_remote_addr`, HAProxy's `src`, Traefik's
    /// default source.
    Client,
    /// An nginx variable's name, without its `$`.
    Variable(String),
    /// A request header's name.
    Header(String),
    /// Text written as a quoted string: a YAML scalar, or a Python string literal.
    Quoted(String),
}

impl Key {
    /// Reads `--key` for `system`; refuses what is not one token of its syntax.
    fn of(system: System, key: &str) -> Result<Key> {
        let shown = crate::message::one_line(key);
        let name = key.strip_prefix('$').unwrap_or(key);
        let word = |text: &str| {
            text.bytes().next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
                && text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        };
        let header = |text: &str| {
            !text.is_empty()
                && text.len() <= 256
                && text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        };
        Ok(match system {
            // The client's address, by the names a log or a replay gives it: nginx keeps
            // $remote_addr as written, as a variable of its own.
            System::Nginx if key == "client" => Key::Client,
            System::Haproxy | System::Traefik
                if matches!(name, "remote_addr" | "binary_remote_addr" | "client") =>
            {
                Key::Client
            }
            System::Nginx if word(name) && name.len() <= 256 => Key::Variable(name.to_owned()),
            System::Nginx => bail!(
                "--key '{shown}': nginx keys a zone by one variable, such as $binary_remote_addr \
                 or $http_x_api_key, and this is not one"
            ),
            System::Haproxy | System::Traefik if header(key) => Key::Header(key.to_owned()),
            System::Haproxy | System::Traefik => bail!(
                "--key '{shown}': the key is a request header's name (letters, digits, - and _), \
                 or remote_addr for the client's address, and this is not one"
            ),
            System::EnvoyRatelimit | System::Limits if !key.is_empty() => {
                Key::Quoted(key.to_owned())
            }
            System::EnvoyRatelimit | System::Limits => {
                bail!("--key must name something: it is empty")
            }
            System::EnvoyLocal => bail!(
                "--key: envoy's local_ratelimit is one bucket for all the requests it sees, and \
                 takes no key"
            ),
        })
    }
}

/// Returns `text` as a double-quoted string that YAML and Python read back as `text`:
/// backslashes and quotes escaped, and every character that is not printable ASCII written
/// as a `\u` or `\U` escape, which both read alike.
fn quoted(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            ' '..='~' => out.push(c),
            c if u32::from(c) <= 0xFFFF => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push_str(&format!("\\U{:08x}", u32::from(c))),
        }
    }
    out.push('"');
    out
}

/// `limit_req_zone` and `limit_req`. nginx writes N r/s or N r/m; a rate it cannot write
/// becomes the fastest one it can that is no faster, said in a comment.
fn nginx(args: &ConfigArgs, key: Option<&Key>) -> String {
    let rate = args.rate;
    let burst = args.burst.unwrap_or(0);
    // Without a key, one zone entry for all requests: a constant key.
    let key = match key {
        Some(Key::Client) => "$binary_remote_addr".to_owned(),
        Some(Key::Variable(name)) => format!("${name}"),
        Some(Key::Header(_) | Key::Quoted(_)) | None => "ratelimit".to_owned(),
    };
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
    let zone = args.nginx.zone.unwrap_or_default();
    let _ = writeln!(text, "limit_req_zone {key} zone=ratelimit:{zone} rate={count}r/{unit};");
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
fn envoy(args: &ConfigArgs, key: Option<&Key>) -> String {
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
    let key = match key {
        Some(Key::Quoted(key)) => quoted(key),
        _ => "generic_key".to_owned(),
    };
    let _ = write!(
        text,
        "domain: ratelimit\ndescriptors:\n  - key: {key}\n    rate_limit:\n      unit: {unit}\n      \
         requests_per_unit: {count}\n"
    );
    text
}

/// Traefik's `rateLimit` middleware: `average` per `period` (a Go duration, whole), and
/// its burst (Traefik's default is 1); `--algo traefik` replays it, float64 and all.
fn traefik(args: &ConfigArgs, key: Option<&Key>) -> String {
    let rate = args.rate;
    let micros = rate.period().as_micros();
    let period = match micros {
        m if m % 1_000_000 == 0 => format!("{}s", m / 1_000_000),
        m if m % 1000 == 0 => format!("{}ms", m / 1000),
        m => format!("{m}us"),
    };
    let burst = args.burst.unwrap_or(1);
    // Traefik's default source is the client's address; without a key, the request's host
    // (one limit a host: Traefik has none for all requests at once).
    let source = match key {
        Some(Key::Client) => String::new(),
        Some(Key::Header(name)) => {
            format!("        sourceCriterion:\n          requestHeaderName: {name}\n")
        }
        Some(Key::Variable(_) | Key::Quoted(_)) | None => {
            "        sourceCriterion:\n          requestHost: true\n".to_owned()
        }
    };
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
    let burst = args.burst.unwrap_or(rate.count());
    let _ = write!(
        text,
        "token_bucket:\n  max_tokens: {burst}\n  tokens_per_fill: {}\n  fill_interval: {interval}\n",
        rate.count()
    );
    text
}

/// The `limits` item, in its string notation and as Python, with the strategy the models
/// replay.
fn limits(args: &ConfigArgs, key: Option<&Key>) -> String {
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
        match key {
            Some(Key::Quoted(column)) => format!(", key being its {}", quoted(column)),
            _ => String::new(),
        }
    );
    text
}

/// A stick table of `http_req_rate(P)`, tracked per key (the client's address, or a header),
/// and `deny if { sc_http_req_rate(0) gt N }`; `--algo haproxy` replays it. Entries expire
/// two periods after their last request, when a kept counter reads as a new one would.
fn haproxy(args: &ConfigArgs, key: Option<&Key>) -> String {
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
    // Without a key, one entry for all requests: a constant.
    let (kind, track) = match key {
        Some(Key::Client) => ("ip", "src".to_owned()),
        Some(Key::Header(name)) => ("string len 64", format!("req.hdr({name})")),
        Some(Key::Variable(_) | Key::Quoted(_)) | None => ("integer", "int(0)".to_owned()),
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
