//! `ratelimit replay --limit … --limit …`: several limits at once, all or nothing.

use anyhow::Result;

use super::{ReplayArgs, check_emit, emit_rows};
use crate::cli::layer;
use crate::cli::notes::notes;
use crate::engine::Backend;
use crate::engine::recorder::Settings;
use crate::engine::replay::Run;
use crate::input::catalog;
use crate::policy_report::LayeredReport;

/// Replays the input through the layers of `args` (`--limit`, given again for each), and
/// returns their report; with `--emit`, writes the rows first.
pub(crate) fn run(args: &ReplayArgs) -> Result<LayeredReport> {
    let top = args.job.keys.top;
    let stop = args.stop_counting_over_limit;
    let (layers, input) =
        layer::setup(&args.limits, &args.job.input, args.size.window, stop, "layers")?;
    check_emit(args.emit, &input)?;
    let settings: Vec<Settings> = layers.iter().map(|l| l.settings).collect();
    let backend = Backend::new(&settings, args.job.remote.target()?.as_ref(), None)?;
    let run = Run {
        source: &input.source,
        read: &input.read,
        backend: &backend,
        top,
        decisions: args.keep_decisions,
    };
    let (rows, stats) = match (&args.validate, args.emit) {
        (None, None) => return layer::replayed(&input, run.layers(&args.limits, &layers)?),
        _ => catalog::read_rows(&input.source, &input.read)?,
    };
    let record = match (&args.validate, args.emit) {
        (Some(column), _) => {
            // Every event's all-or-nothing decision, against what the system logged.
            let decided = super::validate::decided_order(&rows, column, &input.read)?;
            let events = decided.iter().map(|d| d.event);
            let record = backend.decide_layers(&layers, (events, &input.read.empty_key))?;
            super::validate::say(&decided, &record.trace, column);
            record
        }
        (None, emit) => {
            let events = rows.iter().map(|(event, _)| event);
            let record = backend.decide_layers(&layers, (events, &input.read.empty_key))?;
            if let Some(emit) = emit {
                emit_rows(&rows, &record.trace, emit, &input.read, !args.no_header)?;
            }
            record
        }
    };
    notes(&input, &stats);
    Ok(run.layered_report(&args.limits, record, &stats))
}
