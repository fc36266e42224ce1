//! Reading event catalogs: CSV rows to event times, filtered, in time order.
//!
//! Input already in time order is streamed when it can be read twice (a file, or standard
//! input redirected from one): if a row turns out to be out of order, the input is read
//! again and sorted. A pipe is buffered, at 8 bytes per event. `--emit` keeps every row.

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::sync::mpsc;

use csv::ByteRecord;

use crate::input::format::{InputFormat, ReadFailure, Records};
use crate::message::one_line;
#[cfg(feature = "cli")]
use crate::render::progress::Progress;
use crate::units::decimal;
use crate::units::layout::TimeLayout;
use crate::units::time::Timestamp;

/// Where a catalog comes from.
#[derive(Clone, Debug)]
pub enum Source {
    /// Standard input.
    Stdin,
    /// A file.
    Path(PathBuf),
    /// Bytes built into the program.
    Embedded {
        /// The name reports and messages use.
        name: &'static str,
        /// The catalog.
        bytes: &'static [u8],
    },
}

impl Source {
    /// Returns the name that messages and reports give the input.
    pub fn name(&self) -> String {
        match self {
            Source::Stdin => "<stdin>".into(),
            Source::Path(path) => path.display().to_string(),
            Source::Embedded { name, .. } => (*name).into(),
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

/// What to read from each row, and which rows to keep.
#[derive(Clone, Debug)]
pub struct ReadOptions {
    /// The layout of the input.
    pub format: InputFormat,
    /// The name of the column holding each event's time; names separated by commas give
    /// a time split over columns, joined with one space before it is read.
    pub time_column: String,
    /// How that column is written.
    pub time_format: TimeLayout,
    /// Keep only events at or after this time.
    pub since: Option<Timestamp>,
    /// Keep only events before this time.
    pub until: Option<Timestamp>,
    /// Keep only events whose `mag` column is at least this many millionths.
    pub min_mag: Option<i64>,
    /// The column whose values give each event its key, for limits per key.
    pub key_column: Option<String>,
    /// The option that named the key column, for messages: `--key` unless said.
    pub key_flag: &'static str,
    /// Whether to show a progress bar on stderr when reading takes long.
    pub progress: bool,
    /// How many bad rows may be skipped (and counted) rather than stop the reading.
    pub skip_bad: u64,
    /// How many threads may read and work on the events: with 1, all is done on the
    /// calling thread. The events and what is made of them are the same for any number.
    pub threads: usize,
}

impl ReadOptions {
    /// Returns options that read the `time` column in RFC 3339, keeping every row.
    pub fn new() -> ReadOptions {
        ReadOptions {
            format: InputFormat::Csv,
            time_column: "time".into(),
            time_format: TimeLayout::default(),
            since: None,
            until: None,
            min_mag: None,
            key_column: None,
            key_flag: "--key",
            progress: false,
            skip_bad: 0,
            threads: available_threads(),
        }
    }
}

impl Default for ReadOptions {
    fn default() -> ReadOptions {
        ReadOptions::new()
    }
}

pub use super::event::Event;
pub use super::keys::{Key, KeyTable, slot};
use super::keys::{joined, wide};

/// Without the command line there is no progress bar to show.
#[cfg(not(feature = "cli"))]
pub(super) struct Progress;

#[cfg(not(feature = "cli"))]
impl Progress {
    pub(super) fn new(_show: bool, _size: Option<u64>) -> Progress {
        Progress
    }

    pub(super) fn tick(&mut self, _rows: u64, _bytes: u64) {}
}

/// What reading a catalog found, beside its events.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReadStats {
    /// Data rows read, before any filter.
    pub rows: u64,
    /// Rows kept by the filters: the events.
    pub events: u64,
    /// Rows left out by `--min-mag` because their magnitude was empty.
    pub no_magnitude: u64,
    /// Bad rows skipped by `--skip-bad`, and the first one's error.
    pub skipped: u64,
    /// The error of the first row skipped.
    pub first_skipped: Option<String>,
    /// The keys, by number; empty without a key column.
    pub keys: KeyTable,
}

/// Why a catalog could not be read. Each message is one line that names the input and,
/// where there is one, the line and the field.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The input cannot be opened or read.
    #[error("cannot read {name}: {error}")]
    Io {
        /// The input's name.
        name: String,
        /// What the system said.
        error: std::io::Error,
    },
    /// A file that was read once cannot be read again from its start.
    #[error("cannot rewind {name}: {error}")]
    Rewind {
        /// The input's name.
        name: String,
        /// What the system said.
        error: std::io::Error,
    },
    /// The header, or a row's shape, is not what the command needs.
    #[error("{name}: {problem}")]
    Layout {
        /// The input's name.
        name: String,
        /// What is wrong, on one line.
        problem: String,
    },
    /// A field cannot be read.
    #[error("{name}: line {line}, field `{field}`: {value:?} is {reason}")]
    Field {
        /// The input's name.
        name: String,
        /// The line the row starts on.
        line: u64,
        /// The column's name.
        field: String,
        /// The field's text.
        value: String,
        /// What it is not.
        reason: String,
    },
}

/// Something that takes a catalog's events one at a time, in time order.
pub trait Sink {
    /// What the sink's own failure is; a failure to read converts into it.
    type Error: From<ReadError>;

