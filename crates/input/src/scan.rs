//! A fast reading of the CSV rows most catalogs hold, exactly as the csv crate reads them.
//!
//! It reads a row by jumping with `memchr` from quote to quote and to the line's end,
//! counts the row's fields with a byte count, and walks to the few fields a replay needs.
//! It takes the rows the csv crate (csv-core, with its defaults) reads in the plain way:
//! quotes only around a whole field, `""` for a quote inside one, and lines that end in LF
//! or CRLF. Anything else (a quote inside an unquoted field, text after a closing quote, a
//! lone CR) is [`Unusual`], and the caller reads the piece with the csv crate instead, so
//! that no row is ever read differently.

use memchr::{memchr, memchr2};

use super::keys::{slot, wide};

/// A row the fast reading does not take: the csv crate reads it.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Unusual;

/// One row: where it lies in the bytes, its line breaks, and its quoted fields.
#[derive(Default)]
pub(super) struct Row {
    /// Where the row starts.
    pub start: usize,
    /// Where its text ends: at the byte that ends it (the CR of a CRLF, or the LF), or at
    /// the end of the bytes. The csv crate stops just past that byte, and says that is
    /// where the next row is, and counts lines up to there.
    pub end: usize,
    /// Line breaks inside the row's quoted fields.
    pub lines: u64,
    /// The quoted fields, each as the span inside its quotes.
    quoted: Vec<(usize, usize)>,
}

impl Row {
    /// Reads the row that starts at `start` (not an empty line) in `bytes`, with fields
    /// split by `delimiter`. `Ok(None)` if the bytes end inside it and more may come
    /// (unless `last`: then the bytes' end ends it). `carriage` says whether `bytes` hold
    /// a CR at all; without one, no row needs looking at for a lone CR.
    pub fn read(
        &mut self,
        bytes: &[u8],
        start: usize,
        delimiter: u8,
        last: bool,
        carriage: bool,
    ) -> Result<Option<()>, Unusual> {
        self.start = start;
        self.quoted.clear();
        self.lines = 0;
        let mut at = start;
        loop {
            let Some(found) = memchr2(b'"', b'\n', &bytes[at..]) else {
                if !last {
                    return Ok(None);
                }
                // The csv crate ends a row at a CR too: so the bytes of a pipe are cut
                // just past it, where it says the next row starts.
                self.end = bytes.len() - usize::from(bytes.last() == Some(&b'\r'));
                break;
            };
            let i = at + found;
            if bytes[i] == b'\n' {
                self.end = if i > start && bytes[i - 1] == b'\r' { i - 1 } else { i };
                break;
            }
            // A quote opens a field only at its start.
            if i != start && bytes[i - 1] != delimiter {
                return Err(Unusual);
            }
            let mut q = i + 1;
            let close = loop {
                let Some(found) = memchr(b'"', &bytes[q..]) else {
                    return if last { Err(Unusual) } else { Ok(None) };
                };
                let c = q + found;
                match bytes.get(c + 1) {
                    Some(b'"') => q = c + 2,
                    None if !last => return Ok(None),
                    _ => break c,
                }
            };
            // A closing quote ends the field.
            match bytes.get(close + 1) {
                Some(&b) if b == delimiter || b == b'\n' || b == b'\r' => {}
                None => {}
                Some(_) => return Err(Unusual),
            }
            self.lines += wide(count(&bytes[i + 1..close], b'\n'));
            self.quoted.push((i + 1, close));
            at = close + 1;
        }
        if !carriage {
            return Ok(Some(()));
        }
        // A CR ends a row only before its LF; elsewhere outside quotes it is unusual.
        let mut from = start;
        for &(open, close) in self.quoted.iter().chain([&(self.end + 1, self.end + 1)]) {
            if memchr(b'\r', &bytes[from..(open - 1).min(self.end)]).is_some() {
                return Err(Unusual);
            }
            from = close + 1;
        }
        Ok(Some(()))
    }

