//! Reading catalogs: rows to events (a time, a key and a cost), and the bundled sample.

pub mod bounded;
pub mod catalog;
#[cfg(unix)]
mod chunked;
mod clf;
pub mod cost;
mod emit;
mod error;
pub mod event;
pub mod filter;
pub mod format;
pub mod header;
mod instants;
mod json;
#[cfg(unix)]
mod json_pieces;
pub mod keys;
pub mod log_format;
pub mod no_events;
mod options;
#[cfg(all(unix, feature = "parquet"))]
mod parquet;
#[cfg(unix)]
mod piece;
#[cfg(unix)]
mod pipe;
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
mod timeline;
mod values;
