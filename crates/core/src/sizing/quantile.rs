//! Shares and nearest-rank quantiles, exactly: what burst keeps 99% of the keys whole.

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

use foldhash::fast::FixedState;

/// A share of a whole, from just above 0 to 100%, kept as parts per million so that a
/// quantile's rank is found without rounding. Its text form is a percentage with up to four
/// decimals: `99%`, `99.9%`, `0.5%`, `100%` (the `%` may be left out).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Percent(u32);

/// Why a share could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("'{0}' is not a share above 0% and at most 100%, with at most 4 decimals, like 99%")]
pub struct PercentError(String);

impl Percent {
    /// The whole: 100%.
    pub const ALL: Percent = Percent(1_000_000);

    /// Returns the share of `ppm` parts per million, if it is above 0 and at most a million.
    pub fn from_ppm(ppm: u32) -> Option<Percent> {
        (1..=1_000_000).contains(&ppm).then_some(Percent(ppm))
    }

    /// Returns the share in parts per million.
    pub fn ppm(self) -> u32 {
        self.0
    }

    /// Returns the nearest rank of this share among `n` values, counted from 1: the
    /// smallest r with r/n ≥ share, that is ⌈share · n⌉; 0 for no values.
    pub fn rank(self, n: usize) -> usize {
        // Widening: a usize always fits in a u128.
        let n = n as u128;
        let rank = (u128::from(self.0) * n).div_ceil(1_000_000);
        // The rank is at most n, which is a usize.
        usize::try_from(rank).unwrap_or(usize::MAX)
    }
}

impl FromStr for Percent {
    type Err = PercentError;

    fn from_str(text: &str) -> Result<Percent, PercentError> {
        let fail = || PercentError(text.to_owned());
        let number = text.strip_suffix('%').unwrap_or(text);
        let ppm = crate::units::decimal::parse_exact(number.as_bytes(), 4).map_err(|_| fail())?;
        u32::try_from(ppm).ok().and_then(Percent::from_ppm).ok_or_else(fail)
    }
}

impl fmt::Display for Percent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (whole, rest) = (self.0 / 10_000, self.0 % 10_000);
        if rest == 0 {
            write!(f, "{whole}%")
        } else {
            let digits = format!("{rest:04}");
            write!(f, "{whole}.{}%", digits.trim_end_matches('0'))
        }
    }
}

#[cfg(feature = "schema")]
string_schema!(Percent, "description": "A share, as a percentage: 99%, 99.9%");

#[cfg(feature = "serde")]
impl serde::Serialize for Percent {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// The quantiles a report gives of a value across keys: the median, p90, p99, p99.9 and
/// the largest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Quantiles {
    /// The median.
    pub p50: u64,
    /// The 90th percentile.
    pub p90: u64,
    /// The 99th percentile.
    pub p99: u64,
    /// The 99.9th percentile.
    #[cfg_attr(feature = "serde", serde(rename = "p99.9"))]
    pub p99_9: u64,
    /// The largest.
    pub max: u64,
}

/// Values counted by size, each size with the weight its values carry: exact nearest-rank
/// quantiles in memory that grows with the distinct values, not with the values. Two
/// million keys needing buckets of a few sizes take a few entries, not two million.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Histogram {
    /// The tallies of the small values, which are most of them, by value.
    small: Vec<Tally>,
    sizes: HashMap<u64, Tally, FixedState>,
    count: u64,
    weight: u64,
}

/// How many values there are of one size, or at most one size, and the weight they carry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// How many values.
    pub count: u64,
    /// The sum of their weights.
    pub weight: u64,
}

impl Histogram {
    /// Returns a histogram of no values.
    pub fn new() -> Histogram {
        Histogram::default()
    }

    /// Counts a value carrying `weight`. Counts and weights are counts of events read, so
    /// they cannot pass a `u64`.
    #[inline]
    pub fn add(&mut self, value: u64, weight: u64) {
        self.add_tally(value, Tally { count: 1, weight });
    }

    /// Counts `tally.count` values of one size, carrying `tally.weight` in all.
    #[inline]
    pub fn add_tally(&mut self, value: u64, tally: Tally) {
        let mine = match usize::try_from(value) {
            Ok(small) if small < Histogram::SMALL => {
                if self.small.is_empty() {
                    self.small = vec![Tally::default(); Histogram::SMALL];
                }
                &mut self.small[small]
            }
            _ => self.sizes.entry(value).or_default(),
        };
        mine.count += tally.count;
        mine.weight += tally.weight;
        self.count += tally.count;
        self.weight += tally.weight;
    }

    /// Values below this are counted in an array rather than a map.
    const SMALL: usize = 64;

    /// Adds every value of another histogram.
    pub fn merge(&mut self, other: &Histogram) {
        for (value, tally) in other.sorted() {
            self.add_tally(value, tally);
        }
    }

    /// Returns how many values there are, and their whole weight.
    pub fn total(&self) -> Tally {
        Tally { count: self.count, weight: self.weight }
    }

    /// Returns the distinct values, smallest first, each with its tally.
    pub fn sorted(&self) -> Vec<(u64, Tally)> {
        let small = (0..).zip(self.small.iter().copied()).filter(|(_, t)| t.count > 0);
        let mut sizes: Vec<(u64, Tally)> = self.sizes.iter().map(|(&v, &t)| (v, t)).collect();
        sizes.sort_unstable_by_key(|&(value, _)| value);
        small.chain(sizes).collect()
    }

