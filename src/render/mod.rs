//! Rendering results: their exporters (table, JSON, CSV), SVG pictures, output files and
//! progress.

pub mod curve_svg;
pub mod decisions;
pub mod export;
pub mod html;
pub mod outfile;
pub mod plot;
pub mod progress;
pub mod svg;
