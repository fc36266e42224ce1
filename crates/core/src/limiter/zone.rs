//! A zone's keys from the most to the least recently looked up, as nginx's `limit_req`
//! queues its nodes: what it frees from when a new key comes.

/// The keys of a zone in the order of their last lookup: a doubly linked list over key
/// numbers, 8 bytes a key, O(1) to look up, to free and to find the least recent.
///
/// Key numbers are u32 (see `input::keys::slot`): each converts to and from a usize
/// exactly.
#[derive(Clone, Debug, Default)]
pub struct Zone {
    /// For each key, the keys before (more recent) and after (less recent) it, or NONE.
    links: Vec<(u32, u32)>,
    head: u32,
    tail: u32,
}

const NONE: u32 = u32::MAX;

impl Zone {
    /// Returns an empty zone.
    pub fn new() -> Zone {
        Zone { links: Vec::new(), head: NONE, tail: NONE }
    }

    /// Returns the least recently looked up key, if any.
    pub fn tail(&self) -> Option<usize> {
        (self.tail != NONE).then_some(self.tail as usize)
    }

    /// Moves `key` to the front, adding it if it is not held.
    pub fn touch(&mut self, key: usize) {
        if key >= self.links.len() {
            self.links.resize(key + 1, (NONE, NONE));
        }
        if self.holds(key) {
            self.unlink(key);
        }
        #[allow(clippy::cast_possible_truncation)] // A key number: see the type.
        let k = key as u32;
        self.links[key] = (NONE, self.head);
        if self.head != NONE {
            self.links[self.head as usize].0 = k;
        }
        self.head = k;
        if self.tail == NONE {
            self.tail = k;
        }
    }

    /// Frees `key`'s node.
    pub fn free(&mut self, key: usize) {
        if self.holds(key) {
            self.unlink(key);
        }
    }

    /// Returns the zone with its keys renumbered, in the same order: key `kept[n]` becomes
    /// key n. Every key the zone holds must be kept.
    pub fn renumbered(&self, kept: &[usize]) -> Zone {
        let mut new = vec![NONE; self.links.len()];
        for (n, &old) in (0u32..).zip(kept) {
            if let Some(slot) = new.get_mut(old) {
                *slot = n;
            }
        }
        let mut zone = Zone::new();
        // From the least recent to the most, each to the front: the order stays. A key not
        // kept has no node to keep (a key with a node is never at rest); were one given, it
        // would be left out rather than numbered past the table.
        let mut at = self.tail;
        while at != NONE {
            let renumbered = new[at as usize];
            debug_assert!(renumbered != NONE, "a key with a node was not kept");
            if renumbered != NONE {
                zone.touch(renumbered as usize);
            }
            at = self.links[at as usize].0;
        }
        zone
    }

    /// Whether `key` holds a node: it has a neighbour, or it is the only one.
    fn holds(&self, key: usize) -> bool {
        self.links.get(key).is_some_and(|&links| links != (NONE, NONE)) || self.head as usize == key
    }

    fn unlink(&mut self, key: usize) {
        let (before, after) = self.links[key];
        match before {
            NONE => self.head = after,
            b => self.links[b as usize].1 = after,
        }
        match after {
            NONE => self.tail = before,
            a => self.links[a as usize].0 = before,
        }
        self.links[key] = (NONE, NONE);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The keys from the most recent to the least.
    fn order(zone: &Zone) -> Vec<usize> {
        let mut keys = Vec::new();
        let mut at = zone.head;
        while at != NONE {
            keys.push(at as usize);
            at = zone.links[at as usize].1;
        }
        keys
    }

    #[test]
    fn a_renumbered_zone_keeps_its_order() {
        let mut zone = Zone::new();
        for key in [4, 0, 7, 2, 0] {
            zone.touch(key);
        }
        zone.free(2);
        assert_eq!(order(&zone), [0, 7, 4]);
        // Keys 0, 4 and 7 become 0, 1 and 2 (key 3 held no node).
        let renumbered = zone.renumbered(&[0, 3, 4, 7]);
        assert_eq!(order(&renumbered), [0, 3, 2]);
        assert_eq!(renumbered.tail(), Some(2));
    }

    #[test]
    fn the_tail_is_the_least_recently_looked_up() {
        let mut zone = Zone::new();
        assert_eq!(zone.tail(), None);
        for key in [3, 1, 2] {
            zone.touch(key);
        }
        assert_eq!(zone.tail(), Some(3));
        zone.touch(3);
        assert_eq!(zone.tail(), Some(1));
        zone.free(1);
        assert_eq!(zone.tail(), Some(2));
        zone.free(2);
        zone.free(3);
        assert_eq!(zone.tail(), None);
        zone.touch(2);
        assert_eq!(zone.tail(), Some(2));
    }
}
