//! The bundled sample: a small synthetic catalog, made by `synth` and built into the binary.

use crate::input::catalog::Source;

/// The arguments to `ratelimit` that made `data/sample.csv`: six weeks of background
/// around a planted M8.8 at the time of the 2025 Kamchatka earthquake.
pub const ARGS: [&str; 9] = [
    "synth",
    "--seed",
    "2025",
    "--start",
    "2025-07-01T00:00:00Z",
    "--days",
    "42",
    "--mainshock",
    "8.8@2025-07-29T23:24:52.483Z",
];

/// The sample catalog.
pub const CSV: &[u8] = include_bytes!("../data/sample.csv");

/// The note on stderr when the sample is used because no input was given.
pub const NOTE: &str = "no input given: replaying the bundled sample, a synthetic catalog \
                        (--sample asks for it; give a FILE or pipe one in for real data)";

/// Returns the sample as a source.
pub fn source() -> Source {
    Source::Embedded { name: "<sample>", bytes: CSV }
}
