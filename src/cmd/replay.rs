//! `ratelimit replay`: one limiter over a catalog, as a report or as a filter.

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::{Args, ValueEnum};

use super::notes;
use crate::cli::args::{JobArgs, OutputArgs, UnlessLimits};
use crate::cli::config::{Input, Styles};
use crate::cli::diagnostics::diagnostics;
use crate::cli::job::Job;
use crate::engine::Backend;
use crate::engine::limit::Limit;
use crate::input::catalog::{self, Event, ReadOptions, Rows};
use crate::input::format::InputFormat;
use crate::limiter::{Algorithm, NginxBurst};
use crate::policy_report::ReplayReport;
use crate::render::export;
use crate::render::outfile::Output;
use crate::render::outfile::stdout;
use crate::report::LimiterReport;
use crate::units::rate::Rate;
use crate::units::time::{MICROS_PER_SEC, Timestamp};

/// Writes what a replay found, one limit's report or the layers', as `args` ask: to
/// stdout, or with `--emit` (the rows went there) to stderr.
pub(crate) fn write(report: &ReplayReport, args: &ReplayArgs, styles: &Styles) -> Result<ExitCode> {
    let (mut out, style): (Box<dyn Write>, _) = match args.emit {
        None => (Box::new(BufWriter::new(stdout())), styles.stdout),
        Some(_) => (diagnostics(), styles.stderr),
    };
    export::write(&mut out, args.output.format, style, report)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Replays the input through one limit, as `args` say, and returns its report.
pub(crate) fn one_limit(args: &ReplayArgs) -> Result<LimiterReport> {
    let input = args.job.input()?;
    check_emit(args.emit, &input)?;
    let (Some(algorithm), Some(limit)) = (args.algo, args.size.limit()) else {
        bail!("replay needs --algo and --rate, or --limit")
    };
    let settings = vec![limit.size.settings(algorithm, limit.window, true)?];
    let job = args.job.job(input, settings, false)?;
    let (recorder, stats) = match args.emit {
        None if args.validate.is_some() => {
            let column = args.validate.as_deref().unwrap_or_default();
            let (rows, stats) = catalog::read_rows(&job.input.source, &job.input.read)?;
            // Decided in the order nginx decided them, as its log tells.
            let decided = super::validate::decided_order(&rows, column, &job.input.read)?;
            let events = decided.iter().map(|d| d.event);
            let empty = &job.input.read.empty_key;
            let recorder = job.backend.decide(&job.settings, job.keyed(), (events, empty))?;
            super::validate::say(&decided, recorder.trace(), column);
            (recorder, stats)
        }
        None if args.keep_decisions => {
            match job.replay_traced(true)? {
                // Every row made an event, taken in the rows' order: one decision a row.
                (recorder, stats) if !stats.sorted && stats.events == stats.rows => {
                    crate::render::decisions::keep_in_order(recorder.trace());
                    (recorder, stats)
                }
                // Else read again, keeping where each event's row is.
                _ => {
                    let (rows, recorder, stats) = job.replay_rows()?;
                    crate::render::decisions::keep(&rows, recorder.trace(), &job.input.source);
                    (recorder, stats)
                }
            }
        }
        None => job.replay()?,
        Some(emit) => {
            // Every row is read and checked, and every decision taken, before the first
            // row is written, so an error leaves no half-written output.
            let (rows, recorder, stats) = job.replay_rows()?;
            // One limiter: the trace holds one decision per row.
            emit_rows(&rows, recorder.trace(), emit, &job.input.read, !args.no_header)?;
            (recorder, stats)
        }
    };
    notes(&job.input, &stats);
    let mut reports = job.reports(&recorder, &stats).lanes;
    // What one more read of the input tells, if it can be read again: nginx's own burst,
    // and what whole-second ties can matter.
    let nginx =
        (algorithm == Algorithm::Nginx && args.validate.is_none()).then_some(limit.size.rate);
    let memory = matches!(job.backend, Backend::Memory);
    let tied = !stats.fractions && stats.instants.shared() > 0 && memory;
    let spread = tied && args.emit.is_none() && args.validate.is_none();
    if let Some(again) = read_again(&job, nginx, spread)? {
        reports[0].nginx_burst = again.nginx.map(|need| need.result().0);
        if let Some(events) = again.events {
            let note = spread_note(&job, &events, reports[0].dropped)?;
            let _ = writeln!(diagnostics(), "ratelimit: note: {note}");
        }
    }
    Ok(reports.swap_remove(0))
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
    // A table handed over has no text to write: its caller reads each row's decision.
    #[cfg(feature = "arrow")]
    if emit.is_some() && matches!(input.source, crate::input::catalog::Source::Arrow(_)) {
        bail!("--emit writes rows as text, which Arrow data has not: read each row's decision");
    }
    Ok(())
}

/// What a second read of the input keeps: nginx's own need at a rate, and the events
/// themselves, to be replayed with their whole-second ties spread.
struct Again {
    nginx: Option<NginxBurst>,
    events: Option<Vec<Event>>,
    /// With keys, the empty key, which nginx does not account.
    empty: Option<catalog::EmptyKey>,
}

impl catalog::Sink for Again {
    type Error = anyhow::Error;

    fn event(&mut self, event: Event) -> Result<()> {
        if let Some(need) = &mut self.nginx
            && !self.empty.as_ref().is_some_and(|empty| empty.is(event.key))
        {
            need.push(event);
        }
        if let Some(events) = &mut self.events {
            events.push(event);
        }
        Ok(())
    }
}

/// Reads the job's input once more, if it can be read again and something is asked of
/// it: nginx's own lossless `burst=` at `nginx`'s rate (per key if keyed, in the order the
/// zone sees them), and the events kept if `spread`. `None` if nothing is asked, or the
/// input cannot be read again.
fn read_again(job: &Job, nginx: Option<Rate>, spread: bool) -> Result<Option<Again>> {
    if (nginx.is_none() && !spread) || !job.input.source.can_read_again() {
        return Ok(None);
    }
    let empty = job.keyed().then(|| job.input.read.empty_key.clone());
    // nginx's own zone, as the replay ran it.
    let zone = match job.settings[0].params {
        crate::limiter::Params::Nginx(params) => params.zone,
        _ => Default::default(),
    };
    let fresh = || Again {
        nginx: nginx.map(|rate| NginxBurst::in_zone(rate, zone)),
        events: spread.then(Vec::new),
        empty: empty.clone(),
    };
    let (again, _) = catalog::read_events(&job.input.source, &job.input.read, fresh)?;
    Ok(Some(again))
}

/// What whole-second ties can matter: `events` replayed again with each tied second's
/// events spread evenly across it in the order they came, and that replay's drops beside
/// `dropped`, the drops as logged.
fn spread_note(job: &Job, events: &[Event], dropped: u64) -> Result<String> {
    let mut spread = Vec::with_capacity(events.len());
    for tied in events.chunk_by(|a, b| a.time == b.time) {
        let n = i64::try_from(tied.len()).unwrap_or(i64::MAX);
        for (i, event) in (0..).zip(tied) {
            // i < n: within the second, so the time stays in range.
            let at = event.time.as_micros() + i * MICROS_PER_SEC / n;
            spread.push(Event { time: Timestamp::from_micros(at).unwrap_or(event.time), ..*event });
        }
    }
    let empty = &job.input.read.empty_key;
    let recorder = job.backend.decide(&job.settings, job.keyed(), (spread, empty))?;
    let spread_dropped = recorder.trace().iter().filter(|&&passed| !passed).count();
    Ok(format!(
        "with each second's tied events spread evenly across it, in the order they came, the \
         limit drops {spread_dropped}, against {dropped} as logged"
    ))
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
    #[arg(short = 'a', long, value_parser = crate::cli::algorithm_parser(), value_name = "ALGO", required_unless_present = "limits")]
    pub algo: Option<Algorithm>,

    #[command(flatten)]
    pub size: UnlessLimits,

    /// One layer of several limits at once, given again for each:
    /// algo=ALGO,rate=RATE[,burst=B][,cost=COLUMN|N][,key=COLUMN]. An event passes only if
    /// every layer admits it, and a refused event charges no layer. Layers may be keyed,
    /// all by one column, and weighed, all by one column (or each by a number). With
    /// --redis, each event is one atomic script call over every layer's keys.
    #[arg(long = "limit", id = "limits", value_name = "SPEC")]
    #[arg(conflicts_with_all = ["algo", "rate", "burst", "delay", "nodelay", "dry_run", "cost", "key", "servers"])]
    pub limits: Vec<Limit>,

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

    /// Keep each row's decision for the program that runs the command ([`crate::embed`]).
    #[arg(skip)]
    pub keep_decisions: bool,
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