    /// Takes the next event, no earlier than the one before. A sink that fails (Redis, say)
    /// stops the reading.
    fn event(&mut self, event: Event) -> Result<(), Self::Error>;

    /// Returns true if the sink does much for each event (several limiters, say), so that
    /// keys are best numbered on a thread of their own, between reading and the sink.
    fn busy(&self) -> bool {
        false
    }
}

/// Collecting the times is a sink too, at 8 bytes an event.
impl Sink for Vec<Timestamp> {
    type Error = ReadError;

    fn event(&mut self, event: Event) -> Result<(), ReadError> {
        self.push(event.time);
        Ok(())
    }
}

type Result<T, E = ReadError> = std::result::Result<T, E>;

/// A layout error: the header, or a row's shape.
fn layout(name: &str, problem: String) -> ReadError {
    ReadError::Layout { name: name.to_owned(), problem }
}

/// Feeds the events of `source` to a sink, in time order and stable for equal times, and
/// returns it. `fresh` makes the sink; it is called again if streaming has to start over.
///
/// With two cores or more, a second thread reads: it parses the rows and numbers their
/// keys, while this one feeds the sink, so that reading and deciding overlap. The events,
/// the errors and their order are those of reading on one thread.
pub fn read_events<S: Sink>(
    source: &Source,
    options: &ReadOptions,
    mut fresh: impl FnMut() -> S,
) -> Result<(S, ReadStats), S::Error> {
    let mut input = Opened::open(source)?;
    if input.can_rewind() {
        let mut sink = fresh();
        let busy = sink.busy();
        let mut last = None;
        let streamed = stream_input(&mut input, source, options, busy, |time, key| {
            if last.is_some_and(|last| time < last) {
                return Ok(Flow::Stop);
            }
            last = Some(time);
            sink.event(Event::new(time, key))?;
            Ok::<_, S::Error>(Flow::More)
        })?;
        if let Some(stats) = streamed {
            return Ok((sink, stats));
        }
    }
    let mut sink = fresh();
    let keyed = options.key_column.is_some();
    // Equal times (with equal keys) cannot be told apart, so unstable sorts keep replay
    // stable. Without keys, a time is all there is to keep.
    let mut events = Vec::new();
    let mut times = Vec::new();
    let stats = stream_input(&mut input, source, options, false, |time, key| {
        if keyed {
            events.push((time, key));
        } else {
            times.push(time);
        }
        Ok::<_, S::Error>(Flow::More)
    })?
    // `stream` gives `None` only when the taker says stop, and this one never does.
    .expect("a pass that is never stopped ends");
    events.sort_unstable();
    times.sort_unstable();
    for (time, key) in events {
        sink.event(Event::new(time, key))?;
    }
    for time in times {
        sink.event(Event::new(time, 0))?;
    }
    Ok((sink, stats))
}

/// Reads the events of an input that can be read from its start, as [`stream`] does: a
/// large CSV or TSV file in pieces on every thread, anything else as it comes.
fn stream_input<E: From<ReadError>>(
    input: &mut Opened,
    source: &Source,
    options: &ReadOptions,
    busy: bool,
    mut take: impl FnMut(Timestamp, Key) -> Result<Flow, E>,
) -> Result<Option<ReadStats>, E> {
    let size = input.size();
    #[cfg(unix)]
    let tabular = matches!(options.format, InputFormat::Csv | InputFormat::Tsv);
    #[cfg(unix)]
    let in_pieces = tabular
        && matches!(input, Opened::File { .. })
        && size.is_some_and(|size| size >= 2 * super::chunked::SMALLEST_PIECE);
    #[cfg(unix)]
    if let Opened::Once(_) = input
        && options.threads >= 2
        && tabular
    {
        let reader = input.reader(source)?;
        return match super::chunked::stream_pipe(reader, source, options, &mut take)? {
            Ok(stats) => Ok(stats),
            // A header the fast reading does not take: one thread reads it all.
            Err((read, rest)) => {
                let pass = Reading::new(io::Cursor::new(read).chain(rest), source, options, size)?;
                stream(pass, busy, take)
            }
        };
    }
    let mut pass = Reading::new(input.reader(source)?, source, options, size)?;
    #[cfg(unix)]
    if in_pieces {
        let header = pass.header();
        drop(pass);
        if let (Some(header), Opened::File { file, start }) = (header, &*input) {
            return super::chunked::stream(file, *start, &header, options, busy, take);
        }
        // The csv crate always has a header for a CSV it has read: not reached.
        pass = Reading::new(input.reader(source)?, source, options, size)?;
    }
    stream(pass, busy, take)
}

/// Returns the number of threads the machine runs at once: its cores, or 1 if that
/// cannot be told.
pub fn available_threads() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
}

