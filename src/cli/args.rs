//! The groups of flags that commands share, as the user typed them; `config` resolves them.

use std::num::NonZeroU64;
use std::path::PathBuf;
use std::str::FromStr;

use clap::{Args, ValueEnum};

use crate::engine::limit::{Given, column};
use crate::input::catalog::Ties;
use crate::input::cost::Cost;
use crate::input::format::InputFormat;
use crate::limiter::{Algorithm, ZoneSize};
use crate::units::decimal::{self, DecimalError};
use crate::units::rate::Rate;
use crate::units::time::{Span, Timestamp};

pub(crate) const AFTER_HELP: &str = "\
Rates are N/UNIT with an optional multiple: 5/h, 100/s, 1/30s, 10/15m. Units: ms, s, m or \
min, h, d. Durations are like 48h, 30s, 1h30m. Times are RFC 3339 (2025-07-29T23:24:00Z) or \
dates (2025-07-29, midnight UTC).

Exit status: 0 on success, 1 when check is limited, 2 on any error, 130, 143 and 129 when \
interrupted by SIGINT, SIGTERM or SIGHUP (a file being written is removed first).";

/// What a replay reads, by key, and where its limiters run: the flags `replay` and
/// `compare` share; `job` resolves them into one [`Job`](super::job::Job).
#[derive(Debug, Args)]
pub struct JobArgs {
    #[command(flatten)]
    pub input: InputArgs,

    #[command(flatten)]
    pub keys: KeyArgs,

    #[command(flatten)]
    pub remote: RedisArgs,

    #[command(flatten)]
    pub fleet: FleetArgs,
}

/// Where the catalog comes from and which of its rows to use.
#[derive(Debug, Args)]
pub struct InputArgs {
    /// The catalog: a file (CSV with a header unless --input-format or its extension says
    /// otherwise; gzip or Zstandard is read decompressed), or - for standard input
    /// [default: standard input; the bundled sample if standard input is a terminal].
    /// Several files are read as one, in the order given, then in time order: a rotated
    /// log (access.log.2.gz access.log.1 access.log); a CSV's header once. A folder is its
    /// files (not those named .* or _*), and a quoted pattern ('logs/*.parquet') the files
    /// it matches, in order of name.
    #[arg(value_name = "FILE")]
    pub file: Vec<PathBuf>,

    /// Read the bundled sample, a small synthetic catalog, instead of a FILE.
    #[arg(long, conflicts_with = "file")]
    pub sample: bool,

    /// How the catalog is written [default: what the file's extension says (.tsv, .jsonl or
    /// .ndjson, .geojson, .log), else csv].
    #[arg(long, value_name = "FORMAT", value_enum)]
    pub input_format: Option<InputFormat>,

    /// The byte between the fields of a CSV: one character, or \t (or tab) [default: `,`; a
    /// tab for tsv].
    #[arg(short = 'd', long, value_name = "CHAR", value_parser = parse_delimiter)]
    pub delimiter: Option<u8>,

    /// The CSV has no header row: its first row is data, and its columns are named by
    /// number from 1, as in --time-column 2 or --key 4 [--time-column then defaults to 1].
    #[arg(short = 'n', long)]
    pub no_headers: bool,

    /// Read an access log written in this nginx log_format, as goaccess does: '$remote_addr
    /// [$time_local] "$request" $status $msec $request_time'. Fields are its variables
    /// (--key remote_addr); the time is $msec − $request_time when it has both (when the
    /// request came), else $msec, $time_iso8601 or $time_local [implies --input-format clf].
    #[arg(long, value_name = "FORMAT", allow_hyphen_values = true)]
    pub log_format: Option<String>,

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
    #[arg(short = 'j', long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub threads: Option<u16>,

    /// Use only events at or after this time.
    #[arg(long, value_name = "TIME", value_parser = crate::units::time::rfc3339, allow_hyphen_values = true)]
    pub since: Option<Timestamp>,

    /// Use only events before this time, or before --since plus a duration: +48h.
    #[arg(long, value_name = "TIME|+DURATION", allow_hyphen_values = true)]
    pub until: Option<Until>,

    /// Use only events whose `mag` column is at least M: --where mag>=M.
    #[cfg(feature = "quakes")]
    #[arg(long, value_name = "M", allow_hyphen_values = true)]
    pub min_mag: Option<Decimal>,

    /// Use only events whose column holds a number at least a value, written COLUMN>=NUMBER
    /// (score>=0.9; six decimals kept); a row where it is empty is left out and counted.
    /// Repeat it for several columns.
    #[arg(long = "where", value_name = "COND", allow_hyphen_values = true)]
    pub at_least: Vec<AtLeast>,

    /// What each event costs: a whole number for every event (--cost 3), or the column
    /// that holds each event's cost in units, such as tokens or bytes (--cost
    /// total_tokens). A limiter spends an event's cost; the sizing figures weigh it
    /// [default: 1].
    #[arg(long, value_name = "COLUMN|N")]
    pub cost: Option<Cost>,

