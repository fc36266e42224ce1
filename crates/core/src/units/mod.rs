//! Units of time and rate: exact timestamps, spans, decimals and N-per-P rates.

pub mod decimal;
pub mod rate;
pub mod time;
