//! Each row's decision, for a program that reads them beside its rows: a data frame's
//! column of whether each row passed.

use crate::input::catalog::{Rows, Source};

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

impl Decisions {
    /// The decisions of `trace`, one for each row in the rows' order.
    pub fn in_order(trace: &[bool]) -> Decisions {
        let passed = trace.iter().map(|&passed| Some(passed)).collect();
        Decisions { passed, layers: Vec::new() }
    }

    /// The decisions of `trace`, one for each of `rows` in time order, put in the rows'
    /// order.
    pub fn of_rows(rows: &Rows, trace: &[bool], source: &Source) -> Decisions {
        Decisions { passed: in_row_order(rows, trace, source), layers: Vec::new() }
    }

    /// The decisions of `trace` and of each of `layers` layers, as
    /// [`of_rows`](Decisions::of_rows) puts them, `refusals` holding the layers that
    /// refused each of `rows` (bit n for layer n).
    pub fn of_layers(
        rows: &Rows,
        (trace, refusals): (&[bool], &[u32]),
        layers: usize,
        source: &Source,
    ) -> Decisions {
        let passed = in_row_order(rows, trace, source);
        let refusals = in_row_order(rows, refusals, source);
        let layers = (0..layers)
            .map(|n| refusals.iter().map(|r| r.map(|refused| refused >> n & 1 == 0)).collect())
            .collect();
        Decisions { passed, layers }
    }
}

/// Puts `values`, one for each of `rows` in time order, in the rows' order: for a table,
/// one for each of its rows, `None` for one that made no event; for a file, one for each
/// event.
pub fn in_row_order<T: Copy>(rows: &Rows, values: &[T], source: &Source) -> Vec<Option<T>> {
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
