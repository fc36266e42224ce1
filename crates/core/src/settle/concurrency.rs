//! Requests in flight: counted per key, and capped, as LiteLLM's `max_parallel_requests`.

use std::num::NonZeroU64;

use crate::event::slot;

/// The admitted requests in flight, per key (one count when a layer is not keyed), and the
/// most there ever were at once.
#[derive(Clone, Debug, Default)]
pub struct InFlight {
    counts: Vec<u64>,
    peak: u64,
}

impl InFlight {
    /// Returns how many requests of key `key` are in flight.
    #[inline]
    pub fn of(&self, key: u32) -> u64 {
        self.counts.get(slot(key)).copied().unwrap_or(0)
    }

    /// Counts a request of key `key` that starts.
    #[inline]
    pub fn start(&mut self, key: u32) {
        let at = slot(key);
        if at >= self.counts.len() {
            self.counts.resize(at + 1, 0);
        }
        self.counts[at] += 1;
        self.peak = self.peak.max(self.counts[at]);
    }

    /// Counts a request of key `key`, started before, that ends.
    #[inline]
    pub fn end(&mut self, key: u32) {
        if let Some(count) = self.counts.get_mut(slot(key)) {
            *count = count.saturating_sub(1);
        }
    }

    /// Returns the most requests of one key that were ever in flight at once.
    pub fn peak(&self) -> u64 {
        self.peak
    }
}

/// A cap on requests in flight: a request is admitted if and only if fewer than `max`
/// admitted requests of its key are in flight at its arrival. A request is in flight from
/// its arrival up to, not including, its completion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Concurrency {
    /// The most requests in flight at once.
    pub max: NonZeroU64,
}

impl Concurrency {
    /// Whether a request of key `key` is admitted, with `in_flight` counting those in
    /// flight.
    #[inline]
    pub fn admits(&self, in_flight: &InFlight, key: u32) -> bool {
        in_flight.of(key) < self.max.get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cap_of_two_admits_a_third_only_once_one_ends() {
        let cap = Concurrency { max: NonZeroU64::new(2).unwrap() };
        let mut in_flight = InFlight::default();
        let mut admitted = Vec::new();
        for step in ["start", "start", "try", "end", "try", "try"] {
            match step {
                "start" => in_flight.start(0),
                "end" => in_flight.end(0),
                _ => {
                    let ok = cap.admits(&in_flight, 0);
                    admitted.push(ok);
                    if ok {
                        in_flight.start(0);
                    }
                }
            }
        }
        assert_eq!(admitted, [false, true, false]);
        assert_eq!((in_flight.peak(), in_flight.of(0), in_flight.of(7)), (2, 2, 0));
    }
}
