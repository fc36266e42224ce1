//! Pieces of JSON Lines and GeoJSON, parsed on their own, for reading a file on every core.
//!
//! A JSON Lines file is cut at line breaks: a JSON string holds none, so every line start
//! is a record start, and no guess is made. A GeoJSON FeatureCollection is cut just after
//! the `}` that ends a feature, where the document's own reading starts each record; a
//! piece guesses that place as a `}` followed by a `,` and a `{`, which the taker checks
//! against where the piece before ended, as it checks a CSV piece's guessed row start.

use super::bounded::MOST_ROW;
use super::format::{InputFormat, JsonLayout};
use super::json::JsonPaths;
use super::keys::wide;
use super::options::ReadOptions;
use super::piece::{Piece, PieceBytes};
use super::reading::Header;
use super::row::{Scratch, row_event};
use super::stats::ReadStats;
use super::values::Values;

/// What a piece's records are turned into events with.
struct Making<'h> {
    header: &'h Header,
    paths: &'h JsonPaths,
    options: &'h ReadOptions,
    values: Values,
    scratch: Scratch,
    counted: ReadStats,
}

impl Making<'_> {
    /// Adds the event of the record `text`, starting on `line`, to `piece`; false if the
    /// record is one the reading on one thread must read (it is bad, or too long).
    fn record(&mut self, text: &[u8], line: u64, piece: &mut Piece) -> bool {
        if wide(text.len()) > MOST_ROW || self.paths.read(text, &mut self.values).is_err() {
            return false;
        }
        piece.rows += 1;
        let Making { header, options, values, scratch, counted, .. } = self;
        match row_event(&*values, &header.columns, options, scratch, counted) {
            Ok(Some(event)) => piece.batch.push(event.time, event.cost, line, event.key),
            Ok(None) => {}
            Err(_) => return false,
        }
        true
    }
}

/// Parses the records of a span of JSON Lines or of a GeoJSON `features` array, from its
/// first byte (a record start), up to the first that starts at or after its end (or the
/// array's end: then the piece is the last); `None` if the bytes end first (unless they
/// are the last).
pub(super) fn parse_json(
    span: PieceBytes,
    header: &Header,
    layout: &JsonLayout,
    options: &ReadOptions,
) -> Option<Piece> {
    let mut making = Making {
        header,
        paths: &layout.paths,
        options,
        values: Values::default(),
        scratch: Scratch::default(),
        counted: ReadStats::default(),
    };
    let mut piece = Piece::empty(span.begin);
    let (at, line) = match layout.format {
        InputFormat::Geojson => features(span, &mut making, &mut piece)?,
        _ => lines(span, &mut making, &mut piece)?,
    };
    if !piece.stopped && !piece.last && span.begin + wide(at) < span.end && !span.last {
        return None;
    }
    piece.end = span.begin + wide(at);
    piece.lines = line - 1;
    piece.counted(&making.counted);
    Some(piece)
}

/// Reads the lines of a span of JSON Lines into `piece`, as [`parse_json`] does, and
/// returns where reading stopped and the line there.
fn lines(span: PieceBytes, making: &mut Making, piece: &mut Piece) -> Option<(usize, u64)> {
    let PieceBytes { bytes, begin, end, last } = span;
    let (mut at, mut line) = (0, 1);
    while begin + wide(at) < end && at < bytes.len() {
        let length = match memchr::memchr(b'\n', &bytes[at..]) {
            Some(length) => length,
            None if last => bytes.len() - at,
            None => return None,
        };
        let mut text = &bytes[at..at + length];
        // As the reading on one thread takes a line: without its ending, CRs and all.
        while let [rest @ .., b'\r'] = text {
            text = rest;
        }
        if !text.iter().all(u8::is_ascii_whitespace) && !making.record(text, line, piece) {
            piece.stopped = true;
            break;
        }
        line += 1;
        at = (at + length + 1).min(bytes.len());
    }
    Some((at, line))
}

/// Reads the features of a span of a GeoJSON `features` array into `piece`, as
/// [`parse_json`] does: the span starts just after a feature, or the array's `[`.
fn features(span: PieceBytes, making: &mut Making, piece: &mut Piece) -> Option<(usize, u64)> {
    let PieceBytes { bytes, begin, end, last } = span;
    // `at` is just past a feature; `line` is the line it is on, as the document's reading
    // counts lines, and the line it names the next feature by.
    let (mut at, mut line) = (0, 1);
    while begin + wide(at) < end {
        let mut next = at;
        let mut passed = 0;
        let mut space = |next: &mut usize| {
            while let Some(&b) = bytes.get(*next).filter(|b| b.is_ascii_whitespace()) {
                passed += u64::from(b == b'\n');
                *next += 1;
            }
        };
        space(&mut next);
        if bytes.get(next) == Some(&b',') {
            next += 1;
            space(&mut next);
        }
        match bytes.get(next) {
            Some(b']') => {
                piece.last = true;
                break;
            }
            Some(b'{') => {}
            None if !last => return None,
            // Not a feature, or the document ends in the array: its reading says which.
            _ => {
                piece.stopped = true;
                break;
            }
        }
        let length = match value_length(&bytes[next..]) {
            Some(length) => length,
            None if !last => return None,
            None => {
                piece.stopped = true;
                break;
            }
        };
        if !making.record(&bytes[next..next + length], line, piece) {
            piece.stopped = true;
            break;
        }
        // A string holds no line break: the breaks passed are those between the values.
        let inside = memchr::memchr_iter(b'\n', &bytes[next..next + length]).count();
        line += passed + wide(inside);
        at = next + length;
    }
    Some((at, line))
}

/// Returns the length of the object or array that `bytes` starts with, as the document's
/// reading finds its end: by brackets outside strings; `None` if the bytes end first.
fn value_length(bytes: &[u8]) -> Option<usize> {
    let (mut depth, mut at) = (0usize, 0);
    loop {
        match *bytes.get(at)? {
            b'"' => {
                // To the closing quote: past escapes, which may escape a quote.
                at += 1;
                loop {
                    at += memchr::memchr2(b'"', b'\\', bytes.get(at..)?)?;
                    if bytes[at] == b'"' {
                        break;
                    }
                    at += 2;
                }
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(at + 1);
                }
            }
            _ => {}
        }
        at += 1;
    }
}

/// Returns where the first feature boundary at or after `from` in `bytes` is: just past a
/// `}` that is followed, after white space, by a `,` and a `{`. A guess, as it may be inside
/// a string; the taker checks it.
pub(super) fn feature_boundary(bytes: &[u8], from: usize) -> Option<usize> {
    let mut at = from;
    loop {
        at += memchr::memchr(b'}', bytes.get(at..)?)?;
        let rest = bytes[at + 1..].iter().skip_while(|b| b.is_ascii_whitespace());
        let mut rest = rest.copied();
        if rest.next() == Some(b',')
            && rest.find(|b| !b.is_ascii_whitespace()).is_some_and(|b| b == b'{')
        {
            return Some(at + 1);
        }
        at += 1;
    }
}
