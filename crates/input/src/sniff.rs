//! What a file's first line says of it, read before the file is: how an access log is
//! known whatever its name.

use std::io::{BufRead, BufReader, Read};

/// Returns a regular file's first line (at most 64 KiB of it). Only a regular file is
/// looked at, which reading again starts over; a FIFO or a device is left unread (opening
/// a FIFO to look would take its writer's lines).
pub(crate) fn first_line(path: &std::path::Path) -> Option<Vec<u8>> {
    if !std::fs::metadata(path).ok()?.is_file() {
        return None;
    }
    let file = std::fs::File::open(path).ok()?;
    let mut first = Vec::new();
    BufReader::new(file.take(64 << 10)).read_until(b'\n', &mut first).ok()?;
    Some(first)
}