    #[command(flatten)]
    pub empty_key: super::empty_key::EmptyKeyArg,

    /// How events written at the same whole second are read, when the times say only the
    /// second (an access log's $time_local): together, simultaneous, as written; or
    /// spread, evenly across their second in the order read (the k-th of n at k/n s).
    /// Neither is the truth: the two bound what the events could have been
    /// [default: together].
    #[arg(long, value_name = "READING", value_parser = ties_parser())]
    pub ties: Option<Ties>,
}

/// Limits per key.
#[derive(Debug, Args)]
pub struct KeyArgs {
    /// Give each distinct value of this column its own limiter, as a service limits each
    /// client: --key net. Rows with an empty value share one key. An nginx variable names
    /// an access log's field: $binary_remote_addr and $remote_addr the client.
    #[arg(short = 'k', long, value_name = "COLUMN", value_parser = |name: &str| Ok::<_, String>(column(name)))]
    pub key: Option<String>,

    /// With --key, list this many keys, most dropped first (most needed bucket first for
    /// min-bucket); 0 lists all.
    #[arg(long, value_name = "K", default_value_t = 10)]
    pub top: usize,
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
    pub route: Option<RouteAsk>,

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
    #[arg(short = 'f', long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

/// What a limiter takes beside its rate: its burst, nginx's `delay=`, and any limiter's own
/// parameters.
#[derive(Clone, Debug, Default, Args)]
pub struct Shape {
    /// The burst b of token-bucket, gcra and leaky-queue [default: N]; nginx's burst=
    /// [default: 0]; traefik's burst [default: 1].
    #[arg(short = 'b', long, value_name = "B", allow_hyphen_values = true, value_parser = parse_given_burst)]
    pub burst: Option<u64>,

    #[command(flatten)]
    pub nginx: NginxArgs,

    #[command(flatten)]
    pub own: OwnParams,
}

impl Shape {
    /// The limiter's own parameters, as a spec writes them: nginx's flags, then `--param`.
    pub fn given(&self) -> Given {
        self.own.after(self.nginx.given())
    }
}

/// A limiter's own parameters, each as its `--limit` spec writes it.
#[derive(Clone, Debug, Default, Args)]
pub struct OwnParams {
    /// A limiter's own parameter, as its --limit spec writes it: block=60s
    /// (rate-limiter-flexible, nestjs-throttler), reset=global (express-rate-limit); repeat
    /// for more
    #[arg(long = "param", value_name = "KEY[=VALUE]")]
    pub params: Vec<String>,
}

impl OwnParams {
    /// `given`, then the parameters `--param` gives.
    pub fn after(&self, mut given: Given) -> Given {
        for param in &self.params {
            let (key, value) = match param.split_once('=') {
                Some((key, value)) => (key, Some(value.to_owned())),
                None => (param.as_str(), None),
            };
            given.0.push((key.trim().to_owned(), value));
        }
        given
    }
}

/// The size of a limiter: its rate and burst.
#[derive(Debug, Args)]
pub struct RateArgs {
    /// The rate: N events per period, as in 5/h or 1/30s (or nginx's 10r/s, 30r/m).
    #[arg(short = 'r', long, value_name = "RATE", allow_hyphen_values = true)]
    pub rate: Rate,

    #[command(flatten)]
    pub shape: Shape,
}

/// When nginx serves the requests it admits: `limit_req`'s `delay=`, `nodelay` and
/// `limit_req_dry_run`. With none, nginx's default, `delay=0`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Args)]
pub struct NginxArgs {
    /// nginx's delay=D: a request admitted with more than D of excess waits [default: 0]
    #[arg(long, value_name = "D", conflicts_with = "nodelay")]
    pub delay: Option<u64>,

    /// nginx's nodelay: every admitted request is served at once
    #[arg(long)]
    pub nodelay: bool,

    /// nginx's limit_req_dry_run on: nothing delayed or refused (beside --delay or --nodelay,
    /// as nginx takes them); the refused are those nginx logs as REJECTED_DRY_RUN
    #[arg(long)]
    pub dry_run: bool,

    /// nginx's zone=NAME:SIZE: full, it frees its least recently used key [default: 10m]
    #[arg(long, value_name = "SIZE", value_parser = |t: &str| t.parse::<ZoneSize>())]
    pub zone: Option<ZoneSize>,
}

impl NginxArgs {
    /// The parameters the flags give, as a spec writes them.
    pub fn given(&self) -> Given {
        let mut given = Vec::new();
        if let Some(delay) = self.delay {
            given.push(("delay".to_owned(), Some(delay.to_string())));
        }
        if self.nodelay {
            given.push(("nodelay".to_owned(), None));
        }
        if self.dry_run {
            given.push(("dry-run".to_owned(), None));
        }
        if let Some(zone) = self.zone {
            given.push(("zone".to_owned(), Some(zone.to_string())));
        }
        Given(given)
    }
}

/// The one limit of a live decision (`check`, `filter`): a limiter, GCRA unless said, and
/// its size; or, in its place, `--limit` given for each of several layers.
#[derive(Debug, Args)]
pub struct LiveLimitArgs {
    /// The limiter.
    #[arg(short = 'a', long, value_parser = crate::cli::algorithm_parser(), value_name = "ALGO", default_value_t = Algorithm::default())]
    pub algo: Algorithm,

