//! What to read from each row, and which rows to keep.

use super::cost::Cost;
use super::filter::{self, ColumnFilter, RowFilter};
use super::format::InputFormat;
use super::keys::KeyNotes;
use super::log_format::LogFormat;
pub use super::ties::Ties;
use crate::progress::{Measure, ShowProgress, Stop, Ticker};
use crate::units::layout::TimeLayout;
use crate::units::time::Timestamp;

/// What to read from each row, and which rows to keep.
#[derive(Clone, Debug)]
pub struct ReadOptions {
    /// The layout of the input.
    pub format: InputFormat,
    /// For CSV and TSV, the byte between fields, if not the format's own (`,` or tab).
    pub delimiter: Option<u8>,
    /// For CSV and TSV, whether the first row names the columns; without one, the columns
    /// are named by number from 1, and the first row is data.
    pub headers: bool,
    /// For an access log, its nginx `log_format`, if not the combined log format.
    pub log_format: Option<LogFormat>,
    /// The name of the column holding each event's time; names separated by commas give
    /// a time split over columns, joined with one space before it is read.
    pub time_column: String,
    /// How that column is written.
    pub time_format: TimeLayout,
    /// Keep only the rows that all these keep, on their times or their columns.
    pub filters: Vec<RowFilter>,
    /// What each event costs: 1, the same number for all, or a column's.
    pub cost: Cost,
    /// Columns read beside the event's own from each kept row, by name: a request's
    /// duration and token counts ([`read_requests`](crate::requests::read_requests)).
    pub also: Vec<String>,
    /// The column whose values give each event its key, for limits per key.
    pub key_column: Option<String>,
    /// What asked for the key column, for messages: `--key` unless said, as a column
    /// filter says what asked for it.
    pub key_asked_by: &'static str,
    /// What shows a read's progress, if anything does: a progress bar, say.
    pub progress: Option<ShowProgress>,
    /// Whether the caller asked the read to stop: never, by default.
    pub stop: Stop,
    /// How many bad rows may be skipped (and counted) rather than stop the reading.
    pub skip_bad: u64,
    /// Told the number of the key whose value is empty, once reading meets it: shared with
    /// the limits that let such an event through uncounted, as their systems do.
    pub key_notes: KeyNotes,
    /// How many threads may read and work on the events: with 1, all is done on the
    /// calling thread. The events and what is made of them are the same for any number.
    pub threads: usize,
    /// How events written at the same whole second are read: together (the times as
    /// written), or spread evenly across their second.
    pub ties: Ties,
    /// Whether this read reads the input again, from its start, its rows having come out
    /// of time order: its progress says so.
    pub again: bool,
}

impl ReadOptions {
    /// Returns the progress of a read measured by `measure` (its bytes to read, if known,
    /// and what counts them off the disk), shown as `progress` shows it, and stopped when
    /// `stop` says.
    pub(crate) fn ticker(&self, (total, raw): Measure) -> Ticker {
        Ticker::new(self.progress.map(|make| make(total, self.again)), &self.stop, raw)
    }

    /// Returns options that read the `time` column in RFC 3339, keeping every row.
    pub fn new() -> ReadOptions {
        ReadOptions {
            format: InputFormat::Csv,
            delimiter: None,
            headers: true,
            log_format: None,
            time_column: "time".into(),
            time_format: TimeLayout::default(),
            filters: Vec::new(),
            cost: Cost::default(),
            also: Vec::new(),
            key_column: None,
            key_asked_by: "--key",
            progress: None,
            stop: Stop::default(),
            skip_bad: 0,
            key_notes: KeyNotes::default(),
            threads: available_threads(),
            ties: Ties::Together,
            again: false,
        }
    }
}

impl ReadOptions {
    /// Returns the byte between fields of a CSV or TSV: the one asked for, else the
    /// format's.
    pub fn delimiter(&self) -> u8 {
        self.delimiter.unwrap_or(if self.format == InputFormat::Tsv { b'\t' } else { b',' })
    }

    /// Returns the range of times the filters keep: from the latest `--since`, before the
    /// earliest `--until`, each `None` where none bounds it.
    pub fn time_range(&self) -> (Option<Timestamp>, Option<Timestamp>) {
        filter::time_range(&self.filters)
    }

    /// Returns the column each event's cost is read from, if any.
    pub fn cost_column(&self) -> Option<&str> {
        match &self.cost {
            Cost::Column(name) => Some(name),
            Cost::Each(_) => None,
        }
    }

    /// Returns the filters that read a column, in their order.
    pub fn column_filters(&self) -> impl Iterator<Item = &ColumnFilter> {
        self.filters.iter().filter_map(RowFilter::column)
    }
}

impl Default for ReadOptions {
    fn default() -> ReadOptions {
        ReadOptions::new()
    }
}

/// Returns the number of threads the machine runs at once: its cores, or 1 if that
/// cannot be told.
pub fn available_threads() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
}
