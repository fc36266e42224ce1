//! `ratelimit compare`: limiters side by side over the same events, in one read; on a
//! fleet, the ways of sharing a limit side by side too.

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
    let key = args.keys.key.as_deref();
    let mut input = args.input.resolve(args.fleet.key_column(key))?;
    let mut algorithms: Vec<Algorithm> = Vec::new();
    for &algorithm in &args.algo {
        if !algorithms.contains(&algorithm) {
            algorithms.push(algorithm);
        }
    }
    if algorithms.is_empty() {
        algorithms = Algorithm::ALL.to_vec();
    }
    // One limiter on a fleet, with no mode chosen: the modes side by side.
    let (settings, fleet) = if let [one] = algorithms[..]
        && args.fleet.servers.is_some()
        && args.fleet.share.is_none()
    {
        let fleet = args.fleet.every_share(key)?;
        let lanes = fleet.as_ref().map_or(1, |f| f.shares.len());
        (vec![args.limit.side_by_side(&[one])?[0]; lanes], fleet)
    } else {
        let settings = args.limit.side_by_side(&algorithms)?;
        let fleet = args.fleet.one_share(key, settings.len())?;
        (settings, fleet)
    };
    let backend = Backend::new(&settings, args.remote.target()?.as_ref(), fleet)?;
    let keyed = key.is_some();
    if !keyed && input.read.key_column.is_some() {
        input.read.key_flag = "--route";
    }
    let (recorder, stats) = backend.replay(&settings, keyed, &input.source, &input.read)?;
    notes(&input, &stats);
    let names = key_names(key, &stats);
    let threads = input.read.threads;
    let found = recorder.reports(&input.source.name(), names, args.keys.top, threads);
    let (reports, across) = (&found.lanes, &found.across);
    let mut out = BufWriter::new(io::stdout().lock());
    let table = |w: &mut dyn Write| formats::compare_table(w, reports, across, styles.stdout);
    write_result(&mut out, args.output.format, reports, &csv_rows(reports), table)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
