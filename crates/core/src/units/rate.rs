//! Rates as a whole number of events per period, such as `5/h` or `1/30s`.

use std::fmt;
use std::num::NonZeroU64;
use std::str::FromStr;

use crate::units::time::{Span, SpanError};

/// A rate of `count` events per `period`, kept as two integers so that no decision
/// made with it depends on rounding.
///
/// Its text form is `N/UNIT` or `N/MULTIPLE UNIT` without the space: `5/h`, `100/s`,
/// `1/30s`, `10/15m`. `Display` writes the period in its largest exact unit, so `5/60m`
/// is written `5/h`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rate {
    count: NonZeroU64,
    period: Span,
}

impl Rate {
    /// The largest count a rate may have. With it, and with timestamps held to the years
    /// 0000–9999, every product the limiters form fits in an `i128` with room to spare.
    pub const MAX_COUNT: u64 = 1_000_000_000_000;

    /// Returns the rate of `count` events per `period`, if both are positive and the count
    /// is at most [`Rate::MAX_COUNT`].
    pub fn new(count: u64, period: Span) -> Result<Rate, RateError> {
        let Some(count) = NonZeroU64::new(count) else { return Err(RateError::ZeroCount) };
        if count.get() > Rate::MAX_COUNT {
            return Err(RateError::CountOverMax);
        }
        if period.is_zero() {
            return Err(RateError::ZeroPeriod);
        }
        Ok(Rate { count, period })
    }

    /// Returns the number of events allowed per period, N.
    pub fn count(self) -> u64 {
        self.count.get()
    }

    /// Returns N, which is never zero: the burst of a bucket that holds one period.
    pub fn count_nonzero(self) -> NonZeroU64 {
        self.count
    }

    /// Returns the period, P.
    pub fn period(self) -> Span {
        self.period
    }

    /// Returns N as an `i128`, ready for exact cross-multiplication.
    pub fn n(self) -> i128 {
        i128::from(self.count.get())
    }

    /// Returns N as an `i64`.
    pub fn n64(self) -> i64 {
        // N is at most MAX_COUNT, 10^12, far below i64::MAX.
        #[allow(clippy::cast_possible_wrap)]
        let n = self.count.get() as i64;
        n
    }

    /// Returns P in microseconds as an `i128`, ready for exact cross-multiplication.
    pub fn p(self) -> i128 {
        i128::from(self.period.as_micros())
    }
}

/// Why a rate, or a range of rates, could not be read or made.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RateError {
    /// The text is not `N/UNIT`.
    #[error("'{0}' is not a rate like 5/h, 100/s or 1/30s")]
    Malformed(String),
    /// The text has a minus sign.
    #[error("rates cannot be negative: '{0}'")]
    Negative(String),
    /// The count does not fit in 64 bits.
    #[error("the count in '{0}' is too large")]
    CountTooLarge(String),
    /// The period does not fit in 64 bits of microseconds.
    #[error("the period in '{0}' is too long")]
    PeriodTooLong(String),
    /// A count of zero.
    #[error("a rate must allow at least one event per period")]
    ZeroCount,
    /// nginx's `r` with a period nginx does not write (`10r/h`): the rate meant, as this
    /// program writes it.
    #[error("'{0}' is not a rate: nginx writes N r/s or N r/m only; for {1} write '{1}'")]
    NotNginx(String, String),
    /// A count over [`Rate::MAX_COUNT`].
    #[error("a rate may count at most {} events per period", Rate::MAX_COUNT)]
    CountOverMax,
    /// A period of zero.
    #[error("a rate's period must be longer than zero")]
    ZeroPeriod,
    /// A rate that cannot be made, with the text it was read from.
    #[error("{reason}: '{text}'")]
    Invalid {
        /// Why.
        reason: Box<RateError>,
        /// The text.
        text: String,
    },
    /// A range whose ends or step have different periods.
    #[error("the rates in range '{0}' have different periods; write them all per the same period")]
    MixedPeriods(String),
    /// A range that ends below its start.
    #[error("range '{0}' is empty: it ends below where it starts")]
    EmptyRange(String),
    /// A range of more than [`MAX_RANGE`] rates.
    #[error("range '{text}' holds {len} rates; at most {MAX_RANGE} are allowed")]
    RangeTooLong {
        /// The range's text.
        text: String,
        /// How many rates it holds.
        len: u64,
    },
}

impl FromStr for Rate {
    type Err = RateError;

    fn from_str(text: &str) -> Result<Rate, RateError> {
        let malformed = || RateError::Malformed(text.to_owned());
        let (count, period) = text.split_once('/').ok_or_else(malformed)?;
        // nginx's notation, `10r/s` and `30r/m`: its only periods.
        let count = match count.strip_suffix('r') {
            Some(count) if matches!(period, "s" | "m") => count,
            // The notation misapplied: say what it would mean as ours, if that is a rate.
            Some(count)
                if !count.is_empty() && format!("{count}/{period}").parse::<Rate>().is_ok() =>
            {
                return Err(RateError::NotNginx(text.to_owned(), format!("{count}/{period}")));
            }
            _ => count,
        };
        if count.starts_with('-') || period.starts_with('-') {
            return Err(RateError::Negative(text.to_owned()));
        }
        if count.is_empty() || !count.bytes().all(|b| b.is_ascii_digit()) {
            return Err(malformed());
        }
        let count = count.parse::<u64>().map_err(|_| RateError::CountTooLarge(text.to_owned()))?;
        let period = if period.starts_with(|c: char| c.is_ascii_digit()) {
            period.parse::<Span>()
        } else {
            format!("1{period}").parse::<Span>()
        }
        .map_err(|e| match e {
            SpanError::TooLong => RateError::PeriodTooLong(text.to_owned()),
            _ => malformed(),
        })?;
        Rate::new(count, period)
            .map_err(|e| RateError::Invalid { reason: Box::new(e), text: text.to_owned() })
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
pub fn parse_rates(text: &str) -> Result<Vec<Rate>, RateError> {
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
        return Err(RateError::MixedPeriods(text.to_owned()));
    }
    let (from_count, to_count) = (from.count(), to.count());
    if to_count < from_count {
        return Err(RateError::EmptyRange(text.to_owned()));
    }
    let step = step.map_or(1, Rate::count);
    let len = (to_count - from_count) / step + 1;
    // Widening: MAX_RANGE is 100 000.
    if len > MAX_RANGE as u64 {
        return Err(RateError::RangeTooLong { text: text.to_owned(), len });
    }
    // Every rate in the range lies between two valid rates' counts, so all are valid.
    (0..len).map(|k| Rate::new(from_count + k * step, period)).collect()
}

#[cfg(feature = "schema")]
string_schema!(Rate, "description": "A rate: N events per period, as 5/h or 1/30s");

#[cfg(feature = "serde")]
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
    fn nginx_writes_a_rate_as_n_r_per_second_or_minute() {
        assert_eq!("10r/s".parse::<Rate>().unwrap().to_string(), "10/s");
        assert_eq!("30r/m".parse::<Rate>().unwrap(), "30/m".parse::<Rate>().unwrap());
        // Only those two: nginx has no other, and an `r` is nowhere else.
        assert_eq!(
            "10r/h".parse::<Rate>().unwrap_err().to_string(),
            "'10r/h' is not a rate: nginx writes N r/s or N r/m only; for 10/h write '10/h'"
        );
        assert!("10r/2s".parse::<Rate>().is_err());
        assert!("r/s".parse::<Rate>().is_err());
        assert_eq!(parse_rates("1r/s..3r/s").unwrap().len(), 3);
    }

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
