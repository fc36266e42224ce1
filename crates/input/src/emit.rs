//! Keeping every row whole, in time order, for `--emit` to write out again.

use std::borrow::Cow;
use std::io::{self, Read};

use super::error::{Result, layout};
use super::event::Event;
use super::keys::slot;
use super::options::ReadOptions;
use super::reading::RowReader;
use super::sorted::MOST_KEPT;
use super::source::{Opened, Source};
use super::stats::ReadStats;
use super::ties::{Ties, spread_sorted, spread_sorted_by};
use crate::units::time::Timestamp;

/// A catalog's rows, kept whole in time order, for writing them out again.
#[derive(Default)]
pub struct Rows {
    header: Vec<u8>,
    store: Vec<u8>,
    order: Vec<(Timestamp, usize)>,
    /// The costs other than 1, by where their row is stored, in that order: events that
    /// cost 1 cost nothing here.
    costs: Vec<(usize, u64)>,
    /// How ties at a whole second were read into `order`'s times.
    ties: Ties,
    /// Read spread, the times as written, in time order; else empty.
    written: Vec<Timestamp>,
}

impl Rows {
    /// Returns the number of rows.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// Returns true if there are no rows.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// Returns the rows' times, in time order, as `ties` reads them.
    pub fn times_as(&self, ties: Ties) -> Vec<Timestamp> {
        match (self.ties, ties) {
            (Ties::Spread, Ties::Together) => self.written.clone(),
            (Ties::Together, Ties::Spread) => {
                let mut times: Vec<Timestamp> = self.order.iter().map(|&(t, _)| t).collect();
                spread_sorted(&mut times);
                times
            }
            _ => self.order.iter().map(|&(t, _)| t).collect(),
        }
    }

    /// Reads the rows' ties as `ties` says, the rows sorted by time, keeping the times as
    /// written if it changes them, and counting the ties as written in `stats`.
    fn read_ties(&mut self, ties: Ties, stats: &mut ReadStats) {
        let store = &self.store;
        self.order.iter().for_each(|&(time, at)| stats.instants.see(time, row_key(store, at)));
        if ties == Ties::Spread {
            self.written = self.times_as(Ties::Together);
            spread_sorted_by(&mut self.order, |row| &mut row.0);
            self.ties = Ties::Spread;
        }
    }

    /// Returns the header line, without its line ending.
    pub fn header(&self) -> &[u8] {
        trim_line_end(&self.header)
    }

    /// Returns where each row is stored, in time order: the stored rows are in the order
    /// they came, so these rank them in it.
    pub fn places(&self) -> impl Iterator<Item = usize> + '_ {
        self.order.iter().map(|&(_, at)| at)
    }

    /// Keeps `event` with its row's `text`, if all that is kept stays within `most` bytes
    /// and the memory can be had; else says why not.
    fn keep(&mut self, event: Event, text: &[u8], most: usize) -> Result<(), String> {
        let len = u32::try_from(text.len()).map_err(|_| "row too long to keep".to_owned())?;
        // Each row is kept as its text, its length and key (8 bytes), and its time and place.
        let (place, cost) = (size_of::<(Timestamp, usize)>(), size_of::<(usize, u64)>());
        let kept = (self.store.len())
            .saturating_add(self.order.len().saturating_mul(place))
            .saturating_add(self.costs.len().saturating_mul(cost));
        if kept.saturating_add(text.len() + 8 + place) > most {
            return Err(format!("the most it keeps is {} MiB", most >> 20));
        }
        let memory = |_| "no more memory could be had".to_owned();
        if self.order.len() == self.order.capacity() {
            self.order.try_reserve(self.order.len().max(1 << 12)).map_err(memory)?;
        }
        self.store.try_reserve(text.len() + 8).map_err(memory)?;
        if event.cost != 1 {
            self.costs.try_reserve(1).map_err(memory)?;
            self.costs.push((self.store.len(), event.cost));
        }
        self.order.push((event.time, self.store.len()));
        self.store.extend_from_slice(&len.to_le_bytes());
        self.store.extend_from_slice(&event.key.to_le_bytes());
        self.store.extend_from_slice(text);
        Ok(())
    }

    /// Returns each event and its row text (without its line ending), in time order.
    pub fn iter(&self) -> impl Iterator<Item = (Event, &[u8])> {
        // Each row is stored as its length, its key, and its text.
        let word =
            |at: usize| u32::from_le_bytes(self.store[at..at + 4].try_into().expect("4 bytes"));
        self.order.iter().map(move |&(time, at)| {
            // Widening: a u32 fits in a usize on the platforms this builds for (see `slot`).
            let (len, key) = (slot(word(at)), word(at + 4));
            let cost = match self.costs.binary_search_by_key(&at, |&(row, _)| row) {
                Ok(found) => self.costs[found].1,
                Err(_) => 1,
            };
            (Event { time, key, cost }, trim_line_end(&self.store[at + 8..at + 8 + len]))
        })
    }
}

