//! The one list of limiters: each line makes its `Algorithm` entry and every dispatch.
//!
//! A new limiter is a file that implements [`Rule`] and one line in the list at the end of
//! this file. The line gives it its variant of [`Algorithm`] (with the name, help and
//! promise its `Rule` states) and its variant of [`Any`], which holds it in any [`Store`]:
//! alone, per key, or on a fleet of servers.

use std::num::NonZeroU64;

use super::promise::{Limit, Seen, Watch};
use super::{Decision, Limiter, Rule};
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
}

macro_rules! limiters {
    ($($variant:ident => $rule:ty,)*) => {
        /// The limiting algorithms, by the names the command line and the JSON output use.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Algorithm {
            $(
                #[doc = concat!("[`", stringify!($rule), "`]")]
                $variant,
            )*
        }

        impl Algorithm {
            /// Every algorithm, in the order reports list them.
            pub const ALL: [Algorithm; [$(Algorithm::$variant),*].len()] =
                [$(Algorithm::$variant),*];

            /// Returns the name used on the command line and in reports.
            pub fn name(self) -> &'static str {
                match self { $(Algorithm::$variant => <$rule as Rule>::NAME,)* }
            }

            /// Returns one line that says what the algorithm does.
            pub fn help(self) -> &'static str {
                match self { $(Algorithm::$variant => <$rule as Rule>::HELP,)* }
            }

            /// Returns true if the algorithm has a burst, b.
            pub fn uses_burst(self) -> bool {
                match self { $(Algorithm::$variant => <$rule as Rule>::USES_BURST,)* }
            }

            /// Returns a new limiter of this kind, held in store `S`. Algorithms without a
            /// burst ignore `burst`.
            pub fn make<S: Store>(self, rate: Rate, burst: NonZeroU64, setup: &S::Setup) -> Any<S> {
                match self {
                    $(Algorithm::$variant => {
                        Any::$variant(S::make(<$rule as Rule>::new_limit(rate, burst), setup))
                    })*
                }
            }

            /// Which measures its promise needs.
            pub(crate) fn watch(self) -> Watch {
                match self { $(Algorithm::$variant => <$rule as Rule>::WATCH,)* }
            }

            /// Says what it promises for `limit`.
            pub(crate) fn promise(self, limit: &Limit) -> String {
                match self { $(Algorithm::$variant => <$rule as Rule>::promise(limit),)* }
            }

            /// Says what was measured, as the promise's statement goes on.
            pub(crate) fn measured(self, limit: &Limit, seen: &Seen) -> String {
                match self { $(Algorithm::$variant => <$rule as Rule>::measured(limit, seen),)* }
            }

            /// Returns whether what was measured kept the promise.
            pub(crate) fn held(self, limit: &Limit, seen: &Seen) -> bool {
                match self { $(Algorithm::$variant => <$rule as Rule>::held(limit, seen),)* }
            }
        }

        /// Any one of the limiters, held in store `S`, chosen at run time without dynamic
        /// dispatch.
        #[derive(Clone, Debug)]
        pub enum Any<S: Store> {
            $(
                #[doc = concat!("A [`", stringify!($rule), "`].")]
                $variant(S::Of<$rule>),
            )*
        }

        impl<S: Store> Any<S> {
            /// Decides on an event at `now` in the state at `at`; see [`Store::take`].
            #[inline]
            pub fn take_at(&mut self, at: S::At, now: Timestamp, cost: u64, force: bool) -> Decision {
                match self { $(Any::$variant(of) => S::take(of, at, now, cost, force),)* }
            }
        }
    };
}

use super::{FixedWindow, Gcra, LeakyQueue, SlidingCounter, SlidingLog, TokenBucket};

limiters! {
    FixedWindow => FixedWindow,
    SlidingLog => SlidingLog,
    SlidingCounter => SlidingCounter,
    TokenBucket => TokenBucket,
    Gcra => Gcra,
    LeakyQueue => LeakyQueue,
}

impl serde::Serialize for Algorithm {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

#[cfg(feature = "cli")]
impl clap::ValueEnum for Algorithm {
    fn value_variants<'a>() -> &'a [Algorithm] {
        &Algorithm::ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.name()).help(self.help()))
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
}

/// Any one of the limiters, alone.
pub type AnyLimiter = Any<Alone>;

impl Algorithm {
    /// Returns a new limiter of this kind. Algorithms without a burst ignore `burst`.
    pub fn build(self, rate: Rate, burst: NonZeroU64) -> AnyLimiter {
        self.make::<Alone>(rate, burst, &())
    }
}

impl super::Limiter for AnyLimiter {
    #[inline]
    fn take(&mut self, now: Timestamp, cost: u64, force: bool) -> Decision {
        self.take_at((), now, cost, force)
    }
}
