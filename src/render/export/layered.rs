//! A layered replay as the exporters see it: one CSV row a layer, and its table.

use std::io::{self, Write};

use super::table::{human_ms, labeled, percent, table};
use super::{Report, Style};
use crate::policy_report::{LayerNeeds, LayeredReport};
use crate::report::{LayerCheck, LayeredCheck, LimiterReport};

impl Report for LayeredReport {
    type Row<'a> = serde_json::Value;

    /// One row a layer: its spec, refusals and limiter's figures; a keyed layer's listed
    /// keys are in the JSON.
    fn rows(&self) -> Vec<serde_json::Value> {
        rows_without_top(&self.layers)
    }

    fn table(&self, out: &mut dyn Write, style: Style) -> io::Result<()> {
        let share = |n: u64| format!("{n}{}", percent(n, self.events));
        let dropped = share(self.dropped);
        let lines = [
            ("input".to_owned(), self.input.clone()),
            ("layers".to_owned(), format!("{}, all or nothing", self.layers.len())),
            ("events".to_owned(), self.events.to_string()),
            ("passed".to_owned(), share(self.passed)),
            ("dropped".to_owned(), if self.dropped > 0 { style.warn(&dropped) } else { dropped }),
        ];
        labeled(out, &lines, style)?;
        writeln!(out)?;
        let rows: Vec<Vec<String>> = self
            .layers
            .iter()
            .map(|layer| {
                let (spec, refused, only) = (layer.spec.clone(), layer.refused, layer.only);
                let mut row =
                    vec![spec, refused.to_string(), only.to_string(), layer.alone.to_string()];
                row.extend(limiter_cells(&layer.limiter));
                row
            })
            .collect();
        let header =
            ["layer", "refused", "only", "alone", "passed", "busiest", "min bucket", "promise"];
        table(out, &header, &rows, style)
    }
}

/// One CSV row each of `items` (layers, configurations): its JSON, less its listed keys,
/// which are in the JSON only.
pub(super) fn rows_without_top<T: serde::Serialize>(items: &[T]) -> Vec<serde_json::Value> {
    let row = |item| {
        // Reports have string keys only, so they always become JSON values.
        let mut row = serde_json::to_value(item).unwrap_or_default();
        if let Some(keys) = row.get_mut("keys").and_then(|k| k.as_object_mut()) {
            keys.shift_remove("top");
        }
        row
    };
    items.iter().map(row).collect()
}

/// A limiter's cells in a table of layers or configurations: what it passed in units, its
/// busiest window, its need, and its promise.
pub(super) fn limiter_cells(r: &LimiterReport) -> [String; 4] {
    // Every count says what it counts: events, or the units a weighed limit spends.
    let (passed, unit) = match r.units {
        Some(units) => (units.passed, "units"),
        None => (u128::from(r.passed), "events"),
    };
    let window = &r.busiest_window;
    let most = window.units.unwrap_or(u128::from(window.count));
    let verdict = if r.promise.held { "held" } else { "BROKEN" };
    [
        format!("{passed} {unit}"),
        format!("{most} {unit} in {}", window.length_s),
        r.min_bucket.to_string(),
        format!("{verdict}: {}", r.promise.text),
    ]
}

impl Report for LayerNeeds {
    type Row<'a> = crate::policy_report::LayerNeed;

    fn rows(&self) -> Vec<crate::policy_report::LayerNeed> {
        self.layers.clone()
    }

    fn table(&self, out: &mut dyn Write, style: Style) -> io::Result<()> {
        let rows: Vec<Vec<String>> = self
            .layers
            .iter()
            .map(|n| {
                let fits = match n.fits {
                    Some(true) => style.good("yes"),
                    Some(false) => style.warn("no"),
                    None => "- (a window)".to_owned(),
                };
                vec![
                    n.spec.clone(),
                    n.burst.to_string(),
                    n.min_bucket.to_string(),
                    n.worst_key.clone().unwrap_or_else(|| "-".into()),
                    fits,
                ]
            })
            .collect();
        table(out, &["layer", "burst", "min bucket", "worst key", "fits"], &rows, style)?;
        if let Some(tightest) = &self.tightest {
            writeln!(out)?;
            labeled(out, &[("tightest".to_owned(), tightest.clone())], style)?;
        }
        Ok(())
    }
}

impl Report for LayeredCheck {
    type Row<'a> = LayerCheck;

    /// One row a layer: its spec and its own decision.
    fn rows(&self) -> Vec<LayerCheck> {
        self.layers.clone()
    }

    /// The answer on one line, as one limit's is, then a line a layer.
    fn table(&self, out: &mut dyn Write, style: Style) -> io::Result<()> {
        if self.allowed {
            writeln!(
                out,
                "{}: every layer admitted it, and each was charged",
                style.good("allowed")
            )?;
        } else {
            let refused = self.layers.iter().filter(|l| !l.check.allowed).count();
            let retry = human_ms(self.retry_after_s.as_micros());
            let verdict = style.warn("limited");
            writeln!(
                out,
                "{verdict}: {refused} of {} layers refused, retry in {retry}; no layer was charged",
                self.layers.len()
            )?;
        }
        writeln!(out)?;
        let rows: Vec<Vec<String>> = self
            .layers
            .iter()
            .map(|l| {
                let c = &l.check;
                let verdict = if c.allowed { style.good("admits") } else { style.warn("refuses") };
                vec![
                    l.spec.clone(),
                    c.key.clone(),
                    verdict,
                    format!("{} of {}", c.remaining, c.limit),
                    human_ms(c.retry_after_s.as_micros()),
                    human_ms(c.reset_after_s.as_micros()),
                ]
            })
            .collect();
        let header = ["layer", "key", "alone", "left", "retry in", "full again in"];
        table(out, &header, &rows, style)
    }
}
