//! Exact rate limiters, and the tools to size them on recorded events.
//!
//! The limiters ([`limiter`]) decide each event at a time they are given, never reading a
//! clock, with integers only: times are whole microseconds ([`units::time::Timestamp`])
//! and rates are N events per period P ([`units::rate::Rate`]). The sizing functions
//! ([`sizing`]) find the smallest token bucket that loses nothing at a rate, the whole
//! burst-rate curve, and the smallest rate for a burst. The catalog reader ([`input`])
//! feeds a CSV catalog's events to them in time order, and [`synth`] makes synthetic ones.
//!
//! ```
//! use std::num::NonZeroU64;
//!
//! use ratelimit_replay::limiter::{Gcra, Limiter};
//! use ratelimit_replay::units::rate::Rate;
//! use ratelimit_replay::units::time::Timestamp;
//!
//! // 5 an hour, with a burst of 5: five pass at once, the sixth waits for 12 minutes.
//! let rate: Rate = "5/h".parse()?;
//! let mut gcra = Gcra::new(rate, NonZeroU64::new(5).unwrap());
//! let at = |minutes: i64| Timestamp::from_micros(minutes * 60_000_000).unwrap();
//! let passed: Vec<bool> = [0, 0, 0, 0, 0, 0, 12].iter().map(|&m| gcra.admit(at(m))).collect();
//! assert_eq!(passed, [true, true, true, true, true, false, true]);
//! # Ok::<(), ratelimit_replay::units::rate::RateError>(())
//! ```
//!
//! The `ratelimit` command, behind the default feature `cli`, replays catalogs through
//! these limiters, in memory or in Redis, and reports what they promised and did.

#![warn(missing_docs)]

pub use ratelimit_core::{limiter, settle, sizing};
pub use ratelimit_input as input;
pub use ratelimit_input::units;

pub mod sample;
pub mod synth;

#[cfg(feature = "cli")]
pub(crate) mod message;

#[cfg(feature = "cli")]
pub(crate) mod cli;
#[cfg(feature = "cli")]
pub(crate) mod cmd;
#[cfg(feature = "cli")]
pub(crate) use ratelimit_engine as engine;
#[cfg(feature = "cli")]
pub(crate) mod render;
#[cfg(feature = "cli")]
pub(crate) use ratelimit_engine::{policy_report, report};

#[cfg(feature = "cli")]
pub use cmd::{error_line, run};
