//! A progress bar on stderr for long reads, shown only to a person at a terminal.

use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How long a read runs before its progress is shown.
const AFTER: Duration = Duration::from_secs(1);

/// Counts rows as they are read, and once a read has taken a second, draws a bar (of bytes,
/// when the input's size is known) on stderr. It checks the clock only every 65 536 rows,
/// so that it costs nothing on the way.
pub struct Progress {
    enabled: bool,
    total: Option<u64>,
    start: Instant,
    bar: Option<ProgressBar>,
}

impl Progress {
    /// Returns a tracker that draws only if `enabled`; `total` is the input's size in bytes.
    pub fn new(enabled: bool, total: Option<u64>) -> Progress {
        Progress { enabled, total, start: Instant::now(), bar: None }
    }

    /// Notes that `rows` rows and `bytes` bytes have been read.
    #[inline]
    pub fn tick(&mut self, rows: u64, bytes: u64) {
        if self.enabled && rows.is_multiple_of(65_536) {
            self.draw(rows, bytes);
        }
    }

    fn draw(&mut self, rows: u64, bytes: u64) {
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

    fn bar(&self) -> ProgressBar {
        let target = ProgressDrawTarget::stderr_with_hz(5);
        let (bar, template) = match self.total {
            Some(total) => (
                ProgressBar::with_draw_target(Some(total), target),
                "{bar:40} {binary_bytes}/{binary_total_bytes} read, {eta} left",
            ),
            None => {
                (ProgressBar::with_draw_target(None, target), "{spinner} {human_pos} rows read")
            }
        };
        // Both templates are constants of this file; indicatif refuses only a malformed one.
        bar.set_style(ProgressStyle::with_template(template).expect("a valid template"));
        bar
    }
}

impl Drop for Progress {
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
    fn a_bar_appears_only_after_a_second_and_only_if_enabled() {
        let mut quick = Progress::new(true, Some(100));
        quick.tick(65_536, 10);
        assert!(quick.bar.is_none(), "not within the first second");
        let mut slow = Progress::new(true, Some(100));
        slow.start -= Duration::from_secs(2);
        slow.tick(65_535, 10);
        assert!(slow.bar.is_none(), "the clock is read only every 65 536 rows");
        slow.tick(65_536, 10);
        assert_eq!(slow.bar.as_ref().map(ProgressBar::position), Some(10));
        let mut off = Progress::new(false, None);
        off.start -= Duration::from_secs(2);
        off.tick(65_536, 10);
        assert!(off.bar.is_none(), "never when stderr is not a terminal");
    }
}
