//! What reading found, beside the events: rows, skipped rows, keys.

use super::instants::Instants;
use super::keys::KeyTable;

/// What reading a catalog found, beside its events.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReadStats {
    /// Data rows read, before any filter.
    pub rows: u64,
    /// Rows kept by the filters: the events.
    pub events: u64,
    /// Rows left out by a column filter because their field was empty.
    pub left_out_empty: u64,
    /// Bad rows skipped by `--skip-bad`, and the first one's error.
    pub skipped: u64,
    /// The error of the first row skipped.
    pub first_skipped: Option<String>,
    /// The keys, by number; empty without a key column.
    pub keys: KeyTable,
    /// Whether a time was written with a fraction of a second, or in a layout finer than
    /// seconds: else the times are whole seconds, and events in one second tie.
    pub fractions: bool,
    /// How many events share an instant: what reading in time order saw.
    pub instants: Instants,
    /// Whether the input came out of time order, and its events were kept and sorted: then
    /// they were not taken in the order of their rows.
    pub sorted: bool,
}

impl ReadStats {
    /// Whether the times were written in whole seconds and some events share one: then
    /// the ties can be read two ways (`--ties`), and the figures may differ between them.
    pub fn whole_second_ties(&self) -> bool {
        !self.fractions && self.instants.shared() > 0
    }
}
