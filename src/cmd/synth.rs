//! `ratelimit synth`: a synthetic catalog in the USGS CSV layout, streamed.

use std::path::PathBuf;
use std::process::ExitCode;
use std::str::FromStr;

use anyhow::{Result, anyhow, bail};
use clap::{Args, Subcommand};

use crate::cli::args::Decimal;
use crate::render::outfile::Output;
use crate::synth::access_log::write_access_log;
use crate::synth::etas;
use crate::synth::etas::Simulation;
use crate::synth::requests::{RequestLog, RequestParams, write_log};
use crate::synth::usgs::write_catalog;
use crate::units::decimal;
use crate::units::decimal::DecimalError;
use crate::units::time::{Span, Timestamp};

pub(super) fn run(args: &SynthArgs) -> Result<ExitCode> {
    if let Some(SynthModel::Requests(requests)) = &args.model {
        let (params, output) = requests.resolve()?;
        let tokens = params.tokens;
        let log = RequestLog::new(params)
            .ok_or_else(|| anyhow::anyhow!("the request model cannot be made from these"))?;
        match requests.format {
            LogFormat::Csv => output.write(|out| write_log(log, tokens, out))?,
            LogFormat::Clf => output.write(|out| write_access_log(log, out))?,
        }
        return Ok(ExitCode::SUCCESS);
    }
    let (params, output) = args.resolve()?;
    let simulation = Simulation::new(params);
    output.write(|out| write_catalog(simulation, out))?;
    Ok(ExitCode::SUCCESS)
}

pub(super) const SYNTH_AFTER_HELP: &str = "\
The model is ETAS. Background events are a Poisson process, 2.7 a day of M>=5 (times 10^(b(5 - \
Mc)) for another --min-mag, times --scale); with the aftershocks they trigger, the long-run \
mean is about 4.7 M>=5 events a day, the 2015-2025 world average. Magnitudes follow \
Gutenberg-Richter from --min-mag up to 9.5. Every event triggers aftershocks at the rate \
K*10^(alpha(M - Mc)) / (t + c)^p per day, with K = 0.0038, alpha = 1, c = 0.01 day, p = 1.1, \
for up to 10 years; a planted M8.8 yields about 190 M>=5 events in its first 48 hours.

Examples:
  ratelimit synth --seed 1 --days 4018 > synthetic_2015_2025.csv
  ratelimit synth --days 42 --mainshock 8.8@2015-01-20T00:00:00Z | ratelimit min-bucket --rate 5/h
  ratelimit synth --scale 500 --days 4018 -o big.csv     # about 10 million events

Exit status: 0 on success, 2 on any error.";

/// `ratelimit synth`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct SynthArgs {
    /// Another model than the earthquakes.
    #[command(subcommand)]
    pub model: Option<SynthModel>,

    /// The seed of the random numbers: the same seed and options give a byte-identical file.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,

    /// The first instant of the catalog.
    #[arg(
        long,
        value_name = "TIME",
        value_parser = crate::units::time::rfc3339,
        default_value = "2015-01-01T00:00:00Z",
        allow_hyphen_values = true
    )]
    pub start: Timestamp,

    /// How many days to simulate [default: 365].
    #[arg(long, value_name = "DAYS", conflicts_with = "until", allow_hyphen_values = true)]
    pub days: Option<Days>,

    /// Simulate up to this instant, exclusive, instead of --days.
    #[arg(long, value_name = "TIME", value_parser = crate::units::time::rfc3339, allow_hyphen_values = true)]
    pub until: Option<Timestamp>,

    /// Plant a great earthquake, such as 8.8@2025-07-29T23:24:52.483Z; repeatable.
    #[arg(long, value_name = "MAG@TIME", allow_hyphen_values = true)]
    pub mainshock: Vec<Mainshock>,

    /// The smallest magnitude simulated, Mc, from 0 to 10.
    #[arg(long, value_name = "M", default_value = "5", allow_hyphen_values = true)]
    pub min_mag: Decimal,

    /// The Gutenberg-Richter b-value.
    #[arg(long, value_name = "B", default_value = "1", allow_hyphen_values = true)]
    pub b_value: Decimal,

    /// Multiply the background rate by X, for large catalogs: 500 gives about 10 million
    /// events over 4018 days.
    #[arg(long, value_name = "X", default_value = "1", allow_hyphen_values = true)]
    pub scale: Decimal,

    /// Write the catalog to FILE, which appears whole or not at all, instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// The models `synth` makes besides the earthquake catalog.
