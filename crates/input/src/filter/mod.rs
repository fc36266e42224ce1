//! Which rows to keep: a list of filters, each on an event's time or on one column.
//!
//! As fd's filters do, each kind is a value type in a file of its own that says whether it
//! keeps what it is shown; a read applies them all, in order, and keeps what all keep.

mod column;
mod time;

pub use column::{ColumnFilter, ColumnTest};
pub use time::TimeFilter;

use crate::units::time::Timestamp;

/// One filter on rows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RowFilter {
    /// On the event's time: `--since`, `--until`.
    Time(TimeFilter),
    /// On a column's number: `--min-mag`.
    Column(ColumnFilter),
}

impl RowFilter {
    /// Returns the column this filter reads, if it reads one beside the time.
    pub fn column(&self) -> Option<&ColumnFilter> {
        match self {
            RowFilter::Time(_) => None,
            RowFilter::Column(filter) => Some(filter),
        }
    }
}

/// Returns the range of times that `filters` keep: the latest `since` and the earliest
/// `until` among them, each `None` where none bounds it.
pub fn time_range(filters: &[RowFilter]) -> (Option<Timestamp>, Option<Timestamp>) {
    let (mut since, mut until) = (None::<Timestamp>, None::<Timestamp>);
    for filter in filters {
        match filter {
            RowFilter::Time(TimeFilter::Since(t)) => since = since.max(Some(*t)),
            RowFilter::Time(TimeFilter::Until(t)) => until = Some(until.map_or(*t, |u| u.min(*t))),
            RowFilter::Column(_) => {}
        }
    }
    (since, until)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_time_range_is_the_tightest_the_filters_give() {
        let at = |s: i64| Timestamp::from_micros(s * 1_000_000).unwrap();
        let mag = ColumnFilter { column: "mag".into(), at_least: 0, asked_by: "--min-mag" };
        let filters = [
            RowFilter::Time(TimeFilter::Since(at(5))),
            RowFilter::Column(mag.clone()),
            RowFilter::Time(TimeFilter::Until(at(50))),
            RowFilter::Time(TimeFilter::Since(at(9))),
            RowFilter::Time(TimeFilter::Until(at(70))),
        ];
        assert_eq!(time_range(&filters), (Some(at(9)), Some(at(50))));
        assert_eq!(time_range(&[RowFilter::Column(mag)]), (None, None));
        let columns: Vec<_> = filters.iter().filter_map(RowFilter::column).collect();
        assert_eq!(columns.len(), 1);
    }
}
