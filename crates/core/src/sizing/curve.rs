//! The whole burst–rate curve: the burst a lossless token bucket needs at every rate.
//!
//! At rate r, a bucket starting full loses nothing if and only if its capacity is at least
//! b(r) = max over i ≤ j of (c_i + … + c_j) − r·(t_j − t_i), where c is each event's cost
//! (1 when events are counted). Each stretch of events i..j is a line in r, so b is their
//! upper envelope: convex, piecewise linear and falling. Its pieces are found by divide and
//! conquer: the best stretch lies in the left half, in the right half, or crosses the
//! middle, and the crossing ones come from two convex hulls of the cumulative cost, one per
//! half, walked together. Each level is linear, so the whole is O(n log n). Every
//! comparison is between exact fractions, in 128-bit integers.

use std::cmp::Ordering;

use crate::sizing::min_bucket::{Stretch, whole_bucket};
use crate::units::time::{Span, Timestamp};

/// A stretch of consecutive events, from index `first` to `last`, that costs `units` and
/// spans `span` microseconds. At rate r it needs a burst of `units − r·span`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Line {
    /// What its events cost together: how many they are, when each costs 1.
    pub units: i64,
    /// From its first event's time to its last's, in microseconds.
    pub span: i64,
    /// The index of its first event.
    pub first: usize,
    /// The index of its last event.
    pub last: usize,
}

/// The units before each event: its index when each costs 1, else the sum of the costs
/// before it.
#[derive(Clone, Copy, Debug)]
enum Before<'a> {
    Index,
    Sum(&'a [i64]),
}

impl Before<'_> {
    #[inline]
    fn at(self, k: usize) -> i64 {
        match self {
            Before::Index => count(k),
            Before::Sum(sums) => sums[k],
        }
    }
}

/// A rate as an exact fraction: `events` per `micros` microseconds. Zero is `0/1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExactRate {
    /// The numerator, events.
    pub events: i64,
    /// The denominator, microseconds; positive.
    pub micros: i64,
}

impl ExactRate {
    /// Zero events per microsecond.
    pub const ZERO: ExactRate = ExactRate { events: 0, micros: 1 };

    /// Returns `events / micros` in lowest terms; `micros` must be positive.
    pub fn new(events: i64, micros: i64) -> ExactRate {
        // Both are counts or spans, never negative, so the divisor is at most i64::MAX.
        #[allow(clippy::cast_possible_wrap)]
        let g = gcd(events.unsigned_abs(), micros.unsigned_abs()).max(1) as i64;
        ExactRate { events: events / g, micros: micros / g }
    }

    /// Returns the rate in events per hour, for display.
    pub fn per_hour(self) -> f64 {
        self.events as f64 * 3.6e9 / self.micros as f64
    }
}

/// Writes the rate as events per a period that `--rate` reads back, the period as the sum
/// of its units: `7/2d15h49m44s13ms`; zero is `0`.
impl std::fmt::Display for ExactRate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ExactRate { events, micros } = *self;
        match Span::from_micros(micros) {
            Some(span) if events != 0 => write!(f, "{events}/{}", span.compact()),
            _ => f.write_str("0"),
        }
    }
}

#[cfg(feature = "schema")]
string_schema!(ExactRate, "description": "An exact rate: N events per period, as 74/3h, or 0");

#[cfg(feature = "serde")]
impl serde::Serialize for ExactRate {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl Ord for ExactRate {
    fn cmp(&self, other: &ExactRate) -> Ordering {
        (i128::from(self.events) * i128::from(other.micros))
            .cmp(&(i128::from(other.events) * i128::from(self.micros)))
    }
}

impl PartialOrd for ExactRate {
    fn partial_cmp(&self, other: &ExactRate) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// The greatest common divisor of `a` and `b`.
pub(crate) fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// The curve: its lines in order of rising rate, and where each takes over.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Curve {
    /// The lines that form the curve, each the maximum on its own range of rates; the
    /// first from rate zero.
    pub lines: Vec<Line>,
    /// `starts[m]` is the rate from which `lines[m]` is the maximum; `starts[0]` is zero.
    pub starts: Vec<ExactRate>,
}

impl Curve {
    /// Computes the curve of events at `times`, which must be sorted, each of cost 1.
    pub fn new(times: &[Timestamp]) -> Curve {
        Curve::solved(times, Before::Index)
    }

