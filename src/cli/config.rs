//! The resolved configuration: defaults, conflicts and the terminal, settled once.

use std::io::{self, IsTerminal};
use std::path::Path;
use std::time::Duration;

use anyhow::{Result, anyhow, bail};

use crate::cli::args::{
    self, Cli, ColorChoice, Command, Decimal, Emit, Format, InputArgs, LimitArgs, SynthArgs, Until,
};
use crate::engine::redis::RedisTarget;
use crate::engine::replay::Settings;
use crate::input::catalog::{ReadOptions, Source};
use crate::input::sample;
use crate::limiter::Algorithm;
use crate::render::outfile::{Identity, Output};
use crate::synth::etas;
use crate::units::rate::Rate;
use crate::units::time::Span;

/// The largest burst a limiter may have; see [`Rate::MAX_COUNT`] for why there is one.
pub const MAX_BURST: u64 = Rate::MAX_COUNT;

/// The most rates `min-bucket` takes, in all its `--rate` lists and ranges.
pub const MAX_RATES: usize = crate::units::rate::MAX_RANGE;

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
    /// `compare`.
    Compare(CompareJob),
    /// `plot`.
    Plot(PlotJob),
    /// `min-bucket`.
    MinBucket(MinBucketJob),
    /// `min-rate`.
    MinRate(MinRateJob),
    /// `check`.
    Check(CheckJob),
    /// `synth`.
    Synth(SynthJob),
}

/// The input of a job.
#[derive(Debug)]
pub struct Input {
    /// Where the catalog comes from.
    pub source: Source,
    /// What to read from it.
    pub read: ReadOptions,
    /// A note for stderr about the input's choice, when the user did not make it.
    pub note: Option<&'static str>,
}

/// A resolved `check`.
#[derive(Debug)]
pub struct CheckJob {
    pub key: String,
    pub settings: Settings,
    pub cost: u64,
    pub redis: RedisTarget,
    pub format: Format,
}

/// A resolved `replay`.
#[derive(Debug)]
pub struct ReplayJob {
    pub input: Input,
    pub redis: Option<RedisTarget>,
    pub top: usize,
    pub settings: Settings,
    pub emit: Option<Emit>,
    pub format: Format,
}

/// A resolved `compare`: one settings per limiter.
#[derive(Debug)]
pub struct CompareJob {
    pub input: Input,
    pub redis: Option<RedisTarget>,
    pub top: usize,
    pub settings: Vec<Settings>,
    pub format: Format,
}

/// A resolved `plot`.
#[derive(Debug)]
pub struct PlotJob {
    pub input: Input,
    pub settings: Vec<Settings>,
    /// Where the SVG goes.
    pub output: Output,
}

/// A resolved `synth`.
#[derive(Debug)]
pub struct SynthJob {
    pub params: etas::Params,
    pub output: Output,
}

/// A resolved `min-bucket`: rates, or the whole curve.
#[derive(Debug)]
pub struct MinBucketJob {
    pub input: Input,
    pub top: usize,
    pub rates: Vec<Rate>,
    /// `Some` for `--curve`, with where to draw it as an SVG, if anywhere.
    pub curve: Option<Option<Output>>,
    pub format: Format,
}

/// A resolved `min-rate`.
#[derive(Debug)]
pub struct MinRateJob {
    pub input: Input,
    pub bursts: Vec<u64>,
    pub format: Format,
}

