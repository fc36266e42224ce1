//! The six rate limiters, each deciding event by event at a time it is given.
//!
//! No limiter reads a clock: the caller passes `now`, so a replay runs on the catalog's
//! own time, and the same code could run on a live clock.

mod aligned;
pub mod export;
mod keyed;
pub mod params;
pub mod promise;
mod replicated;
mod system_size;
mod transfer;
mod zone;
#[macro_use]
mod registry;

#[cfg(test)]
mod tests;

pub use aligned::{AlignedWindows, Step};
pub use keyed::{AnyPerKey, Apart, Held, KeyStore, Keys, PerKey};
pub use leaky_queue::Waits;
pub use registry::{Alone, AnyLimiter, RedisScript, Store, UnknownAlgorithm, WithRule};
pub use replicated::{AnyReplicated, Replicas, Replicated, Share};
pub use transfer::{Piece, Transfer};

// The limiters, each `module::Type`: a new limiter is its file and one line here.
limiters! {
    fixed_window::FixedWindow,
    sliding_log::SlidingLog,
    sliding_counter::SlidingCounter,
    token_bucket::TokenBucket,
    gcra::Gcra,
    leaky_queue::LeakyQueue,
    nginx::Nginx,
    limits_fixed_window::LimitsFixedWindow,
    limits_moving_window::LimitsMovingWindow,
    limits_sliding_window::LimitsSlidingWindow,
    envoy_ratelimit::EnvoyRatelimit,
    traefik::Traefik,
    envoy_local::EnvoyLocal,
    haproxy::Haproxy,
    litellm::Litellm,
    express_rate_limit::ExpressRateLimit,
    rate_limiter_flexible::RateLimiterFlexible,
    nestjs_throttler::NestjsThrottler,
    guava::Guava,
    guava_warmup::GuavaWarmup,
    rack_attack::RackAttack,
    redis_cell::RedisCell,
    redis_rate::RedisRate,
    django_ratelimit::DjangoRatelimit,
}

use std::num::NonZeroU64;

pub use self::envoy_ratelimit::UNITS as ENVOY_UNITS;
pub use self::export::Export;
pub use self::nginx::{Zoned, nginx_notation, nginx_rate};
pub use self::params::{NoParams, ParamError, Parameters};
use self::promise::{Bound, Limit};
pub use self::system_size::{
    HaproxyLimit, NginxBurst, OwnSize, SystemSizer, TraefikBurst, traefik_burst,
};
pub use self::zone::ZoneSize;
use crate::units::rate::Rate;
use crate::units::time::Timestamp;

/// The largest cost one event may have, as the largest burst: so that a cost times a
/// period in units of 1/N µs stays far inside 128 bits.
pub const MAX_COST: u64 = 1_000_000_000_000;

/// Returns c·I, the time an event of cost `cost` takes up; most events cost 1, and then
/// no multiplication is needed.
#[inline]
fn spend(cost: u64, interval: i128) -> i128 {
    if cost == 1 { interval } else { i128::from(cost) * interval }
}

/// A rate limiter that decides, one event at a time, whether the event passes.
pub trait Limiter {
    /// Decides on an event at `now` that costs `cost` units (at most [`MAX_COST`]), spends
    /// them if it passes, and says how long it waits (only a leaky queue delays). With
    /// `force`, the event passes whatever the limiter would decide; see
    /// [`charge`](Limiter::charge).
    ///
    /// Events must come in non-decreasing time order.
    fn take(&mut self, now: Timestamp, cost: u64, force: bool) -> Decision;

    /// Decides whether an event at `now`, of cost 1, passes, and records it if it does.
    #[inline]
    fn admit(&mut self, now: Timestamp) -> bool {
        self.take(now, 1, false).passed
    }

    /// Decides on an event as [`admit`](Limiter::admit) does, with how long it waits.
    #[inline]
    fn decide(&mut self, now: Timestamp) -> Decision {
        self.take(now, 1, false)
    }

    /// Records an event at `now`, of cost 1, as passed, whatever the limiter would decide.
    /// A limiter that takes in what others admitted (the shared state of a fleet) can so be
    /// overspent: a token bucket's level goes below zero, a counter past its limit, and
    /// what comes next pays for it.
    #[inline]
    fn charge(&mut self, now: Timestamp) {
        self.take(now, 1, true);
    }
}

