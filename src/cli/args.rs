//! The command line as the user typed it, parsed by clap; `config` resolves it.

use std::num::NonZeroU64;
use std::path::PathBuf;
use std::str::FromStr;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::input::format::InputFormat;
use crate::limiter::Algorithm;
use crate::sizing::quantile::Share;
use crate::units::decimal::{self, DecimalError};
use crate::units::rate::Rate;
use crate::units::time::{Span, Timestamp};

const ABOUT: &str =
    "Replay a recorded event catalog through a rate limiter, on the events' own clock.";

const AFTER_HELP: &str = "\
Rates are N/UNIT with an optional multiple: 5/h, 100/s, 1/30s, 10/15m. Units: ms, s, m or \
min, h, d. Durations are like 48h, 30s, 1h30m. Times are RFC 3339 (2025-07-29T23:24:00Z) or \
dates (2025-07-29, midnight UTC).

Exit status: 0 on success, 1 when check is limited, 2 on any error, 130 and 143 when \
interrupted by SIGINT or SIGTERM (a file being written is removed first).";

/// ratelimit: replay a recorded event catalog through rate limiters.
#[derive(Debug, Parser)]
#[command(name = "ratelimit", version, about = ABOUT, after_help = AFTER_HELP)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,

    /// When to color the table output.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto, global = true)]
    pub color: ColorChoice,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Replay a catalog through one limiter and report what passed.
    #[command(after_help = REPLAY_AFTER_HELP)]
    Replay(ReplayArgs),
    /// Replay a catalog through all six limiters at once, side by side.
    #[command(after_help = REPLAY_AFTER_HELP)]
    Compare(CompareArgs),
    /// Draw a replay as an SVG timeline: one lane per limiter, each event a tick.
    #[command(after_help = AFTER_HELP)]
    Plot(PlotArgs),
    /// Find the smallest token bucket that drops nothing, for one or more rates.
    #[command(after_help = AFTER_HELP)]
    MinBucket(MinBucketArgs),
    /// Decide one event now, in Redis, for a script: exit 0 if allowed, 1 if limited.
    #[command(after_help = CHECK_AFTER_HELP)]
    Check(CheckArgs),
    /// Find the smallest rate at which a bucket of a given burst drops nothing.
    #[command(after_help = AFTER_HELP)]
    MinRate(MinRateArgs),
    /// Limit a live stream: pass the lines of stdin that a limiter admits, as they arrive.
    #[command(after_help = FILTER_AFTER_HELP)]
    Filter(FilterArgs),
    /// Write a synthetic earthquake catalog (ETAS model) in the USGS CSV layout.
    #[command(after_help = SYNTH_AFTER_HELP)]
    Synth(SynthArgs),
    /// Download a USGS (FDSN) event query of any length, in requests under its limit.
    #[command(after_help = FETCH_AFTER_HELP)]
    Fetch(FetchArgs),
    /// Print a completion script for a shell: bash, zsh, fish, elvish or powershell.
    #[command(after_help = COMPLETIONS_AFTER_HELP)]
    Completions(CompletionsArgs),
    /// Print the manual page, in roff: ratelimit man > ratelimit.1
    Man,
}

const COMPLETIONS_AFTER_HELP: &str = "\
Install, for example:
  ratelimit completions bash > ~/.local/share/bash-completion/completions/ratelimit
  ratelimit completions zsh > ~/.zfunc/_ratelimit        # with fpath+=~/.zfunc
  ratelimit completions fish > ~/.config/fish/completions/ratelimit.fish";

/// `ratelimit completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

const SYNTH_AFTER_HELP: &str = "\
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

const REPLAY_AFTER_HELP: &str = "\
Limiters, for a rate of N per period P and a burst b:
  fixed-window     passes an event iff fewer than N passed in its window; windows are P \
long and aligned to the Unix epoch (so /h windows are UTC clock hours).
  sliding-log      passes iff fewer than N passed in (t - P, t].
  sliding-counter  passes iff prev*(P - elapsed)/P + cur < N, counting passed events in the \
