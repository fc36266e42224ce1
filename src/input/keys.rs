//! Keys, interned: each distinct value of the key column stored once, numbered in the order
//! it first appears, and found again by a fast hash of its bytes.

use std::hash::BuildHasher;

use foldhash::fast::FixedState;
use hashbrown::HashTable;

/// A key: its number among the keys of a read, from 0 in order of first appearance.
pub type Key = u32;

/// Returns a key's place in a per-key vector. A `u32` always fits in a `usize` on the
/// platforms this builds for (32 and 64 bits); `intern` refuses keys past `u32::MAX`.
#[inline]
pub fn slot(key: Key) -> usize {
    key as usize
}

/// The distinct values of a key column, each stored once as bytes, in order of first
/// appearance. Looking a value up hashes it once (foldhash) and compares bytes; nothing is
/// cloned per event, and a new key costs its bytes, one offset and one table slot.
#[derive(Clone, Default)]
pub struct KeyTable {
    bytes: Vec<u8>,
    ends: Vec<usize>,
    index: HashTable<Key>,
    hasher: FixedState,
}

impl KeyTable {
    /// Returns a table with no keys.
    pub fn new() -> KeyTable {
        KeyTable::default()
    }

    /// Returns the number of keys.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Returns true if there are no keys.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Returns the bytes of key `key`.
    pub fn get(&self, key: Key) -> &[u8] {
        stored(&self.bytes, &self.ends, key)
    }

    /// Returns the key of `value`, adding it if it is new; `None` if a new key would be
    /// past [`Key::MAX`].
    #[inline]
    pub fn intern(&mut self, value: &[u8]) -> Option<Key> {
        let hash = self.hasher.hash_one(value);
        let (bytes, ends) = (&self.bytes, &self.ends);
        if let Some(&key) = self.index.find(hash, |&k| stored(bytes, ends, k) == value) {
            return Some(key);
        }
        let key = Key::try_from(self.ends.len()).ok()?;
        self.bytes.extend_from_slice(value);
        self.ends.push(self.bytes.len());
        let (bytes, ends, hasher) = (&self.bytes, &self.ends, &self.hasher);
        self.index.insert_unique(hash, key, |&k| hasher.hash_one(stored(bytes, ends, k)));
        Some(key)
    }

    /// Returns each key's name, in order: its bytes as UTF-8, invalid sequences replaced.
    pub fn names(&self) -> impl Iterator<Item = String> + '_ {
        (0..self.ends.len()).map(|k| self.name(Key::try_from(k).unwrap_or(Key::MAX)))
    }

    /// Returns the name of key `key`.
    pub fn name(&self, key: Key) -> String {
        String::from_utf8_lossy(self.get(key)).into_owned()
    }
}

/// The bytes of key `key`: from the end of the one before to its own end.
fn stored<'a>(bytes: &'a [u8], ends: &[usize], key: Key) -> &'a [u8] {
    let k = slot(key);
    &bytes[if k == 0 { 0 } else { ends[k - 1] }..ends[k]]
}

impl PartialEq for KeyTable {
    fn eq(&self, other: &KeyTable) -> bool {
        self.ends == other.ends && self.bytes == other.bytes
    }
}

impl Eq for KeyTable {}

impl std::fmt::Debug for KeyTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

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
}