/// A limiter split into its rule and its state, as governor splits GCRA from its state
/// store: the rule is a pure step over a state it is handed, so that one rule serves any
/// number of states (one per key, or per key and server; see [`PerKey`]). Every
/// `KeyedState` is a [`Limiter`] over the state it holds.
pub trait KeyedState: Clone + std::fmt::Debug {
    /// What the limiter changes as events come; the rest is its rule. The default is only
    /// a placeholder, never decided on.
    type State: Clone + std::fmt::Debug + Default;

    /// How its keys' states are kept: apart ([`Apart`]), or in a store they share, as
    /// nginx's zone.
    type Keys: KeyStore<Self>;

    /// Decides on an event in `state`, as [`Limiter::take`] does with the limiter's own.
    fn step(&self, state: &mut Self::State, now: Timestamp, cost: u64, force: bool) -> Decision;

    /// Returns whether an event would pass in `state`, as [`step`](KeyedState::step)
    /// would decide, without spending anything: no later decision changes. It may tidy
    /// `state` (forget what no later event can see). The default steps on a copy, which
    /// is cheap for every limiter whose state is a few numbers.
    #[inline]
    fn admits(&self, state: &mut Self::State, now: Timestamp, cost: u64) -> bool {
        self.step(&mut state.clone(), now, cost, false).passed
    }

    /// Returns whether `state` lets a request in that it will charge only after its
    /// response (a layer's `charge=completion`), spending nothing: by default, whether a
    /// cost of 1 would pass. A system whose own check at arrival asks for nothing says
    /// otherwise: envoy's ratelimit service, asked with a descriptor's `hits_addend` of 0,
    /// lets the request in while the count is at most N.
    #[inline]
    fn admits_uncharged(&self, state: &mut Self::State, now: Timestamp) -> bool {
        self.admits(state, now, 1)
    }

    /// Takes in an event that was refused elsewhere (by another server's copy of this
    /// state): the exact limiters, and every system whose refusals change nothing, ignore
    /// it; a system whose refusals count (refused hits, a cancelled reservation) records it.
    #[inline]
    fn refuse(&self, _state: &mut Self::State, _now: Timestamp, _cost: u64) {}

    /// Whether `state` is back at its start as of `now`: every event from `now` on is
    /// decided as a fresh key's would be, so that a live engine may forget the key, as
    /// Redis lets an idle key expire. Never, by default: a limiter that cannot say so
    /// keeps its keys.
    fn at_rest(&self, _state: &Self::State, _now: Timestamp) -> bool {
        false
    }

    /// Returns an instant from which every state whose events all came at `last` or
    /// before is [at rest](KeyedState::at_rest), whatever they were: where a stream may be
    /// cut and each side replayed from a fresh state, exactly. `None` if no such instant is
    /// known.
    fn rests_after(&self, _last: Timestamp) -> Option<Timestamp> {
        None
    }

    /// Gives back `units` of what `state` spent, at `now`: a reservation settled for
    /// less than it reserved. It never gives more room than the limiter holds when it is
    /// at rest (a full bucket stays full, a count stays at 0 or more). Nothing, by default:
    /// only a limiter whose [`Rule::GIVES_BACK`] says so keeps an account that can be
    /// given back.
    fn give_back(&self, _state: &mut Self::State, _now: Timestamp, _units: u64) {}

    /// Takes `cost` more units at `now` for a request admitted earlier, settled after its
    /// response, whatever `state` holds: by default a forced [`step`](KeyedState::step),
    /// into debt if it must. A system that adds a settlement only to the window still open
    /// (LiteLLM's) says so here.
    fn settle_charge(&self, state: &mut Self::State, now: Timestamp, cost: u64) {
        self.step(state, now, cost, true);
    }

    /// Returns how many units `state` owes at `now`, rounded up: how far charges it was
    /// made to take (a [`charge`](Limiter::charge), a settlement after a response) took it
    /// beyond empty. 0, by default, and for a limiter that owes nothing.
    fn owed(&self, _state: &Self::State, _now: Timestamp) -> u64 {
        0
    }