previous and current aligned windows.
  token-bucket     a bucket of b tokens (default N), starting full, refilled continuously at N \
per P; an event passes if a whole token is there, and takes it.
  gcra             with I = P/N, passes iff t >= tat - (b - 1)*I, then tat = max(tat, t) + I; \
exactly the token bucket's decisions.
  leaky-queue      nginx limit_req with burst=b-1 and without nodelay: an event leaves at \
max(t, last departure + I), and is dropped if it would wait over (b - 1)*I.

Every decision is made with integers: times in microseconds, rates as N per P.

Exit status: 0 on success, 2 on any error.";

/// Where the catalog comes from and which of its rows to use.
#[derive(Debug, Args)]
pub struct InputArgs {
    /// The catalog: a file (CSV with a header unless --input-format or its extension says
    /// otherwise), or - for standard input [default: standard input; the bundled sample if
    /// standard input is a terminal].
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,

    /// Read the bundled sample, a small synthetic catalog, instead of a FILE.
    #[arg(long, conflicts_with = "file")]
    pub sample: bool,

    /// How the catalog is written [default: what the file's extension says (.tsv, .jsonl or
    /// .ndjson, .geojson, .log), else csv].
    #[arg(long, value_name = "FORMAT", value_enum)]
    pub input_format: Option<InputFormat>,

    /// The column that holds each event's time: a name, a dotted path in JSON
    /// (properties.time), or two names with a comma (Date,Time) for a time split over two
    /// columns, joined with a space [default: time; properties.time for geojson;
    /// time_local for clf].
    #[arg(long, value_name = "NAME")]
    pub time_column: Option<String>,

    /// How the time is written: rfc3339, unix-s, unix-ms, unix-us, or a strftime pattern
    /// such as '%d/%m/%Y %H:%M:%S' [default: rfc3339; unix-ms for geojson; the log's
    /// '%d/%b/%Y:%H:%M:%S %z' for clf].
    #[arg(long, value_name = "FORMAT")]
    pub time_format: Option<String>,

    /// The offset from UTC of times whose --time-format pattern names no zone: +00:00,
    /// -0700, Z.
    #[arg(long, value_name = "OFFSET", allow_hyphen_values = true)]
    pub time_zone: Option<String>,

    /// Skip up to N bad rows (a time or magnitude that cannot be read, a line that is not
    /// the format), counting them on stderr, rather than stop at the first.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub skip_bad: u64,

    /// How many threads to use: 1 does everything on one; the output is the same for any
    /// number [default: the number of cores].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub threads: Option<u16>,

    /// Use only events at or after this time.
    #[arg(long, value_name = "TIME", allow_hyphen_values = true)]
    pub since: Option<Timestamp>,

    /// Use only events before this time, or before --since plus a duration: +48h.
    #[arg(long, value_name = "TIME|+DURATION", allow_hyphen_values = true)]
    pub until: Option<Until>,

    /// Use only events whose `mag` column is at least M.
    #[arg(long, value_name = "M", allow_hyphen_values = true)]
    pub min_mag: Option<Decimal>,
}

/// Limits per key.
#[derive(Debug, Args)]
pub struct KeyArgs {
    /// Give each distinct value of this column its own limiter, as a service limits each
    /// client: --key net. Rows with an empty value share one key.
    #[arg(long, value_name = "COLUMN")]
    pub key: Option<String>,

    /// With --key, list this many keys, most dropped first (most needed bucket first for
    /// min-bucket); 0 lists all.
    #[arg(long, value_name = "K", default_value_t = 10)]
    pub top: usize,
}

const FETCH_AFTER_HELP: &str = "\
The span is split into requests the service accepts: its count method says how many events \
a span holds, and a span over --limit (or one the service refuses as too large) is halved. \
Answers 429 and 503, and timeouts, are tried again up to --tries times, after a wait that \
grows exponentially with full jitter, and at least what Retry-After says (at most 2 minutes). \
The file is written whole, in time order, with one header, or not at all.