    /// Returns the number of fields.
    #[inline]
    pub fn width(&self, bytes: &[u8], delimiter: u8) -> usize {
        let inside: usize = self.quoted.iter().map(|&(o, c)| count(&bytes[o..c], delimiter)).sum();
        count(&bytes[self.start..self.end], delimiter) - inside + 1
    }

    /// Returns field `index` (which must be below the width), with a quoted field's quotes
    /// taken off and its doubled quotes made single in `scratch`.
    pub fn field<'b>(
        &self,
        bytes: &'b [u8],
        index: usize,
        delimiter: u8,
        scratch: &'b mut Vec<u8>,
    ) -> &'b [u8] {
        // The field starts past `index` delimiters outside quotes: found in the unquoted
        // stretches between quoted fields, many delimiters at a time.
        let mut start = self.start;
        let mut left = index;
        let mut quoted = self.quoted.iter();
        let mut next = quoted.next();
        while left > 0 {
            let upto = next.map_or(self.end, |&(open, _)| open - 1);
            match nth(&bytes[start..upto], delimiter, left - 1) {
                Ok(at) => {
                    start += at + 1;
                    left = 0;
                }
                Err(found) => {
                    // Fewer than were left: the quoted field is passed whole.
                    let Some(&(_, close)) = next else {
                        return &bytes[self.end..self.end];
                    };
                    left -= found;
                    start = close + 1;
                    next = quoted.next();
                }
            }
        }
        if let Some(&(open, close)) = next
            && open == start + 1
        {
            let inside = &bytes[open..close];
            if memchr(b'"', inside).is_none() {
                return inside;
            }
            scratch.clear();
            let mut rest = inside;
            while let Some(q) = memchr(b'"', rest) {
                scratch.extend_from_slice(&rest[..=q]);
                rest = &rest[q + 2..];
            }
            scratch.extend_from_slice(rest);
            return scratch;
        }
        let stop = memchr(delimiter, &bytes[start..self.end]).map_or(self.end, |d| start + d);
        &bytes[start..stop]
    }
}

/// Returns where the `n`th `byte` (counted from 0) is in a slice, or how many there are if
/// fewer. A row's fields are short, and a call to memchr a field cost more than looking at
/// 16 bytes at a time in SSE2 for all of them.
#[cfg(target_arch = "x86_64")]
fn nth(bytes: &[u8], byte: u8, n: usize) -> Result<usize, usize> {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8,
    };
    let mut left = n;
    let mut chunks = bytes.chunks_exact(16);
    let mut base = 0;
    // SAFETY: SSE2 is part of every x86-64 processor, and each load reads the 16 bytes of
    // one chunk of the slice, which an unaligned load may.
    let needle = unsafe { _mm_set1_epi8(i8::from_ne_bytes([byte])) };
    for chunk in &mut chunks {
        // SAFETY: as above.
        let matched = unsafe {
            _mm_movemask_epi8(_mm_cmpeq_epi8(
                _mm_loadu_si128(chunk.as_ptr().cast::<__m128i>()),
                needle,
            ))
        };
        // One bit a byte of the 16: the mask is in the low 16 bits.
        let mut mask = u32::from_ne_bytes(matched.to_ne_bytes());
        // At most 16 bits are set: as any u32, a count fits a usize.
        let ones = slot(mask.count_ones());
        if left < ones {
            for _ in 0..left {
                mask &= mask - 1;
            }
            return Ok(base + slot(mask.trailing_zeros()));
        }
        left -= ones;
        base += 16;
    }
    // The last bytes, fewer than 16, one at a time.
    match walk(chunks.remainder(), byte, left) {
        Ok(at) => Ok(base + at),
        Err(found) => Err(n - left + found),
    }
}

/// Returns where the `n`th `byte` (counted from 0) is in a slice, or how many there are if
/// fewer, on other processors.
#[cfg(not(target_arch = "x86_64"))]
fn nth(bytes: &[u8], byte: u8, n: usize) -> Result<usize, usize> {
    walk(bytes, byte, n)
}

