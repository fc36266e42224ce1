//! Replays recorded event catalogs through rate limiters, on the events' own clock.

pub mod catalog;
pub mod cli;
mod cmd;
pub mod config;
pub mod curve;
pub mod curve_svg;
pub mod decimal;
pub mod etas;
pub mod limiter;
pub mod message;
pub mod min_bucket;
pub mod outfile;
pub mod output;
pub mod plot;
pub mod progress;
pub mod promise;
pub mod rate;
pub mod remote;
pub mod replay;
pub mod report;
pub mod sample;
pub mod svg;
pub mod time;
pub mod usgs;
pub mod window;

pub use cmd::run;
