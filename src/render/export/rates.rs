//! Rates in the unit asked (`--per`): the tables of the smallest lossless rates and of the
//! burst–rate curve, each rate exact with its decimal beside it.

use std::io::{self, Write};

use serde::{Serialize, Serializer};

use super::table::{stretch_cells, table};
use super::{Report, Style};
use crate::report;
use crate::units::time::human_duration;

/// Writes a rate in events per hour with at most four decimals.
fn decimal(rate: f64) -> String {
    let text = format!("{rate:.4}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// The unit a table gives rates in, as a decimal beside the exact rate: `--per`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Per {
    /// Events a second.
    #[value(name = "s")]
    Second,
    /// Events a minute.
    #[value(name = "m")]
    Minute,
    /// Events an hour.
    #[default]
    #[value(name = "h")]
    Hour,
    /// Events a day.
    #[value(name = "d")]
    Day,
}

impl Per {
    /// The column's name: `per_hour`, say.
    fn header(self) -> &'static str {
        match self {
            Per::Second => "per_second",
            Per::Minute => "per_minute",
            Per::Hour => "per_hour",
            Per::Day => "per_day",
        }
    }

    /// A rate given per hour, written in this unit.
    fn of(self, per_hour: f64) -> String {
        let hours = match self {
            Per::Second => 1.0 / 3600.0,
            Per::Minute => 1.0 / 60.0,
            Per::Hour => 1.0,
            Per::Day => 24.0,
        };
        decimal(per_hour * hours)
    }
}

/// Writes the burst–rate curve's pieces as a table.
fn curve_table(
    out: &mut dyn Write,
    segments: &[report::CurveSegment],
    per: Per,
    style: Style,
) -> io::Result<()> {
    let rows: Vec<Vec<String>> = segments
        .iter()
        .map(|s| {
            vec![
                s.from.to_string(),
                per.of(s.from_per_hour),
                s.to.map_or("-".into(), |t| t.to_string()),
                s.to_per_hour.map_or("-".into(), |r| per.of(r)),
                s.min_bucket.to_string(),
                s.events.to_string(),
                human_duration(s.span_s.as_micros()),
                s.start.to_string(),
                s.end.to_string(),
            ]
        })
        .collect();
    let header =
        ["from", per.header(), "to", per.header(), "min_bucket", "events", "span", "start", "end"];
    table(out, &header, &rows, style)
}

/// Writes the smallest lossless rates as a table.
fn min_rate_table(
    out: &mut dyn Write,
    found: &[report::MinRate],
    per: Per,
    style: Style,
) -> io::Result<()> {
    // With keys, the key that needs the rate, after it.
    let keyed = found.iter().any(|m| m.worst_key.is_some());
    let rows: Vec<Vec<String>> = found
        .iter()
        .map(|m| {
            let [events, start, end] = stretch_cells(m.span);
            let rate = m.rate.map_or("none".into(), |r| r.to_string());
            let hourly = m.per_hour.map_or("-".into(), |r| per.of(r));
            let key = m.worst_key.as_ref().map_or(String::new(), |w| w.key.clone());
            let row = [m.burst.to_string(), rate, hourly].into_iter().chain(keyed.then_some(key));
            row.chain([events, start, end]).collect()
        })
        .collect();
    let header = ["burst", "rate", per.header()].into_iter().chain(keyed.then_some("key"));
    let header: Vec<&str> = header.chain(["span_events", "span_start", "span_end"]).collect();
    table(out, &header, &rows, style)
}

/// A row of a table of rates: how the rows are written in a unit.
pub trait RateRow: Serialize + Sized {
    /// Writes `rows` as a table, their rates' decimals in `per`.
    fn table(rows: &[Self], out: &mut dyn Write, per: Per, style: Style) -> io::Result<()>;
}

impl RateRow for report::CurveSegment {
    fn table(rows: &[Self], out: &mut dyn Write, per: Per, style: Style) -> io::Result<()> {
        curve_table(out, rows, per, style)
    }
}

impl RateRow for report::MinRate {
    fn table(rows: &[Self], out: &mut dyn Write, per: Per, style: Style) -> io::Result<()> {
        min_rate_table(out, rows, per, style)
    }
}

/// Rates, with the unit their table gives them in as decimals (`--per`); the JSON and CSV
/// keep `per_hour` beside the exact rate.
pub struct PerUnit<'a, T> {
    /// The rows: the JSON.
    pub found: &'a [T],
    /// The table's unit.
    pub per: Per,
}

impl<T: Serialize> Serialize for PerUnit<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.found.serialize(serializer)
    }
}

impl<'l, T: RateRow> Report for PerUnit<'l, T> {
    type Row<'a>
        = &'l T
    where
        Self: 'a;

    fn rows(&self) -> Vec<&'l T> {
        self.found.iter().collect()
    }

    fn table(&self, out: &mut dyn Write, style: Style) -> io::Result<()> {
        T::table(self.found, out, self.per, style)
    }
}