    /// The rate: N events per period, as in 5/h or 1/30s (or nginx's 10r/s, 30r/m).
    #[arg(short = 'r', long, value_name = "RATE", allow_hyphen_values = true)]
    #[arg(required_unless_present = "limits")]
    pub rate: Option<Rate>,

    #[command(flatten)]
    pub shape: Shape,
}

/// The size of the limiters, and the window to report.
#[derive(Debug, Args)]
pub struct LimitArgs {
    #[command(flatten)]
    pub size: RateArgs,

    /// The length of the busiest window to report [default: the rate's period].
    #[arg(short = 'w', long, value_name = "DURATION", allow_hyphen_values = true)]
    pub window: Option<Span>,
}

/// A rate, a burst and a busiest window, given unless `--limit` stands in for them:
/// replay's layers, compare's configurations (each with its own).
#[derive(Debug, Args)]
pub struct UnlessLimits {
    /// The rate: N events per period, as in 5/h or 1/30s (or nginx's 10r/s, 30r/m).
    // Needed unless --limit (or replay's --preset) gives the layers: each command says so
    // in its own words, as clap cannot name an option only one of them has.
    #[arg(short = 'r', long, value_name = "RATE", allow_hyphen_values = true)]
    pub rate: Option<Rate>,

    #[command(flatten)]
    pub shape: Shape,

    /// The length of the busiest window to report [default: the rate's period].
    #[arg(short = 'w', long, value_name = "DURATION", allow_hyphen_values = true)]
    pub window: Option<Span>,
}

impl UnlessLimits {
    /// The limit given, if `--rate` was.
    pub fn limit(&self) -> Option<LimitArgs> {
        let size = RateArgs { rate: self.rate?, shape: self.shape.clone() };
        Some(LimitArgs { size, window: self.window })
    }
}

pub use crate::render::export::Format;

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

pub use crate::engine::fleet_ask::RouteAsk;
pub use crate::input::asked::{AtLeast, Until};

/// A decimal number such as a magnitude, exact to the millionth: `Decimal(m)` is m / 10⁶.
/// Only the earthquake tooling (feature `quakes`) takes one.
#[cfg(feature = "quakes")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decimal(pub i64);

#[cfg(feature = "quakes")]
impl Decimal {
    /// Returns the value as a float, for models that compute in floats.
    pub fn as_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }
}

#[cfg(feature = "quakes")]
impl FromStr for Decimal {
    type Err = crate::input::asked::AskedError;

    fn from_str(text: &str) -> Result<Decimal, Self::Err> {
        crate::input::asked::millionths(text).map(Decimal)
    }
}

/// Reads a cost: a whole number of units, at least one.
pub(crate) fn parse_cost(text: &str) -> anyhow::Result<u64> {
    // The readers' own rule, so that `check` takes what a replay takes: 0 included.
    Ok(crate::input::cost::parse_cost(text.as_bytes())?)
}

/// Reads a field delimiter: one ASCII character that is not a quote or a line break, or
/// `\t` or `tab` for a tab.
pub(crate) fn parse_delimiter(text: &str) -> anyhow::Result<u8> {
    Ok(crate::input::asked::delimiter(text)?)
}

/// Reads a limiter's burst as its system writes it: a whole number of events, at most N's
/// bound, 10^12; 0 only for a system whose burst counts the requests beyond the first
/// (nginx's), which the limiter's settings decide.
pub(crate) fn parse_given_burst(text: &str) -> anyhow::Result<u64> {
    match text.parse::<u64>() {
        Ok(burst) if burst > Rate::MAX_COUNT => {
            anyhow::bail!("a burst may be at most {}", Rate::MAX_COUNT)
        }
        Ok(burst) => Ok(burst),
        Err(_) => anyhow::bail!("'{text}' is not a burst: a whole number of events"),
    }
}

/// Reads a burst: a whole number of events, at least one and at most N's bound, 10^12,
/// for every command alike.
pub(crate) fn parse_burst(text: &str) -> anyhow::Result<NonZeroU64> {
    match text.parse::<u64>().map(NonZeroU64::new) {
        Ok(None) => anyhow::bail!("a burst must be at least 1"),
        Ok(Some(burst)) if burst.get() > Rate::MAX_COUNT => {
            anyhow::bail!("a burst may be at most {}", Rate::MAX_COUNT)
        }
        Ok(Some(burst)) => Ok(burst),
        Err(_) => anyhow::bail!("'{text}' is not a burst: a whole number of events, at least 1"),
    }
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

/// Parses `--ties`, offering its readings by name.
fn ties_parser() -> impl clap::builder::TypedValueParser<Value = Ties> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new([Ties::Together, Ties::Spread].map(Ties::name))
        .try_map(|s| s.parse::<Ties>())
}
