//! The command line as the user typed it, parsed by clap; `config` resolves it.

use std::path::PathBuf;
use std::str::FromStr;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::decimal;
use crate::limiter::Algorithm;
use crate::rate::Rate;
use crate::time::{Span, TimeFormat, Timestamp};

const ABOUT: &str =
    "Replay a recorded event catalog through a rate limiter, on the events' own clock.";

const AFTER_HELP: &str = "\
Rates are N/UNIT with an optional multiple: 5/h, 100/s, 1/30s, 10/15m. Units: ms, s, m or \
min, h, d. Durations are like 48h, 30s, 1h30m. Times are RFC 3339 (2025-07-29T23:24:00Z) or \
dates (2025-07-29, midnight UTC).

Exit status: 0 on success, 2 on any error.";

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
    /// Find the smallest token bucket that drops nothing, for one or more rates.
    #[command(after_help = AFTER_HELP)]
    MinBucket(MinBucketArgs),
}

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
    /// The catalog: a CSV file with a header, or - for standard input [default: standard
    /// input, when it is not a terminal].
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,

    /// The column that holds each event's time.
    #[arg(long, value_name = "NAME", default_value = "time")]
    pub time_column: String,

    /// How the time column is written.
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t)]
    pub time_format: TimeFormat,

    /// Use only events at or after this time.
    #[arg(long, value_name = "TIME", allow_hyphen_values = true)]
    pub since: Option<Timestamp>,

    /// Use only events before this time, or before --since plus a duration: +48h.
    #[arg(long, value_name = "TIME|+DURATION", allow_hyphen_values = true)]
    pub until: Option<Until>,

    /// Use only events whose `mag` column is at least M.
    #[arg(long, value_name = "M", allow_hyphen_values = true)]
    pub min_mag: Option<Magnitude>,
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

    /// The limiter.
    #[arg(long, value_enum, value_name = "ALGO")]
    pub algo: Algorithm,

    /// The rate: N events per period, as in 5/h or 1/30s.
    #[arg(long, value_name = "RATE", allow_hyphen_values = true)]
    pub rate: Rate,

    /// The burst b of token-bucket, gcra and leaky-queue [default: N].
    #[arg(long, value_name = "B", allow_hyphen_values = true, value_parser = parse_burst)]
    pub burst: Option<u64>,

    /// The length of the busiest window to report [default: the rate's period].
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    pub window: Option<Span>,

    /// Write the input rows that passed, that were dropped, or all of them with a
    /// `decision` column, in time order, to stdout; the report goes to stderr.
    #[arg(long, value_enum, value_name = "WHICH")]
    pub emit: Option<Emit>,

    #[command(flatten)]
    pub output: OutputArgs,
}

/// `ratelimit min-bucket`.
#[derive(Debug, Args)]
pub struct MinBucketArgs {
    #[command(flatten)]
    pub input: InputArgs,

    /// The rates to size a bucket for; repeat it, or separate rates with commas.
    #[arg(
        long,
        value_name = "RATE",
        required = true,
        value_delimiter = ',',
        allow_hyphen_values = true
    )]
    pub rate: Vec<Rate>,

    #[command(flatten)]
    pub output: OutputArgs,
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

/// A magnitude threshold, exact to the millionth.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Magnitude(pub i64);

impl FromStr for Magnitude {
    type Err = anyhow::Error;

    fn from_str(text: &str) -> anyhow::Result<Magnitude> {
        decimal::parse_exact(text.as_bytes(), 6)
            .map(Magnitude)
            .map_err(|_| anyhow::anyhow!("'{text}' is not a magnitude like 5 or 4.5"))
    }
}

/// Reads a burst: a whole number of events, at least one.
fn parse_burst(text: &str) -> anyhow::Result<u64> {
    match text.parse::<u64>() {
        Ok(0) => anyhow::bail!("a burst must be at least 1"),
        Ok(burst) => Ok(burst),
        Err(_) => anyhow::bail!("'{text}' is not a burst: a whole number of events, at least 1"),
    }
}
