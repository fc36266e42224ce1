//! Several files read as one catalog, in the order given: each with its own name, lines and
//! document, opened one at a time, a CSV's repeated header left out.

use std::path::{Path, PathBuf};

use super::error::Result;

/// Opens a file of several: its bytes, or why they cannot be had.
type Open<'a, R> = Box<dyn FnMut(&Path) -> Result<R> + Send + 'a>;

/// The files a reading goes on to when the one before ends, each opened only then, so
/// that thousands of rotated files never hold their decoders at once.
pub(super) struct Later<'a, R> {
    paths: std::collections::VecDeque<PathBuf>,
    open: Open<'a, R>,
}

impl<'a, R> Later<'a, R> {
    /// Returns `paths`, each to be opened by `open` when its turn comes.
    pub(super) fn new(
        paths: &[PathBuf],
        open: impl FnMut(&Path) -> Result<R> + Send + 'a,
    ) -> Later<'a, R> {
        Later { paths: paths.iter().cloned().collect(), open: Box::new(open) }
    }

    /// Opens the next file: its name and its bytes; `None` after the last.
    pub(super) fn next(&mut self) -> Result<Option<(String, R)>> {
        let Some(path) = self.paths.pop_front() else { return Ok(None) };
        Ok(Some((path.display().to_string(), (self.open)(&path)?)))
    }
}
