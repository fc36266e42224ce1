//! Where a catalog comes from, and opening it: once, or again from its start.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use super::decompress::{Compression, decoded, open_decoded, sniffed};
use super::error::{ReadError, Result, layout};
use super::options::ReadOptions;
use super::reading::Reading;
use crate::progress::{Measure, RawBytes};

/// Where a catalog comes from. More places may come: a match on it has a wildcard arm.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Source {
    /// Standard input.
    Stdin,
    /// A file, decompressed if it is gzip or Zstandard.
    Path(PathBuf),
    /// Several files read as one catalog, in the order given, each whole (its own lines and
    /// document) and decompressed if it is: a rotated log's files. Only a CSV or TSV with a
    /// header leaves out a later file's first line, when it repeats the first file's header.
    Files(Vec<PathBuf>),
    /// Bytes built into the program.
    Embedded {
        /// The name reports and messages use.
        name: &'static str,
        /// The catalog.
        bytes: &'static [u8],
    },
    /// Arrow record batches held in memory, read where they are.
    #[cfg(all(unix, feature = "arrow"))]
    Arrow(super::arrow_data::ArrowData),
}

/// The most files a folder or a pattern gives one input: each is opened in turn and named
/// in reports, and a folder of millions is no catalog.
pub(crate) const MAX_FILES: usize = 100_000;

impl Source {
    /// Returns the files `paths` name as one input, as DuckDB and polars read them: a
    /// folder gives its files (not those whose names start with `.` or `_`, as a Spark job
    /// leaves `_SUCCESS` and `.crc` files beside its parts), and a pattern that names no
    /// file (`logs/*.parquet`, quoted against the shell) the files it matches, each in
    /// order of name; any other path is itself. One file is a `Path`, more are `Files`.
    /// At most `MAX_FILES` (100,000); a folder or a pattern with none is an error.
    pub fn of_paths(paths: &[PathBuf]) -> Result<Source> {
        let mut files = Vec::new();
        for path in paths {
            let name = || path.display().to_string();
            let before = files.len();
            if path.is_dir() {
                let listed = std::fs::read_dir(path)
                    .map_err(|error| ReadError::Io { name: name(), error })?;
                let mut found = Vec::new();
                for entry in listed {
                    let entry = entry.map_err(|error| ReadError::Io { name: name(), error })?;
                    let hidden = entry.file_name().to_string_lossy().starts_with(['.', '_']);
                    if !hidden && entry.path().is_file() {
                        found.push(entry.path());
                    }
                    if found.len() > MAX_FILES {
                        break;
                    }
                }
                found.sort();
                files.extend(found);
            } else if !path.exists() && path.to_string_lossy().contains(['*', '?', '[']) {
                let pattern = path.to_string_lossy();
                let matched = glob::glob(&pattern)
                    .map_err(|e| layout(&name(), format!("not a pattern: {}", e.msg)))?;
                let mut found: Vec<PathBuf> = matched
                    .filter_map(Result::ok)
                    .filter(|p| p.is_file())
                    .take(MAX_FILES + 1)
                    .collect();
                found.sort();
                files.extend(found);
            } else {
                files.push(path.clone());
                continue;
            }
            if files.len() == before {
                let what = if path.is_dir() {
                    "a folder with no file"
                } else {
                    "a pattern that matches no file"
                };
                return Err(layout(&name(), what.into()));
            }
            if files.len() > MAX_FILES {
                return Err(layout(&name(), format!("more than {MAX_FILES} files make one input")));
            }
        }
        Ok(match <[PathBuf; 1]>::try_from(files) {
            Ok([one]) => Source::Path(one),
            Err(files) => Source::Files(files),
        })
    }

    /// Returns the name that messages and reports give the input.
    pub fn name(&self) -> String {
        match self {
            Source::Stdin => "<stdin>".into(),
            Source::Path(path) => path.display().to_string(),
            Source::Files(paths) => {
                paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(" + ")
            }
            Source::Embedded { name, .. } => (*name).into(),
            #[cfg(all(unix, feature = "arrow"))]
            Source::Arrow(data) => data.name().into(),
        }
    }

