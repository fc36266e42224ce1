//! A policy's limits in memory: each key's state for each, and the rule that decides.

use super::{Layer, Policy, PolicyError};
use crate::event::{Event, KeyNotes, slot};
use crate::limiter::{AnyPerKey, Decision};
use crate::units::time::Timestamp;

/// The limits of a [`Policy`], each with its state for every key, deciding events in time
/// order: side by side, each limit alone; all or nothing, every layer asked first (which
/// spends nothing), then all charged or none, the rule nginx's chained `limit_req` keeps.
///
/// ```
/// use std::num::NonZeroU64;
///
/// use ratelimit_core::event::Event;
/// use ratelimit_core::limiter::Algorithm;
/// use ratelimit_core::policy::{Layer, Limits, Policy, Settings};
/// use ratelimit_core::units::time::{Span, Timestamp};
///
/// // Each client 2 a minute at most, and all of them 3 a minute.
/// let limit = |algorithm: Algorithm, rate: &str, burst: u64, keyed: bool| Layer {
///     settings: Settings {
///         algorithm,
///         rate: rate.parse().unwrap(),
///         burst: NonZeroU64::new(burst).unwrap(),
///         window: Span::from_micros(60_000_000).unwrap(),
///         params: algorithm.default_params(),
///     },
///     keyed,
///     cost: None,
///     counts_refused: false,
/// };
/// let layers = [
///     limit(Algorithm::Gcra, "2/m", 2, true),
///     limit(Algorithm::FixedWindow, "3/m", 1, false),
/// ];
/// let mut limits = Limits::new(Policy::AllOrNothing(&layers))?;
/// // Client 0 three times, then client 1 twice, all in the first second.
/// let events: Vec<Event> = [0, 0, 0, 1, 1]
///     .iter()
///     .map(|&client| Event::new(Timestamp::from_micros(0).unwrap(), client))
///     .collect();
/// let passed: Vec<bool> = events.iter().map(|&e| limits.decide(e).passed()).collect();
/// // Client 0's third is over its own 2; client 1's second is over the 3 of all.
/// assert_eq!(passed, [true, true, false, true, false]);
/// # Ok::<(), ratelimit_core::policy::PolicyError>(())
/// ```
#[derive(Clone, Debug)]
pub struct Limits {
    each: Vec<(AnyPerKey, Layer)>,
    all_or_nothing: bool,
    /// The last event's decisions, each limit's view of it beside its decision.
    decided: Vec<(Event, Decision)>,
    /// What the reading that numbers the keys notes of them: the empty key's number.
    empty: KeyNotes,
    /// Whether any limit lets an event of the empty key through uncounted.
    skips: bool,
}

/// What the limits decided on one event: which refused it, and each limit's view of the
/// event (its key and its cost) beside its decision, in limit order.
#[derive(Clone, Copy, Debug)]
pub struct Decided<'a> {
    /// The limits that refused the event, bit n for limit n: all or nothing (at most
    /// [`MAX_LAYERS`](super::MAX_LAYERS) layers), those that refused it when asked; side
    /// by side, those whose decision refused it, limit n past the 32nd on bit n % 32.
    pub refused: u32,
    /// Each limit's view of the event, and its decision.
    pub each: &'a [(Event, Decision)],
}

impl Decided<'_> {
    /// Whether every limit admitted the event: all or nothing, whether it passed.
    pub fn passed(&self) -> bool {
        self.refused == 0
    }
}

impl Limits {
    /// Returns the limits of `policy`, each in its first state, or why they make no policy
    /// ([`Policy::check`]).
    pub fn new(policy: Policy<'_>) -> Result<Limits, PolicyError> {
        policy.check()?;
        let layers = policy.layers();
        Ok(Limits {
            each: layers.iter().map(|l| (l.settings.per_key(), l.clone())).collect(),
            all_or_nothing: policy.all_or_nothing(),
            decided: Vec::with_capacity(layers.len()),
            empty: KeyNotes::default(),
            skips: layers.iter().any(Layer::skips_empty_key),
        })
    }