Example: ratelimit fetch --since 2015-01-01 --until 2026-01-01 --min-mag 4.5 -o quakes.csv";

/// A query to an FDSN event service.
#[derive(Debug, Args)]
pub struct FetchArgs {
    /// The first instant to fetch.
    #[arg(long, value_name = "TIME")]
    pub since: Timestamp,

    /// Fetch events before this instant.
    #[arg(long, value_name = "TIME")]
    pub until: Timestamp,

    /// Only events of at least this magnitude.
    #[arg(long, value_name = "M", allow_hyphen_values = true)]
    pub min_mag: Option<Decimal>,

    /// Only events of at most this magnitude.
    #[arg(long, value_name = "M", allow_hyphen_values = true)]
    pub max_mag: Option<Decimal>,

    /// Only events in this box, in degrees: west, south, east, north.
    #[arg(long, value_name = "W,S,E,N", allow_hyphen_values = true)]
    pub bbox: Option<String>,

    /// The format to write.
    #[arg(long, value_enum, default_value_t = FetchFormat::Csv)]
    pub format: FetchFormat,

    /// Where to write; - for standard output.
    #[arg(short, long, value_name = "FILE", default_value = "-")]
    pub output: PathBuf,

    /// The FDSN event service: USGS, or another that speaks the protocol (EMSC, IRIS).
    #[arg(long, value_name = "URL", default_value = "https://earthquake.usgs.gov/fdsnws/event/1")]
    pub url: String,

    /// The most events the service gives in one answer.
    #[arg(long, value_name = "N", default_value_t = 20_000)]
    pub limit: u64,

    /// How many times to try a request before giving up.
    #[arg(long, value_name = "N", default_value_t = 6)]
    pub tries: u32,

    /// Give up on a request, and try it again, after this long.
    #[arg(long, value_name = "DURATION", default_value = "60s")]
    pub timeout: Span,
}

/// What `fetch` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FetchFormat {
    /// The USGS CSV layout, one header.
    Csv,
    /// One GeoJSON FeatureCollection.
    Geojson,
}

/// Running the limiters in Redis.
#[derive(Debug, Args)]
pub struct RedisArgs {
    /// Run every limiter in Redis (7 or later), at this URL, as atomic scripts, so that
    /// decisions are the ones many processes sharing a limit would get: redis://host:6379/0.
    /// A node of a Redis Cluster is found to be one, and the cluster used; give --redis
    /// again for more seed nodes.
    #[arg(long, value_name = "URL")]
    pub redis: Vec<String>,

    /// The prefix of every Redis key ratelimit writes.
    #[arg(long, value_name = "PREFIX", default_value = crate::engine::redis::DEFAULT_PREFIX)]
    pub redis_prefix: String,

    /// Give up, with exit status 2, if Redis takes longer than this to answer a round trip
    /// (connecting takes at most 3s of it).
    #[arg(long, value_name = "DURATION", default_value = "5s", allow_hyphen_values = true)]
    pub redis_timeout: Span,
}

/// A fleet of servers, simulated: each with its own limiter, the events routed among them.
#[derive(Debug, Args)]
pub struct FleetArgs {
    /// Simulate K servers, each deciding on its own limiter, with the events routed among
    /// them; the report gives each server's share and what the fleet let through over one
    /// limiter that sees every event.
    #[arg(long, value_name = "K", help_heading = "Fleet")]
    pub servers: Option<u32>,

    /// How events find their server: round-robin (event i to server i mod K), random
    /// (drawn uniformly; see --seed) or hash:COLUMN (every row with one value of COLUMN on
    /// one server) [default: round-robin].
    #[arg(long, value_name = "ROUTE", help_heading = "Fleet")]
    pub route: Option<RouteArg>,

    /// The seed of --route random [default: 1].
    #[arg(long, value_name = "S", help_heading = "Fleet")]
    pub seed: Option<u64>,

