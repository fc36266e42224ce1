//! One stream (no key) cut into ranges of time (Spark's partitions, in time order): where
//! each may start from a fresh state (a reset cut: the limiter at rest after the last event
//! before it), and, for the limiters that pass what GCRA passes, each range's function of
//! the tat it starts with, composed to give every range its true start.

use anyhow::{Result, anyhow, bail};

use super::job::Job;
use crate::input::catalog::{self, Event, Sink, Source};
use crate::limiter::{Gcra, KeyedState, Limiter, Piece, Transfer};
use crate::recorder::Settings;
use crate::units::time::Timestamp;

/// [`range_line`](super::range_line), its errors the internals'.
pub(super) fn range_line(job: &Job, given: &Source) -> Result<String> {
    let settings = job.of_range()?;
    let read = catalog::read_events(given, &job.read(given)?, FirstLast::default);
    let FirstLast(Some((first, last))) = read?.0 else { return Ok("-".to_owned()) };
    let rest = settings.per_key().rests_after(last);
    let rest = rest.map_or_else(|| "-".to_owned(), |rest| rest.as_micros().to_string());
    Ok(format!("{} {} {rest}", first.as_micros(), last.as_micros()))
}

/// The most pieces a range's function may have before it is given up
/// ([`Gcra::transfer`]).
const MOST_PIECES: usize = 4096;

/// [`range_transfer`](super::range_transfer), its errors the internals'.
pub(super) fn range_transfer(job: &Job, given: &Source) -> Result<String> {
    let Some(gcra) = as_gcra(&job.of_range()?) else { return Ok("-".to_owned()) };
    let (events, _) = catalog::read_events(given, &job.read(given)?, Events::default)?;
    let Some(function) = gcra.transfer(events.0, MOST_PIECES) else { return Ok("-".to_owned()) };
    let mut line = gcra.fresh_tat().to_string();
    for &(first, piece) in function.pieces() {
        let first = if first == i128::MIN { "-".to_owned() } else { first.to_string() };
        match piece {
            Piece::Shift(k) => line += &format!(" {first}:S:{k}"),
            Piece::Const(c) => line += &format!(" {first}:C:{c}"),
        }
    }
    Ok(line)
}

/// [`range_starts`](super::range_starts), its errors the internals'.
pub(super) fn range_starts(lines: &[String]) -> Result<Vec<String>> {
    let mut tat = None;
    let mut starts = Vec::with_capacity(lines.len());
    for line in lines {
        let bad = || anyhow!("{line:?} is not a range's function");
        let mut words = line.split(' ');
        let fresh: i128 = words.next().and_then(|w| w.parse().ok()).ok_or_else(bad)?;
        let pieces = words
            .map(|word| {
                let [first, kind, value] = word.split(':').collect::<Vec<_>>()[..] else {
                    return None;
                };
                let first = if first == "-" { i128::MIN } else { first.parse().ok()? };
                let value = value.parse().ok()?;
                let piece = match kind {
                    "S" => Piece::Shift(value),
                    "C" => Piece::Const(value),
                    _ => return None,
                };
                Some((first, piece))
            })
            .collect::<Option<Vec<_>>>()
            .and_then(Transfer::from_pieces)
            .ok_or_else(bad)?;
        let start = *tat.get_or_insert(fresh);
        starts.push(start.to_string());
        tat = Some(pieces.apply(start));
    }
    Ok(starts)
}

/// [`decide_range`](super::decide_range), its errors the internals'.
pub(super) fn decide_range(job: &Job, given: &Source, tat: i128) -> Result<Vec<Option<bool>>> {
    let Some(mut gcra) = as_gcra(&job.of_range()?) else {
        bail!(
            "a range is decided from a given state by GCRA, and the limiters that decide as it does"
        )
    };
    let (rows, _) = catalog::read_rows(given, &job.read(given)?)?;
    *KeyedState::state_mut(&mut gcra) = tat;
    let passed: Vec<bool> = rows
        .iter()
        .map(|(event, _)| Limiter::take(&mut gcra, event.time, event.cost, false).passed)
        .collect();
    Ok(crate::decisions::in_row_order(&rows, &passed, given))
}

/// Returns the GCRA that decides as the limiter of `settings` does, if the registry says
/// one does ([`Rule::PASSES_AS_GCRA`](crate::limiter::Rule::PASSES_AS_GCRA), each checked
/// against GCRA by the limiters' property tests).
fn as_gcra(settings: &Settings) -> Option<Gcra> {
    (settings.algorithm.passes_as_gcra()).then(|| Gcra::new(settings.rate, settings.burst))
}

/// A range's events, in time order.
#[derive(Default)]
struct Events(Vec<(Timestamp, u64)>);

impl Sink for Events {
    type Error = anyhow::Error;

    fn event(&mut self, event: Event) -> Result<()> {
        self.0.push((event.time, event.cost));
        Ok(())
    }
}

/// The first and last events' times of a range.
#[derive(Default)]
struct FirstLast(Option<(Timestamp, Timestamp)>);

impl Sink for FirstLast {
    type Error = anyhow::Error;

    fn event(&mut self, event: Event) -> Result<()> {
        let (first, last) = self.0.get_or_insert((event.time, event.time));
        *first = (*first).min(event.time);
        *last = (*last).max(event.time);
        Ok(())
    }
}