    /// Shares `notes`, what the reading of the events notes of their keys as it numbers
    /// them: the limits whose systems let an event of the empty key through uncounted
    /// ([`Layer::skips_empty_key`]) then do, untouched by it, and a keyed limit whose system
    /// reads a key's text ([`KeyedState::READS_KEY_TEXT`]) reads it there.
    ///
    /// [`KeyedState::READS_KEY_TEXT`]: crate::limiter::KeyedState::READS_KEY_TEXT
    pub fn share_key_notes(&mut self, notes: &KeyNotes) {
        self.empty = notes.clone();
        for (limiter, layer) in &mut self.each {
            layer.share_key_notes(limiter, notes);
        }
    }

    /// Returns the limits, as layers, in order.
    pub fn layers(&self) -> impl ExactSizeIterator<Item = &Layer> {
        self.each.iter().map(|(_, layer)| layer)
    }

    /// Whether an event passes only if every limit admits it.
    pub fn all_or_nothing(&self) -> bool {
        self.all_or_nothing
    }

    /// Returns each limit's limiter, which holds every key's state, beside its layer, in
    /// order.
    pub fn each(&self) -> impl ExactSizeIterator<Item = (&AnyPerKey, &Layer)> {
        self.each.iter().map(|(limiter, layer)| (limiter, layer))
    }

    /// Decides `event`, the next in time order, and says what each limit decided.
    #[inline]
    pub fn decide(&mut self, event: Event) -> Decided<'_> {
        let empty = self.is_empty(event);
        self.decide_keyed(event, empty)
    }

    /// Decides `event` as [`decide`](Limits::decide) does, its key empty if `empty`,
    /// whatever the shared number says: for a caller that knows its keys' values.
    #[inline]
    pub fn decide_keyed(&mut self, event: Event, empty: bool) -> Decided<'_> {
        self.decided.clear();
        let refused = if self.all_or_nothing {
            let refused = self.refusals(event, empty);
            let Limits { each, decided, .. } = self;
            settle(each, event, refused, empty, |seen, decision| decided.push((seen, decision)));
            refused
        } else {
            let Limits { each, decided, .. } = self;
            let mut refused = 0;
            for (n, decision) in alone(each, event, empty).enumerate() {
                refused |= u32::from(!decision.passed) << (n % 32);
                decided.push((event, decision));
            }
            refused
        };
        Decided { refused, each: &self.decided }
    }

    /// Side by side, decides `event` by each limit alone, and returns each one's decision,
    /// in limit order, each made as the iterator reaches it: read them all. A caller that
    /// hands each decision on as it comes keeps none. `None` for layers, all or nothing,
    /// which [`decide`](Limits::decide) decides.
    #[inline]
    pub fn side_by_side(&mut self, event: Event) -> Option<impl Iterator<Item = Decision>> {
        let empty = self.is_empty(event);
        (!self.all_or_nothing).then(|| alone(&mut self.each, event, empty))
    }

    /// Whether `event`'s key is the empty key, for limits that let it through.
    #[inline]
    fn is_empty(&self, event: Event) -> bool {
        self.skips && self.empty.is(event.key)
    }

    /// Returns whether key `key` is back at its start as of `now` in every keyed limit
    /// ([`AnyPerKey::at_rest`]); the other limits keep no state a key.
    pub fn at_rest(&self, key: usize, now: Timestamp) -> bool {
        let mut keyed = self.each.iter().filter(|(_, layer)| layer.keyed);
        keyed.all(|(limiter, _)| limiter.at_rest(key, now))
    }

    /// Returns the limits with their keys renumbered: key `kept[n]` becomes key n in every
    /// keyed limit, and the keys not kept are forgotten.
    pub fn renumbered(&self, kept: &[usize]) -> Limits {
        let each = self.each.iter().map(|(limiter, layer)| match layer.keyed {
            true => (limiter.renumbered(kept), layer.clone()),
            false => (limiter.clone(), layer.clone()),
        });
        // Built field by field: a whole clone would copy every key's state, to drop it.
        let decided = Vec::with_capacity(self.each.len());
        // Renumbered, the keys are no longer the reading's: the caller says which is empty.
        let (empty, skips) = (KeyNotes::default(), self.skips);
        Limits { each: each.collect(), all_or_nothing: self.all_or_nothing, decided, empty, skips }
    }

    /// Returns the layers that would refuse `event` (of the empty key if `empty`), bit n for
    /// layer n, spending nothing: every layer is asked, whatever the others say, but one
    /// that lets the empty key through.
    #[inline]
    fn refusals(&mut self, event: Event, empty: bool) -> u32 {
        let mut refused = 0;
        for (n, (limiter, layer)) in self.each.iter_mut().enumerate() {
            let seen = layer.sees(event);
            if empty && layer.skips_empty_key() {
                continue;
            }
            if !limiter.admits(slot(seen.key), seen.time, seen.cost) {
                refused |= 1 << n;
            }
        }
        refused
    }
}