    /// How the servers share the limit: local (each runs all of it), split (each runs N per
    /// K·P, burst ⌈b/K⌉) or synced (one shared limiter, seen by each server as it was at
    /// the last --sync) [default: local].
    #[arg(long, value_enum, value_name = "MODE", help_heading = "Fleet")]
    pub share: Option<ShareMode>,

    /// With --share synced: how often each server's copy is replaced by the shared state,
    /// at multiples of DURATION since the epoch. compare takes it more than once.
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true, help_heading = "Fleet")]
    pub sync: Vec<Span>,
}

/// `--route`: how a fleet's events find their server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RouteArg {
    /// Event i to server i mod K.
    RoundRobin,
    /// Drawn uniformly.
    Random,
    /// By a column's value.
    Hash(String),
}

impl FromStr for RouteArg {
    type Err = String;

    fn from_str(text: &str) -> Result<RouteArg, String> {
        match text {
            "round-robin" => Ok(RouteArg::RoundRobin),
            "random" => Ok(RouteArg::Random),
            _ => match text.strip_prefix("hash:") {
                Some(column) if !column.is_empty() => Ok(RouteArg::Hash(column.to_owned())),
                _ => Err(format!("'{text}' is none of round-robin, random and hash:COLUMN")),
            },
        }
    }
}

/// `--share`: how a fleet's servers share the limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ShareMode {
    /// Each server runs the whole limit.
    Local,
    /// Each server runs its share: N per K·P, burst ⌈b/K⌉.
    Split,
    /// One shared limiter, each server seeing it as it was at the last sync.
    Synced,
}

/// How to print the result.
#[derive(Debug, Args)]
pub struct OutputArgs {
    /// The output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

/// `ratelimit replay`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    #[command(flatten)]
    pub input: InputArgs,

    #[command(flatten)]
    pub keys: KeyArgs,

    #[command(flatten)]
    pub remote: RedisArgs,

    #[command(flatten)]
    pub fleet: FleetArgs,

    /// The limiter.
    #[arg(long, value_enum, value_name = "ALGO")]
    pub algo: Algorithm,

    #[command(flatten)]
    pub limit: LimitArgs,

    /// Write the input rows that passed, that were dropped, or all of them with a
    /// `decision` column, in time order, to stdout; the report goes to stderr.
    #[arg(long, value_enum, value_name = "WHICH")]
    pub emit: Option<Emit>,

    #[command(flatten)]
    pub output: OutputArgs,
}

/// `ratelimit compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    #[command(flatten)]
    pub input: InputArgs,

    #[command(flatten)]
    pub keys: KeyArgs,

    #[command(flatten)]
    pub remote: RedisArgs,

    #[command(flatten)]
    pub fleet: FleetArgs,

    /// The limiters to compare [default: all six]; repeat it, or separate names with
    /// commas. With --servers and one limiter but no --share, the share modes are
    /// compared instead: local, split, and synced at each --sync (default 1m).
    #[arg(long, value_enum, value_name = "ALGO", value_delimiter = ',')]
    pub algo: Vec<Algorithm>,

    #[command(flatten)]
    pub limit: LimitArgs,

    #[command(flatten)]
    pub output: OutputArgs,
}

/// `ratelimit plot`.
#[derive(Debug, Args)]
pub struct PlotArgs {
    #[command(flatten)]
    pub input: InputArgs,

    #[command(flatten)]
    pub limit: LimitArgs,

    /// The limiters to draw, top to bottom [default: all six]; repeat it, or separate
    /// names with commas.
    #[arg(long, value_enum, value_name = "ALGO", value_delimiter = ',')]
    pub algo: Vec<Algorithm>,

    /// Write the SVG to FILE, which appears whole or not at all, or to stdout with `-o -`
    /// [default: stdout, unless it is a terminal].
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// The size of a limiter: its rate and burst.
#[derive(Debug, Args)]
pub struct RateArgs {
    /// The rate: N events per period, as in 5/h or 1/30s.
    #[arg(long, value_name = "RATE", allow_hyphen_values = true)]
    pub rate: Rate,

