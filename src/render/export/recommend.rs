//! `recommend`'s answer as the exporters see it: a CSV row a rate of the frontier, and a
//! table that puts the recommended point first.

use std::io::{self, Write};

use serde::Serialize;

use super::table::table;
use super::{Report, Style};
use crate::engine::recommend::{Point, Recommendation};
use crate::units::rate::Rate;

/// One rate of the frontier, as a CSV row: whether it is the one recommended.
#[derive(Serialize)]
pub struct FrontierRow {
    rate: Rate,
    per_hour: f64,
    burst: u64,
    untouched_keys: usize,
    untouched_events: u64,
    touched_keys: usize,
    refused: u64,
    recommended: bool,
}

impl Report for Recommendation {
    type Row<'a> = FrontierRow;

    fn rows(&self) -> Vec<FrontierRow> {
        (self.frontier.iter())
            .map(|p| FrontierRow {
                rate: p.rate,
                per_hour: p.per_hour,
                burst: p.burst,
                untouched_keys: p.untouched_keys,
                untouched_events: p.untouched_events,
                touched_keys: p.touched_keys,
                refused: p.refused,
                recommended: *p == self.recommended.point,
            })
            .collect()
    }

    fn table(&self, out: &mut dyn Write, style: Style) -> io::Result<()> {
        let best = &self.recommended;
        writeln!(
            out,
            "{} {}, burst {}: {} of {} keys by `{}` untouched ({} asked)",
            style.dim("recommended"),
            style.good(&best.point.rate.to_string()),
            style.good(&best.point.burst.to_string()),
            best.point.untouched_keys,
            self.keys,
            self.column,
            self.untouched
        )?;
        writeln!(out, "why: {}", best.why)?;
        refused_most(out, &best.point, style)?;
        if let Some(system) = &self.system {
            writeln!(
                out,
                "\n{}: {}={} leaves {} of {} keys untouched",
                system.system, system.setting, system.value, system.untouched_keys, self.keys
            )?;
            write!(out, "{}", system.config)?;
        }
        writeln!(out, "\nthe frontier, {} rates ({}):", self.frontier.len(), self.rates)?;
        frontier(out, &self.frontier, &best.point, style)?;
        if let Some(w) = &self.window {
            let q = &w.busiest;
            writeln!(
                out,
                "\nbusiest {} by key: p50 {}, p90 {}, p99 {}, p99.9 {}, max {}; a limit of {} \
                 per {} leaves {} of {} keys untouched",
                w.window,
                q.p50,
                q.p90,
                q.p99,
                q.p99_9,
                q.max,
                w.limit,
                w.window,
                w.untouched_keys,
                self.keys
            )?;
        }
        if let Some(cost) = &self.cost {
            let (c, t) = (&cost.recommended.point, &cost.together);
            writeln!(
                out,
                "\nunits ({}): recommended {}, burst {}: {} of {} keys untouched",
                cost.cost, c.rate, c.burst, c.untouched_keys, self.keys
            )?;
            frontier(out, &cost.frontier, c, style)?;
            writeln!(
                out,
                "\ntogether: requests {}, burst {}, and units {}, burst {}: {} of {} keys \
                 untouched by both; {} events refused",
                t.requests.rate,
                t.requests.burst,
                t.units.rate,
                t.units.burst,
                t.untouched_keys,
                self.keys,
                t.refused
            )?;
        }
        Ok(())
    }
}

/// The keys a point refuses most.
fn refused_most(out: &mut dyn Write, point: &Point, style: Style) -> io::Result<()> {
    if point.top_refused.is_empty() {
        return Ok(());
    }
    writeln!(out, "\nkeys it touches, the most refused first ({} in all):", point.touched_keys)?;
    let rows: Vec<Vec<String>> = (point.top_refused.iter())
        .map(|k| {
            let figures = [k.events, k.refused, k.min_bucket].map(|n| n.to_string());
            [k.key.clone()].into_iter().chain(figures).collect()
        })
        .collect();
    table(out, &["key", "events", "refused", "min bucket"], &rows, style)
}

/// The frontier's table, the recommended point marked.
fn frontier(out: &mut dyn Write, points: &[Point], best: &Point, style: Style) -> io::Result<()> {
    let rows: Vec<Vec<String>> = (points.iter())
        .map(|p| {
            let per_hour = format!("{:.6}", p.per_hour);
            let mut row = vec![
                p.rate.to_string(),
                per_hour.trim_end_matches('0').trim_end_matches('.').to_owned(),
            ];
            row.extend([p.burst.to_string(), p.untouched_keys.to_string()]);
            row.extend([p.touched_keys.to_string(), p.refused.to_string()]);
            row.push(if p == best { "<- recommended".to_owned() } else { String::new() });
            row
        })
        .collect();
    let header = ["rate", "per hour", "burst", "untouched keys", "touched", "refused", ""];
    table(out, &header, &rows, style)
}
