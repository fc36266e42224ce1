//! The notes a command says of its input on stderr: its own choice of input, and what its
//! reading found (the engine's notes), a line each.

use std::io::Write;

use super::config::Input;
use super::diagnostics::diagnostics;
use crate::input::catalog::ReadStats;

/// Prints notes about the input, and what reading left out, on stderr.
pub(crate) fn notes(input: &Input, stats: &ReadStats) {
    say_notes(input, &crate::engine::notes::notes(&input.source, &input.read, stats));
}

/// Writes the input's own note, if any, then `notes`, each on a line of stderr.
pub(crate) fn say_notes(input: &Input, notes: &[String]) {
    // A note that stderr cannot take is lost; the data and the exit code are not.
    let mut err = diagnostics();
    for note in input.note.iter().copied().chain(notes.iter().map(String::as_str)) {
        let _ = writeln!(err, "ratelimit: note: {note}");
    }
}
