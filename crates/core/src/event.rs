//! An event: when it came, whose it is, and what it costs.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::units::time::Timestamp;

/// A key: its number among the keys of a read, from 0 in order of first appearance.
pub type Key = u32;

/// One event of a catalog or log, as every reader gives it and every engine, limiter and
/// sizing routine takes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Event {
    /// When it came: the clock a replay runs on.
    pub time: Timestamp,
    /// Its key's number; 0 when events are not keyed.
    pub key: Key,
    /// The units it spends, at most [`MAX_COST`](crate::limiter::MAX_COST); 1 for an event
    /// that is one request.
    pub cost: u64,
}

impl Event {
    /// Returns an event of cost 1, the cost of every event that is one request.
    #[inline]
    pub fn new(time: Timestamp, key: Key) -> Event {
        Event { time, key, cost: 1 }
    }
}

/// The number of the key whose value is empty, once the reading that numbers keys has met
/// it: shared by that reading and the limits deciding its events, so that a system that
/// lets such an event through uncounted ([`Algorithm::skips_empty_key`]) can. Clones share
/// one cell.
///
/// A reading hands a batch of events over only after numbering its keys, so a limit that
/// is handed an event of the empty key already finds its number here.
///
/// It may also name one value read as the empty one ([`reading_as_empty`]): an access log
/// writes an empty variable as `-`.
///
/// [`Algorithm::skips_empty_key`]: crate::limiter::Algorithm::skips_empty_key
/// [`reading_as_empty`]: EmptyKey::reading_as_empty
#[derive(Clone, Debug, Default)]
pub struct EmptyKey {
    number: Arc<AtomicU64>,
    read_as: Option<Arc<[u8]>>,
}

impl EmptyKey {
    /// Returns a cell, not yet told a number, for which `value` is read as the empty
    /// value: its events are of the empty key, and the key's name is empty.
    pub fn reading_as_empty(value: &[u8]) -> EmptyKey {
        EmptyKey { number: Arc::default(), read_as: Some(value.into()) }
    }

    /// Says that `key` is the empty key's number.
    pub fn set(&self, key: Key) {
        self.number.store(u64::from(key) + 1, Ordering::Relaxed);
    }

    /// Whether `key` is the empty key.
    #[inline]
    pub fn is(&self, key: Key) -> bool {
        self.number.load(Ordering::Relaxed) == u64::from(key) + 1
    }

    /// Returns the value a key of `value` has: empty if `value` is the one read as empty,
    /// else `value`.
    #[inline]
    pub fn value<'v>(&self, value: &'v [u8]) -> &'v [u8] {
        match &self.read_as {
            Some(empty) if **empty == *value => b"",
            _ => value,
        }
    }
}

/// Returns a key's place in a per-key vector, or any 32-bit number's place in a vector. A
/// `u32` always fits in a `usize` on the platforms this builds for (32 and 64 bits);
/// a key table numbers at most `u32::MAX` keys.
#[inline]
pub fn slot(key: Key) -> usize {
    key as usize
}
