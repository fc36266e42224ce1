//! Recording a replay: what each limiter decided, and what its report needs.

use std::borrow::Cow;

use anyhow::{Result, bail};

use super::key_spread::EmptyAside;
pub use super::key_spread::{KeyPromises, KeySpread};
pub use super::lane::Settings;
use super::lane::{Demand, Lane, Totals, lane_passed};
use crate::input::catalog::{Event, Key, KeyTable, Timeline, slot};
use crate::input::keys::{Groups, Ranking, joined};
use crate::limiter::promise::PromiseCheck;
use crate::limiter::{Decision, Waits};
use crate::per_key::{KeptEvents, fold_keys, listed_again};
use crate::report::{self, KeyList, KeyQuantiles};
use crate::sizing::quantile::Histogram;

/// The record of a replay. Without keys, every figure is found as events come, in memory
/// that does not grow with them. With keys, the totals over all keys are found as events
/// come, and each event is kept, in 13 bytes (21 once an event costs other than 1), to be
/// grouped by key at the end: then each key's figures are found from its own events alone,
/// one key at a time, so that a key costs no more than a few bytes whatever its figures
/// take. Optionally it keeps every decision, in event order.
#[derive(Clone, Debug)]
pub struct Recorder {
    settings: Vec<Settings>,
    kept: Kept,
    trace: Option<Vec<bool>>,
    fleets: Option<Vec<report::FleetReport>>,
}

#[derive(Clone, Debug)]
enum Kept {
    One(Box<KeyRecord>),
    KeyedEvents(Box<KeyedEvents>),
}

/// One key's demand and its lanes.
#[derive(Clone, Debug)]
struct KeyRecord {
    demand: Demand,
    lanes: Vec<Lane>,
}

impl KeyRecord {
    fn new(settings: &[Settings]) -> KeyRecord {
        let first = settings[0];
        let lanes = settings.iter().map(|&s| Lane::new(s)).collect();
        KeyRecord { demand: Demand::new(first.rate, first.window), lanes }
    }

    fn clear(&mut self) {
        self.demand.clear();
        self.lanes.iter_mut().for_each(Lane::clear);
    }
}

/// A keyed replay's events, kept to be grouped by key; the totals over all keys are
/// found from them too, at the end, while the keys are.
#[derive(Clone, Debug)]
struct KeyedEvents {
    kept: KeptEvents,
    /// For each event, `stride` bytes: bit n % 8 of byte n / 8 set if lane n passed it.
    passed: Vec<u8>,
    stride: usize,
    /// Whether some lane tells its waits (nginx's, as it decided them: a key's depend on
    /// the zone it shares with the others, so they cannot be found again from the key's own
    /// events).
    told: bool,
    /// If `told`, each event's wait in each lane; else empty.
    waits: Vec<i128>,
    /// The events and their decisions, grouped by key, if the engine decided them key by
    /// key after reading: then `passed` stays empty.
    decided: Option<Box<(Groups, Timeline, Vec<u8>)>>,
}

impl KeyedEvents {
    /// Keeps an event, failing past
    /// [`MAX_KEYED_EVENTS`](crate::input::keys::MAX_KEYED_EVENTS).
    #[inline]
    fn push(&mut self, event: Event) -> Result<()> {
        self.kept.push(event, "a replay by key")
    }
}

/// How keys are named in reports.
#[derive(Clone, Copy, Debug, Default)]
pub struct KeyNames<'a> {
    /// The key column's name.
    pub column: &'a str,
    /// The keys, by number; `None` without a key column.
    pub names: Option<&'a KeyTable>,
}

impl<'a> KeyNames<'a> {
    /// Returns the names of a read's keys: from the table reading filled, if events were
    /// keyed by `column`.
    pub fn of(column: Option<&'a str>, stats: &'a crate::input::catalog::ReadStats) -> Self {
        KeyNames { column: column.unwrap_or_default(), names: column.map(|_| &stats.keys) }
    }
}

/// The reports of a replay, one per lane; with keys, also the keys with the most drops
/// over all lanes.
#[derive(Clone, Debug, PartialEq)]
pub struct Reports {
    /// One report per lane.
    pub lanes: Vec<report::LimiterReport>,
    /// With keys, the first keys by their drops over all lanes.
    pub across: Vec<report::KeyDrops>,
    /// With keys, what the keys add up to, as the reports' figures over keys are made of
    /// it: to be added to another run's over other keys (keys split among machines).
    pub spread: Option<KeySpread>,
}

