//! The busiest window: the most events in any half-open window of a given length.

use std::collections::VecDeque;

use crate::units::time::{Span, Timestamp};

/// Finds, over events given in time order, the largest number that fall in one half-open
/// window `[s, s + length)`, and the earliest such window.
///
/// It keeps only the times inside the current window, so memory grows with the busiest
/// window's count, not with the number of events.
#[derive(Clone, Debug)]
pub struct BusiestWindow {
    length: Span,
    recent: VecDeque<Timestamp>,
    best: Option<(Timestamp, u64)>,
}

/// The busiest window found: its length, where it starts (the time of its first event;
/// `None` if there were no events) and how many events it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Busiest {
    /// The length of the window.
    pub length: Span,
    /// The time of the first event in the earliest busiest window.
    pub start: Option<Timestamp>,
    /// The number of events in it.
    pub count: u64,
}

impl BusiestWindow {
    /// Returns a tracker for windows of `length`, which must be positive.
    pub fn new(length: Span) -> BusiestWindow {
        debug_assert!(!length.is_zero());
        BusiestWindow { length, recent: VecDeque::new(), best: None }
    }

    /// Counts an event at `time`, which is no earlier than the last one.
    #[inline]
    pub fn push(&mut self, time: Timestamp) {
        let length = self.length.as_micros();
        // An event exactly `length` after the window's first is outside it: half-open.
        while self.recent.front().is_some_and(|&first| time.since(first) >= length) {
            self.recent.pop_front();
        }
        self.recent.push_back(time);
        let count = self.recent.len() as u64;
        if self.best.is_none_or(|(_, best)| count > best) {
            self.best = Some((self.recent[0], count));
        }
    }

    /// Forgets every event, keeping the memory it took.
    pub fn clear(&mut self) {
        self.recent.clear();
        self.best = None;
    }

    /// Returns the busiest window so far.
    pub fn busiest(&self) -> Busiest {
        Busiest {
            length: self.length,
            start: self.best.map(|(start, _)| start),
            count: self.best.map_or(0, |(_, count)| count),
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn at(micros: i64) -> Timestamp {
        Timestamp::from_micros(micros).unwrap()
    }

    fn busiest(length: i64, times: &[i64]) -> Busiest {
        let mut window = BusiestWindow::new(Span::from_micros(length).unwrap());
        times.iter().for_each(|&t| window.push(at(t)));
        window.busiest()
    }

    #[test]
    fn counts_half_open_windows() {
        // [0, 10) holds 0, 5, 9; 10 is outside it. [5, 15) holds 5, 9, 10, 14.
        let found = busiest(10, &[0, 5, 9, 10, 14, 30]);
        assert_eq!((found.start, found.count), (Some(at(5)), 4));
        assert_eq!(busiest(10, &[0, 10, 20]).count, 1);
        assert_eq!(busiest(10, &[7, 7, 7]).count, 3);
    }

    #[test]
    fn reports_the_earliest_of_equally_busy_windows() {
        let found = busiest(10, &[0, 1, 50, 51]);
        assert_eq!((found.start, found.count), (Some(at(0)), 2));
    }

    #[test]
    fn no_events_means_no_window() {
        let found = busiest(10, &[]);
        assert_eq!((found.start, found.count), (None, 0));
    }

    proptest! {
        #[test]
        fn matches_brute_force(length in 1i64..50, mut times in prop::collection::vec(-100i64..100, 0..60)) {
            times.sort();
            let found = busiest(length, &times);
            // Every window worth checking starts at an event.
            let brute = times
                .iter()
                .map(|&s| (times.iter().filter(|&&t| t >= s && t < s + length).count(), s))
                .fold((0, None), |best, (count, s)| if count > best.0 { (count, Some(at(s))) } else { best });
            prop_assert_eq!((usize::try_from(found.count).unwrap(), found.start), brute);
        }
    }
}