/// Reads every kept row of `source` with its text, sorted by time, stable for equal times.
pub fn read_rows(source: &Source, options: &ReadOptions) -> Result<(Rows, ReadStats)> {
    let mut input = Opened::open(source)?;
    #[cfg(all(unix, feature = "arrow"))]
    if let Opened::Arrow(data) = &input {
        return arrow_rows(data, options);
    }
    let mut pass = input.reading_through(source, options, Capture::of)?;
    let mut rows = Rows::default();
    if let RowReader::Csv(csv) = &pass.rows {
        rows.header = csv.get_ref().get_ref().slice(0, csv.position().byte()).to_vec();
    }
    while let Some(Event { time, key, cost }) = pass.next_event()? {
        let start = pass.record.position().expect("records have positions").byte();
        let end = pass.rows.byte();
        let line = pass.line();
        let text: Cow<[u8]> = match &pass.rows {
            RowReader::Csv(csv) => {
                Cow::Borrowed(trim_blank_lines(csv.get_ref().get_ref().slice(start, end)))
            }
            // A feature may span lines; emitted, it is one line of JSON. JSON has no line
            // breaks inside strings, so they are all white space.
            RowReader::Other(records) if records.text().contains(&b'\n') => Cow::Owned(
                records
                    .text()
                    .iter()
                    .map(|&b| if b == b'\n' || b == b'\r' { b' ' } else { b })
                    .collect(),
            ),
            RowReader::Other(records) => Cow::Borrowed(records.text()),
        };
        rows.keep(Event { time, key, cost }, &text, MOST_KEPT).map_err(|why| {
            let kept = rows.len();
            layout(
                &pass.name,
                format!(
                    "line {line}: --emit keeps each row until every decision is taken, and \
                     {why} after {kept} rows: give it less input (--since, --until), or use \
                     filter, which decides each row as it comes"
                ),
            )
        })?;
        match &mut pass.rows {
            RowReader::Csv(csv) => csv.get_mut().get_mut().forget_before(end),
            RowReader::Other(records) => records.get_mut().get_mut().forget_before(end),
        }
    }
    // Row offsets grow with input order, so sorting by (time, offset) is stable by time.
    rows.order.sort_unstable();
    let mut stats = pass.stats;
    rows.read_ties(options.ties, &mut stats);
    Ok((rows, stats))
}

/// Keeps the events of Arrow data in time order, each with its row's number, from 0, as
/// its text: a table's rows are where they are, and a caller finds them by number.
#[cfg(all(unix, feature = "arrow"))]
fn arrow_rows(
    data: &super::arrow_data::ArrowData,
    options: &ReadOptions,
) -> Result<(Rows, ReadStats)> {
    let mut rows = Rows::default();
    let mut number = itoa::Buffer::new();
    let read = super::arrow::each_row(data, options, |event, row| {
        let text = number.format(row).as_bytes();
        rows.keep(event, text, MOST_KEPT).map_err(|why| {
            let kept = rows.len();
            layout(
                "<arrow>",
                format!("row {row}: its decisions are kept, and {why} after {kept} rows"),
            )
        })?;
        Ok::<_, super::error::ReadError>(super::pipeline::Flow::More)
    })?;
    // `each_row` gives `None` only when the taker says stop, and this one never does.
    let mut stats = read.unwrap_or_default();
    rows.order.sort_unstable();
    rows.read_ties(options.ties, &mut stats);
    Ok((rows, stats))
}

/// The key of the row kept at `at` in `store`: after its length, before its text.
fn row_key(store: &[u8], at: usize) -> crate::keys::Key {
    store.get(at + 4..at + 8).and_then(|b| b.try_into().ok()).map_or(0, u32::from_le_bytes)
}

fn trim_line_end(line: &[u8]) -> &[u8] {
    let end = line.iter().rposition(|&b| b != b'\n' && b != b'\r').map_or(0, |i| i + 1);
    &line[..end]
}

fn trim_blank_lines(text: &[u8]) -> &[u8] {
    let start = text.iter().position(|&b| b != b'\n' && b != b'\r').unwrap_or(text.len());
    &text[start..]
}

/// A reader that keeps what passes through it, so that rows can be copied out whole.
struct Capture<R> {
    inner: R,
    seen: Vec<u8>,
    base: u64,
}

impl<R> Capture<R> {
    fn of(inner: R) -> Capture<R> {
        Capture { inner, seen: Vec::new(), base: 0 }
    }

    fn slice(&self, start: u64, end: u64) -> &[u8] {
        &self.seen[self.index(start)..self.index(end)]
    }

    /// Returns where an offset of the input lies in what is kept.
    #[allow(clippy::cast_possible_truncation)]
    fn index(&self, offset: u64) -> usize {
        // The offset lies within `seen`, which is in memory: it fits in a usize.
        (offset - self.base) as usize
    }

    /// Lets go of the bytes before `offset`, in large steps so that the copying is cheap.
    fn forget_before(&mut self, offset: u64) {
        let done = self.index(offset);
        if done >= 1 << 16 {
            self.seen.drain(..done);
            self.base = offset;
        }
    }
}

impl<R: Read> Read for Capture<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.seen.extend_from_slice(&buf[..n]);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_emit_keeps_is_bounded() {
        let mut rows = Rows::default();
        let time = Timestamp::from_micros(0).unwrap();
        // A row of 10 bytes is kept in 34: its text, its length and key, its time and place.
        let row = [b'x'; 10];
        assert_eq!(rows.keep(Event::new(time, 0), &row, 84), Ok(()));
        assert_eq!(rows.keep(Event::new(time, 1), &row, 84), Ok(()));
        let refused = rows.keep(Event::new(time, 2), &row, 84);
        assert_eq!(refused, Err("the most it keeps is 0 MiB".to_owned()));
        assert_eq!(rows.len(), 2);
        let kept: Vec<&[u8]> = rows.iter().map(|(_, text)| text).collect();
        assert_eq!(kept, [&row[..], &row[..]]);
    }
}
