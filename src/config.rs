//! The resolved configuration: defaults, conflicts and the terminal, settled once.

use std::io::{self, IsTerminal};
use std::path::Path;

use anyhow::{Result, bail};

use crate::catalog::{ReadOptions, Source};
use crate::cli::{self, Cli, ColorChoice, Command, Emit, Format, InputArgs, Until};
use crate::rate::Rate;
use crate::replay::Settings;

/// The largest burst a limiter may have; see [`Rate::MAX_COUNT`] for why there is one.
pub const MAX_BURST: u64 = Rate::MAX_COUNT;

/// What to do, with every default and conflict settled.
#[derive(Debug)]
pub struct Config {
    /// The job.
    pub job: Job,
    /// Whether tables written to stdout are colored.
    pub color_stdout: bool,
    /// Whether tables written to stderr are colored.
    pub color_stderr: bool,
}

/// One command's job.
#[derive(Debug)]
pub enum Job {
    /// `replay`.
    Replay(ReplayJob),
    /// `min-bucket`.
    MinBucket(MinBucketJob),
}

/// The input of a job.
#[derive(Debug)]
pub struct Input {
    /// Where the catalog comes from.
    pub source: Source,
    /// What to read from it.
    pub read: ReadOptions,
}

/// A resolved `replay`.
#[derive(Debug)]
pub struct ReplayJob {
    pub input: Input,
    pub settings: Settings,
    pub emit: Option<Emit>,
    pub format: Format,
}

/// A resolved `min-bucket`.
#[derive(Debug)]
pub struct MinBucketJob {
    pub input: Input,
    pub rates: Vec<Rate>,
    pub format: Format,
}

impl Config {
    /// Settles what the parsed command line leaves open.
    pub fn resolve(cli: Cli) -> Result<Config> {
        let job = match cli.command {
            Command::Replay(args) => Job::Replay(resolve_replay(args)?),
            Command::MinBucket(args) => Job::MinBucket(MinBucketJob {
                input: resolve_input(args.input)?,
                rates: args.rate,
                format: args.output.format,
            }),
        };
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let color = |terminal: bool| match cli.color {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => terminal && !no_color,
        };
        Ok(Config {
            job,
            color_stdout: color(io::stdout().is_terminal()),
            color_stderr: color(io::stderr().is_terminal()),
        })
    }
}

fn resolve_replay(args: cli::ReplayArgs) -> Result<ReplayJob> {
    let algorithm = args.algo;
    let rate = args.rate;
    let burst = match args.burst {
        Some(_) if !algorithm.uses_burst() => {
            bail!("--burst applies to token-bucket, gcra and leaky-queue, not {}", algorithm.name())
        }
        Some(b) if b > MAX_BURST => bail!("--burst may be at most {MAX_BURST}"),
        Some(b) => b,
        None => rate.count(),
    };
    let window = args.window.unwrap_or(rate.period());
    if window.is_zero() {
        bail!("--window must be longer than zero");
    }
    Ok(ReplayJob {
        input: resolve_input(args.input)?,
        settings: Settings { algorithm, rate, burst, window },
        emit: args.emit,
        format: args.output.format,
    })
}

fn resolve_input(args: InputArgs) -> Result<Input> {
    let source = match args.file.as_deref() {
        Some(path) if path == Path::new("-") => Source::Stdin,
        Some(path) => Source::Path(path.to_owned()),
        None if io::stdin().is_terminal() => {
            bail!("no input: give a catalog FILE, or pipe one to standard input")
        }
        None => Source::Stdin,
    };
    let until = match (args.until, args.since) {
        (Some(Until::After(span)), Some(since)) => match since.checked_add(span) {
            Some(until) => Some(until),
            None => bail!("--since plus --until {span} is past the year 9999"),
        },
        (Some(Until::After(_)), None) => bail!("--until +DURATION needs --since"),
        (Some(Until::At(until)), _) => Some(until),
        (None, _) => None,
    };
    if let (Some(since), Some(until)) = (args.since, until)
        && since >= until
    {
        bail!("--since ({since}) must be before --until ({until})");
    }
    Ok(Input {
        source,
        read: ReadOptions {
            time_column: args.time_column,
            time_format: args.time_format,
            since: args.since,
            until,
            min_mag: args.min_mag.map(|m| m.0),
        },
    })
}
