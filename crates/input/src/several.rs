//! Several files read as one catalog, in the order given: each with its own name, lines and
//! document, opened one at a time, a CSV's repeated header left out.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use super::decompress::{Compression, decoded};
use super::error::{ReadError, Result};

/// Opens a file for reading, decompressed if it is: a regular file is known by its first
/// bytes; a FIFO or a device is read as it comes.
pub(super) fn open_decoded(path: &Path) -> Result<Box<dyn Read + Send>> {
    let io = |error| ReadError::Io { name: path.display().to_string(), error };
    let mut file = File::open(path).map_err(io)?;
    let compression = match file.metadata().is_ok_and(|m| m.is_file()) {
        true => Compression::of(&mut file).map_err(io)?,
        false => Compression::None,
    };
    decoded(file, compression).map_err(io)
}

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
