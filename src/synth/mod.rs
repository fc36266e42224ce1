//! Synthetic catalogs: request logs, and (feature `quakes`) the ETAS model of earthquakes
//! and the USGS CSV layout it is written in.

pub mod access_log;
#[cfg(feature = "quakes")]
pub mod etas;
pub mod requests;
mod schedule;
#[cfg(feature = "quakes")]
pub mod usgs;

/// The most events `synth` will set out to make, on average: 10^8, about 18 GB of CSV and
/// half a minute's work, ten times the largest catalog the benchmarks use.
pub const MAX_EVENTS: f64 = 1e8;

use std::io::{self, BufWriter, Write};

/// Writes a CSV file of `items`: the header line, then one line each that `row` appends to
/// a reused buffer; buffered, streaming.
pub(crate) fn write_rows<T>(
    out: &mut dyn Write,
    header: &[u8],
    items: impl IntoIterator<Item = T>,
    mut row: impl FnMut(&mut Vec<u8>, &T),
) -> io::Result<()> {
    let mut out = BufWriter::with_capacity(1 << 18, out);
    out.write_all(header)?;
    let mut line = Vec::with_capacity(128);
    for item in items {
        line.clear();
        row(&mut line, &item);
        out.write_all(&line)?;
    }
    out.flush()
}
