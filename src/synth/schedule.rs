//! What a simulation does next: a queue of pending items, earliest first, ties in the order
//! they were scheduled, so that the output depends on the seed alone.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Items scheduled at times (in the simulation's own unit) before a horizon; what is
/// scheduled at or past the horizon never happens. Memory follows what is pending, not what
/// has happened.
#[derive(Debug)]
pub(crate) struct Schedule<T> {
    heap: BinaryHeap<Entry<T>>,
    seq: u64,
    horizon: f64,
}

impl<T> Schedule<T> {
    /// Returns an empty schedule that ends at `horizon`.
    pub(crate) fn new(horizon: f64) -> Schedule<T> {
        Schedule { heap: BinaryHeap::new(), seq: 0, horizon }
    }

    /// Schedules `item` at `at`, if that is before the horizon.
    pub(crate) fn push(&mut self, at: f64, item: T) {
        if at < self.horizon {
            self.seq += 1;
            self.heap.push(Entry { at, seq: self.seq, item });
        }
    }

    /// Takes the earliest item, with its time.
    pub(crate) fn pop(&mut self) -> Option<(f64, T)> {
        self.heap.pop().map(|e| (e.at, e.item))
    }
}

#[derive(Debug)]
struct Entry<T> {
    at: f64,
    seq: u64,
    item: T,
}

// The heap is a max-heap: order by time reversed, then by the order pushed.
impl<T> Ord for Entry<T> {
    fn cmp(&self, other: &Entry<T>) -> Ordering {
        other.at.total_cmp(&self.at).then(other.seq.cmp(&self.seq))
    }
}

impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, other: &Entry<T>) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<T> PartialEq for Entry<T> {
    fn eq(&self, other: &Entry<T>) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl<T> Eq for Entry<T> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_first_ties_in_order_and_nothing_past_the_horizon() {
        let mut s = Schedule::new(10.0);
        for (at, item) in [(5.0, 'a'), (1.0, 'b'), (5.0, 'c'), (10.0, 'x'), (0.5, 'd')] {
            s.push(at, item);
        }
        let order: Vec<char> = std::iter::from_fn(|| s.pop()).map(|(_, i)| i).collect();
        assert_eq!(order, ['d', 'b', 'a', 'c']);
    }
}
