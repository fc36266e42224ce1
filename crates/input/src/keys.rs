//! Keys, interned: each distinct value of the key column stored once, numbered in the order
//! it first appears, and found again by a fast hash of its bytes.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::hash::BuildHasher;

use foldhash::fast::FixedState;

use super::values::Values;

pub use ratelimit_core::event::{Key, KeyNotes, slot};

/// Waits for a thread of a scope and returns what it returned. A panic there is a bug in
/// this program, not bad input: it is passed on as it is.
pub fn joined<T>(thread: std::thread::ScopedJoinHandle<'_, T>) -> T {
    thread.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// Returns a length or count of things in memory as a u64, without a cast: a usize is at
/// most 64 bits on every platform Rust supports, so the `MAX` is never reached.
#[inline]
pub fn wide(len: usize) -> u64 {
    u64::try_from(len).unwrap_or(u64::MAX)
}

/// The distinct values of a key column, each stored once as bytes, in order of first
/// appearance. Looking a value up hashes it once (foldhash) and compares bytes; nothing is
/// cloned per event, and a new key costs its bytes, one offset and two to four table slots.
///
/// The table is open addressing with linear probing, at most half full. A slot holds the
/// key's number and the high half of its hash, so that growing the table never reads a
/// key's bytes again: with millions of keys, those reads were a cache miss each, and took
/// a third of a replay's time. Its own table rather than a crate's, for one thing a crate's
/// does not do: numbering a batch of values with each slot fetched well before it is
/// probed ([`intern_all`](KeyTable::intern_all)), which halves numbering 2 million new keys.
#[derive(Clone, Default)]
pub struct KeyTable {
    /// Each key's bytes, in the order of the keys.
    values: Values,
    /// 0 for an empty slot; else the key in the low 32 bits and the hash's high half, its
    /// top bit set, in the high. The length is 0 or a power of two.
    slots: Vec<u64>,
    /// The shift that takes a spread hash to a slot: 64 less the log of the length.
    shift: u32,
    hasher: FixedState,
    /// Room for the hashes of a batch being numbered, kept for the next.
    hashes: Vec<u64>,
    /// Told the empty key's number when it is first met, for the limits that let it
    /// through, and each key's CRC-32, for those that read a key's text.
    notes: KeyNotes,
    /// How many keys `notes` has been told the CRC-32 of; `None` for a table that tells
    /// nothing (made alone, [`new`](KeyTable::new)).
    noted: Option<usize>,
}

/// The high half of a slot, where the hash is kept.
const HIGH: u64 = 0xffff_ffff_0000_0000;

/// The slots a table starts with.
const FIRST_SLOTS: usize = 1 << 10;

/// How far ahead of the probe [`KeyTable::intern_all`] fetches a slot: enough to cover a
/// miss to memory, few enough that the fetches in flight fit the core's buffers.
const AHEAD: usize = 16;

/// A table slot: the key in the low 32 bits, the high half of its hash in the high.
fn entry(key: Key, high: u64) -> u64 {
    high | u64::from(key)
}

/// The high half of a slot for a value of hash `hash`: its top bit set, so that no slot
/// holding a key is 0.
fn high_of(hash: u64) -> u64 {
    (hash | 1 << 63) & HIGH
}

/// The key of a table slot.
fn key_of(entry: u64) -> Key {
    // The low 32 bits hold the key.
    #[allow(clippy::cast_possible_truncation)]
    let key = entry as Key;
    key
}

impl KeyTable {
    /// Returns a table with no keys.
    pub fn new() -> KeyTable {
        KeyTable::default()
    }

    /// Returns a table with no keys that tells `notes` the empty key's number when it
    /// numbers it (and each key's CRC-32, if a limit wants them), and numbers the value
    /// `notes` reads as empty as the empty value.
    pub fn telling(notes: &KeyNotes) -> KeyTable {
        notes.restart();
        KeyTable { notes: notes.clone(), noted: Some(0), ..KeyTable::default() }
    }

    /// Tells the notes the CRC-32 of the keys numbered since they were last told, if a
    /// limit wants them: once a batch is numbered, before its events are handed over.
    #[inline]
    fn tell(&mut self) {
        let due = self.noted.is_some_and(|noted| noted < self.values.len());
        if due && self.notes.wants_key_crcs() {
            self.note_all();
            self.noted = Some(self.values.len());
        }
    }

    /// Returns what the table tells of its keys as it numbers them.
    pub fn notes(&self) -> &KeyNotes {
        &self.notes
    }

    /// Tells the notes the CRC-32 of every key not yet told, if a limit wants them: for a
    /// limit that asked only once the keys were numbered (events decided after reading).
    pub fn note_all(&self) {
        let values = &self.values;
        self.notes.note_keys(values.len(), |n| values.get(n));
    }

    /// Returns the number of keys.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Returns true if there are no keys.
    pub fn is_empty(&self) -> bool {
        self.values.len() == 0
    }

    /// Returns the bytes of key `key`.
    pub fn get(&self, key: Key) -> &[u8] {
        self.values.get(slot(key))
    }

    /// Returns the key of `value` (of the empty value, if it is the one read as empty),
    /// adding it if it is new; `None` if a new key would be past [`Key::MAX`].
    #[inline]
    pub fn intern(&mut self, value: &[u8]) -> Option<Key> {
        let value = self.notes.value(value);
        let high = high_of(self.hasher.hash_one(value));
        let key = self.intern_high(value, high);
        self.tell();
        key
    }

    /// Numbers `count` values in order, as [`intern`](KeyTable::intern) would one by one,
    /// and pushes their keys to `keys`; `value(n)` is the nth. If a value gets no number,
    /// returns its place, and `keys` has the keys of the values before it.
    ///
    /// Every value is hashed first, and the slot each starts probing at is fetched 16
    /// values before it is probed: with more keys than the cache holds, the probes then
    /// wait on memory together rather than one after another.
    pub fn intern_all<'v>(
        &mut self,
        count: usize,
        value: impl Fn(usize) -> &'v [u8],
        keys: &mut Vec<Key>,
    ) -> Result<(), usize> {
        let mut hashes = std::mem::take(&mut self.hashes);
        hashes.clear();
        let empty = &self.notes;
        hashes.extend((0..count).map(|n| high_of(self.hasher.hash_one(empty.value(value(n))))));
        let mut numbered = Ok(());
        for (n, &high) in hashes.iter().enumerate() {
            if let Some(&ahead) = hashes.get(n + AHEAD) {
                self.prefetch(ahead);
            }
            match self.intern_high(self.notes.value(value(n)), high) {
                Some(key) => keys.push(key),
                None => {
                    numbered = Err(n);
                    break;
                }
            }
        }
        self.hashes = hashes;
        self.tell();
        numbered
    }

    /// Returns the key of `value`, whose slots' high half is `high`, adding it if it is
    /// new, as [`intern`](KeyTable::intern) does.
    #[inline]
    fn intern_high(&mut self, value: &[u8], high: u64) -> Option<Key> {
        if self.slots.is_empty() {
            self.grow();
        }
        let at = match self.probe(value, high) {
            Ok(key) => return Some(key),
            Err(at) => at,
        };
        let key = Key::try_from(self.values.len()).ok()?;
        self.slots[at] = entry(key, high);
        self.values.push(value);
        if value.is_empty() {
            self.notes.set(key);
        }
        if self.values.len() > self.slots.len() / 2 {
            self.grow();
        }
        Some(key)
    }

    /// Finds `value` in a table with slots, whose slots' high half is `high`: its key, or
    /// the empty slot where it would go.
    #[inline]
    fn probe(&self, value: &[u8], high: u64) -> Result<Key, usize> {
        let mask = self.slots.len() - 1;
        let mut at = self.place(high);
        // At most half full, so a probe ends at an empty slot if not at the key.
        loop {
            let slot = self.slots[at];
            if slot == 0 {
                return Err(at);
            }
            if slot & HIGH == high && self.get(key_of(slot)) == value {
                return Ok(key_of(slot));
            }
            at = (at + 1) & mask;
        }
    }

    /// Returns the key of `value`, if the table has it (a value read as empty is not
    /// looked up as the empty value: ask for that).
    pub fn find(&self, value: &[u8]) -> Option<Key> {
        let high = high_of(self.hasher.hash_one(value));
        (!self.slots.is_empty()).then(|| self.probe(value, high).ok()).flatten()
    }

    /// Returns the slot a probe for a slot high half `high` starts at: its hash, spread
    /// over 64 bits, its top bits.
    #[inline]
    fn place(&self, high: u64) -> usize {
        let spread = (high >> 32).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        // Shifted down to fewer bits than the table's length has: it fits a usize.
        #[allow(clippy::cast_possible_truncation)]
        let at = spread.checked_shr(self.shift).unwrap_or(0) as usize;
        at
    }

    /// Asks the core to fetch the slot a probe for `high` starts at, without waiting.
    #[inline]
    fn prefetch(&self, high: u64) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
            if let Some(slot) = self.slots.get(self.place(high)) {
                // SAFETY: a prefetch only hints at the cache; it reads nothing the program
                // sees and cannot fault, and the address is a slot of the table.
                unsafe { _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(slot).cast()) };
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = high;
    }

    /// Doubles the table (or makes its first), placing each key again from its slot alone.
    #[cold]
    fn grow(&mut self) {
        let length = (self.slots.len() * 2).max(FIRST_SLOTS);
        let old = std::mem::replace(&mut self.slots, vec![0; length]);
        self.shift = 64 - length.trailing_zeros();
        let mask = length - 1;
        for (n, &slot) in old.iter().enumerate() {
            if let Some(&ahead) = old.get(n + AHEAD).filter(|&&ahead| ahead != 0) {
                self.prefetch(ahead & HIGH);
            }
            if slot == 0 {
                continue;
            }
            let mut at = self.place(slot & HIGH);
            while self.slots[at] != 0 {
                at = (at + 1) & mask;
            }
            self.slots[at] = slot;
        }
    }

    /// Returns each key's name, in order: its bytes as UTF-8, invalid sequences replaced.
    pub fn names(&self) -> impl Iterator<Item = String> + '_ {
        (0..self.values.len()).map(|k| self.name(Key::try_from(k).unwrap_or(Key::MAX)))
    }

    /// Returns the name of key `key`.
    pub fn name(&self, key: Key) -> String {
        String::from_utf8_lossy(self.get(key)).into_owned()
    }
}

