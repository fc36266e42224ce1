//! Given: a limiter whose decisions are made elsewhere, in Redis, and handed to it.

use super::{Algorithm, Limiter, Waits};
use crate::units::rate::Rate;
use crate::units::time::Timestamp;

/// Stands in for a limiter that runs in Redis: each decision, with a leaky queue's wait,
/// is handed to it before the event it is for, so that the counting, the windows and the
/// promise check around it are the same as for a limiter in memory.
#[derive(Clone, Debug)]
pub struct Given {
    next: Option<(bool, i128)>,
    waits: Option<Waits>,
}

impl Given {
    /// Returns a stand-in for `algorithm` at `rate`; a leaky queue's keeps its waits.
    pub fn new(algorithm: Algorithm, rate: Rate) -> Given {
        Given { next: None, waits: (algorithm == Algorithm::LeakyQueue).then(|| Waits::new(rate)) }
    }

    /// Hands over the next decision: whether it passes, and how many units of 1/N µs a
    /// leaky queue holds it.
    pub fn set(&mut self, pass: bool, wait: i128) {
        self.next = Some((pass, wait));
    }

    /// Returns the waits so far, for a leaky queue.
    pub fn waits(&self) -> Option<Waits> {
        self.waits
    }
}

impl Limiter for Given {
    fn admit(&mut self, _now: Timestamp) -> bool {
        let (pass, wait) = self.next.take().expect("a decision is handed over before each event");
        if let (true, Some(waits)) = (pass, &mut self.waits) {
            waits.record(wait);
        }
        pass
    }
}
