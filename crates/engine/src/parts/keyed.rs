//! `replay --key` over keys split among machines (Spark's partitions, each holding whole
//! keys): what each part tells, the busiest windows over every key from the events cut
//! into blocks of time, and the whole report made of them, as the program prints it.
//!
//! A key's figures are its own events' alone, so a part replays its keys as the program
//! would, and says what they add up to ([`KeySpread`]) beside its report, whose listed
//! keys are the part's first by drops: the whole run's first are among them. What mixes
//! keys in time order (the busiest windows, the first event too big to pass) comes from
//! blocks of time: block k holds the events of its span and reads on a window's length
//! into the next, so that every window that starts in it is counted whole there.

use anyhow::Result;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::blocks::{BlockRows, Blocks, Counted, lines_of_blocks};
use super::job::{Job, Part};
use super::told::{self, Told};
use crate::backend::Backend;
use crate::input::catalog::{self, Source};
use crate::limiter::Waits;
use crate::limiter::promise::PromiseCheck;
use crate::recorder::{KeyNames, KeyPromises, KeySpread, Settings};
use crate::report::{self, KeyList, KeyQuantiles, LimiterReport};
use crate::sizing::quantile::{Histogram, Tally};

/// Replays the rows of `given`, which hold whole keys, as `job` asks (one limit, keyed),
/// and returns what they tell.
pub fn replay_part(job: &Job, given: &Source) -> Result<Part> {
    let settings = job.by_key()?;
    let read = job.read(given)?;
    let (rows, stats) = catalog::read_rows(given, &read)?;
    let events = rows.iter().map(|(event, _)| event);
    let recorder = Backend::Memory.decide(&[settings], true, (events, &stats.keys))?;
    let names = KeyNames::of(read.key_column.as_deref(), &stats);
    let reports = recorder.reports(&given.name(), names, job.top, read.threads);
    let spread = reports.spread.unwrap_or_default();
    let part = KeyedPart::of(&reports.lanes[0], &spread)?;
    Ok(Part::of(told::write(&part)?, &rows, recorder.trace(), given))
}

/// Returns a line for each block in `rows` (sorted by block, then time): the busiest
/// window of every event that starts in it, of the passed ones, and its first event too
/// big to pass, as [`merge_parts`] reads them.
pub(super) fn block_lines(settings: Settings, rows: &BlockRows) -> Result<Vec<String>> {
    lines_of_blocks(rows, settings.window, settings.capacity(), None, None)
}

/// Merges every part's summary, and every block's line, into the report of one limit
/// with `settings` over every key of `column`, as the program prints it, its first `top`
/// keys listed (all for 0).
pub(super) fn merge_parts(
    settings: Settings,
    (column, top): (&str, usize),
    parts: &[String],
    blocks: &[String],
) -> Result<Vec<u8>> {
    let parts: Vec<KeyedPart> = told::read_all(parts)?;
    let parts: Vec<&KeyedPart> = parts.iter().collect();
    let whole = merged_keyed(settings, (column, top), &parts, &Blocks::of_lines(blocks, None)?)?;
    Ok(serde_json::to_vec(&whole)?)
}

/// What a part of the keys tells of one limiter: its counts, its worst key, its keys
/// with the most drops as its report lists them, and what its keys add up to.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct KeyedPart {
    events: u64,
    passed: u64,
    /// The units of its events and of those passed, if any event cost other than 1.
    units: Option<(u128, u128)>,
    /// Its events too big to pass.
    too_big: u64,
    /// Its key that needs the largest bucket, and that bucket.
    worst_key: Option<(String, u64)>,
    /// Its keys with the most drops, each as the report lists it.
    top: Vec<Listed>,
    spread: Spread,
}

impl Told for KeyedPart {
    const KIND: &'static str = "keyed";
}

/// A key as a report lists it: its drops and name, to rank it, and its report.
#[derive(Debug, Serialize, Deserialize)]
struct Listed {
    dropped: u64,
    key: Option<String>,
    report: Value,
}

impl KeyedPart {
    /// What `report`, a part's, and `spread`, what its keys add up to, tell.
    pub(super) fn of(report: &LimiterReport, spread: &KeySpread) -> Result<KeyedPart> {
        let listed = report.by_key.iter().flat_map(|keys| &keys.top);
        let top = listed
            .map(|key| {
                let (dropped, name) = (key.dropped, key.key.clone());
                Ok(Listed { dropped, key: name, report: serde_json::to_value(key)? })
            })
            .collect::<Result<_>>()?;
        Ok(KeyedPart {
            events: report.events,
            passed: report.passed,
            units: report.units.as_ref().map(|units| (units.events, units.passed)),
            too_big: report.too_big.as_ref().map_or(0, |too_big| too_big.events),
            worst_key: report.worst_key.as_ref().map(|w| (w.key.clone(), w.min_bucket)),
            top,
            spread: Spread::of(spread),
        })
    }
}

