//! A progress bar on stderr for long reads, shown only to a person at a terminal.

use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use ratelimit_input::progress::Progress;

/// How long a read runs before its progress is shown.
const AFTER: Duration = Duration::from_secs(1);

/// Once a read has taken a second, draws a bar (of bytes and the time left, when the
/// input's size is known: a compressed file's or several files' bytes on the disk) on
/// stderr; a read again, from the start, says so rather than start over silently. The
/// reader tells it its rows only every 65 536 ([`EVERY`](ratelimit_input::progress::EVERY)),
/// so that the clock is read seldom.
pub struct Bar {
    total: Option<u64>,
    again: bool,
    start: Instant,
    bar: Option<ProgressBar>,
}

/// Returns the bar of a read of `total` bytes (if known), `again` if it reads the input
/// again: what the readers show progress with when a person watches stderr.
pub fn bar(total: Option<u64>, again: bool) -> Box<dyn Progress> {
    Box::new(Bar { total, again, start: Instant::now(), bar: None })
}

/// What a bar of a read again says first.
const AGAIN: &str = "rows out of time order: reading again to sort, ";

impl Progress for Bar {
    fn show(&mut self, rows: u64, bytes: u64) {
        if self.bar.is_none() && self.start.elapsed() >= AFTER {
            self.bar = Some(self.bar());
        }
        if let Some(bar) = &self.bar {
            match self.total {
                Some(_) => bar.set_position(bytes),
                None => bar.set_position(rows),
            }
        }
    }
}

impl Bar {
    fn bar(&self) -> ProgressBar {
        let target = ProgressDrawTarget::stderr_with_hz(5);
        let (bar, template) = match self.total {
            Some(total) => (
                ProgressBar::with_draw_target(Some(total), target),
                "{prefix}{bar:40} {binary_bytes}/{binary_total_bytes} read, {eta} left",
            ),
            None => (
                ProgressBar::with_draw_target(None, target),
                "{prefix}{spinner} {human_pos} rows read",
            ),
        };
        // Both templates are constants of this file; indicatif refuses only a malformed one.
        bar.set_style(ProgressStyle::with_template(template).expect("a valid template"));
        if self.again {
            bar.set_prefix(AGAIN);
        }
        bar
    }
}

impl Drop for Bar {
    /// Clears the bar, so that what follows on stderr starts on a clean line.
    fn drop(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bar_appears_only_after_a_second() {
        let new = || Bar { total: Some(100), again: false, start: Instant::now(), bar: None };
        let mut quick = new();
        quick.show(65_536, 10);
        assert!(quick.bar.is_none(), "not within the first second");
        let mut slow = new();
        slow.start -= Duration::from_secs(2);
        slow.show(65_536, 10);
        assert_eq!(slow.bar.as_ref().map(ProgressBar::position), Some(10));
    }

    #[test]
    fn a_read_again_says_so_rather_than_start_over_silently() {
        let mut again = Bar { total: None, again: true, start: Instant::now(), bar: None };
        again.start -= Duration::from_secs(2);
        again.show(65_536, 10);
        assert_eq!(again.bar.as_ref().map(ProgressBar::prefix).as_deref(), Some(AGAIN));
        let mut first = Bar { total: None, again: false, start: Instant::now(), bar: None };
        first.start -= Duration::from_secs(2);
        first.show(65_536, 10);
        assert_eq!(first.bar.as_ref().map(ProgressBar::prefix).as_deref(), Some(""));
    }
}
