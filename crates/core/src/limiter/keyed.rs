//! One limiter for many keys: the rule kept once, each key's state kept apart and small.

use super::{Algorithm, Any, Decision, KeyedState, Rule, Store};
use crate::event::KeyNotes;
use crate::units::rate::Rate;
use crate::units::time::Timestamp;

/// How a limiter keeps its keys' states, declared in its own file ([`KeyedState::Keys`]):
/// apart ([`Apart`]), so that a key decides on its own events alone, or in a store its
/// keys share, as nginx's share a zone.
pub trait KeyStore<L: KeyedState>: Clone + std::fmt::Debug {
    /// Whether keys share the store: a key's decisions may then depend on other keys'
    /// events, and keys cannot be decided one at a time.
    const SHARED: bool;

    /// Returns the store of the keys of one server; `shared` false: of keys that share
    /// nothing, as copies of one key on several servers, whose zones are their servers'.
    fn new(shared: bool) -> Self;

    /// Looks up key `key` at `now` before its state decides (`charged`), or without
    /// charging it: `states` holds every key's state (up to `key` at least), `fresh` a
    /// new key's. A store may reset other keys' states, as nginx's zone frees idle nodes.
    fn look_up(
        &mut self,
        limiter: &L,
        keys: Held<'_, L>,
        key: usize,
        now: Timestamp,
        charged: bool,
    );

    /// Returns the store with its keys renumbered: key `kept[n]` becomes key n.
    fn renumbered(&self, kept: &[usize]) -> Self;
}

/// Every key's state, and a new key's, as a [`KeyStore`] is handed them.
pub struct Held<'a, L: KeyedState> {
    /// Each key's state, by key number.
    pub states: &'a mut [L::State],
    /// A new key's state.
    pub fresh: &'a L::State,
}

/// Keys kept apart: a key's state is its own, and nothing is looked up.
#[derive(Clone, Copy, Debug, Default)]
pub struct Apart;

impl<L: KeyedState> KeyStore<L> for Apart {
    const SHARED: bool = false;

    fn new(_: bool) -> Apart {
        Apart
    }

    #[inline]
    fn look_up(&mut self, _: &L, _: Held<'_, L>, _: usize, _: Timestamp, _: bool) {}

    fn renumbered(&self, _: &[usize]) -> Apart {
        Apart
    }
}

/// A limiter whose rule (rate, burst) is kept once and whose state is kept per key, so that
/// a key costs only its state: 16 bytes for GCRA, 32 for a token bucket, a fixed window or a
/// leaky queue, 40 for a sliding-window counter, and 32 plus the times for a sliding log.
///
/// Each key decides exactly as its own limiter would: the one rule steps in the key's own
/// state.
#[derive(Clone, Debug)]
pub struct PerKey<L: KeyedState> {
    limiter: L,
    fresh: L::State,
    states: Vec<L::State>,
    /// The limiter's own store of its keys ([`KeyedState::Keys`]).
    keys: L::Keys,
    /// For a limiter that reads a key's text, what the reading noted of its keys, and how
    /// many states each key has (its copies on a fleet's servers, side by side).
    notes: Option<(KeyNotes, usize)>,
}

impl<L: KeyedState> PerKey<L> {
    /// Returns the limiter for every key, each starting as `limiter` is now.
    pub fn new(limiter: L) -> PerKey<L> {
        PerKey::stored(limiter, true)
    }

    /// Returns the limiter for every key with nothing shared between keys: for copies of
    /// a key on several servers, whose zones are their servers' own.
    pub fn unshared(limiter: L) -> PerKey<L> {
        PerKey::stored(limiter, false)
    }

    fn stored(mut limiter: L, shared: bool) -> PerKey<L> {
        let fresh = limiter.state_mut().clone();
        PerKey { limiter, fresh, states: Vec::new(), keys: L::Keys::new(shared), notes: None }
    }

