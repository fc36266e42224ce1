//! Reading a CSV or TSV pipe on every core: one thread cuts it into blocks of whole rows,
//! the others parse them, and the taker takes them in order.

use std::io::{Cursor, Read};
use std::sync::mpsc;

use csv::ByteRecord;

use super::bounded::{LongRow, MOST_ROW, is_long_row};
use super::chunked::parse_piece;
use super::error::ReadError;
use super::event::Event;
use super::keys::{KeyTable, joined, wide};
use super::options::ReadOptions;
use super::piece::{Piece, PieceBytes};
use super::pipeline::Flow;
use super::reading::{Reading, long_row};
use super::scan::{Row, Unusual};
use super::source::Source;
use super::stats::ReadStats;
use crate::progress::Measure;

/// The bytes of stdin read at a time, and about the size of a block of rows.
const BLOCK: usize = 1 << 20;

/// Reads a CSV or TSV stream that can be read only once (a pipe): a thread reads it and
/// cuts it into blocks of whole rows, at the places the csv crate says rows start, the
/// other threads parse the blocks, and this one takes them in order. A block with a row
/// the fast path does not take is read again here with the csv crate, from its start and
/// its line. `Ok(Err(bytes))` gives back what was read when the header is not a plain
/// row, for the reading of one thread to start over with.
#[allow(clippy::type_complexity)]
pub(super) fn stream_pipe<'i, E: From<ReadError>>(
    mut input: Box<dyn Read + Send + 'i>,
    source: &Source,
    (options, measure): (&ReadOptions, Measure),
    mut take: impl FnMut(Event) -> Result<Flow, E>,
) -> Result<Result<Option<ReadStats>, (Vec<u8>, Box<dyn Read + Send + 'i>)>, E> {
    let name = source.name();
    let delimiter = options.delimiter();
    let mut carry = Vec::new();
    let mut eof = false;
    // The header, whole.
    let mut row = Row::default();
    let header_end = loop {
        let carriage = memchr::memchr(b'\r', &carry).is_some();
        let found =
            if carry.is_empty() { Ok(None) } else { row.read(&carry, 0, delimiter, eof, carriage) };
        match found {
            Ok(Some(())) => break (row.end + 1).min(carry.len()),
            Err(Unusual) => return Ok(Err((carry, input))),
            Ok(None) if eof => return Ok(Err((carry, input))),
            Ok(None) if wide(carry.len()) > MOST_ROW => return Err(long_row(&name, 1).into()),
            Ok(None) => {
                eof = grow(&mut input, &mut carry)
                    .map_err(|error| ReadError::Io { name: name.clone(), error })?
            }
        }
    };
    let mut pass =
        Reading::new(Cursor::new(&carry[..header_end]), name.clone(), options, (None, None))?;
    let header = pass.header();
    drop(pass);
    let Some(header) = header else { return Ok(Err((carry, input))) };
    // Without a header, the first row is data, and read again with the rest.
    if options.headers {
        carry.drain(..header_end);
    }
    let threads = options.threads.max(2) - 1;
    std::thread::scope(|scope| {
        let mut senders = Vec::new();
        let mut receivers = Vec::new();
        for _ in 0..threads {
            let (send, blocks) = mpsc::sync_channel::<Vec<u8>>(2);
            let (done, parsed) = mpsc::sync_channel::<(Piece, Vec<u8>)>(2);
            senders.push(send);
            receivers.push(parsed);
            let header = &header;
            scope.spawn(move || {
                for block in blocks {
                    let end = wide(block.len());
                    // Whole rows are always there: the bytes end where a row ends.
                    let span = PieceBytes { bytes: &block, begin: 0, end, last: true };
                    let piece = parse_piece(span, header, options)
                        .unwrap_or_else(|| Piece { stopped: true, ..Piece::empty(0) });
                    if done.send((piece, block)).is_err() {
                        return;
                    }
                }
            });
        }
        let name = &name;
        let splitter = scope.spawn(move || -> std::io::Result<()> {
            let mut next = 0;
            loop {
                while !eof && carry.len() < BLOCK {
                    eof = fill(&mut input, &mut carry)?;
                }
                if carry.is_empty() {
                    return Ok(());
                }
                let cut = if eof { carry.len() } else { cut(&carry, delimiter) };
                if cut == 0 {
                    // One row longer than the block: read on until it ends, or is too long.
                    if wide(carry.len()) > MOST_ROW {
                        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, LongRow));
                    }
                    eof = grow(&mut input, &mut carry)?;
                    continue;
                }
                let rest = carry.split_off(cut);
                let block = std::mem::replace(&mut carry, rest);
                if senders[next % senders.len()].send(block).is_err() {
                    return Ok(());
                }
                next += 1;
            }
        });
        let mut stats = ReadStats::default();
        let mut keys = KeyTable::telling(&options.key_notes);
        let mut line = header.body.line();
        let mut next = 0;
        let mut progress = options.ticker(measure.clone());
        let mut bytes = header.body.byte();
        while let Ok((mut piece, block)) = receivers[next % receivers.len()].recv() {
            next += 1;
            bytes += wide(block.len());
            progress.batch(stats.rows, bytes)?;
            if piece.stopped {
                // The block again, with the csv crate, from its first row and its line.
                let mut at = csv::Position::new();
                at.set_line(line);
                let carried =
                    ReadStats { keys: std::mem::take(&mut keys), ..std::mem::take(&mut stats) };
                let size = (Some(wide(block.len())), None);
                let mut pass =
                    Reading::resume(Cursor::new(&block[..]), size, &header, options, at, carried)?;
                while let Some(event) = pass.next_event()? {
                    if let Flow::Stop = take(event)? {
                        return Ok(Ok(None));
                    }
                }
                stats = pass.into_stats();
                keys = std::mem::take(&mut stats.keys);
                line += wide(memchr::memchr_iter(b'\n', &block).count());
                continue;
            }
            if let Flow::Stop = piece.deliver(line, &header, &mut keys, &mut stats, &mut take)? {
                return Ok(Ok(None));
            }
            line += piece.lines;
        }
        drop(receivers);
        match joined(splitter) {
            Ok(()) => Ok(Ok(Some(ReadStats { keys, ..stats }))),
            // Every block before the long row was taken: it starts on `line`.
            Err(error) if is_long_row(&error) => Err(long_row(name, line).into()),
            Err(error) => Err(ReadError::Io { name: name.clone(), error }.into()),
        }
    })
}