/// Whether to go on reading.
pub(super) enum Flow {
    More,
    Stop,
}

/// Events handed from the reading thread at a time: enough that handing them over costs
/// little, few enough (64 KiB) that the memory for them is reused, not mapped afresh.
const BATCH: usize = 4096;

/// Reads every event of a pass and gives it to `take`, in order, until `take` says stop;
/// returns what reading found, or `None` if stopped. With two cores or more the pass runs
/// on a thread of its own, a few batches ahead; it numbers the keys too if the taker is
/// `busy`, else the taker does.
fn stream<R: Read + Send, E: From<ReadError>>(
    mut pass: Reading<'_, R>,
    busy: bool,
    mut take: impl FnMut(Timestamp, Key) -> Result<Flow, E>,
) -> Result<Option<ReadStats>, E> {
    if pass.options.threads < 2 {
        while let Some((time, key)) = pass.next_event()? {
            if let Flow::Stop = take(time, key)? {
                return Ok(None);
            }
        }
        return Ok(Some(pass.stats));
    }
    let (full, batches) = mpsc::sync_channel::<Result<Batch>>(4);
    let (empty, spares) = mpsc::channel::<Batch>();
    let keyed = pass.key.is_some();
    let name = pass.name.clone();
    // The table goes to the thread that numbers the keys.
    let mut keys = KeyTable::new();
    std::thread::scope(|scope| {
        let reader = scope.spawn(move || {
            loop {
                let mut batch = spares.try_recv().unwrap_or_default();
                batch.clear();
                let outcome = loop {
                    match pass.next_kept() {
                        Ok(Some(time)) => batch.push(time, pass.line(), pass.key_bytes()),
                        Ok(None) => break Ok(true),
                        Err(error) => break Err(error),
                    }
                    if batch.times.len() == BATCH {
                        break Ok(false);
                    }
                };
                // The events before an error go first, as they would on one thread; a
                // closed channel means the taker has stopped.
                let sent = full.send(Ok(batch));
                match outcome {
                    Ok(true) => return Some(pass.stats),
                    Ok(false) if sent.is_ok() => {}
                    Ok(false) => return None,
                    Err(error) => {
                        let _ = full.send(Err(error));
                        return None;
                    }
                }
            }
        });
        let (taken, keys) = if keyed && busy {
            // A third thread numbers the keys, between reading and taking: numbering
            // millions of new keys costs as much as parsing their rows.
            let (out, numbered) = mpsc::sync_channel::<Result<Batch>>(4);
            let numberer = scope.spawn(move || {
                for received in batches {
                    let mut batch = match received {
                        Ok(batch) => batch,
                        Err(error) => {
                            let _ = out.send(Err(error));
                            break;
                        }
                    };
                    let failed = number_batch(&mut batch, &mut keys, &name).err();
                    if out.send(Ok(batch)).is_err() {
                        break;
                    }
                    if let Some(error) = failed {
                        let _ = out.send(Err(error));
                        break;
                    }
                }
                keys
            });
            let taken = take_batches(numbered, empty, &mut take);
            (taken, joined(numberer))
        } else {
            let mut number = |batch: &mut Batch| match keyed {
                true => number_batch(batch, &mut keys, &name),
                false => {
                    batch.keys.resize(batch.times.len(), 0);
                    Ok(())
                }
            };
            let taken = take_numbered(batches, empty, &mut number, &mut take);
            (taken, keys)
        };
        // The receiver is gone, so a reader still sending stops.
        let stats = joined(reader);
        Ok(if taken? { stats.map(|stats| ReadStats { keys, ..stats }) } else { None })
    })
}

