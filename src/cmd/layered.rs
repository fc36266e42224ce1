//! `ratelimit replay --limit … --limit …`: several limits at once, all or nothing.

use anyhow::Result;

use super::notes;
use super::replay::{ReplayArgs, check_emit, emit_rows};
use crate::cli::args::InputArgs;
use crate::cli::config::Input;
use crate::cli::layer;
use crate::engine::Backend;
use crate::engine::layered::{Layer, LayeredRecord};
use crate::engine::limit::Limit;
use crate::engine::recorder::{KeyNames, Settings};
use crate::input::catalog::{self, ReadStats};
use crate::policy_report::{LayerReport, LayeredReport};
use crate::units::time::Span;

/// Replays the input through the layers of `args` (`--limit`, given again for each), and
/// returns their report; with `--emit`, writes the rows first.
pub(super) fn run(args: &ReplayArgs) -> Result<LayeredReport> {
    let top = args.job.keys.top;
    let stop = args.stop_counting_over_limit;
    let (layers, input) =
        layer::setup(&args.limits, &args.job.input, args.size.window, stop, "layers")?;
    let settings: Vec<Settings> = layers.iter().map(|l| l.settings).collect();
    let backend = Backend::new(&settings, args.job.remote.target()?.as_ref(), None)?;
    if let Some(column) = &args.validate {
        // Every event's all-or-nothing decision, against what the system logged.
        let (rows, stats) = catalog::read_rows(&input.source, &input.read)?;
        let decided = super::validate::decided_order(&rows, column, &input.read)?;
        let events = decided.iter().map(|d| d.event);
        let record = backend.decide_layers(&layers, (events, &input.read.empty_key))?;
        super::validate::say(&decided, &record.trace, column);
        notes(&input, &stats);
        return Ok(report(&args.limits, &input, record, &stats, top));
    }
    if args.keep_decisions {
        let (rows, stats) = catalog::read_rows(&input.source, &input.read)?;
        let events = rows.iter().map(|(event, _)| event);
        let record = backend.decide_layers(&layers, (events, &input.read.empty_key))?;
        let (trace, refusals) = (&record.trace, &record.refusals);
        crate::render::decisions::keep_layers(&rows, trace, refusals, layers.len(), &input.source);
        return Ok(report(&args.limits, &input, record, &stats, top));
    }
    let Some(emit) = args.emit else {
        return replay_to(&args.limits, &layers, &backend, &input, top);
    };
    check_emit(Some(emit), &input)?;
    let (rows, stats) = catalog::read_rows(&input.source, &input.read)?;
    let events = rows.iter().map(|(event, _)| event);
    let record = backend.decide_layers(&layers, (events, &input.read.empty_key))?;
    emit_rows(&rows, &record.trace, emit, &input.read, !args.no_header)?;
    notes(&input, &stats);
    Ok(report(&args.limits, &input, record, &stats, top))
}

/// Replays the input through the layers `specs` and returns the report, its keys ranked to
/// `top`, its busiest windows `window` long (each layer's period if `None`).
pub(super) fn replay(
    specs: &[Limit],
    input: &InputArgs,
    window: Option<Span>,
    top: usize,
) -> Result<LayeredReport> {
    let (layers, input) = layer::setup(specs, input, window, false, "layers")?;
    replay_to(specs, &layers, &Backend::Memory, &input, top)
}

/// Reads the input through the layers, deciding in `backend`, and reports.
fn replay_to(
    specs: &[Limit],
    layers: &[Layer],
    backend: &Backend,
    input: &Input,
    top: usize,
) -> Result<LayeredReport> {
    let (record, stats) = backend.replay_layers(layers, &input.source, &input.read)?;
    notes(input, &stats);
    Ok(report(specs, input, record, &stats, top))
}

/// Returns the report of a layered record, each layer's keys ranked to `top`.
pub(super) fn report(
    specs: &[Limit],
    input: &Input,
    record: LayeredRecord,
    stats: &ReadStats,
    top: usize,
) -> LayeredReport {
    let name = input.source.name();
    let threads = input.read.threads;
    let layers = specs
        .iter()
        .zip(record.layers)
        .map(|(spec, (recorder, refused, only, alone))| {
            let names = KeyNames::of(spec.key.as_deref(), stats);
            let mut reports = recorder.reports(&name, names, top, threads).lanes;
            let limiter = reports.swap_remove(0);
            LayerReport { spec: spec.to_string(), refused, only, alone, limiter }
        })
        .collect();
    LayeredReport {
        input: name,
        events: record.events,
        passed: record.passed,
        dropped: record.events - record.passed,
        layers,
    }
}
