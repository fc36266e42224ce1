//! One piece of an input, parsed on its own thread: its span, its events and its counts.

use super::error::ReadError;
use super::event::Event;
use super::keys::{KeyTable, wide};
use super::pipeline::{Batch, Flow};
use super::reading::Header;
use super::stats::ReadStats;

/// One piece, parsed: where it began and ended, its line breaks, its kept rows, and what
/// reading counted in it.
pub(super) struct Piece {
    pub(super) start: u64,
    pub(super) end: u64,
    pub(super) lines: u64,
    pub(super) batch: Batch,
    pub(super) rows: u64,
    pub(super) left_out_empty: u64,
    /// Whether a time in it was written with a fraction of a second.
    pub(super) fractions: bool,
    /// A row the fast path does not take: the piece is read again on one thread.
    pub(super) stopped: bool,
    /// The records end in it (a GeoJSON `features` array's end): what follows is read on
    /// one thread.
    pub(super) last: bool,
}

impl Piece {
    /// Numbers the keys of the piece's events in `keys` and gives each event to `take`, in
    /// order, until it says stop; counts what the piece holds in `stats`. `line` is the line
    /// the piece starts on, for a key that gets no number.
    pub(super) fn deliver<E: From<ReadError>>(
        &mut self,
        line: u64,
        header: &Header,
        keys: &mut KeyTable,
        stats: &mut ReadStats,
        take: &mut impl FnMut(Event) -> Result<Flow, E>,
    ) -> Result<Flow, E> {
        // The events before a key that gets no number are taken, then the error.
        let keyed = header.columns.key.is_some();
        let numbered = self.batch.number(keyed, keys, &header.name, line);
        for event in 0..self.batch.len() {
            if let Flow::Stop = take(self.batch.event(event))? {
                return Ok(Flow::Stop);
            }
        }
        numbered?;
        stats.rows += self.rows;
        stats.events += wide(self.batch.len());
        stats.left_out_empty += self.left_out_empty;
        stats.fractions |= self.fractions;
        Ok(Flow::More)
    }

    /// Keeps what reading counted while it made the piece's events: the rows left out for
    /// an empty field, and whether a time had a fraction.
    pub(super) fn counted(&mut self, counted: &ReadStats) {
        self.left_out_empty = counted.left_out_empty;
        self.fractions = counted.fractions;
    }

    /// Returns a piece that starts and ends at `at`, with nothing in it.
    pub(super) fn empty(at: u64) -> Piece {
        Piece {
            start: at,
            end: at,
            lines: 0,
            batch: Batch::default(),
            rows: 0,
            left_out_empty: 0,
            fractions: false,
            stopped: false,
            last: false,
        }
    }
}

/// Bytes to parse rows from: they start at `begin` in the input, the rows wanted start
/// before `end`, and `last` says whether the input ends with them.
#[derive(Clone, Copy)]
pub(super) struct PieceBytes<'b> {
    pub(super) bytes: &'b [u8],
    pub(super) begin: u64,
    pub(super) end: u64,
    pub(super) last: bool,
}
