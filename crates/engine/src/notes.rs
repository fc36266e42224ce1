//! What a read found that its user should know, beside the result: rows left out, no
//! events, whole-second ties, rows skipped. The program prints each as a note; a library
//! warns.

use crate::input::catalog::{ReadOptions, ReadStats, RowFilter, Source, Ties};
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
    if stats.whole_second_ties() {
        notes.push(stats.instants.note(keyed, logged, read.ties));
    }
    if let Some(first) = &stats.first_skipped {
        let n = stats.skipped;
        let rows = if n == 1 { "row" } else { "rows" };
        notes.push(format!("skipped {n} bad {rows} (--skip-bad); the first: {first}"));
    }
    notes
}

/// What the other reading of whole-second ties changes, said the same way by every command
/// that decides events: read as `ties` reads them, each limit of `dropped` (its name, if
/// there are several) dropped the first figure, and read the other way (`--ties`), the
/// second.
pub fn ties_note(ties: Ties, dropped: &[(Option<&str>, u64, u64)]) -> String {
    let other = ties.other();
    let how = match other {
        Ties::Spread => "each second's tied events spread evenly across it, in the order they came",
        Ties::Together => "each second's tied events simultaneous, as written",
    };
    let figures = match dropped {
        [(None, this, that)] => {
            format!("the limit drops {that}, against {this} read {}", ties.name())
        }
        _ => {
            let each: Vec<String> = (dropped.iter())
                .map(|(name, this, that)| format!("{} {that} ({this})", name.unwrap_or("?")))
                .collect();
            format!("the limits drop {} (in brackets, read {})", each.join(", "), ties.name())
        }
    };
    format!("read with --ties {} ({how}), {figures}", other.name())
}

/// Each lane's drops in a `trace` of decisions, `lanes` to an event.
pub fn dropped_by_lane(trace: &[bool], lanes: usize) -> Vec<u64> {
    let mut dropped = vec![0u64; lanes];
    for decisions in trace.chunks(lanes.max(1)) {
        for (n, passed) in decisions.iter().enumerate() {
            dropped[n] += u64::from(!passed);
        }
    }
    dropped
}
