//! From a row to an event: its time, whether the filters keep it, its key and its cost.
//!
//! Every reader (one thread's, the pieces' and the fast scanner's) parses rows its own way
//! and hands them here through [`Fields`], so that what a row makes is decided once.

use csv::ByteRecord;

use super::cost::parse_cost;
use super::filter::{ColumnTest, RowFilter};
use super::options::ReadOptions;
use super::stats::ReadStats;
use super::values::Values;
use crate::units::layout::{TimeLayout, suggest};
use crate::units::time::{TimeFormat, Timestamp};

/// The fields of one row, however it was parsed.
pub(super) trait Fields {
    /// Returns field `index`, unquoted, or nothing if the row has no such field; a reader
    /// that must unquote it into new bytes does so in `scratch`.
    fn field<'a>(&'a self, index: usize, scratch: &'a mut Vec<u8>) -> &'a [u8];

    /// Returns the row's time, if it is stored as a time rather than as text, and whether
    /// it is kept finer than seconds.
    fn time(&self) -> Option<(Timestamp, bool)> {
        None
    }
}

impl Fields for ByteRecord {
    #[inline]
    fn field<'a>(&'a self, index: usize, _: &'a mut Vec<u8>) -> &'a [u8] {
        self.get(index).unwrap_or_default()
    }
}

impl Fields for Values {
    #[inline]
    fn field<'a>(&'a self, index: usize, _: &'a mut Vec<u8>) -> &'a [u8] {
        self.get(index)
    }
}

/// Which columns make an event, as the header settled them.
#[derive(Clone, Debug)]
pub(super) struct Columns {
    /// The time's columns: one, or several to join with spaces.
    pub time: Vec<usize>,
    /// The column of each of the options' column filters, in their order (time filters
    /// read no column).
    pub filters: Vec<usize>,
    /// The key's column, if events are keyed.
    pub key: Option<usize>,
    /// What each event costs.
    pub cost: CostAt,
}

/// Where a row's cost is, as the header settled it.
#[derive(Clone, Copy, Debug)]
pub(super) enum CostAt {
    /// Every event costs this.
    Each(u64),
    /// In the column at this index.
    Column(usize),
}

/// Room for a row's fields while it is turned into an event, kept from row to row.
#[derive(Default)]
pub(super) struct Scratch {
    field: Vec<u8>,
    joined: Vec<u8>,
    filter: Vec<u8>,
    key: Vec<u8>,
}

/// What a kept row makes: its event's time, its key's bytes and its cost.
pub(super) struct RowEvent<'a> {
    pub time: Timestamp,
    pub key: &'a [u8],
    pub cost: u64,
}

/// Why a field of a row cannot be read: its column's name, its text and what it is not.
pub(super) struct FieldProblem<'o> {
    pub(super) field: &'o str,
    pub(super) value: Vec<u8>,
    pub(super) reason: String,
}

/// Whether a time was written finer than whole seconds: in milliseconds or microseconds
/// since the epoch, or with a fraction after the seconds (a `.` or `,` past the first `:`,
/// or anywhere in epoch seconds), so that `30.07.2025 00:30:00` is whole seconds.
fn written_finer(text: &[u8], layout: &TimeLayout) -> bool {
    if matches!(layout, TimeLayout::Named(TimeFormat::UnixMs | TimeFormat::UnixUs)) {
        return true;
    }
    let clock = memchr::memchr(b':', text).map_or(text, |at| &text[at..]);
    memchr::memchr2(b'.', b',', clock).is_some()
}

