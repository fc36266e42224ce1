//! `replay` of one stream (no key) from its rows already decided in chunks of time
//! (Spark's partitions): what each chunk tells, and the report made of every chunk's line
//! and the blocks' lines, as the program prints it.
//!
//! Counts and units add up; the smallest lossless bucket of the events, and the one the
//! passed events fit, merge from each chunk's [`BucketSummary`] in time order; a leaky
//! queue's waits are each chunk's from the queue it starts with (its GCRA tat: the queue
//! holds exactly what GCRA passed); the busiest windows, the most in an aligned window and
//! in a period come from blocks of time ([`super::blocks`]), a whole number of periods
//! wide, so that no aligned window straddles two.

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use super::blocks::{BlockRows, Blocks, Counted, lines_of_blocks};
use super::job::{Job, Part};
use super::told::{self, Told};
use crate::decisions::in_row_order;
use crate::input::catalog::{self, Source};
use crate::limiter::promise::{Limit, PromiseCheck, Seen};
use crate::limiter::{KeyedState, LeakyQueue, Limiter, Waits};
use crate::recorder::Settings;
use crate::report::LimiterReport;
use crate::sizing::merge::BucketSummary;
use crate::units::time::Timestamp;

/// The shortest block of time (10 minutes): longer if a window or a period is.
pub(super) const BLOCK_US: i64 = 600_000_000;

/// [`stream_part`](super::stream_part), its errors the internals'.
pub(super) fn stream_part(
    job: &Job,
    given: &Source,
    decided: &[Option<bool>],
    start: Option<i128>,
) -> Result<Part> {
    let settings = job.of_range()?;
    let (rows, _) = catalog::read_rows(given, &job.read(given)?)?;
    // Each event's row, in time order: the inverse of putting values in the rows' order.
    let places: Vec<usize> = (0..rows.len()).collect();
    let mut row_of_event = vec![0; rows.len()];
    for (row, place) in in_row_order(&rows, &places, given).into_iter().enumerate() {
        if let Some(place) = place {
            row_of_event[place] = row;
        }
    }
    let mut chunk = Chunk::new(settings, start);
    let mut trace = Vec::with_capacity(rows.len());
    for ((event, _), &row) in rows.iter().zip(&row_of_event) {
        let Some(&Some(passed)) = decided.get(row) else {
            bail!("row {row} made an event and has no decision");
        };
        chunk.add(event.time, event.cost, passed);
        trace.push(passed);
    }
    Ok(Part::of(told::write(&chunk.line())?, &rows, &trace, given))
}

/// A chunk's figures, found as its events come in time order.
struct Chunk {
    first: Option<Timestamp>,
    events: u64,
    units: u128,
    weighted: bool,
    passed: u64,
    passed_units: u128,
    /// Events that cost more than the limiter holds: how many, and the first.
    too_big: (u64, Option<(Timestamp, u64)>),
    capacity: u64,
    rate: crate::units::rate::Rate,
    demand: BucketSummary,
    /// The bucket the passed events fit, if the promise is a bucket's.
    fit: Option<BucketSummary>,
    /// A leaky queue's waits, and the queue of passed events that finds them again.
    queue: Option<(Waits, LeakyQueue)>,
}

impl Chunk {
    fn new(settings: Settings, start: Option<i128>) -> Chunk {
        let Settings { algorithm, rate, burst, .. } = settings;
        let watch = algorithm.bound(&Limit { rate, burst: burst.get() }).watch();
        let queue = algorithm.delays().then(|| {
            let mut queue = LeakyQueue::unbounded(rate);
            if let Some(tat) = start {
                *queue.state_mut() = tat;
            }
            (Waits::new(rate), queue)
        });
        Chunk {
            first: None,
            events: 0,
            units: 0,
            weighted: false,
            passed: 0,
            passed_units: 0,
            too_big: (0, None),
            capacity: settings.capacity(),
            rate,
            demand: BucketSummary::new(rate),
            fit: watch.bucket.then(|| BucketSummary::new(rate)),
            queue,
        }
    }

    fn add(&mut self, time: Timestamp, cost: u64, passed: bool) {
        self.first.get_or_insert(time);
        self.events += 1;
        self.units += u128::from(cost);
        self.weighted |= cost != 1;
        self.demand.push_cost(time, cost);
        if passed {
            self.passed += 1;
            self.passed_units += u128::from(cost);
            if let Some(fit) = &mut self.fit {
                fit.push_cost(time, cost);
            }
            if let Some((waits, queue)) = &mut self.queue {
                waits.record(queue.take(time, cost, false));
            }
        } else if cost > self.capacity {
            self.too_big.0 += 1;
            self.too_big.1.get_or_insert((time, cost));
        }
    }

