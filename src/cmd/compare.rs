//! `ratelimit compare`: limiters side by side over the same events, in one read; on a
//! fleet, the ways of sharing a limit side by side too.

use std::io::{BufWriter, Write};
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use super::notes;
use crate::cli::args::{JobArgs, LimitArgs, OutputArgs};
use crate::cli::config::Styles;
use crate::limiter::Algorithm;
use crate::render::export::{self, Compared};
use crate::render::outfile::stdout;

pub(super) fn run(args: &CompareArgs, styles: &Styles) -> Result<ExitCode> {
    let input = args.job.input()?;
    let mut algorithms: Vec<Algorithm> = Vec::new();
    for &algorithm in &args.algo {
        if !algorithms.contains(&algorithm) {
            algorithms.push(algorithm);
        }
    }
    if algorithms.is_empty() {
        algorithms = Algorithm::ALL.into_iter().filter(|a| !a.is_system()).collect();
    }
    // One limiter on a fleet, with no mode chosen: the modes side by side.
    let settings = args.limit.side_by_side(&algorithms)?;
    let job = args.job.job(input, settings, true)?;
    let (recorder, stats) = job.replay()?;
    notes(&job.input, &stats);
    let found = job.reports(&recorder, &stats);
    let (reports, across) = (&found.lanes, &found.across);
    let mut out = BufWriter::new(stdout());
    let compared = Compared { lanes: reports, across };
    export::write(&mut out, args.output.format, styles.stdout, &compared)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `ratelimit compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    #[command(flatten)]
    pub job: JobArgs,

    /// The limiters to compare [default: all six]; repeat it, or separate names with
    /// commas. With --servers and one limiter but no --share, the share modes are
    /// compared instead: local, split, and synced at each --sync (default 1m).
    #[arg(short = 'a', long, value_parser = crate::cli::algorithm_parser(), value_name = "ALGO", value_delimiter = ',')]
    pub algo: Vec<Algorithm>,

    #[command(flatten)]
    pub limit: LimitArgs,

    #[command(flatten)]
    pub output: OutputArgs,
}
