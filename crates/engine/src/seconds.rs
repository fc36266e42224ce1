//! Spans written in JSON as seconds: whole numbers when whole, else to the microsecond.

use serde::Serializer;

use crate::units::time::{MICROS_PER_SEC, Span};

/// Writes a span as a number of seconds: an integer when it is whole.
pub(crate) fn seconds<S: Serializer>(span: &Span, s: S) -> Result<S::Ok, S::Error> {
    wide_seconds(&i128::from(span.as_micros()), s)
}

/// Writes a span as [`seconds`] does, or null.
pub(crate) fn optional_seconds<S: Serializer>(
    span: &Option<Span>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match span {
        Some(span) => seconds(span, s),
        None => s.serialize_none(),
    }
}

/// Writes microseconds as a number of seconds: an integer when it is whole.
pub(crate) fn wide_seconds<S: Serializer>(micros: &i128, s: S) -> Result<S::Ok, S::Error> {
    let second = i128::from(MICROS_PER_SEC);
    match i64::try_from(micros / second) {
        Ok(secs) if micros % second == 0 => s.serialize_i64(secs),
        _ if micros % second == 0 => s.serialize_i128(micros / second),
        // A fraction is for display; the exact value is in microseconds.
        #[allow(clippy::cast_precision_loss)]
        _ => s.serialize_f64(*micros as f64 / 1e6),
    }
}
