//! Synthetic catalogs: the ETAS model and the USGS CSV layout it is written in.

pub mod access_log;
pub mod etas;
pub mod requests;
mod schedule;
pub mod usgs;

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
