//! Replays recorded event catalogs through rate limiters, on the events' own clock.

pub mod cli;
mod cmd;
pub mod engine;
pub mod input;
pub mod limiter;
pub mod message;
pub mod render;
pub mod report;
pub mod sizing;
pub mod synth;
pub mod units;

pub use cmd::run;