/// Numbers the keys of a batch in `keys`. If a key gets no number, the batch keeps the
/// events before it, and the error is returned.
fn number_batch(batch: &mut Batch, keys: &mut KeyTable, name: &str) -> Result<()> {
    batch.keys.clear();
    for event in 0..batch.times.len() {
        match keys_error(name, batch.lines[event], keys.intern(batch.key(event))) {
            Ok(key) => batch.keys.push(key),
            Err(error) => {
                batch.times.truncate(event);
                return Err(error);
            }
        }
    }
    Ok(())
}

/// Kept rows handed from the reading thread at once: their times, their lines and their
/// keys' bytes, and the keys' numbers once a thread has numbered them.
#[derive(Default)]
pub(super) struct Batch {
    pub(super) times: Vec<Timestamp>,
    keys: Vec<Key>,
    pub(super) lines: Vec<u64>,
    ends: Vec<usize>,
    bytes: Vec<u8>,
}

impl Batch {
    fn clear(&mut self) {
        self.times.clear();
        self.keys.clear();
        self.lines.clear();
        self.ends.clear();
        self.bytes.clear();
    }

    pub(super) fn push(&mut self, time: Timestamp, line: u64, key: &[u8]) {
        self.times.push(time);
        self.lines.push(line);
        self.bytes.extend_from_slice(key);
        self.ends.push(self.bytes.len());
    }

    pub(super) fn key(&self, event: usize) -> &[u8] {
        let start = if event == 0 { 0 } else { self.ends[event - 1] };
        &self.bytes[start..self.ends[event]]
    }
}

/// Gives the events of each numbered batch to `take` until it says stop (then `false`),
/// and sends each emptied batch back for reuse. It owns the receiver, so that returning,
/// on any path, lets the threads before it stop.
fn take_batches<E: From<ReadError>>(
    batches: mpsc::Receiver<Result<Batch>>,
    spares: mpsc::Sender<Batch>,
    take: &mut impl FnMut(Timestamp, Key) -> Result<Flow, E>,
) -> Result<bool, E> {
    take_numbered(batches, spares, &mut |_| Ok(()), take)
}

/// Gives the events of each batch, once `number` has numbered its keys, to `take`, as
/// [`take_batches`] does. The events before a key that gets no number are taken first.
fn take_numbered<E: From<ReadError>>(
    batches: mpsc::Receiver<Result<Batch>>,
    spares: mpsc::Sender<Batch>,
    number: &mut impl FnMut(&mut Batch) -> Result<()>,
    take: &mut impl FnMut(Timestamp, Key) -> Result<Flow, E>,
) -> Result<bool, E> {
    for received in batches {
        let mut batch = received?;
        let numbered = number(&mut batch);
        for (&time, &key) in batch.times.iter().zip(&batch.keys) {
            if let Flow::Stop = take(time, key)? {
                return Ok(false);
            }
        }
        numbered?;
        // The reader may have finished; then the batch is dropped.
        let _ = spares.send(batch);
    }
    Ok(true)
}

/// A catalog's rows, kept whole in time order, for writing them out again.
pub struct Rows {
    header: Vec<u8>,
    store: Vec<u8>,
    order: Vec<(Timestamp, usize)>,
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

    /// Returns the header line, without its line ending.
    pub fn header(&self) -> &[u8] {
        trim_line_end(&self.header)
    }

    /// Returns each event's time, key and row text (without its line ending), in time
    /// order.
    pub fn iter(&self) -> impl Iterator<Item = (Timestamp, Key, &[u8])> {
        // Each row is stored as its length, its key, and its text.
        let word =
            |at: usize| u32::from_le_bytes(self.store[at..at + 4].try_into().expect("4 bytes"));
        self.order.iter().map(move |&(time, at)| {
            // Widening: a u32 fits in a usize on the platforms this builds for (see `slot`).
            let (len, key) = (slot(word(at)), word(at + 4));
            (time, key, trim_line_end(&self.store[at + 8..at + 8 + len]))
        })
    }
}

