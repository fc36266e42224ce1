//! The keys' side of `recommend`: each key's smallest lossless bucket at each rate, what a
//! bucket refuses of the keys it touches, and each key's busiest window, all from the
//! events grouped by key.

use std::num::NonZeroU64;

use crate::input::catalog::{Event, Key, KeyTable, Timeline};
use crate::input::keys::Groups;
use crate::key_sizing::KeyFinders;
use crate::limiter::{Gcra, Limiter};
use crate::per_key::{fold_keys, listed_again};
use crate::sizing::window::BusiestWindow;
use crate::units::rate::Rate;
use crate::units::time::{Span, Timestamp};

/// The events of every key, grouped: where each key's are, and the events in that order,
/// with their costs if any event costs other than 1.
pub struct Grouped<'a> {
    /// Where each key's events are.
    pub groups: &'a Groups,
    /// The events, key by key, each key's in time order.
    pub events: &'a Timeline,
    /// The keys' names.
    pub table: &'a KeyTable,
    /// Threads that share the keys.
    pub threads: usize,
}

/// How a key's events are weighed: as requests (each 1), or by what they cost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Weigh {
    /// Each event is one request.
    Requests,
    /// Each event weighs its cost.
    Cost,
}

impl Grouped<'_> {
    /// The number of keys.
    pub fn keys(&self) -> usize {
        self.table.len()
    }

    /// Key `key`'s events, in time order, each weighed as `weigh` says.
    fn each(&self, key: usize, weigh: Weigh) -> impl Iterator<Item = (Timestamp, u64)> + '_ {
        let costs = weigh == Weigh::Cost;
        self.events.each(self.groups.range(key)).map(move |(t, c)| (t, if costs { c } else { 1 }))
    }

    /// Key `key`'s events, in time order.
    pub fn events_of(&self, key: usize) -> impl Iterator<Item = Event> + '_ {
        let number = number(key);
        self.events.each(self.groups.range(key)).map(move |(time, cost)| Event {
            time,
            key: number,
            cost,
        })
    }

    /// How many events key `key` has.
    pub fn count(&self, key: usize) -> u64 {
        self.groups.count(key)
    }

    /// Key `key`'s events weighed as `weigh` says: their number, or the sum of their costs.
    pub fn units(&self, key: usize, weigh: Weigh) -> u64 {
        match weigh {
            Weigh::Requests => self.count(key),
            Weigh::Cost => self.each(key, weigh).fold(0u64, |sum, (_, c)| sum.saturating_add(c)),
        }
    }

    /// The name of key `key`.
    pub fn name(&self, key: usize) -> String {
        self.table.name(number(key))
    }

    /// Every key's smallest lossless bucket at each of `rates`, weighed as `weigh` says:
    /// key k's at rate n is at `k · rates.len() + n`.
    pub fn needs(&self, rates: &[Rate], weigh: Weigh) -> Vec<u64> {
        let fresh = || (Vec::new(), KeyFinders::new(rates));
        let each = |(needs, finders): &mut (Vec<u64>, KeyFinders), key: usize| {
            finders.clear(rates);
            self.each(key, weigh).for_each(|(time, cost)| finders.push(time, cost));
            needs.extend(finders.results().iter().map(|found| found.min_bucket));
        };
        // Each thread takes a run of keys, and the runs come back in key order.
        let (needs, _) = fold_keys(self.keys(), self.threads, fresh, each, |all, (part, _)| {
            all.0.extend(part);
        });
        needs
    }

    /// What a token bucket of `burst` at `rate` refuses of each of `keys`, weighed as
    /// `weigh` says: the events refused, and the units they would have taken.
    pub fn refused(
        &self,
        keys: &[usize],
        rate: Rate,
        burst: NonZeroU64,
        weigh: Weigh,
    ) -> Vec<(usize, Refused)> {
        let fresh = || Gcra::new(rate, burst);
        self.each_refused(keys, weigh, fresh, |gcra, time, cost| {
            gcra.take(time, cost, false).passed
        })
    }

    /// What two token buckets together (requests at `requests`, units at `units`, each a
    /// rate and a burst) refuse of each of `keys`: an event passes only if both have room,
    /// and only then takes from both.
    pub fn refused_by_both(
        &self,
        keys: &[usize],
        requests: (Rate, NonZeroU64),
        units: (Rate, NonZeroU64),
    ) -> Vec<(usize, Refused)> {
        let fresh = || (Gcra::new(requests.0, requests.1), Gcra::new(units.0, units.1));
        self.each_refused(keys, Weigh::Cost, fresh, |(by_count, by_cost), time, cost| {
            // All or nothing: a layer that has room takes from it only if the other has.
            let room = |gcra: &Gcra, cost| gcra.clone().take(time, cost, false).passed;
            let passed = room(by_count, 1) && room(by_cost, cost);
            if passed {
                by_count.take(time, 1, true);
                by_cost.take(time, cost, true);
            }
            passed
        })
    }

    /// What a limit that `fresh` makes for each key, deciding by `passes`, refuses of each
    /// of `keys` (weighed as `weigh` says), in key order.
    fn each_refused<L>(
        &self,
        keys: &[usize],
        weigh: Weigh,
        fresh: impl Fn() -> L + Sync,
        passes: impl Fn(&mut L, Timestamp, u64) -> bool + Sync,
    ) -> Vec<(usize, Refused)> {
        let keys = keys.iter().map(|&key| number(key));
        let found = listed_again(
            keys,
            |key| self.count(key),
            self.threads,
            |key| {
                let mut limit = fresh();
                let mut refused = Refused::default();
                for (time, cost) in self.each(slot(key), weigh) {
                    if !passes(&mut limit, time, cost) {
                        refused.events += 1;
                        refused.units += u128::from(cost);
                    }
                }
                refused
            },
        );
        let mut found: Vec<(usize, Refused)> =
            found.into_iter().map(|(key, refused)| (slot(key), refused)).collect();
        found.sort_unstable_by_key(|&(key, _)| key);
        found
    }

    /// Every key's busiest units (events, weighed as `weigh` says) in any window of
    /// `length`, in key order.
    pub fn busiest_units(&self, length: Span, weigh: Weigh) -> Vec<u64> {
        let fresh = || (Vec::new(), BusiestWindow::new(length));
        let each = |(counts, window): &mut (Vec<u64>, BusiestWindow), key: usize| {
            window.clear();
            self.each(key, weigh).for_each(|(time, cost)| window.push_cost(time, cost));
            counts.push(u64::try_from(window.busiest().units).unwrap_or(u64::MAX));
        };
        let (counts, _) = fold_keys(self.keys(), self.threads, fresh, each, |all, (part, _)| {
            all.0.extend(part);
        });
        counts
    }
}