    /// Shares what the reading that numbers the keys notes of them: a limiter that reads a
    /// key's text ([`KeyedState::READS_KEY_TEXT`]) asks for each key's CRC-32 and sets each
    /// new key's state by it; any other ignores them.
    pub fn share_key_notes(&mut self, notes: &KeyNotes) {
        self.share_key_notes_by(notes, 1);
    }

    /// Shares the key notes, as [`share_key_notes`](PerKey::share_key_notes) does, for
    /// states kept `each` a key, side by side: state n is of key n / `each`.
    pub(crate) fn share_key_notes_by(&mut self, notes: &KeyNotes, each: usize) {
        if L::READS_KEY_TEXT {
            notes.want_key_crcs();
            self.notes = Some((notes.clone(), each.max(1)));
        }
    }

    /// Returns a fresh state for state `at`: set by its key's text, for a limiter that
    /// reads it.
    fn fresh_at(&self, at: usize) -> L::State {
        let mut state = self.fresh.clone();
        self.name(at, &mut state);
        state
    }

    /// Sets state `at`, fresh, by its key's text, if the limiter reads it.
    #[inline]
    fn name(&self, at: usize, state: &mut L::State) {
        if let Some((notes, each)) = &self.notes {
            self.limiter.key_text(state, notes.key_crc(at / each).unwrap_or(0));
        }
    }

    /// Returns key `key`'s state, if it has one.
    pub(crate) fn state(&self, key: usize) -> Option<&L::State> {
        self.states.get(key)
    }

    /// Decides on an event of key `key` at `now` that costs `cost`; events of each key must
    /// come in time order.
    #[inline]
    pub fn decide(&mut self, key: usize, now: Timestamp, cost: u64) -> Decision {
        self.take(key, now, cost, false)
    }

    /// Records an event of key `key` at `now` as passed, as [`Limiter::charge`](super::Limiter::charge) does.
    #[inline]
    pub fn charge(&mut self, key: usize, now: Timestamp, cost: u64) {
        self.take(key, now, cost, true);
    }

    /// Takes in an event of key `key` refused elsewhere, as [`KeyedState::refuse`] says.
    #[inline]
    pub fn refuse(&mut self, key: usize, now: Timestamp, cost: u64) {
        self.hold(key);
        self.limiter.refuse(&mut self.states[key], now, cost);
    }

    /// Has the one rule decide in the key's state.
    #[inline]
    fn take(&mut self, key: usize, now: Timestamp, cost: u64, force: bool) -> Decision {
        self.hold(key);
        self.look_up(key, now, true);
        self.limiter.step(&mut self.states[key], now, cost, force)
    }

    /// Has the limiter's store look key `key` up at `now` ([`KeyStore::look_up`]).
    #[inline]
    fn look_up(&mut self, key: usize, now: Timestamp, charged: bool) {
        let held = Held { states: &mut self.states, fresh: &self.fresh };
        self.keys.look_up(&self.limiter, held, key, now, charged);
    }

    /// Looks up key `key` at `now` in a store its keys share without charging it, as a
    /// chained `limit_req` before the one that refuses looks it up in nginx's zone.
    /// Nothing, for keys kept apart.
    #[inline]
    pub fn look_up_only(&mut self, key: usize, now: Timestamp) {
        if <L::Keys as KeyStore<L>>::SHARED {
            self.hold(key);
            self.look_up(key, now, false);
        }
    }

    /// Returns whether an event of key `key` at `now` that costs `cost` would pass,
    /// spending nothing.
    #[inline]
    pub fn admits(&mut self, key: usize, now: Timestamp, cost: u64) -> bool {
        match self.states.get_mut(key) {
            Some(state) => self.limiter.admits(state, now, cost),
            None => self.limiter.admits(&mut self.fresh_at(key), now, cost),
        }
    }

