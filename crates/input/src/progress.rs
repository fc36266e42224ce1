//! How far a read has come, told to whoever shows it: the readers draw nothing themselves;
//! and whether its caller asked it to stop.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::ReadError;

/// Shows a read's progress: a program's progress bar, say.
pub trait Progress: Send {
    /// Notes that `rows` rows and `bytes` bytes have been read so far. Called every
    /// [`EVERY`] rows, so that it costs nothing on the way.
    fn show(&mut self, rows: u64, bytes: u64);
}

/// Makes the progress of one read, given the input's size in bytes if it is known.
pub type ShowProgress = fn(total: Option<u64>) -> Box<dyn Progress>;

/// How many rows go between two calls of [`Progress::show`].
pub const EVERY: u64 = 65_536;

/// One read's progress, if it is shown, and whether its caller asked it to stop.
pub(crate) struct Ticker(Option<Box<dyn Progress>>, Stop);

impl Ticker {
    /// Returns the progress of a read of `total` bytes (if known): shown by `show` if
    /// given, stopped when `stop` says.
    pub(crate) fn new(show: Option<ShowProgress>, stop: &Stop, total: Option<u64>) -> Ticker {
        Ticker(show.map(|make| make(total)), stop.clone())
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
            progress.show(rows, bytes);
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
        let show: ShowProgress = |_| Box::new(Count(CALLS.clone()));
        let mut ticker = Ticker::new(Some(show), &Stop::default(), Some(100));
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
