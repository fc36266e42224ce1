//! The burst–rate curve of a stream from its chunks: each chunk's curve and its two hulls,
//! merged in time order by the top level of [`Curve`]'s divide and conquer.

use std::collections::BTreeMap;

use super::curve::{Curve, Line, Point, crossing_of, envelope, hull, merge};
use super::min_bucket::Stretch;
use crate::units::time::Timestamp;

/// What a chunk of a stream (its events in time order) tells of the whole curve: its own
/// curve, the upper hull of its ends (t_j, S_{j+1}) and the lower hull of its starts
/// (t_i, S_i), S counting the units before an event. Chunks merge in time order, in any
/// grouping: the merge of the chunks of a stream is the stream's own [`Curve`], ties
/// and the stretches it names included.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CurveSummary {
    /// How many events, and what they cost together.
    events: usize,
    units: i64,
    /// The curve, its lines naming events by their index in the stream.
    lines: Vec<Line>,
    /// The hulls' points: the ends from the last event moving earlier, the starts from the
    /// first moving later.
    ends: Vec<Point>,
    starts: Vec<Point>,
    /// The time of each event a line starts or ends at.
    times: BTreeMap<usize, i64>,
}

impl CurveSummary {
    /// Returns the summary of a chunk of events at `times` (sorted), each costing as
    /// `costs` says (1 each if `None`); `None` if the costs sum past `i64::MAX`.
    pub fn of(times: &[Timestamp], costs: Option<&[u64]>) -> Option<CurveSummary> {
        let curve = match costs {
            None => Curve::new(times),
            Some(costs) => Curve::weighted(times, costs)?,
        };
        let mut before = Vec::with_capacity(times.len() + 1);
        before.push(0i64);
        for n in 0..times.len() {
            let cost = costs.map_or(Some(1), |c| i64::try_from(c[n]).ok())?;
            before.push(before[n].checked_add(cost)?);
        }
        let t: Vec<i64> = times.iter().map(|t| t.as_micros()).collect();
        let point = |index: usize, units: i64| Point { index, t: t[index], units };
        let ends = hull((0..t.len()).rev().map(|j| point(j, before[j + 1])));
        let starts = hull((0..t.len()).map(|i| point(i, before[i])));
        let mut summary = CurveSummary {
            events: t.len(),
            units: before[t.len()],
            ends: ends.into_iter().map(|(p, _)| p).collect(),
            starts: starts.into_iter().map(|(p, _)| p).collect(),
            lines: curve.lines,
            times: BTreeMap::new(),
        };
        summary.times = summary.named(|index| t.get(index).copied());
        Some(summary)
    }

    /// Returns the summary of this chunk followed by `later`, the chunk that comes right
    /// after it; `None` if their units sum past `i64::MAX` (or their events past `usize`).
    pub fn merge(&self, later: &CurveSummary) -> Option<CurveSummary> {
        if self.events == 0 {
            return Some(later.clone());
        }
        if later.events == 0 {
            return Some(self.clone());
        }
        // The later chunk's events come after this one's: their indices and the units
        // before them move on by this chunk's.
        let shift = |p: &Point| -> Option<Point> {
            Some(Point {
                index: p.index.checked_add(self.events)?,
                t: p.t,
                units: p.units.checked_add(self.units)?,
            })
        };
        let later_ends: Vec<Point> = later.ends.iter().map(shift).collect::<Option<_>>()?;
        let later_starts: Vec<Point> = later.starts.iter().map(shift).collect::<Option<_>>()?;
        let later_lines = (later.lines.iter()).map(|l| Line {
            first: l.first.saturating_add(self.events),
            last: l.last.saturating_add(self.events),
            ..*l
        });
        // The top level of the divide and conquer: the best stretch lies in one chunk, or
        // starts in this one and ends in the later.
        let cross =
            crossing_of(&hull(self.starts.iter().copied()), &hull(later_ends.iter().copied()));
        let lines = envelope(merge(merge(self.lines.clone(), later_lines.collect()), cross));
        let ends = hull(later_ends.iter().chain(&self.ends).copied());
        let starts = hull(self.starts.iter().chain(&later_starts).copied());
        let mut known: BTreeMap<usize, i64> = self.times.clone();
        known.extend(later.times.iter().map(|(&index, &t)| (index.saturating_add(self.events), t)));
        let points = self.ends.iter().chain(&self.starts).chain(&later_ends).chain(&later_starts);
        known.extend(points.map(|p| (p.index, p.t)));
        let mut merged = CurveSummary {
            events: self.events.checked_add(later.events)?,
            units: self.units.checked_add(later.units)?,
            lines,
            ends: ends.into_iter().map(|(p, _)| p).collect(),
            starts: starts.into_iter().map(|(p, _)| p).collect(),
            times: BTreeMap::new(),
        };
        merged.times = merged.named(|index| known.get(&index).copied());
        Some(merged)
    }

    /// The times of the events its lines name, from `time_of`.
    fn named(&self, time_of: impl Fn(usize) -> Option<i64>) -> BTreeMap<usize, i64> {
        let named = self.lines.iter().flat_map(|l| [l.first, l.last]);
        named.filter_map(|index| Some((index, time_of(index)?))).collect()
    }

    /// Returns the curve of every event summed up.
    pub fn curve(&self) -> Curve {
        Curve::of_lines(self.lines.clone())
    }

