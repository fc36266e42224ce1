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

use anyhow::{Context, Result};
use serde_json::{Value, json};

use super::blocks::{BlockRows, Blocks, Counted, lines_of_blocks};
use super::job::{Job, Part};
use crate::backend::Backend;
use crate::input::catalog::{self, Source};
use crate::limiter::Waits;
use crate::limiter::promise::PromiseCheck;
use crate::recorder::{KeyNames, KeySpread, Settings, promise_over_keys};
use crate::report::{self, KeyList, KeyQuantiles, LimiterReport};
use crate::sizing::quantile::{Histogram, Tally};

/// Replays the rows of `given`, which hold whole keys, as `job` asks (one limit, keyed),
/// and returns what they tell.
pub fn replay_part(job: &Job, given: &Source) -> Result<Part> {
    let settings = job.by_key()?;
    let read = job.read(given)?;
    let (rows, stats) = catalog::read_rows(given, &read)?;
    let events = rows.iter().map(|(event, _)| event);
    let recorder = Backend::Memory.decide(&[settings], true, (events, &read.empty_key))?;
    let names = KeyNames::of(read.key_column.as_deref(), &stats);
    let reports = recorder.reports(&given.name(), names, job.top, read.threads);
    let spread = reports.spread.unwrap_or_default();
    let summary = json!({
        "report": serde_json::to_value(&reports.lanes[0])?,
        "spread": encode(&spread),
        "window_us": settings.window.as_micros(),
    });
    Ok(Part::of(summary.to_string(), &rows, recorder.trace(), given))
}

/// Returns a line for each block in `rows` (sorted by block, then time): the busiest
/// window of every event that starts in it, of the passed ones, and its first event too
/// big to pass, as [`merge_parts`] reads them.
pub(super) fn block_lines(settings: Settings, rows: &BlockRows) -> Result<Vec<String>> {
    lines_of_blocks(rows, settings.window, settings.capacity(), None)
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
    let parts: Vec<Value> = (parts.iter())
        .map(|part| serde_json::from_str(part).context("a part's summary is not JSON"))
        .collect::<Result<_>>()?;
    let parts: Vec<&Value> = parts.iter().collect();
    let whole = merged_keyed(settings, (column, top), &parts, blocks)?;
    Ok(serde_json::to_vec(&whole)?)
}

/// Merges what parts of the keys tell of one limiter with `settings` (each `{"report",
/// "spread"}`) and the blocks' lines into its report over every key, as the program
/// gives it, its keys by `column`, the first `shown` listed (all for 0).
pub(super) fn merged_keyed(
    settings: Settings,
    (column, shown): (&str, usize),
    parts: &[&Value],
    blocks: &[String],
) -> Result<Value> {
    let Settings { algorithm, rate, burst, .. } = settings;
    let reports: Vec<&Value> = parts.iter().map(|part| &part["report"]).collect();
    let number = |value: &Value, name: &str| value[name].as_u64().unwrap_or(0);
    let sum = |name: &str| reports.iter().map(|r| number(r, name)).sum::<u64>();
    let (events, passed) = (sum("events"), sum("passed"));
    let weighted = reports.iter().any(|r| !r["units"].is_null());
    let mut spread = KeySpread::default();
    for part in parts {
        spread.merge(&decode(&part["spread"]).context("a part's keys are not a summary")?);
    }
    // Units: a part whose events all cost 1 tells none, and its events are its units.
    let units = |r: &Value, name: &str| match &r["units"] {
        Value::Null => u128::from(number(r, name)),
        units => units[name].as_u64().map_or(0, u128::from),
    };
    let (units_in, units_passed) = reports
        .iter()
        .fold((0u128, 0u128), |(e, p), r| (e + units(r, "events"), p + units(r, "passed")));
    let too_big_events: u64 = reports.iter().map(|r| number(&r["too_big"], "events")).sum();
    let merged = Blocks::of_lines(blocks)?;
    let worst_key = reports
        .iter()
        .filter_map(|r| {
            let worst = &r["worst_key"];
            Some((worst["key"].as_str()?.to_owned(), worst["min_bucket"].as_u64()?))
        })
        .min_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)))
        .map(|(key, min_bucket)| report::WorstKey { key, min_bucket, span: None });
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
    let promise = promise_over_keys(&check, spread.broken.first().copied().unwrap_or(0), accounted);
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
        ..counted.report(settings, &merged, promise)
    };
    // The keys listed: the whole run's first by drops, then by name, are among each part's.
    let mut top: Vec<&Value> =
        reports.iter().filter_map(|r| r["keys"]["top"].as_array()).flatten().collect();
    top.sort_by(|a, b| {
        let (da, db) = (number(a, "dropped"), number(b, "dropped"));
        db.cmp(&da).then_with(|| a["key"].as_str().cmp(&b["key"].as_str()))
    });
    if shown > 0 {
        top.truncate(shown);
    }
    let mut whole = serde_json::to_value(&report)?;
    whole["keys"]["top"] = Value::Array(top.into_iter().cloned().collect());
    Ok(whole)
}