/// Each limit's decision on `event` (of the empty key if `empty`), alone, made as the
/// iterator reaches it.
#[inline]
fn alone(
    limits: &mut [(AnyPerKey, Layer)],
    event: Event,
    empty: bool,
) -> impl Iterator<Item = Decision> + '_ {
    let index = slot(event.key);
    limits.iter_mut().map(move |(limiter, layer)| match empty && layer.skips_empty_key() {
        true => Decision::UNCOUNTED,
        false => limiter.decide(index, event.time, event.cost),
    })
}

/// Settles `event`, which the layers of bit set in `refused` refuse: if none does, charges
/// each layer; else each layer that refused it takes the refusal as its own rules say (a
/// limiter that counts refused hits, as `limits`' fixed window does, counts it; the exact
/// ones change nothing), and the others are not charged. Either way it hands layer n's
/// view of the event and its decision to `each`, in layer order.
///
/// Layers whose keys share a zone (nginx's) are looked up as nginx's chained `limit_req`
/// looks them up, in order up to the first that refuses and no further: those before it
/// hold the key in their zones uncharged (a new key frees what it may), it holds the key,
/// and those after it never see the event.
#[inline]
fn settle(
    layers: &mut [(AnyPerKey, Layer)],
    event: Event,
    refused: u32,
    empty: bool,
    mut each: impl FnMut(Event, Decision),
) {
    // The first layer that refuses, or 32: past every layer (MAX_LAYERS ≤ 32). Not from
    // user input, and at most 32: a u32 widens to usize on every target this builds for.
    let first = refused.trailing_zeros() as usize;
    for (n, (limiter, layer)) in layers.iter_mut().enumerate() {
        let seen = layer.sees(event);
        let refuses = refused & (1 << n) != 0;
        let zone = layer.settings.algorithm.has_zone();
        // All admitted: each is charged, and a leaky queue says how long it waits. A
        // refusing layer decides again, as it did when asked: it refuses. A layer that lets
        // the empty key through never sees its event, as nginx never looks it up.
        let decision = if empty && layer.skips_empty_key() {
            if refused == 0 { Decision::UNCOUNTED } else { Decision { passed: false, wait: 0 } }
        } else if refused == 0 || (refuses && !(zone && n > first)) {
            limiter.decide(slot(seen.key), seen.time, seen.cost)
        } else {
            if n < first {
                limiter.look_up(slot(seen.key), seen.time);
            }
            if layer.counts_refused && !refuses {
                limiter.charge(slot(seen.key), seen.time, seen.cost);
            }
            Decision { passed: false, wait: 0 }
        };
        each(seen, decision);
    }
}

#[cfg(test)]
mod tests {
    use std::num::NonZeroU64;

    use super::*;
    use crate::limiter::Algorithm;
    use crate::policy::Settings;
    use crate::units::time::Span;

    fn layer(algorithm: Algorithm, rate: &str, burst: u64) -> Layer {
        Layer {
            settings: Settings {
                algorithm,
                rate: rate.parse().unwrap(),
                burst: NonZeroU64::new(burst).unwrap(),
                window: Span::from_micros(1_000_000).unwrap(),
                params: algorithm.default_params(),
            },
            keyed: false,
            cost: None,
            counts_refused: false,
        }
    }

