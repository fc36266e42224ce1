//! Each row's decision, kept for a program that runs `replay` itself ([`super::embed`]).

use std::cell::RefCell;

use crate::input::catalog::{Rows, Source};

thread_local! {
    /// Each kept row's decisions, while a command that keeps them runs on this thread.
    static DECISIONS: RefCell<Option<Decisions>> = const { RefCell::new(None) };
}

/// Each row's decision: for a table handed over, one per row of it, `None` for a row that
/// made no event (left out by a filter); for a file, one per event, in the order of its
/// rows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Decisions(pub Vec<Option<bool>>);

/// Runs `command`, and returns what it gives and the decisions it kept on this thread.
pub(super) fn kept<T>(command: impl FnOnce() -> T) -> (T, Option<Decisions>) {
    DECISIONS.with(|kept| *kept.borrow_mut() = None);
    let ran = command();
    (ran, DECISIONS.with(|kept| kept.borrow_mut().take()))
}

/// Keeps each row's decision, `trace` holding one for each row in the rows' order, for the
/// program that runs this thread's command.
pub(crate) fn keep_in_order(trace: &[bool]) {
    let decisions = trace.iter().map(|&passed| Some(passed)).collect();
    DECISIONS.with(|kept| *kept.borrow_mut() = Some(Decisions(decisions)));
}

/// Keeps each row's decision, `trace` holding one for each of `rows` in time order, for
/// the program that runs this thread's command.
pub(crate) fn keep(rows: &Rows, trace: &[bool], source: &Source) {
    let decisions = match source {
        // A table's rows are kept as their numbers.
        #[cfg(feature = "arrow")]
        Source::Arrow(data) => {
            let mut each = vec![None; usize::try_from(data.rows()).unwrap_or(0)];
            for ((_, text), &passed) in rows.iter().zip(trace) {
                let row = std::str::from_utf8(text).ok().and_then(|t| t.parse::<usize>().ok());
                if let Some(slot) = row.and_then(|row| each.get_mut(row)) {
                    *slot = Some(passed);
                }
            }
            each
        }
        // A file's rows are stored in the order they came.
        _ => {
            let mut each: Vec<(usize, bool)> =
                rows.places().zip(trace).map(|(place, &passed)| (place, passed)).collect();
            each.sort_unstable_by_key(|&(place, _)| place);
            each.into_iter().map(|(_, passed)| Some(passed)).collect()
        }
    };
    DECISIONS.with(|kept| *kept.borrow_mut() = Some(Decisions(decisions)));
}
