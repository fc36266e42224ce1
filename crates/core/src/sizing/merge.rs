//! The smallest lossless bucket of one stream cut into time-ordered chunks: a summary of
//! four integers a chunk, and an associative merge that gives the one pass's answer.
//!
//! With `S_j` the running cost through event `j` (and `S_{i−1}` before event `i`), a bucket
//! of `b` at N per P passes every event if and only if `(S_j − S_{i−1})·P − N·(t_j − t_i) ≤
//! b·P` for every `i ≤ j`. Write `u_j = P·S_j − N·t_j` and `v_i = P·S_{i−1} − N·t_i`: the
//! answer turns on `W = max over i ≤ j of (u_j − v_i)`. A chunk keeps its total cost C, the
//! largest `u` (U), the smallest `v` (V) and its own W, each with where it is; chunk B after
//! chunk A shifts B's figures by `P·C_A`, and the pairs that span the cut are `U_B − V_A`.
//! The witnesses follow [`MinBucketFinder`](super::min_bucket::MinBucketFinder)'s ties: the earliest `j` that needs the most,
//! and for it the latest `i` where the running minimum is.

use super::min_bucket::{Lossless, Stretch, whole_bucket};
use crate::units::rate::Rate;
use crate::units::time::Timestamp;

/// A figure of a chunk and the event it is at: its number in the chunk, from 0, and time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct At {
    value: i128,
    index: u64,
    time: Timestamp,
}

impl At {
    /// The same figure as seen from `events` events and `shift` units earlier.
    fn later(self, events: u64, shift: i128) -> At {
        // Saturating: a summary read back from text may hold anything.
        At {
            value: self.value.saturating_add(shift),
            index: self.index.saturating_add(events),
            ..self
        }
    }
}

/// What a chunk of events in time order tells of the smallest lossless bucket at a rate:
/// enough to merge with the chunks before and after it.
///
/// ```
/// use ratelimit_core::sizing::merge::BucketSummary;
/// use ratelimit_core::sizing::min_bucket::MinBucketFinder;
/// use ratelimit_core::units::time::Timestamp;
///
/// let rate = "1/10s".parse()?;
/// let at = |s: i64| Timestamp::from_micros(s * 1_000_000).unwrap();
/// // Two chunks of a stream, summed up apart (as two machines would), then merged.
/// let (mut first, mut second) = (BucketSummary::new(rate), BucketSummary::new(rate));
/// [0, 5].iter().for_each(|&s| first.push_cost(at(s), 1));
/// [10, 15].iter().for_each(|&s| second.push_cost(at(s), 1));
/// let mut whole = MinBucketFinder::new(rate);
/// [0, 5, 10, 15].iter().for_each(|&s| whole.push(at(s)));
/// assert_eq!(first.merge(&second).result(), whole.result());
/// # Ok::<(), ratelimit_core::units::rate::RateError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BucketSummary {
    rate: Rate,
    /// The events in the chunk.
    events: u64,
    /// C: their total cost.
    cost: u128,
    /// U: the largest `u_j`, at the earliest `j` that has it.
    high: Option<At>,
    /// V: the smallest `v_i`, at the latest `i` that has it.
    low: Option<At>,
    /// W − P: the most any event needs beyond one token, in units of 1/P token, at the
    /// earliest `j`, with the latest `i` before it where `v` is least.
    worst: Option<(i128, At, At)>,
}

impl BucketSummary {
    /// Returns the summary of no events, at `rate`: what any summary merges with unchanged.
    pub fn new(rate: Rate) -> BucketSummary {
        BucketSummary { rate, events: 0, cost: 0, high: None, low: None, worst: None }
    }

    /// Returns the summary of one event at `time` that costs `cost`.
    pub fn one(rate: Rate, time: Timestamp, cost: u64) -> BucketSummary {
        let (p, n) = (rate.p(), rate.n());
        let spent = i128::from(cost) * p;
        let clock = n * i128::from(time.as_micros());
        let high = At { value: spent - clock, index: 0, time };
        let low = At { value: -clock, index: 0, time };
        let worst = Some((spent - p, low, high));
        BucketSummary {
            rate,
            events: 1,
            cost: u128::from(cost),
            high: Some(high),
            low: Some(low),
            worst,
        }
    }

    /// Adds an event at `time`, no earlier than the chunk's last, that costs `cost`.
    pub fn push_cost(&mut self, time: Timestamp, cost: u64) {
        *self = self.merge(&BucketSummary::one(self.rate, time, cost));
    }

