//! The smallest token bucket that loses nothing at a given rate, found in one pass.

use crate::units::rate::Rate;
use crate::units::time::Timestamp;

/// Finds, over events given in time order, the smallest capacity b with which a token
/// bucket at `rate`, starting full, passes every event.
///
/// Such a bucket passes all if and only if `j − i + 1 ≤ b + r·(t_j − t_i)` for every pair of
/// events `i ≤ j`. With `a_j = j/r − t_j`, the smallest b is `1 + ⌈r · max(a_j − a_i)⌉` over
/// `i ≤ j`, which a running minimum of `a_i` finds in one pass. Only the excess of `a_j` over
/// that minimum matters, and it follows a recursion that needs one multiplication an event:
/// `e_j = max(0, e_{j−1} + 1/r − (t_j − t_{j−1}))`. Here it is kept multiplied by N, so
/// that `1/r` is the whole number P and the answer is exact.
///
/// ```
/// use ratelimit_core::sizing::min_bucket::MinBucketFinder;
/// use ratelimit_core::units::time::Timestamp;
///
/// // Four events at 0, 1, 2 and 3 minutes, at 1 a minute: a bucket of 1 is enough; at 1
/// // an hour, the four need a bucket of 4.
/// let times: Vec<Timestamp> =
///     (0..4).map(|m| Timestamp::from_micros(m * 60_000_000).unwrap()).collect();
/// for (rate, need) in [("1/m", 1), ("1/h", 4)] {
///     let mut finder = MinBucketFinder::new(rate.parse()?);
///     times.iter().for_each(|&t| finder.push(t));
///     assert_eq!(finder.result().min_bucket, need);
/// }
/// # Ok::<(), ratelimit_core::units::rate::RateError>(())
/// ```
#[derive(Clone, Debug)]
pub struct MinBucketFinder {
    pub(super) p: i128,
    pub(super) n: i64,
    pub(super) rate: Rate,
    pub(super) events: u64,
    pub(super) last: i64,
    pub(super) excess: i128,
    /// c·P of the last event: what it added to the excess of the next.
    pub(super) spent: i128,
    pub(super) low_at: (u64, Timestamp),
    pub(super) worst: i128,
    pub(super) stretch: Option<Stretch>,
}

/// A run of consecutive events, from the `start` of its first to the `end` of its last.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Stretch {
    /// The time of the first event.
    pub start: Timestamp,
    /// The time of the last event.
    pub end: Timestamp,
    /// How many events it holds.
    pub events: u64,
}

/// The smallest lossless bucket for one rate, and a stretch of events that needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lossless {
    /// The rate.
    pub rate: Rate,
    /// The smallest lossless capacity; zero when there were no events.
    pub min_bucket: u64,
    /// A stretch of events that a bucket one smaller would not pass whole; `None` when
    /// there were no events.
    pub stretch: Option<Stretch>,
}

impl MinBucketFinder {
    /// Returns a tracker for `rate` with no events yet.
    pub fn new(rate: Rate) -> MinBucketFinder {
        MinBucketFinder {
            p: rate.p(),
            n: rate.n64(),
            rate,
            events: 0,
            last: i64::MIN,
            excess: 0,
            spent: 0,
            low_at: (0, Timestamp::EPOCH),
            worst: -1,
            stretch: None,
        }
    }

    /// Counts an event at `time`, which is no earlier than the last one.
    #[inline]
    pub fn push(&mut self, time: Timestamp) {
        self.push_cost(time, 1);
    }

    /// Counts an event at `time` that costs `cost` units (at most
    /// [`MAX_COST`](crate::limiter::MAX_COST)). Weighted, a bucket passes every event if
    /// and only if `c_i + … + c_j ≤ b + r·(t_j − t_i)` for every `i ≤ j`: the excess
    /// carried to the next event is `max(0, e + c·P − N·Δt)`, and the event needs
    /// `c·P + e` units, so `worst` keeps the largest `e + (c − 1)·P`. With costs of 1 it is
    /// the unweighted recursion exactly.
    #[inline]
    pub fn push_cost(&mut self, time: Timestamp, cost: u64) {
        let j = self.events;
        let now = time.as_micros();
        let spent = if cost == 1 { self.p } else { i128::from(cost) * self.p };
        // The first event starts with the minimum at itself.
        let excess = match j {
            0 => 0,
            // One 64 × 64 → 128-bit multiplication.
            _ => self.excess + self.spent - i128::from(self.n) * i128::from(now - self.last),
        };
        // `<= 0`: a new minimum, or one equal to the old; the latest gives the shortest
        // stretch.
        if excess <= 0 {
            self.excess = 0;
            self.low_at = (j, time);
        } else {
            self.excess = excess;
        }
        let need = self.excess + spent - self.p;
        if need > self.worst {
            self.worst = need;
            let (i, start) = self.low_at;
            self.stretch = Some(Stretch { start, end: time, events: j - i + 1 });
        }
        self.spent = spent;
        self.last = now;
        self.events += 1;
    }

    /// Returns the number of events counted so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Returns the smallest lossless bucket for the events so far.
    pub fn result(&self) -> Lossless {
        let min_bucket = whole_bucket(self.events, self.worst, self.p);
        Lossless { rate: self.rate, min_bucket, stretch: self.stretch }
    }
}

