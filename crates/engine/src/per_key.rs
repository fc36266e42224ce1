//! The per-key pipeline, written once: events kept as read, grouped by key, every key's
//! figures found from its own events alone (pass one), then the keys listed found again,
//! in full (pass two).
//!
//! A keyed replay, a keyed min-bucket and the report all take it: a key costs the few
//! bytes its events take, whatever its figures need, and each pass runs on every core.

use std::collections::HashMap;

use anyhow::{Result, bail};

use crate::input::catalog::{Event, Key, Timeline, slot};
use crate::input::keys::{Groups, MAX_KEYED_EVENTS, joined};

/// Events kept as read, to be grouped by key: 12 bytes an event (20 once one costs other
/// than 1), at most [`MAX_KEYED_EVENTS`].
#[derive(Clone, Debug, Default)]
pub struct KeptEvents {
    events: Timeline,
    keys: Vec<Key>,
}

impl KeptEvents {
    /// Keeps an event; past [`MAX_KEYED_EVENTS`], an error that says `who` numbers its
    /// events in 32 bits.
    #[inline]
    pub fn push(&mut self, Event { time, key, cost }: Event, who: &str) -> Result<()> {
        if self.events.len() >= MAX_KEYED_EVENTS {
            bail!(
                "more than {MAX_KEYED_EVENTS} events with --key; {who} numbers its events in 32 bits"
            );
        }
        self.events.push(time, cost);
        self.keys.push(key);
        Ok(())
    }

    /// Returns the events kept, in the order they came.
    pub fn events(&self) -> &Timeline {
        &self.events
    }

    /// Returns the events grouped by key, among `count` keys: where each key's are, and
    /// the events in that order.
    pub fn grouped(&self, count: usize) -> (Groups, Timeline) {
        let groups = Groups::new(&self.keys, count);
        let events = self.events.gather(&groups);
        (groups, events)
    }

    /// Returns the events grouped by key, as [`grouped`](KeptEvents::grouped) does, with
    /// less at once: the keys go before the events are gathered.
    pub fn into_grouped(self, count: usize) -> (Groups, Timeline) {
        let groups = Groups::new(&self.keys, count);
        drop(self.keys);
        let events = self.events.gather(&groups);
        (groups, events)
    }
}

/// Keys from which [`for_each_key`] shares them among threads.
const KEYS_FOR_THREADS: usize = 1 << 14;

/// Runs `each` on every key from 0 to `count`, on up to `threads` threads for many keys:
/// each thread takes one run of keys with a state of its own from `fresh`, and the states
/// are returned in key order, for the caller to merge. What the caller merges must not
/// depend on how the keys were shared.
fn for_each_key<S: Send>(
    count: usize,
    threads: usize,
    fresh: impl Fn() -> S + Sync,
    each: impl Fn(&mut S, usize) + Sync,
) -> Vec<S> {
    let threads = if count < KEYS_FOR_THREADS { 1 } else { threads.clamp(1, 16) };
    let run = |keys: std::ops::Range<usize>| {
        let mut state = fresh();
        keys.for_each(|key| each(&mut state, key));
        state
    };
    if threads == 1 {
        return vec![run(0..count)];
    }
    let per = count.div_ceil(threads);
    std::thread::scope(|scope| {
        let run = &run;
        let started: Vec<_> = (0..threads)
            .map(|t| scope.spawn(move || run(t * per..((t + 1) * per).min(count))))
            .collect();
        // A thread that panicked has hit a bug; its panic is passed on as it is.
        started.into_iter().map(joined).collect()
    })
}

/// Pass one: folds every key from 0 to `count` into one part, as `for_each_key` runs
/// them: each run of keys into a part of its own from `fresh`, by `each`; then the parts,
/// in key order, into the first by `merge`.
pub fn fold_keys<P: Send>(
    count: usize,
    threads: usize,
    fresh: impl Fn() -> P + Sync,
    each: impl Fn(&mut P, usize) + Sync,
    mut merge: impl FnMut(&mut P, P),
) -> P {
    let mut parts = for_each_key(count, threads, &fresh, each).into_iter();
    let mut all = parts.next().unwrap_or_else(&fresh);
    parts.for_each(|part| merge(&mut all, part));
    all
}

/// Pass two: finds `full` of every key in `listed` (in any order, repeats allowed), on up
/// to `threads` threads. One listed key may hold most events, so the keys with the most
/// (`events` counts a key's) go first, dealt out to the threads in turn.
pub fn listed_again<T: Send>(
    listed: impl IntoIterator<Item = Key>,
    events: impl Fn(usize) -> u64,
    threads: usize,
    full: impl Fn(Key) -> T + Sync,
) -> HashMap<Key, T> {
    let mut keys: Vec<Key> = listed.into_iter().collect();
    keys.sort_unstable();
    keys.dedup();
    keys.sort_by_key(|&key| std::cmp::Reverse(events(slot(key))));
    let found = for_each_listed(&keys, threads, full);
    keys.into_iter().zip(found).collect()
}

/// Returns `each` of every key, in order, found on up to `threads` threads: thread t takes
/// keys t, t + threads, and so on.
fn for_each_listed<T: Send>(
    keys: &[Key],
    threads: usize,
    each: impl Fn(Key) -> T + Sync,
) -> Vec<T> {
    let threads = threads.min(keys.len()).max(1);
    let mut found: Vec<(usize, T)> = std::thread::scope(|scope| {
        let each = &each;
        let started: Vec<_> = (0..threads)
            .map(|t| {
                scope.spawn(move || {
                    let mine = keys.iter().enumerate().skip(t).step_by(threads);
                    mine.map(|(n, &key)| (n, each(key))).collect::<Vec<_>>()
                })
            })
            .collect();
        started.into_iter().flat_map(joined).collect()
    });
    found.sort_unstable_by_key(|&(n, _)| n);
    found.into_iter().map(|(_, value)| value).collect()
}
