//! The providers' presets, and how each tier did on a log, as the exporters see them: one
//! CSV row a preset or a tier, and their tables.

use std::io::{self, Write};

use serde::Serialize;

use super::table::{labeled, table};
use super::{Report, Style};
use crate::engine::settled::presets::{Listed, PresetFit};

/// Every preset, as `ratelimit presets` lists them.
#[derive(Serialize)]
#[serde(transparent)]
pub struct PresetList(pub Vec<Listed>);

/// A count, or `-` where the preset has none.
fn count(n: Option<u64>) -> String {
    n.map_or_else(|| "-".to_owned(), |n| n.to_string())
}

impl Report for PresetList {
    type Row<'a> = serde_json::Value;

    /// One row a preset, its layers joined by ` | `.
    fn rows(&self) -> Vec<serde_json::Value> {
        (self.0.iter())
            .map(|listed| {
                let mut row = serde_json::to_value(listed).unwrap_or_default();
                row["layers"] = listed.layers.join(" | ").into();
                row
            })
            .collect()
    }

    fn table(&self, out: &mut dyn Write, style: Style) -> io::Result<()> {
        let rows: Vec<Vec<String>> = (self.0.iter())
            .map(|listed| {
                let p = &listed.preset;
                vec![
                    listed.name.clone(),
                    count(p.rpm),
                    count(p.input_tpm),
                    count(p.output_tpm),
                    count(p.tpm),
                    count(p.tpd),
                    count(p.rpd),
                    p.accounting.clone(),
                    p.date.clone(),
                ]
            })
            .collect();
        let header =
            ["preset", "rpm", "input tpm", "output tpm", "tpm", "tpd", "rpd", "tokens", "read on"];
        table(out, &header, &rows, style)
    }
}

impl Report for PresetFit {
    type Row<'a> = serde_json::Value;

    /// One row a tier: its name, day, refusals, and the smallest.
    fn rows(&self) -> Vec<serde_json::Value> {
        (self.tiers.iter())
            .map(|tier| {
                serde_json::json!({
                    "input": self.input,
                    "requests": self.requests,
                    "preset": tier.name,
                    "date": tier.date,
                    "refused": tier.refused,
                    "smallest": self.smallest.as_deref() == Some(tier.name.as_str()),
                })
            })
            .collect()
    }

    fn table(&self, out: &mut dyn Write, style: Style) -> io::Result<()> {
        let smallest = match &self.smallest {
            Some(name) => style.good(name),
            None => style.warn("none of them: each refuses some request"),
        };
        let lines = [
            ("input".to_owned(), self.input.clone()),
            ("requests".to_owned(), self.requests.to_string()),
            ("smallest".to_owned(), smallest),
        ];
        labeled(out, &lines, style)?;
        writeln!(out)?;
        let rows: Vec<Vec<String>> = (self.tiers.iter())
            .map(|tier| {
                let worst = tier.layers.iter().max_by_key(|layer| layer.refused);
                let by = match worst {
                    Some(layer) if layer.refused > 0 => layer.spec.clone(),
                    _ => "-".to_owned(),
                };
                vec![tier.name.clone(), tier.date.clone(), tier.refused.to_string(), by]
            })
            .collect();
        table(out, &["preset", "read on", "refused", "refused most by"], &rows, style)
    }
}
