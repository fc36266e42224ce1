//! `ratelimit replay`: one limiter over a catalog, as a report or as a filter.

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::{Args, ValueEnum};

use super::notes;
use crate::cli::args::{JobArgs, LimitArgs, OutputArgs};
use crate::cli::config::Styles;
use crate::input::catalog;
use crate::input::format::InputFormat;
use crate::limiter::Algorithm;
use crate::render::export;
use crate::render::outfile::Output;

pub(super) fn run(args: &ReplayArgs, styles: &Styles) -> Result<ExitCode> {
    let input = args.job.input()?;
    let format = input.read.format;
    let tabular = matches!(format, InputFormat::Csv | InputFormat::Tsv);
    if args.emit == Some(Emit::All) && !tabular {
        bail!(
            "--emit all adds a column, which {} has not: use --emit passed or --emit dropped",
            format.name()
        );
    }
    if args.emit.is_some() {
        // The rows go to stdout: it must not be the file they are read from.
        input.check_output(&Output::Stdout)?;
    }
    let settings = vec![args.limit.settings(args.algo)?];
    let job = args.job.job(input, settings, false)?;
    let (recorder, stats, style, mut out): (_, _, _, Box<dyn Write>) = match args.emit {
        None => {
            let (recorder, stats) = job.replay()?;
            (recorder, stats, styles.stdout, Box::new(BufWriter::new(io::stdout().lock())))
        }
        Some(emit) => {
            // Every row is read and checked, and every decision taken, before the first
            // row is written, so an error leaves no half-written output.
            let (rows, stats) = catalog::read_rows(&job.input.source, &job.input.read)?;
            let events = rows.iter().map(|(event, _)| event);
            let recorder = job.backend.decide(&job.settings, job.keyed(), events)?;
            let mut out = BufWriter::new(io::stdout().lock());
            // Rows go out as they came in: CSV and TSV with their header (and a column for
            // the decision), the others line by line, GeoJSON as JSON Lines of features.
            let (comma, passed, dropped): (&[u8], &[u8], &[u8]) = match format {
                InputFormat::Tsv => (b"\tdecision\n", b"\tpassed", b"\tdropped"),
                _ => (b",decision\n", b",passed", b",dropped"),
            };
            if tabular {
                out.write_all(rows.header())?;
                out.write_all(if emit == Emit::All { comma } else { b"\n" })?;
            }
            // One limiter: the trace holds one decision per row.
            for ((_, row), &pass) in rows.iter().zip(recorder.trace()) {
                match emit {
                    Emit::Passed if pass => writeln_bytes(&mut out, row, b"")?,
                    Emit::Dropped if !pass => writeln_bytes(&mut out, row, b"")?,
                    Emit::All => writeln_bytes(&mut out, row, if pass { passed } else { dropped })?,
                    _ => {}
                }
            }
            out.flush()?;
            (recorder, stats, styles.stderr, Box::new(io::stderr().lock()))
        }
    };
    notes(&job.input, &stats);
    let reports = job.reports(&recorder, &stats).lanes;
    export::write(&mut out, args.output.format, style, &reports[0])?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn writeln_bytes(out: &mut impl Write, row: &[u8], suffix: &[u8]) -> io::Result<()> {
    out.write_all(row)?;
    out.write_all(suffix)?;
    out.write_all(b"\n")
}

pub(super) const REPLAY_AFTER_HELP: &str = "\
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

/// `ratelimit replay`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    #[command(flatten)]
    pub job: JobArgs,

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