impl PartialEq for KeyTable {
    fn eq(&self, other: &KeyTable) -> bool {
        self.values == other.values
    }
}

impl Eq for KeyTable {}

impl std::fmt::Debug for KeyTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

/// The first `top` keys by a figure, the largest first and equal figures in the order of
/// the keys' bytes; `top` 0 keeps every key. Offering a key costs one comparison unless it
/// may enter, so ranking millions of keys for the top ten is a scan.
pub struct Ranking<'a> {
    table: &'a KeyTable,
    top: usize,
    kept: BinaryHeap<Ranked<'a>>,
}

/// A key with its figure, ordered so that the better ranked is the smaller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Ranked<'a> {
    figure: u64,
    name: &'a [u8],
    key: Key,
}

impl Ord for Ranked<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        other.figure.cmp(&self.figure).then_with(|| self.name.cmp(other.name))
    }
}

impl PartialOrd for Ranked<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<'a> Ranking<'a> {
    /// Returns a ranking of the keys of `table` that keeps the first `top`, or all for 0.
    pub fn new(table: &'a KeyTable, top: usize) -> Ranking<'a> {
        Ranking { table, top, kept: BinaryHeap::new() }
    }

    /// Offers key `key` with its figure.
    #[inline]
    pub fn offer(&mut self, key: Key, figure: u64) {
        self.offer_named(key, self.table.get(key), figure);
    }

    /// Offers key `key`, whose bytes are `name`, with its figure: for a caller offering
    /// one key to several rankings, which looks its name up once.
    #[inline]
    pub fn offer_named(&mut self, key: Key, name: &'a [u8], figure: u64) {
        let offered = Ranked { figure, name, key };
        if self.top == 0 || self.kept.len() < self.top {
            self.kept.push(offered);
            return;
        }
        // The heap is full, so it has a last kept key; one comparison turns most away.
        if self.kept.peek().is_some_and(|last| offered < *last) {
            self.kept.pop();
            self.kept.push(offered);
        }
    }

    /// Offers every key another ranking kept: ranking keys apart and then together keeps
    /// the same keys as ranking them all at once.
    pub fn merge(&mut self, other: Ranking<'a>) {
        for ranked in other.kept {
            self.offer_named(ranked.key, ranked.name, ranked.figure);
        }
    }

    /// Returns the keys kept, the first ranked first, each with its figure.
    pub fn into_keys(self) -> Vec<(Key, u64)> {
        self.kept.into_sorted_vec().into_iter().map(|r| (r.key, r.figure)).collect()
    }
}

/// The most events kept to be grouped by key: they are numbered in 32 bits. (Widening: a
/// `u32` fits in a `usize` here, as [`slot`] says.)
pub const MAX_KEYED_EVENTS: usize = u32::MAX as usize;

/// The events of each key, grouped by key and in time order within each: 4 bytes an event
/// and 4 a key.
#[derive(Clone, Debug)]
pub struct Groups {
    /// The end of each key's events in `order`; a key's start is the end of the one before.
    ends: Vec<u32>,
    /// Event numbers, by key.
    order: Vec<u32>,
}

impl Groups {
    /// Groups events, given by their keys in order, with a counting sort, which keeps their
    /// order within a key; there are `count` keys, and at most [`MAX_KEYED_EVENTS`] events.
    pub fn new(keys: &[Key], count: usize) -> Groups {
        let mut next = vec![0u32; count];
        for &key in keys {
            next[slot(key)] += 1;
        }
        // Start positions; events number at most MAX_KEYED_EVENTS, so sums fit.
        let mut start = 0;
        for n in &mut next {
            (start, *n) = (start + *n, start);
        }
        let mut order = vec![0u32; keys.len()];
        for (event, &key) in (0u32..).zip(keys) {
            let at = &mut next[slot(key)];
            order[slot(*at)] = event;
            *at += 1;
        }
        Groups { ends: next, order }
    }

