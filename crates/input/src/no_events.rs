//! Why a read found no events: an empty input, every row bad, or filters that kept none.

use super::catalog::{
    Event, ReadError, ReadOptions, ReadStats, RowFilter, Sink, Source, TimeFilter, read_events,
};
use crate::units::time::Timestamp;

/// Returns, when a read found no events, one line that says why, for stderr; `None` when
/// it found some. When filters kept none of a file's rows, the file is read once more,
/// without them, for the span of its times, so that the user sees where the data lies.
pub fn why_no_events(source: &Source, options: &ReadOptions, stats: &ReadStats) -> Option<String> {
    if stats.events > 0 {
        return None;
    }
    let name = source.name();
    if stats.rows == 0 {
        return Some(format!("no events: {name} has no rows"));
    }
    if stats.skipped == stats.rows {
        return Some(format!("no events: every row of {name} was bad, and skipped (--skip-bad)"));
    }
    let filters: Vec<String> = options.filters.iter().map(describe).collect();
    let mut line = format!(
        "no events: the filters ({}) kept none of the {} rows of {name}",
        filters.join(", "),
        stats.rows - stats.skipped
    );
    if let Some((first, last)) = span(source, options) {
        line += &format!("; its times span {first} to {last}");
    }
    Some(line)
}

/// Says what a filter keeps, as the flag that asked for it.
fn describe(filter: &RowFilter) -> String {
    match filter {
        RowFilter::Time(TimeFilter::Since(t)) => format!("--since {t}"),
        RowFilter::Time(TimeFilter::Until(t)) => format!("--until {t}"),
        RowFilter::Column(c) => {
            // At least `at_least` millionths, written back as the decimal it was read from.
            let sign = if c.at_least < 0 { "-" } else { "" };
            let (whole, part) =
                (c.at_least.unsigned_abs() / 1_000_000, c.at_least.unsigned_abs() % 1_000_000);
            let part = format!("{part:06}");
            let part = part.trim_end_matches('0');
            let dot = if part.is_empty() { "" } else { "." };
            let value = format!("{sign}{whole}{dot}{part}");
            // A filter named by its column writes it, as the flag took it.
            match c.asked_by {
                "--where" => format!("--where {}>={value}", crate::message::one_line(&c.column)),
                by => format!("{by} {value}"),
            }
        }
    }
}

/// Returns the first and last time of a file's rows, read again without filters; `None`
/// for standard input, which cannot be read twice, or if the read fails.
fn span(source: &Source, options: &ReadOptions) -> Option<(Timestamp, Timestamp)> {
    if !source.can_read_again() {
        return None;
    }
    let options = ReadOptions { filters: Vec::new(), progress: None, ..options.clone() };
    let (seen, _) = read_events(source, &options, Span::default).ok()?;
    seen.first.zip(seen.last)
}

/// The first and last time of the events it is given, in time order.
#[derive(Default)]
struct Span {
    first: Option<Timestamp>,
    last: Option<Timestamp>,
}

impl Sink for Span {
    type Error = ReadError;

    fn event(&mut self, event: Event) -> Result<(), ReadError> {
        self.first.get_or_insert(event.time);
        self.last = Some(event.time);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::ColumnFilter;

    #[test]
    fn a_filter_is_described_as_its_flag() {
        let mag = |at_least| {
            RowFilter::Column(ColumnFilter {
                column: "mag".into(),
                at_least,
                asked_by: "--min-mag",
            })
        };
        assert_eq!(describe(&mag(9_900_000)), "--min-mag 9.9");
        assert_eq!(describe(&mag(5_000_000)), "--min-mag 5");
        assert_eq!(describe(&mag(-1_250_000)), "--min-mag -1.25");
        assert_eq!(describe(&mag(-250_000)), "--min-mag -0.25");
        let at = Timestamp::from_micros(0).unwrap();
        assert_eq!(
            describe(&RowFilter::Time(TimeFilter::Since(at))),
            "--since 1970-01-01T00:00:00Z"
        );
    }
}