/// Reads every kept row of `source` with its text, sorted by time, stable for equal times.
pub fn read_rows(source: &Source, options: &ReadOptions) -> Result<(Rows, ReadStats)> {
    let mut input = Opened::open(source)?;
    let size = input.size();
    let capture = Capture { inner: input.reader(source)?, seen: Vec::new(), base: 0 };
    let mut pass = Reading::new(capture, source, options, size)?;
    let mut rows = Rows { header: Vec::new(), store: Vec::new(), order: Vec::new() };
    if let RowReader::Csv(csv) = &pass.rows {
        rows.header = csv.get_ref().slice(0, csv.position().byte()).to_vec();
    }
    while let Some((time, key)) = pass.next_event()? {
        let start = pass.record.position().expect("records have positions").byte();
        let end = pass.rows.byte();
        let line = pass.line();
        let text: Cow<[u8]> = match &pass.rows {
            RowReader::Csv(csv) => Cow::Borrowed(trim_blank_lines(csv.get_ref().slice(start, end))),
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
        let len = u32::try_from(text.len()).map_err(|_| {
            layout(&pass.name, format!("line {line}: row too long to keep for --emit"))
        })?;
        rows.order.push((time, rows.store.len()));
        rows.store.extend_from_slice(&len.to_le_bytes());
        rows.store.extend_from_slice(&key.to_le_bytes());
        rows.store.extend_from_slice(&text);
        match &mut pass.rows {
            RowReader::Csv(csv) => csv.get_mut().forget_before(end),
            RowReader::Other(records) => records.get_mut().forget_before(end),
        }
    }
    // Row offsets grow with input order, so sorting by (time, offset) is stable by time.
    rows.order.sort_unstable();
    Ok((rows, pass.stats))
}

fn trim_line_end(line: &[u8]) -> &[u8] {
    let end = line.iter().rposition(|&b| b != b'\n' && b != b'\r').map_or(0, |i| i + 1);
    &line[..end]
}

fn trim_blank_lines(text: &[u8]) -> &[u8] {
    let start = text.iter().position(|&b| b != b'\n' && b != b'\r').unwrap_or(text.len());
    &text[start..]
}

/// An opened input. Regular files and built-in bytes can be read again from the start;
/// anything else (a pipe, a FIFO, `<(...)`, a device) is read once, as it comes.
enum Opened {
    File { file: File, start: u64 },
    Once(Option<Box<dyn Read + Send>>),
    Bytes(&'static [u8]),
}

impl Opened {
    fn open(source: &Source) -> Result<Opened> {
        Ok(match source {
            Source::Path(path) => {
                let file = File::open(path)
                    .map_err(|error| ReadError::Io { name: source.name(), error })?;
                match file.metadata() {
                    Ok(meta) if meta.is_file() => Opened::File { file, start: 0 },
                    _ => Opened::Once(Some(Box::new(file))),
                }
            }
            Source::Stdin => match stdin_file() {
                Some((file, start)) => Opened::File { file, start },
                None => Opened::Once(Some(Box::new(io::stdin()))),
            },
            Source::Embedded { bytes, .. } => Opened::Bytes(bytes),
        })
    }

    /// Returns the number of bytes to read, if it is known.
    fn size(&self) -> Option<u64> {
        match self {
            Opened::File { file, start } => {
                file.metadata().ok().map(|m| m.len().saturating_sub(*start))
            }
            Opened::Once(_) => None,
            // A slice's length fits in 64 bits on every platform Rust supports.
            Opened::Bytes(bytes) => Some(bytes.len() as u64),
        }
    }

    fn can_rewind(&self) -> bool {
        !matches!(self, Opened::Once(_))
    }

    /// Returns a reader from the start of the input; what cannot rewind is read only once.
    fn reader(&mut self, source: &Source) -> Result<Box<dyn Read + Send + '_>> {
        Ok(match self {
            Opened::File { file, start } => {
                file.seek(SeekFrom::Start(*start))
                    .map_err(|error| ReadError::Rewind { name: source.name(), error })?;
                Box::new(&*file)
            }
            Opened::Once(reader) => reader
                .take()
                .ok_or_else(|| layout(&source.name(), "cannot be read a second time".into()))?,
            Opened::Bytes(bytes) => Box::new(*bytes),
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

/// A reader that keeps what passes through it, so that rows can be copied out whole.
struct Capture<R> {
    inner: R,
    seen: Vec<u8>,
    base: u64,
}

impl<R> Capture<R> {
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

/// Where rows come from: the csv crate for CSV and TSV, records for the other formats.
enum RowReader<R> {
    Csv(csv::Reader<R>),
    Other(Records<R>),
}

/// A row that cannot be read, or an input that cannot: only the first may be skipped.
enum Bad {
    Row(ReadError),
    Input(ReadError),
}

impl<R: Read> RowReader<R> {
    /// Reads the next row into `record`; false at the end.
    fn read(&mut self, record: &mut ByteRecord, name: &str) -> Result<bool, Bad> {
        match self {
            RowReader::Csv(csv) => csv.read_byte_record(record).map_err(|e| match e.kind() {
                csv::ErrorKind::UnequalLengths { .. } => Bad::Row(csv_error(name, e)),
                _ => Bad::Input(csv_error(name, e)),
            }),
            RowReader::Other(records) => records.read(record).map_err(|failure| match failure {
                ReadFailure::Io(error) => {
                    Bad::Input(ReadError::Io { name: name.to_owned(), error })
                }
                ReadFailure::Record(e) => {
                    Bad::Row(layout(name, format!("line {}: {}", e.line, e.problem)))
                }
            }),
        }
    }

    /// Returns how far reading has come, in bytes.
    fn byte(&self) -> u64 {
        match self {
            RowReader::Csv(csv) => csv.position().byte(),
            RowReader::Other(records) => records.byte(),
        }
    }
}

/// One reading of the input, row by row.
pub(super) struct Reading<'a, R> {
    rows: RowReader<R>,
    record: ByteRecord,
    name: String,
    options: &'a ReadOptions,
    /// The time's columns: one, or several to join with spaces.
    time: Vec<usize>,
    joined: Vec<u8>,
    mag: Option<usize>,
    key: Option<usize>,
    /// For a reading resumed past the header, the header's number of fields, which each
    /// row must have; the csv crate checks it itself when it has read the header.
    width: Option<usize>,
    stats: ReadStats,
    progress: Progress,
}

impl<'a, R: Read> Reading<'a, R> {
    pub(super) fn new(
        reader: R,
        source: &Source,
        options: &'a ReadOptions,
        size: Option<u64>,
    ) -> Result<Reading<'a, R>> {
        let name = source.name();
        let format = options.format;
        let time_columns: Vec<&str> = options.time_column.split(',').collect();
        let mag_column = format.mag_column();
        let (rows, header) = match format {
            InputFormat::Csv | InputFormat::Tsv => {
                let delimiter = if format == InputFormat::Tsv { b'\t' } else { b',' };
                let mut csv = csv::ReaderBuilder::new()
                    .buffer_capacity(1 << 16)
                    .delimiter(delimiter)
                    .from_reader(reader);
                let header = csv.byte_headers().map_err(|e| csv_error(&name, e))?.clone();
                (RowReader::Csv(csv), header)
            }
            _ => {
                // The fields asked for, each once, are the header.
                let mut fields: Vec<String> = Vec::new();
                let wanted = time_columns.iter().copied();
                let wanted = wanted.chain(options.min_mag.map(|_| mag_column));
                for field in wanted.chain(options.key_column.as_deref()) {
                    if !fields.iter().any(|f| f == field) {
                        fields.push(field.to_owned());
                    }
                }
                let records = Records::new(reader, format, fields);
                let header = records.header();
                (RowReader::Other(records), header)
            }
        };
        let column = |wanted: &str, why: &str| {
            if header.is_empty() {
                // An empty input is an empty catalog, not a missing column.
                return Ok(0);
            }
            let mut found = header.iter().enumerate().filter(|(_, h)| *h == wanted.as_bytes());
            let wanted = one_line(wanted);
            match (found.next(), found.next()) {
                (Some((index, _)), None) => Ok(index),
                (Some((first, _)), Some((second, _))) => Err(layout(
                    &name,
                    format!(
                        "the header names `{wanted}` twice, as columns {} and {}; which one \
                         is meant cannot be told",
                        first + 1,
                        second + 1
                    ),
                )),
                (None, _) => {
                    let names: Vec<_> = header.iter().map(String::from_utf8_lossy).collect();
                    let names = one_line(&names.join(","));
                    let problem =
                        format!("no column named `{wanted}` {why}; the header has: {names}");
                    Err(layout(&name, problem))
                }
            }
        };
        let why = "(choose the time column with --time-column)";
        let time = time_columns.iter().map(|c| column(c, why)).collect::<Result<Vec<_>>>()?;
        let mag = match options.min_mag {
            Some(_) => Some(column(mag_column, "(needed by --min-mag)")?),
            None => None,
        };
        let key = match &options.key_column {
            Some(name) => Some(column(name, &format!("(named by {})", options.key_flag))?),
            None => None,
        };
        Ok(Reading {
            rows,
            record: ByteRecord::new(),
            name,
            options,
            time,
            joined: Vec::new(),
            mag,
            key,
            width: None,
            stats: ReadStats::default(),
            progress: Progress::new(options.progress, size),
        })
    }

    fn line(&self) -> u64 {
        self.record.position().map_or(0, |p| p.line())
    }

    /// Returns what reading found, ending the reading.
    pub(super) fn into_stats(self) -> ReadStats {
        self.stats
    }

    /// Returns what the header settled, and where the rows after it start, for reading
    /// them in pieces; `None` for a format that is not CSV or TSV.
    pub(super) fn header(&mut self) -> Option<Header> {
        let RowReader::Csv(csv) = &mut self.rows else { return None };
        let width = csv.byte_headers().ok()?.len();
        let body = csv.position().clone();
        Some(Header {
            name: self.name.clone(),
            time: self.time.clone(),
            mag: self.mag,
            key: self.key,
            width,
            body,
        })
    }

    /// Returns the time and key of the next row the filters keep.
    pub(super) fn next_event(&mut self) -> Result<Option<(Timestamp, Key)>> {
        let Some(time) = self.next_kept()? else { return Ok(None) };
        let key = match self.key {
            Some(index) => {
                let bytes = self.record.get(index).unwrap_or_default();
                keys_error(&self.name, self.line(), self.stats.keys.intern(bytes))?
            }
            None => 0,
        };
        Ok(Some((time, key)))
    }

    /// Reads up to the next row the filters keep, which stays in `record`, and returns its
    /// time. A bad row stops the reading, unless `--skip-bad` still allows one: then it is
    /// counted, and the first one's error kept.
    fn next_kept(&mut self) -> Result<Option<Timestamp>> {
        loop {
            let more = match self.rows.read(&mut self.record, &self.name) {
                Ok(more) => more,
                Err(Bad::Input(error)) => return Err(error),
                Err(Bad::Row(error)) => {
                    self.stats.rows += 1;
                    self.skip(error)?;
                    continue;
                }
            };
            if !more {
                return Ok(None);
            }
            self.stats.rows += 1;
            if let Some(width) = self.width
                && self.record.len() != width
            {
                let (width, found) = (wide(width), wide(self.record.len()));
                self.skip(unequal_lengths(&self.name, self.line(), width, found))?;
                continue;
            }
            self.progress.tick(self.stats.rows, self.rows.byte());
            match self.keep() {
                Ok(Some(time)) => {
                    self.stats.events += 1;
                    return Ok(Some(time));
                }
                Ok(None) => {}
                Err(error) => self.skip(error)?,
            }
        }
    }

    /// Skips a bad row if `--skip-bad` allows one more, else returns its error.
    fn skip(&mut self, error: ReadError) -> Result<()> {
        if self.stats.skipped >= self.options.skip_bad {
            return Err(error);
        }
        self.stats.skipped += 1;
        self.stats.first_skipped.get_or_insert_with(|| error.to_string());
        Ok(())
    }

    /// Returns the time of the row read last if the filters keep it, `None` if not.
    fn keep(&mut self) -> Result<Option<Timestamp>> {
        let time = time_text(&self.record, &self.time, &mut self.joined);
        let mag = self.mag.map(|index| self.record.get(index).unwrap_or_default());
        let kept = keep_row(time, mag, self.options, &mut self.stats);
        kept.map_err(|p| self.field_error(p.field, &p.value, p.reason))
    }

    /// The key of the row read last, as bytes; empty without a key column.
    fn key_bytes(&self) -> &[u8] {
        self.key.and_then(|index| self.record.get(index)).unwrap_or_default()
    }

    /// Returns the error for a field of the current record that cannot be read.
    fn field_error(&self, field: &str, text: &[u8], reason: String) -> ReadError {
        field_error(&self.name, self.line(), field, text, reason)
    }
}

/// Returns the error for a field that cannot be read, on line `line` of input `name`.
fn field_error(name: &str, line: u64, field: &str, text: &[u8], reason: String) -> ReadError {
    ReadError::Field {
        name: name.to_owned(),
        line,
        field: field.to_owned(),
        value: String::from_utf8_lossy(text).into_owned(),
        reason,
    }
}

/// What a CSV's header settled: the columns to read, the number of fields each row has,
/// and where the first row after it starts.
pub(super) struct Header {
    pub name: String,
    pub time: Vec<usize>,
    pub mag: Option<usize>,
    pub key: Option<usize>,
    pub width: usize,
    pub body: csv::Position,
}

impl<'a, R: Read + Seek> Reading<'a, R> {
    /// Returns a reading of `input` (of `size` bytes) that goes on from `at` (the start of a
    /// row, and its line), with what `header` settled and what reading found so far,
    /// `stats`.
    pub(super) fn resume(
        input: R,
        size: Option<u64>,
        header: &Header,
        options: &'a ReadOptions,
        at: csv::Position,
        stats: ReadStats,
    ) -> Result<Reading<'a, R>> {
        let delimiter = if options.format == InputFormat::Tsv { b'\t' } else { b',' };
        let mut csv = csv::ReaderBuilder::new()
            .buffer_capacity(1 << 16)
            .delimiter(delimiter)
            .has_headers(false)
            .flexible(true)
            .from_reader(input);
        // Not `seek`: it does nothing when the place asked for is where its reader thinks
        // it is, and before it looks, it has read a row from wherever `input` stood.
        csv.seek_raw(SeekFrom::Start(at.byte()), at).map_err(|e| csv_error(&header.name, e))?;
        Ok(Reading {
            rows: RowReader::Csv(csv),
            record: ByteRecord::new(),
            name: header.name.clone(),
            options,
            time: header.time.clone(),
            joined: Vec::new(),
            mag: header.mag,
            key: header.key,
            width: Some(header.width),
            stats,
            progress: Progress::new(options.progress, size),
        })
    }
}

/// Why a field of a row cannot be read: its column's name, its text and what it is not.
pub(super) struct FieldProblem<'o> {
    field: &'o str,
    value: Vec<u8>,
    reason: String,
}

/// Returns a row's time text: its one time field, or its several joined with spaces in
/// `joined`.
pub(super) fn time_text<'r>(
    record: &'r ByteRecord,
    time: &[usize],
    joined: &'r mut Vec<u8>,
) -> &'r [u8] {
    match time {
        [one] => record.get(*one).unwrap_or_default(),
        several => {
            joined.clear();
            for (n, &index) in several.iter().enumerate() {
                if n > 0 {
                    joined.push(b' ');
                }
                joined.extend_from_slice(record.get(index).unwrap_or_default());
            }
            joined
        }
    }
}