    fn at(micros: i64, key: u32) -> Event {
        Event::new(Timestamp::from_micros(micros).unwrap(), key)
    }

    #[test]
    fn a_chained_nginx_limit_before_the_one_that_refuses_holds_the_key_uncharged() {
        // A zone per key at 1r/m (16 milli-requests a second leak), then one fixed window
        // of 1/h for all. 0 s: key 0 passes both. 61 s: key 1 is new to the zone, which
        // frees key 0 (idle 61 s, leaked away); the window refuses. nginx looked key 1 up
        // all the same, so the freeing stands: at 62 s key 0 is new again, and free. Had
        // the zone not been looked up, key 0 would owe 1000 − 992 and be refused.
        let zone = Layer { keyed: true, ..layer(Algorithm::Nginx, "1/m", 1) };
        let layers = [zone, layer(Algorithm::FixedWindow, "1/h", 1)];
        let mut limits = Limits::new(Policy::AllOrNothing(&layers)).unwrap();
        for event in [at(0, 0), at(61_000_000, 1)] {
            limits.decide(event);
        }
        let refused = limits.refusals(at(62_000_000, 0), false);
        assert_eq!(refused, 0b10, "the zone admits key 0, the window not");
    }

    #[test]
    fn envoy_counts_a_refused_requests_hits_in_every_limit_unless_told_to_stop() {
        // 1 a second, then 2 a minute. 0 s: both count 1, it passes. 0.1 s: the second's
        // count 2 is over 1, refused; the minute's 2 is not over, but envoy counts the hit
        // there too, unless it stops at the limits that are over. 1 s: a new second; the
        // minute's 3 is over 2, or with the stop, 2 is not.
        let decide = |counts_refused: bool| {
            let layers = [
                layer(Algorithm::EnvoyRatelimit, "1/s", 1),
                layer(Algorithm::EnvoyRatelimit, "2/m", 1),
            ]
            .map(|l| Layer { counts_refused, ..l });
            let mut limits = Limits::new(Policy::AllOrNothing(&layers)).unwrap();
            [0, 100_000, 1_000_000].map(|micros| limits.decide(at(micros, 0)).passed())
        };
        assert_eq!(decide(true), [true, false, false]);
        assert_eq!(decide(false), [true, false, true]);
    }

    #[test]
    fn side_by_side_each_limit_decides_alone() {
        // 1 a second and 2 a second, three events at once: the first limit refuses the
        // second and third, the other only the third, and neither is spared a charge by
        // the other's refusal.
        let settings = [layer(Algorithm::Gcra, "1/s", 1), layer(Algorithm::Gcra, "2/s", 2)]
            .map(|l| l.settings);
        let mut limits = Limits::new(Policy::SideBySide(&settings)).unwrap();
        let refused = [0, 0, 0].map(|micros| limits.decide(at(micros, 0)).refused);
        assert_eq!(refused, [0b00, 0b01, 0b11]);
        // The same decisions as they are made, one limit at a time.
        let mut limits = Limits::new(Policy::SideBySide(&settings)).unwrap();
        let passed = [0, 0, 0].map(|micros| {
            let each = limits.side_by_side(at(micros, 0)).unwrap();
            each.map(|decision| decision.passed).collect::<Vec<_>>()
        });
        assert_eq!(passed, [[true, true], [false, true], [false, false]]);
        let layers = Policy::SideBySide(&settings).layers();
        assert!(
            Limits::new(Policy::AllOrNothing(&layers)).unwrap().side_by_side(at(0, 0)).is_none()
        );
    }

