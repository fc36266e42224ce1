//! Instants and lengths of time as whole microseconds, and how they are written.

use std::fmt;
use std::str::FromStr;

/// Microseconds in one second.
pub const MICROS_PER_SEC: i64 = 1_000_000;

/// An instant on the UTC time line, in whole microseconds since the Unix epoch.
///
/// Every timestamp lies in the years 0000 to 9999, the range RFC 3339 can write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(i64);

impl Timestamp {
    /// 1970-01-01T00:00:00Z.
    pub const EPOCH: Timestamp = Timestamp(0);

    /// The earliest instant a timestamp may hold, in µs: 0000-01-01T00:00:00Z.
    pub const MIN: i64 = -62_167_219_200_000_000;
    /// The latest instant a timestamp may hold, in µs: 9999-12-31T23:59:59.999999Z.
    pub const MAX: i64 = 253_402_300_799_999_999;

    /// Returns the instant `micros` microseconds after the Unix epoch, if it is in range.
    pub fn from_micros(micros: i64) -> Option<Timestamp> {
        (Self::MIN..=Self::MAX).contains(&micros).then_some(Timestamp(micros))
    }

    /// Returns the microseconds since the Unix epoch.
    pub fn as_micros(self) -> i64 {
        self.0
    }

    /// Returns the instant `span` later, if it is in range.
    pub fn checked_add(self, span: Span) -> Option<Timestamp> {
        self.0.checked_add(span.0).and_then(Timestamp::from_micros)
    }

    /// Returns the length of time from `earlier` to `self`; negative if `earlier` is later.
    pub fn since(self, earlier: Timestamp) -> i64 {
        self.0 - earlier.0
    }
}

/// Returns the days from 1970-01-01 to a proleptic Gregorian date, by Howard Hinnant's
/// `days_from_civil`: for readers that do their own calendar arithmetic.
// Inlined into the readers' hot path, across the crate boundary.
#[inline]
pub fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let doy = (153 * (if month > 2 { month - 3 } else { month + 9 }) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

impl fmt::Display for Timestamp {
    /// Writes RFC 3339 in UTC, with as many fractional digits (0, 3 or 6) as the value needs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut text = Vec::with_capacity(27);
        self.write_rfc3339(&mut text, Subsecond::Auto);
        f.write_str(std::str::from_utf8(&text).expect("ASCII"))
    }
}

/// How many fractional digits of a second to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Subsecond {
    /// As many as the value needs: none, 3 or 6.
    Auto,
    /// Always milliseconds, rounded down, as the USGS writes times.
    Millis,
}

impl Timestamp {
    /// Appends the time in RFC 3339 UTC, such as `2025-07-29T23:24:52.483Z`, to `out`.
    ///
    /// It is the hot path of `synth`, so it does its own calendar arithmetic; tests check it
    /// against chrono over the whole range.
    pub fn write_rfc3339(self, out: &mut Vec<u8>, fraction: Subsecond) {
        let days = self.0.div_euclid(86_400 * MICROS_PER_SEC);
        let micros_of_day = self.0.rem_euclid(86_400 * MICROS_PER_SEC);
        let (year, month, day) = civil_from_days(days);
        let secs = micros_of_day / MICROS_PER_SEC;
        let micros = micros_of_day % MICROS_PER_SEC;
        let digits = |value: i64, width: usize, out: &mut Vec<u8>| {
            let mut buf = [b'0'; 6];
            let mut v = value;
            for slot in buf[..width].iter_mut().rev() {
                // A digit, 0 to 9.
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                let digit = (v % 10) as u8;
                *slot = b'0' + digit;
                v /= 10;
            }
            out.extend_from_slice(&buf[..width]);
        };
        digits(year, 4, out);
        out.push(b'-');
        digits(month, 2, out);
        out.push(b'-');
        digits(day, 2, out);
        out.push(b'T');
        digits(secs / 3600, 2, out);
        out.push(b':');
        digits(secs / 60 % 60, 2, out);
        out.push(b':');
        digits(secs % 60, 2, out);
        match fraction {
            Subsecond::Millis => {
                out.push(b'.');
                digits(micros / 1_000, 3, out);
            }
            Subsecond::Auto if micros == 0 => {}
            Subsecond::Auto if micros % 1_000 == 0 => {
                out.push(b'.');
                digits(micros / 1_000, 3, out);
            }
            Subsecond::Auto => {
                out.push(b'.');
                digits(micros, 6, out);
            }
        }
        out.push(b'Z');
    }
}

/// Returns the proleptic Gregorian (year, month, day) of a day counted from 1970-01-01,
/// by Howard Hinnant's `civil_from_days`.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(feature = "schema")]
string_schema!(Timestamp, "format": "date-time", "description": "A time in RFC 3339, UTC, to the microsecond");

