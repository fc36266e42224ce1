//! Reading a file on every core: pieces parsed at once, taken in order, checked to join.
//!
//! A file's rows after the header are cut into pieces of up to [`PIECE`] bytes. A worker
//! reads its piece with one `pread` (and a little past its end, for the row that crosses
//! it), starts at the first line start in it, and parses rows (with [`Row`], or the csv
//! crate for what that does not take) until one starts past the piece: that row's start is
//! where the next piece must begin. The guess that a line start is a row start is wrong
//! only inside a quoted field that spans lines, so the taker, which takes the pieces in
//! order, accepts a piece only if it began where the one before ended; one that does not
//! is parsed again, there, from where the one before ended. A piece that holds a row the
//! fast path does not take (a bad row, or one `--skip-bad` must count) hands the rest of
//! the file to the reading of one thread, resumed there with the right line number: the
//! events, the errors and their order are those of reading the file on one thread. A pipe
//! is cut into blocks of whole rows by one thread instead; see [`stream_pipe`]. JSON Lines
//! and GeoJSON are cut the same way, at their own record starts (see `json_pieces`).

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::mpsc;

use csv::ByteRecord;

use super::bounded::MOST_ROW;
use super::error::ReadError;
use super::event::Event;
use super::format::InputFormat;
use super::json_pieces::{feature_boundary, parse_json};
use super::keys::KeyTable;
use super::keys::{joined, wide};
use super::options::ReadOptions;
use super::piece::{Piece, PieceBytes};
use super::pipeline::Flow;
use super::reading::{Header, Reading};
use super::row::{Fields, Scratch, row_event};
use super::scan::{Row, Unusual};
use super::stats::ReadStats;

/// The most bytes of one piece: large enough that a piece's start costs nothing, small
/// enough that the pieces in flight (two per worker) take little memory.
const PIECE: u64 = 4 << 20;

/// The fewest bytes of one piece; a file of less than two is read on one thread.
pub(super) const SMALLEST_PIECE: u64 = 64 << 10;

/// Returns the size of the pieces of `bytes` for `threads` workers: about eight pieces a
/// worker, so that a slow piece holds no worker up for long, within the bounds above.
fn piece_size(bytes: u64, threads: u64) -> u64 {
    (bytes / (threads * 8)).clamp(SMALLEST_PIECE, PIECE)
}

/// How far past its end a worker reads at first, for the row that crosses it; a longer
/// row has the piece read again with four times the room, up to [`MOST_MARGIN`].
const MARGIN: u64 = 1 << 16;

/// The most a worker reads past its piece; a row longer than that (or a file whose rows
/// end in a lone CR) is left to the reading on one thread.
const MOST_MARGIN: u64 = 16 << 20;

/// A file's rows after its header, cut into pieces.
struct Plan<'a> {
    file: &'a File,
    header: &'a Header,
    options: &'a ReadOptions,
    size: u64,
    body: u64,
    piece_bytes: u64,
    pieces: u64,
}

impl Plan<'_> {
    /// Returns where piece `piece` starts and ends, as cut.
    fn range(&self, piece: u64) -> (u64, u64) {
        let start = self.body + piece * self.piece_bytes;
        (start, (start + self.piece_bytes).min(self.size))
    }

    /// Parses piece `piece`, from its first line start (its first byte, for the first).
    fn parse(&self, piece: u64, buffer: &mut Vec<u8>) -> std::io::Result<Piece> {
        let (start, end) = self.range(piece);
        let Plan { file, size, header, options, .. } = *self;
        parse(file, start, end, piece == 0, size, header, options, buffer)
    }
}

/// Events handed from the thread that numbers keys to the one that takes them, at a time.
const BATCH: usize = 4096;

