//! Deciding a keyed replay after reading, key by key: the memory engine's way when each
//! key's limiters see only its events.

use std::ops::Range;

use anyhow::Result;

use super::lane::Settings;
use crate::input::catalog::{Event, Key, KeyNotes, Timeline};
use crate::input::keys::{Groups, joined, slot};
use crate::limiter::{AnyLimiter, Rule, WithRule};
use crate::per_key::KeptEvents;

/// A keyed replay's events, kept by the memory engine as they come, to be decided when
/// every one is in: grouped by key, each key's limiters made fresh and run on its events
/// alone, the keys shared among up to `threads` threads. No state is kept between keys,
/// and a key's events are read in order, where deciding as read touches a key's state
/// once an event at random.
#[derive(Clone, Debug)]
pub(crate) struct Later {
    kept: KeptEvents,
    /// One more than the largest key kept.
    keys: usize,
    threads: usize,
}

/// A keyed replay decided key by key: its events as they came, the same grouped by key,
/// and their decisions in the grouped order, `stride` bytes an event (bit n % 8 of byte
/// n / 8 set if lane n passed it).
#[derive(Debug)]
pub(crate) struct KeysDecided {
    pub(crate) kept: KeptEvents,
    pub(crate) groups: Groups,
    pub(crate) events: Timeline,
    pub(crate) passed: Vec<u8>,
}

impl Later {
    /// Returns what keeps events to be decided on up to `threads` threads.
    pub(crate) fn new(threads: usize) -> Later {
        Later { kept: KeptEvents::default(), keys: 0, threads }
    }

    /// Keeps an event; past [`MAX_KEYED_EVENTS`](crate::input::keys::MAX_KEYED_EVENTS),
    /// an error.
    #[inline]
    pub(crate) fn keep(&mut self, event: Event) -> Result<()> {
        self.keys = self.keys.max(slot(event.key) + 1);
        self.kept.push(event, "a replay by key")
    }

    /// Decides every event kept as the limiters of `settings` do, each key's own on its
    /// events alone.
    /// A limiter whose system lets the key `empty` names through passes its events
    /// uncounted.
    pub(crate) fn decide(self, settings: &[Settings], empty: &KeyNotes) -> KeysDecided {
        let (groups, events) = self.kept.grouped(self.keys);
        let stride = stride(settings.len());
        let passed = decide(&groups, &events, settings, stride, (self.threads, empty));
        KeysDecided { kept: self.kept, groups, events, passed }
    }
}

/// Returns how many bytes an event's decisions take, one bit a lane of `lanes`.
pub(crate) fn stride(lanes: usize) -> usize {
    lanes.div_ceil(8)
}

/// Decides every event of `events`, grouped by key as `groups` groups them, as each key's
/// own limiters decide: a fresh limiter of each settings for each key, lane by lane.
/// Returns the decisions in the same order, `stride` bytes an event, bit n % 8 of byte
/// n / 8 set if lane n passed it. The keys are shared among up to `threads` threads in
/// runs of about as many events each; the decisions are the same for any number.
///
/// Only limiters whose keys share nothing may be decided so: not nginx's, whose keys share
/// a zone.
fn decide(
    groups: &Groups,
    events: &Timeline,
    settings: &[Settings],
    stride: usize,
    (threads, empty): (usize, &KeyNotes),
) -> Vec<u8> {
    let fresh: Vec<AnyLimiter> = settings.iter().map(Settings::limiter).collect();
    let mut passed = vec![0; events.len() * stride];
    let runs = groups.runs(threads);
    let run =
        |keys, out: &mut [u8]| decide_keys(groups, keys, events, (&fresh, stride, empty), out);
    if let [keys] = &runs[..] {
        run(keys.clone(), &mut passed);
        return passed;
    }
    std::thread::scope(|scope| {
        let mut rest = passed.as_mut_slice();
        let mut started = Vec::new();
        for keys in runs {
            let (mine, after) = rest.split_at_mut(groups.events_of(keys.clone()).len() * stride);
            rest = after;
            let run = &run;
            started.push(scope.spawn(move || run(keys, mine)));
        }
        started.into_iter().for_each(joined);
    });
    passed
}

/// Decides the events of the keys `keys` with limiters fresh as `fresh`, into `out`, which
/// holds their decisions from the first, `stride` bytes an event: a limiter at a time.
fn decide_keys(
    groups: &Groups,
    keys: Range<usize>,
    events: &Timeline,
    (fresh, stride, empty): (&[AnyLimiter], usize, &KeyNotes),
    out: &mut [u8],
) {
    for (lane, fresh) in fresh.iter().enumerate() {
        let keys = keys.clone();
        let deciding = Deciding { groups, keys, events, stride, lane, out: &mut *out, empty };
        fresh.with_rule(deciding);
    }
}

/// One limiter's decisions on the events of a run of keys, `stride` bytes an event in
/// `out`, from the run's first.
struct Deciding<'a> {
    groups: &'a Groups,
    keys: Range<usize>,
    events: &'a Timeline,
    stride: usize,
    lane: usize,
    out: &'a mut [u8],
    empty: &'a KeyNotes,
}

