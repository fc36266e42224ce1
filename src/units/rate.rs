//! Rates as a whole number of events per period, such as `5/h` or `1/30s`.

use std::fmt;
use std::str::FromStr;

use anyhow::{anyhow, bail};

use crate::units::time::{Span, SpanError};

/// A rate of `count` events per `period`, kept as two integers so that no decision
/// made with it depends on rounding.
///
/// Its text form is `N/UNIT` or `N/MULTIPLE UNIT` without the space: `5/h`, `100/s`,
/// `1/30s`, `10/15m`. `Display` writes the period in its largest exact unit, so `5/60m`
/// is written `5/h`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rate {
    count: u64,
    period: Span,
}

impl Rate {
    /// The largest count a rate may have. With it, and with timestamps held to the years
    /// 0000–9999, every product the limiters form fits in an `i128` with room to spare.
    pub const MAX_COUNT: u64 = 1_000_000_000_000;

    /// Returns the rate of `count` events per `period`, if both are positive and the count
    /// is at most [`Rate::MAX_COUNT`].
    pub fn new(count: u64, period: Span) -> anyhow::Result<Rate> {
        if count == 0 {
            bail!("a rate must allow at least one event per period");
        }
        if count > Rate::MAX_COUNT {
            bail!("a rate may count at most {} events per period", Rate::MAX_COUNT);
        }
        if period.is_zero() {
            bail!("a rate's period must be longer than zero");
        }
        Ok(Rate { count, period })
    }

    /// Returns the number of events allowed per period, N.
    pub fn count(self) -> u64 {
        self.count
    }

    /// Returns the period, P.
    pub fn period(self) -> Span {
        self.period
    }

    /// Returns N as an `i128`, ready for exact cross-multiplication.
    pub fn n(self) -> i128 {
        i128::from(self.count)
    }

    /// Returns N as an `i64`.
    pub fn n64(self) -> i64 {
        // N is at most MAX_COUNT, 10^12, far below i64::MAX.
        #[allow(clippy::cast_possible_wrap)]
        let n = self.count as i64;
        n
    }

    /// Returns P in microseconds as an `i128`, ready for exact cross-multiplication.
    pub fn p(self) -> i128 {
        i128::from(self.period.as_micros())
    }
}

impl FromStr for Rate {
    type Err = anyhow::Error;

    fn from_str(text: &str) -> anyhow::Result<Rate> {
        let malformed = || anyhow!("'{text}' is not a rate like 5/h, 100/s or 1/30s");
        let (count, period) = text.split_once('/').ok_or_else(malformed)?;
        if count.starts_with('-') || period.starts_with('-') {
            bail!("rates cannot be negative: '{text}'");
        }
        if count.is_empty() || !count.bytes().all(|b| b.is_ascii_digit()) {
            return Err(malformed());
        }
        let count =
            count.parse::<u64>().map_err(|_| anyhow!("the count in '{text}' is too large"))?;
        let period = if period.starts_with(|c: char| c.is_ascii_digit()) {
            period.parse::<Span>()
        } else {
            format!("1{period}").parse::<Span>()
        }
        .map_err(|e| match e {
            SpanError::TooLong => anyhow!("the period in '{text}' is too long"),
            _ => malformed(),
        })?;
        Rate::new(count, period).map_err(|e| anyhow!("{e}: '{text}'"))
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/", self.count)?;
        self.period.fmt_unit(f, true)
    }
}

/// The most rates a range may expand to.
pub const MAX_RANGE: usize = 100_000;