    /// The burst b of token-bucket, gcra and leaky-queue [default: N].
    #[arg(long, value_name = "B", allow_hyphen_values = true, value_parser = parse_burst)]
    pub burst: Option<NonZeroU64>,
}

/// The size of the limiters, and the window to report.
#[derive(Debug, Args)]
pub struct LimitArgs {
    #[command(flatten)]
    pub size: RateArgs,

    /// The length of the busiest window to report [default: the rate's period].
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    pub window: Option<Span>,
}

/// `ratelimit min-bucket`.
#[derive(Debug, Args)]
pub struct MinBucketArgs {
    #[command(flatten)]
    pub input: InputArgs,

    #[command(flatten)]
    pub keys: KeyArgs,

    /// The rates to size a bucket for; repeat it, separate rates with commas, or give a
    /// range with one period: 1/h..20/h, or 1/h..20/h:2/h for a step.
    #[arg(
        long,
        value_name = "RATE",
        required_unless_present = "curve",
        value_delimiter = ',',
        allow_hyphen_values = true,
        value_parser = parse_rate_list
    )]
    pub rate: Vec<Vec<Rate>>,

    /// Print the whole burst-rate curve instead: its breakpoints, with the stretch of
    /// events that needs the most between each.
    #[arg(long, conflicts_with = "rate")]
    pub curve: bool,

    /// With --key, also find the smallest burst with which at least this share of the keys
    /// loses nothing, for each rate: --cover 99%.
    #[arg(long, value_name = "SHARE", conflicts_with = "curve", allow_hyphen_values = true)]
    pub cover: Option<Share>,

    /// With --curve, also draw it as an SVG: burst against rate, on log axes.
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,

    #[command(flatten)]
    pub output: OutputArgs,
}

const FILTER_AFTER_HELP: &str = "\
Each line is decided at the time it arrives, and a passed line is written at once; a
leaky-queue holds each admitted line until it leaves the queue, so the output is smoothed,
not only thinned. With --redis, the decision is made in Redis at the server's time, so that
any number of filters, on any number of machines, share one limit. At the end of input (or
on SIGINT) it prints one line of summary on stderr and exits 0.

Example:
  tail -F alerts.log | ratelimit filter --lines --rate 5/h --burst 5 | while read -r l; do notify \"$l\"; done";

/// `ratelimit filter`.
#[derive(Debug, Args)]
pub struct FilterArgs {
    /// The limiter.
    #[arg(long, value_enum, value_name = "ALGO", default_value_t = Algorithm::Gcra)]
    pub algo: Algorithm,

    #[command(flatten)]
    pub size: RateArgs,

    /// Read plain lines, rather than a CSV whose first line is its header.
    #[arg(long)]
    pub lines: bool,

    /// Give each distinct value of this column its own limit; with --lines, `--key line`
    /// makes each whole line its key.
    #[arg(long, value_name = "COLUMN")]
    pub key: Option<String>,

    /// Append the dropped lines to FILE (a CSV's header first).
    #[arg(long, value_name = "FILE")]
    pub dropped: Option<PathBuf>,

    #[command(flatten)]
    pub remote: RedisArgs,
}

const CHECK_AFTER_HELP: &str = "\
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

/// `ratelimit min-rate`.
#[derive(Debug, Args)]
pub struct MinRateArgs {
    #[command(flatten)]
    pub input: InputArgs,

    /// The bucket's capacity; repeat it, or separate bursts with commas.
    #[arg(
        long,
        value_name = "B",
        required = true,
        value_delimiter = ',',
        allow_hyphen_values = true,
        value_parser = parse_burst
    )]
    pub burst: Vec<NonZeroU64>,

    #[command(flatten)]
    pub output: OutputArgs,
}

