//! Reading catalogs: CSV rows to event times and keys, and the bundled sample.

pub mod catalog;
#[cfg(unix)]
mod chunked;
mod emit;
mod error;
pub mod event;
pub mod format;
pub mod keys;
mod options;
mod pipeline;
mod reading;
mod row;
pub mod sample;
#[cfg(unix)]
mod scan;
mod sink;
mod sorted;
mod source;
mod stats;
mod streaming;