    /// Returns the number of events summed up.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Returns the summary of this chunk followed by `later`, whose events are no earlier
    /// than this one's, at the same rate. Merging is associative: chunks merge in any
    /// grouping, so long as their order is kept.
    pub fn merge(&self, later: &BucketSummary) -> BucketSummary {
        // C_A·P, as B's figures are seen from A's start. A stream's costs times P fit in
        // i128 with room (10^10 events of MAX_COST at a period of years is about 10^37);
        // past that, the figures saturate rather than wrap.
        let shift = i128::try_from(self.cost).unwrap_or(i128::MAX).saturating_mul(self.rate.p());
        let moved = |at: Option<At>| at.map(|at| at.later(self.events, shift));
        let (high_b, low_b) = (moved(later.high), moved(later.low));
        // The earliest largest: A's on a tie.
        let high = match (self.high, high_b) {
            (Some(a), Some(b)) => Some(if b.value > a.value { b } else { a }),
            (a, b) => a.or(b),
        };
        // The latest smallest: B's on a tie.
        let low = match (self.low, low_b) {
            (Some(a), Some(b)) => Some(if b.value <= a.value { b } else { a }),
            (a, b) => a.or(b),
        };
        let p = self.rate.p();
        // B's own worst, with its i and j moved; and the pairs across the cut: the
        // earliest j where u is largest in B, and the latest i where v is least in A.
        let own_b = later
            .worst
            .map(|(w, i, j)| (w, i.later(self.events, shift), j.later(self.events, shift)));
        let across = match (self.low, high_b) {
            (Some(i), Some(j)) => Some((j.value.saturating_sub(i.value).saturating_sub(p), i, j)),
            _ => None,
        };
        // Of B's: the larger need, then the earlier j; on the same j, B's own i, which is
        // the later (a tie of v's there is a tie of needs).
        let in_b = match (own_b, across) {
            (Some(own), Some(cross)) => {
                Some(if cross.0 > own.0 || (cross.0 == own.0 && cross.2.index < own.2.index) {
                    cross
                } else {
                    own
                })
            }
            (own, cross) => own.or(cross),
        };
        // A's j comes before every j of B: A's on a tie.
        let worst = match (self.worst, in_b) {
            (Some(a), Some(b)) => Some(if b.0 > a.0 { b } else { a }),
            (a, b) => a.or(b),
        };
        BucketSummary {
            rate: self.rate,
            events: self.events.saturating_add(later.events),
            cost: self.cost.saturating_add(later.cost),
            high,
            low,
            worst,
        }
    }

    /// Returns the summary as one line of text, for a summary to go from where its chunk
    /// was read to where the chunks are merged: [`decode`](BucketSummary::decode) reads
    /// it back, at the same rate. Whole numbers only; `-` for a figure of no events.
    pub fn encode(&self) -> String {
        let at = |at: &At| format!("{} {} {}", at.value, at.index, at.time.as_micros());
        let or_none = |figure: Option<At>| figure.as_ref().map_or_else(|| "- - -".to_owned(), at);
        let worst = self.worst.as_ref().map_or_else(
            || "- - - - - - -".to_owned(),
            |(w, i, j)| format!("{w} {} {}", at(i), at(j)),
        );
        format!(
            "{} {} {} {} {}",
            self.events,
            self.cost,
            or_none(self.high),
            or_none(self.low),
            worst
        )
    }

    /// Reads a summary that [`encode`](BucketSummary::encode) wrote, at `rate`; `None` if
    /// the text is not one.
    pub fn decode(rate: Rate, text: &str) -> Option<BucketSummary> {
        let words: Vec<&str> = text.split(' ').collect();
        let [events, cost, rest @ ..] = &words[..] else { return None };
        let at = |w: &[&str]| -> Option<Option<At>> {
            match w {
                ["-", "-", "-"] => Some(None),
                [value, index, time] => Some(Some(At {
                    value: value.parse().ok()?,
                    index: index.parse().ok()?,
                    time: Timestamp::from_micros(time.parse().ok()?)?,
                })),
                _ => None,
            }
        };
        let [h0, h1, h2, l0, l1, l2, w, i0, i1, i2, j0, j1, j2] = rest else { return None };
        let worst = match (*w, at(&[i0, i1, i2])?, at(&[j0, j1, j2])?) {
            ("-", None, None) => None,
            (w, Some(i), Some(j)) => Some((w.parse().ok()?, i, j)),
            _ => return None,
        };
        Some(BucketSummary {
            rate,
            events: events.parse().ok()?,
            cost: cost.parse().ok()?,
            high: at(&[h0, h1, h2])?,
            low: at(&[l0, l1, l2])?,
            worst,
        })
    }

