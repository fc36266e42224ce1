//! What a read found that its user should know, beside the result: rows left out, no
//! events, whole-second ties, rows skipped. The program prints each as a note; a library
//! warns.

use crate::input::catalog::{ReadOptions, ReadStats, RowFilter, Source};
use crate::input::format::InputFormat;
use crate::input::no_events::why_no_events;

/// Returns the notes of a read of `source` with `read` that found `stats`, a line each.
pub fn notes(source: &Source, read: &ReadOptions, stats: &ReadStats) -> Vec<String> {
    let mut notes = Vec::new();
    if stats.left_out_empty > 0 {
        let n = stats.left_out_empty;
        let by: Vec<&str> = (read.filters.iter())
            .filter_map(|f| match f {
                RowFilter::Column(c) => Some(c.asked_by),
                RowFilter::Time(_) => None,
            })
            .collect();
        notes.push(match &by[..] {
            [only] if only.starts_with("--min-mag") || only.starts_with("min_mag") => {
                format!("{n} rows with no magnitude were left out by {only}")
            }
            _ => format!("{n} rows with an empty field were left out by {}", by.join(" and ")),
        });
    }
    notes.extend(why_no_events(source, read, stats));
    let keyed = read.key_column.is_some();
    let logged = read.format == InputFormat::Clf;
    notes.extend(stats.instants.note(stats.fractions, keyed, logged));
    if let Some(first) = &stats.first_skipped {
        let n = stats.skipped;
        let rows = if n == 1 { "row" } else { "rows" };
        notes.push(format!("skipped {n} bad {rows} (--skip-bad); the first: {first}"));
    }
    notes
}
