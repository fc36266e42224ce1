//! A keyed min-bucket in two passes (see [`per_key`](crate::per_key)): every key's
//! smallest lossless bucket at each rate, their quantiles and cover, and the keys listed.

use anyhow::{Result, bail};

use crate::input::catalog::{Event, Key, KeyNotes, KeyTable, Sink, slot};
use crate::input::keys::Ranking;
use crate::limiter::{Algorithm, OwnSize, SystemSizer};
use crate::per_key::{KeptEvents, fold_keys, listed_again};
use crate::recorder::KeyNames;
use crate::report::{
    self, Cover, KeyList, KeyNeed, KeyQuantiles, LeftOut, Need, SystemSize, WorstKey,
};
use crate::sizing::many_rates::MinBucketFinders;
use crate::sizing::min_bucket::{Lossless, MinBucketFinder};
use crate::sizing::quantile::{Histogram, Percent};
use crate::units::rate::Rate;
use crate::units::time::Timestamp;

/// The most key-rate pairs a keyed min-bucket sizes: 2^24, about 17 million. A pair costs
/// 60 to 300 ns (more with many rates, which are made again for each key), so the bound
/// keeps a run to seconds where it would take minutes.
pub const MAX_KEY_RATES: usize = 1 << 24;

/// One key's trackers: one finder per rate for a few rates, which is small; the blocked,
/// vectorized finders for many, which are fast.
pub(crate) enum KeyFinders {
    Few(Vec<MinBucketFinder>),
    Many(Box<MinBucketFinders>),
}

impl KeyFinders {
    /// Rates from which the blocked finders pay for their block.
    const MANY: usize = 8;

    pub(crate) fn new(rates: &[Rate]) -> KeyFinders {
        if rates.len() < KeyFinders::MANY {
            KeyFinders::Few(rates.iter().map(|&r| MinBucketFinder::new(r)).collect())
        } else {
            KeyFinders::Many(Box::new(MinBucketFinders::new(rates)))
        }
    }

    /// Forgets every event, to size the next key.
    pub(crate) fn clear(&mut self, rates: &[Rate]) {
        match self {
            KeyFinders::Few(finders) => {
                finders.iter_mut().zip(rates).for_each(|(f, &r)| *f = MinBucketFinder::new(r));
            }
            KeyFinders::Many(finders) => **finders = MinBucketFinders::new(rates),
        }
    }

    #[inline]
    pub(crate) fn push(&mut self, time: Timestamp, cost: u64) {
        match self {
            KeyFinders::Few(finders) => finders.iter_mut().for_each(|f| f.push_cost(time, cost)),
            KeyFinders::Many(finders) => finders.push_cost(time, cost),
        }
    }

    pub(crate) fn results(&mut self) -> Vec<Lossless> {
        match self {
            KeyFinders::Few(finders) => finders.iter().map(MinBucketFinder::result).collect(),
            KeyFinders::Many(finders) => finders.results(),
        }
    }
}

/// The most rows a keyed min-bucket lists: rates times the keys shown for each. 200 000
/// rows is more than anyone reads; a million took 4.5 s and 600 MB to build and write as a
/// table (23 s and 3.2 GB as CSV, before its rows were written one at a time).
pub const MAX_LISTED_ROWS: usize = 200_000;

/// The trackers of a min-bucket run: for one key, fed as events come; for many, every
/// event kept (12 bytes, 20 once an event costs other than 1) to be grouped by key, and
/// each key sized alone at the end, so that a key costs a few bytes however many rates it
/// is sized at.
enum Sizing {
    One(KeyFinders),
    Keyed(KeptEvents),
}

/// A system's own setting being found at each rate: the system, how it writes it, and a
/// finder for each rate.
type OwnFinders = (Algorithm, OwnSize, Vec<Box<dyn SystemSizer>>);

/// Trackers for every rate, fed in one pass.
pub struct KeyedFinders {
    rates: Vec<Rate>,
    sizing: Sizing,
    /// How many keys each rate lists; 0 lists all.
    top: usize,
    /// The number of keys seen so far.
    keys: usize,
    /// How many threads size the keys.
    threads: usize,
    /// With `--for SYSTEM`, the system, and the finder of its own setting at each rate.
    own: Option<OwnFinders>,
    /// With keys, the empty key, which a system that lets it through does not account.
    empty: Option<KeyNotes>,
}

impl Sink for KeyedFinders {
    type Error = anyhow::Error;

    fn event(&mut self, event @ Event { time, key, cost }: Event) -> Result<()> {
        if let Some((_, _, finders)) = &mut self.own
            && !self.empty.as_ref().is_some_and(|empty| empty.is(key))
        {
            finders.iter_mut().for_each(|need| need.push(event));
        }
        if slot(key) >= self.keys && matches!(self.sizing, Sizing::Keyed(_)) {
            self.add_keys(slot(key) + 1)?;
        }
        match &mut self.sizing {
            Sizing::One(finders) => finders.push(time, cost),
            Sizing::Keyed(kept) => kept.push(event, "min-bucket")?,
        }
        Ok(())
    }
}

