//! `ratelimit compare`: all six limiters over the same events, in one read.

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

use anyhow::Result;

use super::{key_names, notes, write_result};
use crate::cli::args::CompareArgs;
use crate::cli::config::Styles;
use crate::engine::Backend;
use crate::limiter::Algorithm;
use crate::render::formats;
use crate::report::csv_rows;

pub(super) fn run(args: &CompareArgs, styles: &Styles) -> Result<ExitCode> {
    let input = args.input.resolve(args.keys.key.as_deref())?;
    let settings = args.limit.side_by_side(&Algorithm::ALL)?;
    let backend = Backend::new(&settings, args.remote.target()?.as_ref())?;
    let keyed = input.read.key_column.is_some();
    let (recorder, stats) = backend.replay(&settings, keyed, &input.source, &input.read)?;
    notes(&input, &stats);
    let names = key_names(input.read.key_column.as_deref(), &stats);
    let threads = input.read.threads;
    let found = recorder.reports(&input.source.name(), names, args.keys.top, threads);
    let (reports, across) = (&found.lanes, &found.across);
    let mut out = BufWriter::new(io::stdout().lock());
    let table = |w: &mut dyn Write| formats::compare_table(w, reports, across, styles.stdout);
    write_result(&mut out, args.output.format, reports, &csv_rows(reports), table)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
