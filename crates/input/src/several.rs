//! Several files read as one catalog, in the order given: each with its own name, lines and
//! document, opened one at a time, a CSV's repeated header left out.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use super::decompress::{Compression, decoded};
use super::error::{ReadError, Result, layout};
#[cfg(test)]
use super::format::InputFormat;
use super::options::ReadOptions;
use super::reading::Reading;
#[cfg(test)]
use crate::units::{layout::TimeLayout, time::TimeFormat};

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

/// Returns a reading of `paths`, one after the other, each file's bytes given by `open`.
pub(super) fn reading<'a, R: Read>(
    paths: &[PathBuf],
    options: &'a ReadOptions,
    open: impl FnMut(&Path) -> Result<R> + Send + 'a,
) -> Result<Reading<'a, R>> {
    let mut later = Later::new(paths, open);
    let Some((name, first)) = later.next()? else {
        return Err(layout("no files", "several files were asked for, and none given".into()));
    };
    Ok(Reading::new(first, name, options, None)?.then(later))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The times of the events read from files named for their texts, or the error.
    fn times(
        texts: &[&'static str],
        options: &ReadOptions,
    ) -> std::result::Result<Vec<i64>, String> {
        let paths: Vec<PathBuf> =
            (0..texts.len()).map(|n| PathBuf::from(format!("f{n}"))).collect();
        let open = |path: &Path| {
            let n: usize = path.to_str().unwrap()[1..].parse().unwrap();
            Ok(texts[n].as_bytes())
        };
        let mut pass = reading(&paths, options, open).map_err(|e| e.to_string())?;
        let mut found = Vec::new();
        while let Some(event) = pass.next_event().map_err(|e| e.to_string())? {
            found.push(event.time.as_micros() / 1_000_000);
        }
        Ok(found)
    }

    #[test]
    fn each_file_is_read_with_its_own_lines_and_a_repeated_header_left_out() {
        let csv =
            ReadOptions { time_format: TimeLayout::Named(TimeFormat::UnixS), ..ReadOptions::new() };
        // The header repeated is left out; a later file without one is all rows.
        assert_eq!(times(&["time\n1\n", "time\n2\n", "3\n"], &csv), Ok(vec![1, 2, 3]));
        // An empty first file: the next one's first line is the header.
        assert_eq!(times(&["", "time\n4\n"], &csv), Ok(vec![4]));
        // Without a header, no first line is left out.
        let bare = ReadOptions { headers: false, time_column: "1".into(), ..csv.clone() };
        assert_eq!(times(&["5\n", "5\n"], &bare), Ok(vec![5, 5]));
        // An error names the later file and its own line.
        assert_eq!(
            times(&["time\n1\n", "time\n2\nx\n"], &csv),
            Err("f1: line 3, field `time`: \"x\" is not a Unix epoch number (see --time-format)"
                .into())
        );
        // JSON Lines has no header: the same first line twice is two events.
        let jsonl = ReadOptions { format: InputFormat::Jsonl, ..csv.clone() };
        assert_eq!(times(&["{\"time\":7}\n", "{\"time\":7}\n"], &jsonl), Ok(vec![7, 7]));
        // Each GeoJSON file is a collection of its own.
        let geojson = ReadOptions {
            format: InputFormat::Geojson,
            time_column: "properties.time".into(),
            ..csv
        };
        let doc = "{\"features\":[{\"properties\":{\"time\":8}}]}";
        assert_eq!(times(&[doc, doc], &geojson), Ok(vec![8, 8]));
    }
}
