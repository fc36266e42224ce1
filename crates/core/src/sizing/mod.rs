//! Sizing figures: the busiest window, the smallest lossless bucket and the burst-rate curve.

pub mod curve;
pub mod curve_summary;
pub mod many_rates;
pub mod merge;
pub mod min_bucket;
pub mod quantile;
pub mod window;
