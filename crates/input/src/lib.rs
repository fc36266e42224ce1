//! Reading event catalogs: rows to events (a time, a key and a cost), in time order.
//!
//! CSV, TSV, JSON Lines, GeoJSON, access logs and Parquet, each turned into
//! [`Event`](event::Event)s that [`catalog::read_events`] feeds to a [`Sink`](sink::Sink),
//! and the times those catalogs write ([`units::time`], [`units::layout`]).

#![warn(missing_docs)]

#[cfg(all(unix, feature = "arrow"))]
mod arrow;
#[cfg(all(unix, feature = "arrow"))]
mod arrow_data;
#[cfg(all(unix, feature = "arrow"))]
mod arrow_order;
pub mod asked;
pub mod bounded;
pub mod catalog;
#[cfg(unix)]
mod chunked;
mod clf;
#[cfg(all(unix, any(feature = "parquet", feature = "arrow")))]
mod columnar;
pub mod cost;
pub mod csv_line;
mod decompress;
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
pub mod message;
pub mod no_events;
mod options;
#[cfg(all(unix, feature = "parquet"))]
mod parquet;
#[cfg(unix)]
mod piece;
#[cfg(unix)]
mod pipe;
mod pipeline;
pub mod progress;
mod reading;
pub mod requests;
mod row;
#[cfg(unix)]
mod scan;
mod several;
mod sink;
mod sniff;
mod sorted;
mod source;
mod stats;
mod streaming;
mod ties;
mod timeline;
pub mod units;
mod values;