    /// Whether a second read of it reads it all again: regular files (compressed or not)
    /// and data in memory. Standard input, a FIFO or a device gives its bytes once, and
    /// opening a FIFO again would wait for a writer that may never come.
    pub fn can_read_again(&self) -> bool {
        let regular = |path: &PathBuf| std::fs::metadata(path).is_ok_and(|m| m.is_file());
        match self {
            Source::Path(path) => regular(path),
            Source::Files(paths) => paths.iter().all(regular),
            Source::Stdin => false,
            _ => true,
        }
    }

    /// Returns the name for a picture's title: a file's name without its directories.
    pub fn title(&self) -> String {
        match self {
            Source::Path(path) => {
                path.file_name().map_or_else(|| self.name(), |n| n.to_string_lossy().into())
            }
            _ => self.name(),
        }
    }
}

/// An opened input. Regular files and built-in bytes can be read again from the start;
/// anything else (a pipe, a FIFO, `<(...)`, a device) is read once, as it comes.
pub(super) enum Opened {
    File {
        file: File,
        start: u64,
    },
    /// A compressed regular file: read through its decoder, and again from its start by
    /// decoding it again; `raw` counts the bytes read off the disk.
    Decoded(PathBuf, RawBytes),
    /// Several files, read one after the other; again from the first if `again` (every
    /// one is a regular file); `raw` counts the bytes read off the disk.
    Files {
        paths: Vec<PathBuf>,
        again: bool,
        raw: RawBytes,
    },
    Once(Option<Box<dyn Read + Send>>),
    Bytes(&'static [u8]),
    #[cfg(all(unix, feature = "arrow"))]
    Arrow(super::arrow_data::ArrowData),
}

impl Opened {
    pub(super) fn open(source: &Source) -> Result<Opened> {
        Ok(match source {
            Source::Path(path) => {
                let name = || source.name();
                let mut file =
                    File::open(path).map_err(|error| ReadError::Io { name: name(), error })?;
                match file.metadata() {
                    Ok(meta) if meta.is_file() => {
                        match Compression::of(&mut file)
                            .map_err(|error| ReadError::Io { name: name(), error })?
                        {
                            Compression::None => Opened::File { file, start: 0 },
                            // Decompressed, it is read as a pipe is, and again by opening
                            // it again.
                            _ => Opened::Decoded(path.clone(), RawBytes::default()),
                        }
                    }
                    _ => Opened::Once(Some(Box::new(file))),
                }
            }
            Source::Files(paths) => {
                // Each is opened when its turn comes (a FIFO opened only to look would wait
                // for its writer, then lose it); one that is not there is said now.
                let mut again = true;
                for path in paths {
                    let meta = std::fs::metadata(path).map_err(|error| ReadError::Io {
                        name: path.display().to_string(),
                        error,
                    })?;
                    again &= meta.is_file();
                }
                Opened::Files { paths: paths.clone(), again, raw: RawBytes::default() }
            }
            Source::Stdin => {
                let io = |error| ReadError::Io { name: source.name(), error };
                match stdin_file() {
                    Some((mut file, start)) => match Compression::of(&mut file).map_err(io)? {
                        Compression::None => Opened::File { file, start },
                        // Standard input has no name to open again: it is read once.
                        compression => Opened::Once(Some(decoded(file, compression).map_err(io)?)),
                    },
                    None => Opened::Once(Some(sniffed(io::stdin()).map_err(io)?)),
                }
            }
            Source::Embedded { bytes, .. } => Opened::Bytes(bytes),
            #[cfg(all(unix, feature = "arrow"))]
            Source::Arrow(data) => Opened::Arrow(data.clone()),
        })
    }

