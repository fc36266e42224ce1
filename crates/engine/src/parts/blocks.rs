//! The busiest windows of events spread over machines, from blocks of time: block k holds
//! the events of its span and reads on a window's length into the next, so that every
//! window that starts in it is counted whole there; the blocks' lines, merged, give one
//! pass's busiest windows, ties and counts included.

use anyhow::{Result, anyhow, bail};
use serde::{Deserialize, Serialize};

use super::told::{self, Told};
use crate::limiter::promise::{Promise, PromiseCheck};
use crate::recorder::Settings;
use crate::report::{self, LimiterReport};
use crate::sizing::window::{Busiest, BusiestWindow};
use crate::units::time::{Span, Timestamp};

/// One block's events in time order, as [`block_lines`](super::block_lines) reads them.
pub struct BlockRows<'a> {
    /// Each row's block.
    pub blocks: &'a [i64],
    /// Each row's event time, in µs.
    pub times: &'a [i64],
    /// Each row's cost.
    pub costs: &'a [u64],
    /// Whether each row passed.
    pub passed: &'a [bool],
    /// Whether each row is its block's own, rather than read on from the next block.
    pub own: &'a [bool],
}

/// Returns [`block_lines`](super::block_lines)' lines for windows of `length` and a limiter that holds at
/// most `capacity` units; with `promise` (a check of no events), each line goes on with
/// what the check measures of the block's passed events: the most in one aligned window
/// and in any one period (the rows read on must cover a period).
pub(super) fn lines_of_blocks(
    rows: &BlockRows,
    length: Span,
    capacity: u64,
    promise: Option<&PromiseCheck>,
    layer: Option<usize>,
) -> Result<Vec<String>> {
    let n = rows.blocks.len();
    if [rows.times.len(), rows.costs.len(), rows.passed.len(), rows.own.len()] != [n; 4] {
        bail!("a block's columns must be as long as each other");
    }
    let mut lines = Vec::new();
    let mut at = 0;
    while at < n {
        let block = rows.blocks[at];
        let (mut demand, mut passed) = (BusiestWindow::new(length), BusiestWindow::new(length));
        let mut check = promise.cloned();
        let mut too_big = None;
        while at < n && rows.blocks[at] == block {
            let time = Timestamp::from_micros(rows.times[at])
                .ok_or_else(|| anyhow!("{} µs is past the years 0000-9999", rows.times[at]))?;
            let cost = rows.costs[at];
            demand.push_cost(time, cost);
            if rows.passed[at] {
                passed.push_cost(time, cost);
                if let Some(check) = &mut check {
                    check.passed(time, cost);
                }
            } else if rows.own[at] && cost > capacity && too_big.is_none() {
                too_big = Some((time.as_micros(), cost));
            }
            at += 1;
        }
        let line = BlockLine {
            layer,
            block,
            demand: Busy::of(&demand.busiest()),
            passed: Busy::of(&passed.busiest()),
            too_big,
            promise: check.map(|check| check.seen(None)).map(|seen| (seen.aligned, seen.period)),
        };
        lines.push(told::write(&line)?);
    }
    Ok(lines)
}

/// What a block tells: its busiest windows, of every event that starts in it and of the
/// passed ones, its first event too big to pass (µs, cost), and of one stream what the
/// promise measures of its passed events (the most in one aligned window, and in any one
/// period).
#[derive(Debug, Serialize, Deserialize)]
struct BlockLine {
    /// Of layers, the layer whose busiest windows (of its own length, of the events as it
    /// weighs them) these are.
    layer: Option<usize>,
    block: i64,
    demand: Option<Busy>,
    passed: Option<Busy>,
    too_big: Option<(i64, u64)>,
    promise: Option<(u64, u64)>,
}

impl Told for BlockLine {
    const KIND: &'static str = "block";
}

/// A busiest window: its start (µs), its units and its events.
#[derive(Debug, Serialize, Deserialize)]
struct Busy {
    start: i64,
    units: u128,
    events: u64,
}

impl Busy {
    /// The busiest window found, if any.
    fn of(busiest: &Busiest) -> Option<Busy> {
        let start = busiest.start?.as_micros();
        Some(Busy { start, units: busiest.units, events: busiest.count })
    }
}

/// The blocks' lines merged: the busiest windows, the earliest of the busiest, and the
/// first event too big to pass.
#[derive(Default)]
pub(super) struct Blocks {
    pub(super) demand: Best,
    pub(super) passed: Best,
    /// The first too big: its block, time and cost.
    pub(super) too_big: Option<(i64, Timestamp, u64)>,
    /// Of the passed events, the most in one aligned window and in any one period, if
    /// the lines say.
    pub(super) aligned: u64,
    pub(super) period: u64,
}

/// The busiest window of the blocks so far: the most units, then the earliest start, then
/// the most events (zero-cost events in the same window).
#[derive(Default)]
pub(super) struct Best(Option<(u128, Timestamp, u64)>);

impl Best {
    fn offer(&mut self, units: u128, start: Timestamp, events: u64) {
        let better = self.0.is_none_or(|(u, s, e)| {
            units > u || (units == u && (start < s || (start == s && events > e)))
        });
        if better {
            self.0 = Some((units, start, events));
        }
    }

    pub(super) fn busiest(&self, length: Span) -> Busiest {
        match self.0 {
            Some((units, start, count)) => Busiest { length, start: Some(start), count, units },
            None => Busiest { length, start: None, count: 0, units: 0 },
        }
    }
}

/// What every part of a replay of one limiter adds up to, before the blocks: its events
/// and their units, those passed, whether any event cost other than 1, and the events too
/// big to pass with the first of them (its time and cost).
pub(super) struct Counted {
    pub(super) events: u64,
    pub(super) passed: u64,
    pub(super) units: u128,
    pub(super) passed_units: u128,
    pub(super) weighted: bool,
    pub(super) too_big: Option<(u64, Timestamp, u64)>,
}

