//! One stream (no key) cut into ranges of time (Spark's partitions, in time order): where
//! each may start from a fresh state (a reset cut: the limiter at rest after the last event
//! before it), and, for the limiters that pass what GCRA passes, each range's function of
//! the tat it starts with, composed to give every range its true start.

use anyhow::{Result, anyhow, bail};

use serde::{Deserialize, Serialize};

use super::job::Job;
use super::told::{self, Told};
use crate::input::catalog::{self, Event, Sink, Source};
use crate::limiter::{Gcra, KeyedState, Limiter, Piece, Transfer};
use crate::recorder::Settings;
use crate::units::time::Timestamp;

/// A range's first and last events' times (µs), and the instant (µs) from which the
/// limiter is at rest after the last, if one is known.
pub type RangeSpan = (i64, i64, Option<i64>);

/// [`range_line`](super::range_line), its errors the internals'.
pub(super) fn range_line(job: &Job, given: &Source) -> Result<Option<RangeSpan>> {
    let settings = job.of_range()?;
    let read = catalog::read_events(given, &job.read(given)?, FirstLast::default);
    let FirstLast(Some((first, last))) = read?.0 else { return Ok(None) };
    let rest = settings.per_key().rests_after(last).map(Timestamp::as_micros);
    Ok(Some((first.as_micros(), last.as_micros(), rest)))
}

/// The most pieces a range's function may have before it is given up
/// ([`Gcra::transfer`]).
const MOST_PIECES: usize = 4096;

/// GCRA's function of a range: the tat a fresh limiter starts with, and the function's
/// pieces, each from its first tat (the first from `i128::MIN`), in units of 1/N µs.
#[derive(Debug, Serialize, Deserialize)]
struct TransferPart {
    fresh: i128,
    pieces: Vec<(i128, Piece)>,
}

impl Told for TransferPart {
    const KIND: &'static str = "transfer";
}

/// [`range_transfer`](super::range_transfer), its errors the internals'.
pub(super) fn range_transfer(job: &Job, given: &Source) -> Result<Option<String>> {
    let Some(gcra) = as_gcra(&job.of_range()?) else { return Ok(None) };
    let (events, _) = catalog::read_events(given, &job.read(given)?, Events::default)?;
    let Some(function) = gcra.transfer(events.0, MOST_PIECES) else { return Ok(None) };
    let pieces = function.pieces().to_vec();
    Ok(Some(told::write(&TransferPart { fresh: gcra.fresh_tat(), pieces })?))
}

/// [`range_starts`](super::range_starts), its errors the internals'.
pub(super) fn range_starts(lines: &[String]) -> Result<Vec<i128>> {
    let mut tat = None;
    let mut starts = Vec::with_capacity(lines.len());
    for (n, told) in told::read_all::<TransferPart>(lines)?.into_iter().enumerate() {
        let function = Transfer::from_pieces(told.pieces)
            .ok_or_else(|| anyhow!("range {n}'s function is not in order from its first piece"))?;
        let start = *tat.get_or_insert(told.fresh);
        starts.push(start);
        tat = Some(function.apply(start));
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
