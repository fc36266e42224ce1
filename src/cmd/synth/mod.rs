//! `ratelimit synth`: a synthetic catalog in the USGS CSV layout, streamed.

#[cfg(feature = "quakes")]
mod catalog;

#[cfg(feature = "quakes")]
pub(crate) use self::catalog::SYNTH_AFTER_HELP;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Result, anyhow, bail};
use clap::{Args, Subcommand};

use crate::cli::args::Days;
use crate::render::outfile::Output;
use crate::synth::MAX_EVENTS;
use crate::synth::access_log::write_access_log;
use crate::synth::requests::{RequestLog, RequestParams, write_log};
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
    #[cfg(feature = "quakes")]
    return args.catalog.write();
    #[cfg(not(feature = "quakes"))]
    bail!(
        "this build makes request logs only (synth requests): earthquake catalogs are its `quakes` feature"
    )
}

/// `ratelimit synth`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct SynthArgs {
    /// Another model than the earthquakes.
    #[command(subcommand)]
    pub model: Option<SynthModel>,

    /// The earthquake catalog's settings.
    #[cfg(feature = "quakes")]
    #[command(flatten)]
    pub catalog: catalog::CatalogArgs,
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

    /// The time between a bot's requests in a run: 200ms is 5 a second.
    #[arg(long, value_name = "DURATION", default_value = "200ms")]
    pub bot_every: Span,

    /// How many requests a bot's run sends.
    #[arg(long, value_name = "N", default_value_t = 3_000)]
    pub bot_run: u64,

    /// The mean pause between the requests of a person's session (exponential): how fast
    /// people click.
    #[arg(long, value_name = "DURATION", default_value = "3s")]
    pub pause: Span,

    /// Make each request an LLM call, with prompt_tokens (heavy-tailed), max_tokens,
    /// total_tokens, completion_tokens and duration_ms columns: a log to size limits of
    /// requests and tokens on (--cost), reserved and settled (--duration duration_ms).
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
        if self.requests as f64 > MAX_EVENTS {
            bail!("--requests may be at most {:.0e}", MAX_EVENTS);
        }
        if self.bots > 1_000 {
            bail!("--bots may be at most 1000: a few clients misbehave, not most");
        }
        let mut params =
            RequestParams::new(self.seed, self.start, end, self.clients, self.requests);
        params.bots = self.bots;
        params.tokens = self.tokens;
        if self.bot_every.as_micros() < 1_000 {
            bail!("--bot-every must be at least 1ms: the log's times are whole milliseconds");
        }
        if self.bot_run == 0 {
            bail!("--bot-run must be at least 1");
        }
        params.bot_step_s = self.bot_every.as_secs_f64();
        params.bot_run_requests = self.bot_run;
        params.pause_mean_s = self.pause.as_secs_f64();
        // The bots' runs grow with the days: the bound holds for all the log's requests.
        if params.expected() > MAX_EVENTS {
            bail!(
                "this log would hold about {:.1e} requests (the bots run {} calls a day each), \
                 and synth makes at most {:.0e}: fewer --days, --bots or --bot-run",
                params.expected(),
                params.bot_run_requests,
                MAX_EVENTS
            );
        }
        Ok((params, self.output.clone().map_or(Output::Stdout, Output::new)))
    }
}