impl KeyedFinders {
    /// Returns trackers for `rates`: of one stream, or (`keyed`) of each key, listing `top`
    /// keys a rate (0: all), sized on `threads` threads.
    pub fn new(rates: &[Rate], keyed: bool, top: usize, threads: usize) -> KeyedFinders {
        let sizing = if keyed {
            Sizing::Keyed(KeptEvents::default())
        } else {
            Sizing::One(KeyFinders::new(rates))
        };
        KeyedFinders {
            rates: rates.to_vec(),
            sizing,
            top,
            keys: 0,
            threads,
            own: None,
            empty: None,
        }
    }

    /// Also finds a system's own lossless setting at each rate (each of which the system
    /// can write), as the registry's [`OwnSize`] of `system` says; a limiter without one
    /// adds nothing. With keys, the events of the key `empty` says is empty are left out
    /// where the system lets them through uncounted.
    pub fn for_system(self, system: Algorithm, empty: &KeyNotes) -> KeyedFinders {
        let Some(own) = system.own_size() else { return self };
        let keyed = matches!(self.sizing, Sizing::Keyed(_)) && system.skips_empty_key();
        let params = system.default_params();
        let finders = self.rates.iter().map(|&rate| (own.finder)(rate, &params)).collect();
        KeyedFinders {
            empty: keyed.then(|| empty.clone()),
            own: Some((system, own, finders)),
            ..self
        }
    }

    /// Counts keys up to `keys` (keys come numbered in order of first appearance, but may
    /// be met out of that order once events are sorted), if they keep the work within
    /// [`MAX_KEY_RATES`] and the listing within [`MAX_LISTED_ROWS`].
    #[cold]
    fn add_keys(&mut self, keys: usize) -> Result<()> {
        let rates = self.rates.len();
        if keys.saturating_mul(rates) > MAX_KEY_RATES {
            bail!(
                "{rates} rates for each of more than {} keys are more than the \
                 {MAX_KEY_RATES} key-rate pairs min-bucket sizes; give fewer rates, or a \
                 --key column with fewer values",
                keys - 1
            );
        }
        let listed = if self.top == 0 { keys } else { keys.min(self.top) };
        if rates.saturating_mul(listed) > MAX_LISTED_ROWS {
            // Refused while reading, as soon as the keys met pass the bound: the input may
            // hold more, and --top 0 lists them all.
            if self.top == 0 {
                bail!(
                    "with --top 0, {rates} rates list more than the {MAX_LISTED_ROWS} rows \
                     min-bucket lists once {keys} keys are met (the input may hold more); \
                     give --top K, or fewer rates"
                );
            }
            bail!(
                "listing {listed} keys for each of {rates} rates is more than the \
                 {MAX_LISTED_ROWS} rows min-bucket lists; give --top K, or fewer rates"
            );
        }
        self.keys = keys;
        Ok(())
    }

    /// Returns one result per rate; with keys, the key needing the most, and the first keys
    /// by need, the largest bucket first.
    pub fn results(mut self, names: KeyNames, cover: Option<Percent>) -> Vec<report::MinBucket> {
        let own = self.own.take();
        let keyed = matches!(self.sizing, Sizing::Keyed(_));
        let named =
            |key: Option<Key>| key.filter(|_| keyed).zip(names.names).map(|(k, t)| t.name(k));
        let mut found = self.buckets(names, cover);
        if let Some((system, own, mut finders)) = own {
            for (result, need) in found.iter_mut().zip(&mut finders) {
                let (value, key) = need.result();
                result.system_size = Some(SystemSize {
                    system: system.name().to_owned(),
                    setting: own.setting.to_owned(),
                    value,
                    key: named(key),
                });
            }
        }
        found
    }

    /// The smallest lossless buckets, one result per rate.
    fn buckets(self, names: KeyNames, cover: Option<Percent>) -> Vec<report::MinBucket> {
        let kept = match self.sizing {
            Sizing::One(mut finders) => {
                return finders.results().into_iter().map(report::MinBucket::from).collect();
            }
            Sizing::Keyed(kept) => kept,
        };
        let empty = KeyTable::new();
        let table = names.names.unwrap_or(&empty);
        let (groups, events) = kept.into_grouped(table.len());
        let rates = &self.rates;
        let sizing = KeySizing {
            fresh: || KeyFinders::new(rates),
            size: |finders: &mut KeyFinders, key: usize| {
                finders.clear(rates);
                events.each(groups.range(key)).for_each(|(time, cost)| finders.push(time, cost));
                finders.results()
            },
            events: |key: usize| groups.count(key),
        };
        let shown = Shown { top: self.top, cover, column: names.column, threads: self.threads };
        by_key(rates, table, &sizing, &shown)
    }
}

/// How a keyed min-bucket sizes its keys: `size` finds key n's buckets, one a rate, with
/// room that `fresh` makes (one a thread), and `events` counts key n's events.
pub struct KeySizing<F, S, E> {
    /// Makes a thread's room.
    pub fresh: F,
    /// Finds a key's bucket at each rate.
    pub size: S,
    /// Counts a key's events.
    pub events: E,
}