impl WithRule for Deciding<'_> {
    type Out = ();

    fn with<L: Rule>(self, limiter: &L) {
        let Deciding { groups, keys, events, stride, lane, out, empty } = self;
        // The rule steps in a state of each key's own, each made fresh from the limiter's
        // state as it starts: as it steps in each key's state when deciding as read.
        let mut rule = limiter.clone();
        let fresh = rule.state_mut().clone();
        let mut state = fresh.clone();
        let first = groups.events_of(keys.clone()).start;
        let (byte, bit) = (lane / 8, lane % 8);
        for key in keys {
            let range = groups.range(key);
            state.clone_from(&fresh);
            if L::READS_KEY_TEXT {
                rule.key_text(&mut state, empty.key_crc(key).unwrap_or(0));
            }
            // The empty key, where the system lets it through: every event passes, uncounted.
            let uncounted = L::SKIPS_EMPTY_KEY && Key::try_from(key).is_ok_and(|k| empty.is(k));
            for (event, (time, cost)) in (range.start - first..).zip(events.each(range)) {
                let passed = uncounted || rule.step(&mut state, time, cost, false).passed;
                out[event * stride + byte] |= u8::from(passed) << bit;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::num::NonZeroU64;

    use crate::input::catalog::{Event, KeyTable};
    use crate::limiter::Algorithm;
    use crate::memory::Memory;
    use crate::recorder::{KeyNames, Recorder, Settings};
    use crate::units::time::{Span, Timestamp};
    use crate::{Engine, Policy, decide_in_memory};

    /// Returns the record of `events` replayed through `settings` by key in memory,
    /// decided after reading, key by key, on `threads` threads.
    fn later(settings: &[Settings], events: &[Event], threads: usize) -> Recorder {
        let mut memory = Memory::new(Policy::SideBySide(settings)).unwrap();
        let mut record = Recorder::new(settings, true);
        assert!(record.takes_by_key() && memory.decide_by_key(threads));
        events.iter().for_each(|&event| memory.push(event, &mut record).unwrap());
        memory.flush(&mut record).unwrap();
        record
    }

    #[test]
    fn deciding_key_by_key_after_reading_gives_the_reports_of_deciding_as_read() {
        // 70,000 events over 2,000 keys, a few of them busy: enough events that the keys
        // are decided on threads, in runs; some events cost more than 1.
        let mut table = KeyTable::new();
        let (mut seed, mut micros) = (7u64, 0i64);
        let events: Vec<Event> = (0..70_000)
            .map(|n| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                micros += i64::try_from(seed % 3_000_000).unwrap();
                let name = if seed % 4 == 0 { seed % 5 } else { seed % 2_000 };
                let key = table.intern(name.to_string().as_bytes()).unwrap();
                let cost = if n % 50 == 0 { 1 + seed % 4 } else { 1 };
                Event { cost, ..Event::new(Timestamp::from_micros(micros).unwrap(), key) }
            })
            .collect();
        let rate = "5/m".parse().unwrap();
        let settings: Vec<Settings> = (Algorithm::ALL.into_iter())
            .filter(|a| !a.has_zone() && a.refuses(rate).is_none())
            .map(|algorithm| Settings {
                algorithm,
                rate,
                burst: NonZeroU64::new(3).unwrap(),
                window: Span::from_micros(60_000_000).unwrap(),
                params: algorithm.default_params(),
            })
            .collect();
        assert!(settings.len() > 8, "decisions of more than one byte an event");
        let names = KeyNames { column: "k", names: Some(&table) };
        // Deciding as read keeps a trace, which deciding later cannot.
        let as_read = decide_in_memory(&settings, true, events.iter().copied()).unwrap();
        for threads in [1, 3] {
            let want = as_read.reports("t", names, 0, threads);
            let later = later(&settings, &events, threads);
            assert_eq!(later.reports("t", names, 0, threads), want, "{threads} threads");
        }
        // One limiter at a time, as replay runs it.
        let alone = [Algorithm::Gcra, Algorithm::SlidingLog, Algorithm::LeakyQueue];
        for one in settings.iter().filter(|s| alone.contains(&s.algorithm)) {
            let as_read = decide_in_memory(&[*one], true, events.iter().copied()).unwrap();
            let later = later(&[*one], &events, 2);
            assert_eq!(later.reports("t", names, 5, 2), as_read.reports("t", names, 5, 2));
        }
    }

    #[test]
    fn keys_named_but_never_kept_report_as_when_decided_as_read() {
        // Keys 0 and 2 have events; keys 1 and 3 were named but none of their events came
        // (a filter dropped them): the engine groups the two keys it saw, the report asks
        // for four.
        let mut table = KeyTable::new();
        for name in ["a", "b", "c", "d"] {
            table.intern(name.as_bytes()).unwrap();
        }
        let events: Vec<Event> = (0..40u32)
            .map(|n| {
                let at = Timestamp::from_micros(i64::from(n) * 7_000_000).unwrap();
                Event::new(at, 2 * (n % 2))
            })
            .collect();
        let settings = [Settings {
            algorithm: Algorithm::Gcra,
            rate: "2/m".parse().unwrap(),
            burst: NonZeroU64::new(2).unwrap(),
            window: Span::from_micros(60_000_000).unwrap(),
            params: Algorithm::Gcra.default_params(),
        }];
        let names = KeyNames { column: "k", names: Some(&table) };
        let as_read = decide_in_memory(&settings, true, events.iter().copied()).unwrap();
        let later = later(&settings, &events, 1);
        assert_eq!(later.reports("t", names, 0, 1), as_read.reports("t", names, 0, 1));
    }
}