/// Merges what parts of the keys tell of one limiter with `settings` and the `merged`
/// blocks into its report over every key, as the program gives it, its keys by `column`,
/// the first `shown` listed (all for 0).
pub(super) fn merged_keyed(
    settings: Settings,
    (column, shown): (&str, usize),
    parts: &[&KeyedPart],
    merged: &Blocks,
) -> Result<Value> {
    let Settings { algorithm, rate, burst, .. } = settings;
    let (events, passed) = parts.iter().fold((0u64, 0u64), |(e, p), part| {
        (e.saturating_add(part.events), p.saturating_add(part.passed))
    });
    let weighted = parts.iter().any(|part| part.units.is_some());
    let mut spread = KeySpread::default();
    for part in parts {
        spread.merge(&part.spread.read());
    }
    // Units: a part whose events all cost 1 tells none, and its events are its units.
    let (units_in, units_passed) = parts.iter().fold((0u128, 0u128), |(e, p), part| {
        let (events, passed) =
            part.units.unwrap_or((u128::from(part.events), u128::from(part.passed)));
        (e.saturating_add(events), p.saturating_add(passed))
    });
    let too_big_events = parts.iter().map(|part| part.too_big).sum::<u64>();
    let worst_key = (parts.iter())
        .filter_map(|part| part.worst_key.clone())
        .min_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)))
        .map(|(key, min_bucket)| report::WorstKey { key, min_bucket, span: None });
    // Over keys, the need is the worst key's: the same field as without keys.
    let worst_need = worst_key.as_ref().map_or(0, |w| w.min_bucket);
    let check = PromiseCheck::new(algorithm, rate, burst.get());
    let quantiles = spread.min_buckets.quantiles().map(|min_bucket| KeyQuantiles {
        min_bucket,
        dropped: spread.dropped.first().and_then(Histogram::quantiles),
    });
    let counted = Counted {
        events,
        passed,
        units: units_in,
        passed_units: units_passed,
        weighted,
        // The first too big of every key is the blocks' to find: the first in time.
        too_big: merged.too_big.map(|(_, time, cost)| (too_big_events, time, cost)),
    };
    // The empty key, let through uncounted, is in no key's promise.
    let not_accounted = spread.not_accounted.first().copied().unwrap_or(0);
    let accounted = spread.keys - usize::from(not_accounted > 0);
    let promise = spread.promises.first().copied().unwrap_or_default().promise(&check, accounted);
    let report = LimiterReport {
        worst_key,
        not_accounted: algorithm.skips_empty_key().then_some(not_accounted),
        queue: spread.waits.first().copied().flatten().map(Into::into),
        by_key: Some(KeyList::<LimiterReport> {
            column: column.to_owned(),
            count: spread.keys,
            quantiles,
            top: Vec::new(),
        }),
        ..counted.report(settings, merged, (worst_need, promise))
    };
    // The keys listed: the whole run's first by drops, then by name, are among each part's.
    let mut top: Vec<&Listed> = parts.iter().flat_map(|part| &part.top).collect();
    top.sort_by(|a, b| b.dropped.cmp(&a.dropped).then_with(|| a.key.cmp(&b.key)));
    if shown > 0 {
        top.truncate(shown);
    }
    let mut whole = serde_json::to_value(&report)?;
    whole["keys"]["top"] = Value::Array(top.into_iter().map(|key| key.report.clone()).collect());
    Ok(whole)
}

/// What keys add up to ([`KeySpread`]), as a part tells it: each histogram as (value,
/// count, weight) triples.
#[derive(Debug, Serialize, Deserialize)]
struct Spread {
    keys: usize,
    min_buckets: Vec<(u64, u64, u64)>,
    dropped: Vec<Vec<(u64, u64, u64)>>,
    promises: Vec<KeyPromises>,
    not_accounted: Vec<u64>,
    waits: Vec<Option<Waits>>,
}

impl Spread {
    /// What `spread` tells.
    fn of(spread: &KeySpread) -> Spread {
        let histogram = |h: &Histogram| -> Vec<(u64, u64, u64)> {
            h.sorted().into_iter().map(|(v, t)| (v, t.count, t.weight)).collect()
        };
        Spread {
            keys: spread.keys,
            min_buckets: histogram(&spread.min_buckets),
            dropped: spread.dropped.iter().map(histogram).collect(),
            promises: spread.promises.clone(),
            not_accounted: spread.not_accounted.clone(),
            waits: spread.waits.clone(),
        }
    }

    /// The spread it tells.
    fn read(&self) -> KeySpread {
        let histogram = |triples: &[(u64, u64, u64)]| -> Histogram {
            let mut h = Histogram::new();
            for &(value, count, weight) in triples {
                h.add_tally(value, Tally { count, weight });
            }
            h
        };
        KeySpread {
            keys: self.keys,
            min_buckets: histogram(&self.min_buckets),
            dropped: self.dropped.iter().map(|d| histogram(d)).collect(),
            promises: self.promises.clone(),
            waits: self.waits.clone(),
            not_accounted: self.not_accounted.clone(),
        }
    }
}
