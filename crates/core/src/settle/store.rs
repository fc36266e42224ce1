//! Where settled layers' rate limiters are kept when not in memory: a store such as Redis,
//! asked each question a settlement asks.

use crate::event::Key;
use crate::units::time::Timestamp;

/// Where the rate limiters of settled layers keep their state when not in memory: a
/// shared store such as Redis, which the engine runs a script on for each call. Each call
/// names the layer (its place, from 0) and the key as that layer sees it (0 when it is
/// not keyed); an error is the store's, said in one line.
pub trait Store {
    /// Whether the limiter admits `cost` units at `now`, changing nothing.
    fn admits(&mut self, layer: usize, key: Key, now: Timestamp, cost: u64)
    -> Result<bool, String>;
    /// Takes `cost` units at `now`, whatever it holds: into debt, if it must.
    fn charge(&mut self, layer: usize, key: Key, now: Timestamp, cost: u64) -> Result<(), String>;
    /// Takes `cost` more units at `now` for a request admitted earlier, settled after its
    /// response: as [`charge`](Store::charge) does, by default, and as the limiter's
    /// [`settle_charge`](crate::limiter::KeyedState::settle_charge) says otherwise.
    fn settle_charge(
        &mut self,
        layer: usize,
        key: Key,
        now: Timestamp,
        cost: u64,
    ) -> Result<(), String> {
        self.charge(layer, key, now, cost)
    }
    /// Gives back `units` at `now`, never past what it holds at rest.
    fn give_back(
        &mut self,
        layer: usize,
        key: Key,
        now: Timestamp,
        units: u64,
    ) -> Result<(), String>;
    /// How many units it owes at `now`, rounded up.
    fn owed(&mut self, layer: usize, key: Key, now: Timestamp) -> Result<u64, String>;
}

/// Where a layer's rate limiter is kept: here, or in a store, as its layer number there.
pub(super) enum On<'s> {
    Memory,
    Store(&'s mut dyn Store, usize),
}

/// The store, borrowed again for a call.
pub(super) fn again<'s>(store: &'s mut Option<&mut dyn Store>) -> Option<&'s mut dyn Store> {
    match store {
        Some(store) => Some(&mut **store),
        None => None,
    }
}

/// Where layer `n`'s rate limiter is: in `store`, if there is one.
pub(super) fn on<'s>(store: &'s mut Option<&mut dyn Store>, n: usize) -> On<'s> {
    match store {
        Some(store) => On::Store(&mut **store, n),
        None => On::Memory,
    }
}