    /// Returns whether key `key` lets in at `now` a request charged only after its
    /// response ([`KeyedState::admits_uncharged`]), spending nothing.
    #[inline]
    pub fn admits_uncharged(&mut self, key: usize, now: Timestamp) -> bool {
        match self.states.get_mut(key) {
            Some(state) => self.limiter.admits_uncharged(state, now),
            None => self.limiter.admits_uncharged(&mut self.fresh_at(key), now),
        }
    }

    /// Gives back `units` that key `key` spent, at `now` ([`KeyedState::give_back`]); a key
    /// never seen has spent nothing to give back.
    #[inline]
    pub fn give_back(&mut self, key: usize, now: Timestamp, units: u64) {
        if let Some(state) = self.states.get_mut(key) {
            self.limiter.give_back(state, now, units);
        }
    }

    /// Takes `cost` more units of key `key` at `now`, settling a request after its
    /// response ([`KeyedState::settle_charge`]).
    #[inline]
    pub fn settle_charge(&mut self, key: usize, now: Timestamp, cost: u64) {
        self.hold(key);
        self.limiter.settle_charge(&mut self.states[key], now, cost);
    }

    /// Returns how many units key `key` owes at `now` ([`KeyedState::owed`]).
    #[inline]
    pub fn owed(&self, key: usize, now: Timestamp) -> u64 {
        self.states.get(key).map_or(0, |state| self.limiter.owed(state, now))
    }

    /// Returns whether key `key` is back at its start as of `now` ([`KeyedState::at_rest`]):
    /// it may be forgotten, and a key that comes again then starts afresh, deciding as it
    /// would have.
    #[inline]
    pub fn at_rest(&self, key: usize, now: Timestamp) -> bool {
        self.states.get(key).is_none_or(|state| self.limiter.at_rest(state, now))
    }

    /// Returns the limiter with its keys renumbered: key `kept[n]` becomes key n, and the
    /// keys not kept, which must be [at rest](PerKey::at_rest), are forgotten. A store keeps
    /// its order. The key notes are the old numbering's: share the new one's.
    pub fn renumbered(&self, kept: &[usize]) -> PerKey<L> {
        let state = |&old: &usize| match self.states.get(old) {
            Some(state) => state.clone(),
            None => self.fresh_at(old),
        };
        PerKey {
            limiter: self.limiter.clone(),
            fresh: self.fresh.clone(),
            states: kept.iter().map(state).collect(),
            keys: self.keys.renumbered(kept),
            notes: None,
        }
    }

    /// Returns an instant from which every key whose events all came at `last` or before
    /// is at rest ([`KeyedState::rests_after`]).
    pub fn rests_after(&self, last: Timestamp) -> Option<Timestamp> {
        self.limiter.rests_after(last)
    }

    /// Gives key `to` the state that key `key` has in `from`.
    pub fn copy_key(&mut self, from: &PerKey<L>, key: usize, to: usize) {
        self.hold(to);
        match from.states.get(key) {
            Some(state) => self.states[to].clone_from(state),
            None => self.states[to] = from.fresh_at(key),
        }
    }

    /// Makes room for `key`'s state: keys come numbered from 0, so this grows rarely.
    #[inline]
    fn hold(&mut self, key: usize) {
        if key >= self.states.len() {
            self.add_keys(key);
        }
    }

    #[cold]
    fn add_keys(&mut self, key: usize) {
        let first = self.states.len();
        self.states.resize(key + 1, self.fresh.clone());
        if self.notes.is_some() {
            let mut states = std::mem::take(&mut self.states);
            for (at, state) in states.iter_mut().enumerate().skip(first) {
                self.name(at, state);
            }
            self.states = states;
        }
    }
}

/// Limiters per key: each key's state kept apart, the rule kept once.
#[derive(Clone, Copy, Debug)]
pub struct Keys;

impl Store for Keys {
    type Of<L: Rule> = PerKey<L>;
    type Setup = ();
    type At = usize;

    fn make<L: Rule>(limiter: L, _: &()) -> PerKey<L> {
        PerKey::new(limiter)
    }

