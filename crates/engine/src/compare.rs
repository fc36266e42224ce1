//! Limits side by side over the same events, in one read: limiters at one rate (each a
//! lane of one replay), or whole configurations each deciding every row on its own, and
//! what changes from the first to the second. The one call behind the program's `compare`
//! and the library's.

use anyhow::Result;

use crate::backend::Backend;
use crate::input::catalog::{self, Event, ReadOptions, Rows, Source};
use crate::layered::Layer;
use crate::limit::Limit;
use crate::limiter::Algorithm;
use crate::lossless::Found;
use crate::notes::{dropped_by_lane, notes, ties_note};
use crate::recorder::{KeyNames, Settings};
use crate::redis::RedisTarget;
use crate::replay::Run;
use crate::report::{KeyDrops, LimiterReport};
use crate::side_by_side::{Changes, Configuration, OtherTies, SideBySide};
use crate::units::time::Span;

/// Limiters side by side: each one's report, and with keys, the keys with the most drops
/// over all of them.
#[derive(Clone, Debug)]
pub struct Lanes {
    /// Each limiter's report, in order: the JSON.
    pub lanes: Vec<LimiterReport>,
    /// With keys, the keys with the most drops over all limiters.
    pub across: Vec<KeyDrops>,
}

/// Settles `limit` for each of `algorithms` side by side, at its rate, with its burst
/// where the limiter has one (and ignored where it has none), its parameters, and busiest
/// windows `window` long (the rate's period if `None`). Each option is written after
/// `prefix` in messages (`--` for flags).
pub fn settings(
    limit: &Limit,
    algorithms: &[Algorithm],
    window: Option<Span>,
    prefix: &str,
) -> Result<Vec<Settings>> {
    let each = algorithms.iter().map(|&algorithm| {
        let one = Limit { algorithm, ..limit.clone() };
        Ok(one.settings(window, false, prefix)?)
    });
    each.collect()
}

/// Replays the events of `source`, read with `read` (per key if it has a key column),
/// through limiters with `settings` side by side in `backend`, ranking `top` keys.
pub fn limiters(
    settings: &[Settings],
    source: &Source,
    read: &ReadOptions,
    backend: &Backend,
    top: usize,
) -> crate::error::Result<Found<Lanes>> {
    Ok(lanes(settings, source, read, backend, top)?)
}

/// [`limiters`], its errors the internals'.
fn lanes(
    settings: &[Settings],
    source: &Source,
    read: &ReadOptions,
    backend: &Backend,
    top: usize,
) -> Result<Found<Lanes>> {
    let keyed = read.key_column.is_some();
    let (recorder, stats) = backend.replay(settings, keyed, (source, read), false)?;
    let names = KeyNames::of(read.key_column.as_deref(), &stats);
    let found = recorder.reports(&source.name(), names, top, read.threads);
    let mut notes = notes(source, read, &stats);
    // Whole-second ties read the other way, if the input can be read again: each
    // limiter's drops so, beside this reading's.
    let tied = stats.whole_second_ties();
    if tied && matches!(backend, Backend::Memory) && source.can_read_again() {
        let other = ReadOptions { ties: read.ties.other(), ..read.clone() };
        let (again, _) = backend.replay(settings, keyed, (source, &other), true)?;
        let dropped_so = dropped_by_lane(again.trace(), settings.len());
        let named: Vec<String> = (found.lanes.iter()).map(lane_name).collect();
        let figures: Vec<(Option<&str>, u64, u64)> = (named.iter().zip(&found.lanes))
            .zip(dropped_so)
            .map(|((name, lane), so)| (Some(name.as_str()), lane.dropped, so))
            .collect();
        notes.push(ties_note(read.ties, &figures));
    }
    let lanes = Lanes { lanes: found.lanes, across: found.across };
    Ok(Found { found: lanes, notes })
}

/// A limiter's name among others side by side: its algorithm, and on a fleet its share.
fn lane_name(lane: &LimiterReport) -> String {
    match &lane.fleet {
        Some(fleet) => format!("{} {}", lane.algorithm.name(), fleet.share),
        None => lane.algorithm.name().to_owned(),
    }
}

/// Configurations decided side by side: the result, each one's decision on every row (in
/// the rows' order), and the rows.
pub struct Decided {
    /// What each configuration did, and with two, what changes.
    pub result: SideBySide,
    /// Each configuration's decision on every row.
    pub traces: Vec<Vec<bool>>,
    /// The rows, with their text.
    pub rows: Rows,
    /// The table that numbered the rows' keys, which names them.
    pub keys: crate::input::catalog::KeyTable,
}

/// Reads `source` once and has each configuration of `limits` (settled as `layers`, each
/// alone) decide every row on its own, in memory or in `redis`; with two, says what
/// changes from the first to the second, listing the `top` keys that change most (0 for
/// all).
pub fn configurations(
    limits: (&[Limit], &[Layer]),
    source: &Source,
    read: &ReadOptions,
    redis: Option<&RedisTarget>,
    top: usize,
) -> crate::error::Result<Found<Decided>> {
    Ok(each_alone(limits, source, read, redis, top)?)
}

/// [`configurations`], its errors the internals'.
fn each_alone(
    (limits, layers): (&[Limit], &[Layer]),
    source: &Source,
    read: &ReadOptions,
    redis: Option<&RedisTarget>,
    top: usize,
) -> Result<Found<Decided>> {
    let (rows, stats) = catalog::read_rows(source, read)?;
    // Whole-second ties read the other way too, in memory, so both readings are in view.
    let other = read.ties.other();
    let tied = stats.whole_second_ties() && redis.is_none();
    let other_times = tied.then(|| rows.times_as(other));
    let (mut configurations, mut traces) = (Vec::new(), Vec::new());
    for (limit, layer) in limits.iter().zip(layers) {
        let backend = Backend::new(&[layer.settings], redis, None)?;
        let one = std::slice::from_ref(layer);
        let events = rows.iter().map(|(event, _)| event);
        let mut record = backend.decide_layers(one, (events, &stats.keys))?;
        traces.push(std::mem::take(&mut record.trace));
        let other_ties = match &other_times {
            Some(times) => {
                let events = rows.iter().zip(times).map(|((e, _), &time)| Event { time, ..e });
                let record = backend.decide_layers(one, (events, &stats.keys))?;
                // Rows in memory: a usize widens to u64 exactly on every target.
                let passed = record.trace.iter().filter(|&&passed| passed).count() as u64;
                let all = rows.len() as u64;
                Some(OtherTies { ties: other.name().to_owned(), passed, dropped: all - passed })
            }
            None => None,
        };
        let run = Run { source, read, backend: &backend, top, decisions: false };
        let report = run.layered_report(std::slice::from_ref(limit), record, &stats);
        let limiter = report.layers.into_iter().next().map(|layer| layer.limiter);
        configurations.extend(limiter.map(|limiter| Configuration {
            spec: limit.to_string(),
            limiter,
            other_ties,
        }));
    }
    let changes = match &traces[..] {
        [first, second] => {
            let keys: Vec<u32> = rows.iter().map(|(event, _)| event.key).collect();
            let column = read.key_column.as_deref();
            let named = column.map(|column| (&keys[..], column, &stats.keys));
            Some(Changes::between(first, second, named, top))
        }
        _ => None,
    };
    let result = SideBySide {
        input: source.name(),
        // Rows in memory: a usize widens to u64 exactly on every target.
        events: rows.len() as u64,
        configurations,
        changes,
    };
    let notes = notes(source, read, &stats);
    let decided = Decided { result, traces, rows, keys: stats.keys };
    Ok(Found { found: decided, notes })
}