/// Reads the rows of `file` after `header` on `options.threads` threads and gives each
/// event to `take` in order, until it says stop (then `None`). `origin` is where the input
/// starts in the file. With one thread, the pieces are read on this one, in order; with
/// keys and a `busy` taker, a thread of its own numbers the keys between the readers and
/// the taker.
pub(super) fn stream<E: From<ReadError>>(
    file: &File,
    origin: u64,
    header: &Header,
    options: &ReadOptions,
    busy: bool,
    mut take: impl FnMut(Event) -> Result<Flow, E>,
) -> Result<Option<ReadStats>, E> {
    let size = file.metadata().map_err(|error| io(header, error))?.len();
    let body = origin + header.body.byte();
    let threads = u64::try_from(options.threads).unwrap_or(1).max(1);
    let piece_bytes = piece_size(size.saturating_sub(body), threads);
    let pieces = (size.saturating_sub(body)).div_ceil(piece_bytes);
    let plan = Plan { file, header, options, size, body, piece_bytes, pieces };
    if threads == 1 {
        let (mut buffer, mut next) = (Vec::new(), 0);
        let read = || {
            let piece = (next < pieces).then(|| plan.parse(next, &mut buffer));
            next += 1;
            piece
        };
        return take_pieces(&plan, read, take);
    }
    let workers = threads.min(pieces.max(1));
    std::thread::scope(|scope| {
        let mut receivers = Vec::new();
        for worker in 0..workers {
            let (send, receive) = mpsc::sync_channel::<std::io::Result<Piece>>(2);
            receivers.push(receive);
            let plan = &plan;
            scope.spawn(move || {
                let mut buffer = Vec::new();
                let mut piece = worker;
                while piece < pieces {
                    if send.send(plan.parse(piece, &mut buffer)).is_err() {
                        return;
                    }
                    piece += workers;
                }
            });
        }
        // Each worker sends its pieces in order; a worker gone means the end.
        let mut next = 0;
        let received = move || {
            let index = usize::try_from(next % workers).ok()?;
            next += 1;
            receivers[index].recv().ok()
        };
        if !(busy && header.columns.key.is_some()) {
            return take_pieces(&plan, received, take);
        }
        let (send, batches) = mpsc::sync_channel::<Result<Vec<Event>, ReadError>>(4);
        let plan = &plan;
        let numberer = scope.spawn(move || {
            let mut batch = Vec::with_capacity(BATCH);
            let numbered = take_pieces(plan, received, |event| {
                batch.push(event);
                if batch.len() == BATCH {
                    let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH));
                    if send.send(Ok(full)).is_err() {
                        return Ok(Flow::Stop);
                    }
                }
                Ok::<_, ReadError>(Flow::More)
            });
            match numbered {
                Ok(stats) => {
                    let _ = send.send(Ok(batch));
                    stats
                }
                Err(error) => {
                    let _ = send.send(Err(error));
                    None
                }
            }
        });
        let mut stopped = false;
        'batches: for received in batches.iter() {
            for event in received? {
                if let Flow::Stop = take(event)? {
                    stopped = true;
                    break 'batches;
                }
            }
        }
        // The numberer stops when it next sends.
        drop(batches);
        let stats = joined(numberer);
        Ok(if stopped { None } else { stats })
    })
}

/// Takes the pieces that `next` gives, in order, checks that each starts where the one
/// before ended (parsing it again from there if not), numbers the keys and gives each
/// event to `take`; from a piece with a row the fast path does not take, the rest is read
/// on this thread, resumed at that piece's start.
fn take_pieces<E: From<ReadError>>(
    plan: &Plan,
    mut next: impl FnMut() -> Option<std::io::Result<Piece>>,
    mut take: impl FnMut(Event) -> Result<Flow, E>,
) -> Result<Option<ReadStats>, E> {
    let Plan { file, header, options, size, body, .. } = *plan;
    let mut progress = options.ticker((Some(size), None));
    let mut stats = ReadStats::default();
    let mut keys = KeyTable::telling(&options.key_notes);
    let mut buffer = Vec::new();
    let mut expected = body;
    let mut line = header.body.line();
    for piece in 0..plan.pieces {
        let Some(parsed) = next() else { break };
        let mut parsed = parsed.map_err(|error| io(header, error))?;
        if !parsed.stopped && parsed.start != expected {
            // The piece began inside a quoted field: it is parsed again from where the one
            // before ended, here.
            let end = plan.range(piece).1.max(expected);
            parsed = parse(file, expected, end, true, size, header, options, &mut buffer)
                .map_err(|error| io(header, error))?;
        }
        if parsed.stopped {
            break;
        }
        if let Flow::Stop = parsed.deliver(line, header, &mut keys, &mut stats, &mut take)? {
            return Ok(None);
        }
        expected = parsed.end;
        line += parsed.lines;
        progress.batch(stats.rows, expected)?;
        if parsed.last {
            break;
        }
    }
    if expected >= size {
        return Ok(Some(ReadStats { keys, ..stats }));
    }
    // The rest, on this thread, from the last row start known.
    let mut at = header.body.clone();
    at.set_byte(expected).set_line(line);
    let stats = ReadStats { keys, ..stats };
    let mut pass = Reading::resume(file, (Some(size), None), header, options, at, stats)?;
    while let Some(event) = pass.next_event()? {
        if let Flow::Stop = take(event)? {
            return Ok(None);
        }
    }
    Ok(Some(pass.into_stats()))
}