impl Recorder {
    /// Returns a record with one lane per settings, which must share a rate and a window;
    /// `keyed` records each key apart, and their totals, keeping each event's decisions in
    /// one bit a lane (a byte for up to 8 lanes).
    pub fn new(settings: &[Settings], keyed: bool) -> Recorder {
        assert!(!settings.is_empty(), "at least one limiter");
        let kept = if keyed {
            Kept::KeyedEvents(Box::new(KeyedEvents {
                kept: KeptEvents::default(),
                passed: Vec::new(),
                stride: super::by_key::stride(settings.len()),
                told: settings.iter().any(Settings::tells_waits),
                waits: Vec::new(),
                decided: None,
            }))
        } else {
            Kept::One(Box::new(KeyRecord::new(settings)))
        };
        Recorder { settings: settings.to_vec(), kept, trace: None, fleets: None }
    }

    /// Keeps every decision from now on, lane by lane for each event in order; see
    /// [`trace`](Recorder::trace).
    pub fn keep_trace(&mut self) {
        self.trace = Some(Vec::new());
    }

    /// Returns every decision kept since [`keep_trace`](Recorder::keep_trace): for each
    /// event in order, one per lane.
    pub fn trace(&self) -> &[bool] {
        self.trace.as_deref().unwrap_or_default()
    }

    /// Returns the number of lanes: one per limiter.
    pub fn lanes(&self) -> usize {
        self.settings.len()
    }

    /// Records an event and each lane's decision on it, in lane order; events must come in
    /// time order. It fails only past [`MAX_KEYED_EVENTS`](crate::input::keys::MAX_KEYED_EVENTS).
    #[inline]
    pub fn record(
        &mut self,
        event: Event,
        decisions: impl IntoIterator<Item = Decision>,
    ) -> Result<()> {
        let Event { time, cost, .. } = event;
        let mut trace = |pass: bool| {
            if let Some(trace) = &mut self.trace {
                trace.push(pass);
            }
        };
        match &mut self.kept {
            Kept::One(only) => {
                only.demand.push(time, cost);
                for (lane, decision) in only.lanes.iter_mut().zip(decisions) {
                    trace(lane.record(time, cost, decision));
                }
            }
            Kept::KeyedEvents(keyed) => {
                debug_assert!(keyed.decided.is_none(), "decisions recorded after the keys'");
                keyed.push(event)?;
                let at = keyed.passed.len();
                keyed.passed.resize(at + keyed.stride, 0);
                for (n, decision) in decisions.into_iter().enumerate() {
                    keyed.passed[at + n / 8] |= u8::from(decision.passed) << (n % 8);
                    if keyed.told {
                        keyed.waits.push(decision.wait);
                    }
                    trace(decision.passed);
                }
            }
        }
        Ok(())
    }

    /// Says whether it takes a keyed replay's decisions made key by key after reading
    /// ([`record_by_key`](Recorder::record_by_key)): with keys, no trace, no limiter that
    /// tells its waits, and nothing recorded yet.
    pub(crate) fn takes_by_key(&self) -> bool {
        match &self.kept {
            Kept::KeyedEvents(keyed) => {
                self.trace.is_none() && !keyed.told && keyed.kept.events().is_empty()
            }
            Kept::One(_) => false,
        }
    }

    /// Records every event of a keyed replay at once, with its decisions, made key by key
    /// after reading, as [`takes_by_key`](Recorder::takes_by_key) allows.
    pub(crate) fn record_by_key(&mut self, decided: super::by_key::KeysDecided) -> Result<()> {
        let takes = self.takes_by_key();
        match &mut self.kept {
            Kept::KeyedEvents(keyed) if takes => {
                let super::by_key::KeysDecided { kept, groups, events, passed } = decided;
                keyed.kept = kept;
                keyed.decided = Some(Box::new((groups, events, passed)));
                Ok(())
            }
            _ => {
                bail!("a keyed replay's decisions given at once to a record that cannot take them")
            }
        }
    }

    /// Returns one report per lane, naming the input `input`; with keys, each gives the
    /// totals and the first `top` keys (all for 0), most dropped first, found on up to
    /// `threads` threads. The reports are the same for any number of threads.
    pub fn reports(&self, input: &str, keys: KeyNames, top: usize, threads: usize) -> Reports {
        let fleet = |n: usize| self.fleets.as_ref().and_then(|fleets| fleets.get(n));
        match &self.kept {
            Kept::One(only) => Reports {
                lanes: (only.lanes.iter().enumerate())
                    .map(|(n, lane)| {
                        lane.report(&only.demand, input, None, fleet(n), only.demand.weighted)
                    })
                    .collect(),
                across: Vec::new(),
                spread: None,
            },
            Kept::KeyedEvents(keyed) => {
                keyed.reports(&self.settings, input, keys, (top, threads), fleet)
            }
        }
    }

