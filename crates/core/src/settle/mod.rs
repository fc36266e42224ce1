//! Limits settled after the response: requests that are decided on arrival and settled at
//! completion, as LLM providers and gateways count tokens.
//!
//! A [`Request`] arrives at `a` and completes at `c ≥ a`. Each [`SettledLayer`] charges it
//! as its [`Charge`] says: all at arrival; an estimate reserved at arrival and settled to
//! the real count at completion; or nothing at arrival and the real count at completion.
//! A [`Bound::Concurrency`] layer caps the requests in flight over `[a, c)`. [`Settling`] runs the
//! two kinds of event in one time order: at equal times completions come first (earlier
//! arrivals' first), then arrivals in input order, so that a request of duration 0
//! completes before the next event.

mod concurrency;
mod layer;
mod min_limit;
mod spent;
mod store;

use self::concurrency::{Concurrency, InFlight};
use self::layer::{Layer, Limited};
pub use self::min_limit::min_limit;
use self::spent::Spent;
pub use self::store::Store;
use self::store::{again, on};
use crate::event::{Key, KeyNotes};
use crate::limiter::MAX_COST;
use crate::policy::{MAX_LAYERS, Settings};
use crate::units::time::Timestamp;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::num::NonZeroU64;

/// When a layer counts a request's cost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum Charge {
    /// At arrival, all or nothing: the cost is known when the request comes.
    #[default]
    Arrival,
    /// An estimate reserved at arrival (admitted if and only if the estimate would be), and
    /// settled at completion: the estimate less the real cost given back when positive
    /// (never past what the limiter holds at rest), the rest charged when negative (into
    /// debt, if it must), as OpenAI, Azure and Bedrock do.
    Reserve,
    /// Nothing at arrival (admitted if and only if a cost of 1 would be; envoy-ratelimit,
    /// asked with an addend of 0, while its count is at most N), the real cost at completion
    /// whatever the limiter holds, into debt if it must: Envoy's AI gateway.
    Completion,
}

impl Charge {
    /// The name a spec gives it: `arrival`, `reserve`, `completion`.
    pub fn name(self) -> &'static str {
        match self {
            Charge::Arrival => "arrival",
            Charge::Reserve => "reserve",
            Charge::Completion => "completion",
        }
    }

    /// Returns the charge named `name` ([`name`](Charge::name)), if one is.
    pub fn named(name: &str) -> Option<Charge> {
        [Charge::Arrival, Charge::Reserve, Charge::Completion]
            .into_iter()
            .find(|c| c.name() == name)
    }

    /// Returns what a request that costs `amount` is asked at its arrival: its cost, its
    /// estimate, or 1 (charged at completion, it needs only to be let in).
    #[inline]
    pub fn asked(self, amount: Amount) -> u64 {
        match self {
            Charge::Arrival => amount.cost,
            Charge::Reserve => amount.reserve,
            Charge::Completion => 1,
        }
    }
}

/// What a layer limits: a rate, by one of the limiters, or the requests in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    /// A rate limit.
    Rate(Settings),
    /// A cap on requests in flight: a request is admitted if and only if fewer than this
    /// many admitted requests (of its key, if keyed) are in flight at its arrival. A
    /// request is in flight from its arrival up to, not including, its completion.
    Concurrency(NonZeroU64),
}

/// One layer of a policy settled after the response: what it limits, whether by key, and
/// when it charges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SettledLayer {
    /// What it limits.
    pub bound: Bound,
    /// Whether each key has its own state (its own count in flight, for a cap).
    pub keyed: bool,
    /// When it charges a request's cost; a cap on requests in flight charges none.
    pub charge: Charge,
}

/// What one request costs one layer: the estimate it reserves at arrival (with
/// [`Charge::Reserve`]) and its real cost. Each is at most [`MAX_COST`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Amount {
    /// The estimate, E.
    pub reserve: u64,
    /// The real cost, A.
    pub cost: u64,
}

/// One request: when it arrives, when it completes, and whose it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    /// When it arrives.
    pub arrival: Timestamp,
    /// When it completes, no earlier than it arrives.
    pub completion: Timestamp,
    /// Its key's number; 0 when requests are not keyed.
    pub key: Key,
}

