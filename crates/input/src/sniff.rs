//! What a file's first line says of it, read before the file is: how an access log is
//! known whatever its name, compressed or not.

use std::io::{BufRead, BufReader, Read};

/// Returns a regular file's first line (at most 64 KiB of it), decompressed if the file
/// is. Only a regular file is looked at, which reading again starts over; a FIFO or a
/// device is left unread (opening a FIFO to look would take its writer's lines).
pub(crate) fn first_line(path: &std::path::Path) -> Option<Vec<u8>> {
    let reader = super::decompress::open_regular(path)?;
    let mut first = Vec::new();
    BufReader::new(reader.take(64 << 10)).read_until(b'\n', &mut first).ok()?;
    Some(first)
}