/// Returns the time of a row, from its time text and its magnitude's (if read), if the
/// filters keep it, `None` if not, counting a row left out for an empty magnitude in
/// `stats`.
pub(super) fn keep_row<'o>(
    text: &[u8],
    mag: Option<&[u8]>,
    options: &'o ReadOptions,
    stats: &mut ReadStats,
) -> Result<Option<Timestamp>, FieldProblem<'o>> {
    let problem = |field, text: &[u8], reason| FieldProblem { field, value: text.to_vec(), reason };
    let time = options
        .time_format
        .parse(text)
        .map_err(|e| problem(&options.time_column, text, e.to_string()))?;
    if options.since.is_some_and(|since| time < since)
        || options.until.is_some_and(|until| time >= until)
    {
        return Ok(None);
    }
    if let (Some(text), Some(min)) = (mag, options.min_mag) {
        if text.is_empty() {
            stats.no_magnitude += 1;
            return Ok(None);
        }
        let mag = decimal::parse_floor(text, 6)
            .map_err(|_| problem(options.format.mag_column(), text, "not a number".into()))?;
        if mag < min {
            return Ok(None);
        }
    }
    Ok(Some(time))
}

/// Returns the key a table gave, or the error of a table with no number left for it.
pub(super) fn keys_error(name: &str, line: u64, key: Option<Key>) -> Result<Key> {
    key.ok_or_else(|| layout(name, format!("line {line}: more than {} keys", Key::MAX)))
}

/// The error of a row whose fields the header's do not match in number.
fn unequal_lengths(name: &str, line: u64, expected: u64, found: u64) -> ReadError {
    layout(name, format!("line {line}: expected {expected} fields like the header, found {found}"))
}

/// Turns a CSV error into one line that names the input and the line.
fn csv_error(name: &str, err: csv::Error) -> ReadError {
    match err.kind() {
        csv::ErrorKind::Io(e) => {
            let error = std::io::Error::new(e.kind(), e.to_string());
            ReadError::Io { name: name.to_owned(), error }
        }
        csv::ErrorKind::UnequalLengths { pos, expected_len, len } => {
            let line = pos.as_ref().map_or(0, |p| p.line());
            unequal_lengths(name, line, *expected_len, *len)
        }
        _ => layout(name, one_line(&err.to_string())),
    }
}
