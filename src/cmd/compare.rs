//! `ratelimit compare`: all six limiters over the same events, in one read.

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

use anyhow::Result;

use super::{Styles, notes, write_result};
use crate::catalog;
use crate::config::CompareJob;
use crate::output;
use crate::replay::Replayer;

pub(super) fn run(job: CompareJob, styles: &Styles) -> Result<ExitCode> {
    let fresh = || Replayer::new(&job.settings);
    let (replayer, stats) = catalog::replay(&job.input.source, &job.input.read, fresh)?;
    notes(&job.input, &stats);
    let reports = replayer.reports(&job.input.source.name());
    let mut out = BufWriter::new(io::stdout().lock());
    let table = |w: &mut dyn Write| output::compare_table(w, &reports, styles.stdout);
    write_result(&mut out, job.format, &reports, &reports, table)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