/// What a keyed min-bucket shows: its `top` keys (all for 0), a `cover` if asked, the
/// key `column`, sized on `threads` threads.
pub struct Shown<'a> {
    /// Keys listed a rate; 0: all.
    pub top: usize,
    /// The share of events a cover holds, if asked.
    pub cover: Option<Percent>,
    /// The key column's name.
    pub column: &'a str,
    /// Threads that size the keys.
    pub threads: usize,
}

/// Returns a keyed min-bucket's answer for each of `rates`, over the keys of `table`,
/// each sized by `sizing`: its quantiles, its top keys, the worst, and the cover. What it
/// says depends only on each key's name, events and buckets, not on the keys' numbers.
pub fn by_key<'t, P: Send, F, S, E>(
    rates: &[Rate],
    table: &'t KeyTable,
    sizing: &KeySizing<F, S, E>,
    shown: &Shown,
) -> Vec<report::MinBucket>
where
    F: Fn() -> P + Sync,
    S: Fn(&mut P, usize) -> Vec<Lossless> + Sync,
    E: Fn(usize) -> u64 + Sync,
{
    let KeySizing { fresh: room, size, events: count } = sizing;
    let (top, cover) = (shown.top, shown.cover);
    // A cover names the neediest keys it leaves out: rank at least that many.
    let ranked_top = if top == 0 { 0 } else { top.max(LEFT_OUT_SHOWN) };
    // Each core sizes a run of keys, with histograms and rankings of its own.
    let fresh = || {
        let needs = vec![Histogram::new(); rates.len()];
        let rankings: Vec<Ranking> =
            rates.iter().map(|_| Ranking::new(table, ranked_top)).collect();
        (needs, rankings, room())
    };
    let each = |part: &mut (Vec<Histogram>, Vec<Ranking<'t>>, P), key: usize| {
        let (needs, rankings, finders) = part;
        let events = count(key);
        // Keys count up from 0 to the table's length, and the table numbers keys in 32
        // bits.
        let number = Key::try_from(key).expect("keys are numbered in 32 bits");
        let name = table.get(number);
        for (n, found) in size(finders, key).iter().enumerate() {
            needs[n].add(found.min_bucket, events);
            rankings[n].offer_named(number, name, found.min_bucket);
        }
    };
    let (needs, rankings, _) =
        fold_keys(table.len(), shown.threads, fresh, each, |all, (needs, rankings, _)| {
            let (all_needs, all_rankings, _) = all;
            all_needs.iter_mut().zip(&needs).for_each(|(mine, other)| mine.merge(other));
            all_rankings.iter_mut().zip(rankings).for_each(|(mine, other)| mine.merge(other));
        });
    // The keys listed, sized again for their spans, on every core.
    let ranked: Vec<Vec<(Key, u64)>> = rankings.into_iter().map(Ranking::into_keys).collect();
    let keys = ranked.iter().flatten().map(|&(key, _)| key);
    let listed = listed_again(keys, count, shown.threads, |key| size(&mut room(), slot(key)));
    let need_of = |n: usize, key: Key| KeyNeed {
        key: table.name(key),
        min_bucket: listed[&key][n].min_bucket,
        events: count(slot(key)),
    };
    (0..rates.len())
        .map(|n| {
            let mut keys: Vec<report::MinBucket> = ranked[n]
                .iter()
                .map(|&(key, _)| report::MinBucket {
                    key: Some(table.name(key)),
                    ..listed[&key][n].into()
                })
                .collect();
            // Over keys, the need is the worst key's, in the same fields as without keys;
            // `worst_key` names the key.
            let need = keys.first().map_or(Need { min_bucket: 0, span: None }, |w| w.need);
            let worst_key = keys.first().map(|worst| WorstKey {
                key: worst.key.clone().unwrap_or_default(),
                min_bucket: worst.need.min_bucket,
                span: worst.need.span,
            });
            let cover = cover.map(|share| {
                let min_bucket = needs[n].quantile(share).unwrap_or(0);
                let covered = needs[n].at_most(min_bucket);
                let all = needs[n].total();
                let count = usize::try_from(all.count - covered.count).unwrap_or(usize::MAX);
                let shown = ranked[n].iter().take(count.min(LEFT_OUT_SHOWN));
                Box::new(Cover {
                    share,
                    min_bucket,
                    keys_covered: usize::try_from(covered.count).unwrap_or(usize::MAX),
                    events_covered: covered.weight,
                    events: all.weight,
                    left_out: LeftOut {
                        count,
                        top: shown.map(|&(key, _)| need_of(n, key)).collect(),
                    },
                })
            });
            if top > 0 {
                keys.truncate(top);
            }
            let quantiles =
                needs[n].quantiles().map(|min_bucket| KeyQuantiles { min_bucket, dropped: None });
            let column = shown.column.to_owned();
            let by_key = KeyList { column, count: table.len(), quantiles, top: keys };
            report::MinBucket {
                rate: rates[n],
                key: None,
                need,
                worst_key,
                cover,
                by_key: Some(by_key),
                system_size: None,
            }
        })
        .collect()
}

/// Keys a cover lists among those it leaves out.
const LEFT_OUT_SHOWN: usize = 5;