fn io(header: &Header, error: std::io::Error) -> ReadError {
    ReadError::Io { name: header.name.clone(), error }
}

/// Names what a short read of a file measured at `size` bytes means: it was cut while read
/// (a log rotated, a copy rewritten), not "failed to fill whole buffer".
fn shrank(error: std::io::Error, size: u64) -> std::io::Error {
    if error.kind() != std::io::ErrorKind::UnexpectedEof {
        return error;
    }
    std::io::Error::other(format!(
        "the file got shorter while it was read (it had {size} bytes when reading began); \
         read a copy that is not being written"
    ))
}

/// Parses the piece of `file` from `start` to `end`: from `start` itself if `first` (a row
/// start known), else from the first line start at or after it, up to the first row that
/// starts at or after `end`.
#[allow(clippy::too_many_arguments)]
fn parse(
    file: &File,
    start: u64,
    end: u64,
    first: bool,
    size: u64,
    header: &Header,
    options: &ReadOptions,
    buffer: &mut Vec<u8>,
) -> std::io::Result<Piece> {
    // From one byte before, to see whether the piece starts at a line start.
    // From two bytes before: to see whether the piece starts at a line start, and whether
    // that line's break is a CRLF (the csv crate says a row after a CRLF starts at its LF).
    let from = if first { start } else { start.saturating_sub(2) };
    let mut margin = MARGIN;
    loop {
        if margin > MOST_MARGIN {
            return Ok(Piece { stopped: true, ..Piece::empty(start) });
        }
        let to = (end + margin).min(size);
        buffer.resize(usize::try_from(to - from).unwrap_or(usize::MAX), 0);
        file.read_exact_at(buffer, from).map_err(|error| shrank(error, size))?;
        let features = header.json.as_ref().is_some_and(|j| j.format == InputFormat::Geojson);
        let skip = if first {
            0
        } else if features {
            let look = usize::try_from(start - from).unwrap_or(0) - 1;
            match feature_boundary(buffer, look) {
                Some(at) => at,
                None if to == size => buffer.len(),
                None => {
                    margin *= 4;
                    continue;
                }
            }
        } else {
            let look = usize::try_from(start - from).unwrap_or(0) - 1;
            match memchr::memchr(b'\n', &buffer[look..]).map(|at| look + at) {
                // A JSON line starts after its break, CRLF or not.
                Some(at) if at > 0 && buffer[at - 1] == b'\r' && header.json.is_none() => at,
                Some(at) => at + 1,
                None if to == size => buffer.len(),
                None => {
                    margin *= 4;
                    continue;
                }
            }
        };
        let begin = from + wide(skip);
        let (bytes, last) = (&buffer[skip..], to == size);
        if let Some(piece) = parse_piece(PieceBytes { bytes, begin, end, last }, header, options) {
            return Ok(piece);
        }
        margin *= 4;
    }
}

/// Parses the rows of a span up to the first that starts at or after its end, with the
/// fast reading, or the csv crate if it does not take a row; `None` if the bytes end
/// first (unless they are the last).
pub(super) fn parse_piece(
    span: PieceBytes,
    header: &Header,
    options: &ReadOptions,
) -> Option<Piece> {
    if let Some(layout) = &header.json {
        return parse_json(span, header, layout, options);
    }
    match parse_fast(span, header, options) {
        Ok(piece) => piece,
        Err(Unusual) => parse_csv(span, header, options),
    }
}

/// Parses the rows of a span as [`parse_piece`] does, with the csv crate.
fn parse_csv(span: PieceBytes, header: &Header, options: &ReadOptions) -> Option<Piece> {
    let PieceBytes { bytes, begin, end, last } = span;
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .delimiter(options.delimiter())
        .from_reader(bytes);
    let mut piece = Piece::empty(begin);
    let mut counted = ReadStats::default();
    let mut record = ByteRecord::new();
    let mut scratch = Scratch::default();
    loop {
        match reader.read_byte_record(&mut record) {
            Ok(true) => {}
            Ok(false) if last => {
                piece.end = begin + wide(bytes.len());
                piece.lines = reader.position().line() - 1;
                break;
            }
            Ok(false) => return None,
            Err(_) => {
                piece.stopped = true;
                break;
            }
        }
        let position = record.position().map_or_else(csv::Position::new, Clone::clone);
        if begin + position.byte() >= end {
            piece.end = begin + position.byte();
            piece.lines = position.line() - 1;
            break;
        }
        piece.rows += 1;
        if reader.position().byte() - position.byte() > MOST_ROW || record.len() != header.width {
            piece.stopped = true;
            break;
        }
        match row_event(&record, &header.columns, options, &mut scratch, &mut counted) {
            Ok(Some(event)) => piece.batch.push(event.time, event.cost, position.line(), event.key),
            Ok(None) => {}
            Err(_) => {
                piece.stopped = true;
                break;
            }
        }
    }
    piece.counted(&counted);
    Some(piece)
}