/// What a limit refused of one key: events, and the units they would have taken.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Refused {
    /// Events refused.
    pub events: u64,
    /// Their units: their costs, or their number when each costs 1.
    pub units: u128,
}

/// Key number `key` of a table, which numbers keys in 32 bits.
fn number(key: usize) -> Key {
    Key::try_from(key).unwrap_or(Key::MAX)
}

/// The place of a key in the table's order.
fn slot(key: Key) -> usize {
    crate::input::catalog::slot(key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::catalog::KeyTable;

    fn at(secs: &[i64]) -> Vec<Timestamp> {
        secs.iter().map(|&s| Timestamp::from_micros(s * 1_000_000).unwrap()).collect()
    }

    /// Keys "a" (events at 0, 1, 2, 3 s) and "b" (0, 0, 0 and 60 s), grouped.
    fn two_keys() -> (Groups, Timeline, KeyTable) {
        let mut table = KeyTable::new();
        let (a, b) = (table.intern(b"a").unwrap(), table.intern(b"b").unwrap());
        let rows = [(0, a), (0, b), (0, b), (0, b), (1, a), (2, a), (3, a), (60, b)];
        let keys: Vec<Key> = rows.iter().map(|&(_, k)| k).collect();
        let mut events = Timeline::new();
        for (time, _) in rows {
            events.push(at(&[time])[0], 1);
        }
        let groups = Groups::new(&keys, 2);
        let events = events.gather(&groups);
        (groups, events, table)
    }

    #[test]
    fn each_keys_bucket_is_its_own() {
        let (groups, events, table) = two_keys();
        let grouped = Grouped { groups: &groups, events: &events, table: &table, threads: 1 };
        // At 1/s, "a" needs 1 (one a second) and "b" 3 (three at once); at 1/h, 4 and 4.
        let rates: Vec<Rate> = ["1/s", "1/h"].iter().map(|r| r.parse().unwrap()).collect();
        assert_eq!(grouped.needs(&rates, Weigh::Requests), [1, 4, 3, 4]);
    }

    #[test]
    fn a_bucket_refuses_what_it_has_no_token_for() {
        let (groups, events, table) = two_keys();
        let grouped = Grouped { groups: &groups, events: &events, table: &table, threads: 1 };
        let burst = NonZeroU64::new(2).unwrap();
        let found = grouped.refused(&[1, 0], "1/h".parse().unwrap(), burst, Weigh::Requests);
        // "a": 0 and 1 pass, 2 and 3 are refused; "b": two of the three at 0 pass, and 60 s
        // is too soon for the next token.
        let refused: Vec<(usize, u64)> = found.iter().map(|&(k, r)| (k, r.events)).collect();
        assert_eq!(refused, [(0, 2), (1, 2)]);
    }

    #[test]
    fn the_busiest_window_counts_each_key_alone() {
        let (groups, events, table) = two_keys();
        let grouped = Grouped { groups: &groups, events: &events, table: &table, threads: 1 };
        assert_eq!(
            grouped.busiest_units(Span::from_micros(2_000_000).unwrap(), Weigh::Requests),
            [2, 3]
        );
        assert_eq!(
            grouped.busiest_units(Span::from_micros(61_000_000).unwrap(), Weigh::Requests),
            [4, 4]
        );
    }
}