impl Config {
    /// Settles what the parsed command line leaves open.
    pub fn resolve(cli: Cli) -> Result<Config> {
        let job = match cli.command {
            Command::Replay(args) => Job::Replay(resolve_replay(args)?),
            Command::Compare(args) => Job::Compare(CompareJob {
                input: resolve_input(args.input, args.keys.key)?,
                redis: resolve_redis(args.remote)?,
                top: args.keys.top,
                settings: Algorithm::ALL
                    .iter()
                    .map(|&algorithm| resolve_limit(&args.limit, algorithm, false))
                    .collect::<Result<_>>()?,
                format: args.output.format,
            }),
            Command::Plot(args) => Job::Plot(resolve_plot(args)?),
            Command::MinBucket(args) => Job::MinBucket(resolve_min_bucket(args)?),
            Command::MinRate(args) => Job::MinRate(MinRateJob {
                input: resolve_input(args.input, None)?,
                bursts: args.burst,
                format: args.output.format,
            }),
            Command::Synth(args) => Job::Synth(resolve_synth(args)?),
            Command::Check(args) => Job::Check(resolve_check(args)?),
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

fn resolve_replay(args: args::ReplayArgs) -> Result<ReplayJob> {
    let input = resolve_input(args.input, args.keys.key)?;
    if args.emit.is_some() {
        // The rows go to stdout: it must not be the file they are read from.
        input.check_output(&Output::Stdout)?;
    }
    Ok(ReplayJob {
        settings: resolve_limit(&args.limit, args.algo, true)?,
        input,
        redis: resolve_redis(args.remote)?,
        top: args.keys.top,
        emit: args.emit,
        format: args.output.format,
    })
}

/// Settles one limiter's settings. A burst given to a limiter without one is an error when
/// the user named that limiter (`strict`), and ignored when it is one of several.
fn resolve_limit(args: &LimitArgs, algorithm: Algorithm, strict: bool) -> Result<Settings> {
    let rate = args.rate;
    let burst = match args.burst {
        Some(_) if strict && !algorithm.uses_burst() => {
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
    Ok(Settings { algorithm, rate, burst, window })
}

fn resolve_input(args: InputArgs, key_column: Option<String>) -> Result<Input> {
    let mut note = None;
    let source = match args.file.as_deref() {
        _ if args.sample => sample::source(),
        Some(path) if path == Path::new("-") => Source::Stdin,
        Some(path) => Source::Path(path.to_owned()),
        None if io::stdin().is_terminal() => {
            note = Some(sample::NOTE);
            sample::source()
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
            key_column,
            // Only a person at a terminal wants to see a bar; it goes to stderr.
            progress: io::stderr().is_terminal(),
        },
        note,
    })
}

impl Input {
    /// Refuses an output that would overwrite this input, before anything is read.
    pub fn check_output(&self, output: &Output) -> Result<()> {
        let identity = match &self.source {
            Source::Path(path) => std::fs::metadata(path).ok().as_ref().and_then(Identity::of),
            Source::Stdin => Identity::of_stdin(),
            Source::Embedded { .. } => None,
        };
        output.check_not_input(identity.as_ref(), &self.source.name())
    }
}

fn resolve_redis(args: args::RedisArgs) -> Result<Option<RedisTarget>> {
    let timeout = redis_timeout(args.redis_timeout)?;
    Ok(args.redis.map(|url| RedisTarget { url, prefix: args.redis_prefix, timeout }))
}

fn redis_timeout(span: Span) -> Result<Duration> {
    let micros = u64::try_from(span.as_micros()).unwrap_or(0);
    if micros == 0 {
        bail!("--redis-timeout must be longer than zero");
    }
    Ok(Duration::from_micros(micros))
}

fn resolve_check(args: args::CheckArgs) -> Result<CheckJob> {
    if args.algo == Algorithm::LeakyQueue {
        bail!(
            "check decides at once; a leaky queue delays instead: use gcra, which admits the same"
        );
    }
    let limit = LimitArgs { rate: args.rate, burst: args.burst, window: None };
    Ok(CheckJob {
        key: args.key,
        settings: resolve_limit(&limit, args.algo, true)?,
        cost: args.cost,
        redis: RedisTarget {
            url: args.redis,
            prefix: args.redis_prefix,
            timeout: redis_timeout(args.redis_timeout)?,
        },
        format: args.output.format,
    })
}

fn resolve_plot(args: args::PlotArgs) -> Result<PlotJob> {
    let algorithms = if args.algo.is_empty() { Algorithm::ALL.to_vec() } else { args.algo };
    let settings = algorithms
        .iter()
        .map(|&algorithm| resolve_limit(&args.limit, algorithm, false))
        .collect::<Result<_>>()?;
    let output = match args.output {
        Some(path) => Output::new(path),
        None if io::stdout().is_terminal() => {
            bail!("refusing to write SVG to a terminal: give -o FILE, or -o - for stdout")
        }
        None => Output::Stdout,
    };
    let input = resolve_input(args.input, None)?;
    input.check_output(&output)?;
    Ok(PlotJob { input, settings, output })
}

fn resolve_min_bucket(args: args::MinBucketArgs) -> Result<MinBucketJob> {
    if args.plot.is_some() && !args.curve {
        bail!("--plot draws the curve: use it with --curve");
    }
    let input = resolve_input(args.input, args.keys.key)?;
    let plot = args.plot.map(Output::new);
    if let Some(plot) = &plot {
        input.check_output(plot)?;
    }
    let rates: Vec<Rate> = args.rate.into_iter().flatten().collect();
    if rates.len() > MAX_RATES {
        bail!("--rate gives {} rates; at most {MAX_RATES} are allowed", rates.len());
    }
    Ok(MinBucketJob {
        input,
        top: args.keys.top,
        rates,
        curve: args.curve.then_some(plot),
        format: args.output.format,
    })
}

fn resolve_synth(args: SynthArgs) -> Result<SynthJob> {
    let start = args.start;
    let end = match (args.until, args.days) {
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
    if !(0.0..etas::Params::MAX_MAG).contains(&args.min_mag.as_f64()) {
        bail!(
            "--min-mag must be from 0 to below {}, the largest magnitude the model makes",
            etas::Params::MAX_MAG
        );
    }
    if args.b_value.0 <= 0 {
        bail!("--b-value must be more than 0");
    }
    if args.scale.0 <= 0 {
        bail!("--scale must be more than 0: a zero rate makes no catalog");
    }
    let mut params = etas::Params::new(args.seed, start, end);
    params.min_mag = args.min_mag.as_f64();
    params.b_value = args.b_value.as_f64();
    // The background rate is set for M≥5; Gutenberg–Richter carries it to another Mc.
    params.background_per_day = etas::Params::BACKGROUND_M5_PER_DAY
        * libm::pow(10.0, params.b_value * (5.0 - params.min_mag))
        * args.scale.as_f64();
    if !params.background_per_day.is_finite() {
        bail!(
            "the background rate, 2.7 × 10^(b(5 - Mc)) × --scale a day, overflows with \
             --b-value {} and --min-mag {}",
            args.b_value.as_f64(),
            args.min_mag.as_f64()
        );
    }
    let n = params.branching_ratio();
    if n >= 1.0 {
        bail!(
            "with --b-value {} and --min-mag {}, each event triggers {n:.2} aftershocks on \
             average: sequences would grow without end; raise --b-value",
            args.b_value.as_f64(),
            args.min_mag.as_f64()
        );
    }
    for shock in &args.mainshock {
        if !in_range(shock.mag) || shock.mag.0 < args.min_mag.0 {
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
    Ok(SynthJob { params, output: args.output.map_or(Output::Stdout, Output::new) })
}
