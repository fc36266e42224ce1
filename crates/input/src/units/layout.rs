//! How a catalog writes its times: a named format, or any strftime pattern with a zone.

use std::fmt;

use chrono::format::{Fixed, Item, Numeric, StrftimeItems};
use chrono::{DateTime, FixedOffset, NaiveDate, NaiveDateTime};

use crate::units::time::{TimeError, TimeFormat, Timestamp};

/// How times are written: one of the named formats, or a strftime pattern (chrono's
/// syntax) read in the zone it names, or else in a fixed offset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TimeLayout {
    /// A named format: RFC 3339 or Unix epoch numbers.
    Named(TimeFormat),
    /// A pattern such as `%d/%b/%Y:%H:%M:%S %z`.
    Pattern(TimePattern),
}

impl Default for TimeLayout {
    fn default() -> TimeLayout {
        TimeLayout::Named(TimeFormat::Rfc3339)
    }
}

impl From<TimeFormat> for TimeLayout {
    fn from(format: TimeFormat) -> TimeLayout {
        TimeLayout::Named(format)
    }
}

impl TimeLayout {
    /// Reads a time written in this layout. A pattern's fractions finer than a
    /// microsecond are rounded down, as the named formats' are.
    pub fn parse(&self, text: &[u8]) -> Result<Timestamp, TimeError> {
        match self {
            TimeLayout::Named(format) => crate::units::time::parse(text, *format),
            TimeLayout::Pattern(pattern) => pattern.parse(text),
        }
    }
}

/// A strftime pattern, checked, with the offset its times are in if it names no zone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimePattern {
    pattern: String,
    /// `None` if the pattern names the zone (`%z`, `%:z`).
    offset: Option<FixedOffset>,
    /// Whether the pattern has a time of day; without one, a time is its date's midnight.
    has_time: bool,
}

/// Why a pattern cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PatternError {
    /// chrono cannot read the pattern.
    #[error("--time-format '{0}' is not a strftime pattern chrono can read")]
    Invalid(String),
    /// The pattern has no zone, and no offset was given.
    #[error(
        "--time-format '{0}' names no zone (%z): give the offset its times are in with \
         --time-zone, like --time-zone +00:00"
    )]
    NoZone(String),
    /// The pattern names its zone, and an offset was given as well.
    #[error("--time-format '{0}' names its zone (%z), so --time-zone does not apply")]
    TwoZones(String),
    /// The pattern reads epoch seconds, which are UTC, and an offset was given.
    #[error(
        "--time-format '{0}' reads epoch seconds (%s), which are UTC, so --time-zone does not apply"
    )]
    Epoch(String),
}

impl TimePattern {
    /// Checks `pattern` and returns it, with `offset` for a pattern that names no zone.
    pub fn new(pattern: &str, offset: Option<FixedOffset>) -> Result<TimePattern, PatternError> {
        let items: Vec<Item> = StrftimeItems::new(pattern).collect();
        if items.iter().any(|i| matches!(i, Item::Error)) {
            return Err(PatternError::Invalid(pattern.to_owned()));
        }
        let zoned = items.iter().any(|i| {
            matches!(
                i,
                Item::Fixed(
                    Fixed::TimezoneOffset
                        | Fixed::TimezoneOffsetColon
                        | Fixed::TimezoneOffsetDoubleColon
                        | Fixed::TimezoneOffsetTripleColon
                        | Fixed::TimezoneOffsetColonZ
                        | Fixed::TimezoneOffsetZ
                        | Fixed::RFC2822
                        | Fixed::RFC3339
                )
            )
        });
        let has_time = items.iter().any(|i| {
            matches!(
                i,
                Item::Numeric(Numeric::Hour | Numeric::Hour12 | Numeric::Timestamp, _)
                    | Item::Fixed(Fixed::RFC2822 | Fixed::RFC3339)
            )
        });
        // Epoch seconds count from an instant, so they name no zone and need none.
        let epoch = items.iter().any(|i| matches!(i, Item::Numeric(Numeric::Timestamp, _)));
        let offset = match (zoned, epoch, offset) {
            (true, _, Some(_)) => return Err(PatternError::TwoZones(pattern.to_owned())),
            (true, _, None) => None,
            (false, true, Some(_)) => return Err(PatternError::Epoch(pattern.to_owned())),
            (false, true, None) => FixedOffset::east_opt(0),
            (false, false, Some(offset)) => Some(offset),
            (false, false, None) => return Err(PatternError::NoZone(pattern.to_owned())),
        };
        Ok(TimePattern { pattern: pattern.to_owned(), offset, has_time })
    }

