//! `ratelimit compare`: all six limiters over the same events, in one read.

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

use anyhow::Result;

use super::{Engines, Styles, key_names, notes, write_result};
use crate::cli::config::CompareJob;
use crate::render::formats;
use crate::report::{csv_rows, keep_top};

pub(super) fn run(job: CompareJob, styles: &Styles) -> Result<ExitCode> {
    let keyed = job.input.read.key_column.is_some();
    let engines = Engines::new(&job.settings, keyed, job.redis.as_ref())?;
    let (replayer, stats) = engines.replay(&job.input)?;
    notes(&job.input, &stats);
    let names = key_names(job.input.read.key_column.as_deref(), &stats);
    let all = replayer.reports(&job.input.source.name(), names);
    let mut reports = all.clone();
    keep_top(&mut reports, job.top);
    let mut out = BufWriter::new(io::stdout().lock());
    let table = |w: &mut dyn Write| formats::compare_table(w, &all, job.top, styles.stdout);
    write_result(&mut out, job.format, &reports, &csv_rows(&reports), table)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
