//! One settled layer as it settles: what it keeps to decide (a rate's limiter, here or in a
//! store, or a cap), its counts in flight, and what it did.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::concurrency::{Concurrency, InFlight};
use super::spent::Spent;
use super::store::On;
use super::{Amount, Charge, LayerSettled, Pending, SettleError};
use crate::event::{Key, slot};
use crate::limiter::AnyPerKey;
use crate::policy::Settings;
use crate::units::time::Timestamp;

/// What a layer keeps to decide: a rate's limiter for every key and what each key spent,
/// or a cap on requests in flight.
// At most 16 layers are held, each once: boxing the limiter would only add a pointer to
// follow on every decision.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
pub(super) enum Limited {
    Rate { limiter: AnyPerKey, spent: Spent, settings: Settings },
    Cap(Concurrency),
}

/// A layer as it settles: what it keeps to decide, its counts in flight, and what it did.
#[derive(Clone, Debug)]
pub(super) struct Layer {
    pub(super) limited: Limited,
    pub(super) keyed: bool,
    pub(super) charge: Charge,
    /// Whether it lets a request of the empty key through uncounted, as its system does.
    pub(super) skips_empty: bool,
    pub(super) in_flight: InFlight,
    pub(super) settled: LayerSettled,
}

impl Layer {
    /// The key this layer sees a request of key `key` as.
    #[inline]
    pub(super) fn key(&self, key: Key) -> Key {
        if self.keyed { key } else { 0 }
    }

    /// Whether it admits a request of key `key` at `now` that costs `amount`, spending
    /// nothing.
    #[inline]
    pub(super) fn admits(
        &mut self,
        on: On<'_>,
        key: Key,
        now: Timestamp,
        amount: Amount,
    ) -> Result<bool, SettleError> {
        let key = self.key(key);
        let asked = self.charge.asked(amount);
        match (&mut self.limited, on) {
            (Limited::Cap(cap), _) => Ok(cap.admits(&self.in_flight, key)),
            (Limited::Rate { .. }, On::Store(store, n)) => {
                store.admits(n, key, now, asked).map_err(SettleError::Store)
            }
            (Limited::Rate { limiter, .. }, On::Memory) => Ok(match self.charge {
                Charge::Completion => limiter.admits_uncharged(slot(key), now),
                _ => limiter.admits(slot(key), now, asked),
            }),
        }
    }

    /// How long after `now` it would admit a request of key `key` that costs `amount`, in
    /// µs, were nothing else to happen but time: a rate's limiter refilling (asked on a
    /// copy, so the real one is not moved on), or a cap's first request of the key in
    /// flight completing (`pending`). `None` if it never would: a cost past what it holds,
    /// or a cap with nothing in flight to end.
    pub(super) fn retry_after(
        &self,
        key: Key,
        now: Timestamp,
        amount: Amount,
        pending: &BinaryHeap<Pending>,
    ) -> Option<i64> {
        let key = self.key(key);
        let (limiter, settings) = match &self.limited {
            Limited::Cap(_) => {
                let ends = pending.iter().map(|&Reverse((end, _, k, _))| (end, k));
                let first =
                    ends.filter(|&(_, k)| !self.keyed || k == key).map(|(end, _)| end).min()?;
                return Some(first.as_micros() - now.as_micros());
            }
            Limited::Rate { limiter, settings, .. } => (limiter, settings),
        };
        let asked = self.charge.asked(amount);
        let mut probe = settings.per_key();
        let mut admits = |after: i64| {
            let at = now.as_micros().checked_add(after).and_then(Timestamp::from_micros);
            at.is_some_and(|at| {
                probe.copy_key(limiter, slot(key), 0);
                match self.charge {
                    Charge::Completion => probe.admits_uncharged(0, at),
                    _ => probe.admits(0, at, asked),
                }
            })
        };
        // Refilled at N a period, what is asked and what is owed come back within as many
        // periods, and two more for a window to open.
        let rate = settings.rate;
        let owed = limiter.owed(slot(key), now);
        let periods = asked.saturating_add(owed).div_ceil(rate.count()).saturating_add(2);
        let most = i64::try_from(periods).ok()?.checked_mul(rate.period().as_micros())?;
        if !admits(most) {
            return None;
        }
        // The least time that admits: admitting is monotone in time with nothing charged.
        let (mut low, mut high) = (0, most);
        while high - low > 1 {
            let middle = low + (high - low) / 2;
            if admits(middle) { high = middle } else { low = middle }
        }
        Some(high)
    }