#[derive(Debug, Subcommand)]
pub enum SynthModel {
    /// A request log: clients of Zipf activity making sessions of bursts, and a few bots.
    #[command(after_help = REQUESTS_AFTER_HELP)]
    Requests(RequestsArgs),
}

pub(super) const REQUESTS_AFTER_HELP: &str = "\
Client k (by rank of activity, from 1) starts a session with probability proportional to \
1/k (Zipf). Sessions start as a Poisson process; each makes a geometric number of requests \
(mean 10), an exponential pause apart (mean 3 s). Each of the bots runs a script about once \
a day: 3000 requests, one every 0.2 s (300 a minute). The columns are time, client (c<rank> \
or bot<n>), method, path and status. With --format clf, the same requests are nginx's access \
log, clients as addresses (10.a.b.c, bots 192.0.2.n), in the log_format \
'$remote_addr - $remote_user [$time_local] \"$request\" $status $body_bytes_sent \
\"$http_referer\" \"$http_user_agent\" $msec $request_time', which --log-format reads.

Example:
  ratelimit synth requests --clients 1000000 --requests 10000000 --days 1 -o requests.csv
  ratelimit min-bucket requests.csv --rate 60/m --key client --cover 99%";

/// `ratelimit synth requests`.
#[derive(Debug, Args)]
pub struct RequestsArgs {
    /// The seed of the random numbers: the same seed and options give a byte-identical file.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,

    /// The first instant of the log.
    #[arg(long, value_name = "TIME", value_parser = crate::units::time::rfc3339, default_value = "2025-01-01T00:00:00Z")]
    pub start: Timestamp,

    /// How many days the log spans.
    #[arg(long, value_name = "DAYS", default_value = "1", allow_hyphen_values = true)]
    pub days: Days,

    /// How many clients there are.
    #[arg(long, value_name = "N", default_value_t = 100_000)]
    pub clients: u64,

    /// How many requests the clients (not the bots) make, on average.
    #[arg(long, value_name = "N", default_value_t = 1_000_000)]
    pub requests: u64,

    /// How many misbehaving clients run scripts.
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub bots: u64,

    /// Make each request an LLM call, with prompt_tokens (heavy-tailed), max_tokens and
    /// total_tokens columns: a log to size limits of requests and tokens on (--cost).
    #[arg(long)]
    pub tokens: bool,

    /// csv, or clf: the requests as nginx's access log, the combined format with $msec and
    /// $request_time after it (read it with --log-format, as `ratelimit synth requests
    /// --help` shows).
    #[arg(
        long,
        value_enum,
        value_name = "FORMAT",
        default_value = "csv",
        conflicts_with = "tokens"
    )]
    pub format: LogFormat,

    /// Write the log to FILE, which appears whole or not at all, or to stdout with -o -.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// How `synth requests` writes its log.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// CSV with a header: time, client, method, path, status.
    Csv,
    /// nginx's access log: the combined log format, then $msec and $request_time.
    Clf,
}

/// A number of days, exact to the millionth.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Days(pub i64);

impl FromStr for Days {
    type Err = anyhow::Error;

    fn from_str(text: &str) -> anyhow::Result<Days> {
        match decimal::parse_exact(text.as_bytes(), 6) {
            Ok(micro_days) if micro_days < 0 => {
                anyhow::bail!("a number of days cannot be negative")
            }
            Ok(micro_days) => Ok(Days(micro_days)),
            Err(DecimalError::TooPrecise) => {
                anyhow::bail!("'{text}' has more than 6 decimals, the most that are kept")
            }
            Err(_) => anyhow::bail!("'{text}' is not a number of days"),
        }
    }
}

/// A planted earthquake: its magnitude and time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mainshock {
    /// The magnitude.
    pub mag: Decimal,
    /// The time.
    pub time: Timestamp,
}

impl FromStr for Mainshock {
    type Err = anyhow::Error;

    fn from_str(text: &str) -> anyhow::Result<Mainshock> {
        let (mag, time) = text.split_once('@').ok_or_else(|| {
            anyhow::anyhow!("'{text}' is not MAG@TIME, like 8.8@2025-07-29T23:24:52Z")
        })?;
        Ok(Mainshock { mag: mag.parse()?, time: crate::units::time::rfc3339(time)? })
    }
}

