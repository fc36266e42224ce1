//! How far a read has come, told to whoever shows it: the readers draw nothing themselves;
//! and whether its caller asked it to stop.

use std::io::Read;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::error::ReadError;

/// Shows a read's progress: a program's progress bar, say.
pub trait Progress: Send {
    /// Notes that `rows` rows and `bytes` bytes have been read so far. Called every
    /// [`EVERY`] rows, so that it costs nothing on the way.
    fn show(&mut self, rows: u64, bytes: u64);
}

/// Makes the progress of one read, given the input's size in bytes if it is known, and
/// whether the read reads the input again, from its start (its rows came out of time
/// order, and are read again to be sorted), so that a bar starting over says why.
pub type ShowProgress = fn(total: Option<u64>, again: bool) -> Box<dyn Progress>;

/// How many rows go between two calls of [`Progress::show`].
pub const EVERY: u64 = 65_536;

/// What a read's progress is measured against: the bytes to read, if known, and what
/// counts the bytes read off the disk, where a reading's own are not those.
pub(crate) type Measure = (Option<u64>, Option<RawBytes>);

/// One read's progress, if it is shown, and whether its caller asked it to stop; with
/// [`RawBytes`], the bytes shown are those counted there, off the disk.
pub(crate) struct Ticker(Option<Box<dyn Progress>>, Stop, Option<RawBytes>);

/// The bytes read off the disk beneath a decoder or across several files, where the
/// bytes a reading has come to are not those of the total a file's size gives: what a
/// compressed or rotated input's progress is shown in. Clones share one count.
#[derive(Clone, Debug, Default)]
pub(crate) struct RawBytes(Arc<AtomicU64>);

impl RawBytes {
    /// Returns `inner`, its bytes counted here as they are read.
    pub(crate) fn counting<R: Read>(&self, inner: R) -> Counting<R> {
        Counting { inner, count: self.clone() }
    }

    /// Starts the count again, for a read from the start.
    pub(crate) fn restart(&self) {
        self.0.store(0, Ordering::Relaxed);
    }

    fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// A reader whose bytes a [`RawBytes`] counts.
pub(crate) struct Counting<R> {
    inner: R,
    count: RawBytes,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        // A read's length fits in 64 bits on every platform Rust supports.
        self.count.0.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

impl Ticker {
    /// Returns the progress of a read, shown by `show` if given, stopped when `stop` says;
    /// in the bytes `raw` counts, if given (`ReadOptions::ticker` makes it).
    pub(crate) fn new(
        show: Option<Box<dyn Progress>>,
        stop: &Stop,
        raw: Option<RawBytes>,
    ) -> Ticker {
        Ticker(show, stop.clone(), raw)
    }

    /// Notes that `rows` rows and `bytes` bytes have been read, one row more than before;
    /// an error if the caller asked the read to stop (looked at every [`EVERY`] rows).
    #[inline]
    pub(crate) fn tick(&mut self, rows: u64, bytes: u64) -> Result<(), ReadError> {
        match rows.is_multiple_of(EVERY) {
            true => self.batch(rows, bytes),
            false => Ok(()),
        }
    }

    /// Notes that `rows` rows and `bytes` bytes have been read, a batch of rows more than
    /// before; an error if the caller asked the read to stop.
    pub(crate) fn batch(&mut self, rows: u64, bytes: u64) -> Result<(), ReadError> {
        if let Some(progress) = &mut self.0 {
            progress.show(rows, self.2.as_ref().map_or(bytes, RawBytes::get));
        }
        self.1.check()
    }
}

/// Whether the caller of a read asked it to stop: a program that runs a command for its
/// user, at Ctrl-C (Python's `KeyboardInterrupt`). Clones share one flag; the default is
/// never asked.
#[derive(Clone, Debug, Default)]
pub struct Stop(Option<Arc<AtomicBool>>);

impl Stop {
    /// Returns a flag not yet raised.
    pub fn new() -> Stop {
        Stop(Some(Arc::default()))
    }

    /// Asks every read with this flag to stop.
    pub fn stop(&self) {
        if let Some(flag) = &self.0 {
            flag.store(true, Ordering::Relaxed);
        }
    }

    /// An error if the read was asked to stop.
    pub fn check(&self) -> Result<(), ReadError> {
        match &self.0 {
            Some(flag) if flag.load(Ordering::Relaxed) => Err(ReadError::Stopped),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts the calls it gets.
    struct Count(std::sync::Arc<std::sync::atomic::AtomicU64>);

    impl Progress for Count {
        fn show(&mut self, _rows: u64, _bytes: u64) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }

    #[test]
    fn progress_is_shown_every_65_536_rows_and_only_if_asked() {
        static CALLS: std::sync::LazyLock<std::sync::Arc<std::sync::atomic::AtomicU64>> =
            std::sync::LazyLock::new(Default::default);
        let show: ShowProgress = |_, _| Box::new(Count(CALLS.clone()));
        let mut ticker = Ticker::new(Some(show(Some(100), false)), &Stop::default(), None);
        for rows in 1..=3 * EVERY {
            ticker.tick(rows, rows).unwrap();
        }
        assert_eq!(CALLS.load(std::sync::atomic::Ordering::Relaxed), 3);
        let mut off = Ticker::new(None, &Stop::default(), None);
        off.tick(EVERY, 1).unwrap();
        assert!(off.0.is_none());
    }

    #[test]
    fn a_read_asked_to_stop_stops_at_its_next_look() {
        let stop = Stop::new();
        let mut ticker = Ticker::new(None, &stop, None);
        assert!(ticker.tick(EVERY, 1).is_ok());
        stop.stop();
        // Looked at every EVERY rows, and at every batch.
        assert!(ticker.tick(EVERY + 1, 1).is_ok());
        assert!(matches!(ticker.tick(2 * EVERY, 1), Err(ReadError::Stopped)));
        assert!(matches!(ticker.batch(7, 1), Err(ReadError::Stopped)));
        assert!(Ticker::new(None, &Stop::default(), None).batch(1, 1).is_ok());
    }
}
