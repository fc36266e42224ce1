//! A replay settled after the response as the exporters see it: one CSV row a layer, and
//! its table.

use std::io::{self, Write};

use super::layered::rows_without_top;
use super::table::{labeled, percent, table};
use super::{Report, Style};
use crate::engine::live_settled::SettledCheck;
use crate::engine::settled::SettledReport;

impl Report for SettledReport {
    type Row<'a> = serde_json::Value;

    /// One row a layer: its spec, refusals and what its settlement did; with `--retry`,
    /// each row says the retries' figures are a simulation.
    fn rows(&self) -> Vec<serde_json::Value> {
        let mut rows = rows_without_top(&self.layers);
        if let Some(retry) = &self.retry {
            for row in &mut rows {
                row["simulated_retry"] = retry.retry.clone().into();
            }
        }
        rows
    }

    fn table(&self, out: &mut dyn Write, style: Style) -> io::Result<()> {
        let share = |n: u64| format!("{n}{}", percent(n, self.requests));
        let refused = share(self.refused);
        let lines = [
            ("input".to_owned(), self.input.clone()),
            (
                "layers".to_owned(),
                format!("{}, all or nothing, each charged as it says", self.layers.len()),
            ),
            ("requests".to_owned(), self.requests.to_string()),
            ("passed".to_owned(), share(self.passed)),
            ("refused".to_owned(), if self.refused > 0 { style.warn(&refused) } else { refused }),
            ("peak in flight".to_owned(), self.peak_in_flight.to_string()),
        ];
        labeled(out, &lines, style)?;
        if let Some(retry) = &self.retry {
            writeln!(out)?;
            let latency = retry.added_latency_us.map_or("-".to_owned(), |q| {
                let s = |us: u64| format!("{:.3} s", us as f64 / 1e6);
                format!("p50 {}, p90 {}, p99 {}, max {}", s(q.p50), s(q.p90), s(q.p99), s(q.max))
            });
            let lines = [
                (
                    "retry".to_owned(),
                    style.warn(&format!("{}: a simulation, not what the log holds", retry.retry)),
                ),
                ("served first".to_owned(), share(retry.served_first)),
                ("served on return".to_owned(), share(retry.served_after_retry)),
                ("gave up".to_owned(), share(retry.gave_up)),
                ("returns".to_owned(), retry.returns.to_string()),
                ("added latency".to_owned(), latency),
            ];
            labeled(out, &lines, style)?;
        }
        writeln!(out)?;
        let rows: Vec<Vec<String>> = (self.layers.iter())
            .map(|layer| {
                let spent = match (layer.most_spent, layer.limit, layer.period_s) {
                    (Some(most), Some(limit), Some(period)) => {
                        let over =
                            if layer.overshot { style.warn("OVER") } else { "within".into() };
                        format!("{most} of {limit} in {period}: {over}")
                    }
                    _ => "-".to_owned(),
                };
                vec![
                    layer.spec.clone(),
                    layer.refused.to_string(),
                    layer.reserved.to_string(),
                    layer.refunded.to_string(),
                    layer.charged_after.to_string(),
                    layer.largest_debt.to_string(),
                    spent,
                    layer.peak_in_flight.to_string(),
                ]
            })
            .collect();
        let header = [
            "layer",
            "refused",
            "reserved",
            "refunded",
            "charged after",
            "largest debt",
            "most spent",
            "peak in flight",
        ];
        table(out, &header, &rows, style)
    }
}

impl Report for SettledCheck {
    type Row<'a> = serde_json::Value;

    /// One row a layer: the key, whether it settled, and the layer's answer.
    fn rows(&self) -> Vec<serde_json::Value> {
        (self.layers.iter())
            .map(|layer| {
                serde_json::json!({
                    "key": self.key,
                    "settled": self.settled,
                    "allowed": self.allowed,
                    "spec": layer.spec,
                    "layer_allowed": layer.allowed,
                    "units": layer.units,
                })
            })
            .collect()
    }

    fn table(&self, out: &mut dyn Write, style: Style) -> io::Result<()> {
        let answer = match (self.settled, self.allowed) {
            (true, _) => style.good("settled"),
            (false, true) => style.good("allowed"),
            (false, false) => style.warn("limited"),
        };
        labeled(
            out,
            &[("key".to_owned(), self.key.clone()), ("answer".to_owned(), answer)],
            style,
        )?;
        writeln!(out)?;
        let rows: Vec<Vec<String>> = (self.layers.iter())
            .map(|l| {
                vec![
                    l.spec.clone(),
                    if l.allowed { "yes" } else { "no" }.to_owned(),
                    l.units.to_string(),
                ]
            })
            .collect();
        let moved = if self.settled { "units settled" } else { "units taken" };
        table(out, &["layer", "admits", moved], &rows, style)
    }
}
