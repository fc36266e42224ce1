//! The most units spent in any window of a given length: what a limit let through, really.

use std::collections::VecDeque;

use crate::event::slot;
use crate::units::time::{Span, Timestamp};

/// The units each key spent, as they come in time order, and the most one key spent in any
/// window `[t, t + length)`.
#[derive(Clone, Debug)]
pub struct Spent {
    length: i64,
    keys: Vec<Window>,
    most: u128,
    most_from: Option<Timestamp>,
}

/// One key's spending within the last window's length, oldest first, and its sum.
#[derive(Clone, Debug, Default)]
struct Window {
    spent: VecDeque<(i64, u64)>,
    sum: u128,
}

impl Spent {
    /// Returns a tally over windows of `length`, with nothing spent yet.
    pub fn new(length: Span) -> Spent {
        Spent { length: length.as_micros(), keys: Vec::new(), most: 0, most_from: None }
    }

    /// Counts `units` spent by key `key` at `now`, no earlier than what came before.
    pub fn spend(&mut self, key: u32, now: Timestamp, units: u64) {
        // Nothing spent starts no window: the most's window starts at a spending.
        if units == 0 {
            return;
        }
        let at = slot(key);
        if at >= self.keys.len() {
            self.keys.resize_with(at + 1, Window::default);
        }
        let window = &mut self.keys[at];
        let now = now.as_micros();
        while let Some(&(then, old)) = window.spent.front() {
            // A window [t, t + length) that holds `now` cannot hold `then`.
            if now - then < self.length {
                break;
            }
            window.spent.pop_front();
            window.sum -= u128::from(old);
        }
        window.spent.push_back((now, units));
        window.sum += u128::from(units);
        // Of the windows that hold the most, the report names the earliest; one key's
        // reaches it first, another key's may start earlier and reach it later.
        let from = window.spent.front().and_then(|&(t, _)| Timestamp::from_micros(t));
        if window.sum > self.most || (window.sum == self.most && from < self.most_from) {
            self.most = window.sum;
            self.most_from = from;
        }
    }

    /// Returns the most one key spent in any window, and when the earliest window that
    /// holds it starts: at its first spending (`None` if nothing was spent).
    pub fn most(&self) -> (u128, Option<Timestamp>) {
        (self.most, self.most_from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_most_spent_in_a_minute_counts_what_is_less_than_a_minute_apart() {
        let mut spent = Spent::new(Span::MINUTE);
        let at = |s: i64| Timestamp::from_micros(s * 1_000_000).unwrap();
        // 40 at 0 s, 30 at 30 s, 50 at 60 s (0 s is a minute before: out), 1 at 89 s.
        for (s, units) in [(0, 40), (30, 30), (60, 50), (89, 1)] {
            spent.spend(0, at(s), units);
        }
        // Another key's spending is its own.
        spent.spend(1, at(89), 70);
        assert_eq!(spent.most(), (81, Some(at(30))));
    }
}