/// Reads a rate, or a range of rates with one period: `1/h..20/h` (a step of one event
/// per period) or `1/h..20/h:2/h`.
pub fn parse_rates(text: &str) -> anyhow::Result<Vec<Rate>> {
    let Some((from, rest)) = text.split_once("..") else {
        return Ok(vec![text.parse()?]);
    };
    let (to, step) = match rest.split_once(':') {
        Some((to, step)) => (to, Some(step)),
        None => (rest, None),
    };
    let (from, to): (Rate, Rate) = (from.parse()?, to.parse()?);
    let step: Option<Rate> = step.map(str::parse).transpose()?;
    let period = from.period;
    if to.period != period || step.is_some_and(|s| s.period != period) {
        bail!(
            "the rates in range '{text}' have different periods; write them all per the same period"
        );
    }
    if to.count < from.count {
        bail!("range '{text}' is empty: it ends below where it starts");
    }
    let step = step.map_or(1, |s| s.count);
    let len = (to.count - from.count) / step + 1;
    if len > MAX_RANGE as u64 {
        bail!("range '{text}' holds {len} rates; at most {MAX_RANGE} are allowed");
    }
    Ok((0..len).map(|k| Rate { count: from.count + k * step, period }).collect())
}

impl serde::Serialize for Rate {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::time::MICROS_PER_SEC;

    #[test]
    fn ranges_expand_to_each_rate() {
        let texts =
            |t: &str| parse_rates(t).unwrap().iter().map(Rate::to_string).collect::<Vec<_>>();
        assert_eq!(texts("5/h"), ["5/h"]);
        assert_eq!(texts("1/h..4/h"), ["1/h", "2/h", "3/h", "4/h"]);
        assert_eq!(texts("1/h..20/h:5/h"), ["1/h", "6/h", "11/h", "16/h"]);
        assert_eq!(texts("2/60m..3/h"), ["2/h", "3/h"]);
        assert_eq!(texts("7/h..7/h"), ["7/h"]);
    }

    #[test]
    fn bad_ranges() {
        for (bad, says) in [
            ("20/h..1/h", "is empty"),
            ("1/h..20/m", "different periods"),
            ("1/h..20/h:1/m", "different periods"),
            ("1/h..2000000/h", "at most 100000"),
            ("1/h..x", "not a rate"),
            ("1/h..20/h:0/h", "at least one event"),
        ] {
            let err = parse_rates(bad).unwrap_err().to_string();
            assert!(err.contains(says), "{bad}: {err}");
        }
    }

    fn rate(text: &str) -> Rate {
        text.parse().unwrap()
    }

    #[test]
    fn reads_counts_units_and_multiples() {
        let hour = 3_600 * MICROS_PER_SEC;
        assert_eq!((rate("5/h").count(), rate("5/h").period().as_micros()), (5, hour));
        assert_eq!(rate("100/s").period().as_micros(), MICROS_PER_SEC);
        assert_eq!(rate("1/30s").period().as_micros(), 30 * MICROS_PER_SEC);
        assert_eq!(rate("10/15m"), rate("10/15min"));
        assert_eq!(rate("3/d").period().as_micros(), 24 * hour);
        assert_eq!(rate("7/ms").period().as_micros(), 1_000);
    }

    #[test]
    fn prints_the_period_in_its_largest_exact_unit() {
        for (given, printed) in [
            ("5/h", "5/h"),
            ("5/60m", "5/h"),
            ("1/30s", "1/30s"),
            ("10/15min", "10/15m"),
            ("2/90m", "2/90m"),
            ("1/1000ms", "1/s"),
        ] {
            assert_eq!(rate(given).to_string(), printed);
        }
    }

    #[test]
    fn refuses_zero_negative_malformed_and_overflowing_rates() {
        for (bad, says) in [
            ("0/h", "at least one event"),
            ("-5/h", "negative"),
            ("5/-1h", "negative"),
            ("5/0s", "longer than zero"),
            ("5", "not a rate"),
            ("5/", "not a rate"),
            ("/h", "not a rate"),
            ("5/hour", "not a rate"),
            ("5.5/h", "not a rate"),
            ("5/h/2", "not a rate"),
            ("99999999999999999999/h", "too large"),
            ("1000000000001/h", "at most"),
            ("1/99999999999999d", "too long"),
        ] {
            let err = bad.parse::<Rate>().unwrap_err().to_string();
            assert!(err.contains(says), "{bad}: {err}");
        }
    }
}