    /// Charges an admitted request at its arrival, and returns how long it waits before
    /// it is served, in whole µs (rounded up): 0 but for a limiter that delays what it
    /// admits (a leaky queue), in memory.
    #[inline]
    pub(super) fn arrive(
        &mut self,
        on: On<'_>,
        key: Key,
        now: Timestamp,
        amount: Amount,
    ) -> Result<i64, SettleError> {
        let key = self.key(key);
        self.in_flight.start(key);
        let Limited::Rate { limiter, spent, settings } = &mut self.limited else { return Ok(0) };
        spent.spend(key, now, amount.cost);
        let charged = match self.charge {
            Charge::Arrival => amount.cost,
            Charge::Reserve => {
                self.settled.reserved += u128::from(amount.reserve);
                amount.reserve
            }
            Charge::Completion => return Ok(0),
        };
        match on {
            On::Memory => {
                // A wait is in units of 1/N µs; only a limiter that delays has one.
                let wait = limiter.take_at(slot(key), now, charged, true).wait;
                if wait <= 0 {
                    return Ok(0);
                }
                let n = settings.rate.n();
                Ok(i64::try_from((wait + n - 1) / n).unwrap_or(i64::MAX))
            }
            On::Store(store, n) => {
                store.charge(n, key, now, charged).map_err(SettleError::Store)?;
                Ok(0)
            }
        }
    }

    /// Settles an admitted request at its completion.
    #[inline]
    pub(super) fn complete(
        &mut self,
        on: On<'_>,
        key: Key,
        now: Timestamp,
        amount: Amount,
    ) -> Result<(), SettleError> {
        let key = self.key(key);
        self.in_flight.end(key);
        let Limited::Rate { limiter, .. } = &mut self.limited else { return Ok(()) };
        let after = match self.charge {
            Charge::Arrival => return Ok(()),
            Charge::Reserve if amount.reserve >= amount.cost => {
                let back = amount.reserve - amount.cost;
                match on {
                    On::Memory => limiter.give_back(slot(key), now, back),
                    On::Store(store, n) => {
                        store.give_back(n, key, now, back).map_err(SettleError::Store)?
                    }
                }
                self.settled.refunded += u128::from(back);
                return Ok(());
            }
            Charge::Reserve => amount.cost - amount.reserve,
            Charge::Completion => amount.cost,
        };
        let owed = match on {
            On::Memory => {
                limiter.settle_charge(slot(key), now, after);
                limiter.owed(slot(key), now)
            }
            On::Store(store, n) => {
                store.settle_charge(n, key, now, after).map_err(SettleError::Store)?;
                store.owed(n, key, now).map_err(SettleError::Store)?
            }
        };
        self.settled.charged_after += u128::from(after);
        self.settled.largest_debt = self.settled.largest_debt.max(owed);
        Ok(())
    }

    /// What it did: in full once every admitted request is settled.
    pub(super) fn settled(&self) -> LayerSettled {
        let (most_spent, most_spent_from) = match &self.limited {
            Limited::Rate { spent, .. } => {
                let (most, from) = spent.most();
                (Some(most), from)
            }
            Limited::Cap(_) => (None, None),
        };
        let peak_in_flight = self.in_flight.peak();
        LayerSettled { most_spent, most_spent_from, peak_in_flight, ..self.settled }
    }
}