/// Parses the rows of a span as [`parse_piece`] does, with the fast reading of [`Row`]; a row
/// it does not take is `Unusual`, and the piece is read with the csv crate instead.
fn parse_fast(
    span: PieceBytes,
    header: &Header,
    options: &ReadOptions,
) -> Result<Option<Piece>, Unusual> {
    let PieceBytes { bytes, begin, end, last } = span;
    let delimiter = options.delimiter();
    let mut piece = Piece::empty(begin);
    let mut counted = ReadStats::default();
    let mut row = Row::default();
    let mut scratch = Scratch::default();
    // `at` and `line` are where the csv crate says the next row is: just past the byte
    // that ended the row before, before any empty lines.
    let (mut at, mut line) = (0, 1);
    let carriage = memchr::memchr(b'\r', bytes).is_some();
    loop {
        if begin + wide(at) >= end {
            piece.end = begin + wide(at);
            piece.lines = line - 1;
            break;
        }
        // Empty lines are no rows, as the csv crate skips them.
        let (mut start, mut skipped) = (at, 0);
        while let Some(&b) = bytes.get(start)
            && (b == b'\n' || b == b'\r')
        {
            skipped += u64::from(b == b'\n');
            start += 1;
        }
        if start == bytes.len() {
            if !last {
                return Ok(None);
            }
            piece.end = begin + wide(bytes.len());
            piece.lines = line - 1 + skipped;
            break;
        }
        if row.read(bytes, start, delimiter, last, carriage)?.is_none() {
            return Ok(None);
        }
        piece.rows += 1;
        // A row too long, or of the wrong width: the reading on one thread says which, and how.
        if wide(row.end - start) > MOST_ROW || row.width(bytes, delimiter) != header.width {
            piece.stopped = true;
            break;
        }
        let fields = Scanned { row: &row, bytes, delimiter };
        match row_event(&fields, &header.columns, options, &mut scratch, &mut counted) {
            Ok(Some(event)) => piece.batch.push(event.time, event.cost, line, event.key),
            Ok(None) => {}
            Err(_) => {
                piece.stopped = true;
                break;
            }
        }
        line += skipped + row.lines + u64::from(bytes.get(row.end) == Some(&b'\n'));
        at = (row.end + 1).min(bytes.len());
    }
    piece.counted(&counted);
    Ok(Some(piece))
}

/// A row the fast reading found, with the bytes it lies in: its fields, for [`row_event`].
struct Scanned<'r, 'b> {
    row: &'r Row,
    bytes: &'b [u8],
    delimiter: u8,
}

impl Fields for Scanned<'_, '_> {
    #[inline]
    fn field<'a>(&'a self, index: usize, scratch: &'a mut Vec<u8>) -> &'a [u8] {
        self.row.field(self.bytes, index, self.delimiter, scratch)
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::FileExt;

    #[test]
    fn a_file_cut_while_read_is_named_not_failed_to_fill_whole_buffer() {
        let path = std::env::temp_dir().join(format!("ratelimit-shrank-{}", std::process::id()));
        std::fs::write(&path, b"time\n2025-01-01T00:00:00Z\n").unwrap();
        let file = std::fs::File::open(&path).unwrap();
        // Measured at 4096 bytes, it now holds 26: what a rotated log looks like to a reader.
        let error =
            file.read_exact_at(&mut [0; 4096], 0).map_err(|error| super::shrank(error, 4096));
        std::fs::remove_file(&path).unwrap();
        let message = error.unwrap_err().to_string();
        assert!(
            message.starts_with("the file got shorter while it was read (it had 4096 bytes"),
            "{message}"
        );
        let other = super::shrank(std::io::Error::other("disk on fire"), 4096);
        assert_eq!(other.to_string(), "disk on fire");
    }
}