    /// Returns the number of bytes to read, if it is known.
    pub(super) fn size(&self) -> Option<u64> {
        match self {
            Opened::File { file, start } => {
                file.metadata().ok().map(|m| m.len().saturating_sub(*start))
            }
            Opened::Once(_) | Opened::Decoded(..) | Opened::Files { .. } => None,
            // A slice's length fits in 64 bits on every platform Rust supports.
            Opened::Bytes(bytes) => Some(bytes.len() as u64),
            #[cfg(all(unix, feature = "arrow"))]
            Opened::Arrow(_) => None,
        }
    }

    /// Returns what a read's progress is measured against: the bytes to read, or for a
    /// compressed file or several, the bytes on the disk and what counts them as they are
    /// read (restarted with each read from the start).
    pub(super) fn measure(&self) -> Measure {
        let on_disk = |path: &PathBuf| std::fs::metadata(path).ok().map(|m| m.len());
        match self {
            Opened::Decoded(path, raw) => (on_disk(path), Some(raw.clone())),
            Opened::Files { paths, raw, .. } => {
                let sizes: Option<Vec<u64>> = paths.iter().map(on_disk).collect();
                (sizes.map(|sizes| sizes.iter().sum()), Some(raw.clone()))
            }
            _ => (self.size(), None),
        }
    }

    pub(super) fn can_rewind(&self) -> bool {
        match self {
            Opened::Once(_) => false,
            Opened::Files { again, .. } => *again,
            _ => true,
        }
    }

    /// Returns a reading of the input from its start, row by row on one thread.
    pub(super) fn reading<'a>(
        &'a mut self,
        source: &Source,
        options: &'a ReadOptions,
    ) -> Result<Reading<'a, Box<dyn Read + Send + 'a>>> {
        self.reading_through(source, options, |bytes| bytes)
    }

    /// Returns a reading of the input from its start, as [`reading`](Opened::reading)
    /// does, with each file's bytes read through `wrap`.
    pub(super) fn reading_through<'a, R: Read>(
        &'a mut self,
        source: &Source,
        options: &'a ReadOptions,
        wrap: impl Fn(Box<dyn Read + Send + 'a>) -> R + Send + 'a,
    ) -> Result<Reading<'a, R>> {
        let measure = self.measure();
        if let Opened::Files { paths, raw, .. } = self {
            raw.restart();
            let raw = raw.clone();
            let open = move |path: &Path| Ok(wrap(open_decoded(path, Some(&raw))?));
            return super::reading::several(paths, options, open, measure);
        }
        Reading::new(wrap(self.reader(source)?), source.name(), options, measure)
    }

    /// Returns a reader from the start of the input; what cannot rewind is read only once.
    pub(super) fn reader(&mut self, source: &Source) -> Result<Box<dyn Read + Send + '_>> {
        Ok(match self {
            Opened::File { file, start } => {
                file.seek(SeekFrom::Start(*start))
                    .map_err(|error| ReadError::Rewind { name: source.name(), error })?;
                Box::new(&*file)
            }
            Opened::Decoded(path, raw) => {
                raw.restart();
                open_decoded(path, Some(raw))?
            }
            Opened::Files { .. } => {
                return Err(layout(&source.name(), "several files are read one by one".into()));
            }
            Opened::Once(reader) => reader
                .take()
                .ok_or_else(|| layout(&source.name(), "cannot be read a second time".into()))?,
            Opened::Bytes(bytes) => Box::new(*bytes),
            #[cfg(all(unix, feature = "arrow"))]
            Opened::Arrow(_) => {
                return Err(layout(&source.name(), "Arrow data has no bytes to read".into()));
            }
        })
    }
}

/// Returns standard input as a file and its current offset, if it is a regular file.
fn stdin_file() -> Option<(File, u64)> {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        let mut file = File::from(io::stdin().as_fd().try_clone_to_owned().ok()?);
        if !file.metadata().ok()?.is_file() {
            return None;
        }
        let start = file.stream_position().ok()?;
        Some((file, start))
    }
    #[cfg(not(unix))]
    None
}