/// Why layers, or a request, cannot be settled.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SettleError {
    /// Layers number 1 to [`MAX_LAYERS`].
    #[error("a policy settled after the response has 1 to {MAX_LAYERS} layers, not {0}")]
    Layers(usize),
    /// A reservation is settled only on a limiter that can give back.
    #[error(
        "{0} cannot give back what a reservation did not use: charge=reserve is settled on {1}"
    )]
    CannotGiveBack(&'static str, String),
    /// A limiter this engine does not settle at all.
    #[error("{0} is not settled after the response: {1}")]
    Unsettled(&'static str, &'static str),
    /// A request's amounts do not match the layers, or one is too large.
    #[error("a request costs each layer at most {MAX_COST}, and has one amount a layer")]
    Amounts,
    /// A request that completes before it arrives, or comes before the one before.
    #[error("requests come in time order and complete no earlier than they arrive")]
    Order,
    /// The store the limiters are kept in failed.
    #[error("{0}")]
    Store(String),
    /// A ticket no open request has: never given, or closed already.
    #[error("no open request has ticket {0}: it was never given, or is settled already")]
    Ticket(u64),
}

/// What settling did in one layer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct LayerSettled {
    /// The requests this layer refused when asked (all or nothing, another layer may have
    /// refused them too).
    pub refused: u64,
    /// The units reserved at arrival by the requests admitted ([`Charge::Reserve`]).
    pub reserved: u128,
    /// The units settlement gave back: each admitted request's estimate less its real
    /// cost, where positive, before the cap at what the limiter holds at rest.
    pub refunded: u128,
    /// The units charged at completion: the real cost beyond the estimate
    /// ([`Charge::Reserve`]), or the whole real cost ([`Charge::Completion`]).
    pub charged_after: u128,
    /// The most units one key ever owed right after a settlement, rounded up: how far
    /// charges after the response took it below empty.
    pub largest_debt: u64,
    /// The most real cost one key's admitted requests spent in any window of the limit's
    /// period, counted at arrival; `None` for a cap on requests in flight.
    pub most_spent: Option<u128>,
    /// When the window of [`most_spent`](LayerSettled::most_spent) starts.
    pub most_spent_from: Option<Timestamp>,
    /// The most admitted requests of one key (of all, if not keyed) in flight at once.
    pub peak_in_flight: u64,
}

/// A request admitted and not yet settled: when it completes, its place in arrival order,
/// its key, and where its amounts are kept.
type Pending = Reverse<(Timestamp, u64, Key, u32)>;

/// Layers settled after the response, all or nothing, deciding requests in time order and
/// settling each admitted one at its completion.
///
/// ```
/// use std::num::NonZeroU64;
///
/// use ratelimit_core::limiter::Algorithm;
/// use ratelimit_core::policy::Settings;
/// use ratelimit_core::settle::{Amount, Bound, Charge, Request, SettledLayer, Settling};
/// use ratelimit_core::units::time::{Span, Timestamp};
///
/// // 100 tokens a minute, charged when each response ends, as Envoy's AI gateway does.
/// let rate = "100/m".parse()?;
/// let settings = Settings {
///     algorithm: Algorithm::TokenBucket,
///     rate,
///     burst: NonZeroU64::new(100).unwrap(),
///     window: Span::MINUTE,
///     params: Algorithm::TokenBucket.default_params(),
/// };
/// let layer = SettledLayer { bound: Bound::Rate(settings), keyed: false, charge: Charge::Completion };
/// let mut settling = Settling::new(&[layer])?;
/// let at = |s: i64| Timestamp::from_micros(s * 1_000_000).unwrap();
/// // Five requests at once, each spending 130 tokens over 10 seconds: all pass.
/// for _ in 0..5 {
///     let request = Request { arrival: at(0), completion: at(10), key: 0 };
///     assert_eq!(settling.arrive(request, &[Amount { reserve: 0, cost: 130 }])?, 0);
/// }
/// settling.finish();
/// let settled = settling.settled()[0];
/// // 650 tokens spent in the first minute against 100; the bucket, full again at 10 s,
/// // owes 550 once the last settles.
/// assert_eq!((settled.most_spent, settled.largest_debt, settled.peak_in_flight), (Some(650), 550, 5));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct Settling {
    layers: Vec<Layer>,
    pending: BinaryHeap<Pending>,
    /// The pending requests' amounts, one per layer, in slots of as many.
    amounts: Vec<Amount>,
    free: Vec<u32>,
    arrivals: u64,
    last: Option<Timestamp>,
    peak_in_flight: u64,
    /// The empty key's number, shared with the reading that numbers the keys.
    empty: KeyNotes,
    /// Whether the rate limiters are kept in a store, not here.
    shared: bool,
    /// Requests admitted by [`open`](Settling::open) and not yet closed: by ticket, their
    /// key and where their amounts are kept.
    open: std::collections::HashMap<u64, (Key, u32)>,
    /// When the last admitted request completes: its own completion, later by the wait a
    /// layer that delays what it admits (a leaky queue) put it to.
    completes: Option<Timestamp>,
}

