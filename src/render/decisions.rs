//! Each row's decision, kept for a program that runs `replay` itself ([`crate::embed`]), as
//! [`outfile::captured`](super::outfile::captured) keeps what it would print.

use std::cell::RefCell;

use crate::input::catalog::{Rows, Source};

thread_local! {
    /// Each kept row's decisions, while a command that keeps them runs on this thread.
    static DECISIONS: RefCell<Option<Decisions>> = const { RefCell::new(None) };
}

/// Each row's decision: for a table handed over, one per row of it, `None` for a row that
/// made no event (left out by a filter); for a file, one per event, in the order of its
/// rows. With layers, each layer's too.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Decisions {
    /// Whether each row passed.
    pub passed: Vec<Option<bool>>,
    /// With layers, for each layer: whether it admitted each row (a row it admitted may
    /// still be dropped by another).
    pub layers: Vec<Vec<Option<bool>>>,
}

/// Runs `command`, and returns what it gives and the decisions it kept on this thread.
pub(crate) fn kept<T>(command: impl FnOnce() -> T) -> (T, Option<Decisions>) {
    DECISIONS.with(|kept| *kept.borrow_mut() = None);
    let ran = command();
    (ran, DECISIONS.with(|kept| kept.borrow_mut().take()))
}

/// Keeps each row's decision, `trace` holding one for each row in the rows' order, for the
/// program that runs this thread's command.
pub(crate) fn keep_in_order(trace: &[bool]) {
    let passed = trace.iter().map(|&passed| Some(passed)).collect();
    DECISIONS.with(|kept| *kept.borrow_mut() = Some(Decisions { passed, layers: Vec::new() }));
}

/// Keeps each row's decision, `trace` holding one for each of `rows` in time order, for
/// the program that runs this thread's command.
pub(crate) fn keep(rows: &Rows, trace: &[bool], source: &Source) {
    let passed = in_row_order(rows, trace, source);
    DECISIONS.with(|kept| *kept.borrow_mut() = Some(Decisions { passed, layers: Vec::new() }));
}

/// Keeps each row's decision and each of `layers` layers' as [`keep`] does, `refusals`
/// holding the layers that refused each of `rows` (bit n for layer n).
pub(crate) fn keep_layers(
    rows: &Rows,
    trace: &[bool],
    refusals: &[u32],
    layers: usize,
    source: &Source,
) {
    let passed = in_row_order(rows, trace, source);
    let refusals = in_row_order(rows, refusals, source);
    let layers = (0..layers)
        .map(|n| refusals.iter().map(|r| r.map(|refused| refused >> n & 1 == 0)).collect())
        .collect();
    DECISIONS.with(|kept| *kept.borrow_mut() = Some(Decisions { passed, layers }));
}

/// Puts `values`, one for each of `rows` in time order, in the rows' order: for a table,
/// one for each of its rows, `None` for one that made no event; for a file, one for each
/// event.
pub(crate) fn in_row_order<T: Copy>(rows: &Rows, values: &[T], source: &Source) -> Vec<Option<T>> {
    match source {
        // A table's rows are kept as their numbers.
        #[cfg(feature = "arrow")]
        Source::Arrow(data) => {
            let mut each = vec![None; usize::try_from(data.rows()).unwrap_or(0)];
            for ((_, text), &value) in rows.iter().zip(values) {
                let row = std::str::from_utf8(text).ok().and_then(|t| t.parse::<usize>().ok());
                if let Some(slot) = row.and_then(|row| each.get_mut(row)) {
                    *slot = Some(value);
                }
            }
            each
        }
        // A file's rows are stored in the order they came.
        _ => {
            let _ = source;
            let mut each: Vec<(usize, T)> = rows.places().zip(values.iter().copied()).collect();
            each.sort_unstable_by_key(|&(place, _)| place);
            each.into_iter().map(|(_, value)| Some(value)).collect()
        }
    }
}