impl Counted {
    /// Returns the report of a limiter with `settings` over every part, as the program
    /// gives it, from what they add up to and the busiest windows of the `merged` blocks,
    /// keeping `promise` and `min_bucket` (with keys, the worst key's); its worst key,
    /// queue and keys are the caller's to give (none here).
    pub(super) fn report(
        self,
        settings: Settings,
        merged: &Blocks,
        (min_bucket, promise): (u64, Promise),
    ) -> LimiterReport {
        let Settings { algorithm, rate, burst, window, .. } = settings;
        let weighted = self.weighted;
        LimiterReport {
            input: "<DataFrame>".to_owned(),
            key: None,
            algorithm,
            rate,
            burst: algorithm.shown_burst(burst),
            delay: settings.shown_delay(),
            events: self.events,
            passed: self.passed,
            dropped: self.events.saturating_sub(self.passed),
            units: weighted.then(|| report::Units {
                events: self.units,
                passed: self.passed_units,
                dropped: self.units.saturating_sub(self.passed_units),
            }),
            too_big: self.too_big.filter(|_| weighted).map(|(events, time, cost)| report::TooBig {
                events,
                first: report::Heavy { time, cost },
            }),
            busiest_window: report::Window::of(merged.passed.busiest(window), weighted),
            demand_busiest_window: report::Window::of(merged.demand.busiest(window), weighted),
            min_bucket,
            worst_key: None,
            system_size: None,
            not_accounted: None,
            queue: None,
            promise,
            fleet: None,
            by_key: None,
        }
    }
}

impl Blocks {
    /// Reads every block's line of `layer` (of one limit: `None`), as
    /// [`block_lines`](super::block_lines) writes them, from any parts in any order.
    pub(super) fn of_lines(lines: &[String], layer: Option<usize>) -> Result<Blocks> {
        let mut merged = Blocks::default();
        for line in lines {
            let told: BlockLine = told::read(line)?;
            if told.layer == layer {
                merged.add(told)?;
            }
        }
        Ok(merged)
    }

    /// Adds a block's line.
    fn add(&mut self, told: BlockLine) -> Result<()> {
        let time = |micros: i64| {
            Timestamp::from_micros(micros)
                .ok_or_else(|| anyhow!("{micros} µs is past the years 0000-9999"))
        };
        if let Some((aligned, period)) = told.promise {
            self.aligned = self.aligned.max(aligned);
            self.period = self.period.max(period);
        }
        for (best, busy) in [(&mut self.demand, told.demand), (&mut self.passed, told.passed)] {
            if let Some(Busy { start, units, events }) = busy {
                best.offer(units, time(start)?, events);
            }
        }
        if let Some((t, c)) = told.too_big
            && self.too_big.is_none_or(|(b, _, _)| told.block < b)
        {
            self.too_big = Some((told.block, time(t)?, c));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// The busiest windows and the first event too big, merged from blocks of any
        /// width that each read on a window's length into the next, are one pass's over
        /// every event, ties and counts included.
        #[test]
        fn blocks_merge_into_the_busiest_windows_of_one_pass(
            steps in prop::collection::vec((0i64..=6, 0u64..=3, any::<bool>()), 1..200),
            length in 1i64..=12,
            wider in 0i64..=20,
        ) {
            let times: Vec<i64> = steps.iter().scan(1_000, |t, s| { *t += s.0; Some(*t) }).collect();
            let (length, width) = (Span::from_micros(length).unwrap(), length + wider);
            let capacity = 2;
            let first = times[0];
            // Each event in its block, and again as read on by the block before.
            let mut rows: Vec<(i64, usize, bool)> = Vec::new();
            for (n, &t) in times.iter().enumerate() {
                let block = (t - first) / width;
                rows.push((block, n, true));
                if (t - first) % width < length.as_micros() && block > 0 {
                    rows.push((block - 1, n, false));
                }
            }
            rows.sort_by_key(|&(block, n, _)| (block, n));
            let at = |f: &dyn Fn(usize) -> i64| rows.iter().map(|r| f(r.1)).collect::<Vec<i64>>();
            let blocks: Vec<i64> = rows.iter().map(|r| r.0).collect();
            let times_of = at(&|n| times[n]);
            let costs: Vec<u64> = rows.iter().map(|r| steps[r.1].1).collect();
            let passed: Vec<bool> = rows.iter().map(|r| steps[r.1].2).collect();
            let own: Vec<bool> = rows.iter().map(|r| r.2).collect();
            let block_rows = BlockRows { blocks: &blocks, times: &times_of, costs: &costs, passed: &passed, own: &own };
            let lines = lines_of_blocks(&block_rows, length, capacity, None, None).unwrap();
            let merged = Blocks::of_lines(&lines, None).unwrap();
            // One pass, in time order.
            let (mut demand, mut kept) = (BusiestWindow::new(length), BusiestWindow::new(length));
            let mut too_big = None;
            for (&t, &(_, cost, pass)) in times.iter().zip(&steps) {
                let t = Timestamp::from_micros(t).unwrap();
                demand.push_cost(t, cost);
                if pass {
                    kept.push_cost(t, cost);
                } else if cost > capacity {
                    too_big = too_big.or(Some((t, cost)));
                }
            }
            prop_assert_eq!(merged.demand.busiest(length), demand.busiest());
            prop_assert_eq!(merged.passed.busiest(length), kept.busiest());
            prop_assert_eq!(merged.too_big.map(|(_, t, c)| (t, c)), too_big);
        }
    }
}
