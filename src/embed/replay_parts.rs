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
//!
//! One stream (no key) is cut into ranges of time instead, and a range may be replayed
//! from a fresh state, exactly, where its first event comes once the limiter is at rest
//! after the last event before it ([`range_line`]): a reset cut.

use anyhow::{Context, Result, anyhow, bail};
use serde_json::{Value, json};

use super::blocks::{BlockRows, Blocks, Counted, lines_of_blocks};
use super::parts_plan::{Part, Plan};
use crate::engine::recorder::{KeySpread, Settings, promise_over_keys};
use crate::input::catalog::Source;
use crate::limiter::promise::PromiseCheck;
use crate::limiter::{Piece, Transfer, Waits};
use crate::report::{self, KeyList, KeyQuantiles, LimiterReport};
use crate::sizing::quantile::{Histogram, Tally};
use crate::units::time::Timestamp;

/// Replays the rows of `given`, which hold whole keys, by `args` (`ratelimit replay`'s
/// flags, the program's name first, with `--key`), and returns what they tell.
pub fn replay_part(args: &[String], given: Source) -> Result<Part> {
    let mut plan = Plan::of(args)?;
    let input = plan.read(given)?;
    let job = plan.replay.job.job(input, vec![plan.settings], false)?;
    let (rows, recorder, stats) = job.replay_rows()?;
    let reports = job.reports(&recorder, &stats);
    let spread = reports.spread.unwrap_or_default();
    let summary = json!({
        "report": serde_json::to_value(&reports.lanes[0])?,
        "spread": encode(&spread),
        "window_us": plan.settings.window.as_micros(),
    });
    Ok(Part::of(summary.to_string(), &rows, recorder.trace(), &job.input.source))
}

/// Returns what a range of one stream tells (a Spark partition's rows, in time order),
/// read by `args` (`ratelimit replay`'s flags, no `--key`): its first and last events'
/// times in µs, and the instant from which the limiter is at rest after the last, `-` if
/// none is known (`"first last rest"`); `-` for a range without events.
pub fn range_line(args: &[String], given: Source) -> Result<String> {
    let (plan, input) = Plan::of_range(args, given)?;
    let read = crate::input::catalog::read_events(&input.source, &input.read, FirstLast::default);
    let FirstLast(Some((first, last))) = read?.0 else { return Ok("-".to_owned()) };
    let rest = plan.settings.per_key().rests_after(last);
    let rest = rest.map_or_else(|| "-".to_owned(), |rest| rest.as_micros().to_string());
    Ok(format!("{} {} {rest}", first.as_micros(), last.as_micros()))
}

/// The most pieces a range's function may have before it is given up
/// ([`Gcra::transfer`](crate::limiter::Gcra::transfer)).
const MOST_PIECES: usize = 4096;

/// Returns GCRA's function of a range of one stream (a Spark partition's rows, in time
/// order), read by `args` (`ratelimit replay`'s flags, no `--key`): the fresh tat, then
/// each piece as `first:S:k` (x ↦ x + k) or `first:C:c` (x ↦ c), all in units of 1/N µs;
/// `-` if the limiter's decisions are not GCRA's or the function passes 4,096 pieces.
pub fn range_transfer(args: &[String], given: Source) -> Result<String> {
    let (plan, input) = Plan::of_range(args, given)?;
    let Some(gcra) = as_gcra(&plan.settings) else { return Ok("-".to_owned()) };
    let (events, _) =
        crate::input::catalog::read_events(&input.source, &input.read, Events::default)?;
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

/// Returns the tat each range starts with, in decimal: the ranges' functions, as
/// [`range_transfer`] wrote them (in range order, none `-`), composed from the first's
/// fresh tat.
pub fn range_starts(lines: &[String]) -> Result<Vec<String>> {
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

/// Decides the rows of a range of one stream by GCRA (`args` as for [`range_transfer`]),
/// starting from `tat`: each row's decision, in the rows' order (`None` for a row that
/// made no event).
pub fn decide_range(args: &[String], given: Source, tat: i128) -> Result<Vec<Option<bool>>> {
    let (plan, input) = Plan::of_range(args, given)?;
    let Some(mut gcra) = as_gcra(&plan.settings) else {
        bail!(
            "a range is decided from a given state by GCRA, and the limiters that decide as it does"
        )
    };
    let (rows, _) = crate::input::catalog::read_rows(&input.source, &input.read)?;
    *crate::limiter::KeyedState::state_mut(&mut gcra) = tat;
    let passed: Vec<bool> = rows
        .iter()
        .map(|(event, _)| {
            crate::limiter::Limiter::take(&mut gcra, event.time, event.cost, false).passed
        })
        .collect();
    Ok(crate::engine::decisions::in_row_order(&rows, &passed, &input.source))
}

/// Returns the GCRA that decides as the limiter of `settings` does, if one does: GCRA
/// itself, the token bucket of the same rate and burst, and the leaky queue, which admits
/// what GCRA passes (each checked against GCRA by the limiters' property tests).
fn as_gcra(settings: &Settings) -> Option<crate::limiter::Gcra> {
    use crate::limiter::Algorithm::{Gcra, LeakyQueue, TokenBucket};
    matches!(settings.algorithm, Gcra | TokenBucket | LeakyQueue)
        .then(|| crate::limiter::Gcra::new(settings.rate, settings.burst))
}

/// A range's events, in time order.
#[derive(Default)]
struct Events(Vec<(Timestamp, u64)>);

impl crate::input::catalog::Sink for Events {
    type Error = anyhow::Error;

    fn event(&mut self, event: crate::input::catalog::Event) -> Result<()> {
        self.0.push((event.time, event.cost));
        Ok(())
    }
}

/// The first and last events' times of a range.
#[derive(Default)]
struct FirstLast(Option<(Timestamp, Timestamp)>);

impl crate::input::catalog::Sink for FirstLast {
    type Error = anyhow::Error;

    fn event(&mut self, event: crate::input::catalog::Event) -> Result<()> {
        let (first, last) = self.0.get_or_insert((event.time, event.time));
        *first = (*first).min(event.time);
        *last = (*last).max(event.time);
        Ok(())
    }
}

/// Returns a line for each block in `rows` (sorted by block, then time): the busiest
/// window of every event that starts in it, of the passed ones, and its first event too
/// big to pass, as [`merge_parts`] reads them.
pub fn block_lines(args: &[String], rows: &BlockRows) -> Result<Vec<String>> {
    let plan = Plan::of_limit(args)?;
    if plan.replay.job.keys.key.is_none() {
        return super::stream_parts::stream_block_lines(&plan, rows);
    }
    let settings = plan.settings;
    lines_of_blocks(rows, settings.window, settings.capacity(), None)
}

/// Merges every part's summary, and every block's line, into what `ratelimit replay
/// --format json` prints for all the rows, as a JSON object.
pub fn merge_parts(args: &[String], parts: &[String], blocks: &[String]) -> Result<Vec<u8>> {
    let plan = Plan::of_limit(args)?;
    if plan.replay.job.keys.key.is_none() {
        // One stream: its chunks' lines, in time order.
        return super::stream_parts::merge_stream(&plan, parts, blocks);
    }
    let parts: Vec<Value> = (parts.iter())
        .map(|part| serde_json::from_str(part).context("a part's summary is not JSON"))
        .collect::<Result<_>>()?;
    let keys = &plan.replay.job.keys;
    let column = keys.key.clone().unwrap_or_default();
    let parts: Vec<&Value> = parts.iter().collect();
    let whole = merged_keyed(plan.settings, (&column, keys.top), &parts, blocks)?;
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