    /// Reads a time in this pattern.
    pub fn parse(&self, text: &[u8]) -> Result<Timestamp, TimeError> {
        let text = std::str::from_utf8(text).map_err(|_| TimeError::Pattern)?;
        let micros = match self.offset {
            None => match DateTime::parse_from_str(text, &self.pattern) {
                Ok(time) => time.timestamp_micros(),
                // chrono reads %::z as +hh:mm: an offset with seconds, +hh:mm:ss, is read
                // without them, and they are taken off after.
                Err(_) if self.pattern.contains("%::z") => {
                    let (text, seconds) = offset_seconds(text).ok_or(TimeError::Pattern)?;
                    let time = DateTime::parse_from_str(&text, &self.pattern)
                        .map_err(|_| TimeError::Pattern)?;
                    time.timestamp_micros() - seconds * 1_000_000
                }
                Err(_) => return Err(TimeError::Pattern),
            },
            Some(offset) => {
                let local = if self.has_time {
                    NaiveDateTime::parse_from_str(text, &self.pattern)
                } else {
                    NaiveDate::parse_from_str(text, &self.pattern)
                        .map(|d| d.and_time(Default::default()))
                };
                let local = local.map_err(|_| TimeError::Pattern)?;
                let utc = local.and_utc().timestamp_micros();
                utc - i64::from(offset.local_minus_utc()) * 1_000_000
            }
        };
        Timestamp::from_micros(micros).ok_or(TimeError::OutOfRange)
    }
}

/// Returns `text` with the seconds of its last `+hh:mm:ss` (or `-hh:mm:ss`) offset cut,
/// and those seconds, signed as the offset is; `None` if it has no such offset.
fn offset_seconds(text: &str) -> Option<(String, i64)> {
    let bytes = text.as_bytes();
    let shaped = |at: usize| {
        let b = bytes.get(at..at + 9)?;
        let digit = |i: usize| b[i].is_ascii_digit();
        let ok = matches!(b[0], b'+' | b'-')
            && digit(1)
            && digit(2)
            && b[3] == b':'
            && digit(4)
            && digit(5)
            && b[6] == b':'
            && digit(7)
            && digit(8)
            && !bytes.get(at + 9).is_some_and(u8::is_ascii_digit);
        ok.then_some(b)
    };
    let at = (0..bytes.len()).rev().find(|&at| shaped(at).is_some())?;
    let b = shaped(at)?;
    let seconds = i64::from(b[7] - b'0') * 10 + i64::from(b[8] - b'0');
    if seconds > 59 {
        return None;
    }
    let sign = if b[0] == b'-' { -1 } else { 1 };
    Some((format!("{}{}", &text[..at + 6], &text[at + 9..]), sign * seconds))
}

impl fmt::Display for TimePattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.pattern)
    }
}

