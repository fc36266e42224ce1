//! What decides an event: limits side by side, each alone, or layers all or nothing.
//!
//! A limit is a limiter's [`Settings`]; a [`Layer`] is a limit with how it sees an event
//! (by key or over all, at the event's cost or its own); a [`Policy`] is a list of them,
//! compared side by side or required all at once. [`Limits`] decides events through a
//! policy in memory, each key with its own state.

mod limits;

use std::num::NonZeroU64;

pub use self::limits::{Decided, Limits};
use crate::event::{Event, KeyNotes};
use crate::limiter::{Algorithm, Params};
use crate::units::rate::Rate;
use crate::units::time::Span;

/// The most layers one policy takes: each event is asked of every layer, and the layers
/// that refuse it are bits of a `u32`.
pub const MAX_LAYERS: usize = 16;

/// One limit: a limiter, its rate and burst, its own parameters, and the length of the
/// busiest window a report of it gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// The limiter.
    pub algorithm: Algorithm,
    /// Its rate.
    pub rate: Rate,
    /// Its burst; ignored by limiters without one.
    pub burst: NonZeroU64,
    /// The length of the busiest window to report.
    pub window: Span,
    /// The limiter's own parameters (nginx's `delay=`, say).
    pub params: Params,
}

impl Settings {
    /// Returns the most units the limiter ever holds at once: its burst, or N for the
    /// windows. An event that costs more never passes.
    pub fn capacity(&self) -> u64 {
        if self.algorithm.uses_burst() { self.burst.get() } else { self.rate.count() }
    }

    /// Returns true if the limiter says how long each event it admits waits, as nginx does
    /// without `nodelay` (a leaky queue's waits are found again, not told).
    pub fn tells_waits(&self) -> bool {
        self.params.tells_waits()
    }

    /// Returns the limiter these settings make, for one key alone.
    pub fn limiter(&self) -> crate::limiter::AnyLimiter {
        let Settings { algorithm, rate, burst, params, .. } = *self;
        algorithm.make::<crate::limiter::Alone>(rate, burst, params, &())
    }

    /// Returns the limiter these settings make, for every key.
    pub fn per_key(&self) -> crate::limiter::AnyPerKey {
        crate::limiter::AnyPerKey::with_params(self.algorithm, self.rate, self.burst, self.params)
    }

    /// Returns the delay a report shows, for a limiter that takes one (nginx).
    pub fn shown_delay(&self) -> Option<String> {
        self.params.shown()
    }
}

/// One layer: its limit, whether it is keyed (by the run's key column), and its cost: the
/// event's own (read from the run's cost column), or a number.
#[derive(Clone, Debug)]
pub struct Layer {
    /// The limit.
    pub settings: Settings,
    /// Whether each key has its own state.
    pub keyed: bool,
    /// What every event costs this layer; `None`: the event's own cost.
    pub cost: Option<u64>,
    /// Whether it counts the hits of an event another layer refuses, as envoy's ratelimit
    /// service increments every limit of a request unless
    /// `STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT` is set (`fixed_cache_impl.go`,
    /// `getHitsAddend`).
    pub counts_refused: bool,
}

impl Layer {
    /// Whether it lets an event of the empty key through uncounted: keyed, by a system that
    /// does ([`Algorithm::skips_empty_key`](crate::limiter::Algorithm::skips_empty_key)).
    #[inline]
    pub fn skips_empty_key(&self) -> bool {
        self.keyed && self.settings.algorithm.skips_empty_key()
    }

    /// Has `limiter`, this layer's for every key, read what the reading of the events
    /// notes of their keys ([`AnyPerKey::share_key_notes`]), if the layer is keyed: a
    /// layer not keyed sees one key, whose text is none of the reading's.
    ///
    /// [`AnyPerKey::share_key_notes`]: crate::limiter::Any::share_key_notes
    pub fn share_key_notes(&self, limiter: &mut crate::limiter::AnyPerKey, notes: &KeyNotes) {
        if self.keyed {
            limiter.share_key_notes(notes);
        }
    }

    /// Returns the event as this layer sees it: its key (0 unless keyed) and its cost.
    #[inline]
    pub fn sees(&self, event: Event) -> Event {
        Event {
            time: event.time,
            key: if self.keyed { event.key } else { 0 },
            cost: self.cost.unwrap_or(event.cost),
        }
    }
}

/// Why limits do not make a policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// Layers all or nothing number 1 to [`MAX_LAYERS`].
    #[error("a layered limit has 1 to {MAX_LAYERS} layers, not {0}")]
    Layers(usize),
}

/// What decides an event: limiters side by side, each deciding every event alone (one for
/// `replay`, several for `compare`), or layers all or nothing (`--limit`), an event
/// passing only if every layer admits it. A single limit is one limiter side by side with
/// none, or one layer.
#[derive(Clone, Copy, Debug)]
pub enum Policy<'a> {
    /// Each limiter decides alone.
    SideBySide(&'a [Settings]),
    /// Every layer must admit; a refused event charges none.
    AllOrNothing(&'a [Layer]),
}

impl Policy<'_> {
    /// Returns its limits as layers: side by side, each limiter is a layer that sees the
    /// event as it is, its key and its cost.
    pub fn layers(&self) -> Vec<Layer> {
        match *self {
            Policy::SideBySide(settings) => settings
                .iter()
                .map(|&settings| Layer { settings, keyed: true, cost: None, counts_refused: false })
                .collect(),
            Policy::AllOrNothing(layers) => layers.to_vec(),
        }
    }

    /// Whether an event passes only if every limit admits it.
    pub fn all_or_nothing(&self) -> bool {
        matches!(self, Policy::AllOrNothing(_))
    }

    /// Says whether its limits make a policy: layers all or nothing number 1 to
    /// [`MAX_LAYERS`], as the layers that refuse an event are bits of a `u32`.
    pub fn check(&self) -> Result<(), PolicyError> {
        match *self {
            Policy::AllOrNothing(layers) if layers.is_empty() || layers.len() > MAX_LAYERS => {
                Err(PolicyError::Layers(layers.len()))
            }
            _ => Ok(()),
        }
    }
}
