//! Times as catalogs write them: RFC 3339, dates and Unix epoch numbers, read exactly.
//!
//! The instants themselves, and how they are written, are the core's
//! ([`ratelimit_core::units::time`]); reading text is the readers' part.

use std::fmt;

use chrono::{DateTime, NaiveDate};

pub use ratelimit_core::units::time::*;

use crate::units::decimal;

/// Reads a timestamp in the given format. Fractions finer than a microsecond are rounded
/// down, the only rounding ratelimit ever does to a time.
pub fn parse(text: &[u8], format: TimeFormat) -> Result<Timestamp, TimeError> {
    let micros = match format {
        TimeFormat::Rfc3339 => parse_rfc3339(text)?,
        // The scale is the number of decimal digits from the unit down to a microsecond.
        TimeFormat::UnixS => unix(text, 6)?,
        TimeFormat::UnixMs => unix(text, 3)?,
        TimeFormat::UnixUs => unix(text, 0)?,
    };
    Timestamp::from_micros(micros).ok_or(TimeError::OutOfRange)
}

/// Reads an RFC 3339 time such as `2025-07-29T23:24:00Z`, or a date such as `2025-07-29`,
/// which means its midnight in UTC.
pub fn rfc3339(text: &str) -> Result<Timestamp, TimeError> {
    parse(text.as_bytes(), TimeFormat::Rfc3339)
}

/// Reads a decimal count of epoch units, a unit being 10^scale microseconds.
fn unix(text: &[u8], scale: u32) -> Result<i64, TimeError> {
    match decimal::parse_floor(text, scale) {
        Ok(micros) => Ok(micros),
        Err(decimal::DecimalError::Overflow) => Err(TimeError::OutOfRange),
        Err(_) => Err(TimeError::Unix),
    }
}

fn parse_rfc3339(text: &[u8]) -> Result<i64, TimeError> {
    if let Some(micros) = parse_canonical(text) {
        return Ok(micros);
    }
    let text = std::str::from_utf8(text).map_err(|_| TimeError::Rfc3339)?;
    // ISO 8601's basic offsets (+0530, +05) are read as RFC 3339's extended one, +05:30.
    let extended = extended_offset(text);
    let time = DateTime::parse_from_rfc3339(text)
        .or_else(|e| extended.as_deref().map_or(Err(e), DateTime::parse_from_rfc3339));
    if let Ok(time) = time {
        let secs = time.timestamp();
        // A leap second (:60) arrives as 1_000_000_000 or more nanoseconds; it is
        // counted as the first instant of the next second.
        let micros = i64::from(time.timestamp_subsec_nanos() / 1_000);
        return secs
            .checked_mul(MICROS_PER_SEC)
            .and_then(|s| s.checked_add(micros))
            .ok_or(TimeError::OutOfRange);
    }
    if let Ok(date) = NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        let midnight = date.and_time(chrono::NaiveTime::MIN).and_utc();
        return midnight.timestamp().checked_mul(MICROS_PER_SEC).ok_or(TimeError::OutOfRange);
    }
    Err(TimeError::Rfc3339)
}

/// Returns `text` with an ISO 8601 basic offset at its end (`+hhmm` or `+hh`, after the
/// time of day) written as RFC 3339's extended one, `+hh:mm`; `None` if it has none.
fn extended_offset(text: &str) -> Option<String> {
    // The sign comes after "YYYY-MM-DDTHH:MM:SS", whose own '-' come before.
    let sign = text.rfind(['+', '-']).filter(|&i| i >= 19)?;
    let (time, digits) = (&text[..sign + 1], &text[sign + 1..]);
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    match digits.len() {
        4 => Some(format!("{time}{}:{}", &digits[..2], &digits[2..])),
        2 => Some(format!("{time}{digits}:00")),
        _ => None,
    }
}

