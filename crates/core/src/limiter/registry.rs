//! The one list of limiters: each line makes its `Algorithm` entry and every dispatch.
//!
//! A new limiter is a file that implements [`Rule`] and one line in the list that
//! `limiter/mod.rs` gives `limiters!`. The line declares its module and gives it its
//! variant of [`Algorithm`] (with the name, help, promise and Redis script its `Rule`
//! states) and its variant of [`Any`], which holds it in any [`Store`]: alone, per key, or
//! on a fleet of servers.

use std::num::NonZeroU64;

use super::{Algorithm, Any, Decision, Limiter, Rule};
use crate::units::rate::Rate;
use crate::units::time::Timestamp;

/// Where a limiter's state is kept: one store is a way to hold a [`Rule`] (alone, once per
/// key, once per key and server), and [`Any`] holds any limiter in it.
pub trait Store {
    /// How the store holds a limiter of type `L`.
    type Of<L: Rule>: Clone + std::fmt::Debug;
    /// What the store is made with, beside the limiter.
    type Setup;
    /// Which of its states an event goes to: none, a key, a server and a key.
    type At: Copy;

    /// Returns the store holding `limiter` as it is now.
    fn make<L: Rule>(limiter: L, setup: &Self::Setup) -> Self::Of<L>;

    /// Decides on an event at `now` in the state at `at`, as [`Limiter::take`](super::Limiter::take) does.
    fn take<L: Rule>(
        of: &mut Self::Of<L>,
        at: Self::At,
        now: Timestamp,
        cost: u64,
        force: bool,
    ) -> Decision;

    /// Returns whether an event at `now` would pass in the state at `at`, spending
    /// nothing, as [`PerKey::admits`](super::PerKey::admits) says. The default decides on a
    /// copy of the whole store: right, but for stores that do better.
    fn admits<L: Rule>(of: &mut Self::Of<L>, at: Self::At, now: Timestamp, cost: u64) -> bool {
        Self::take(&mut of.clone(), at, now, cost, false).passed
    }

    /// Looks up the state at `at` in its zone at `now` without charging it, as
    /// [`PerKey::look_up_only`](super::PerKey::look_up_only) does; nothing, by default.
    fn look_up<L: Rule>(_of: &mut Self::Of<L>, _at: Self::At, _now: Timestamp) {}

    /// Shares what the reading noted of its keys, as
    /// [`PerKey::share_key_notes`](super::PerKey::share_key_notes) does; nothing, by
    /// default, for a store with no keys.
    fn share_key_notes<L: Rule>(_of: &mut Self::Of<L>, _notes: &crate::event::KeyNotes) {}
}