/// Returns, for a time the default layout (RFC 3339) could not read, the `--time-format`
/// that would read it, when its shape is a common one: epoch seconds, milliseconds or
/// microseconds; a US date (`07/29/2025 23:24:52`); an access log's (`29/Jul/2025:23:24:52
/// +0000`); or an ISO time without an offset. `None` when it is none of these.
pub fn suggest(text: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(text).ok()?.trim();
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    if digits(whole) && (fraction.is_empty() || digits(fraction)) {
        let unit = match (whole.len(), fraction.is_empty()) {
            (9..=11, _) => "unix-s",
            (12..=14, true) => "unix-ms",
            (15..=17, true) => "unix-us",
            _ => return None,
        };
        return Some(format!("it looks like an epoch time: try --time-format {unit}"));
    }
    // Digits as 9 and letters as a: the shape of the text.
    let shape: String = text
        .chars()
        .map(|c| match c {
            '0'..='9' => '9',
            c if c.is_ascii_alphabetic() => 'a',
            c => c,
        })
        .collect();
    let zone = "with --time-zone the offset your times are in (like +00:00)";
    // Split where a char ends, whatever the text holds.
    let (head, rest) = match (shape.get(..19), shape.get(19..)) {
        (Some(head), Some(rest)) => (head, rest),
        _ => (shape.as_str(), ""),
    };
    match shape.as_str() {
        "99/aaa/9999:99:99:99 +9999" | "99/aaa/9999:99:99:99 -9999" => Some(
            "it looks like an access log's time: try --time-format '%d/%b/%Y:%H:%M:%S %z'".into(),
        ),
        // An ISO date and time, any one character between, with or without a fraction.
        _ if matches!(head, "9999-99-99 99:99:99" | "9999-99-99a99:99:99")
            && (rest.is_empty()
                || rest.strip_prefix('.').is_some_and(|f| f.bytes().all(|b| b == b'9'))) =>
        {
            // The shape's first 19 characters are ASCII, so are the text's.
            let t = &text[10..11];
            let f = if rest.is_empty() { "" } else { "%.f" };
            Some(format!(
                "it has no offset from UTC: try --time-format '%Y-%m-%d{t}%H:%M:%S{f}' {zone}"
            ))
        }
        _ => {
            let (date, time) = shape.split_once(' ')?;
            let parts: Vec<&str> = date.split('/').collect();
            let us = matches!(parts[..], [m, d, y] if m.len() <= 2 && d.len() <= 2 && y == "9999");
            let clock = matches!(time, "99:99:99" | "9:99:99" | "99:99" | "9:99");
            let seconds = if time.matches(':').count() == 2 { ":%S" } else { "" };
            (us && clock).then(|| {
                format!(
                    "it looks like a US date: try --time-format '%m/%d/%Y %H:%M{seconds}' {zone} \
                     ('%d/%m/%Y' if the day comes first)"
                )
            })
        }
    }
}