/// Reads the form nearly every catalog writes, `YYYY-MM-DDTHH:MM:SS[.fraction]Z`, in a few
/// integer steps: it is the hot path of reading. Anything else (offsets, a space, a leap
/// second, a bad date) returns `None` and goes to chrono, and a test checks that the two
/// agree.
fn parse_canonical(text: &[u8]) -> Option<i64> {
    let (head, tail) = text.split_at_checked(19)?;
    let digits = |range: std::ops::Range<usize>| -> Option<i64> {
        head[range]
            .iter()
            .try_fold(0i64, |n, &b| b.is_ascii_digit().then(|| n * 10 + i64::from(b - b'0')))
    };
    if head[4] != b'-'
        || head[7] != b'-'
        || head[10] != b'T'
        || head[13] != b':'
        || head[16] != b':'
    {
        return None;
    }
    let (year, month, day) = (digits(0..4)?, digits(5..7)?, digits(8..10)?);
    let (hour, minute, second) = (digits(11..13)?, digits(14..16)?, digits(17..19)?);
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let month_days = [31, if leap { 29 } else { 28 }, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    let days_in = |month: i64| usize::try_from(month - 1).ok().and_then(|m| month_days.get(m));
    if !(1..=12).contains(&month) || day < 1 || days_in(month).is_none_or(|&last| day > last) {
        return None;
    }
    if hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    // The fraction: its first six digits are microseconds; the rest are rounded down.
    let micros = match tail {
        [b'Z'] => 0,
        [b'.', fraction @ .., b'Z']
            if !fraction.is_empty() && fraction.iter().all(u8::is_ascii_digit) =>
        {
            (0..6).fold(0, |n, i| n * 10 + fraction.get(i).map_or(0, |&b| i64::from(b - b'0')))
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    Some(
        ((days * 24 + hour) * 60 + minute) * 60 * MICROS_PER_SEC + second * MICROS_PER_SEC + micros,
    )
}

/// How the time column is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum TimeFormat {
    /// RFC 3339 / ISO 8601 with `Z` or an offset, e.g. `2025-07-29T23:24:52.483Z`.
    #[default]
    Rfc3339,
    /// Unix epoch seconds, optionally with a decimal fraction, e.g. `1753831492.483`.
    UnixS,
    /// Unix epoch milliseconds, e.g. `1753831492483`.
    UnixMs,
    /// Unix epoch microseconds, e.g. `1753831492483000`.
    UnixUs,
}

impl TimeFormat {
    /// Every named format, with its name.
    pub const NAMED: [(&'static str, TimeFormat); 4] = [
        ("rfc3339", TimeFormat::Rfc3339),
        ("unix-s", TimeFormat::UnixS),
        ("unix-ms", TimeFormat::UnixMs),
        ("unix-us", TimeFormat::UnixUs),
    ];

    /// Returns the format named `name`, in any case: `rfc3339`, `unix-s`, `unix-ms` or
    /// `unix-us`.
    pub fn named(name: &str) -> Option<TimeFormat> {
        let found = TimeFormat::NAMED.iter().find(|(each, _)| each.eq_ignore_ascii_case(name));
        found.map(|&(_, format)| format)
    }
}

/// Why a time could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeError {
    /// Not an RFC 3339 time or a date.
    Rfc3339,
    /// Not a decimal number of epoch units.
    Unix,
    /// Not a time in the `--time-format` pattern.
    Pattern,
    /// A valid time outside the years 0000 to 9999.
    OutOfRange,
}

impl fmt::Display for TimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TimeError::Rfc3339 => {
                "not an RFC 3339 time with a UTC offset (like 2025-07-29T23:24:52.483Z) or a date (like 2025-07-29)"
            }
            TimeError::Unix => "not a Unix epoch number (see --time-format)",
            TimeError::Pattern => "not a time in the --time-format pattern",
            TimeError::OutOfRange => "a time outside the years 0000 to 9999",
        })
    }
}

impl std::error::Error for TimeError {}

#[cfg(test)]
mod tests;