/// Returns the smallest whole bucket for `events` events whose largest excess is `worst`
/// units of 1/P token: ⌈worst / P⌉ tokens beyond the first, or 0 with no events.
pub fn whole_bucket(events: u64, worst: i128, p: i128) -> u64 {
    match events {
        0 => 0,
        // With events, the worst is at least −P (an event of cost 0 with no excess) and at
        // most the events' costs times P. Clamped at 0, the numerator is never negative (at
        // P = 1, −1 / 1 would be −1, where every other P rounds −1 / P to 0): the quotient
        // is at least 0 and a count of units. Saturating, for a worst merged from
        // summaries that were read back from text.
        _ => u64::try_from(worst.saturating_add(p - 1).max(0) / p)
            .map_or(u64::MAX, |units| units.saturating_add(1)),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::limiter::{Gcra, Limiter};
    use crate::units::time::Span;

    #[test]
    fn a_free_event_at_one_per_microsecond_needs_a_bucket_of_one_as_at_every_other_rate() {
        // One event of cost 0: its excess is −P, at P = 1 µs as at P = 1 s.
        assert_eq!(whole_bucket(1, -1, 1), 1);
        assert_eq!(whole_bucket(1, -1_000_000, 1_000_000), 1);
        // By hand: 3 units beyond the first at P = 1 need 3 more tokens; 2.5 need 3 too.
        assert_eq!(whole_bucket(4, 3, 1), 4);
        assert_eq!(whole_bucket(4, 5, 2), 4);
        assert_eq!(whole_bucket(0, 7, 1), 0);
    }

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_micros(secs * 1_000_000).unwrap()
    }

    fn lossless(rate: &str, secs: &[i64]) -> Lossless {
        let mut min = MinBucketFinder::new(rate.parse().unwrap());
        secs.iter().for_each(|&s| min.push(at(s)));
        min.result()
    }

    #[test]
    fn hand_computed_buckets() {
        // 1 per 10 s. Four events at once need 4 tokens.
        assert_eq!(lossless("1/10s", &[0, 0, 0, 0]).min_bucket, 4);
        // Events 10 s apart need only 1.
        assert_eq!(lossless("1/10s", &[0, 10, 20, 30]).min_bucket, 1);
        // Events 5 s apart: 4 events in 15 s, 1.5 tokens refilled, so 2.5 → 3 tokens.
        let found = lossless("1/10s", &[0, 5, 10, 15]);
        assert_eq!(found.min_bucket, 3);
        assert_eq!(found.stretch, Some(Stretch { start: at(0), end: at(15), events: 4 }));
        // The burst in the middle forces it, not the whole run.
        let found = lossless("1/h", &[0, 7_200, 7_201, 7_202, 20_000]);
        assert_eq!(found.min_bucket, 3);
        assert_eq!(found.stretch, Some(Stretch { start: at(7_200), end: at(7_202), events: 3 }));
    }

    #[test]
    fn no_events_need_no_bucket() {
        assert_eq!(
            lossless("5/h", &[]),
            Lossless { rate: "5/h".parse().unwrap(), min_bucket: 0, stretch: None }
        );
        assert_eq!(lossless("5/h", &[42]).min_bucket, 1);
    }

    fn drops(rate: Rate, burst: u64, times: &[Timestamp]) -> usize {
        let mut gcra = Gcra::new(rate, std::num::NonZeroU64::new(burst).unwrap());
        times.iter().filter(|&&t| !gcra.admit(t)).count()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn the_minimum_is_lossless_and_one_less_is_not(
            n in 1u64..6,
            p in 1i64..5_000,
            mut times in prop::collection::vec(-3_000i64..3_000, 1..60),
        ) {
            times.sort();
            let times: Vec<_> = times.iter().map(|&t| Timestamp::from_micros(t).unwrap()).collect();
            let rate = Rate::new(n, Span::from_micros(p).unwrap()).unwrap();
            let mut min = MinBucketFinder::new(rate);
            times.iter().for_each(|&t| min.push(t));
            let found = min.result();
            prop_assert_eq!(drops(rate, found.min_bucket, &times), 0);
            if found.min_bucket > 1 {
                prop_assert!(drops(rate, found.min_bucket - 1, &times) > 0);
            }
            // The stretch really needs the bucket: its events exceed b − 1 + r·span.
            let s = found.stretch.unwrap();
            let need = i128::from(s.events) * rate.p() - rate.n() * i128::from(s.end.since(s.start));
            prop_assert!(need > i128::from(found.min_bucket - 1) * rate.p());
        }

        #[test]
        fn the_weighted_minimum_is_lossless_and_one_less_is_not(
            n in 1u64..6,
            p in 1i64..5_000,
            mut events in prop::collection::vec((-3_000i64..3_000, 0u64..5), 1..50),
        ) {
            events.sort_by_key(|&(t, _)| t);
            let rate = Rate::new(n, Span::from_micros(p).unwrap()).unwrap();
            let at = |t: i64| Timestamp::from_micros(t).unwrap();
            let mut min = MinBucketFinder::new(rate);
            events.iter().for_each(|&(t, c)| min.push_cost(at(t), c));
            let need = min.result().min_bucket;
            let drops = |burst: u64| {
                let mut bucket =
                    crate::limiter::TokenBucket::new(rate, std::num::NonZeroU64::new(burst).unwrap());
                events.iter().filter(|&&(t, c)| !bucket.take(at(t), c, false).passed).count()
            };
            prop_assert_eq!(drops(need), 0, "a bucket of {} drops", need);
            if need > 1 {
                prop_assert!(drops(need - 1) > 0, "a bucket of {} is enough", need - 1);
            }
            // Many rates at once give the same, weighted or not.
            let mut many = crate::sizing::many_rates::MinBucketFinders::new(&[rate]);
            events.iter().for_each(|&(t, c)| many.push_cost(at(t), c));
            prop_assert_eq!(many.results()[0].min_bucket, need);
        }
    }
}
