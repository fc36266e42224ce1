//! Exact rate limiters, the policies that combine them, and the sizing of them on recorded
//! events.
//!
//! The limiters ([`limiter`]) decide each event at a time they are given, never reading a
//! clock, with integers only: times are whole microseconds ([`units::time::Timestamp`])
//! and rates are N events per period P ([`units::rate::Rate`]). A [`policy`] runs limits
//! side by side or as layers, all or nothing, each key with its own state. The sizing
//! functions ([`sizing`]) find the smallest token bucket that loses nothing at a rate, the
//! whole burst-rate curve, and the smallest rate for a burst.
//!
//! Decide a `Vec` of events through a policy, and find the smallest lossless bucket:
//!
//! ```
//! use std::num::NonZeroU64;
//!
//! use ratelimit_core::event::Event;
//! use ratelimit_core::limiter::Algorithm;
//! use ratelimit_core::policy::{Limits, Policy, Settings};
//! use ratelimit_core::sizing::min_bucket::MinBucketFinder;
//! use ratelimit_core::units::time::{Span, Timestamp};
//!
//! // A token bucket of 5 an hour, 5 at once, over seven events (minutes from the start).
//! let rate = "5/h".parse()?;
//! let bucket = Settings {
//!     algorithm: Algorithm::TokenBucket,
//!     rate,
//!     burst: NonZeroU64::new(5).unwrap(),
//!     window: Span::from_micros(3_600_000_000).unwrap(),
//!     params: Algorithm::TokenBucket.default_params(),
//! };
//! let events: Vec<Event> = [0, 0, 1, 2, 3, 4, 15]
//!     .iter()
//!     .map(|&minute| Event::new(Timestamp::from_micros(minute * 60_000_000).unwrap(), 0))
//!     .collect();
//! let mut limits = Limits::new(Policy::SideBySide(&[bucket]))?;
//! let passed = events.iter().filter(|&&event| limits.decide(event).passed()).count();
//! // The bucket empties in the first minutes; a token comes back every 12 minutes.
//! let mut finder = MinBucketFinder::new(rate);
//! events.iter().for_each(|event| finder.push(event.time));
//! assert_eq!((passed, finder.result().min_bucket), (6, 6));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Or one limiter alone:
//!
//! ```
//! use std::num::NonZeroU64;
//!
//! use ratelimit_core::limiter::{Gcra, Limiter};
//! use ratelimit_core::units::rate::Rate;
//! use ratelimit_core::units::time::Timestamp;
//!
//! // 5 an hour, with a burst of 5: five pass at once, the sixth waits for 12 minutes.
//! let rate: Rate = "5/h".parse()?;
//! let mut gcra = Gcra::new(rate, NonZeroU64::new(5).unwrap());
//! let at = |minutes: i64| Timestamp::from_micros(minutes * 60_000_000).unwrap();
//! let passed: Vec<bool> = [0, 0, 0, 0, 0, 0, 12].iter().map(|&m| gcra.admit(at(m))).collect();
//! assert_eq!(passed, [true, true, true, true, true, false, true]);
//! # Ok::<(), ratelimit_core::units::rate::RateError>(())
//! ```
//!
//! Features: `serde` serializes the units, the limiters' names and what sizing finds;
//! `schema` adds their JSON Schemas. Neither is on by default.

#![warn(missing_docs)]

/// Implements `schemars::JsonSchema` for a value written as a string: its name, and the
/// schema's other keywords (a description, a format).
#[cfg(feature = "schema")]
macro_rules! string_schema {
    ($type:ty, $($keyword:tt)*) => {
        impl schemars::JsonSchema for $type {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($type).into()
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({ "type": "string", $($keyword)* })
            }
        }
    };
}

pub mod event;
pub mod limiter;
pub mod policy;
pub mod settle;
pub mod sizing;
pub mod units;

/// The crate's README, whose example (also the main README's, as a test there checks) is
/// compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExample;
