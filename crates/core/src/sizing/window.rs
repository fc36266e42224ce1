//! The busiest window: the most units (events, when each costs 1) in any half-open window
//! of a given length.

use std::collections::VecDeque;

use crate::units::time::{Span, Timestamp};

/// Finds, over events given in time order, the largest sum of costs that fall in one
/// half-open window `[s, s + length)`, and the earliest such window.
///
/// It keeps only the times inside the current window, so memory grows with the busiest
/// window's count, not with the number of events; costs are kept beside them only once an
/// event costs other than 1.
#[derive(Clone, Debug)]
pub struct BusiestWindow {
    length: Span,
    recent: VecDeque<Timestamp>,
    /// Once an event costs other than 1: the cost of each event in `recent`, and their sum.
    weighted: Option<Box<Costs>>,
    best: Option<Best>,
}

#[derive(Clone, Debug, Default)]
struct Costs {
    each: VecDeque<u64>,
    /// In 128 bits: a window may hold more events than 2^64 / [`MAX_COST`](crate::limiter::MAX_COST).
    sum: u128,
}

/// The busiest window so far: where it starts, its units and its events.
#[derive(Clone, Copy, Debug)]
struct Best {
    start: Timestamp,
    units: u128,
    events: u64,
}

/// The busiest window found: its length, where it starts (the time of its first event;
/// `None` if there were no events), the units it holds and how many events they are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Busiest {
    /// The length of the window.
    pub length: Span,
    /// The time of the first event in the earliest busiest window.
    pub start: Option<Timestamp>,
    /// The number of events in it.
    pub count: u64,
    /// The sum of their costs: `count` when each costs 1.
    pub units: u128,
}

impl BusiestWindow {
    /// Returns a tracker for windows of `length`, which must be positive.
    pub fn new(length: Span) -> BusiestWindow {
        debug_assert!(!length.is_zero());
        BusiestWindow { length, recent: VecDeque::new(), weighted: None, best: None }
    }

    /// Counts an event at `time`, which is no earlier than the last one.
    #[inline]
    pub fn push(&mut self, time: Timestamp) {
        self.push_cost(time, 1);
    }

    /// Counts an event at `time`, no earlier than the last one, that costs `cost` units (at
    /// most [`MAX_COST`](crate::limiter::MAX_COST)).
    // Always inlined: it runs for every event of every lane, and left to itself the
    // compiler kept it out of line once the weighted path was added (4% more instructions
    // in `compare`, by callgrind).
    #[inline(always)]
    pub fn push_cost(&mut self, time: Timestamp, cost: u64) {
        if cost != 1 || self.weighted.is_some() {
            return self.push_weighted(time, cost);
        }
        // Every event so far cost 1: units are events, and only times are kept.
        self.forget_before(time);
        self.recent.push_back(time);
        // A count of events held in memory: a usize, which fits in a u64.
        let events = self.recent.len() as u64;
        if self.best.is_none_or(|best| events > best.events) {
            self.best = Some(Best { start: self.recent[0], units: u128::from(events), events });
        }
    }

    /// Counts an event as [`push_cost`](BusiestWindow::push_cost) does, keeping its cost.
    fn push_weighted(&mut self, time: Timestamp, cost: u64) {
        let costs = self.weighted.get_or_insert_with(|| {
            let each = VecDeque::from(vec![1; self.recent.len()]);
            // Each event so far cost 1: their sum is their count, a usize.
            Box::new(Costs { each, sum: self.recent.len() as u128 })
        });
        let length = self.length.as_micros();
        // An event exactly `length` after the window's first is outside it: half-open.
        while self.recent.front().is_some_and(|&first| time.since(first) >= length) {
            self.recent.pop_front();
            // Costs are pushed and popped with times, so one is there for each time.
            costs.sum -= u128::from(costs.each.pop_front().expect("a cost for each time"));
        }
        self.recent.push_back(time);
        costs.each.push_back(cost);
        costs.sum += u128::from(cost);
        // A count of events held in memory: a usize, which fits in a u64.
        let (units, events) = (costs.sum, self.recent.len() as u64);
        let start = self.recent[0];
        // The busiest window still growing by events that cost nothing keeps its start and
        // its units, and counts them: its count is every event in it.
        if self
            .best
            .is_none_or(|best| units > best.units || (units == best.units && start == best.start))
        {
            self.best = Some(Best { start, units, events });
        }
    }

