//! A column chunk's page headers, read ahead of the decoder, so that no page is
//! decompressed past a bound: the `parquet` crate allocates a page's whole uncompressed
//! size, as its header says, before it decodes a value.
//!
//! A page header is a Thrift struct in the compact protocol: its first fields are the page's
//! type and sizes, and a data page's count of values is in a struct of its own; the rest is
//! skipped, field by field.

use std::io::{self, Read};

/// The most a page may hold uncompressed. Writers make pages of about 1 MiB; a value is held
/// to 16 MiB, as a CSV row is ([`MOST_ROW`](crate::bounded::MOST_ROW)), so that only a page
/// of values past that bound comes near this one.
pub(super) const MOST_PAGE: u64 = 64 << 20;

/// What a page header says: its size uncompressed and compressed, and for a data page
/// its count of values (rows, in a column of one value a row).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Page {
    /// Whether it is a data page (v1 or v2), whose values are rows.
    pub(super) data: bool,
    pub(super) uncompressed: u64,
    pub(super) compressed: u64,
    pub(super) values: u64,
}

/// Reads a page header from `input`, and returns it with the header's length in bytes.
pub(super) fn header(input: impl Read) -> io::Result<(Page, u64)> {
    let mut input = Counted { input, read: 0 };
    let mut page = Page::default();
    let mut id = 0i16;
    while let Some((field, kind)) = field_header(&mut input, &mut id)? {
        match (field, kind) {
            (1, I32) => page.data = matches!(varint(&mut input)?, 0 | 3),
            (2, I32) => page.uncompressed = size(varint(&mut input)?)?,
            (3, I32) => page.compressed = size(varint(&mut input)?)?,
            // A data page's header (v1, 5; v2, 8) and a dictionary page's (7): each begins
            // with its count of values.
            (5 | 7 | 8, STRUCT) => page.values = values(&mut input)?,
            (_, kind) => skip(&mut input, kind, 0)?,
        }
    }
    Ok((page, input.read))
}

/// A size a header gives, which must be at least 0.
fn size(value: i64) -> io::Result<u64> {
    u64::try_from(value).map_err(|_| bad("a negative size"))
}

/// Reads a page type's struct, whose field 1 is its count of values; the rest is skipped.
fn values(input: &mut impl Read) -> io::Result<u64> {
    let (mut id, mut values) = (0i16, 0);
    while let Some((field, kind)) = field_header(input, &mut id)? {
        match (field, kind) {
            (1, I32) => values = size(varint(input)?)?,
            (_, kind) => skip(input, kind, 0)?,
        }
    }
    Ok(values)
}

const I32: u8 = 5;
const STRUCT: u8 = 12;

/// Reads a field's header: its id (by the delta from the one before, `id`) and its type;
/// `None` at the struct's end.
fn field_header(input: &mut impl Read, id: &mut i16) -> io::Result<Option<(i16, u8)>> {
    let byte = byte(input)?;
    if byte == 0 {
        return Ok(None);
    }
    let (delta, kind) = (byte >> 4, byte & 0x0f);
    *id = match delta {
        0 => i16::try_from(varint(input)?).map_err(|_| bad("a field id past 16 bits"))?,
        delta => id.checked_add(i16::from(delta)).ok_or_else(|| bad("a field id past 16 bits"))?,
    };
    Ok(Some((*id, kind)))
}

