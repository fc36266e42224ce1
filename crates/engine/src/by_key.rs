//! Deciding a keyed replay after reading, key by key: each key's limiters see only its events.

use std::ops::Range;

use super::lane::Settings;
use crate::input::catalog::Timeline;
use crate::input::keys::{Groups, joined};
use crate::limiter::{AnyLimiter, Rule, WithRule};

/// Decides every event of `events`, grouped by key as `groups` groups them, as each key's
/// own limiters decide: a fresh limiter of each settings for each key, lane by lane.
/// Returns the decisions in the same order, `stride` bytes an event, bit n % 8 of byte
/// n / 8 set if lane n passed it. The keys are shared among up to `threads` threads in
/// runs of about as many events each; the decisions are the same for any number.
///
/// Only limiters whose keys share nothing may be decided so: not nginx's, whose keys share
/// a zone.
pub(super) fn decide(
    groups: &Groups,
    events: &Timeline,
    settings: &[Settings],
    stride: usize,
    threads: usize,
) -> Vec<u8> {
    let fresh: Vec<AnyLimiter> = settings.iter().map(Settings::limiter).collect();
    let mut passed = vec![0; events.len() * stride];
    let runs = groups.runs(threads);
    let run = |keys, out: &mut [u8]| decide_keys(groups, keys, events, (&fresh, stride), out);
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
    (fresh, stride): (&[AnyLimiter], usize),
    out: &mut [u8],
) {
    for (lane, fresh) in fresh.iter().enumerate() {
        let keys = keys.clone();
        fresh.with_rule(Deciding { groups, keys, events, stride, lane, out: &mut *out });
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
}

impl WithRule for Deciding<'_> {
    type Out = ();

    fn with<L: Rule>(self, limiter: &L) {
        let Deciding { groups, keys, events, stride, lane, out } = self;
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
            for (event, (time, cost)) in (range.start - first..).zip(events.each(range)) {
                let passed = rule.step(&mut state, time, cost, false).passed;
                out[event * stride + byte] |= u8::from(passed) << bit;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::num::NonZeroU64;

    use crate::decide_in_memory;
    use crate::input::catalog::{Event, KeyTable};
    use crate::limiter::Algorithm;
    use crate::recorder::{KeyNames, Recorder, Settings};
    use crate::units::time::{Span, Timestamp};

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
        let mut later = Recorder::new(&settings, true);
        assert!(later.decide_later());
        events.iter().for_each(|&event| later.keep(event).unwrap());
        for threads in [1, 3] {
            let want = as_read.reports("t", names, 0, threads);
            assert_eq!(later.reports("t", names, 0, threads), want, "{threads} threads");
        }
        // One limiter at a time, as replay runs it.
        let alone = [Algorithm::Gcra, Algorithm::SlidingLog, Algorithm::LeakyQueue];
        for one in settings.iter().filter(|s| alone.contains(&s.algorithm)) {
            let as_read = decide_in_memory(&[*one], true, events.iter().copied()).unwrap();
            let mut later = Recorder::new(&[*one], true);
            assert!(later.decide_later());
            events.iter().for_each(|&event| later.keep(event).unwrap());
            assert_eq!(later.reports("t", names, 5, 2), as_read.reports("t", names, 5, 2));
        }
    }
}
