//! Rows of columnar data (Parquet's, Arrow's) made into events a slice at a time, and the
//! slices taken in order: the part of reading that both formats share.

use super::error::{ReadError, field_error, layout};
use super::event::Event;
use super::keys::{KeyTable, wide};
use super::options::ReadOptions;
use super::piece::Piece;
use super::pipeline::Flow;
use super::reading::{Header, resolve_columns};
use super::row::{Fields, Scratch, row_event};
use super::stats::ReadStats;

/// The rows made into events at a time: enough that a slice's start costs nothing, few
/// enough that the slices in flight (two a worker) take little memory.
pub(super) const SLICE: usize = 16_384;

/// A slice of rows, made into events: its events, its bad rows (up to one more than may
/// be skipped), and whether it ends its row group.
pub(super) struct Slice {
    pub(super) piece: Piece,
    pub(super) bad: Vec<ReadError>,
    pub(super) bad_rows: u64,
    // Read by Parquet's row groups; Arrow's batches have none.
    #[cfg_attr(not(feature = "parquet"), allow(dead_code))]
    pub(super) last: bool,
}

/// Settles which of the columns `names` (a table's, by number) make an event, for input
/// `name`: the header, and the columns to read, each once, in the table's order.
pub(super) fn header(
    names: &csv::ByteRecord,
    options: &ReadOptions,
    name: &str,
) -> Result<(Header, Vec<usize>), ReadError> {
    let columns = resolve_columns(names, options, name)?;
    let mut wanted: Vec<usize> = columns.time.clone();
    wanted.extend(&columns.filters);
    wanted.extend(columns.key);
    if let super::row::CostAt::Column(cost) = columns.cost {
        wanted.push(cost);
    }
    wanted.sort_unstable();
    wanted.dedup();
    let header = Header {
        name: name.to_owned(),
        columns,
        width: names.len(),
        body: csv::Position::new(),
        json: None,
    };
    Ok((header, wanted))
}

/// Makes the events of `rows` rows, the first of them row `first` (counted from 1), each
/// row's fields given by `row`.
pub(super) fn events<F: Fields>(
    rows: usize,
    first: u64,
    header: &Header,
    options: &ReadOptions,
    row: impl Fn(usize) -> F,
) -> Slice {
    let mut piece = Piece::empty(0);
    let (mut scratch, mut counted) = (Scratch::default(), ReadStats::default());
    let (mut bad, mut bad_rows) = (Vec::new(), 0);
    for at in 0..rows {
        let fields = row(at);
        let number = first + wide(at);
        match row_event(&fields, &header.columns, options, &mut scratch, &mut counted) {
            Ok(Some(event)) => piece.batch.push(event.time, event.cost, number, event.key),
            Ok(None) => {}
            Err(p) => {
                bad_rows += 1;
                if wide(bad.len()) <= options.skip_bad {
                    let at = ("row", number);
                    bad.push(field_error(&header.name, at, p.field, &p.value, p.reason));
                }
            }
        }
    }
    piece.rows = wide(rows);
    piece.counted(&counted);
    Slice { piece, bad, bad_rows, last: true }
}

/// What takes the slices in order: counts, bad rows, and the keys' numbers.
pub(super) struct Taker {
    stats: ReadStats,
    keys: KeyTable,
    skip_bad: u64,
}

impl Taker {
    pub(super) fn new(options: &ReadOptions) -> Taker {
        Taker {
            stats: ReadStats::default(),
            keys: KeyTable::telling(&options.key_notes),
            skip_bad: options.skip_bad,
        }
    }

    /// Takes the next slice: refuses a bad row past what may be skipped, numbers the keys,
    /// and gives each event to `take` until it says stop.
    pub(super) fn slice<E: From<ReadError>>(
        &mut self,
        slice: Result<Slice, ReadError>,
        header: &Header,
        take: &mut impl FnMut(Event) -> Result<Flow, E>,
    ) -> Result<Flow, E> {
        let mut slice = slice?;
        let allowed = self.skip_bad;
        if slice.bad_rows > 0 {
            let before = self.stats.skipped;
            if before + slice.bad_rows > allowed {
                // The first bad row past what may be skipped.
                let at = usize::try_from(allowed - before).unwrap_or(usize::MAX);
                let error = slice.bad.into_iter().nth(at);
                return Err(error
                    .unwrap_or_else(|| layout(&header.name, "a bad row".into()))
                    .into());
            }
            self.stats.skipped += slice.bad_rows;
            if self.stats.first_skipped.is_none() {
                self.stats.first_skipped = slice.bad.first().map(ToString::to_string);
            }
        }
        slice.piece.deliver(1, header, &mut self.keys, &mut self.stats, take)
    }

    /// Returns what reading found.
    pub(super) fn finish(self) -> ReadStats {
        ReadStats { keys: self.keys, ..self.stats }
    }
}