    /// Returns a line's stretch: its first and last event's time and its events.
    pub fn stretch(&self, line: &Line) -> Option<Stretch> {
        let time = |index| self.times.get(&index).copied().and_then(Timestamp::from_micros);
        let events = u64::try_from(line.last.checked_sub(line.first)? + 1).ok()?;
        Some(Stretch { start: time(line.first)?, end: time(line.last)?, events })
    }

    /// Writes the summary as one line of decimal numbers.
    pub fn encode(&self) -> String {
        let mut words = vec![self.events.to_string(), self.units.to_string()];
        words.push(self.lines.len().to_string());
        for l in &self.lines {
            words.extend([l.units, l.span].map(|n| n.to_string()));
            words.extend([l.first, l.last].map(|n| n.to_string()));
        }
        for points in [&self.ends, &self.starts] {
            words.push(points.len().to_string());
            for p in points.iter() {
                words.extend([p.index.to_string(), p.t.to_string(), p.units.to_string()]);
            }
        }
        words.push(self.times.len().to_string());
        for (index, t) in &self.times {
            words.extend([index.to_string(), t.to_string()]);
        }
        words.join(" ")
    }

    /// Reads what [`encode`](CurveSummary::encode) wrote; `None` if it is not a summary.
    pub fn decode(text: &str) -> Option<CurveSummary> {
        let mut words = text.split(' ');
        let mut number = || words.next()?.parse::<i64>().ok();
        let index = |n: i64| usize::try_from(n).ok();
        let (events, units) = (index(number()?)?, number()?);
        let lines = (0..index(number()?)?)
            .map(|_| {
                let (units, span) = (number()?, number()?);
                Some(Line { units, span, first: index(number()?)?, last: index(number()?)? })
            })
            .collect::<Option<Vec<_>>>()?;
        let mut points = || -> Option<Vec<Point>> {
            (0..index(number()?)?)
                .map(|_| Some(Point { index: index(number()?)?, t: number()?, units: number()? }))
                .collect()
        };
        let (ends, starts) = (points()?, points()?);
        let times = (0..index(number()?)?)
            .map(|_| Some((index(number()?)?, number()?)))
            .collect::<Option<BTreeMap<_, _>>>()?;
        // Every event it names is one of its own, and a stretch runs forwards.
        let lines_hold = lines.iter().all(|l| l.first <= l.last && l.last < events);
        let points_hold = ends.iter().chain(&starts).all(|p| p.index < events);
        let times_hold = times.keys().all(|&index| index < events);
        if words.next().is_some() || !(lines_hold && points_hold && times_hold) {
            return None;
        }
        Some(CurveSummary { events, units, lines, ends, starts, times })
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn at(micros: &[i64]) -> Vec<Timestamp> {
        micros.iter().map(|&m| Timestamp::from_micros(m).unwrap()).collect()
    }

    #[test]
    fn a_summary_read_back_names_only_its_own_events_and_stretches_that_run_forwards() {
        let chunk = CurveSummary::of(&at(&[0, 5, 5, 9]), None).unwrap();
        let text = chunk.encode();
        assert_eq!(CurveSummary::decode(&text), Some(chunk));
        // 4 events, 1 unit, a line of one event at index 7: past the chunk's events.
        assert_eq!(CurveSummary::decode("4 4 1 1 0 7 7 0 0 0"), None);
        // A line from event 2 back to event 1.
        assert_eq!(CurveSummary::decode("4 4 1 1 0 2 1 0 0 0"), None);
        assert_eq!(CurveSummary::decode(&format!("{text} 1")), None, "words left over");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Chunks of a stream, summed up and merged in order in any grouping (encoded and
        /// read back between), give the one pass's curve: its lines, the rates where each
        /// takes over, and the stretch each names.
        #[test]
        fn chunks_merge_into_the_curve_of_one_pass(
            steps in prop::collection::vec((0i64..=30, 0u64..=4), 1..80),
            cuts in prop::collection::vec(0usize..80, 0..6),
            weighted in any::<bool>(),
            left_first in any::<bool>(),
        ) {
            let t: Vec<i64> = steps.iter().scan(0, |t, s| { *t += s.0; Some(*t) }).collect();
            let costs: Vec<u64> = steps.iter().map(|s| if weighted { s.1 } else { 1 }).collect();
            let times = at(&t);
            let one = match weighted {
                true => Curve::weighted(&times, &costs).unwrap(),
                false => Curve::new(&times),
            };
            let mut bounds: Vec<usize> = cuts.into_iter().filter(|&c| c < t.len()).collect();
            bounds.extend([0, t.len()]);
            bounds.sort_unstable();
            bounds.dedup();
            let chunks: Vec<CurveSummary> = bounds
                .windows(2)
                .map(|w| {
                    let costs = weighted.then(|| &costs[w[0]..w[1]]);
                    let chunk = CurveSummary::of(&times[w[0]..w[1]], costs).unwrap();
                    CurveSummary::decode(&chunk.encode()).unwrap()
                })
                .collect();
            // Merged left to right, or the later pairs first: the merge is associative.
            let whole = if left_first {
                chunks.iter().skip(1).fold(chunks[0].clone(), |a, b| a.merge(b).unwrap())
            } else {
                chunks.iter().rev().skip(1).fold(chunks[chunks.len() - 1].clone(), |b, a| a.merge(&b).unwrap())
            };
            let curve = whole.curve();
            prop_assert_eq!(&curve, &one);
            for line in &curve.lines {
                prop_assert_eq!(whole.stretch(line), Some(Curve::stretch(line, &times)));
            }
        }
    }
}
