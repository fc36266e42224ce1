//! `replay --limit … --limit …` over keys split among machines (Spark's partitions, each
//! holding whole keys), when every layer is keyed by one column: each key's events are
//! decided by its own layers alone, so a part replays its keys as the program would, and
//! says what each layer's record adds up to; each layer's report over every key is then
//! merged as one limiter's is ([`merged_keyed`]), its busiest windows from blocks of time.

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use super::blocks::{BlockRows, lines_of_blocks};
use super::parse;
use super::parts_plan::Part;
use super::replay_parts::{encode, merged_keyed};
use crate::cli::layer::{self, Layers};
use crate::cmd::Cli;
use crate::cmd::replay::ReplayArgs;
use crate::engine::Backend;
use crate::engine::layered::Layer;
use crate::engine::recorder::KeyNames;
use crate::input::catalog::{self, Source};

/// A layered replay in parts, settled from `ratelimit replay`'s flags: its layers, the
/// one column that keys them all, and the flags.
pub struct LayeredPlan {
    layers: Vec<Layer>,
    column: String,
    replay: ReplayArgs,
}

/// Returns the one column that keys every layer `args` (`ratelimit replay`'s flags) give,
/// if every layer is keyed by it and none shares a zone (nginx's): then each key's events
/// are decided by its own layers alone, and a replay may run by key. `None` otherwise, and
/// for one limit.
pub fn layers_key(args: &[String]) -> Result<Option<String>> {
    Ok(layered(args)?.and_then(|(_, Layers { layers, key, .. })| key.filter(|_| by_key(&layers))))
}

/// Settles `args` if they give layers (`--limit`): the flags and the layers.
fn layered(args: &[String]) -> Result<Option<(ReplayArgs, Layers)>> {
    let cli: Cli = parse(args)?;
    let crate::cmd::Command::Replay(replay) = cli.command else { bail!("parts are replay's") };
    if replay.limits.is_empty() {
        return Ok(None);
    }
    let stop = replay.stop_counting_over_limit;
    let layers = layer::resolve(&replay.limits, replay.size.window, stop, "layers")?;
    Ok(Some((replay, layers)))
}

/// Whether `layers` decide each key's events alone: every one keyed, none by a zone.
fn by_key(layers: &[Layer]) -> bool {
    layers.iter().all(|l| l.keyed && !l.settings.algorithm.has_zone())
}

impl LayeredPlan {
    /// Settles `args` if they give layers (`--limit`); `None` for one limit. Every layer
    /// must be keyed, by one column.
    pub fn of(args: &[String]) -> Result<Option<LayeredPlan>> {
        let Some((replay, Layers { layers, key, .. })) = layered(args)? else { return Ok(None) };
        let Some(column) = key.filter(|_| by_key(&layers)) else {
            bail!(
                "layers in parts hold whole keys: every layer keyed by one column (key=), none nginx's"
            );
        };
        Ok(Some(LayeredPlan { layers, column, replay }))
    }

    /// Replays the rows of `given`, which hold whole keys, and returns what they tell:
    /// the counts, and each layer's report and what its keys add up to.
    pub fn part(mut self, given: Source) -> Result<Part> {
        self.replay.job.input.given = Some(given);
        let stop = self.replay.stop_counting_over_limit;
        let window = self.replay.size.window;
        let (layers, input) =
            layer::setup(&self.replay.limits, &self.replay.job.input, window, stop, "layers")?;
        let (rows, stats) = catalog::read_rows(&input.source, &input.read)?;
        let events = rows.iter().map(|(event, _)| event);
        let record = Backend::Memory.decide_layers(&layers, (events, &input.read.empty_key))?;
        let (name, threads) = (input.source.name(), input.read.threads);
        let names = KeyNames::of(Some(&self.column), &stats);
        let each = (record.layers.iter().zip(&self.replay.limits))
            .map(|((recorder, refused, only, alone), spec)| {
                let reports = recorder.reports(&name, names, self.replay.job.keys.top, threads);
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
        let window = layers.iter().map(|l| l.settings.window.as_micros()).max().unwrap_or(0);
        let summary = json!({
            "events": record.events,
            "passed": record.passed,
            "layers": each,
            "window_us": window,
        });
        Ok(Part::of(summary.to_string(), &rows, &record.trace, &input.source))
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
        let shown = (self.column.as_str(), self.replay.job.keys.top);
        let mut layers = Vec::with_capacity(self.layers.len());
        for (n, (layer, spec)) in self.layers.iter().zip(&self.replay.limits).enumerate() {
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