    /// Computes the curve of events at `times`, which must be sorted, each costing as
    /// `costs` says (one per time). It is `None` if the costs sum past `i64::MAX`.
    pub fn weighted(times: &[Timestamp], costs: &[u64]) -> Option<Curve> {
        let mut sums = Vec::with_capacity(costs.len() + 1);
        sums.push(0i64);
        for &cost in costs {
            let sum = sums[sums.len() - 1].checked_add(i64::try_from(cost).ok()?)?;
            sums.push(sum);
        }
        Some(Curve::solved(times, Before::Sum(&sums)))
    }

    fn solved(times: &[Timestamp], before: Before) -> Curve {
        let t: Vec<i64> = times.iter().map(|t| t.as_micros()).collect();
        let lines = if t.is_empty() { Vec::new() } else { solve(&t, before, 0, t.len()) };
        Curve::of_lines(lines)
    }

    /// Returns the curve whose lines are `lines`, each the maximum on its own range of
    /// rates, in order of rising rate.
    pub(super) fn of_lines(lines: Vec<Line>) -> Curve {
        let starts = (0..lines.len())
            .map(|m| if m == 0 { ExactRate::ZERO } else { takeover(&lines[m - 1], &lines[m]) })
            .collect();
        Curve { lines, starts }
    }

    /// Returns a line's stretch of `times`: its first and last time and its events.
    pub fn stretch(line: &Line, times: &[Timestamp]) -> Stretch {
        let events = u64::try_from(line.last - line.first + 1).expect("a usize fits in a u64");
        Stretch { start: times[line.first], end: times[line.last], events }
    }

    /// Returns the smallest whole burst that loses nothing at `events` per `micros`
    /// microseconds: ⌈b(r)⌉, or 0 with no events.
    pub fn min_bucket(&self, events: i64, micros: i64) -> u64 {
        let (n, p) = (i128::from(events), i128::from(micros));
        let need =
            self.lines.iter().map(|l| i128::from(l.units) * p - n * i128::from(l.span)).max();
        // The single events alone need one token: need ≥ P.
        need.map_or(0, |need| whole_bucket(1, need - p, p))
    }

