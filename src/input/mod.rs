//! Reading catalogs: CSV rows to event times and keys, and the bundled sample.

pub mod catalog;
#[cfg(unix)]
mod chunked;
pub mod event;
pub mod format;
pub mod keys;
pub mod sample;
#[cfg(unix)]
mod scan;
