//! Epoch-aligned windows, as the window-counting limiters see time pass.

/// `micros` cut down to a whole `unit` (µs) since the epoch: the window of `unit` that
/// holds it, or the clock of a system that reads whole seconds or milliseconds.
#[inline]
pub(super) fn floor_to(micros: i64, unit: i64) -> i64 {
    micros - micros.rem_euclid(unit)
}

/// The first whole `unit` (µs) since the epoch at or after `micros`; `None` past the
/// range of an `i64`.
#[inline]
pub(super) fn ceil_to(micros: i64, unit: i64) -> Option<i64> {
    micros.checked_add((unit - micros.rem_euclid(unit)) % unit)
}

/// Tracks which window `[k·P, (k+1)·P)` the latest time falls in. Windows are aligned to
/// the Unix epoch, so hourly windows are UTC clock hours. The period P is given with each
/// time rather than kept, so that a limiter keeping one of these per key keeps 16 bytes.
#[derive(Clone, Copy, Debug)]
pub struct AlignedWindows {
    start: i64,
    end: i64,
}

/// How a new time relates to the window of the time before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// It is in the same window.
    Same,
    /// It is in the window right after.
    Next,
    /// It is in a later window, or it is the first time seen.
    Later,
}

impl Default for AlignedWindows {
    fn default() -> AlignedWindows {
        AlignedWindows::new()
    }
}

impl AlignedWindows {
    /// Returns a tracker that has seen no time.
    pub fn new() -> AlignedWindows {
        AlignedWindows { start: i64::MIN, end: i64::MIN }
    }

    /// Moves to the window `period` microseconds long of `now`, no earlier than the last
    /// time, and says how far it went. Every call must give the same period.
    #[inline]
    pub fn advance(&mut self, now: i64, period: i64) -> Step {
        // Times come in order, so the common case needs one comparison; the division runs
        // once per window.
        if now < self.end && now >= self.start {
            return Step::Same;
        }
        let start = floor_to(now, period);
        let step = if start == self.end { Step::Next } else { Step::Later };
        self.start = start;
        self.end = start.saturating_add(period);
        step
    }

    /// Returns how far `now`, in the current window, is from the window's start.
    #[inline]
    pub fn elapsed(&self, now: i64) -> i64 {
        now - self.start
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_through_windows() {
        let mut w = AlignedWindows::new();
        assert_eq!(w.advance(-3, 10), Step::Later);
        assert_eq!(w.elapsed(-3), 7);
        assert_eq!(w.advance(-1, 10), Step::Same);
        assert_eq!(w.advance(0, 10), Step::Next);
        assert_eq!(w.advance(9, 10), Step::Same);
        assert_eq!(w.advance(25, 10), Step::Later);
        assert_eq!(w.elapsed(25), 5);
        assert_eq!(w.advance(30, 10), Step::Next);
    }
}
