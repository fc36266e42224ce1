//! The layers of a layered limit, each as `--limit` writes it (`algo=gcra,rate=60/m,burst=10`),
//! settled with the input they read.

use anyhow::{Result, bail};

use crate::cli::args::InputArgs;
use crate::cli::config::Input;
use crate::engine::layered::{Layer, MAX_LAYERS};
use crate::engine::limit::Limit;
pub(crate) use crate::engine::limits::Layers;
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
    crate::cli::config::check_window(window)?;
    Ok(crate::engine::limits::layers(specs, window, stop_counting, noun)?)
}
