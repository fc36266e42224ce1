//! Opening a file that may be compressed: gzip and Zstandard are known by their magic
//! bytes, whatever the file is called, and read through their decoders; xz and bzip2 are
//! known, and refused in words.

use std::fs::File;
use std::io::{self, Cursor, Read, Seek, SeekFrom};
use std::path::Path;

use super::error::ReadError;
use crate::progress::RawBytes;

/// How a file's bytes are compressed, from its first bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Compression {
    /// Not compressed, or in no format known here.
    None,
    /// gzip (`1f 8b`), one member or several, as `cat a.gz b.gz` makes.
    Gzip,
    /// Zstandard (`28 b5 2f fd`).
    Zstd,
    /// xz (`fd 37 7a 58 5a 00`) or bzip2 (`BZh`, a block size, a block's magic): known, so
    /// that they are refused in words rather than read as text. The tool's name.
    Unread(&'static str),
}

/// The most first bytes that tell a compression.
const MAGIC: usize = 10;

impl Compression {
    /// Returns the compression that an input's first bytes say.
    fn of_magic(magic: &[u8]) -> Compression {
        match magic {
            [0x1f, 0x8b, ..] => Compression::Gzip,
            [0x28, 0xb5, 0x2f, 0xfd, ..] => Compression::Zstd,
            [0xfd, b'7', b'z', b'X', b'Z', 0, ..] => Compression::Unread("xz"),
            [b'B', b'Z', b'h', b'1'..=b'9', 0x31, 0x41, 0x59, 0x26, 0x53, 0x59]
            | [b'B', b'Z', b'h', b'1'..=b'9', 0x17, 0x72, 0x45, 0x38, 0x50, 0x90] => {
                Compression::Unread("bzip2")
            }
            _ => Compression::None,
        }
    }

    /// Returns the compression a file's first bytes (from where it is) say, leaving it
    /// where it was.
    pub(crate) fn of(file: &mut File) -> io::Result<Compression> {
        let at = file.stream_position()?;
        let magic = first_bytes(&mut *file)?;
        file.seek(SeekFrom::Start(at))?;
        Ok(Compression::of_magic(&magic))
    }
}

/// Reads up to [`MAGIC`] bytes, fewer only at the end.
fn first_bytes(mut input: impl Read) -> io::Result<Vec<u8>> {
    let mut magic = vec![0u8; MAGIC];
    let mut read = 0;
    while read < magic.len() {
        match input.read(&mut magic[read..]) {
            Ok(0) => break,
            Ok(n) => read += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    magic.truncate(read);
    Ok(magic)
}

/// Returns a reader of a stream read once (a pipe) as it was before its compression, known
/// by its first bytes, which are read and given again.
pub(crate) fn sniffed<R: Read + Send + 'static>(mut input: R) -> io::Result<Box<dyn Read + Send>> {
    let magic = first_bytes(&mut input)?;
    let compression = Compression::of_magic(&magic);
    decoded(Cursor::new(magic).chain(input), compression)
}

/// Returns a reader of `file`'s bytes as they were before `compression`.
pub(crate) fn decoded<R: Read + Send + 'static>(
    file: R,
    compression: Compression,
) -> io::Result<Box<dyn Read + Send>> {
    match compression {
        Compression::Unread(tool) => Err(io::Error::other(format!(
            "it is {tool}-compressed, which is not read here: decompress it first, as \
             `{tool} -dc FILE | ratelimit …` does"
        ))),
        Compression::None => Ok(Box::new(file)),
        #[cfg(feature = "compressed")]
        Compression::Gzip => {
            Ok(Box::new(flate2::read::MultiGzDecoder::new(io::BufReader::new(file))))
        }
        #[cfg(feature = "compressed")]
        Compression::Zstd => Ok(Box::new(zstd::stream::read::Decoder::new(file)?)),
        #[cfg(not(feature = "compressed"))]
        _ => Err(io::Error::other("it is compressed, and this build reads no compressed input")),
    }
}

/// Opens a file for reading, decompressed if it is: a regular file is known by its first
/// bytes; a FIFO or a device is read as it comes, unlooked at.
pub(crate) fn open_decoded(
    path: &Path,
    raw: Option<&RawBytes>,
) -> Result<Box<dyn Read + Send>, ReadError> {
    let io = |error| ReadError::Io { name: path.display().to_string(), error };
    let mut file = File::open(path).map_err(io)?;
    let compression = match file.metadata().is_ok_and(|m| m.is_file()) {
        true => Compression::of(&mut file).map_err(io)?,
        false => Compression::None,
    };
    match raw {
        Some(raw) => decoded(raw.counting(file), compression).map_err(io),
        None => decoded(file, compression).map_err(io),
    }
}

/// Opens a regular file and reads it decompressed; `None` if it is not a regular file
/// (a FIFO or a device, which looking at would consume).
pub(crate) fn open_regular(path: &Path) -> Option<Box<dyn Read + Send>> {
    if !std::fs::metadata(path).ok()?.is_file() {
        return None;
    }
    open_decoded(path, None).ok()
}
