//! How far a read has come, told to whoever shows it: the readers draw nothing themselves.

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

/// One read's progress, if it is shown.
pub(crate) struct Ticker(Option<Box<dyn Progress>>);

impl Ticker {
    /// Returns the progress of a read of `total` bytes (if known), shown by `show` if given.
    pub(crate) fn new(show: Option<ShowProgress>, total: Option<u64>) -> Ticker {
        Ticker(show.map(|make| make(total)))
    }

    /// Notes that `rows` rows and `bytes` bytes have been read.
    #[inline]
    pub(crate) fn tick(&mut self, rows: u64, bytes: u64) {
        if let Some(progress) = &mut self.0
            && rows.is_multiple_of(EVERY)
        {
            progress.show(rows, bytes);
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
        let mut ticker = Ticker::new(Some(show), Some(100));
        for rows in 1..=3 * EVERY {
            ticker.tick(rows, rows);
        }
        assert_eq!(CALLS.load(std::sync::atomic::Ordering::Relaxed), 3);
        let mut off = Ticker::new(None, None);
        off.tick(EVERY, 1);
        assert!(off.0.is_none());
    }
}
