//! A filter on an event's time: `--since` and `--until`.

use crate::units::time::Timestamp;

/// Keeps the events at or after a time (`Since`), or before one (`Until`): a range of
/// times is half-open, as every window here is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeFilter {
    /// Keeps events at or after this time.
    Since(Timestamp),
    /// Keeps events before this time.
    Until(Timestamp),
}

impl TimeFilter {
    /// Returns whether an event at `time` is kept.
    #[inline]
    pub fn keeps(self, time: Timestamp) -> bool {
        match self {
            TimeFilter::Since(since) => time >= since,
            TimeFilter::Until(until) => time < until,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_is_half_open() {
        let at = |s: i64| Timestamp::from_micros(s * 1_000_000).unwrap();
        assert!(TimeFilter::Since(at(10)).keeps(at(10)));
        assert!(!TimeFilter::Since(at(10)).keeps(at(9)));
        assert!(TimeFilter::Until(at(10)).keeps(at(9)));
        assert!(!TimeFilter::Until(at(10)).keeps(at(10)));
    }
}
