//! `ratelimit min-bucket`: the smallest lossless token bucket for each rate.

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

use anyhow::Result;

use super::{Styles, notes, write_result};
use crate::catalog::{self, Sink};
use crate::config::MinBucketJob;
use crate::min_bucket::MinBucket;
use crate::output;
use crate::report;
use crate::time::Timestamp;

/// One tracker per rate, all fed in the same pass.
struct PerRate(Vec<MinBucket>);

impl Sink for PerRate {
    fn event(&mut self, time: Timestamp) {
        self.0.iter_mut().for_each(|m| m.push(time));
    }
}

pub(super) fn run(job: MinBucketJob, styles: &Styles) -> Result<ExitCode> {
    let fresh = || PerRate(job.rates.iter().map(|&r| MinBucket::new(r)).collect());
    let (found, stats) = catalog::replay(&job.input.source, &job.input.read, fresh)?;
    notes(&job.input, &stats);
    let found: Vec<report::MinBucket> = found.0.iter().map(|m| m.result().into()).collect();
    let mut out = BufWriter::new(io::stdout().lock());
    let table = |w: &mut dyn Write| output::min_bucket_table(w, &found, styles.stdout);
    write_result(&mut out, job.format, &found, &found, table)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
