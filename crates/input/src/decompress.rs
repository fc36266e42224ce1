//! Opening a file that may be compressed: gzip and Zstandard are known by their magic
//! bytes, whatever the file is called, and read through their decoders.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use super::error::ReadError;

/// How a file's bytes are compressed, from its first bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Compression {
    /// Not compressed, or in no format known here.
    None,
    /// gzip (`1f 8b`), one member or several, as `cat a.gz b.gz` makes.
    Gzip,
    /// Zstandard (`28 b5 2f fd`).
    Zstd,
}

impl Compression {
    /// Returns the compression a file's first bytes say, leaving it at its start.
    pub(crate) fn of(file: &mut File) -> io::Result<Compression> {
        let mut magic = [0u8; 4];
        let mut read = 0;
        while read < magic.len() {
            match file.read(&mut magic[read..])? {
                0 => break,
                n => read += n,
            }
        }
        file.seek(SeekFrom::Start(0))?;
        Ok(match &magic[..read] {
            [0x1f, 0x8b, ..] => Compression::Gzip,
            [0x28, 0xb5, 0x2f, 0xfd] => Compression::Zstd,
            _ => Compression::None,
        })
    }
}

/// Returns a reader of `file`'s bytes as they were before `compression`.
pub(crate) fn decoded(file: File, compression: Compression) -> io::Result<Box<dyn Read + Send>> {
    match compression {
        Compression::None => Ok(Box::new(file)),
        #[cfg(feature = "compressed")]
        Compression::Gzip => {
            Ok(Box::new(flate2::read::MultiGzDecoder::new(io::BufReader::new(file))))
        }
        #[cfg(feature = "compressed")]
        Compression::Zstd => Ok(Box::new(zstd::stream::read::Decoder::new(file)?)),
        #[cfg(not(feature = "compressed"))]
        _ => Err(io::Error::other("is compressed, and this build reads no compressed input")),
    }
}

/// Opens a file for reading, decompressed if it is: a regular file is known by its first
/// bytes; a FIFO or a device is read as it comes, unlooked at.
pub(crate) fn open_decoded(path: &Path) -> Result<Box<dyn Read + Send>, ReadError> {
    let io = |error| ReadError::Io { name: path.display().to_string(), error };
    let mut file = File::open(path).map_err(io)?;
    let compression = match file.metadata().is_ok_and(|m| m.is_file()) {
        true => Compression::of(&mut file).map_err(io)?,
        false => Compression::None,
    };
    decoded(file, compression).map_err(io)
}

/// Opens a regular file and reads it decompressed; `None` if it is not a regular file
/// (a FIFO or a device, which looking at would consume).
pub(crate) fn open_regular(path: &Path) -> Option<Box<dyn Read + Send>> {
    if !std::fs::metadata(path).ok()?.is_file() {
        return None;
    }
    open_decoded(path).ok()
}
