//! Configurations side by side as the exporters see them: one CSV row a configuration,
//! and a table with what changes from the first to the second.

use std::io::{self, Write};

use super::layered::limiter_cells;
use super::table::{labeled, percent, table};
use super::{Report, Style};
use crate::engine::side_by_side::{ByKey, Changes, KeyChange, SideBySide};

impl Report for SideBySide {
    type Row<'a> = serde_json::Value;

    /// One row a configuration: its spec and its limiter's figures; a keyed one's listed
    /// keys, and the changes, are in the JSON.
    fn rows(&self) -> Vec<serde_json::Value> {
        super::layered::rows_without_top(&self.configurations)
    }

    fn table(&self, out: &mut dyn Write, style: Style) -> io::Result<()> {
        let lines = [
            ("input".to_owned(), self.input.clone()),
            ("events".to_owned(), self.events.to_string()),
        ];
        labeled(out, &lines, style)?;
        writeln!(out)?;
        let share = |n: u64| format!("{n}{}", percent(n, self.events));
        // Whole-second ties read the other way: its drops beside each configuration's.
        let other = self.configurations.iter().find_map(|c| c.other_ties.as_ref());
        let rows: Vec<Vec<String>> = (self.configurations.iter())
            .map(|c| {
                let r = &c.limiter;
                let mut row = vec![c.spec.clone(), share(r.passed), share(r.dropped)];
                row.extend(c.other_ties.as_ref().map(|o| share(o.dropped)));
                row.extend(limiter_cells(r).into_iter().skip(1));
                row
            })
            .collect();
        let other_header = other.map(|o| format!("dropped, ties {}", o.ties));
        let header: Vec<&str> = ["configuration", "passed", "dropped"]
            .into_iter()
            .chain(other_header.as_deref())
            .chain(["busiest", "min bucket", "promise"])
            .collect();
        table(out, &header, &rows, style)?;
        match &self.changes {
            Some(changes) => changes_table(out, changes, style),
            None => Ok(()),
        }
    }
}

/// Writes what changes from the first configuration to the second, and the keys that
/// change most.
fn changes_table(out: &mut dyn Write, changes: &Changes, style: Style) -> io::Result<()> {
    let lines = [
        ("newly refused".to_owned(), changes.newly_refused.to_string()),
        ("newly passed".to_owned(), changes.newly_passed.to_string()),
    ];
    writeln!(out, "\nfrom the first configuration to the second:")?;
    labeled(out, &lines, style)?;
    let Some(keys) = &changes.keys else { return Ok(()) };
    if keys.top.is_empty() {
        return writeln!(out, "\nNo key by `{}` changes.", keys.column);
    }
    writeln!(
        out,
        "\nkeys by `{}` that change most ({} of {} that change):",
        keys.column,
        keys.top.len(),
        keys.changed
    )?;
    let rows: Vec<Vec<String>> = (keys.top.iter())
        .map(|k| {
            let figures = [k.events, k.first_passed, k.second_passed, k.changed];
            [k.key.clone()].into_iter().chain(figures.iter().map(u64::to_string)).collect()
        })
        .collect();
    table(out, &["key", "events", "first passed", "second passed", "changed"], &rows, style)
}

/// Two configurations key by key: a CSV row a key, and a table of them.
impl Report for ByKey {
    type Row<'a> = &'a KeyChange;

    fn rows(&self) -> Vec<&KeyChange> {
        self.keys.iter().collect()
    }

    fn table(&self, out: &mut dyn Write, style: Style) -> io::Result<()> {
        let flag = |k: &KeyChange| match (k.newly_throttled, k.no_longer_throttled) {
            (true, _) => "newly throttled",
            (_, true) => "no longer throttled",
            _ => "",
        };
        let rows: Vec<Vec<String>> = (self.keys.iter())
            .map(|k| {
                let change =
                    if k.change > 0 { format!("+{}", k.change) } else { k.change.to_string() };
                let figures = [k.events, k.dropped_first, k.dropped_second].map(|n| n.to_string());
                let mut row = vec![k.key.clone()];
                row.extend(figures);
                row.extend([change, flag(k).to_owned()]);
                row
            })
            .collect();
        let header =
            [self.column.as_str(), "events", "dropped first", "dropped second", "change", ""];
        table(out, &header, &rows, style)
    }
}