/// Skips a value of Thrift compact type `kind`, nested `depth` deep.
fn skip(input: &mut impl Read, kind: u8, depth: u32) -> io::Result<()> {
    // Headers nest a few structs deep; a file that nests far more is not a header.
    if depth > 16 {
        return Err(bad("values nested too deep"));
    }
    match kind {
        // true and false, in the field's type; a byte.
        1 | 2 => {}
        3 => {
            byte(input)?;
        }
        // i16, i32, i64: a zigzag varint.
        4..=6 => {
            varint(input)?;
        }
        7 => {
            input.read_exact(&mut [0; 8])?;
        }
        8 => {
            let length = uvarint(input)?;
            let skipped = io::copy(&mut input.take(length), &mut io::sink())?;
            if skipped != length {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
        }
        9 | 10 => {
            let head = byte(input)?;
            let count = match head >> 4 {
                15 => uvarint(input)?,
                count => u64::from(count),
            };
            let element = head & 0x0f;
            for _ in 0..count {
                // A boolean element is a byte of its own.
                if matches!(element, 1 | 2) {
                    byte(input).map(drop)?
                } else {
                    skip(input, element, depth + 1)?
                }
            }
        }
        11 => {
            let count = uvarint(input)?;
            if count > 0 {
                let kinds = byte(input)?;
                for _ in 0..count {
                    for kind in [kinds >> 4, kinds & 0x0f] {
                        if matches!(kind, 1 | 2) {
                            byte(input).map(drop)?
                        } else {
                            skip(input, kind, depth + 1)?
                        }
                    }
                }
            }
        }
        12 => {
            let mut id = 0;
            while let Some((_, kind)) = field_header(input, &mut id)? {
                skip(input, kind, depth + 1)?;
            }
        }
        _ => return Err(bad("a field of no Thrift type")),
    }
    Ok(())
}

fn byte(input: &mut impl Read) -> io::Result<u8> {
    let mut byte = [0];
    input.read_exact(&mut byte)?;
    Ok(byte[0])
}

/// Reads a zigzag varint of at most 64 bits: an integer field's value.
fn varint(input: &mut impl Read) -> io::Result<i64> {
    let value = uvarint(input)?;
    // Zigzag: the low bit is the sign.
    let magnitude = i64::try_from(value >> 1).unwrap_or(i64::MAX);
    Ok(if value & 1 == 0 { magnitude } else { -magnitude - 1 })
}

/// Reads an unsigned varint of at most 64 bits: a length or a count.
fn uvarint(input: &mut impl Read) -> io::Result<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = byte(input)?;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(bad("a varint past 64 bits"))
}

fn bad(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("a page header holds {what}"))
}

/// A reader that counts the bytes read through it.
struct Counted<R> {
    input: R,
    read: u64,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        let read = self.input.read(buffer)?;
        self.read += crate::keys::wide(read);
        Ok(read)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_sizes_and_values_and_skips_the_rest() {
        // type 0 (i32 0), uncompressed 300, compressed 150, crc 7, a data page header
        // (num_values 42, encoding 0, and a statistics struct with a binary max of 3
        // bytes), then the end: in the compact protocol.
        let zigzag = |n: u64| n << 1;
        let mut bytes = vec![0x15, 0x00];
        bytes.push(0x15);
        bytes.extend([0xd8, 0x04]); // 300 zigzag = 600 = 0x258 → 0xd8 0x04
        bytes.push(0x15);
        bytes.extend([0xac, 0x02]); // 150 zigzag = 300 = 0x12c → 0xac 0x02
        bytes.extend([0x15, u8::try_from(zigzag(7)).unwrap()]);
        bytes.push(0x1c); // field 5, a struct
        bytes.extend([0x15, 84]); // num_values 42
        bytes.extend([0x15, 0x00]); // encoding
        bytes.extend([0x3c, 0x18, 0x03, b'a', b'b', b'c', 0x00]); // field 5: struct { 1: binary }
        bytes.push(0x00); // end of the data page header
        bytes.push(0x00); // end of the page header
        bytes.extend(b"page");
        let (page, length) = header(bytes.as_slice()).unwrap();
        assert_eq!(page, Page { data: true, uncompressed: 300, compressed: 150, values: 42 });
        assert_eq!(length, u64::try_from(bytes.len()).unwrap() - 4);
    }

    #[test]
    fn a_header_cut_short_is_an_error() {
        assert!(header(&[0x15, 0x00, 0x15][..]).is_err());
    }
}