impl RequestsArgs {
    /// Settles the request log's parameters, refusing those it cannot honor, and the output.
    pub fn resolve(&self) -> Result<(RequestParams, Output)> {
        let span = self
            .days
            .0
            .checked_mul(86_400)
            .and_then(Span::from_micros)
            .filter(|span| !span.is_zero())
            .ok_or_else(|| anyhow!("--days must be more than 0"))?;
        let end = self
            .start
            .checked_add(span)
            .ok_or_else(|| anyhow!("--start plus --days is past the year 9999"))?;
        if self.clients == 0 {
            bail!("--clients must be at least 1");
        }
        // The Zipf sampler ranks clients in a double, exact to 2^53.
        if self.clients > 1 << 53 {
            bail!("--clients may be at most 2^53, past which the ranks are not exact");
        }
        // Requests are events like any others: the same bound holds.
        #[allow(clippy::cast_precision_loss)]
        if self.requests as f64 > etas::Params::MAX_EVENTS {
            bail!("--requests may be at most {:.0e}", etas::Params::MAX_EVENTS);
        }
        if self.bots > 1_000 {
            bail!("--bots may be at most 1000: a few clients misbehave, not most");
        }
        let mut params =
            RequestParams::new(self.seed, self.start, end, self.clients, self.requests);
        params.bots = self.bots;
        params.tokens = self.tokens;
        // The bots' runs grow with the days: the bound holds for all the log's requests.
        if params.expected() > etas::Params::MAX_EVENTS {
            bail!(
                "this log would hold about {:.1e} requests (the bots run {} calls a day each), \
                 and synth makes at most {:.0e}: fewer --days or --bots",
                params.expected(),
                params.bot_run_requests,
                etas::Params::MAX_EVENTS
            );
        }
        Ok((params, self.output.clone().map_or(Output::Stdout, Output::new)))
    }
}

impl SynthArgs {
    /// Settles the model's parameters, refusing those it cannot honor, and the output.
    pub fn resolve(&self) -> Result<(etas::Params, Output)> {
        let start = self.start;
        let end = match (self.until, self.days) {
            (Some(until), _) => until,
            (None, days) => {
                // A millionth of a day is exactly 86 400 µs.
                let micro_days = days.map_or(365_000_000, |d| d.0);
                micro_days
                    .checked_mul(86_400)
                    .and_then(Span::from_micros)
                    .and_then(|span| start.checked_add(span))
                    .ok_or_else(|| anyhow!("--start plus --days is past the year 9999"))?
            }
        };
        if end < start {
            bail!("--until ({end}) must not be before --start ({start})");
        }
        let in_range = |m: Decimal| (0..=10_000_000).contains(&m.0);
        if !(0.0..etas::Params::MAX_MAG).contains(&self.min_mag.as_f64()) {
            bail!(
                "--min-mag must be from 0 to below {}, the largest magnitude the model makes",
                etas::Params::MAX_MAG
            );
        }
        if self.b_value.0 <= 0 {
            bail!("--b-value must be more than 0");
        }
        if self.scale.0 <= 0 {
            bail!("--scale must be more than 0: a zero rate makes no catalog");
        }
        let mut params = etas::Params::new(self.seed, start, end);
        params.min_mag = self.min_mag.as_f64();
        params.b_value = self.b_value.as_f64();
        // The background rate is set for M≥5; Gutenberg–Richter carries it to another Mc.
        params.background_per_day = etas::Params::BACKGROUND_M5_PER_DAY
            * libm::pow(10.0, params.b_value * (5.0 - params.min_mag))
            * self.scale.as_f64();
        if !params.background_per_day.is_finite() {
            bail!(
                "the background rate, 2.7 × 10^(b(5 - Mc)) × --scale a day, overflows with \
                 --b-value {} and --min-mag {}",
                self.b_value.as_f64(),
                self.min_mag.as_f64()
            );
        }
        let n = params.branching_ratio();
        if n >= 1.0 {
            bail!(
                "with --b-value {} and --min-mag {}, each event triggers {n:.2} aftershocks on \
                 average: sequences would grow without end; raise --b-value",
                self.b_value.as_f64(),
                self.min_mag.as_f64()
            );
        }
        for shock in &self.mainshock {
            if !in_range(shock.mag) || shock.mag.0 < self.min_mag.0 {
                bail!("--mainshock magnitude must be from --min-mag to 10");
            }
            if shock.time < start || shock.time >= end {
                bail!("--mainshock at {} is outside the catalog, [{start}, {end})", shock.time);
            }
            params.mainshocks.push((shock.mag.as_f64(), shock.time));
        }
        let expected = params.expected_events();
        if expected.is_nan() || expected > etas::Params::MAX_EVENTS {
            bail!(
                "these settings make about {expected:.1e} events, more than the {:.0e} synth \
                 makes at most; shorten --days, lower --scale, raise --min-mag or plant a smaller --mainshock",
                etas::Params::MAX_EVENTS
            );
        }
        Ok((params, self.output.clone().map_or(Output::Stdout, Output::new)))
    }
}