/// Makes, from the list of limiters (each `module::Type`), their modules, [`Algorithm`] and
/// [`Any`]: the one place that lists limiters.
macro_rules! limiters {
    ($($module:ident :: $rule:ident,)*) => {
        $(
            mod $module;
            pub use self::$module::$rule;
        )*

        /// The limiting algorithms, by the names the command line and the JSON output use.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Algorithm {
            $(
                #[doc = concat!("[`", stringify!($rule), "`]")]
                $rule,
            )*
        }

        impl Algorithm {
            /// Every algorithm, in the order reports list them.
            pub const ALL: [Algorithm; [$(Algorithm::$rule),*].len()] = [$(Algorithm::$rule),*];

            /// Returns the name used on the command line and in reports.
            pub fn name(self) -> &'static str {
                match self { $(Algorithm::$rule => <$rule as Rule>::NAME,)* }
            }

            /// Returns one line that says what the algorithm does.
            pub fn help(self) -> &'static str {
                match self { $(Algorithm::$rule => <$rule as Rule>::HELP,)* }
            }

            /// Returns true if the algorithm has a burst, b.
            pub fn uses_burst(self) -> bool {
                match self { $(Algorithm::$rule => <$rule as Rule>::USES_BURST,)* }
            }

            /// Returns true if the algorithm delays the events it admits, rather than
            /// passing them at once.
            pub fn delays(self) -> bool {
                match self { $(Algorithm::$rule => <$rule as Rule>::DELAYS,)* }
            }

            /// Returns the burst reports show for a limiter of burst b: b, or for a
            /// system whose burst counts the requests beyond the first, b − 1; `None`
            /// without a burst.
            pub fn shown_burst(self, burst: std::num::NonZeroU64) -> Option<u64> {
                self.uses_burst().then_some(burst.get() - self.beyond_first())
            }

            /// Returns the burst b of a limiter whose reports show `shown` (the inverse of
            /// [`shown_burst`](Algorithm::shown_burst)), if it is at least 1.
            pub fn burst_from(self, shown: u64) -> Option<std::num::NonZeroU64> {
                std::num::NonZeroU64::new(shown.checked_add(self.beyond_first())?)
            }

            /// Returns what its shown burst leaves out of b: 1 for a system whose burst
            /// counts the requests beyond the first, else 0.
            fn beyond_first(self) -> u64 {
                let beyond = match self { $(Algorithm::$rule => <$rule as Rule>::BURST_BEYOND_FIRST,)* };
                u64::from(beyond)
            }

            /// Returns its burst b when none is given: a system's own default, or N.
            pub fn default_burst(self, rate: $crate::units::rate::Rate) -> std::num::NonZeroU64 {
                let default = self.own_default_burst();
                default.and_then(|shown| self.burst_from(shown)).unwrap_or(rate.count_nonzero())
            }

            /// Returns its system's own name for its burst (redis-cell's `max_burst`), which
            /// a limit's spec takes in place of `burst=`, if it has one.
            pub fn burst_word(self) -> Option<&'static str> {
                match self { $(Algorithm::$rule => <$rule as Rule>::BURST_WORD,)* }
            }

            /// Returns a system's own default burst, as its reports show it (nginx's 0,
            /// Traefik's 1); `None` where the default is N.
            pub fn own_default_burst(self) -> Option<u64> {
                match self { $(Algorithm::$rule => <$rule as Rule>::DEFAULT_BURST,)* }
            }

            /// Returns why it cannot run at `rate`, if it cannot: a system that writes no
            /// such rate.
            pub fn refuses(self, rate: $crate::units::rate::Rate) -> Option<String> {
                match self { $(Algorithm::$rule => <$rule as Rule>::refuses(rate),)* }
            }

            /// Returns true if its keys share one store, as nginx's share a zone
            /// ([`KeyStore::SHARED`](crate::limiter::KeyStore::SHARED)).
            pub fn has_zone(self) -> bool {
                use $crate::limiter::{KeyStore, KeyedState};
                match self { $(Algorithm::$rule => <<$rule as KeyedState>::Keys as KeyStore<$rule>>::SHARED,)* }
            }

            /// Returns the keys of its own parameters ([`Rule::Params`]); none for most.
            pub fn param_keys(self) -> &'static [&'static str] {
                use $crate::limiter::Parameters;
                match self { $(Algorithm::$rule => <<$rule as Rule>::Params as Parameters>::KEYS,)* }
            }

            /// Returns the algorithms whose own parameters include `key`.
            pub fn taking(key: &str) -> impl Iterator<Item = Algorithm> + '_ {
                Algorithm::ALL.into_iter().filter(move |a| a.param_keys().contains(&key))
            }

            /// Reads its own parameters from what was given, each key with its value
            /// (`None` for a bare key); none given is the system's own default.
            pub fn params(
                self,
                given: &[(&str, Option<&str>)],
            ) -> Result<Params, $crate::limiter::ParamError> {
                use $crate::limiter::Parameters;
                Ok(match self {
                    $(Algorithm::$rule => Params::$rule(<<$rule as Rule>::Params as Parameters>::parse(given)?),)*
                })
            }

            /// Returns its own parameters as none were given: the system's defaults.
            pub fn default_params(self) -> Params {
                match self { $(Algorithm::$rule => Params::$rule(Default::default()),)* }
            }

            /// Returns true if it counts a request refused by another of its limits
            /// ([`Rule::COUNTS_EVERY_LIMIT`](crate::limiter::Rule::COUNTS_EVERY_LIMIT)).
            pub fn counts_every_limit(self) -> bool {
                match self { $(Algorithm::$rule => <$rule as Rule>::COUNTS_EVERY_LIMIT,)* }
            }

            /// Returns why it takes no cost, if it takes none: its system counts each
            /// request once ([`Rule::SPENDS_COST`]).
            pub fn refuses_cost(self) -> Option<String> {
                let spends = match self { $(Algorithm::$rule => <$rule as Rule>::SPENDS_COST,)* };
                (!spends).then(|| {
                    let system = self.models().unwrap_or(self.name());
                    format!("{} counts each request once, as {system} does, and takes no cost", self.name())
                })
            }

            /// Whether it can give back what it spent, as a reservation settled for less
            /// needs ([`Rule::GIVES_BACK`]).
            pub fn gives_back(self) -> bool {
                match self { $(Algorithm::$rule => <$rule as Rule>::GIVES_BACK,)* }
            }

            /// Whether a layer of it may charge only at completion
            /// ([`Rule::CHARGES_AFTER`]).
            pub fn charges_after(self) -> bool {
                match self { $(Algorithm::$rule => <$rule as Rule>::CHARGES_AFTER,)* }
            }

            /// Returns true if, having admitted every event of a stream, it admits every
            /// event of any part of it ([`Rule::ADMITS_ANY_PART`]).
            pub fn admits_any_part(self) -> bool {
                match self { $(Algorithm::$rule => <$rule as Rule>::ADMITS_ANY_PART,)* }
            }

            /// Returns true if it passes exactly the events GCRA passes
            /// ([`Rule::PASSES_AS_GCRA`]).
            pub fn passes_as_gcra(self) -> bool {
                match self { $(Algorithm::$rule => <$rule as Rule>::PASSES_AS_GCRA,)* }
            }

            /// Returns true if its system lets an event whose key is empty through,
            /// uncounted ([`Rule::SKIPS_EMPTY_KEY`]).
            pub fn skips_empty_key(self) -> bool {
                match self { $(Algorithm::$rule => <$rule as Rule>::SKIPS_EMPTY_KEY,)* }
            }

            /// Returns true if it models one system's own arithmetic.
            pub fn is_system(self) -> bool {
                self.models().is_some()
            }

            /// Returns how its system writes a rate in a limit's spec, if not as `rate=N/P`.
            pub fn rate_words(self) -> Option<$crate::limiter::RateWords> {
                match self { $(Algorithm::$rule => <$rule as Rule>::RATE_WORDS,)* }
            }

            /// Returns the system whose arithmetic it models, with the version followed;
            /// `None` for an exact limiter.
            pub fn models(self) -> Option<&'static str> {
                match self { $(Algorithm::$rule => <$rule as Rule>::MODELS,)* }
            }

            /// Returns what its system does that its users trip over; `None` for an exact
            /// limiter.
            pub fn quirks(self) -> Option<&'static str> {
                match self { $(Algorithm::$rule => <$rule as Rule>::QUIRKS,)* }
            }

            /// Returns what real system it is proven against, and how; `None` for an exact
            /// limiter.
            pub fn proven(self) -> Option<&'static str> {
                match self { $(Algorithm::$rule => <$rule as Rule>::PROVEN,)* }
            }

            /// Returns how its system writes its own lossless setting, and how it is found
            /// ([`Rule::OWN_SIZE`]).
            pub fn own_size(self) -> Option<$crate::limiter::OwnSize> {
                match self { $(Algorithm::$rule => <$rule as Rule>::OWN_SIZE,)* }
            }

            /// Returns how its system's configuration is written ([`Rule::EXPORT`]).
            pub fn export(self) -> Option<$crate::limiter::Export> {
                match self { $(Algorithm::$rule => <$rule as Rule>::EXPORT,)* }
            }

            /// Returns the Redis script it runs as, if it can run in Redis.
            pub fn redis_script(self) -> Option<$crate::limiter::RedisScript> {
                match self { $(Algorithm::$rule => <$rule as Rule>::REDIS,)* }
            }

            /// Returns a new limiter of this kind, held in store `S`, set by `params` (its
            /// defaults if they are another limiter's). Algorithms without a burst ignore
            /// `burst`.
            pub fn make<S: Store>(
                self,
                rate: $crate::units::rate::Rate,
                burst: std::num::NonZeroU64,
                params: Params,
                setup: &S::Setup,
            ) -> Any<S> {
                match self {
                    $(Algorithm::$rule => {
                        #[allow(unreachable_patterns)]
                        let own = match params {
                            Params::$rule(own) => own,
                            _ => Default::default(),
                        };
                        let limiter = <$rule as Rule>::new_limit(rate, burst).with_params(own);
                        Any::$rule(S::make(limiter, setup))
                    })*
                }
            }

            /// What it passes of `events` by its written rule; see [`Rule::by_the_rule`].
            #[cfg(test)]
            pub(crate) fn by_the_rule(
                self,
                rate: $crate::units::rate::Rate,
                b: u64,
                events: &[(i128, u64)],
            ) -> Vec<bool> {
                match self { $(Algorithm::$rule => <$rule as Rule>::by_the_rule(rate, b, events),)* }
            }

            /// Returns its promise for `limit`, as figures.
            pub fn bound(self, limit: &$crate::limiter::promise::Limit) -> $crate::limiter::promise::Bound {
                match self { $(Algorithm::$rule => <$rule as Rule>::bound(limit),)* }
            }

            /// Says what it promises for `limit`.
            pub(crate) fn promise(self, limit: &$crate::limiter::promise::Limit) -> String {
                match self { $(Algorithm::$rule => <$rule as Rule>::promise(limit),)* }
            }
        }

        /// Any limiter's own parameters ([`Rule::Params`]), as its variant says.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Params {
            $(
                #[doc = concat!("[`", stringify!($rule), "`]'s.")]
                $rule(<$rule as Rule>::Params),
            )*
        }

        impl Params {
            /// Returns the limiter whose parameters these are.
            pub fn algorithm(&self) -> Algorithm {
                match self { $(Params::$rule(_) => Algorithm::$rule,)* }
            }

            /// What a report shows of them, under `delay`; nothing for most limiters.
            pub fn shown(&self) -> Option<String> {
                use $crate::limiter::Parameters;
                match self { $(Params::$rule(own) => own.shown(),)* }
            }

            /// Whether the limiter, so set, says how long each event it admits waits.
            pub fn tells_waits(&self) -> bool {
                use $crate::limiter::Parameters;
                match self { $(Params::$rule(own) => own.tells_waits(),)* }
            }
        }

        impl std::fmt::Display for Params {
            /// As a `--limit` spec writes them: `delay=2`, `nodelay`; nothing for none.
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                match self { $(Params::$rule(own) => own.fmt(f),)* }
            }
        }

        /// Any one of the limiters, held in store `S`, chosen at run time without dynamic
        /// dispatch.
        #[derive(Clone, Debug)]
        pub enum Any<S: Store> {
            $(
                #[doc = concat!("A [`", stringify!($rule), "`].")]
                $rule(S::Of<$rule>),
            )*
        }

        impl<S: Store> Any<S> {
            /// Decides on an event at `now` in the state at `at`; see [`Store::take`].
            #[inline]
            pub fn take_at(
                &mut self,
                at: S::At,
                now: $crate::units::time::Timestamp,
                cost: u64,
                force: bool,
            ) -> Decision {
                match self { $(Any::$rule(of) => S::take(of, at, now, cost, force),)* }
            }

            /// Returns whether an event at `now` would pass in the state at `at`,
            /// spending nothing; see [`Store::admits`].
            #[inline]
            pub fn admits_at(
                &mut self,
                at: S::At,
                now: $crate::units::time::Timestamp,
                cost: u64,
            ) -> bool {
                match self { $(Any::$rule(of) => S::admits(of, at, now, cost),)* }
            }

            /// Looks up the state at `at` in its zone without charging it; see
            /// [`Store::look_up`].
            #[inline]
            pub fn look_up_at(&mut self, at: S::At, now: $crate::units::time::Timestamp) {
                match self { $(Any::$rule(of) => S::look_up(of, at, now),)* }
            }

            /// Shares what the reading that numbers the keys notes of them; see
            /// [`Store::share_key_notes`].
            pub fn share_key_notes(&mut self, notes: &$crate::event::KeyNotes) {
                match self { $(Any::$rule(of) => S::share_key_notes(of, notes),)* }
            }
        }

        impl Any<$crate::limiter::Keys> {
            /// Returns whether key `key` is back at its start as of `now`; see
            /// [`PerKey::at_rest`](crate::limiter::PerKey::at_rest).
            pub fn at_rest(&self, key: usize, now: $crate::units::time::Timestamp) -> bool {
                match self { $(Any::$rule(this) => this.at_rest(key, now),)* }
            }

            /// Returns an instant from which every key whose events all came at `last` or
            /// before is at rest; see [`KeyedState::rests_after`](crate::limiter::KeyedState::rests_after).
            pub fn rests_after(
                &self,
                last: $crate::units::time::Timestamp,
            ) -> Option<$crate::units::time::Timestamp> {
                match self { $(Any::$rule(this) => this.rests_after(last),)* }
            }

            /// Returns the limiter with its keys renumbered; see
            /// [`PerKey::renumbered`](crate::limiter::PerKey::renumbered).
            pub fn renumbered(&self, kept: &[usize]) -> Self {
                match self { $(Any::$rule(this) => Any::$rule(this.renumbered(kept)),)* }
            }

            /// Returns whether key `key` lets in at `now` a request charged only after its
            /// response; see [`KeyedState::admits_uncharged`](crate::limiter::KeyedState::admits_uncharged).
            pub fn admits_uncharged(&mut self, key: usize, now: $crate::units::time::Timestamp) -> bool {
                match self { $(Any::$rule(this) => this.admits_uncharged(key, now),)* }
            }

            /// Gives back `units` that key `key` spent, at `now`; see
            /// [`KeyedState::give_back`](crate::limiter::KeyedState::give_back).
            pub fn give_back(&mut self, key: usize, now: $crate::units::time::Timestamp, units: u64) {
                match self { $(Any::$rule(this) => this.give_back(key, now, units),)* }
            }

            /// Takes `cost` more units of key `key` at `now`, settling a request after its
            /// response; see [`KeyedState::settle_charge`](crate::limiter::KeyedState::settle_charge).
            pub fn settle_charge(&mut self, key: usize, now: $crate::units::time::Timestamp, cost: u64) {
                match self { $(Any::$rule(this) => this.settle_charge(key, now, cost),)* }
            }

            /// Returns how many units key `key` owes at `now`; see
            /// [`KeyedState::owed`](crate::limiter::KeyedState::owed).
            pub fn owed(&self, key: usize, now: $crate::units::time::Timestamp) -> u64 {
                match self { $(Any::$rule(this) => this.owed(key, now),)* }
            }

            /// Gives key `to` the state that key `key` has in `from`, a table of the same
            /// limiter (else nothing): to ask what a key's limiter would do later, on a
            /// copy, without changing it.
            pub fn copy_key(&mut self, from: &Self, key: usize, to: usize) {
                match (self, from) {
                    $((Any::$rule(this), Any::$rule(that)) => this.copy_key(that, key, to),)*
                    _ => {}
                }
            }
        }

        impl Any<$crate::limiter::Alone> {
            /// Does `job` with the limiter as its own type; see [`WithRule`](crate::limiter::WithRule).
            pub fn with_rule<W: $crate::limiter::WithRule>(&self, job: W) -> W::Out {
                match self { $(Any::$rule(limiter) => job.with(limiter),)* }
            }
        }
    };
}

