//! Rendering results: their exporters (table, JSON, CSV), SVG pictures, output files and
//! progress.

pub mod curve_svg;
pub mod export;
pub mod plot;
pub mod progress;
pub mod svg;

// Where an output goes: its own crate, which the Python package writes through too.
pub use ratelimit_output as outfile;
