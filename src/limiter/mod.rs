//! The six rate limiters, each deciding event by event at a time it is given.
//!
//! No limiter reads a clock: the caller passes `now`, so a replay runs on the catalog's
//! own time, and the same code could run on a live clock.

mod aligned;
mod fixed_window;
mod fleet;
mod gcra;
mod keyed;
mod leaky_queue;
#[cfg(feature = "cli")]
pub(crate) mod promise;
mod sliding_counter;
mod sliding_log;
mod token_bucket;

#[cfg(test)]
mod tests;

pub use aligned::{AlignedWindows, Step};
pub use fixed_window::FixedWindow;
pub use fleet::{AnyFleet, Fleet, Share};
pub use gcra::Gcra;
pub use keyed::{AnyPerKey, PerKey};
pub use leaky_queue::{LeakyQueue, Waits};
pub use sliding_counter::SlidingCounter;
pub use sliding_log::SlidingLog;
pub use token_bucket::TokenBucket;

use std::num::NonZeroU64;

use crate::units::rate::Rate;
use crate::units::time::Timestamp;

/// A rate limiter that decides, one event at a time, whether the event passes.
pub trait Limiter {
    /// Decides on an event at `now`, records it if it passes, and says how long it waits
    /// (only a leaky queue delays). With `force`, the event passes whatever the limiter
    /// would decide; see [`charge`](Limiter::charge).
    ///
    /// Events must come in non-decreasing time order.
    fn take(&mut self, now: Timestamp, force: bool) -> Decision;

    /// Decides whether an event at `now` passes, and records it if it does.
    #[inline]
    fn admit(&mut self, now: Timestamp) -> bool {
        self.take(now, false).passed
    }

    /// Decides on an event as [`admit`](Limiter::admit) does, with how long it waits.
    #[inline]
    fn decide(&mut self, now: Timestamp) -> Decision {
        self.take(now, false)
    }

    /// Records an event at `now` as passed, whatever the limiter would decide. A limiter
    /// that takes in what others admitted (the shared state of a fleet) can so be
    /// overspent: a token bucket's level goes below zero, a counter past its limit, and
    /// what comes next pays for it.
    #[inline]
    fn charge(&mut self, now: Timestamp) {
        self.take(now, true);
    }
}

/// A limiter whose changing state can be taken out and put back, so that one limiter's
/// rule can serve many keys, each with its own state; see [`PerKey`].
pub trait KeyedState: Limiter + Clone + std::fmt::Debug {
    /// What the limiter changes as events come; the rest is its rule.
    type State: Clone + std::fmt::Debug;

    /// Returns the state, to be swapped with a key's own.
    fn state(&mut self) -> &mut Self::State;
}

/// One limiter's decision on one event.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Decision {
    /// Whether the event passed (for a leaky queue, was admitted).
    pub passed: bool,
    /// How long an admitted event waits, in units of 1/N µs: only a leaky queue delays.
    pub wait: i128,
}

/// The limiting algorithms, by the names the command line and the JSON output use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum Algorithm {
    /// At most N events in each period-long window aligned to the Unix epoch.
    FixedWindow,
    /// At most N passed events in (t − P, t], remembering each one.
    SlidingLog,
    /// prev·(P − elapsed)/P + cur < N, over two epoch-aligned windows.
    SlidingCounter,
    /// A bucket of b tokens that starts full and refills at N per P.
    TokenBucket,
    /// The token bucket's decisions from one number, tat.
    Gcra,
    /// A queue drained at N per P that drops what would wait over (b − 1)·P/N.
    LeakyQueue,
}

impl Algorithm {
    /// Every algorithm, in the order reports list them.
    pub const ALL: [Algorithm; 6] = [
        Algorithm::FixedWindow,
        Algorithm::SlidingLog,
        Algorithm::SlidingCounter,
        Algorithm::TokenBucket,
        Algorithm::Gcra,
        Algorithm::LeakyQueue,
    ];

    /// Returns the name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::FixedWindow => "fixed-window",
            Algorithm::SlidingLog => "sliding-log",
            Algorithm::SlidingCounter => "sliding-counter",
            Algorithm::TokenBucket => "token-bucket",
            Algorithm::Gcra => "gcra",
            Algorithm::LeakyQueue => "leaky-queue",
        }
    }

    /// Returns true if the algorithm has a burst, b.
    pub fn uses_burst(self) -> bool {
        matches!(self, Algorithm::TokenBucket | Algorithm::Gcra | Algorithm::LeakyQueue)
    }

    /// Returns a new limiter of this kind. Algorithms without a burst ignore `burst`.
    pub fn build(self, rate: Rate, burst: NonZeroU64) -> AnyLimiter {
        match self {
            Algorithm::FixedWindow => AnyLimiter::FixedWindow(FixedWindow::new(rate)),
            Algorithm::SlidingLog => AnyLimiter::SlidingLog(SlidingLog::new(rate)),
            Algorithm::SlidingCounter => AnyLimiter::SlidingCounter(SlidingCounter::new(rate)),
            Algorithm::TokenBucket => AnyLimiter::TokenBucket(TokenBucket::new(rate, burst)),
            Algorithm::Gcra => AnyLimiter::Gcra(Gcra::new(rate, burst)),
            Algorithm::LeakyQueue => AnyLimiter::LeakyQueue(LeakyQueue::new(rate, burst)),
        }
    }
}

/// Any one of the limiters, chosen at run time without dynamic dispatch.
#[derive(Clone, Debug)]
pub enum AnyLimiter {
    /// A [`FixedWindow`].
    FixedWindow(FixedWindow),
    /// A [`SlidingLog`].
    SlidingLog(SlidingLog),
    /// A [`SlidingCounter`].
    SlidingCounter(SlidingCounter),
    /// A [`TokenBucket`].
    TokenBucket(TokenBucket),
    /// A [`Gcra`].
    Gcra(Gcra),
    /// A [`LeakyQueue`].
    LeakyQueue(LeakyQueue),
}

impl Limiter for AnyLimiter {
    #[inline]
    fn take(&mut self, now: Timestamp, force: bool) -> Decision {
        match self {
            AnyLimiter::FixedWindow(l) => l.take(now, force),
            AnyLimiter::SlidingLog(l) => l.take(now, force),
            AnyLimiter::SlidingCounter(l) => l.take(now, force),
            AnyLimiter::TokenBucket(l) => l.take(now, force),
            AnyLimiter::Gcra(l) => l.take(now, force),
            AnyLimiter::LeakyQueue(l) => l.take(now, force),
        }
    }
}
