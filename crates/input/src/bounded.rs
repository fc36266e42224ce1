//! A bound on one row's length: a row that never ends is an error, not all of memory.

use std::io::{Read, Seek, SeekFrom};

use super::keys::wide;

/// The most bytes one row may hold: far past any real catalog's or log's row (they hold
/// under a kilobyte), and small enough that holding one costs nothing. README states it.
pub const MOST_ROW: u64 = 16 << 20;

/// What a reader may read ahead of the row it is in (the csv crate and `BufReader` read
/// 64 KiB at a time), so that a row of [`MOST_ROW`] bytes is never refused.
const READ_AHEAD: u64 = 2 << 16;

/// Says that more than [`MOST_ROW`] bytes came since the last row ended.
#[derive(Debug)]
pub struct LongRow;

impl std::fmt::Display for LongRow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "a row longer than {} MiB, the most one row may hold", MOST_ROW >> 20)
    }
}

impl std::error::Error for LongRow {}

/// Whether `error` is the one [`Bounded`] gives for a row too long.
pub fn is_long_row(error: &std::io::Error) -> bool {
    error.get_ref().is_some_and(|inner| inner.is::<LongRow>())
}

/// A reader that fails with [`LongRow`] once more than [`MOST_ROW`] bytes (and what may be
/// read ahead) were read since [`Bounded::row_ended`] was last called.
pub struct Bounded<R> {
    inner: R,
    since: u64,
}

impl<R> Bounded<R> {
    /// Returns `inner`, bounded.
    pub fn new(inner: R) -> Bounded<R> {
        Bounded { inner, since: 0 }
    }

    /// Says that a row ended: the bound starts again.
    pub fn row_ended(&mut self) {
        self.since = 0;
    }

    /// Returns the reader within.
    pub fn get_ref(&self) -> &R {
        &self.inner
    }

    /// Returns the reader within.
    pub fn get_mut(&mut self) -> &mut R {
        &mut self.inner
    }
}

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.since > MOST_ROW + READ_AHEAD {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, LongRow));
        }
        let n = self.inner.read(buf)?;
        self.since += wide(n);
        Ok(n)
    }
}

impl<R: Seek> Seek for Bounded<R> {
    fn seek(&mut self, to: SeekFrom) -> std::io::Result<u64> {
        self.since = 0;
        self.inner.seek(to)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_past_the_bound_fails_and_one_within_it_reads() {
        let long = vec![b'x'; usize::try_from(MOST_ROW + READ_AHEAD + 1).unwrap()];
        let mut reader = Bounded::new(&long[..]);
        let mut sink = Vec::new();
        let error = reader.read_to_end(&mut sink).unwrap_err();
        assert!(is_long_row(&error), "{error}");
        assert_eq!(error.to_string(), "a row longer than 16 MiB, the most one row may hold");
        // A row's end starts the count again.
        let mut reader = Bounded::new(std::io::repeat(b'x').take(40 << 20));
        let mut buffer = vec![0; 1 << 20];
        for _ in 0..40 {
            reader.read_exact(&mut buffer).unwrap();
            reader.row_ended();
        }
    }
}
