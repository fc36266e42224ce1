//! `ratelimit replay`: a limit, or layers all or nothing, over a catalog, as a report or as
//! a filter.

mod validate;

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::{Args, ValueEnum};

use crate::cli::args::{JobArgs, OutputArgs, UnlessLimits};
use crate::cli::config::{Input, Styles};
use crate::cli::diagnostics::diagnostics;
use crate::cli::job::Job;
use crate::cli::layer;
use crate::cli::notes::say_notes;
use crate::engine::Backend;
use crate::engine::limit::Limit;
use crate::engine::recorder::Settings;
use crate::engine::replay::{Again, Run, Settled};
use crate::engine::settled::LayerSpec;
use crate::engine::settled::RequestsAsk;
use crate::engine::settled::retry::Retry;
use crate::input::catalog::{self, ReadOptions, Rows};
use crate::input::format::InputFormat;
use crate::input::requests::Completion;
use crate::limiter::Algorithm;
use crate::policy_report::ReplayReport;
use crate::render::export;
use crate::render::outfile::Output;
use crate::render::outfile::stdout;

/// Writes what a replay found (one limit's report, the layers', or the layers settled after
/// the response), as `args` ask: to stdout, or with `--emit` (the rows went there) to
/// stderr.
pub(crate) fn write<R: export::Report>(
    report: &R,
    args: &ReplayArgs,
    styles: &Styles,
) -> Result<ExitCode> {
    let (mut out, style): (Box<dyn Write>, _) = match args.emit {
        None => (Box::new(BufWriter::new(stdout())), styles.stdout),
        Some(_) => (diagnostics(), styles.stderr),
    };
    export::write(&mut out, args.output.format, style, report)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Replays the input through the policy the flags give (`--algo`'s one limit, or
/// `--limit`'s layers), and returns its report; with `--emit`, writes the rows first, and
/// with `--validate`, says how the decisions agree with the system's.
pub(crate) fn run(args: &ReplayArgs) -> Result<ReplayReport> {
    let Resolved { settled, input, backend, top } = args.resolve()?;
    let (source, read) = (&input.source, &input.read);
    let run = Run { source, read, backend: &backend, top, decisions: false };
    let (report, notes) = match (args.emit, &args.validate) {
        (None, None) => {
            let replayed = run.replay(&settled)?;
            (replayed.report, replayed.notes)
        }
        (None, Some(column)) => {
            let (rows, stats) = catalog::read_rows(source, read)?;
            // Decided in the order the system decided them, as its log tells.
            let decided = validate::decided_order(&rows, column, read)?;
            let events = decided.iter().map(|d| d.event);
            let (trace, report, notes) = run.decide(&settled, events, &stats, Again::NOTHING)?;
            validate::say(&decided, &trace, column);
            (report, notes)
        }
        (Some(emit), _) => {
            // Every row is read and checked, and every decision taken, before the first
            // row is written, so an error leaves no half-written output.
            let (rows, stats) = catalog::read_rows(source, read)?;
            let events = rows.iter().map(|(event, _)| event);
            let again = Again { own_size: true, spread: false };
            let (trace, report, notes) = run.decide(&settled, events, &stats, again)?;
            emit_rows(&rows, &trace, emit, read, !args.no_header)?;
            (report, notes)
        }
    };
    say_notes(&input, &notes);
    Ok(report)
}

/// A replay's flags, settled once: the policy, the input, where it runs, and how many
/// keys its report ranks.
struct Resolved {
    settled: Settled,
    input: Input,
    backend: Backend,
    top: usize,
}

impl ReplayArgs {
    /// Settles the flags: `--algo` is one limit (on a fleet or in Redis if asked);
    /// `--limit`, given again for each, is layers all or nothing. The one place the two
    /// part: downstream, a policy is a policy.
    fn resolve(&self) -> Result<Resolved> {
        if self.limits.is_empty() {
            let input = self.job.input()?;
            check_emit(self.emit, &input)?;
            let (Some(algorithm), Some(limit)) = (self.algo, self.size.limit()) else {
                bail!("replay needs --algo and --rate, or --limit")
            };
            let settings = limit.size.settings(algorithm, limit.window, true)?;
            let Job { input, settings, backend, top, .. } =
                self.job.job(input, vec![settings], false)?;
            return Ok(Resolved { settled: Settled::One(settings[0]), input, backend, top });
        }
        let stop = self.stop_counting_over_limit;
        let limits = self.plain_limits()?;
        let (layers, input) =
            layer::setup(&limits, &self.job.input, self.size.window, stop, "layers")?;
        check_emit(self.emit, &input)?;
        let settings: Vec<Settings> = layers.iter().map(|l| l.settings).collect();
        let backend = Backend::new(&settings, self.job.remote.target()?.as_ref(), None)?;
        let settled = Settled::Layers { limits, layers };
        Ok(Resolved { settled, input, backend, top: self.job.keys.top })
    }
}

impl ReplayArgs {
    /// When each request completes, if the flags say: `--duration` or `--end`.
    pub(crate) fn completion(&self) -> Option<Completion> {
        Completion::given(self.duration.as_deref(), self.end.as_deref())
    }

    /// Whether the replay is of requests, each layer charged as it says: with
    /// completions, a preset, or a layer that is no limit decided at arrival (a sum, a
    /// charge after, a cap in flight).
    pub(crate) fn of_requests(&self) -> bool {
        self.completion().is_some()
            || self.preset.is_some()
            || self.retry.is_some()
            || self.limits.iter().any(|spec| spec.limit().is_none())
    }

    /// The layers: each `--limit`, then the `--preset`'s.
    fn layers(&self) -> Result<Vec<LayerSpec>> {
        let mut layers = self.limits.clone();
        if let Some(name) = &self.preset {
            layers.extend(crate::engine::settled::presets::one(name).map_err(anyhow::Error::msg)?);
        }
        if layers.is_empty() {
            bail!("--duration and --end settle --limit or --preset layers: give one");
        }
        Ok(layers)
    }

    /// The `--limit` layers as limits decided at arrival: each must be one, as only
    /// requests with completions are settled after.
    fn plain_limits(&self) -> Result<Vec<Limit>> {
        (self.limits.iter())
            .map(|spec| match spec.limit() {
                Some(limit) => Ok(limit),
                None => bail!(
                    "--limit {spec} is settled after the response: give --duration COLUMN or \
                     --end COLUMN, when each request completes"
                ),
            })
            .collect()
    }
}

/// Replays requests through the `--limit` and `--preset` layers, settled after the
/// response where they say and the requests complete, and writes the report.
pub(crate) fn settled(args: &ReplayArgs, styles: &Styles) -> Result<ExitCode> {
    let completion = args.completion();
    let layers = args.layers()?;
    if completion.is_none()
        && let Some(spec) = layers.iter().find(|spec| spec.settles_after())
    {
        bail!(
            "--limit {spec} is settled after the response: give --duration COLUMN or --end \
             COLUMN, when each request completes"
        );
    }
    let key = crate::engine::settled::key_column(&layers)?;
    let input = args.job.input.resolve(key.map(|k| (k, "--limit key=")))?;
    let redis = args.job.remote.target()?;
    let ask = RequestsAsk {
        completion: completion.as_ref(),
        window: args.size.window,
        retry: args.retry.as_ref(),
        redis: redis.as_ref(),
    };
    let (report, stats) = crate::engine::settled::replay(&input.source, &input.read, &layers, ask)?;
    say_notes(&input, &crate::engine::notes::notes(&input.source, &input.read, &stats));
    write(&report, args, styles)
}

/// Refuses an `--emit` the input cannot take: `all` adds a column, which only CSV and TSV
/// have, and the rows go to stdout, which must not be the file they are read from.
pub(crate) fn check_emit(emit: Option<Emit>, input: &Input) -> Result<()> {
    let format = input.read.format;
    if emit == Some(Emit::All) && !matches!(format, InputFormat::Csv | InputFormat::Tsv) {
        bail!(
            "--emit all adds a column, which {} has not: use --emit passed or --emit dropped",
            format.name()
        );
    }
    if emit.is_some() {
        input.check_output(&Output::Stdout)?;
    }
    Ok(())
}

/// Writes the rows `emit` asks for to stdout, each with its decision in `trace` (one a
/// row, in order), as they came in: CSV and TSV with their `header` if asked (and a column for the
/// decision), the others line by line, GeoJSON as JSON Lines of features. Every row has
/// been read and checked, and every decision taken, so an error leaves no half-written
/// output.
pub(crate) fn emit_rows(
    rows: &Rows,
    trace: &[bool],
    emit: Emit,
    read: &ReadOptions,
    header: bool,
) -> Result<()> {
    let mut out = BufWriter::new(stdout());
    let tabular = matches!(read.format, InputFormat::Csv | InputFormat::Tsv);
    let column = |text: &str| [&[read.delimiter()], text.as_bytes()].concat();
    let (passed, dropped) = (column("passed"), column("dropped"));
    // An input without a header gives rows without one.
    if header && read.headers && tabular {
        out.write_all(rows.header())?;
        if emit == Emit::All {
            out.write_all(&column("decision"))?;
        }
        out.write_all(b"\n")?;
    }
    for ((_, row), &pass) in rows.iter().zip(trace) {
        match emit {
            Emit::Passed if pass => writeln_bytes(&mut out, row, b"")?,
            Emit::Dropped if !pass => writeln_bytes(&mut out, row, b"")?,
            Emit::All => writeln_bytes(&mut out, row, if pass { &passed } else { &dropped })?,
            _ => {}
        }
    }
    out.flush()?;
    Ok(())
}

fn writeln_bytes(out: &mut impl Write, row: &[u8], suffix: &[u8]) -> io::Result<()> {
    out.write_all(row)?;
    out.write_all(suffix)?;
    out.write_all(b"\n")
}

pub(crate) const REPLAY_AFTER_HELP: &str = "\
Limiters: --algo's possible values say each one's rule; `ratelimit limiters` also says what \
each models, its burst, its own parameters (given as --limit keys, or nginx's flags) and its \
promise.

Every decision is made with integers: times in microseconds, rates as N per P.

Exit status: 0 on success, 2 on any error.";

/// `ratelimit replay`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    #[command(flatten)]
    pub job: JobArgs,

    /// The limiter.
    #[arg(short = 'a', long, value_parser = crate::cli::algorithm_parser(), value_name = "ALGO", required_unless_present_any = ["limits", "preset"])]
    pub algo: Option<Algorithm>,

    #[command(flatten)]
    pub size: UnlessLimits,

    /// One layer of several limits at once, given again for each:
    /// algo=ALGO,rate=RATE[,burst=B][,cost=COLUMN|N][,key=COLUMN]. An event passes only if
    /// every layer admits it, and a refused event charges no layer. Layers may be keyed,
    /// all by one column, and weighed, all by one column (or each by a number). With
    /// --redis, each event is one atomic script call over every layer's keys. With
    /// --duration or --end, a layer may also say when it charges
    /// (charge=arrival|completion, or reserve=SUM), cost a sum (cost=prompt+completion),
    /// or cap requests in flight (algo=concurrency,max=N).
    #[arg(long = "limit", id = "limits", value_name = "SPEC")]
    #[arg(conflicts_with_all = ["algo", "rate", "burst", "delay", "nodelay", "dry_run", "cost", "key", "servers"])]
    pub limits: Vec<LayerSpec>,

    /// Each request's duration is in COLUMN: bare numbers are milliseconds, and a value may
    /// carry a unit (850ms, 1.2s). Each request completes at its time plus its duration,
    /// and --limit layers are settled then.
    #[arg(long, value_name = "COLUMN", conflicts_with_all = ["end", "emit", "validate", "algo"])]
    pub duration: Option<String>,

    /// Each request's end time is in COLUMN, written as its time is; as --duration.
    #[arg(long, value_name = "COLUMN", conflicts_with_all = ["emit", "validate", "algo"])]
    pub end: Option<String>,

    /// A provider's published limits as layers, PROVIDER:TIER:MODEL
    /// (anthropic:tier-2:claude-sonnet), as `ratelimit presets` lists them with the day
    /// they were read: requests and tokens a minute, counted as the provider counts them,
    /// from the columns prompt_tokens, max_tokens and completion_tokens. After any --limit
    /// layers.
    #[arg(long, value_name = "NAME", conflicts_with_all = ["algo", "rate", "burst", "delay", "nodelay", "dry_run", "cost", "key", "servers", "emit", "validate"])]
    pub preset: Option<String>,

    /// Simulate clients that come back when refused: `after` (after the limiter's
    /// retry-after, the longest any refusing layer asks) or `exp` (a seeded exponential
    /// backoff with full jitter), each `max` times at most:
    /// after[:max=5] | exp[:base=1s,cap=60s,max=5,seed=0]. Reports how many were served
    /// in the end, how many gave up, and the latency retrying added; labelled a
    /// simulation, as it is not what the log holds.
    #[arg(long, value_name = "RETRY", conflicts_with_all = ["algo", "rate", "emit", "validate"])]
    pub retry: Option<Retry>,

    /// With --limit layers of envoy-ratelimit: count a refused request's hits only in the
    /// limits it is over, as envoy's STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT does; without
    /// it every limit counts them.
    #[arg(long, requires = "limits")]
    pub stop_counting_over_limit: bool,

    /// Write the input rows that passed, that were dropped, or all of them with a
    /// `decision` column, in time order, to stdout; the report goes to stderr.
    #[arg(long, value_enum, value_name = "WHICH")]
    pub emit: Option<Emit>,

    /// With --emit, write the rows without the header line (CSV and TSV).
    #[arg(long, requires = "emit")]
    pub no_header: bool,

    /// Compare each decision with the one the system logged in COLUMN (nginx's
    /// $limit_req_status: PASSED, DELAYED or REJECTED), and say on stderr how many agree,
    /// with the first that do not. A log is read by its --log-format.
    #[arg(long, value_name = "COLUMN", conflicts_with = "emit")]
    pub validate: Option<String>,

    #[command(flatten)]
    pub output: OutputArgs,
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