#[cfg(feature = "serde")]
impl serde::Serialize for Timestamp {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// A non-negative length of time in whole microseconds.
///
/// Its text form is one or more terms such as `48h`, `30s`, `15m` or `1h30m`, with the
/// units `us`, `ms`, `s`, `m` or `min`, `h` and `d`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Span(i64);

/// The units a span or a rate may be written in, largest first, as they are printed.
const UNITS: [(&str, i64); 6] = [
    ("d", 86_400 * MICROS_PER_SEC),
    ("h", 3_600 * MICROS_PER_SEC),
    ("m", 60 * MICROS_PER_SEC),
    ("s", MICROS_PER_SEC),
    ("ms", 1_000),
    ("us", 1),
];

impl Span {
    /// One minute.
    pub const MINUTE: Span = Span(60 * MICROS_PER_SEC);

    /// The span of `micros` microseconds; `None` if negative.
    pub fn from_micros(micros: i64) -> Option<Span> {
        (micros >= 0).then_some(Span(micros))
    }

    /// Returns the span in microseconds.
    pub fn as_micros(self) -> i64 {
        self.0
    }

    /// Returns the span in seconds, for display only.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / MICROS_PER_SEC as f64
    }

    /// Returns true if the span is zero.
    pub fn is_zero(self) -> bool {
        self.0 == 0
    }

    /// Writes the span as a count of its largest exact unit, such as `2h` or `90s`; with
    /// `omit_one`, a count of one is left out, as in the period of `5/h`.
    pub fn fmt_unit(self, f: &mut fmt::Formatter<'_>, omit_one: bool) -> fmt::Result {
        let (unit, size) = UNITS
            .iter()
            .find(|(_, size)| self.0 % size == 0 && self.0 != 0)
            .unwrap_or(&("s", MICROS_PER_SEC));
        let count = self.0 / size;
        if omit_one && count == 1 { f.write_str(unit) } else { write!(f, "{count}{unit}") }
    }
}

/// Why a duration could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpanError {
    /// It starts with a minus sign.
    Negative,
    /// It is not a run of terms such as `48h` or `1h30m`.
    Malformed,
    /// It does not fit in 64 bits of microseconds.
    TooLong,
}

impl fmt::Display for SpanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SpanError::Negative => "durations cannot be negative",
            SpanError::Malformed => "not a duration like 48h, 30s or 1h30m",
            SpanError::TooLong => "too long a duration",
        })
    }
}

impl std::error::Error for SpanError {}

impl Span {
    /// Writes the span exactly, as the sum of its nonzero units: `11h46m1s350ms`. It reads
    /// back with `FromStr`.
    pub fn compact(self) -> String {
        if self.0 == 0 {
            return "0s".into();
        }
        let mut rest = self.0;
        let mut text = String::new();
        for (unit, size) in UNITS {
            if rest >= size {
                text += &format!("{}{unit}", rest / size);
                rest %= size;
            }
        }
        text
    }
}

impl FromStr for Span {
    type Err = SpanError;

    fn from_str(text: &str) -> Result<Span, SpanError> {
        if text.starts_with('-') {
            return Err(SpanError::Negative);
        }
        if text.is_empty() {
            return Err(SpanError::Malformed);
        }
        let mut rest = text;
        let mut total: i64 = 0;
        while !rest.is_empty() {
            let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
            let letters = rest[digits..]
                .find(|c: char| !c.is_ascii_alphabetic())
                .map_or(rest.len(), |n| digits + n);
            let (count, unit) = (&rest[..digits], &rest[digits..letters]);
            if count.is_empty() || unit.is_empty() {
                return Err(SpanError::Malformed);
            }
            let size = match unit {
                "min" => 60 * MICROS_PER_SEC,
                _ => UNITS.iter().find(|(u, _)| *u == unit).ok_or(SpanError::Malformed)?.1,
            };
            total = count
                .parse::<i64>()
                .ok()
                .and_then(|n| n.checked_mul(size))
                .and_then(|t| total.checked_add(t))
                .ok_or(SpanError::TooLong)?;
            rest = &rest[letters..];
        }
        Ok(Span(total))
    }
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_unit(f, false)
    }
}

/// Writes a length of time for people: `0s`, `250ms`, `47m 59.517s`, `2d 3h`. It takes
/// microseconds as wide as a wait can grow: `(b − 1)·P/N` can pass `i64::MAX`.
pub fn human_duration(micros: impl Into<i128>) -> String {
    let micros: i128 = micros.into();
    if micros == 0 {
        return "0s".into();
    }
    let mut parts = Vec::new();
    let mut rest = micros;
    for (unit, size) in &UNITS[..3] {
        let size = i128::from(*size);
        if rest >= size {
            parts.push(format!("{}{unit}", rest / size));
            rest %= size;
        }
    }
    if rest > 0 {
        let second = i128::from(MICROS_PER_SEC);
        let (secs, frac) = (rest / second, rest % second);
        parts.push(if secs == 0 && frac % 1_000 == 0 {
            format!("{}ms", frac / 1_000)
        } else if frac == 0 {
            format!("{secs}s")
        } else {
            let digits = format!("{frac:06}");
            format!("{secs}.{}s", digits.trim_end_matches('0'))
        });
    }
    parts.join(" ")
}

#[cfg(test)]
mod tests;