    /// Forgets the events `length` or more before `time`: a window is half-open.
    #[inline]
    fn forget_before(&mut self, time: Timestamp) {
        let length = self.length.as_micros();
        while self.recent.front().is_some_and(|&first| time.since(first) >= length) {
            self.recent.pop_front();
        }
    }

    /// Forgets every event, keeping the memory it took.
    pub fn clear(&mut self) {
        self.recent.clear();
        if let Some(costs) = &mut self.weighted {
            costs.each.clear();
            costs.sum = 0;
        }
        self.best = None;
    }

    /// Returns the busiest window so far.
    pub fn busiest(&self) -> Busiest {
        Busiest {
            length: self.length,
            start: self.best.map(|best| best.start),
            count: self.best.map_or(0, |best| best.events),
            units: self.best.map_or(0, |best| best.units),
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

    #[test]
    fn weighs_each_event_by_its_cost() {
        // Costs 1, 5, 1, 1 at 0, 5, 9, 14: [0, 10) holds 7 units in 3 events, [5, 15) 7 in 3
        // too but later; [9, 19) only 2. The earliest wins.
        let mut window = BusiestWindow::new(Span::from_micros(10).unwrap());
        for (t, c) in [(0, 1), (5, 5), (9, 1), (14, 1)] {
            window.push_cost(at(t), c);
        }
        let found = window.busiest();
        assert_eq!((found.start, found.count, found.units), (Some(at(0)), 3, 7));
        // One heavy event outweighs many light ones.
        let mut window = BusiestWindow::new(Span::from_micros(10).unwrap());
        for (t, c) in [(0, 1), (1, 1), (2, 1), (50, 9)] {
            window.push_cost(at(t), c);
        }
        let found = window.busiest();
        assert_eq!((found.start, found.count, found.units), (Some(at(50)), 1, 9));
    }

    #[test]
    fn events_that_cost_nothing_are_counted_in_the_busiest_window() {
        // 60 events a minute apart, each costing 0: the first hour holds all 60, 0 units.
        let mut window = BusiestWindow::new(Span::from_micros(3_600_000_000).unwrap());
        for minute in 0..60 {
            window.push_cost(at(minute * 60_000_000), 0);
        }
        let found = window.busiest();
        assert_eq!((found.start, found.count, found.units), (Some(at(0)), 60, 0));
    }

    proptest! {
        #[test]
        fn weighted_matches_brute_force(
            length in 1i64..50,
            mut events in prop::collection::vec((-100i64..100, 0u64..5), 0..60),
        ) {
            events.sort_by_key(|&(t, _)| t);
            let mut window = BusiestWindow::new(Span::from_micros(length).unwrap());
            events.iter().for_each(|&(t, c)| window.push_cost(at(t), c));
            let found = window.busiest();
            let inside = |s: i64| events.iter().filter(move |&&(t, _)| t >= s && t < s + length);
            let brute = events
                .iter()
                .map(|&(s, _)| (inside(s).map(|&(_, c)| u128::from(c)).sum::<u128>(), s))
                .fold((0, None), |best, (units, s)| if units > best.0 || best.1.is_none() { (units, Some(at(s))) } else { best });
            prop_assert_eq!((found.units, found.start), brute);
            // Its count is every event in it, those that cost nothing too.
            let count = brute.1.map_or(0, |s| inside(s.as_micros()).count());
            prop_assert_eq!(usize::try_from(found.count).unwrap(), count);
        }

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