    /// Returns the smallest lossless bucket of the events summed up, and a stretch that
    /// needs it: what [`MinBucketFinder`](super::min_bucket::MinBucketFinder) finds in one
    /// pass over them.
    pub fn result(&self) -> Lossless {
        // The one pass starts its worst at −1: a need below it (an event of cost 0) names
        // no stretch.
        let (worst, stretch) = match self.worst {
            Some((worst, i, j)) if worst > -1 => {
                let events = j.index.saturating_sub(i.index).saturating_add(1);
                let stretch = Stretch { start: i.time, end: j.time, events };
                (worst, Some(stretch))
            }
            _ => (-1, None),
        };
        let min_bucket = whole_bucket(self.events, worst, self.rate.p());
        Lossless { rate: self.rate, min_bucket, stretch }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::sizing::min_bucket::MinBucketFinder;

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_micros(secs * 1_000_000).unwrap()
    }

    fn one_pass(rate: Rate, events: &[(i64, u64)]) -> Lossless {
        let mut finder = MinBucketFinder::new(rate);
        events.iter().for_each(|&(s, c)| finder.push_cost(at(s), c));
        finder.result()
    }

    fn summary(rate: Rate, events: &[(i64, u64)]) -> BucketSummary {
        let mut summary = BucketSummary::new(rate);
        events.iter().for_each(|&(s, c)| summary.push_cost(at(s), c));
        summary
    }

    #[test]
    fn a_burst_across_the_cut_is_found_from_both_sides() {
        // 1 per hour; the burst at 7,200–7,202 s is cut after its first event.
        let rate: Rate = "1/h".parse().unwrap();
        let events = [(0, 1), (7_200, 1), (7_201, 1), (7_202, 1), (20_000, 1)];
        let merged = summary(rate, &events[..2]).merge(&summary(rate, &events[2..]));
        let found = merged.result();
        assert_eq!(found.min_bucket, 3);
        assert_eq!(found.stretch, Some(Stretch { start: at(7_200), end: at(7_202), events: 3 }));
        assert_eq!(found, one_pass(rate, &events));
    }

    #[test]
    fn free_events_alone_name_no_stretch_as_the_one_pass_does() {
        let rate: Rate = "1/s".parse().unwrap();
        let events = [(0, 0), (0, 0), (1, 0)];
        let merged = summary(rate, &events[..1]).merge(&summary(rate, &events[1..]));
        assert_eq!(merged.result(), Lossless { rate, min_bucket: 1, stretch: None });
        assert_eq!(merged.result(), one_pass(rate, &events));
        assert_eq!(BucketSummary::new(rate).result(), one_pass(rate, &[]));
    }

    /// Events in time order, with ties and costs from 0, and cut points into them.
    fn stream() -> impl Strategy<Value = (Vec<(i64, u64)>, Vec<usize>, u64, u64)> {
        (
            prop::collection::vec((0i64..40, 0u64..4), 0..60),
            prop::collection::vec(0usize..61, 0..8),
            1u64..6,
            1u64..40,
        )
            .prop_map(|(mut events, cuts, n, p)| {
                let mut time = 0;
                for event in &mut events {
                    // Gaps of 0 make ties.
                    time += event.0 % 7;
                    event.0 = time;
                }
                (events, cuts, n, p)
            })
    }

    proptest! {
        #[test]
        fn merged_chunks_give_the_one_pass_answer_ties_and_witness_included(
            (events, mut cuts, n, p) in stream(),
        ) {
            let rate = Rate::new(n, crate::units::time::Span::from_micros(i64::try_from(p).unwrap() * 1_000_000).unwrap()).unwrap();
            cuts.iter_mut().for_each(|cut| *cut = (*cut).min(events.len()));
            cuts.sort_unstable();
            let mut chunks = Vec::new();
            let mut from = 0;
            for &cut in cuts.iter().chain([&events.len()]) {
                chunks.push(summary(rate, &events[from..cut]));
                from = cut;
            }
            let want = one_pass(rate, &events);
            // Left to right, as a driver takes partitions in order.
            let left = chunks.iter().fold(BucketSummary::new(rate), |done, next| done.merge(next));
            prop_assert_eq!(left.result(), want);
            // Right to left, and pairwise as a tree: the merge is associative.
            let right = chunks.iter().rev().fold(BucketSummary::new(rate), |done, earlier| earlier.merge(&done));
            prop_assert_eq!(right.result(), want);
            let level_copy = chunks.clone();
            let mut level = chunks;
            while level.len() > 1 {
                level = level.chunks(2).map(|pair| match pair {
                    [a, b] => a.merge(b),
                    [a] => a.clone(),
                    _ => unreachable!(),
                }).collect();
            }
            prop_assert_eq!(level.pop().unwrap_or_else(|| BucketSummary::new(rate)).result(), want);
            // Written out and read back, each summary is itself.
            for chunk in &level_copy {
                let read = BucketSummary::decode(rate, &chunk.encode());
                prop_assert_eq!(read.as_ref(), Some(chunk));
            }
        }
    }
}