    /// Returns where key `key`'s events are, in the grouped order: none for a key past
    /// those grouped.
    pub fn range(&self, key: usize) -> std::ops::Range<usize> {
        let start = if key == 0 { 0 } else { slot(self.end(key - 1)) };
        start..slot(self.end(key))
    }

    /// Returns where key `key`'s events end in the grouped order; past the keys grouped,
    /// where the last one's do.
    #[inline]
    fn end(&self, key: usize) -> u32 {
        self.ends.get(key).or(self.ends.last()).copied().unwrap_or(0)
    }

    /// Returns where the events of the keys `keys` are, in the grouped order.
    pub fn events_of(&self, keys: std::ops::Range<usize>) -> std::ops::Range<usize> {
        match keys.is_empty() {
            true => 0..0,
            false => self.range(keys.start).start..self.range(keys.end - 1).end,
        }
    }

    /// Shares the keys among up to `parts` runs of consecutive keys with about as many
    /// events each; few events make one run. No run is empty, and together they hold
    /// every key, in order.
    pub fn runs(&self, parts: usize) -> Vec<std::ops::Range<usize>> {
        let (keys, events) = (self.ends.len(), self.order.len());
        let parts = if events < EVENTS_FOR_THREADS { 1 } else { parts.clamp(1, 16) };
        let mut runs = Vec::with_capacity(parts);
        let mut start = 0;
        for part in 1..=parts {
            // At most 16 parts of at most u32::MAX events: the product fits 64 bits.
            let goal = wide(events) * wide(part) / wide(parts);
            let end = match part == parts {
                true => keys,
                // The first key whose events reach the goal ends the run.
                false => (self.ends.partition_point(|&end| u64::from(end) < goal) + 1).min(keys),
            };
            if end > start {
                runs.push(start..end);
                start = end;
            }
        }
        runs
    }

