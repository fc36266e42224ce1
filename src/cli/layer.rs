//! The layers of a layered limit, each as `--limit` writes it (`algo=gcra,rate=60/m,burst=10`),
//! settled with the input they read; their replay, and compare's configurations, each
//! such a limit alone, decided side by side.

use anyhow::{Result, bail};

use super::args::{InputArgs, JobArgs};
use super::config::Input;
use super::notes::say_notes;
use crate::engine::Backend;
use crate::engine::compare;
use crate::engine::layered::{Layer, MAX_LAYERS};
use crate::engine::limit::Limit;
pub(crate) use crate::engine::limits::Layers;
use crate::engine::replay::{Replayed, Run};
use crate::engine::side_by_side::SideBySide;
use crate::input::catalog::Rows;
use crate::policy_report::{LayeredReport, ReplayReport};
use crate::units::time::Span;

/// Settles the layers and the input they read: its key and cost columns the layers'.
/// `noun` is what the specs are to the user: "layers", or compare's "configurations".
pub(crate) fn setup(
    specs: &[Limit],
    input: &InputArgs,
    window: Option<Span>,
    stop_counting: bool,
    noun: &str,
) -> Result<(Vec<Layer>, Input)> {
    let Layers { layers, key, cost } = resolve(specs, window, stop_counting, noun)?;
    let mut input = input.resolve(key.as_deref().map(|k| (k, "--limit key=")))?;
    input.read.cost = cost;
    Ok((layers, input))
}

/// Settles the layers `specs`, their busiest windows `window` long (each layer's period
/// if `None`); envoy-ratelimit layers count the hits of refused events unless
/// `stop_counting` (`--stop-counting-over-limit`). `noun` is what the specs are to the
/// user: "layers", or compare's "configurations".
pub(crate) fn resolve(
    specs: &[Limit],
    window: Option<Span>,
    stop_counting: bool,
    noun: &str,
) -> Result<Layers> {
    if specs.len() > MAX_LAYERS {
        bail!("--limit is given {} times; at most {MAX_LAYERS} {noun} run at once", specs.len());
    }
    super::config::check_window(window)?;
    Ok(crate::engine::limits::layers(specs, window, stop_counting, noun)?)
}

/// Replays the input through the layers `specs` and returns the report, its keys ranked to
/// `top`, its busiest windows `window` long (each layer's period if `None`).
pub(crate) fn replay(
    specs: &[Limit],
    input: &InputArgs,
    window: Option<Span>,
    top: usize,
) -> Result<LayeredReport> {
    let (layers, input) = setup(specs, input, window, false, "layers")?;
    let run = Run {
        source: &input.source,
        read: &input.read,
        backend: &Backend::Memory,
        top,
        decisions: false,
    };
    replayed(&input, run.layers(specs, &layers)?)
}

/// Says the notes of a layered replay, and returns its report.
fn replayed(input: &Input, replayed: Replayed) -> Result<LayeredReport> {
    say_notes(input, &replayed.notes);
    match replayed.report {
        ReplayReport::Layers(report) => Ok(report),
        ReplayReport::One(_) => bail!("a layered replay reported one limit"),
    }
}

/// Settles the configurations, each a layer alone, and the input they read.
pub(crate) fn configured(specs: &[Limit], job: &JobArgs) -> Result<(Vec<Layer>, Input)> {
    setup(specs, &job.input, None, false, "configurations")
}

/// Configurations decided side by side: the result, each one's decision on every row (in
/// the rows' order), the rows, and the input they came from.
pub(crate) struct Decided {
    pub result: SideBySide,
    pub traces: Vec<Vec<bool>>,
    pub rows: Rows,
    pub keys: crate::input::catalog::KeyTable,
    pub input: Input,
}

/// Reads `input` once and has each configuration of `specs` (as `layers`) decide every
/// row on its own; with two, says what changes from the first to the second, listing the
/// `top` keys that change most (0 for all).
pub(crate) fn decide(
    specs: &[Limit],
    layers: &[Layer],
    (input, top): (Input, usize),
    job: &JobArgs,
) -> Result<Decided> {
    let remote = job.remote.target()?;
    let found =
        compare::configurations((specs, layers), &input.source, &input.read, remote.as_ref(), top)?;
    say_notes(&input, &found.notes);
    let compare::Decided { result, traces, rows, keys } = found.found;
    Ok(Decided { result, traces, rows, keys, input })
}
