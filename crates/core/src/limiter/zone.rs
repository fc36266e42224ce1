//! nginx's zone: its keys from the most to the least recently looked up, as `limit_req`
//! queues its nodes (what it frees from when a new key comes), and how many nodes its
//! memory holds.

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
    /// How many keys hold a node.
    held: usize,
}

const NONE: u32 = u32::MAX;

impl Zone {
    /// Returns an empty zone.
    pub fn new() -> Zone {
        Zone { links: Vec::new(), head: NONE, tail: NONE, held: 0 }
    }

    /// Returns how many keys hold a node.
    pub fn held(&self) -> usize {
        self.held
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
        match self.holds(key) {
            true => self.unlink(key),
            false => self.held += 1,
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
            self.held -= 1;
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

/// A zone's size in bytes, as `limit_req_zone … zone=NAME:SIZE` writes it: a number of
/// bytes, or of kilobytes, megabytes or gigabytes (`k`, `m`, `g`), at least 32k (eight
/// pages), as nginx checks; at most 64g here. nginx's `config` writes 10m, the default here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZoneSize(u64);

/// The smallest zone nginx takes: eight pages of 4 KiB.
const SMALLEST: u64 = 8 * PAGE;

/// A page of memory, as nginx's slab allocator cuts a zone.
const PAGE: u64 = 4096;

impl Default for ZoneSize {
    fn default() -> ZoneSize {
        ZoneSize(10 << 20)
    }
}

impl std::fmt::Display for ZoneSize {
    /// As nginx writes it: in megabytes or kilobytes where whole.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            b if b % (1 << 20) == 0 => write!(f, "{}m", b >> 20),
            b if b % (1 << 10) == 0 => write!(f, "{}k", b >> 10),
            b => write!(f, "{b}"),
        }
    }
}

impl std::str::FromStr for ZoneSize {
    type Err = &'static str;

    /// Reads a size as `ngx_parse_size` does (`k`/`K`, `m`/`M`, `g`/`G`), from 32k to 64g.
    fn from_str(text: &str) -> Result<ZoneSize, &'static str> {
        let text = text.trim();
        let (number, unit) = match text.char_indices().last() {
            Some((at, 'k' | 'K')) => (&text[..at], 1 << 10),
            Some((at, 'm' | 'M')) => (&text[..at], 1 << 20),
            Some((at, 'g' | 'G')) => (&text[..at], 1 << 30),
            _ => (text, 1),
        };
        let bytes = number.parse::<u64>().ok().and_then(|n| n.checked_mul(unit));
        match bytes {
            Some(bytes) if (SMALLEST..=64 << 30).contains(&bytes) => Ok(ZoneSize(bytes)),
            Some(_) => Err("is not a zone size taken here: from 32k to 64g"),
            None => Err("is not a size, such as 10m or 64k"),
        }
    }
}

impl ZoneSize {
    /// How many keys of at most 48 bytes (an address, as `$binary_remote_addr` or
    /// `$remote_addr` gives it) the zone holds a node for, as nginx 1.22's slab allocator
    /// cuts it on a 64-bit platform with 4 KiB pages (`ngx_slab_init`): its pool header
    /// (200 bytes) and nine slots' lists and statistics (504), then as many pages as fit
    /// with a 24-byte descriptor each, from the first page boundary after those. A node of
    /// such a key takes 80 bytes and the key's, 128 with rounding, 32 a page; `limit_req`'s
    /// own header takes one of them, and its log line a page of 32-byte pieces.
    pub fn nodes(self) -> usize {
        let (pool, lists, descriptor) = (200, 9 * (24 + 32), 24);
        let room = self.0 - pool - lists;
        let mut pages = room / (PAGE + descriptor);
        let start = (pool + lists + pages * descriptor).div_ceil(PAGE) * PAGE;
        pages = pages.min((self.0 - start) / PAGE);
        // At most 64g: 2^24 pages, 2^29 nodes, which a usize holds.
        usize::try_from((pages - 1) * (PAGE / 128) - 1).unwrap_or(usize::MAX)
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

    #[test]
    fn a_zone_holds_the_nodes_nginx_slab_allocator_gives_it() {
        // 32k: 32,064 bytes past the headers give 7 pages of 4,120; one for the log line,
        // and 6 of 32 nodes, one the module's header. 10m: 2,544 pages, about 8 thousand
        // a megabyte, as nginx's documentation says of 128-byte states.
        let nodes = |text: &str| text.parse::<ZoneSize>().unwrap().nodes();
        assert_eq!(nodes("32k"), 191);
        assert_eq!(nodes("10m"), 2_543 * 32 - 1);
        assert_eq!(ZoneSize::default().nodes(), nodes("10m"));
        assert_eq!("10M".parse::<ZoneSize>().unwrap().to_string(), "10m");
        assert_eq!("40960".parse::<ZoneSize>().unwrap().to_string(), "40k");
        assert!("16k".parse::<ZoneSize>().is_err(), "nginx takes 32k at least");
        assert!("ten".parse::<ZoneSize>().is_err());
    }
}

#[cfg(test)]
mod zoned_tests {
    use super::super::keyed::AnyPerKey;
    use super::super::tests::burst;
    use crate::limiter::Algorithm;
    use crate::units::time::Timestamp;

