//! Layers all or nothing over keys split among machines (Spark's partitions, each holding
//! whole keys), when every layer is keyed by one column: each key's events are
//! decided by its own layers alone, so a part replays its keys as the program would, and
//! says what each layer's record adds up to; each layer's report over every key is then
//! merged as one limiter's is ([`merged_keyed`]), its busiest windows from blocks of time.

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use super::blocks::{BlockRows, lines_of_blocks};
use super::job::{Job, Part};
use super::keyed::{encode, merged_keyed};
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
        let record = Backend::Memory.decide_layers(&self.layers, (events, &read.empty_key))?;
        let (name, threads) = (given.name(), read.threads);
        let names = KeyNames::of(Some(&self.column), &stats);
        let each = (record.layers.iter().zip(&self.limits))
            .map(|((recorder, refused, only, alone), spec)| {
                let reports = recorder.reports(&name, names, self.top, threads);
                Ok(json!({
                    "spec": spec.to_string(),
                    "refused": refused,
                    "only": only,
                    "alone": alone,
                    "report": serde_json::to_value(&reports.lanes[0])?,
                    "spread": encode(&reports.spread.unwrap_or_default()),
                }))
            })
            .collect::<Result<Vec<Value>>>()?;
        let window = self.layers.iter().map(|l| l.settings.window.as_micros()).max().unwrap_or(0);
        let summary = json!({
            "events": record.events,
            "passed": record.passed,
            "layers": each,
            "window_us": window,
        });
        Ok(Part::of(summary.to_string(), &rows, &record.trace, given))
    }

    /// Returns each layer's lines for the blocks in `rows`, each line led by its layer's
    /// number: the busiest windows of its own length, of the events as it weighs them.
    pub fn block_lines(&self, rows: &BlockRows) -> Result<Vec<String>> {
        let mut lines = Vec::new();
        for (n, layer) in self.layers.iter().enumerate() {
            let costs: Vec<u64> = rows.costs.iter().map(|&c| layer.cost.unwrap_or(c)).collect();
            let weighed = BlockRows { costs: &costs, ..*rows };
            let (window, capacity) = (layer.settings.window, layer.settings.capacity());
            for line in lines_of_blocks(&weighed, window, capacity, None)? {
                lines.push(format!("{n} {line}"));
            }
        }
        Ok(lines)
    }

    /// Merges every part's summary and every block's line into what `ratelimit replay
    /// --limit … --format json` prints for all the rows, as a JSON object.
    pub fn merge(&self, parts: &[String], blocks: &[String]) -> Result<Vec<u8>> {
        let parts: Vec<Value> = (parts.iter())
            .map(|part| serde_json::from_str(part).context("a part's summary is not JSON"))
            .collect::<Result<_>>()?;
        let sum = |of: &dyn Fn(&Value) -> &Value| {
            parts.iter().map(|part| of(part).as_u64().unwrap_or(0)).sum::<u64>()
        };
        let (events, passed) = (sum(&|p| &p["events"]), sum(&|p| &p["passed"]));
        let shown = (self.column.as_str(), self.top);
        let mut layers = Vec::with_capacity(self.layers.len());
        for (n, (layer, spec)) in self.layers.iter().zip(&self.limits).enumerate() {
            let own: Vec<&Value> = parts.iter().map(|part| &part["layers"][n]).collect();
            let prefix = format!("{n} ");
            let lines: Vec<String> = (blocks.iter())
                .filter_map(|line| line.strip_prefix(&prefix).map(str::to_owned))
                .collect();
            let limiter = merged_keyed(layer.settings, shown, &own, &lines)?;
            let count = |name: &str| own.iter().map(|l| l[name].as_u64().unwrap_or(0)).sum::<u64>();
            let mut report = json!({
                "spec": spec.to_string(),
                "refused": count("refused"),
                "only": count("only"),
                "alone": count("alone"),
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