    /// Returns the smallest rate at which a bucket of `burst` loses nothing, with the
    /// line that forces it; a rate of zero (with no line) means the bucket holds every
    /// event. If no rate will do, because events that share one instant cost more than
    /// `burst`, the error is those events' line.
    pub fn min_rate(&self, burst: u64) -> Result<(ExactRate, Option<Line>), Line> {
        let mut best = (ExactRate::ZERO, None);
        // No stretch holds more than i64::MAX events: a larger bucket holds them all.
        let Ok(burst) = i64::try_from(burst) else { return Ok(best) };
        for &line in self.lines.iter().filter(|l| l.units > burst) {
            if line.span == 0 {
                return Err(line);
            }
            let rate = ExactRate::new(line.units - burst, line.span);
            if rate > best.0 {
                best = (rate, Some(line));
            }
        }
        Ok(best)
    }
}

/// A count of events of a slice, as an i64.
fn count(n: usize) -> i64 {
    // A slice holds at most isize::MAX elements.
    #[allow(clippy::cast_possible_wrap)]
    let n = n as i64;
    n
}

/// The rate at which `later` (the shorter stretch) overtakes `earlier`.
pub(super) fn takeover(earlier: &Line, later: &Line) -> ExactRate {
    ExactRate::new(earlier.units - later.units, earlier.span - later.span)
}

/// Returns the upper envelope of all stretches within `t[lo..hi]`, lines in order of
/// rising rate (falling span, and falling units).
fn solve(t: &[i64], before: Before, lo: usize, hi: usize) -> Vec<Line> {
    if hi - lo == 1 {
        let units = before.at(hi) - before.at(lo);
        return vec![Line { units, span: 0, first: lo, last: lo }];
    }
    let mid = lo + (hi - lo) / 2;
    let left = solve(t, before, lo, mid);
    let right = solve(t, before, mid, hi);
    let cross = crossing(t, before, lo, mid, hi);
    // All three come sorted, so merging them keeps each level linear.
    envelope(merge(merge(left, right), cross))
}

/// Merges two lists of lines sorted by falling span, for equal spans by falling units,
/// then by rising first event and falling last: of stretches alike, the one that starts
/// first leads, with every event of no cost at its ends, whatever the divide and conquer
/// made them of.
pub(super) fn merge(a: Vec<Line>, b: Vec<Line>) -> Vec<Line> {
    let key = |x: &Line| (x.span, x.units, std::cmp::Reverse(x.first), x.last);
    let first = |x: &Line, y: &Line| key(x) >= key(y);
    let mut merged = Vec::with_capacity(a.len() + b.len());
    let (mut a, mut b) = (a.into_iter().peekable(), b.into_iter().peekable());
    loop {
        let next = match (a.peek(), b.peek()) {
            (Some(x), Some(y)) if first(x, y) => a.next(),
            (Some(_), Some(_)) => b.next(),
            (Some(_), None) => a.next(),
            (None, _) => b.next(),
        };
        match next {
            Some(line) => merged.push(line),
            None => return merged,
        }
    }
}

/// Keeps the lines that are the maximum somewhere on rates r ≥ 0. `lines` are sorted by
/// falling span, the most units first among equal spans.
pub(super) fn envelope(lines: Vec<Line>) -> Vec<Line> {
    let mut hull: Vec<Line> = Vec::with_capacity(lines.len());
    for line in lines {
        if hull.last().is_some_and(|top| top.span == line.span) {
            continue;
        }
        while let Some(&top) = hull.last() {
            let gone = match hull.len() {
                // The first line holds from rate zero unless the new one is as high there.
                1 => line.units >= top.units,
                len => takeover(&hull[len - 2], &line) <= takeover(&hull[len - 2], &top),
            };
            if !gone {
                break;
            }
            hull.pop();
        }
        hull.push(line);
    }
    hull
}

/// The best stretches that start in `t[lo..mid]` and end in `t[mid..hi]`, as lines in
/// order of rising rate.
///
/// A crossing stretch i..j needs `(S_{j+1} − r·t_j) + (r·t_i − S_i)`, where S_k is the
/// units before event k: the best end maximizes the first term and the best start the
/// second, independently. Each is the support of a convex hull of the points (t, S), so
/// both are walked in order of rising rate.
fn crossing(t: &[i64], before: Before, lo: usize, mid: usize, hi: usize) -> Vec<Line> {
    // Ends: from the last event, moving earlier as the rate rises. An earlier end e takes
    // over from a later one l at r = (S_{l+1} − S_{e+1})/(t_l − t_e).
    let ends = hull((mid..hi).rev().map(|j| Point { index: j, t: t[j], units: before.at(j + 1) }));
    // Starts: from the first event, moving later as the rate rises; a later start s takes
    // over from an earlier one e at r = (S_s − S_e)/(t_s − t_e).
    let starts = hull((lo..mid).map(|i| Point { index: i, t: t[i], units: before.at(i) }));
    crossing_of(&starts, &ends)
}

/// The best stretches from a start on `starts`' hull to an end on `ends`', every start
/// before every end, as lines in order of rising rate: both hulls walked together.
pub(super) fn crossing_of(starts: &[(Point, ExactRate)], ends: &[(Point, ExactRate)]) -> Vec<Line> {
    let (mut a, mut b) = (0, 0);
    let mut lines = Vec::with_capacity(ends.len() + starts.len());
    loop {
        let (i, j) = (starts[a].0, ends[b].0);
        lines.push(Line {
            units: j.units - i.units,
            span: j.t - i.t,
            first: i.index,
            last: j.index,
        });
        match (starts.get(a + 1), ends.get(b + 1)) {
            (None, None) => break,
            (Some(_), None) => a += 1,
            (None, Some(_)) => b += 1,
            (Some(s), Some(e)) => match s.1.cmp(&e.1) {
                Ordering::Less => a += 1,
                Ordering::Greater => b += 1,
                Ordering::Equal => (a, b) = (a + 1, b + 1),
            },
        }
    }
    lines
}

/// A point a hull is made of: an event, by its index, its time in µs, and a height in
/// units (the units before it, for a start; up to and with it, for an end).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Point {
    pub(super) index: usize,
    pub(super) t: i64,
    pub(super) units: i64,
}