    /// Records that the lanes ran on fleets of servers, one per lane, in lane order; their
    /// reports then say so.
    pub fn set_fleets(&mut self, fleets: Vec<report::FleetReport>) {
        self.fleets = Some(fleets);
    }
}

/// What a key's figures add to the totals, over all keys.
struct Spread<'a> {
    /// Each key's need, but the empty key's where a lane lets it through.
    min_buckets: Histogram,
    /// The key that needs the largest bucket, the first by name of those that need as much;
    /// of the keys in `min_buckets`.
    worst: Ranking<'a>,
    empty: EmptyAside,
    dropped: Vec<Histogram>,
    promises: Vec<KeyPromises>,
    waits: Vec<Option<Waits>>,
    ranked: Vec<Ranking<'a>>,
    across: Ranking<'a>,
}

impl<'a> Spread<'a> {
    /// Adds what key `key`, replayed into `state`, adds to the totals.
    fn add(&mut self, key: usize, state: &KeyRecord, table: &'a KeyTable) {
        let events = state.demand.events;
        let need = state.demand.lossless.result().min_bucket;
        // Keys count up from 0 to the table's length, and the table numbers keys in 32 bits.
        let number = Key::try_from(key).expect("keys are numbered in 32 bits");
        let name = table.get(number);
        if !self.empty.sets_aside(key, need, events) {
            self.min_buckets.add(need, events);
            self.worst.offer_named(number, name, need);
        }
        let mut all_dropped = 0;
        for (n, lane) in state.lanes.iter().enumerate() {
            let dropped = events - lane.passed;
            all_dropped += dropped;
            self.dropped[n].add(dropped, events);
            // The empty key, where the lane lets it through, is in no key's promise; its
            // events are still among those passed, and its row among the keys.
            if !self.empty.lets_through(key, n, events) {
                self.promises[n].add(&lane.promise, lane.waits());
            }
            if let Some(waits) = lane.waits() {
                self.waits[n] = Some(self.waits[n].map_or(waits, |w| w.merge(&waits)));
            }
            self.ranked[n].offer_named(number, name, dropped);
        }
        self.across.offer_named(number, name, all_dropped);
    }

    /// Adds what other keys added: the same totals as if this had seen them.
    fn merge(&mut self, other: Spread<'a>) {
        self.min_buckets.merge(&other.min_buckets);
        self.worst.merge(other.worst);
        self.empty.merge(other.empty);
        let lanes = other.dropped.iter().zip(other.promises).zip(other.waits).zip(other.ranked);
        for (n, (((dropped, promises), waits), ranked)) in lanes.enumerate() {
            self.dropped[n].merge(dropped);
            self.promises[n].merge(&promises);
            if let Some(waits) = waits {
                self.waits[n] = Some(self.waits[n].map_or(waits, |w| w.merge(&waits)));
            }
            self.ranked[n].merge(ranked);
        }
        self.across.merge(other.across);
    }
}

/// The events of a keyed replay, grouped by key: their times, costs and decisions in that
/// order.
struct Grouped<'a> {
    groups: &'a Groups,
    events: &'a Timeline,
    passed: Cow<'a, [u8]>,
    stride: usize,
    /// Each event's waits, a lane each, if any lane tells them.
    waits: Vec<i128>,
}

impl KeyedEvents {
    /// Replays one key's events into `state`, as recorded; with `windows`, their busiest
    /// windows too.
    fn replay(grouped: &Grouped, key: usize, state: &mut KeyRecord, windows: bool) {
        state.clear();
        let range = grouped.groups.range(key);
        let stride = grouped.stride;
        let decisions =
            grouped.passed[range.start * stride..range.end * stride].chunks_exact(stride);
        let lanes = state.lanes.len();
        let events = grouped.events.each(range.clone()).zip(decisions);
        for (event, ((time, cost), bits)) in (range.start..).zip(events) {
            let decision = |n: usize| Decision {
                passed: lane_passed(bits, n),
                wait: grouped.waits.get(event * lanes + n).copied().unwrap_or(0),
            };
            let each = state.lanes.iter_mut().enumerate();
            if windows {
                state.demand.push(time, cost);
                each.for_each(|(n, l)| _ = l.record(time, cost, decision(n)));
            } else {
                state.demand.count(time, cost);
                each.for_each(|(n, l)| _ = l.count(time, cost, decision(n)));
            }
        }
    }

