//! Diagnostics that are not errors (notes, summaries, reports on stderr), which `-q` silences.
//!
//! As ripgrep's `messages`, one flag for the whole process: set once, from the command
//! line, before anything is written, and read wherever a note is.

use std::io::{self, IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};

static QUIET: AtomicBool = AtomicBool::new(false);

/// Says whether notes, summaries and reports on stderr are silenced (`-q`).
pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

/// Returns where a diagnostic that is not an error goes: stderr, or nowhere with `-q`.
pub fn diagnostics() -> Box<dyn Write> {
    if QUIET.load(Ordering::Relaxed) { Box::new(io::sink()) } else { Box::new(io::stderr().lock()) }
}

/// Whether a progress bar may be drawn: on a terminal, unless `-q`.
pub fn progress() -> bool {
    !QUIET.load(Ordering::Relaxed) && io::stderr().is_terminal()
}