/// [`nth`], a byte at a time.
fn walk(bytes: &[u8], byte: u8, n: usize) -> Result<usize, usize> {
    let mut left = n;
    for (at, &b) in bytes.iter().enumerate() {
        if b == byte {
            if left == 0 {
                return Ok(at);
            }
            left -= 1;
        }
    }
    Err(n - left)
}

/// Counts a byte in a slice. A row is short, and a call to memchr's vector count costs
/// more than counting it 16 bytes at a time in SSE2 (which every x86-64 has); a long slice
/// goes to memchr. (The compiler's own loop, built for plain x86-64, took a third of the
/// reading, and a u64 eight bytes at a time a sixth: plain x86-64 has no popcount.)
#[cfg(target_arch = "x86_64")]
fn count(bytes: &[u8], byte: u8) -> usize {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_cvtsi128_si64, _mm_loadu_si128, _mm_sad_epu8, _mm_set1_epi8,
        _mm_setzero_si128, _mm_sub_epi8, _mm_unpackhi_epi64,
    };
    if bytes.len() >= 256 {
        return memchr::memchr_iter(byte, bytes).count();
    }
    let mut chunks = bytes.chunks_exact(16);
    // SAFETY: SSE2 is part of every x86-64 processor, and each load reads the 16 bytes of
    // one chunk of the slice, which an unaligned load may.
    let sum = unsafe {
        let needle = _mm_set1_epi8(i8::from_ne_bytes([byte]));
        let mut sums = _mm_setzero_si128();
        for chunk in &mut chunks {
            let sixteen = _mm_loadu_si128(chunk.as_ptr().cast::<__m128i>());
            // A match is -1 in its byte: subtracting it counts it.
            sums = _mm_sub_epi8(sums, _mm_cmpeq_epi8(sixteen, needle));
        }
        // Under 256 bytes, at most 15 chunks: no byte of `sums` passes 15, and their sum,
        // in the two halves `sad` leaves, fits anywhere.
        let halves = _mm_sad_epu8(sums, _mm_setzero_si128());
        _mm_cvtsi128_si64(halves) + _mm_cvtsi128_si64(_mm_unpackhi_epi64(halves, halves))
    };
    usize::try_from(sum).unwrap_or(0) + chunks.remainder().iter().filter(|&&b| b == byte).count()
}