/// The Redis scripts limiters run as (the scripts live with the Redis engine); the leaky
/// queue runs GCRA's, which gives each event's wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RedisScript {
    /// The fixed window's counter.
    FixedWindow,
    /// The sliding log's sorted set.
    SlidingLog,
    /// The sliding-window counter's two counters.
    SlidingCounter,
    /// The token bucket's level and time.
    TokenBucket,
    /// GCRA's tat.
    Gcra,
}

impl std::fmt::Display for Algorithm {
    /// Writes the algorithm's name.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Default for Algorithm {
    /// The limiter run when none is named: GCRA, exact, with integers only.
    fn default() -> Algorithm {
        Algorithm::Gcra
    }
}

/// A name that is no limiter's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("'{0}' is not a limiter")]
pub struct UnknownAlgorithm(pub String);

impl std::str::FromStr for Algorithm {
    type Err = UnknownAlgorithm;

    /// Reads an algorithm by its name, exactly as [`Algorithm::name`] gives it.
    fn from_str(name: &str) -> Result<Algorithm, UnknownAlgorithm> {
        Algorithm::ALL
            .into_iter()
            .find(|a| a.name() == name)
            .ok_or_else(|| UnknownAlgorithm(name.to_owned()))
    }
}

#[cfg(feature = "schema")]
impl schemars::JsonSchema for Algorithm {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Algorithm".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let names: Vec<&str> = Algorithm::ALL.iter().map(|a| a.name()).collect();
        schemars::json_schema!({ "type": "string", "enum": names, "description": "A limiter's name" })
    }
}