    /// Whether its decisions read a key's text ([`key_text`](KeyedState::key_text)), as
    /// django-ratelimit's windows, shifted by the key's CRC-32, do; most limiters' never
    /// do.
    const READS_KEY_TEXT: bool = false;

    /// Sets a new key's `state` by its key's text, given as its CRC-32 (zlib's `crc32`):
    /// nothing, by default. A key whose text no reading noted (`PerKey` without
    /// [`KeyNotes`](crate::event::KeyNotes), a limiter alone) is of the empty text, whose
    /// CRC-32 is 0.
    fn key_text(&self, _state: &mut Self::State, _crc: u32) {}

    /// Returns the limiter's own state: at first, a fresh key's.
    fn state_mut(&mut self) -> &mut Self::State;
}

impl<L: KeyedState> Limiter for L {
    #[inline]
    fn take(&mut self, now: Timestamp, cost: u64, force: bool) -> Decision {
        let mut state = std::mem::take(self.state_mut());
        let decision = self.step(&mut state, now, cost, force);
        *self.state_mut() = state;
        decision
    }
}

/// One limiter's decision on one event.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Decision {
    /// Whether the event passed (for a leaky queue, was admitted).
    pub passed: bool,
    /// How long an admitted event waits, in units of 1/N µs: only a leaky queue delays.
    pub wait: i128,
}

impl Decision {
    /// The decision on an event a limit lets through without counting it: of the empty
    /// key, where its system does not account such a request.
    pub const UNCOUNTED: Decision = Decision { passed: true, wait: 0 };
}

/// A rate read from a system's words, or why they make none.
pub type RateRead = Result<Rate, crate::units::rate::RateError>;

/// How a system writes a rate in a limit's spec, in its own words: Traefik's
/// `average=100,period=1m`, HAProxy's `http_req_rate=10s,gt=20`, nginx's `rate=10r/s`.
#[derive(Clone, Copy, Debug)]
pub struct RateWords {
    /// The system, as messages name it.
    pub system: &'static str,
    /// The keys it writes a rate with in place of `rate=`; none if it writes `rate=` its
    /// own way.
    pub keys: &'static [&'static str],
    /// How a rate is written with them, for a message when they make none: `gt=N with
    /// http_req_rate=PERIOD: give both`.
    pub how: &'static str,
    /// Reads a rate from its keys' values; `None` if they do not make one.
    pub read: fn(&[(&str, &str)]) -> Option<RateRead>,
    /// Writes a rate as the spec's words (`average=100,period=1m`), if the system can.
    pub written: fn(Rate) -> Option<String>,
}

/// A limiter's rule: its name, how it is made from a rate and a burst, and what it
/// promises. Implementing it, and one line in the registry, makes a limiter run everywhere
/// limiters run.
pub trait Rule: KeyedState {
    /// Its own parameters beside a rate and a burst ([`NoParams`] for none).
    type Params: Parameters;