    fn reports<'f>(
        &self,
        settings: &[Settings],
        input: &str,
        names: KeyNames,
        (top, threads): (usize, usize),
        fleet: impl Fn(usize) -> Option<&'f report::FleetReport>,
    ) -> Reports {
        let empty = KeyTable::new();
        let table = names.names.unwrap_or(&empty);
        let count = table.len();
        let stride = self.stride;
        // Decided key by key, the events come grouped, and their decisions are put back in
        // event order for the totals; decided as read, the events are grouped here, and
        // their decisions gathered by key for the keys.
        let as_read;
        let (groups, events, passed, in_order) = match &self.decided {
            Some(decided) => {
                let (groups, events, passed) = &**decided;
                let in_order = groups.scatter_chunks(passed, stride);
                (groups, events, Cow::Borrowed(&passed[..]), Cow::Owned(in_order))
            }
            None => {
                as_read = self.kept.grouped(count);
                let passed = as_read.0.gather_chunks(&self.passed, stride);
                (&as_read.0, &as_read.1, Cow::Owned(passed), Cow::Borrowed(&self.passed[..]))
            }
        };
        let grouped = Grouped {
            events,
            passed,
            stride,
            waits: match self.waits.is_empty() {
                true => Vec::new(),
                false => groups.gather_chunks(&self.waits, settings.len()),
            },
            groups,
        };
        let lanes = settings.len();
        // Units are reported when any event of the run cost other than 1.
        let weighted = self.kept.events().costs().is_some();
        let empty = EmptyAside::of(table, settings);
        // Pass one over the keys: what each adds to the totals, and which are listed.
        let fresh = || {
            let spread = Spread {
                min_buckets: Histogram::new(),
                worst: Ranking::new(table, 1),
                empty: empty.clone(),
                dropped: vec![Histogram::new(); lanes],
                promises: vec![KeyPromises::default(); lanes],
                waits: vec![None; lanes],
                ranked: (0..lanes).map(|_| Ranking::new(table, top)).collect(),
                across: Ranking::new(table, top),
            };
            (spread, KeyRecord::new(settings))
        };
        let each = |part: &mut _, key: usize| {
            let (spread, state): &mut (Spread, KeyRecord) = part;
            KeyedEvents::replay(&grouped, key, state, false);
            spread.add(key, state, table);
        };
        // The totals, in event order, on a thread of their own beside the keys'.
        let (totals, (spread, _)) = std::thread::scope(|scope| {
            let totals =
                scope.spawn(|| Totals::of(self.kept.events(), &in_order, stride, settings));
            let spread = fold_keys(count, threads, fresh, each, |all, part| {
                let (all, _): &mut (Spread, KeyRecord) = all;
                all.merge(part.0);
            });
            (joined(totals), spread)
        });
        // Pass two: the listed keys again, in full.
        let worst = spread.worst.into_keys().first().copied();
        let ranked: Vec<Vec<(Key, u64)>> =
            spread.ranked.into_iter().map(Ranking::into_keys).collect();
        let across = spread.across.into_keys();
        let keys = ranked.iter().flatten().chain(&across).map(|&(k, _)| k);
        let listed = listed_again(
            keys,
            |key| grouped.groups.count(key),
            threads,
            |key| {
                let mut state = KeyRecord::new(settings);
                KeyedEvents::replay(&grouped, slot(key), &mut state, true);
                state
            },
        );
        let lanes = (0..lanes)
            .map(|n| {
                let keys = ranked[n]
                    .iter()
                    .map(|&(key, _)| {
                        let state = &listed[&key];
                        let name = Some(table.name(key));
                        let row = state.lanes[n].report(&state.demand, input, name, None, weighted);
                        let aside = spread.empty.row(slot(key), n);
                        let not_accounted = aside.then_some(state.demand.events);
                        report::LimiterReport { not_accounted, ..row }
                    })
                    .collect();
                let Settings { algorithm, rate, burst, .. } = settings[n];
                let (events, passed) = (totals.demand.events, totals.passed[n]);
                let (min_buckets, worst) = spread.empty.sizing(n, &spread.min_buckets, worst);
                let worst_key = worst.map(|(key, need)| report::WorstKey {
                    key: table.name(key),
                    min_bucket: need,
                    span: None,
                });
                let (not_accounted, left_out) = spread.empty.report(n);
                let quantiles = min_buckets.quantiles().map(|min_bucket| KeyQuantiles {
                    min_bucket,
                    dropped: spread.dropped[n].quantiles(),
                });
                let check = PromiseCheck::new(algorithm, rate, burst.get());
                let (units, too_big) = totals.spent[n].report(totals.demand.units, weighted);
                report::LimiterReport {
                    input: input.to_owned(),
                    key: None,
                    algorithm,
                    rate,
                    burst: algorithm.shown_burst(burst),
                    delay: settings[n].shown_delay(),
                    events,
                    passed,
                    dropped: events - passed,
                    units,
                    too_big,
                    busiest_window: report::Window::of(totals.busiest[n].busiest(), weighted),
                    demand_busiest_window: report::Window::of(
                        totals.demand.window.busiest(),
                        weighted,
                    ),
                    // Over keys, the need is the worst key's, in the same field as without
                    // keys; `worst_key` names the key.
                    min_bucket: worst_key.as_ref().map_or(0, |w| w.min_bucket),
                    worst_key,
                    system_size: None,
                    not_accounted,
                    queue: spread.waits[n].map(Into::into),
                    promise: spread.promises[n].promise(&check, count - left_out),
                    fleet: fleet(n).cloned().map(Box::new),
                    by_key: Some(KeyList {
                        column: names.column.to_owned(),
                        count,
                        quantiles,
                        top: keys,
                    }),
                }
            })
            .collect();
        let across = across
            .iter()
            .map(|&(key, _)| {
                let state = &listed[&key];
                let events = state.demand.events;
                report::KeyDrops {
                    key: table.name(key),
                    events,
                    dropped: state.lanes.iter().map(|l| events - l.passed).collect(),
                }
            })
            .collect();
        let spread = KeySpread {
            keys: count,
            // Parts of a run are merged with one lane: the first's.
            min_buckets: spread.empty.sizing(0, &spread.min_buckets, None).0,
            not_accounted: spread.empty.not_accounted.clone(),
            dropped: spread.dropped,
            promises: spread.promises,
            waits: spread.waits,
        };
        Reports { lanes, across, spread: Some(spread) }
    }
}