    /// Returns `values`, runs of `stride` values, one run an event in the grouped order,
    /// put back in event order: the inverse of [`gather_chunks`](Groups::gather_chunks).
    pub fn scatter_chunks<T: Copy + Default>(&self, values: &[T], stride: usize) -> Vec<T> {
        let mut out = vec![T::default(); values.len()];
        for (&event, run) in self.order.iter().zip(values.chunks_exact(stride)) {
            let at = slot(event) * stride;
            out[at..at + stride].copy_from_slice(run);
        }
        out
    }

    /// Returns how many events key `key` has.
    pub fn count(&self, key: usize) -> u64 {
        let start = if key == 0 { 0 } else { self.end(key - 1) };
        u64::from(self.end(key) - start)
    }

    /// Returns `values`, one per event, in the grouped order: reading them so, key by key,
    /// is reading in order, where by event number each would miss the cache.
    pub fn gather<T: Copy>(&self, values: &[T]) -> Vec<T> {
        self.order.iter().map(|&event| values[slot(event)]).collect()
    }

    /// Returns runs of `stride` values, one run an event, in the grouped order, as
    /// [`gather`](Groups::gather) does for one value an event.
    pub fn gather_chunks<T: Copy>(&self, values: &[T], stride: usize) -> Vec<T> {
        if stride == 1 {
            return self.gather(values);
        }
        let mut out = Vec::with_capacity(values.len());
        for &event in &self.order {
            let at = slot(event) * stride;
            out.extend_from_slice(&values[at..at + stride]);
        }
        out
    }
}

/// Events from which [`Groups::runs`] shares keys among threads.
const EVENTS_FOR_THREADS: usize = 1 << 16;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_value_once_numbered_in_order() {
        let mut keys = KeyTable::new();
        let values: [&[u8]; 6] = [b"us", b"ak", b"", b"us", b"\xff", b"ak"];
        let found: Vec<Key> = values.iter().map(|v| keys.intern(v).unwrap()).collect();
        assert_eq!(found, [0, 1, 2, 0, 3, 1]);
        assert_eq!(keys.len(), 4);
        assert_eq!(keys.get(3), b"\xff");
        // A value that is not UTF-8 stays one key, and is named with a replacement.
        assert_eq!(keys.intern(b"\xff"), Some(3));
        assert_eq!(keys.names().collect::<Vec<_>>(), ["us", "ak", "", "\u{fffd}"]);
    }