impl Settling {
    /// Returns the layers, each in its first state, or why they cannot be settled.
    pub fn new(layers: &[SettledLayer]) -> Result<Settling, SettleError> {
        if layers.is_empty() || layers.len() > MAX_LAYERS {
            return Err(SettleError::Layers(layers.len()));
        }
        let each = layers.iter().map(|&SettledLayer { bound, keyed, charge }| {
            let (limited, skips_empty) = match bound {
                Bound::Rate(settings) => {
                    check(&settings, charge)?;
                    let (limiter, spent) = (settings.per_key(), Spent::new(settings.rate.period()));
                    (
                        Limited::Rate { limiter, spent, settings },
                        keyed && settings.algorithm.skips_empty_key(),
                    )
                }
                Bound::Concurrency(max) => (Limited::Cap(Concurrency { max }), false),
            };
            let (in_flight, settled) = (InFlight::default(), LayerSettled::default());
            Ok(Layer { limited, keyed, charge, skips_empty, in_flight, settled })
        });
        Ok(Settling {
            layers: each.collect::<Result<_, SettleError>>()?,
            pending: BinaryHeap::new(),
            amounts: Vec::new(),
            free: Vec::new(),
            arrivals: 0,
            last: None,
            peak_in_flight: 0,
            empty: KeyNotes::default(),
            shared: false,
            open: std::collections::HashMap::new(),
            completes: None,
        })
    }

    /// When the last request admitted completes: at its completion, or, if a layer that
    /// delays what it admits (a leaky queue) made it wait, that much later: served after
    /// its wait, its response takes its duration from then.
    pub fn last_completion(&self) -> Option<Timestamp> {
        self.completes
    }

    /// Shares `notes`, what the reading of the requests notes of their keys as it numbers
    /// them: a keyed layer whose system lets a request of the empty key through uncounted
    /// (envoy's descriptor without its header, say) then does, at arrival and at
    /// completion, and a keyed layer whose system reads a key's text reads it there.
    pub fn share_key_notes(&mut self, notes: &KeyNotes) {
        self.empty = notes.clone();
        for layer in self.layers.iter_mut().filter(|layer| layer.keyed) {
            if let Limited::Rate { limiter, .. } = &mut layer.limited {
                limiter.share_key_notes(notes);
            }
        }
    }

    /// Decides `request`, the next in arrival order, which costs layer n `amounts[n]`:
    /// first settles every admitted request that completes at or before its arrival. It
    /// passes if every layer admits it, and returns the layers that refused it, bit n for
    /// layer n (0: it passed). A refused request charges nothing and is never settled.
    pub fn arrive(&mut self, request: Request, amounts: &[Amount]) -> Result<u32, SettleError> {
        self.arrive_in(None, request, amounts)
    }

    /// Decides `request` as [`arrive`](Settling::arrive) does, with the rate limiters kept
    /// in `store`: every call of a settling must keep them there, from its first.
    pub fn arrive_sharing(
        &mut self,
        store: &mut dyn Store,
        request: Request,
        amounts: &[Amount],
    ) -> Result<u32, SettleError> {
        // A store's limiters tell no wait, which a layer that delays must.
        let delays = self.layers.iter().find_map(|layer| match &layer.limited {
            Limited::Rate { settings, .. } if settings.algorithm.delays() => {
                Some(settings.algorithm)
            }
            _ => None,
        });
        if let Some(algorithm) = delays {
            let why = "it delays what it admits, and a store's limiters tell no wait";
            return Err(SettleError::Unsettled(algorithm.name(), why));
        }
        self.arrive_in(Some(store), request, amounts)
    }

    /// Decides a request of key `key` arriving at `arrival`, whose completion is not known
    /// yet (a live one), as [`arrive`](Settling::arrive) decides one: returns the layers
    /// that refused it (0: it passed) and, if it passed, its ticket, which
    /// [`close`](Settling::close) settles it by. It is in flight until then. `amounts`
    /// hold what each layer reserves or is charged on arrival; the real costs come at
    /// closing.
    pub fn open(
        &mut self,
        arrival: Timestamp,
        key: Key,
        amounts: &[Amount],
    ) -> Result<(u32, Option<u64>), SettleError> {
        // In flight until closed: it completes at no time known, after every other.
        let latest = Timestamp::from_micros(Timestamp::MAX).expect("the latest time");
        let request = Request { arrival, completion: latest, key };
        let seq = self.arrivals;
        let refused = self.arrive_in(None, request, amounts)?;
        if refused != 0 {
            return Ok((refused, None));
        }
        // Taken out of the pending requests, kept by ticket instead.
        let mut kept = None;
        self.pending.retain(|&Reverse((_, s, key, place))| match s == seq {
            true => {
                kept = Some((key, place));
                false
            }
            false => true,
        });
        let Some(held) = kept else { return Err(SettleError::Order) };
        self.open.insert(seq, held);
        Ok((0, Some(seq)))
    }

