//! Layers all or nothing over keys split among machines (Spark's partitions, each holding
//! whole keys), when every layer is keyed by one column: each key's events are
//! decided by its own layers alone, so a part replays its keys as the program would, and
//! says what each layer's record adds up to; each layer's report over every key is then
//! merged as one limiter's is ([`merged_keyed`]), its busiest windows from blocks of time.

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::blocks::{BlockRows, Blocks, lines_of_blocks};
use super::job::{Job, Part};
use super::keyed::{KeyedPart, merged_keyed};
use super::told::{self, Told};
use crate::backend::Backend;
use crate::input::catalog::{self, Source};
use crate::layered::Layer;
use crate::limit::Limit;
use crate::limits::{Layers, LimitPolicy};
use crate::recorder::KeyNames;

/// A layered replay in parts: its limits, their layers, the one column that keys them all,
/// and how many keys each layer's report ranks.
pub struct LayeredPlan {
    limits: Vec<Limit>,
    layers: Vec<Layer>,
    column: String,
    top: usize,
}

/// [`layers_key`](super::layers_key), its errors the internals'.
pub(super) fn layers_key(job: &Job) -> Result<Option<String>> {
    Ok(layered(job)?.and_then(|(_, Layers { layers, key, .. })| key.filter(|_| by_key(&layers))))
}

/// Settles the layers of `job`, if it has layers: the limits and the layers.
fn layered(job: &Job) -> Result<Option<(&[Limit], Layers)>> {
    let LimitPolicy::AllOrNothing(limits) = &job.policy else { return Ok(None) };
    let layers = crate::limits::layers(limits, job.window, job.stop_counting, "layers")?;
    Ok(Some((limits, layers)))
}

/// Whether `layers` decide each key's events alone: every one keyed, none by a zone.
fn by_key(layers: &[Layer]) -> bool {
    layers.iter().all(|l| l.keyed && !l.settings.algorithm.has_zone())
}

impl LayeredPlan {
    /// Settles the layers of `job`, if it has layers; `None` for one limit. Every layer
    /// must be keyed, by one column.
    pub fn of(job: &Job) -> Result<Option<LayeredPlan>> {
        let Some((limits, Layers { layers, key, .. })) = layered(job)? else { return Ok(None) };
        let Some(column) = key.filter(|_| by_key(&layers)) else {
            bail!(
                "layers in parts hold whole keys: every layer keyed by one column (key=), none nginx's"
            );
        };
        Ok(Some(LayeredPlan { limits: limits.to_vec(), layers, column, top: job.top }))
    }

    /// Replays the rows of `given`, which hold whole keys, read as `job` asks, and returns
    /// what they tell: the counts, and each layer's report and what its keys add up to.
    pub fn part(&self, job: &Job, given: &Source) -> Result<Part> {
        let read = job.read(given)?;
        let (rows, stats) = catalog::read_rows(given, &read)?;
        let events = rows.iter().map(|(event, _)| event);
        let record = Backend::Memory.decide_layers(&self.layers, (events, &stats.keys))?;
        let (name, threads) = (given.name(), read.threads);
        let names = KeyNames::of(Some(&self.column), &stats);
        let layers = (record.layers.iter())
            .map(|(recorder, refused, only, alone)| {
                let reports = recorder.reports(&name, names, self.top, threads);
                let spread = reports.spread.unwrap_or_default();
                let keyed = KeyedPart::of(&reports.lanes[0], &spread)?;
                Ok(LayerPart { refused: *refused, only: *only, alone: *alone, keyed })
            })
            .collect::<Result<Vec<_>>>()?;
        let part = LayeredPart { events: record.events, passed: record.passed, layers };
        Ok(Part::of(told::write(&part)?, &rows, &record.trace, given))
    }

    /// Returns each layer's lines for the blocks in `rows`: the busiest windows of its own
    /// length, of the events as it weighs them.
    pub fn block_lines(&self, rows: &BlockRows) -> Result<Vec<String>> {
        let mut lines = Vec::new();
        for (n, layer) in self.layers.iter().enumerate() {
            let costs: Vec<u64> = rows.costs.iter().map(|&c| layer.cost.unwrap_or(c)).collect();
            let weighed = BlockRows { costs: &costs, ..*rows };
            let (window, capacity) = (layer.settings.window, layer.settings.capacity());
            lines.extend(lines_of_blocks(&weighed, window, capacity, None, Some(n))?);
        }
        Ok(lines)
    }

    /// Merges every part's summary and every block's line into what `ratelimit replay
    /// --limit … --format json` prints for all the rows, as a JSON object.
    pub fn merge(&self, parts: &[String], blocks: &[String]) -> Result<Vec<u8>> {
        let parts: Vec<LayeredPart> = told::read_all(parts)?;
        let sum = |of: &dyn Fn(&LayeredPart) -> u64| parts.iter().map(of).sum::<u64>();
        let (events, passed) = (sum(&|p| p.events), sum(&|p| p.passed));
        let shown = (self.column.as_str(), self.top);
        let mut layers = Vec::with_capacity(self.layers.len());
        for (n, (layer, spec)) in self.layers.iter().zip(&self.limits).enumerate() {
            let own = (parts.iter())
                .map(|part| part.layers.get(n).context("a part's layers are fewer than the job's"))
                .collect::<Result<Vec<&LayerPart>>>()?;
            let keyed: Vec<&KeyedPart> = own.iter().map(|layer| &layer.keyed).collect();
            let merged = Blocks::of_lines(blocks, Some(n))?;
            let limiter = merged_keyed(layer.settings, shown, &keyed, &merged)?;
            let count = |of: &dyn Fn(&LayerPart) -> u64| own.iter().map(|l| of(l)).sum::<u64>();
            let mut report = json!({
                "spec": spec.to_string(),
                "refused": count(&|l| l.refused),
                "only": count(&|l| l.only),
                "alone": count(&|l| l.alone),
            });
            if let (Some(report), Value::Object(limiter)) = (report.as_object_mut(), limiter) {
                report.extend(limiter);
            }
            layers.push(report);
        }
        let whole = json!({
            "input": "<DataFrame>",
            "events": events,
            "passed": passed,
            "dropped": events.saturating_sub(passed),
            "layers": layers,
        });
        Ok(serde_json::to_vec(&whole)?)
    }
}

/// What a part of the keys tells of layers all or nothing: its counts, and each layer's.
#[derive(Debug, Serialize, Deserialize)]
struct LayeredPart {
    events: u64,
    passed: u64,
    layers: Vec<LayerPart>,
}

impl Told for LayeredPart {
    const KIND: &'static str = "layered";
}

/// What a part tells of one layer: the events it refused, those it alone refused, those
/// it would have refused alone, and what its keys tell.
#[derive(Debug, Serialize, Deserialize)]
struct LayerPart {
    refused: u64,
    only: u64,
    alone: u64,
    keyed: KeyedPart,
}