/// Writes what keys add up to as JSON: histograms as [value, count, weight] triples,
/// waits as their five figures, in text where they pass 64 bits.
pub(super) fn encode(spread: &KeySpread) -> Value {
    let histogram = |h: &Histogram| -> Value {
        h.sorted().into_iter().map(|(v, t)| json!([v, t.count, t.weight])).collect()
    };
    let waits = |w: &Option<Waits>| match w {
        Some(w) => json!([
            w.delayed,
            w.admitted,
            w.longest.to_string(),
            w.total.to_string(),
            w.units_per_micro.to_string()
        ]),
        None => Value::Null,
    };
    json!({
        "keys": spread.keys,
        "min_buckets": histogram(&spread.min_buckets),
        "dropped": spread.dropped.iter().map(histogram).collect::<Vec<_>>(),
        "broken": spread.broken,
        "not_accounted": spread.not_accounted,
        "waits": spread.waits.iter().map(waits).collect::<Vec<_>>(),
    })
}

/// Reads what [`encode`] wrote.
fn decode(value: &Value) -> Option<KeySpread> {
    let histogram = |value: &Value| -> Option<Histogram> {
        let mut h = Histogram::new();
        for triple in value.as_array()? {
            let [v, count, weight] = triple.as_array()?.as_slice() else { return None };
            let tally = Tally { count: count.as_u64()?, weight: weight.as_u64()? };
            h.add_tally(v.as_u64()?, tally);
        }
        Some(h)
    };
    let wide = |value: &Value| value.as_str()?.parse::<i128>().ok();
    let waits = |value: &Value| -> Option<Option<Waits>> {
        if value.is_null() {
            return Some(None);
        }
        let [delayed, admitted, longest, total, units] = value.as_array()?.as_slice() else {
            return None;
        };
        Some(Some(Waits {
            delayed: delayed.as_u64()?,
            admitted: admitted.as_u64()?,
            longest: wide(longest)?,
            total: wide(total)?,
            units_per_micro: wide(units)?,
        }))
    };
    Some(KeySpread {
        keys: usize::try_from(value["keys"].as_u64()?).ok()?,
        min_buckets: histogram(&value["min_buckets"])?,
        dropped: value["dropped"].as_array()?.iter().map(histogram).collect::<Option<_>>()?,
        broken: (value["broken"].as_array()?.iter())
            .map(|b| b.as_u64().and_then(|b| usize::try_from(b).ok()))
            .collect::<Option<_>>()?,
        waits: value["waits"].as_array()?.iter().map(waits).collect::<Option<_>>()?,
        not_accounted: (value["not_accounted"].as_array()?.iter())
            .map(Value::as_u64)
            .collect::<Option<_>>()?,
    })
}