    /// Settles the open request of `ticket` at `now`, no earlier than the last request
    /// decided, each layer at its real cost `costs[n]`, as a completion settles: first
    /// every request that completes by `now`. An unknown ticket (or one closed already) is
    /// [`SettleError::Ticket`].
    pub fn close(&mut self, ticket: u64, now: Timestamp, costs: &[u64]) -> Result<(), SettleError> {
        if self.last.is_some_and(|last| now < last) {
            return Err(SettleError::Order);
        }
        if costs.len() != self.layers.len() || costs.iter().any(|&c| c > MAX_COST) {
            return Err(SettleError::Amounts);
        }
        let Some((key, place)) = self.open.remove(&ticket) else {
            return Err(SettleError::Ticket(ticket));
        };
        self.last = Some(now);
        self.settle_until(None, now)?;
        let width = self.layers.len();
        let at = place as usize * width;
        for (slot, &cost) in self.amounts[at..at + width].iter_mut().zip(costs) {
            slot.cost = cost;
        }
        self.complete(None, key, place, now)
    }

    /// Returns the requests opened and not yet closed.
    pub fn opened(&self) -> usize {
        self.open.len()
    }

    /// Settles every admitted request still in flight as [`finish`](Settling::finish) does,
    /// with the rate limiters kept in `store`.
    pub fn finish_sharing(&mut self, store: &mut dyn Store) -> Result<(), SettleError> {
        self.settle_until(
            Some(store),
            Timestamp::from_micros(Timestamp::MAX).expect("the latest time"),
        )
    }

    fn arrive_in(
        &mut self,
        mut store: Option<&mut dyn Store>,
        request: Request,
        amounts: &[Amount],
    ) -> Result<u32, SettleError> {
        self.shared |= store.is_some();
        let Request { arrival, completion, key } = request;
        if completion < arrival || self.last.is_some_and(|last| arrival < last) {
            return Err(SettleError::Order);
        }
        let sound = |a: &Amount| a.reserve <= MAX_COST && a.cost <= MAX_COST;
        if amounts.len() != self.layers.len() || !amounts.iter().all(sound) {
            return Err(SettleError::Amounts);
        }
        self.last = Some(arrival);
        self.settle_until(again(&mut store), arrival)?;
        let mut refused = 0;
        let empty = self.empty.is(key);
        for (n, (layer, &amount)) in self.layers.iter_mut().zip(amounts).enumerate() {
            if layer.skips_empty && empty {
                continue;
            }
            if !layer.admits(on(&mut store, n), key, arrival, amount)? {
                refused |= 1 << n;
                layer.settled.refused += 1;
            }
        }
        let seq = self.arrivals;
        self.arrivals += 1;
        if refused != 0 {
            return Ok(refused);
        }
        let mut wait = 0;
        for (n, (layer, &amount)) in self.layers.iter_mut().zip(amounts).enumerate() {
            if !(layer.skips_empty && empty) {
                wait = wait.max(layer.arrive(on(&mut store, n), key, arrival, amount)?);
            }
        }
        // Served after its wait, it completes its duration later (a live request, whose
        // completion is not known, at the latest time still).
        let later = completion.as_micros().saturating_add(wait).min(Timestamp::MAX);
        let completion = Timestamp::from_micros(later).unwrap_or(completion);
        self.completes = Some(completion);
        let place = self.keep(amounts);
        self.pending.push(Reverse((completion, seq, key, place)));
        let in_flight = self.pending.len() + self.open.len();
        self.peak_in_flight = self.peak_in_flight.max(in_flight as u64);
        Ok(0)
    }