    /// The name on the command line and in reports.
    const NAME: &'static str;
    /// One line that says what it does, for `--help`.
    const HELP: &'static str;
    /// Whether it has a burst, b.
    const USES_BURST: bool;
    /// Whether it delays the events it admits (and reports their waits) rather than
    /// passing them at once.
    const DELAYS: bool = false;
    /// The Redis script it runs as; `None` if it cannot run in Redis.
    const REDIS: Option<RedisScript> = None;
    /// Whether its burst counts the requests beyond the first, as nginx's `burst=` does:
    /// its b is then the system's burst plus one, and reports show the system's.
    const BURST_BEYOND_FIRST: bool = false;
    /// The burst a system takes when none is given, as its reports show it (nginx's 0,
    /// Traefik's 1); `None` for the exact limiters, whose burst is then N.
    const DEFAULT_BURST: Option<u64> = None;
    /// Whether it spends an event's cost, as its system spends one (envoy's `hits_addend`,
    /// `limits`' `cost`), or as the exact limiters do; false for a system that counts each
    /// request once whatever it costs, which then takes no cost at all.
    const SPENDS_COST: bool = true;
    /// Whether it can give back what it spent ([`KeyedState::give_back`]), as a reservation
    /// settled for less than it reserved needs: a bucket's level, GCRA's tat, a window's
    /// count.
    const GIVES_BACK: bool = false;
    /// Whether a layer of it may charge only at completion (`charge=completion`): false
    /// for a system whose own accounting always reserves at arrival, as LiteLLM's v3 does.
    const CHARGES_AFTER: bool = true;
    /// Whether a request's hits count in it when another limit of the request refuses it,
    /// as envoy's ratelimit service counts every limit of a request unless told to stop.
    const COUNTS_EVERY_LIMIT: bool = false;
    /// Whether, having admitted every event of a stream, it admits every event of any part
    /// of that stream: fewer events charged leave it at least as much room (a count, a
    /// log, a bucket's level, each a sum over the events charged). A global layer of such
    /// a limiter that refuses nothing alone then refuses nothing beside other layers, all
    /// or nothing, and they decide as if it were not there.
    const ADMITS_ANY_PART: bool = false;
    /// Whether its system lets an event whose key is empty through, uncounted: nginx's
    /// `limit_req` ("requests with an empty key value are not accounted"), HAProxy's
    /// `track-sc` (an empty sample tracks nothing) and envoy's `request_headers`
    /// descriptor (none without the header) do. An exact limiter counts the empty key as a
    /// key like any other.
    const SKIPS_EMPTY_KEY: bool = false;
    /// Whether it passes exactly the events GCRA passes at the same rate and burst (the
    /// token bucket, and the leaky queue as it admits): a stream of it can be decided in
    /// ranges from GCRA's functions of them. The property tests hold each such limiter to
    /// GCRA's decisions.
    const PASSES_AS_GCRA: bool = false;
    /// The system whose own arithmetic it models, with the version followed; `None` for
    /// an exact limiter. `compare` puts only the exact limiters side by side unless asked
    /// for others.
    const MODELS: Option<&'static str> = None;
    /// What its system does that its users trip over, a line; `None` for an exact limiter.
    const QUIRKS: Option<&'static str> = None;
    /// What real system it is proven against, and how, a line; `None` for an exact limiter,
    /// which is proven against its written rule and brute force.
    const PROVEN: Option<&'static str> = None;

    /// How its system writes a rate in a limit's spec, if not as `rate=N/P`.
    const RATE_WORDS: Option<RateWords> = None;

    /// Its system's own name for its burst, which a limit's spec takes in place of
    /// `burst=` (redis-cell's `max_burst`), if it has one.
    const BURST_WORD: Option<&'static str> = None;

    /// How its system writes its own lossless setting, and how it is found, if the system
    /// has one to find (`min-bucket --for`).
    const OWN_SIZE: Option<OwnSize> = None;

    /// How its system's own configuration of a limit is written, if it has one to write
    /// (`config --for`).
    const EXPORT: Option<Export> = None;

    /// Returns why it cannot run at `rate`, if it cannot; every exact limiter can.
    fn refuses(_rate: Rate) -> Option<String> {
        None
    }

    /// Returns the limiter for N per P and burst b, as it starts; without a burst, `burst`
    /// is ignored.
    fn new_limit(rate: Rate, burst: NonZeroU64) -> Self;

    /// What it passes of `events` (time in µs, cost) at N per P and burst b, by the rule
    /// README writes for it, computed plainly (from every passed event so far, say): the
    /// reference the property tests hold the limiter to, written in its own file, apart
    /// from its code.
    #[cfg(test)]
    fn by_the_rule(rate: Rate, b: u64, events: &[(i128, u64)]) -> Vec<bool>;

    /// Returns it set by its own parameters; a limiter without any is as it was.
    fn with_params(self, _params: Self::Params) -> Self {
        self
    }

    /// Says what it promises: by default the token bucket's promise, at most b + r·T in
    /// any interval of length T, which holds if and only if the passed events fit a
    /// bucket of b at rate r; GCRA, which decides as a token bucket does, keeps it.
    fn promise(limit: &Limit) -> String {
        format!("at most b + r·T = {} + T·{} in any interval T", limit.burst, limit.rate)
    }

    /// Returns its promise as figures: by default the token bucket's, a bucket of b at the
    /// rate, which GCRA, deciding as a token bucket does, keeps too.
    fn bound(limit: &Limit) -> Bound {
        Bound::Bucket { burst: limit.burst }
    }
}