    fn at(ms: i64) -> Timestamp {
        Timestamp::from_micros(ms * 1000).unwrap()
    }

    #[test]
    fn a_new_key_frees_an_idle_leaked_key_whose_next_request_is_then_free() {
        // 1r/m, burst=0. Key 0 at 0 s; at 61 s it has leaked ⌊16·61 000/1000⌋ = 976 of the
        // 1000 its request adds: refused. But if key 1 comes at 60.5 s, key 0 (idle 60.5 s,
        // 0 − 968 ≤ 0) is freed, and its request at 61 s is a first request: it passes.
        let rate = "1/m".parse().unwrap();
        let mut alone = AnyPerKey::new(Algorithm::Nginx, rate, burst(1));
        assert!(alone.decide(0, at(0), 1).passed);
        assert!(!alone.decide(0, at(61_000), 1).passed);
        let mut zone = AnyPerKey::new(Algorithm::Nginx, rate, burst(1));
        assert!(zone.decide(0, at(0), 1).passed);
        assert!(zone.decide(1, at(60_500), 1).passed);
        assert!(zone.decide(0, at(61_000), 1).passed, "key 0 was freed");
        // A key idle less than 60 s is kept: key 2 at 61.2 s frees nothing of key 0 (idle
        // 0.2 s), and key 0 at 62 s is refused (leak 16: 0 − 16 + 1000 > 0).
        assert!(zone.decide(2, at(61_200), 1).passed);
        assert!(!zone.decide(0, at(62_000), 1).passed);
    }

    #[test]
    fn a_full_zone_frees_its_least_recently_used_node_whatever_it_holds() {
        // zone=32k holds 191 nodes. 1r/m, burst=0, each key once a millisecond apart: no
        // node is idle 60 s, so none is freed for being idle. The 192nd key frees key 0,
        // whose next request is then a first request and passes (and frees key 1); key
        // 191, held, is refused; each key freed and back frees the next least recent.
        let rate = "1/m".parse().unwrap();
        let params = Algorithm::Nginx.params(&[("zone", Some("32k"))]).unwrap();
        let mut zone = AnyPerKey::with_params(Algorithm::Nginx, rate, burst(1), params);
        for key in 0..192 {
            assert!(zone.decide(key, at(i64::try_from(key).unwrap()), 1).passed);
        }
        assert!(zone.decide(0, at(200), 1).passed, "key 0 was freed by force");
        assert!(!zone.decide(191, at(201), 1).passed, "key 191 is held");
        assert!(zone.decide(1, at(202), 1).passed, "key 0's return freed key 1");
        assert!(zone.decide(2, at(203), 1).passed, "key 1's return freed key 2");
        assert!(!zone.decide(190, at(204), 1).passed, "key 190 is held");
        // The default zone, 10m, holds them all.
        let mut roomy = AnyPerKey::new(Algorithm::Nginx, rate, burst(1));
        for key in 0..192 {
            assert!(roomy.decide(key, at(i64::try_from(key).unwrap()), 1).passed);
        }
        assert!(!roomy.decide(0, at(200), 1).passed);
    }
}
