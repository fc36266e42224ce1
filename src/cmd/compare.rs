//! `ratelimit compare`: all six limiters over the same events, in one read.

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

use anyhow::Result;

use super::{Styles, key_names, notes, write_result};
use crate::cli::config::CompareJob;
use crate::engine::Backend;
use crate::render::formats;
use crate::report::{csv_rows, keep_top};

pub(super) fn run(job: CompareJob, styles: &Styles) -> Result<ExitCode> {
    let keyed = job.input.read.key_column.is_some();
    let backend = Backend::new(&job.settings, job.redis.as_ref())?;
    let (recorder, stats) =
        backend.replay(&job.settings, keyed, &job.input.source, &job.input.read)?;
    notes(&job.input, &stats);
    let names = key_names(job.input.read.key_column.as_deref(), &stats);
    let all = recorder.reports(&job.input.source.name(), names);
    let mut reports = all.clone();
    keep_top(&mut reports, job.top);
    let mut out = BufWriter::new(io::stdout().lock());
    let table = |w: &mut dyn Write| formats::compare_table(w, &all, job.top, styles.stdout);
    write_result(&mut out, job.format, &reports, &csv_rows(&reports), table)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