    #[test]
    fn layers_all_or_nothing_number_one_to_sixteen() {
        // The layers that refuse an event are bits of a u32: a 33rd would share the first's.
        let one = layer(Algorithm::Gcra, "1/s", 1);
        let count = |n: usize| Limits::new(Policy::AllOrNothing(&vec![one.clone(); n])).err();
        assert_eq!(count(0), Some(PolicyError::Layers(0)));
        assert_eq!(count(1), None);
        assert_eq!(count(16), None);
        assert_eq!(count(17), Some(PolicyError::Layers(17)));
        assert_eq!(count(40), Some(PolicyError::Layers(40)));
        // Side by side, each limit decides alone, whatever their number.
        let many = vec![one.settings; 40];
        assert!(Limits::new(Policy::SideBySide(&many)).is_ok());
    }

    #[test]
    fn an_empty_key_passes_uncounted_where_the_system_does_not_account_it() {
        // nginx at 1r/m, no burst, per key: key 2 is the empty key. Its three requests in
        // one second all pass, and key 0, asked between them, is decided as if alone.
        let nginx = Layer { keyed: true, ..layer(Algorithm::Nginx, "1/m", 1) };
        let gcra = Layer { keyed: true, ..layer(Algorithm::Gcra, "1/m", 1) };
        let empty = KeyNotes::default();
        empty.set(2);
        let events = [at(0, 2), at(0, 0), at(1, 2), at(2, 0), at(3, 2)];
        let alone = [nginx.clone()];
        for policy in [Policy::AllOrNothing(&alone), Policy::SideBySide(&[nginx.settings])] {
            let mut limits = Limits::new(policy).unwrap();
            limits.share_key_notes(&empty);
            let passed = events.map(|e| limits.decide(e).passed());
            assert_eq!(passed, [true, true, true, false, true]);
        }
        // An exact limiter counts the empty key as a key: its second request is refused.
        let mut limits = Limits::new(Policy::AllOrNothing(&[gcra.clone()][..])).unwrap();
        limits.share_key_notes(&empty);
        assert_eq!(events.map(|e| limits.decide(e).passed()), [true, true, false, false, false]);
        // Beside it, nginx lets the empty key through, and the event passes only if the
        // exact limiter admits it too; side by side each decides alone.
        let both = [nginx.clone(), gcra.clone()];
        let mut limits = Limits::new(Policy::AllOrNothing(&both)).unwrap();
        limits.share_key_notes(&empty);
        let refused = events.map(|e| limits.decide(e).refused);
        assert_eq!(refused, [0b00, 0b00, 0b10, 0b11, 0b10]);
    }

    proptest::proptest! {
        /// An event of the empty key never changes another key's decisions in a model of a
        /// system that does not account it (nginx, HAProxy, envoy's ratelimit service), one
        /// limit or several all or nothing, and always passes.
        #[test]
        fn an_empty_key_never_changes_another_keys_decisions(
            steps in proptest::collection::vec((0i64..3_000_000, 0u32..4), 1..120),
            which in proptest::collection::vec(0usize..3, 1..4),
            rate in 1u64..5,
            burst in 1u64..4,
        ) {
            let systems = [Algorithm::Nginx, Algorithm::Haproxy, Algorithm::EnvoyRatelimit];
            let layers: Vec<Layer> = which
                .iter()
                .map(|&n| Layer { keyed: true, ..layer(systems[n], &format!("{rate}/s"), burst) })
                .collect();
            let mut now = 0;
            let events: Vec<Event> = steps.iter().map(|&(gap, key)| { now += gap; at(now, key) }).collect();
            // Key 3 is the empty key.
            let empty = KeyNotes::default();
            empty.set(3);
            let decide = |events: &[Event]| {
                let mut limits = Limits::new(Policy::AllOrNothing(&layers)).unwrap();
                limits.share_key_notes(&empty);
                events.iter().map(|&e| (e, limits.decide(e).passed())).collect::<Vec<_>>()
            };
            let with = decide(&events);
            proptest::prop_assert!(with.iter().filter(|(e, _)| e.key == 3).all(|&(_, passed)| passed));
            let others: Vec<Event> = events.iter().copied().filter(|e| e.key != 3).collect();
            let without = decide(&others);
            let kept: Vec<_> = with.into_iter().filter(|(e, _)| e.key != 3).collect();
            proptest::prop_assert_eq!(kept, without);
        }
    }
}
