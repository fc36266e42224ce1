//! The core's exact values, and times as catalogs write them: RFC 3339, epoch numbers and
//! strftime layouts, read exactly.

pub use ratelimit_core::units::{decimal, rate};

pub mod layout;
pub mod time;