    /// Returns how long after its arrival `request`, refused by the layers of `refused` (as
    /// [`arrive`](Settling::arrive) returned them) with `amounts`, would be admitted by
    /// each of them, were nothing else to happen but time: the longest, in whole
    /// microseconds, as a provider's `retry-after` tells a client. A rate's limiter is
    /// asked on a copy as it refills, not counting what requests in flight will give back
    /// or charge when they complete; a cap waits for the key's first request in flight to
    /// complete. `None` if some layer never would (a cost past what it holds), or if a
    /// refusing rate's limiter is kept in a store, which is not asked.
    pub fn retry_after(&self, request: Request, amounts: &[Amount], refused: u32) -> Option<i64> {
        let (key, now) = (request.key, request.arrival);
        let rate_refused = (self.layers.iter().enumerate()).any(|(n, layer)| {
            refused & (1 << n) != 0 && matches!(layer.limited, Limited::Rate { .. })
        });
        if self.shared && rate_refused {
            return None;
        }
        let layers = self.layers.iter().zip(amounts).enumerate();
        layers.filter(|(n, _)| refused & (1 << n) != 0).try_fold(
            0,
            |most, (_, (layer, &amount))| {
                layer.retry_after(key, now, amount, &self.pending).map(|after| most.max(after))
            },
        )
    }

    /// Settles every admitted request still in flight, each at its completion.
    pub fn finish(&mut self) {
        // In memory, settling fails in no way.
        let _ = self
            .settle_until(None, Timestamp::from_micros(Timestamp::MAX).expect("the latest time"));
    }

    /// Returns what settling did in each layer, in layer order: in full once
    /// [`finish`](Settling::finish) has settled every request.
    pub fn settled(&self) -> Vec<LayerSettled> {
        self.layers.iter().map(Layer::settled).collect()
    }

    /// Returns the most admitted requests in flight at once, of all keys.
    pub fn peak_in_flight(&self) -> u64 {
        self.peak_in_flight
    }

    /// Returns the requests admitted and not yet settled.
    pub fn in_flight(&self) -> usize {
        self.pending.len()
    }

    /// Settles, in completion order, every pending request that completes at or before
    /// `now`.
    fn settle_until(
        &mut self,
        mut store: Option<&mut dyn Store>,
        now: Timestamp,
    ) -> Result<(), SettleError> {
        while let Some(&Reverse((completion, _, key, place))) = self.pending.peek() {
            if completion > now {
                break;
            }
            self.pending.pop();
            self.complete(again(&mut store), key, place, completion)?;
        }
        Ok(())
    }

    /// Settles, at `now`, the admitted request of key `key` whose amounts are kept at
    /// `place`, and frees the place.
    fn complete(
        &mut self,
        mut store: Option<&mut dyn Store>,
        key: Key,
        place: u32,
        now: Timestamp,
    ) -> Result<(), SettleError> {
        let width = self.layers.len();
        let at = place as usize * width;
        let empty = self.empty.is(key);
        let layers = self.layers.iter_mut().zip(&self.amounts[at..at + width]).enumerate();
        for (n, (layer, &amount)) in layers {
            if !(layer.skips_empty && empty) {
                layer.complete(on(&mut store, n), key, now, amount)?;
            }
        }
        self.free.push(place);
        Ok(())
    }

    /// Keeps a pending request's amounts, and returns their slot.
    fn keep(&mut self, amounts: &[Amount]) -> u32 {
        let width = self.layers.len();
        match self.free.pop() {
            Some(place) => {
                let at = place as usize * width;
                self.amounts[at..at + width].copy_from_slice(amounts);
                place
            }
            None => {
                self.amounts.extend_from_slice(amounts);
                // At most one slot per request in flight, and requests are counted in u64.
                u32::try_from(self.amounts.len() / width - 1).unwrap_or(u32::MAX)
            }
        }
    }
}

/// Says whether `settings` can be settled with `charge`.
fn check(settings: &Settings, charge: Charge) -> Result<(), SettleError> {
    let algorithm = settings.algorithm;
    if algorithm.has_zone() {
        let why = "its keys share a zone, which this engine does not settle; use gcra";
        return Err(SettleError::Unsettled(algorithm.name(), why));
    }
    if charge == Charge::Completion && !algorithm.charges_after() {
        let why = "its system reserves at arrival; give reserve= and cost=";
        return Err(SettleError::Unsettled(algorithm.name(), why));
    }
    if charge == Charge::Reserve && !algorithm.gives_back() {
        let can = crate::limiter::Algorithm::ALL.iter().filter(|a| a.gives_back());
        let can: Vec<&str> = can.map(|a| a.name()).collect();
        return Err(SettleError::CannotGiveBack(algorithm.name(), can.join(", ")));
    }
    Ok(())
}

#[cfg(test)]
mod live_tests;
#[cfg(test)]
mod tests;