    /// What the chunk tells.
    fn line(&self) -> ChunkPart {
        ChunkPart {
            first: self.first.map(Timestamp::as_micros),
            events: self.events,
            units: self.units,
            weighted: self.weighted,
            passed: self.passed,
            passed_units: self.passed_units,
            too_big: self.too_big.1.map(|(t, c)| (self.too_big.0, t.as_micros(), c)),
            demand: self.demand.encode(),
            fit: self.fit.as_ref().map(BucketSummary::encode),
            waits: self.queue.as_ref().map(|(waits, _)| *waits),
        }
    }
}

/// What a chunk of one stream tells: its first event's time (µs), its counts and units,
/// its events too big to pass with the first (count, µs, cost), the lossless buckets of
/// its events and of its passed ones (each as the core's summary writes itself), and a
/// leaky queue's waits.
#[derive(Debug, Serialize, Deserialize)]
struct ChunkPart {
    first: Option<i64>,
    events: u64,
    units: u128,
    weighted: bool,
    passed: u64,
    passed_units: u128,
    too_big: Option<(u64, i64, u64)>,
    demand: String,
    fit: Option<String>,
    waits: Option<Waits>,
}

impl Told for ChunkPart {
    const KIND: &'static str = "chunk";
}

/// The blocks of a stream's replay: their width, a whole number of periods and 10
/// minutes at least, and how far each reads on into the next: a window or a period,
/// the longer.
pub(super) fn geometry(settings: &Settings) -> (i64, i64) {
    let period = settings.rate.period().as_micros().max(1);
    let read_on = settings.window.as_micros().max(period);
    // Both positive: the periods that cover it, rounded up (past i64, as wide as it goes).
    let periods = read_on.max(BLOCK_US).saturating_add(period - 1) / period;
    (periods.saturating_mul(period), read_on)
}

/// Merges every chunk's line, in time order, and every block's line into what `ratelimit
/// replay --format json` prints for all the rows of one stream, as a JSON object.
pub(super) fn merge_stream(
    settings: Settings,
    chunks: &[String],
    blocks: &[String],
) -> Result<Vec<u8>> {
    let Settings { algorithm, rate, burst, .. } = settings;
    let mut whole = Chunk::new(settings, None);
    for (n, chunk) in told::read_all::<ChunkPart>(chunks)?.iter().enumerate() {
        whole
            .merge(chunk)
            .with_context(|| format!("chunk {n} does not add up with those before"))?;
    }
    let waits = whole.queue.as_ref().map(|(waits, _)| *waits);
    let merged = Blocks::of_lines(blocks, None)?;
    let check = PromiseCheck::new(algorithm, rate, burst.get());
    let seen = Seen {
        aligned: merged.aligned,
        period: merged.period,
        bucket: whole.fit.as_ref().map_or(0, |fit| fit.result().min_bucket),
        waits,
    };
    let counted = Counted {
        events: whole.events,
        passed: whole.passed,
        units: whole.units,
        passed_units: whole.passed_units,
        weighted: whole.weighted,
        too_big: whole.too_big.1.map(|(time, cost)| (whole.too_big.0, time, cost)),
    };
    let report = LimiterReport {
        queue: waits.map(Into::into),
        ..counted.report(settings, &merged, (whole.demand.result().min_bucket, check.judged(seen)))
    };
    Ok(serde_json::to_vec(&report)?)
}

impl Chunk {
    /// Adds what chunk `told` tells, which comes after every chunk added so far; `None` if
    /// a count passes its bound or a summary is not one.
    fn merge(&mut self, told: &ChunkPart) -> Option<()> {
        let rate = self.rate;
        if self.first.is_none() {
            self.first = told.first.and_then(Timestamp::from_micros);
        }
        self.events = self.events.checked_add(told.events)?;
        self.units = self.units.checked_add(told.units)?;
        self.weighted |= told.weighted;
        self.passed = self.passed.checked_add(told.passed)?;
        self.passed_units = self.passed_units.checked_add(told.passed_units)?;
        if let Some((count, t, c)) = told.too_big {
            self.too_big.0 = self.too_big.0.checked_add(count)?;
            self.too_big.1.get_or_insert((Timestamp::from_micros(t)?, c));
        }
        self.demand = self.demand.merge(&BucketSummary::decode(rate, &told.demand)?);
        if let Some(fit) = &mut self.fit {
            *fit = fit.merge(&BucketSummary::decode(rate, told.fit.as_deref()?)?);
        }
        if let Some((mine, _)) = &mut self.queue {
            *mine = mine.merge(&told.waits?);
        }
        Some(())
    }
}