    #[inline]
    fn take<L: Rule>(
        of: &mut PerKey<L>,
        key: usize,
        now: Timestamp,
        cost: u64,
        force: bool,
    ) -> Decision {
        of.take(key, now, cost, force)
    }

    #[inline]
    fn admits<L: Rule>(of: &mut PerKey<L>, key: usize, now: Timestamp, cost: u64) -> bool {
        of.admits(key, now, cost)
    }

    #[inline]
    fn look_up<L: Rule>(of: &mut PerKey<L>, key: usize, now: Timestamp) {
        of.look_up_only(key, now);
    }

    fn share_key_notes<L: Rule>(of: &mut PerKey<L>, notes: &KeyNotes) {
        of.share_key_notes(notes);
    }
}

/// Any one of the limiters, for many keys, chosen at run time without dynamic dispatch.
pub type AnyPerKey = Any<Keys>;

impl AnyPerKey {
    /// Returns limiters of this kind for every key, with the limiter's default parameters.
    /// Algorithms without a burst ignore it.
    pub fn new(algorithm: Algorithm, rate: Rate, burst: std::num::NonZeroU64) -> AnyPerKey {
        AnyPerKey::with_params(algorithm, rate, burst, algorithm.default_params())
    }

    /// Returns limiters of this kind for every key, set by `params`, the limiter's own.
    pub fn with_params(
        algorithm: Algorithm,
        rate: Rate,
        burst: std::num::NonZeroU64,
        params: super::Params,
    ) -> AnyPerKey {
        algorithm.make::<Keys>(rate, burst, params, &())
    }

    /// Decides on an event of key `key` at `now`, as [`PerKey::decide`] does.
    #[inline]
    pub fn decide(&mut self, key: usize, now: Timestamp, cost: u64) -> Decision {
        self.take_at(key, now, cost, false)
    }

    /// Returns whether an event of key `key` at `now` would pass, spending nothing.
    #[inline]
    pub fn admits(&mut self, key: usize, now: Timestamp, cost: u64) -> bool {
        self.admits_at(key, now, cost)
    }

    /// Records an event of key `key` at `now` as passed, whatever the limiter would say.
    #[inline]
    pub fn charge(&mut self, key: usize, now: Timestamp, cost: u64) {
        self.take_at(key, now, cost, true);
    }

    /// Looks up key `key` at `now` without charging it, as [`PerKey::look_up_only`] does.
    #[inline]
    pub fn look_up(&mut self, key: usize, now: Timestamp) {
        self.look_up_at(key, now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limiter::Limiter;
    use crate::limiter::tests::{burst, secs};

    #[test]
    fn each_key_decides_as_its_own_limiter() {
        // Two keys interleaved at 1/10s, burst 2: each is a GCRA of its own, so key 1's
        // events do not use key 0's tokens.
        let rate: Rate = "1/10s".parse().unwrap();
        let events = [(0, 0), (1, 0), (0, 0), (1, 0), (0, 0), (1, 5), (0, 10), (1, 10)];
        let times = secs(&events.map(|(_, t)| t));
        for algorithm in Algorithm::ALL {
            let mut many = AnyPerKey::new(algorithm, rate, burst(2));
            let mut alone = [algorithm.build(rate, burst(2)), algorithm.build(rate, burst(2))];
            for (&(key, _), &t) in events.iter().zip(&times) {
                let want = alone[key].decide(t);
                assert_eq!(many.decide(key, t, 1), want, "{algorithm:?} key {key} at {t:?}");
            }
        }
        let mut gcra = AnyPerKey::new(Algorithm::Gcra, rate, burst(2));
        let passed: Vec<bool> =
            events.iter().zip(&times).map(|(&(k, _), &t)| gcra.decide(k, t, 1).passed).collect();
        assert_eq!(passed, [true, true, true, true, false, false, true, true]);
    }
}
