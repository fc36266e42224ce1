//! Units of time and rate: the core's exact timestamps, spans, decimals and N-per-P rates,
//! and how catalogs write times.

pub use ratelimit_core::units::{decimal, rate};

pub mod layout;
pub mod time;