/// Reads up to [`BLOCK`] more bytes onto `carry`; true at the end of the input.
fn fill(input: &mut dyn Read, carry: &mut Vec<u8>) -> std::io::Result<bool> {
    let had = carry.len();
    carry.resize(had + BLOCK, 0);
    let read = loop {
        match input.read(&mut carry[had..]) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            other => break other,
        }
    };
    let n = read.inspect_err(|_| carry.truncate(had))?;
    carry.truncate(had + n);
    Ok(n == 0)
}

/// Reads onto `carry`, which holds no whole row, until it holds twice as much or just past
/// [`MOST_ROW`]; true at the end of the input. A pipe gives 64 KiB a read: looking for the
/// row's end after each would scan a long row once per read, in time quadratic in its
/// length, where doubling scans it a few times.
fn grow(input: &mut dyn Read, carry: &mut Vec<u8>) -> std::io::Result<bool> {
    let most = usize::try_from(MOST_ROW + 1).unwrap_or(usize::MAX);
    let goal = carry.len().saturating_mul(2).clamp(BLOCK, most);
    let mut eof = false;
    while !eof && carry.len() < goal {
        eof = fill(input, carry)?;
    }
    Ok(eof)
}

/// Returns where the last whole row in `bytes` ends, as the csv crate says (just past the
/// byte that ends it), or 0 if none does. A row the fast reading does not take is read with
/// the csv crate.
fn cut(bytes: &[u8], delimiter: u8) -> usize {
    let carriage = memchr::memchr(b'\r', bytes).is_some();
    let mut row = Row::default();
    let (mut at, mut whole) = (0, 0);
    loop {
        let mut start = at;
        while let Some(b'\n' | b'\r') = bytes.get(start) {
            start += 1;
        }
        if start >= bytes.len() {
            return whole;
        }
        match row.read(bytes, start, delimiter, false, carriage) {
            Ok(Some(())) => at = row.end + 1,
            Ok(None) => return whole,
            Err(Unusual) => {
                let mut reader = csv::ReaderBuilder::new()
                    .has_headers(false)
                    .flexible(true)
                    .delimiter(delimiter)
                    .from_reader(&bytes[at..]);
                let mut record = ByteRecord::new();
                let next = match reader.read_byte_record(&mut record) {
                    Ok(true) => {
                        at + usize::try_from(reader.position().byte()).unwrap_or(usize::MAX)
                    }
                    _ => return whole,
                };
                // A row whose end is the end of the bytes may go on in what comes next.
                if next >= bytes.len() {
                    return whole;
                }
                at = next;
            }
        }
        whole = at;
    }
}