#[cfg(feature = "serde")]
impl serde::Serialize for Algorithm {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

/// A limiter alone: its state is its own.
#[derive(Clone, Copy, Debug)]
pub struct Alone;

impl Store for Alone {
    type Of<L: Rule> = L;
    type Setup = ();
    type At = ();

    fn make<L: Rule>(limiter: L, _: &()) -> L {
        limiter
    }

    #[inline]
    fn take<L: Rule>(of: &mut L, _: (), now: Timestamp, cost: u64, force: bool) -> Decision {
        of.take(now, cost, force)
    }

    #[inline]
    fn admits<L: Rule>(of: &mut L, _: (), now: Timestamp, cost: u64) -> bool {
        let mut state = std::mem::take(of.state_mut());
        let admits = of.admits(&mut state, now, cost);
        *of.state_mut() = state;
        admits
    }
}

/// Any one of the limiters, alone.
pub type AnyLimiter = Any<Alone>;

/// A job done with a limiter as its own type, by [`AnyLimiter::with_rule`]: a job that
/// steps a limiter through many events is so compiled once for each kind, with no choice
/// of kind made an event.
pub trait WithRule {
    /// What the job returns.
    type Out;

    /// Does the job with `limiter`, as it is now.
    fn with<L: Rule>(self, limiter: &L) -> Self::Out;
}

impl Algorithm {
    /// Returns a new limiter of this kind, serving at once what it admits. Algorithms
    /// without a burst ignore `burst`.
    pub fn build(self, rate: Rate, burst: NonZeroU64) -> AnyLimiter {
        self.make::<Alone>(rate, burst, self.default_params(), &())
    }
}

impl super::Limiter for AnyLimiter {
    #[inline]
    fn take(&mut self, now: Timestamp, cost: u64, force: bool) -> Decision {
        self.take_at((), now, cost, force)
    }
}