/// Counts a byte in a slice, eight bytes at a time in a u64, on other processors.
#[cfg(not(target_arch = "x86_64"))]
fn count(bytes: &[u8], byte: u8) -> usize {
    if bytes.len() >= 256 {
        return memchr::memchr_iter(byte, bytes).count();
    }
    const LOW: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    let spread = u64::from_ne_bytes([byte; 8]);
    let mut words = bytes.chunks_exact(8);
    let mut total = 0;
    for word in &mut words {
        let mut eight = [0; 8];
        eight.copy_from_slice(word);
        // A byte of x is zero where the byte matched; its high bit in `zero` is then set,
        // and only then: no carry crosses bytes.
        let x = u64::from_ne_bytes(eight) ^ spread;
        let zero = !(((x & LOW) + LOW) | x | LOW);
        // Widening: at most 8.
        total += zero.count_ones() as usize;
    }
    total + words.remainder().iter().filter(|&&b| b == byte).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads every row of `text` and returns each row's line and fields, or `Unusual`. A
    /// row's line is the csv crate's: that of where the row before it ended.
    fn fields(text: &str) -> Result<Vec<(u64, Vec<String>)>, Unusual> {
        let bytes = text.as_bytes();
        let (mut row, mut scratch, mut rows) = (Row::default(), Vec::new(), Vec::new());
        let (mut at, mut line) = (0, 1);
        loop {
            let mut start = at;
            let mut skipped = 0;
            while start < bytes.len() && (bytes[start] == b'\n' || bytes[start] == b'\r') {
                skipped += u64::from(bytes[start] == b'\n');
                start += 1;
            }
            if start == bytes.len() {
                return Ok(rows);
            }
            row.read(bytes, start, b',', true, true)?.expect("the last bytes end a row");
            let width = row.width(bytes, b',');
            let row_fields = (0..width)
                .map(|i| String::from_utf8_lossy(row.field(bytes, i, b',', &mut scratch)).into())
                .collect();
            rows.push((line, row_fields));
            line += skipped + row.lines + u64::from(bytes.get(row.end) == Some(&b'\n'));
            at = (row.end + 1).min(bytes.len());
        }
    }

    /// What the csv crate makes of the same text: each row's line and fields.
    fn csv_fields(text: &str) -> Vec<(u64, Vec<String>)> {
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .from_reader(text.as_bytes());
        let mut record = csv::StringRecord::new();
        let mut rows = Vec::new();
        while reader.read_record(&mut record).unwrap() {
            let line = record.position().map_or(0, csv::Position::line);
            rows.push((line, record.iter().map(str::to_owned).collect()));
        }
        rows
    }

    proptest::proptest! {
        #[test]
        fn every_row_the_fast_reading_takes_is_what_the_csv_crate_reads(
            text in "[a,\"\n\r]{0,40}"
        ) {
            if let Ok(rows) = fields(&text) {
                proptest::prop_assert_eq!(rows, csv_fields(&text));
            }
        }

        #[test]
        fn long_rows_read_as_the_csv_crate_reads_them(
            text in "(([a,]{0,20}|\"[a,]{0,8}\"),){0,12}[a,]{0,40}\n"
        ) {
            // Rows longer than the 16 bytes that fields are looked for at a time.
            if let Ok(rows) = fields(&text) {
                proptest::prop_assert_eq!(rows, csv_fields(&text));
            }
        }

        #[test]
        fn the_nth_byte_is_where_a_walk_finds_it(
            bytes in proptest::collection::vec(proptest::sample::select(vec![b'a', b',']), 0..80),
            n in 0usize..50,
        ) {
            let places: Vec<usize> = (0..bytes.len()).filter(|&i| bytes[i] == b',').collect();
            let want = places.get(n).copied().ok_or(places.len());
            proptest::prop_assert_eq!(nth(&bytes, b',', n), want);
        }
    }

    #[test]
    fn plain_rows_read_as_the_csv_crate_reads_them() {
        for text in [
            "a,b,c\n1,2,3\n",
            "a,\"b, with a comma\",c\r\n1,\"\",3",
            "x,\"two\nlines\",\"say \"\"hi\"\"\"\n\n\ny,,\n",
            "\"q\"\n,\n",
            "2025-01-01T00:00:00Z,\"place, CA\",us\n",
        ] {
            assert_eq!(fields(text).unwrap(), csv_fields(text), "{text:?}");
        }
    }

    #[test]
    fn what_the_csv_crate_reads_another_way_is_unusual() {
        for text in ["a,b\"c,d\n", "a,\"b\"c,d\n", "a,b\rc,d\n", "a,\"open\n"] {
            assert_eq!(fields(text), Err(Unusual), "{text:?}");
        }
    }

    #[test]
    fn counting_eight_bytes_at_a_time_counts_every_byte_value() {
        let bytes: Vec<u8> = (0..600u32).map(|i| u8::try_from(i * 7 % 256).unwrap()).collect();
        for len in [0, 7, 8, 9, 100, 255, 256, 600] {
            for byte in [0, 1, 0x7f, 0x80, 0xff, b','] {
                let want = bytes[..len].iter().filter(|&&b| b == byte).count();
                assert_eq!(count(&bytes[..len], byte), want, "{len} {byte}");
            }
        }
    }

    #[test]
    fn a_row_cut_short_asks_for_more_unless_it_is_the_last() {
        let mut row = Row::default();
        assert_eq!(row.read(b"a,\"b", 0, b',', false, true), Ok(None));
        assert_eq!(row.read(b"a,b", 0, b',', false, false), Ok(None));
        assert_eq!(row.read(b"a,b", 0, b',', true, false), Ok(Some(())));
        assert_eq!((row.end, row.lines), (3, 0));
        assert_eq!(row.read(b"a,\"b\nc\"\r\nz", 0, b',', false, true), Ok(Some(())));
        assert_eq!((row.end, row.lines), (7, 1));
    }
}
