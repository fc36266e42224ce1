//! Rendering results: tables, JSON and CSV, SVG pictures, output files and progress.

pub mod curve_svg;
pub mod formats;
pub mod outfile;
pub mod plot;
pub mod progress;
pub mod svg;