/// Returns the lines of a stream's blocks, as [`lines_of_blocks`] writes
/// them with what the promise measures.
pub(super) fn stream_block_lines(settings: Settings, rows: &BlockRows) -> Result<Vec<String>> {
    let Settings { algorithm, rate, burst, window, .. } = settings;
    let check = PromiseCheck::new(algorithm, rate, burst.get());
    lines_of_blocks(rows, window, settings.capacity(), Some(&check), None)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::input::catalog::Event;
    use crate::limiter::Decision;
    use serde_json::Value;

    use crate::recorder::{KeyNames, Recorder};

    /// The report of `events` (time µs, cost, passed) in one pass, as the program makes it.
    fn one_pass(settings: Settings, events: &[(i64, u64, bool)]) -> Value {
        let mut recorder = Recorder::new(&[settings], false);
        for &(t, cost, passed) in events {
            let event = Event { cost, ..Event::new(Timestamp::from_micros(t).unwrap(), 0) };
            recorder.record(event, [Decision { passed, wait: 0 }]).unwrap();
        }
        let lanes = recorder.reports("<DataFrame>", KeyNames::default(), 0, 1).lanes;
        serde_json::to_value(&lanes[0]).unwrap()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// A stream's report merged from any chunking (each chunk's line, in time order,
        /// its queue started where the chunks before left it) and from blocks of time is
        /// the one pass's, to the last figure: counts, units, the first too big, the
        /// busiest windows, the lossless bucket and every promise's measures.
        #[test]
        fn chunks_and_blocks_merge_into_the_report_of_one_pass(
            steps in prop::collection::vec((0i64..=90, 0u64..=3, any::<bool>()), 1..150),
            cuts in prop::collection::vec(0usize..150, 0..6),
            algo in prop::sample::select(vec![
                "gcra", "token-bucket", "leaky-queue", "fixed-window", "sliding-log",
                "sliding-counter", "limits-moving-window",
            ]),
        ) {
            let burst = if matches!(algo, "gcra" | "token-bucket" | "leaky-queue") { ",burst=2" } else { "" };
            let limit: crate::limit::Limit = format!("algo={algo},rate=3/m{burst}").parse().unwrap();
            let settings = limit.settings(None, true, "").unwrap();
            // Times in seconds' steps from 1,000 s, some equal.
            let events: Vec<(i64, u64, bool)> = steps.iter()
                .scan(1_000_000_000, |t, s| { *t += s.0 * 1_000_000; Some((*t, s.1, s.2)) })
                .collect();
            let want = one_pass(settings, &events);
            // The chunks: the queue of passed events carried across them, as each starts.
            let mut bounds: Vec<usize> = cuts.into_iter().filter(|&c| c < events.len()).collect();
            bounds.extend([0, events.len()]);
            bounds.sort_unstable();
            bounds.dedup();
            let mut queue = LeakyQueue::unbounded(settings.rate);
            let mut lines = Vec::new();
            for run in bounds.windows(2) {
                let mut chunk = Chunk::new(settings, Some(*queue.state_mut()));
                for &(t, cost, passed) in &events[run[0]..run[1]] {
                    let time = Timestamp::from_micros(t).unwrap();
                    chunk.add(time, cost, passed);
                    if passed {
                        queue.take(time, cost, false);
                    }
                }
                lines.push(told::write(&chunk.line()).unwrap());
            }
            // The blocks: each event in its block, and again in the one before if read on.
            let (width, read_on) = geometry(&settings);
            let mut rows: Vec<(i64, usize, bool)> = Vec::new();
            for (n, &(t, _, _)) in events.iter().enumerate() {
                let block = t.div_euclid(width);
                rows.push((block, n, true));
                if t - block * width < read_on {
                    rows.push((block - 1, n, false));
                }
            }
            rows.sort_by_key(|&(block, n, _)| (block, n));
            let blocks: Vec<i64> = rows.iter().map(|r| r.0).collect();
            let times: Vec<i64> = rows.iter().map(|r| events[r.1].0).collect();
            let costs: Vec<u64> = rows.iter().map(|r| events[r.1].1).collect();
            let passed: Vec<bool> = rows.iter().map(|r| events[r.1].2).collect();
            let own: Vec<bool> = rows.iter().map(|r| r.2).collect();
            let block_rows = BlockRows {
                blocks: &blocks, times: &times, costs: &costs, passed: &passed, own: &own,
            };
            let block_lines = stream_block_lines(settings, &block_rows).unwrap();
            let got: Value = serde_json::from_slice(&merge_stream(settings, &lines, &block_lines).unwrap()).unwrap();
            prop_assert_eq!(got, want);
        }
    }
}