#[cfg(test)]
mod tests {
    use std::num::NonZeroU64;

    use super::*;
    use crate::decide_in_memory;
    use crate::limiter::Algorithm;
    use crate::report::LimiterReport;
    use crate::units::time::{Span, Timestamp};

    fn event(millis: i64, key: Key, cost: u64) -> Event {
        Event { cost, ..Event::new(Timestamp::from_micros(millis * 1_000).unwrap(), key) }
    }

    #[test]
    fn a_keyed_record_weighs_each_keys_events_by_their_costs() {
        let settings = [Settings {
            algorithm: Algorithm::TokenBucket,
            rate: "1/10s".parse().unwrap(),
            burst: NonZeroU64::new(3).unwrap(),
            window: Span::from_micros(10_000_000).unwrap(),
            params: Algorithm::TokenBucket.default_params(),
        }];
        let mut table = KeyTable::new();
        let (a, b) = (table.intern(b"a").unwrap(), table.intern(b"b").unwrap());
        // Key a, by hand: 3 units at 0 s empty the bucket of 3; 1 unit at 1 s finds 0.1
        // token and is dropped; 2 units at 20 s find 2. Losing nothing needs 4: the first
        // two events, 4 units in 1 s (4 − 0.1, rounded up), and all three, 6 units in 20 s.
        let a_events = [event(0, a, 3), event(1_000, a, 1), event(20_000, a, 2)];
        let events = [a_events[0], event(500, b, 1), a_events[1], a_events[2]];
        let keyed = decide_in_memory(&settings, true, events).unwrap();
        let names = KeyNames { column: "k", names: Some(&table) };
        let reports = keyed.reports("test", names, 0, 1);
        let over_keys = &reports.lanes[0];
        assert_eq!((over_keys.events, over_keys.passed), (4, 3));
        let top = &over_keys.by_key.as_ref().unwrap().top;
        let key_a = top.iter().find(|r| r.key.as_deref() == Some("a")).unwrap();
        assert_eq!((key_a.events, key_a.passed, key_a.min_bucket), (3, 2, 4));
        // The busiest 10 s passed 3 units in one event; demand had 4 units in two there.
        assert_eq!((key_a.busiest_window.count, key_a.demand_busiest_window.count), (1, 2));
        assert_eq!(
            over_keys.worst_key.as_ref().map(|w| (w.key.as_str(), w.min_bucket)),
            Some(("a", 4))
        );
        // The same events alone, unkeyed, give the same figures.
        let alone = decide_in_memory(&settings, false, a_events).unwrap();
        let alone = &alone.reports("test", KeyNames::default(), 0, 1).lanes[0];
        assert_eq!(LimiterReport { key: Some("a".into()), ..alone.clone() }, *key_a);
    }
}
