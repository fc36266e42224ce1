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

thread_local! {
    /// The diagnostics a command run on this thread wrote, while [`noted`] runs it.
    static NOTED: std::cell::RefCell<Option<Vec<u8>>> = const { std::cell::RefCell::new(None) };
}

/// Returns where a diagnostic that is not an error goes: to [`noted`]'s caller while it
/// runs a command on this thread, else stderr, or nowhere with `-q`.
pub fn diagnostics() -> Box<dyn Write> {
    if NOTED.with(|noted| noted.borrow().is_some()) {
        return Box::new(Noted);
    }
    if QUIET.load(Ordering::Relaxed) { Box::new(io::sink()) } else { Box::new(io::stderr().lock()) }
}

/// Runs `command`, and returns what it gives and the diagnostics it wrote on this thread,
/// a line each, without the program's name or `note:`: for a program that runs a command
/// itself and tells its own user (Python, as warnings).
pub fn noted<T>(command: impl FnOnce() -> T) -> (T, Vec<String>) {
    NOTED.with(|noted| *noted.borrow_mut() = Some(Vec::new()));
    let ran = command();
    let text = NOTED.with(|noted| noted.borrow_mut().take()).unwrap_or_default();
    let lines = String::from_utf8_lossy(&text)
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| line.strip_prefix("ratelimit: ").unwrap_or(line))
        .map(|line| line.strip_prefix("note: ").unwrap_or(line).to_owned())
        .collect();
    (ran, lines)
}

thread_local! {
    /// What a caller running a command on this thread stops its reads with ([`stoppable`]).
    static STOP: std::cell::RefCell<crate::input::progress::Stop> = std::cell::RefCell::default();
}

/// Runs `command` with its reads stopped when `stop` says: for a program that runs a
/// command itself, on a thread of its own, and stops it at its user's Ctrl-C.
pub fn stoppable<T>(stop: crate::input::progress::Stop, command: impl FnOnce() -> T) -> T {
    STOP.with(|current| *current.borrow_mut() = stop);
    let ran = command();
    STOP.with(|current| *current.borrow_mut() = Default::default());
    ran
}

/// The flag that stops the reads of a command run on this thread: never raised, unless
/// [`stoppable`] runs it.
pub fn stop() -> crate::input::progress::Stop {
    STOP.with(|current| current.borrow().clone())
}

/// What [`diagnostics`] writes to while [`noted`] runs a command.
struct Noted;

impl Write for Noted {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        NOTED.with(|noted| noted.borrow_mut().as_mut().map(|text| text.extend_from_slice(buf)));
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Whether a progress bar may be drawn: on a terminal, unless `-q`.
pub fn progress() -> bool {
    !QUIET.load(Ordering::Relaxed) && io::stderr().is_terminal()
}
