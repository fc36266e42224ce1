//! An event: when it came, whose it is, and what it costs.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

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

/// What the reading that numbers keys tells the limits deciding its events about those
/// keys, as it numbers them: the empty key's number, once met, so that a system that lets
/// such an event through uncounted ([`Algorithm::skips_empty_key`]) can; and, once a limit
/// asks ([`want_key_crcs`]), each key's CRC-32, for a system whose arithmetic reads a key's
/// text (django-ratelimit shifts each key's windows by it). Clones share one cell; a
/// reading that numbers keys from the first again starts the CRCs afresh
/// ([`restart`](KeyNotes::restart)).
///
/// A reading hands a batch of events over only after numbering its keys, so a limit that
/// is handed an event of a key already finds here what was noted of it: if the limit asked
/// before the reading began, or, for events read before it asked, once the table that
/// numbered them notes them all (`KeyTable::note_all` in the reading crate).
///
/// It may also name one value read as the empty one ([`reading_as_empty`]): an access log
/// writes an empty variable as `-`.
///
/// [`Algorithm::skips_empty_key`]: crate::limiter::Algorithm::skips_empty_key
/// [`reading_as_empty`]: KeyNotes::reading_as_empty
/// [`want_key_crcs`]: KeyNotes::want_key_crcs
#[derive(Clone, Debug, Default)]
pub struct KeyNotes {
    number: Arc<AtomicU64>,
    read_as: Option<Arc<[u8]>>,
    /// Whether a limit reads a key's text, and so wants each key's CRC-32.
    wanted: Arc<AtomicBool>,
    /// Each key's CRC-32, by key number, once wanted: 4 bytes a key.
    crcs: Arc<Mutex<Vec<u32>>>,
}

impl KeyNotes {
    /// Returns a cell, not yet told a number, for which `value` is read as the empty
    /// value: its events are of the empty key, and the key's name is empty.
    pub fn reading_as_empty(value: &[u8]) -> KeyNotes {
        KeyNotes { read_as: Some(value.into()), ..KeyNotes::default() }
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

    /// Asks for each key's CRC-32 ([`key_crc`](KeyNotes::key_crc)): a limit whose system
    /// reads a key's text asks before it decides.
    pub fn want_key_crcs(&self) {
        self.wanted.store(true, Ordering::Relaxed);
    }

    /// Whether a limit asked for each key's CRC-32.
    #[inline]
    pub fn wants_key_crcs(&self) -> bool {
        self.wanted.load(Ordering::Relaxed)
    }

    /// Forgets every key's CRC-32: a reading numbers its keys from the first again.
    pub fn restart(&self) {
        self.crcs().clear();
    }

    /// Notes the CRC-32 of each of the first `keys` keys not yet noted, `value(n)` being
    /// key n's value, if a limit asked for them: a reading calls it once it has numbered
    /// new keys, before it hands their events over.
    pub fn note_keys<'v>(&self, keys: usize, value: impl Fn(usize) -> &'v [u8]) {
        if !self.wants_key_crcs() {
            return;
        }
        let mut each = self.crcs();
        let noted = each.len();
        each.extend((noted..keys).map(|n| crc32fast::hash(value(n))));
    }

    fn crcs(&self) -> std::sync::MutexGuard<'_, Vec<u32>> {
        self.crcs.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Returns the CRC-32 (IEEE, zlib's `crc32`) of key `key`'s value, if the reading
    /// noted it.
    pub fn key_crc(&self, key: usize) -> Option<u32> {
        self.crcs().get(key).copied()
    }
}

/// Returns a key's place in a per-key vector, or any 32-bit number's place in a vector. A
/// `u32` always fits in a `usize` on the platforms this builds for (32 and 64 bits);
/// a key table numbers at most `u32::MAX` keys.
#[inline]
pub fn slot(key: Key) -> usize {
    key as usize
}