/// Reads a fixed offset from UTC: `Z`, `UTC`, `+09:00`, `-0700` or `+5`.
pub fn parse_offset(text: &str) -> Option<FixedOffset> {
    if matches!(text, "Z" | "z" | "UTC" | "utc") {
        return FixedOffset::east_opt(0);
    }
    let (sign, rest) = match text.as_bytes().first()? {
        b'+' => (1, &text[1..]),
        b'-' => (-1, &text[1..]),
        _ => return None,
    };
    let digits: String = rest.chars().filter(|&c| c != ':').collect();
    if digits.is_empty() || digits.len() > 4 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (hours, minutes) = match digits.len() {
        1 | 2 => (digits.parse::<i32>().ok()?, 0),
        3 | 4 => {
            let (h, m) = digits.split_at(digits.len() - 2);
            (h.parse::<i32>().ok()?, m.parse::<i32>().ok()?)
        }
        _ => return None,
    };
    if hours > 23 || minutes > 59 {
        return None;
    }
    FixedOffset::east_opt(sign * (hours * 3600 + minutes * 60))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn micros(layout: &TimeLayout, text: &str) -> Result<i64, TimeError> {
        layout.parse(text.as_bytes()).map(Timestamp::as_micros)
    }

    #[test]
    fn a_zoned_pattern_reads_its_own_offset() {
        // nginx's $time_local: 10 Oct 2000 13:55:36 at -07:00 is 20:55:36 UTC.
        let clf = TimeLayout::Pattern(TimePattern::new("%d/%b/%Y:%H:%M:%S %z", None).unwrap());
        assert_eq!(micros(&clf, "10/Oct/2000:13:55:36 -0700"), Ok(971_211_336_000_000));
        assert_eq!(micros(&clf, "10/Oct/2000:13:55:36"), Err(TimeError::Pattern));
        let fraction = TimePattern::new("%Y-%m-%d %H:%M:%S%.f %z", None).unwrap();
        assert_eq!(
            fraction.parse(b"2025-07-29 23:24:52.483123999 +0000").map(Timestamp::as_micros),
            Ok(1_753_831_492_483_123)
        );
    }

    #[test]
    fn a_pattern_without_a_zone_needs_one_given() {
        let pattern = "%m/%d/%Y %H:%M:%S";
        assert_eq!(TimePattern::new(pattern, None), Err(PatternError::NoZone(pattern.into())));
        let utc = TimePattern::new(pattern, parse_offset("+00:00")).unwrap();
        assert_eq!(
            utc.parse(b"01/02/1965 13:44:18").map(Timestamp::as_micros),
            Ok(-157_630_542_000_000)
        );
        // The same wall-clock time two hours east of UTC is two hours earlier.
        let east = TimePattern::new(pattern, parse_offset("+02")).unwrap();
        assert_eq!(
            east.parse(b"01/02/1965 13:44:18").map(Timestamp::as_micros),
            Ok(-157_637_742_000_000)
        );
        let day = TimePattern::new("%Y%m%d", parse_offset("Z")).unwrap();
        assert_eq!(day.parse(b"19700102").map(Timestamp::as_micros), Ok(86_400_000_000));
        assert_eq!(
            TimePattern::new("%d/%b/%Y %z", parse_offset("Z")),
            Err(PatternError::TwoZones("%d/%b/%Y %z".into()))
        );
        assert_eq!(
            TimePattern::new("%Q", parse_offset("Z")),
            Err(PatternError::Invalid("%Q".into()))
        );
    }

    #[test]
    fn an_offset_with_seconds_is_read_by_its_double_colon() {
        // %::z is +hh:mm:ss: +01:00:00 is an hour east; +00:00:30 half a minute east.
        let pattern = TimePattern::new("%Y-%m-%d %H:%M:%S %::z", None).unwrap();
        let at = |text: &str| pattern.parse(text.as_bytes()).map(Timestamp::as_micros);
        let midnight = crate::units::time::rfc3339("2025-01-01T00:00:00Z").unwrap().as_micros();
        assert_eq!(at("2025-01-01 01:00:00 +01:00:00"), Ok(midnight));
        assert_eq!(at("2025-01-01 00:00:30 +00:00:30"), Ok(midnight));
        assert_eq!(at("2024-12-31 23:59:30 -00:00:30"), Ok(midnight));
        assert_eq!(at("2025-01-01 01:00:00 +01:00:61"), Err(TimeError::Pattern));
    }

    #[test]
    fn every_offset_specifier_names_the_zone() {
        // %::z and %:::z name the zone as %z does (chrono reads each as +hh:mm).
        for (pattern, text) in [
            ("%Y-%m-%d %H:%M:%S %::z", "2025-01-01 05:30:00 +05:30"),
            ("%Y-%m-%d %H:%M:%S %:::z", "2025-01-01 05:30:00 +05:30"),
        ] {
            let found = TimePattern::new(pattern, None).unwrap().parse(text.as_bytes());
            let midnight = crate::units::time::rfc3339("2025-01-01T00:00:00Z").unwrap();
            assert_eq!(found, Ok(midnight), "{pattern}");
        }
    }

    #[test]
    fn epoch_seconds_need_no_zone_and_take_none() {
        let epoch = TimePattern::new("%s", None).unwrap();
        assert_eq!(epoch.parse(b"1700000000").map(Timestamp::as_micros), Ok(1_700_000_000_000_000));
        assert_eq!(
            TimePattern::new("%s", parse_offset("+02")),
            Err(PatternError::Epoch("%s".into()))
        );
    }

    #[test]
    fn common_shapes_get_the_format_that_reads_them() {
        let hint = |text: &str| suggest(text.as_bytes()).unwrap_or_default();
        assert!(hint("1753831492").ends_with("--time-format unix-s"));
        assert!(hint("1753831492.483").ends_with("--time-format unix-s"));
        assert!(hint("1753831492483").ends_with("--time-format unix-ms"));
        assert!(hint("1753831492483123").ends_with("--time-format unix-us"));
        assert!(hint("07/29/2025 23:24:52").contains("'%m/%d/%Y %H:%M:%S'"));
        assert!(hint("7/9/2025 3:24").contains("'%m/%d/%Y %H:%M'"));
        assert!(hint("29/Jul/2025:23:24:52 +0000").contains("'%d/%b/%Y:%H:%M:%S %z'"));
        assert!(hint("2025-07-29 23:24:52").contains("'%Y-%m-%d %H:%M:%S'"));
        assert!(hint("2025-07-29T23:24:52.483").contains("'%Y-%m-%dT%H:%M:%S%.f'"));
        for none in
            ["yesterday", "12", "2025-07-29 23:24:52 EST", "1/2/3 4:5", "2025-07-29 23:24:5é"]
        {
            assert_eq!(suggest(none.as_bytes()), None, "{none}");
        }
    }

    #[test]
    fn offsets() {
        for (text, seconds) in [("Z", 0), ("+09:00", 32_400), ("-0700", -25_200), ("+5", 18_000)] {
            assert_eq!(parse_offset(text).map(|o| o.local_minus_utc()), Some(seconds), "{text}");
        }
        for bad in ["", "9", "+", "+24:00", "+05:60", "+12345", "EST"] {
            assert_eq!(parse_offset(bad), None, "{bad}");
        }
    }
}