    /// Returns the nearest-rank quantile: the smallest value v such that at least `share`
    /// of the values are at most v. `None` for no values.
    pub fn quantile(&self, share: Percent) -> Option<u64> {
        rank_in(&self.sorted(), self.count, share)
    }

    /// Returns the values at most `value`, and their weight.
    pub fn at_most(&self, value: u64) -> Tally {
        let mut sum = Tally::default();
        for (_, tally) in self.sorted().iter().take_while(|&&(v, _)| v <= value) {
            sum.count += tally.count;
            sum.weight += tally.weight;
        }
        sum
    }

    /// Returns the quantiles a report gives; `None` for no values.
    pub fn quantiles(&self) -> Option<Quantiles> {
        let sorted = self.sorted();
        let at = |ppm| rank_in(&sorted, self.count, Percent(ppm));
        Some(Quantiles {
            p50: at(500_000)?,
            p90: at(900_000)?,
            p99: at(990_000)?,
            p99_9: at(999_000)?,
            max: sorted.last()?.0,
        })
    }
}

/// The value of nearest rank `share` among `count` values, sorted by size and counted.
fn rank_in(sorted: &[(u64, Tally)], count: u64, share: Percent) -> Option<u64> {
    let rank = u64::try_from(share.rank(usize::try_from(count).ok()?)).ok()?;
    let mut seen = 0;
    for &(value, tally) in sorted {
        seen += tally.count;
        if seen >= rank.max(1) {
            return Some(value);
        }
    }
    None
}

impl fmt::Display for Quantiles {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Quantiles { p50, p90, p99, p99_9, max } = self;
        write!(f, "p50 {p50}, p90 {p90}, p99 {p99}, p99.9 {p99_9}, max {max}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference the histogram is checked against, from every value sorted: the
    /// nearest-rank quantile, the smallest value v such that at least `share` of the values
    /// are at most v. `None` for no values.
    fn nearest_rank(sorted: &[u64], share: Percent) -> Option<u64> {
        let rank = share.rank(sorted.len());
        sorted.get(rank.checked_sub(1)?).copied()
    }

    impl Quantiles {
        /// Returns the quantiles of the values, by nearest rank; `None` for no values.
        fn of(mut values: Vec<u64>) -> Option<Quantiles> {
            values.sort_unstable();
            let at = |ppm| nearest_rank(&values, Percent(ppm));
            Some(Quantiles {
                p50: at(500_000)?,
                p90: at(900_000)?,
                p99: at(990_000)?,
                p99_9: at(999_000)?,
                max: *values.last()?,
            })
        }
    }

    #[test]
    fn shares_read_and_print() {
        for (text, ppm, printed) in [
            ("99%", 990_000, "99%"),
            ("99.9%", 999_000, "99.9%"),
            ("0.0001%", 1, "0.0001%"),
            ("100", 1_000_000, "100%"),
            ("50.25%", 502_500, "50.25%"),
        ] {
            let share: Percent = text.parse().unwrap();
            assert_eq!((share.ppm(), share.to_string()), (ppm, printed.to_owned()));
        }
        for bad in ["0%", "0", "100.0001%", "-5%", "99.12345%", "x", "", "%", "1e2%"] {
            assert!(bad.parse::<Percent>().is_err(), "{bad}");
        }
    }

    #[test]
    fn nearest_rank_by_hand() {
        // Ten values 1..=10: the median is the 5th, p90 the 9th, p99 and p99.9 the 10th.
        let values: Vec<u64> = (1..=10).collect();
        let q = Quantiles::of(values.clone()).unwrap();
        assert_eq!((q.p50, q.p90, q.p99, q.p99_9, q.max), (5, 9, 10, 10, 10));
        // 99% of 1000 is rank 990 exactly; one more value makes it ⌈990.99⌉ = 991.
        let thousand: Vec<u64> = (1..=1000).collect();
        assert_eq!(nearest_rank(&thousand, "99%".parse().unwrap()), Some(990));
        let more: Vec<u64> = (1..=1001).collect();
        assert_eq!(nearest_rank(&more, "99%".parse().unwrap()), Some(991));
        assert_eq!(nearest_rank(&[], Percent::ALL), None);
        assert_eq!(nearest_rank(&[7], "0.0001%".parse().unwrap()), Some(7));
    }

    proptest::proptest! {
        /// A histogram finds the same quantiles as sorting every value.
        #[test]
        fn a_histogram_ranks_as_a_sort_does(
            values in proptest::collection::vec(0u64..20, 0..300),
            ppm in 1u32..=1_000_000,
        ) {
            let mut histogram = Histogram::new();
            values.iter().for_each(|&v| histogram.add(v, v + 1));
            let share = Percent(ppm);
            let mut sorted = values.clone();
            sorted.sort_unstable();
            proptest::prop_assert_eq!(histogram.quantile(share), nearest_rank(&sorted, share));
            proptest::prop_assert_eq!(histogram.quantiles(), Quantiles::of(values.clone()));
            let at_most = values.iter().filter(|&&v| v <= 7);
            let want = Tally { count: at_most.clone().count() as u64, weight: at_most.map(|v| v + 1).sum() };
            proptest::prop_assert_eq!(histogram.at_most(7), want);
            // Counted in two halves and merged, the same histogram.
            let (mut first, mut second) = (Histogram::new(), Histogram::new());
            for (n, &v) in values.iter().enumerate() {
                if n % 2 == 0 { first.add(v, v + 1) } else { second.add(v, v + 1) }
            }
            first.merge(&second);
            proptest::prop_assert_eq!(first.sorted(), histogram.sorted());
            proptest::prop_assert_eq!(first.total(), histogram.total());
        }
    }
}