/// Turns a row into its event if the filters keep it (`None` if not), counting in `stats`
/// a row left out for an empty filtered field. Every reader calls it, so that a row makes
/// the same event whichever reads it.
#[inline]
pub(super) fn row_event<'a, 'o>(
    row: &'a impl Fields,
    columns: &Columns,
    options: &'o ReadOptions,
    scratch: &'a mut Scratch,
    stats: &mut ReadStats,
) -> Result<Option<RowEvent<'a>>, FieldProblem<'o>> {
    let Scratch { field, joined, filter, key } = scratch;
    // A time stored as one is taken as it is; its text is read only for one that is not.
    if let Some((time, finer)) = row.time() {
        stats.fractions |= finer;
        return rest_of_row(row, time, columns, options, (filter, key), stats);
    }
    let problem = |field, text: &[u8], reason| FieldProblem { field, value: text.to_vec(), reason };
    let text = match columns.time[..] {
        [one] => row.field(one, field),
        ref several => {
            joined.clear();
            for (n, &index) in several.iter().enumerate() {
                if n > 0 {
                    joined.push(b' ');
                }
                joined.extend_from_slice(row.field(index, field));
            }
            joined
        }
    };
    let time = options.time_format.parse(text).map_err(|e| {
        // Read as RFC 3339 by default, a time of another common shape says what would read it.
        let hint = match options.time_format {
            TimeLayout::Named(TimeFormat::Rfc3339) => suggest(text),
            _ => None,
        };
        let reason = hint.map_or(e.to_string(), |hint| format!("{e}; {hint}"));
        problem(&options.time_column, text, reason)
    })?;
    // Once one time is seen to have a fraction, the rest are not looked at.
    if !stats.fractions && written_finer(text, &options.time_format) {
        stats.fractions = true;
    }
    rest_of_row(row, time, columns, options, (filter, key), stats)
}

/// Returns the event of a row whose time is read, as [`row_event`] does: if the filters
/// keep it, with its key and its cost.
fn rest_of_row<'a, 'o>(
    row: &'a impl Fields,
    time: Timestamp,
    columns: &Columns,
    options: &'o ReadOptions,
    (filter, key): (&'a mut Vec<u8>, &'a mut Vec<u8>),
    stats: &mut ReadStats,
) -> Result<Option<RowEvent<'a>>, FieldProblem<'o>> {
    let problem = |field, text: &[u8], reason| FieldProblem { field, value: text.to_vec(), reason };
    let mut column_index = columns.filters.iter();
    for rule in &options.filters {
        let rule = match rule {
            RowFilter::Time(rule) if rule.keeps(time) => continue,
            RowFilter::Time(_) => return Ok(None),
            RowFilter::Column(rule) => rule,
        };
        // Reading found one column for each column filter, in their order.
        let text = row.field(*column_index.next().expect("a column for each filter"), filter);
        match rule.test(text) {
            Ok(ColumnTest::Keep) => {}
            Ok(ColumnTest::Drop) => return Ok(None),
            Ok(ColumnTest::Empty) => {
                stats.left_out_empty += 1;
                return Ok(None);
            }
            Err(_) => return Err(problem(&rule.column, text, "not a number".into())),
        }
    }
    let cost = match columns.cost {
        CostAt::Each(units) => units,
        CostAt::Column(index) => {
            let text = row.field(index, filter);
            let name = options.cost_column().unwrap_or("cost");
            parse_cost(text).map_err(|reason| problem(name, text, reason.to_string()))?
        }
    };
    let key = match columns.key {
        Some(index) => row.field(index, key),
        None => &[],
    };
    Ok(Some(RowEvent { time, key, cost }))
}

#[cfg(test)]
mod written {
    use super::*;

    #[test]
    fn a_fraction_after_the_clock_or_a_finer_epoch_is_finer_than_seconds() {
        let rfc = TimeLayout::Named(TimeFormat::Rfc3339);
        let epoch = TimeLayout::Named(TimeFormat::UnixS);
        assert!(written_finer(b"2025-07-30T00:30:00.000Z", &rfc));
        assert!(written_finer(b"2025-07-30T00:30:00,5+05:30", &rfc));
        assert!(!written_finer(b"2025-07-30T00:30:00Z", &rfc));
        assert!(!written_finer(b"2025-07-30", &rfc));
        assert!(written_finer(b"1753835400.300", &epoch));
        assert!(!written_finer(b"1753835400", &epoch));
        assert!(written_finer(b"1753835400300", &TimeLayout::Named(TimeFormat::UnixMs)));
        // Dots in a date are no fraction; the CLF's time has none.
        assert!(!written_finer(b"30.07.2025 00:30:00", &rfc));
        assert!(!written_finer(b"30/Jul/2025:00:30:00 +0000", &rfc));
    }
}