fn parse_rate_list(text: &str) -> anyhow::Result<Vec<Rate>> {
    Ok(crate::units::rate::parse_rates(text)?)
}

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
        default_value = "2015-01-01T00:00:00Z",
        allow_hyphen_values = true
    )]
    pub start: Timestamp,

    /// How many days to simulate [default: 365].
    #[arg(long, value_name = "DAYS", conflicts_with = "until", allow_hyphen_values = true)]
    pub days: Option<Days>,

    /// Simulate up to this instant, exclusive, instead of --days.
    #[arg(long, value_name = "TIME", allow_hyphen_values = true)]
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

const REQUESTS_AFTER_HELP: &str = "\
Client k (by rank of activity, from 1) starts a session with probability proportional to \
1/k (Zipf). Sessions start as a Poisson process; each makes a geometric number of requests \
(mean 10), an exponential pause apart (mean 3 s). Each of the bots runs a script about once \
a day: 3000 requests, one every 0.2 s (300 a minute). The columns are time, client (c<rank> \
or bot<n>), method, path and status.

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
    #[arg(long, value_name = "TIME", default_value = "2025-01-01T00:00:00Z")]
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

    /// Write the log to FILE, which appears whole or not at all, or to stdout with -o -.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
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
        Ok(Mainshock { mag: mag.parse()?, time: time.parse()? })
    }
}

/// Output formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Aligned text for people.
    Table,
    /// JSON, whose field names are a stable contract.
    Json,
    /// CSV with a header row; nested fields are joined with `_`.
    Csv,
}

/// Which rows `--emit` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Emit {
    /// The rows the limiter passed.
    Passed,
    /// The rows the limiter dropped.
    Dropped,
    /// Every row, with a `decision` column: passed or dropped.
    All,
}

/// When to use color.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    /// When stdout is a terminal and NO_COLOR is not set.
    Auto,
    /// Always, for tables.
    Always,
    /// Never.
    Never,
}

/// The end of the time range: an instant, or a duration after `--since`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Until {
    /// Before this instant.
    At(Timestamp),
    /// Before `--since` plus this long.
    After(Span),
}

impl FromStr for Until {
    type Err = anyhow::Error;

    fn from_str(text: &str) -> anyhow::Result<Until> {
        match text.strip_prefix('+') {
            Some(span) => Ok(Until::After(span.parse()?)),
            None => Ok(Until::At(text.parse()?)),
        }
    }
}

/// A decimal number such as a magnitude, exact to the millionth: `Decimal(m)` is m / 10⁶.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decimal(pub i64);

impl Decimal {
    /// Returns the value as a float, for models that compute in floats.
    pub fn as_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }
}

impl FromStr for Decimal {
    type Err = anyhow::Error;

    fn from_str(text: &str) -> anyhow::Result<Decimal> {
        decimal::parse_exact(text.as_bytes(), 6).map(Decimal).map_err(|e| match e {
            DecimalError::TooPrecise => {
                anyhow::anyhow!("'{text}' has more than 6 decimals, the most that are kept")
            }
            DecimalError::Overflow => anyhow::anyhow!("'{text}' is too large"),
            DecimalError::Malformed => anyhow::anyhow!("'{text}' is not a number like 5 or 4.5"),
        })
    }
}

/// Reads a cost: a whole number of units, at least one.
fn parse_cost(text: &str) -> anyhow::Result<u64> {
    match text.parse::<u64>() {
        Ok(0) => anyhow::bail!("a cost must be at least 1 unit"),
        Ok(cost) => Ok(cost),
        Err(_) => anyhow::bail!("'{text}' is not a cost: a whole number of units, at least 1"),
    }
}

/// Reads a burst: a whole number of events, at least one.
fn parse_burst(text: &str) -> anyhow::Result<NonZeroU64> {
    match text.parse::<u64>().map(NonZeroU64::new) {
        Ok(None) => anyhow::bail!("a burst must be at least 1"),
        Ok(Some(burst)) => Ok(burst),
        Err(_) => anyhow::bail!("'{text}' is not a burst: a whole number of events, at least 1"),
    }
}
