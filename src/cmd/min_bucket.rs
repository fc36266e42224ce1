//! `ratelimit min-bucket`: the smallest lossless token bucket for each rate, or the curve.

use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;

use super::{Styles, notes, write_result};
use crate::catalog::{self, Sink};
use crate::config::MinBucketJob;
use crate::curve::Curve;
use crate::curve_svg;
use crate::min_bucket::MinBucket;
use crate::output::{self, write_whole};
use crate::report::{self, Exact};
use crate::time::{Span, Timestamp};

/// One tracker per rate, all fed in the same pass.
struct PerRate(Vec<MinBucket>);

impl Sink for PerRate {
    fn event(&mut self, time: Timestamp) {
        self.0.iter_mut().for_each(|m| m.push(time));
    }
}

pub(super) fn run(job: MinBucketJob, styles: &Styles) -> Result<ExitCode> {
    if let Some(plot) = &job.curve {
        return run_curve(&job, plot.as_deref(), styles);
    }
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

fn run_curve(job: &MinBucketJob, plot: Option<&Path>, styles: &Styles) -> Result<ExitCode> {
    let (times, stats) =
        catalog::replay(&job.input.source, &job.input.read, Vec::<Timestamp>::new)?;
    notes(&job.input, &stats);
    let curve = Curve::new(&times);
    let segments: Vec<report::CurveSegment> = curve
        .lines
        .iter()
        .enumerate()
        .map(|(m, line)| {
            let (start, end) = Curve::ends(line, &times);
            let to = curve.starts.get(m + 1).copied();
            report::CurveSegment {
                from: Exact(curve.starts[m]),
                from_per_hour: curve.starts[m].per_hour(),
                to: to.map(Exact),
                to_per_hour: to.map(|t| t.per_hour()),
                events: line.events as u64,
                span_s: Span::from_micros(line.span).expect("times are sorted"),
                start,
                end,
            }
        })
        .collect();
    if let Some(path) = plot {
        let svg = curve_svg::draw(&curve, &job.input.source.title(), times.len());
        write_whole(path, |file| file.write_all(svg.as_bytes()))?;
    }
    let mut out = BufWriter::new(io::stdout().lock());
    let table = |w: &mut dyn Write| output::curve_table(w, &segments, styles.stdout);
    write_result(&mut out, job.format, &segments, &segments, table)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
