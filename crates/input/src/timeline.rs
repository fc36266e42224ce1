//! A timeline: events kept without their keys, each time with its cost.

use std::ops::Range;

use super::error::ReadError;
use super::event::Event;
use super::keys::Groups;
use super::sink::Sink;
use crate::units::time::Timestamp;

/// Events kept in order without their keys: each time, and each cost once one is not 1.
/// It takes 8 bytes an event, 16 once weighted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Timeline {
    times: Vec<Timestamp>,
    costs: Option<Vec<u64>>,
}

impl Timeline {
    /// Returns a timeline of no events.
    pub fn new() -> Timeline {
        Timeline::default()
    }

    /// Adds an event at `time` that costs `cost`.
    #[inline]
    pub fn push(&mut self, time: Timestamp, cost: u64) {
        if cost != 1 && self.costs.is_none() {
            self.costs = Some(vec![1; self.times.len()]);
        }
        self.times.push(time);
        if let Some(costs) = &mut self.costs {
            costs.push(cost);
        }
    }

    /// Returns the number of events.
    pub fn len(&self) -> usize {
        self.times.len()
    }

    /// Returns whether there are no events.
    pub fn is_empty(&self) -> bool {
        self.times.is_empty()
    }

    /// Returns the cost of event `n`.
    #[inline]
    pub fn cost(&self, n: usize) -> u64 {
        self.costs.as_ref().map_or(1, |costs| costs[n])
    }

    /// Keeps the first `len` events and forgets the rest, keeping the memory they took.
    pub fn truncate(&mut self, len: usize) {
        self.times.truncate(len);
        if let Some(costs) = &mut self.costs {
            costs.truncate(len);
        }
    }

    /// Forgets every event, keeping the memory they took.
    pub fn clear(&mut self) {
        self.truncate(0);
    }

    /// Returns the events' times, in order.
    pub fn times(&self) -> &[Timestamp] {
        &self.times
    }

    /// Returns the events' costs, one per time, if any is not 1.
    pub fn costs(&self) -> Option<&[u64]> {
        self.costs.as_deref()
    }

    /// Returns the events numbered `range`, in order: each time with its cost.
    #[inline]
    pub fn each(&self, range: Range<usize>) -> impl Iterator<Item = (Timestamp, u64)> + '_ {
        let start = range.start;
        self.times[range].iter().enumerate().map(move |(k, &time)| (time, self.cost(start + k)))
    }

    /// Returns the events, in order, each under key 0.
    pub fn events(&self) -> impl Iterator<Item = Event> + '_ {
        self.each(0..self.len()).map(|(time, cost)| Event { cost, ..Event::new(time, 0) })
    }

    /// Returns the events in the order `groups` puts them: key by key.
    pub fn gather(&self, groups: &Groups) -> Timeline {
        Timeline {
            times: groups.gather(&self.times),
            costs: self.costs.as_deref().map(|costs| groups.gather(costs)),
        }
    }
}

impl Sink for Timeline {
    type Error = ReadError;

    fn event(&mut self, event: Event) -> Result<(), ReadError> {
        self.push(event.time, event.cost);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(micros: i64) -> Timestamp {
        Timestamp::from_micros(micros).unwrap()
    }

    #[test]
    fn keeps_costs_only_once_one_is_not_1() {
        let mut timeline = Timeline::new();
        timeline.push(at(1), 1);
        timeline.push(at(2), 1);
        assert_eq!(timeline.costs(), None);
        timeline.push(at(3), 7);
        timeline.push(at(4), 1);
        assert_eq!(timeline.costs(), Some(&[1, 1, 7, 1][..]));
        let each: Vec<_> = timeline.each(1..3).collect();
        assert_eq!(each, [(at(2), 1), (at(3), 7)]);
        let costs: Vec<u64> = timeline.events().map(|e| e.cost).collect();
        assert_eq!(costs, [1, 1, 7, 1]);
    }

    #[test]
    fn gathers_costs_with_their_times() {
        let mut timeline = Timeline::new();
        [(1, 2), (2, 1), (3, 5)].into_iter().for_each(|(t, c)| timeline.push(at(t), c));
        let grouped = timeline.gather(&Groups::new(&[1, 0, 1], 2));
        let each: Vec<_> = grouped.each(0..3).collect();
        assert_eq!(each, [(at(2), 1), (at(1), 2), (at(3), 5)]);
    }
}
