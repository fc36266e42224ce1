//! Each row's decision, kept for a program that runs `replay` itself ([`crate::embed`]), as
//! [`outfile::captured`](super::outfile::captured) keeps what it would print.

use std::cell::RefCell;

thread_local! {
    /// Each kept row's decisions, while a command that keeps them runs on this thread.
    static DECISIONS: RefCell<Option<Decisions>> = const { RefCell::new(None) };
}

pub use crate::engine::decisions::Decisions;

/// Runs `command`, and returns what it gives and the decisions it kept on this thread.
pub(crate) fn kept<T>(command: impl FnOnce() -> T) -> (T, Option<Decisions>) {
    DECISIONS.with(|kept| *kept.borrow_mut() = None);
    let ran = command();
    (ran, DECISIONS.with(|kept| kept.borrow_mut().take()))
}

/// Keeps `decisions` for the program that runs this thread's command.
pub(crate) fn keep(decisions: Decisions) {
    DECISIONS.with(|kept| *kept.borrow_mut() = Some(decisions));
}
