//! The curve the page draws: the smallest lossless bucket at rates around the one asked.

use serde::Serialize;

use crate::sizing::curve::{Curve, ExactRate};
use crate::units::rate::Rate;
use crate::units::time::Span;

/// One point of the curve: a rate, per hour, and the smallest lossless bucket at it.
#[derive(Debug, Serialize)]
pub(crate) struct CurvePoint {
    rate: String,
    per_hour: f64,
    min_bucket: u64,
}

/// The smallest lossless bucket on `curve` at 49 rates from 1/64 to 64 times `rate`, on a
/// log scale.
pub(crate) fn curve_points(curve: &Curve, rate: Rate) -> Vec<CurvePoint> {
    let (n, p) = (rate.n64(), rate.period().as_micros());
    let mut points = Vec::new();
    for step in -24i32..=24 {
        // N per P at 2^(step/4): the period scaled, counts kept whole.
        let scale = 2f64.powf(f64::from(step) / 4.0);
        #[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]
        // The user's period, scaled: a float cast to i64 saturates, and a period past what a
        // `Span` and a `Rate` hold is refused below and left out, so no value overflows.
        let micros = ((p as f64 / scale).round() as i64).max(1);
        let Some(at) =
            Span::from_micros(micros).and_then(|span| Rate::new(rate.count(), span).ok())
        else {
            continue;
        };
        points.push(CurvePoint {
            rate: at.to_string(),
            per_hour: ExactRate::new(n, micros).per_hour(),
            min_bucket: curve.min_bucket(n, micros),
        });
    }
    points
}