    #[test]
    fn numbering_a_batch_gives_the_numbers_of_one_by_one() {
        // Enough keys that the table grows many times while a batch is numbered, each seen
        // again later in the batch and in a batch after it.
        let values: Vec<Vec<u8>> =
            (0..20_000u32).map(|n| (n * 7 % 9_001).to_string().into()).collect();
        let mut alone = KeyTable::new();
        let want: Vec<Key> = values.iter().map(|v| alone.intern(v).unwrap()).collect();
        let mut batched = KeyTable::new();
        let mut found = Vec::new();
        for part in values.chunks(6_000) {
            batched.intern_all(part.len(), |n| &part[n], &mut found).unwrap();
        }
        assert_eq!(found, want);
        assert_eq!(batched, alone);
        assert_eq!(batched.len(), 9_001);
    }

    #[test]
    fn groups_keep_time_order_within_each_key() {
        let groups = Groups::new(&[2, 0, 2, 1, 0, 2], 4);
        // Each event's number, gathered by key: key 0 has events 1 and 4, and so on.
        let gathered = groups.gather(&[0, 1, 2, 3, 4, 5]);
        let found: Vec<&[i32]> = (0..4).map(|k| &gathered[groups.range(k)]).collect();
        assert_eq!(found, [&[1, 4][..], &[3], &[0, 2, 5], &[]]);
        assert_eq!((0..4).map(|k| groups.count(k)).collect::<Vec<_>>(), [2, 1, 3, 0]);
    }

    #[test]
    fn ranks_by_figure_then_by_name() {
        let mut keys = KeyTable::new();
        let figures = [("c", 5), ("a", 5), ("d", 9), ("b", 5), ("e", 1), ("f", 7)];
        let offered: Vec<(Key, u64)> =
            figures.iter().map(|&(name, f)| (keys.intern(name.as_bytes()).unwrap(), f)).collect();
        let ranked = |top| {
            let mut ranking = Ranking::new(&keys, top);
            offered.iter().for_each(|&(key, figure)| ranking.offer(key, figure));
            let found = ranking.into_keys().into_iter().map(|(k, f)| (keys.name(k), f));
            found.collect::<Vec<_>>()
        };
        let all = ranked(0);
        let names: Vec<&str> = all.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["d", "f", "a", "b", "c", "e"]);
        assert_eq!(ranked(4), all[..4]);
        // Ranked in two halves and merged, the same keys.
        let mut halves = [Ranking::new(&keys, 3), Ranking::new(&keys, 3)];
        for (n, &(key, figure)) in offered.iter().enumerate() {
            halves[n % 2].offer(key, figure);
        }
        let [mut first, second] = halves;
        first.merge(second);
        let merged: Vec<(String, u64)> =
            first.into_keys().into_iter().map(|(k, f)| (keys.name(k), f)).collect();
        assert_eq!(merged, all[..3]);
        assert_eq!(ranked(1), all[..1]);
    }
}
