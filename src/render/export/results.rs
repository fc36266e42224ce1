//! What each command's result is to the exporters: its CSV rows and its table.

use std::io::{self, Write};

use serde::{Serialize, Serializer};

use super::table::{compare_table, human_ms, min_bucket_table, replay_table};
use super::{Report, Style};
use crate::report::{self, CsvRow, csv_rows};

impl Report for report::LimiterReport {
    type Row<'a> = CsvRow<'a, report::LimiterReport>;

    fn rows(&self) -> Vec<CsvRow<'_, report::LimiterReport>> {
        csv_rows(std::slice::from_ref(self))
    }

    fn table(&self, out: &mut dyn Write, style: Style) -> io::Result<()> {
        replay_table(out, self, style)
    }
}

/// Limiters side by side: their reports, and the keys with the most drops over all of
/// them, which only the table shows.
pub struct Compared<'a> {
    /// One report per limiter: the JSON.
    pub lanes: &'a [report::LimiterReport],
    /// With keys, the keys with the most drops over all limiters.
    pub across: &'a [report::KeyDrops],
}

impl Serialize for Compared<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.lanes.serialize(serializer)
    }
}

impl<'l> Report for Compared<'l> {
    type Row<'a>
        = CsvRow<'l, report::LimiterReport>
    where
        Self: 'a;

    fn rows(&self) -> Vec<CsvRow<'l, report::LimiterReport>> {
        csv_rows(self.lanes)
    }

    fn table(&self, out: &mut dyn Write, style: Style) -> io::Result<()> {
        compare_table(out, self.lanes, self.across, style)
    }
}

impl Report for Vec<report::MinBucket> {
    type Row<'a> = CsvRow<'a, report::MinBucket>;

    fn rows(&self) -> Vec<CsvRow<'_, report::MinBucket>> {
        csv_rows(self)
    }

    fn table(&self, out: &mut dyn Write, style: Style) -> io::Result<()> {
        min_bucket_table(out, self, style)
    }
}

impl Report for report::Check {
    type Row<'a> = report::Check;

    fn rows(&self) -> Vec<report::Check> {
        vec![self.clone()]
    }

    fn table(&self, out: &mut dyn Write, style: Style) -> io::Result<()> {
        check_line(out, self, style)
    }
}

/// Writes a live decision as one line.
pub fn check_line(out: &mut dyn Write, c: &report::Check, style: Style) -> io::Result<()> {
    let full = human_ms(c.reset_after_s.as_micros());
    if c.allowed {
        let verdict = style.good("allowed");
        writeln!(out, "{verdict}: {} of {} left, full again in {full}", c.remaining, c.limit)
    } else {
        let verdict = style.warn("limited");
        let retry = human_ms(c.retry_after_s.as_micros());
        writeln!(
            out,
            "{verdict}: {} of {} left, retry in {retry}, full again in {full}",
            c.remaining, c.limit
        )
    }
}