/// Walks points in the given order (away from the one that is best at rate zero) and
/// keeps those that are best for some rate, each with the rate from which it is; a point's
/// height never falls with its index. Walking only the points of two hulls, one after the
/// other, gives the hull of all their points.
pub(super) fn hull(order: impl Iterator<Item = Point>) -> Vec<(Point, ExactRate)> {
    let rate = |from: Point, to: Point| {
        ExactRate::new((from.units - to.units).abs(), (from.t - to.t).abs())
    };
    let mut hull: Vec<(Point, ExactRate)> = Vec::new();
    for k in order {
        match hull.last() {
            None => {
                hull.push((k, ExactRate::ZERO));
                continue;
            }
            // At the same time as the last kept, it is never better.
            Some(&(last, _)) if last.t == k.t => continue,
            Some(_) => {}
        }
        while hull.len() >= 2 {
            let (last, since) = hull[hull.len() - 1];
            if rate(last, k) > since {
                break;
            }
            hull.pop();
        }
        let (last, _) = hull[hull.len() - 1];
        hull.push((k, rate(last, k)));
    }
    hull
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::sizing::min_bucket::MinBucketFinder;
    use crate::units::rate::Rate;
    use crate::units::time::Span;

    fn at(micros: &[i64]) -> Vec<Timestamp> {
        micros.iter().map(|&m| Timestamp::from_micros(m).unwrap()).collect()
    }

    /// The curve by brute force: the best line for every stretch of consecutive events,
    /// each costing as `costs` says.
    fn brute(t: &[i64], costs: &[u64], events: i64, micros: i64) -> i128 {
        let mut best = i128::MIN;
        for i in 0..t.len() {
            for j in i..t.len() {
                let units: u64 = costs[i..=j].iter().sum();
                let need = i128::from(units) * i128::from(micros)
                    - i128::from(events) * i128::from(t[j] - t[i]);
                best = best.max(need);
            }
        }
        best
    }

    #[test]
    fn a_hand_computed_curve() {
        // Events at 0, 0, 10, 20, 100 s. At r = 0 all five are needed. The stretch 0–20 s
        // (4 events, 20 s) takes over at r = (5 − 4)/(100 − 20 s) = 1/80 s; the two at 0 s
        // (2 events, no span) at r = (4 − 2)/20 s = 1/10 s.
        let curve = Curve::new(&at(&[0, 0, 10_000_000, 20_000_000, 100_000_000]));
        let summary: Vec<(i64, i64)> = curve.lines.iter().map(|l| (l.units, l.span)).collect();
        assert_eq!(summary, [(5, 100_000_000), (4, 20_000_000), (2, 0)]);
        assert_eq!(
            curve.starts,
            [ExactRate::ZERO, ExactRate::new(1, 80_000_000), ExactRate::new(1, 10_000_000)]
        );
        assert_eq!(curve.min_bucket(1, 10_000_000), 2);
        assert_eq!(curve.min_bucket(1, 100_000_000), 4);
        assert_eq!(curve.min_rate(3), Ok((ExactRate::new(1, 20_000_000), Some(curve.lines[1]))));
        assert_eq!(curve.min_rate(1), Err(curve.lines[2]), "two events at one instant need 2");
        assert_eq!(curve.min_rate(5), Ok((ExactRate::ZERO, None)));
    }

    #[test]
    fn a_hand_computed_weighted_curve() {
        // Costs 3, 1, 4 at 0, 10, 20 s. At r = 0 all 8 units are needed; the last event
        // alone (4 units, no span) takes over at r = (8 − 4)/20 s = 1/5 s: the stretch of
        // the last two (5 units, 10 s) never leads, as (8 − 5)/10 s > 1/5 s.
        let times = at(&[0, 10_000_000, 20_000_000]);
        let curve = Curve::weighted(&times, &[3, 1, 4]).unwrap();
        let summary: Vec<(i64, i64, usize, usize)> =
            curve.lines.iter().map(|l| (l.units, l.span, l.first, l.last)).collect();
        assert_eq!(summary, [(8, 20_000_000, 0, 2), (4, 0, 2, 2)]);
        assert_eq!(curve.starts, [ExactRate::ZERO, ExactRate::new(1, 5_000_000)]);
        assert_eq!(Curve::stretch(&curve.lines[1], &times).events, 1);
        assert_eq!(curve.min_rate(3), Err(curve.lines[1]), "4 units at one instant need 4");
        assert!(Curve::weighted(&times, &[u64::MAX, 1, 1]).is_none(), "past i64::MAX");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        #[test]
        fn matches_brute_force_and_the_one_pass_minimum(
            mut t in prop::collection::vec(0i64..200, 1..70),
            rates in prop::collection::vec((1i64..9, 1i64..60), 1..8),
        ) {
            t.sort();
            let times = at(&t);
            let curve = Curve::new(&times);
            prop_assert!(curve.starts.windows(2).all(|w| w[0] < w[1]), "breakpoints rise");
            for (n, p) in rates {
                let brute = brute(&t, &vec![1; t.len()], n, p);
                let need = curve.lines.iter().map(|l| i128::from(l.units) * i128::from(p) - i128::from(n) * i128::from(l.span)).max().unwrap();
                prop_assert_eq!(need, brute);
                let mut one_pass = MinBucketFinder::new(Rate::new(u64::try_from(n).unwrap(), Span::from_micros(p).unwrap()).unwrap());
                times.iter().for_each(|&x| one_pass.push(x));
                prop_assert_eq!(curve.min_bucket(n, p), one_pass.result().min_bucket);
            }
            // Each line is the maximum right after it takes over.
            for (m, line) in curve.lines.iter().enumerate() {
                let r = curve.starts[m];
                let (n, p) = (r.events * 1_000 + 1, r.micros * 1_000);
                let best = curve.lines.iter().map(|l| i128::from(l.units) * i128::from(p) - i128::from(n) * i128::from(l.span)).max().unwrap();
                let own = i128::from(line.units) * i128::from(p) - i128::from(n) * i128::from(line.span);
                prop_assert_eq!(own, best, "line {} at {:?}", m, r);
            }
        }

        #[test]
        fn weighted_matches_brute_force_and_the_one_pass_minimum(
            mut events in prop::collection::vec((0i64..200, 0u64..6), 1..60),
            rates in prop::collection::vec((1i64..9, 1i64..60), 1..6),
        ) {
            events.sort_by_key(|&(t, _)| t);
            let (t, costs): (Vec<i64>, Vec<u64>) = events.iter().copied().unzip();
            let times = at(&t);
            let curve = Curve::weighted(&times, &costs).unwrap();
            prop_assert!(curve.starts.windows(2).all(|w| w[0] < w[1]), "breakpoints rise");
            for line in &curve.lines {
                let units: u64 = costs[line.first..=line.last].iter().sum();
                prop_assert_eq!(i64::try_from(units).unwrap(), line.units, "a line's units are its events' costs");
                prop_assert_eq!(line.span, t[line.last] - t[line.first]);
            }
            for (n, p) in rates {
                let need = curve.lines.iter().map(|l| i128::from(l.units) * i128::from(p) - i128::from(n) * i128::from(l.span)).max().unwrap();
                prop_assert_eq!(need, brute(&t, &costs, n, p));
                let mut one_pass = MinBucketFinder::new(Rate::new(u64::try_from(n).unwrap(), Span::from_micros(p).unwrap()).unwrap());
                events.iter().for_each(|&(x, c)| one_pass.push_cost(at(&[x])[0], c));
                prop_assert_eq!(curve.min_bucket(n, p), one_pass.result().min_bucket);
            }
        }

        #[test]
        fn min_rate_is_exactly_where_the_curve_meets_the_burst(
            mut t in prop::collection::vec(0i64..200, 1..60),
            burst in 1u64..8,
        ) {
            t.sort();
            let curve = Curve::new(&at(&t));
            let multiplicity = t.chunk_by(|a, b| a == b).map(<[i64]>::len).max().unwrap() as u64;
            match curve.min_rate(burst) {
                Err(_) => prop_assert!(multiplicity > burst),
                Ok((rate, _)) if rate == ExactRate::ZERO => prop_assert!(t.len() as u64 <= burst),
                Ok((rate, _)) => {
                    prop_assert_eq!(curve.min_bucket(rate.events, rate.micros), burst.max(1));
                    // A millionth slower needs more.
                    let (n, p) = (rate.events * 1_000_000 - 1, rate.micros * 1_000_000);
                    prop_assert!(curve.min_bucket(n, p) > burst);
                }
            }
        }
    }
}
