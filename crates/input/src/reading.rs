//! Reading an input row by row on one thread: the header, the rows, the bad rows skipped.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use csv::ByteRecord;

use super::bounded::{Bounded, LongRow, is_long_row};
use super::cost::Cost;
use super::error::{
    ReadError, Result, csv_error, field_error, keys_error, layout, unequal_lengths,
};
use super::event::Event;
use super::format::{InputFormat, JsonLayout, ReadFailure, Records};
use super::header::find_column;
use super::keys::{KeyTable, wide};
use super::options::ReadOptions;
use super::row::{Columns, CostAt, Scratch, row_event};
use super::several::Later;
use super::stats::ReadStats;
use crate::progress::{Measure, Ticker};
use crate::units::time::Timestamp;

/// Where rows come from: the csv crate for CSV and TSV, records for the other formats.
pub(super) enum RowReader<R> {
    Csv(csv::Reader<Bounded<R>>),
    Other(Records<Bounded<R>>),
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
            RowReader::Csv(csv) => {
                let read = csv.read_byte_record(record);
                csv.get_mut().row_ended();
                read.map_err(|e| match e.kind() {
                    csv::ErrorKind::UnequalLengths { .. } => Bad::Row(csv_error(name, e)),
                    _ => Bad::Input(csv_read_error(name, csv.position().line(), e)),
                })
            }
            RowReader::Other(records) => {
                let line = records.line();
                let read = records.read(record);
                records.get_mut().row_ended();
                read.map_err(|failure| match failure {
                    ReadFailure::Io(error) if is_long_row(&error) => {
                        Bad::Input(long_row(name, line))
                    }
                    ReadFailure::Io(error) => {
                        Bad::Input(ReadError::Io { name: name.to_owned(), error })
                    }
                    ReadFailure::Record(e) => {
                        Bad::Row(layout(name, format!("line {}: {}", e.line, e.problem)))
                    }
                })
            }
        }
    }

    /// Returns how far reading has come, in bytes.
    pub(super) fn byte(&self) -> u64 {
        match self {
            RowReader::Csv(csv) => csv.position().byte(),
            RowReader::Other(records) => records.byte(),
        }
    }
}

/// Returns the names of `width` columns without a header: 1, 2, and so on.
fn numbered(width: usize) -> ByteRecord {
    (1..=width).map(|column| column.to_string()).collect()
}

/// Returns what the csv crate's failure to read the row starting on `line` means: a row
/// too long for [`Bounded`], or what [`csv_error`] says.
fn csv_read_error(name: &str, line: u64, e: csv::Error) -> ReadError {
    match e.kind() {
        csv::ErrorKind::Io(error) if is_long_row(error) => long_row(name, line),
        _ => csv_error(name, e),
    }
}

/// Says that the row starting on `line` is longer than one row may be.
pub(super) fn long_row(name: &str, line: u64) -> ReadError {
    layout(name, format!("line {line}: {LongRow} (is it the format asked for?)"))
}

/// One reading of the input, row by row.
pub(super) struct Reading<'a, R> {
    pub(super) rows: RowReader<R>,
    pub(super) record: ByteRecord,
    pub(super) name: String,
    pub(super) options: &'a ReadOptions,
    pub(super) columns: Columns,
    scratch: Scratch,
    /// For a reading resumed past the header, the header's number of fields, which each
    /// row must have; the csv crate checks it itself when it has read the header.
    width: Option<usize>,
    pub(super) stats: ReadStats,
    progress: Ticker,
    /// The header the columns were found in: a CSV's first row, or the fields asked for.
    header: ByteRecord,
    /// The files to read after this one, as one catalog.
    later: Option<Later<'a, R>>,
    /// Whether the next row is a later file's first: a CSV's header, if it repeats the
    /// first file's, is left out.
    at_start: bool,
}

impl<'a, R: Read> Reading<'a, R> {
    /// Returns a reading of `reader`, the input called `name` (of `size` bytes, if known),
    /// from its start: its header read, the columns `options` names found in it.
    pub(super) fn new(
        reader: R,
        name: String,
        options: &'a ReadOptions,
        size: Measure,
    ) -> Result<Reading<'a, R>> {
        let (rows, header) = open_rows(reader, options, &name, None)?;
        let columns = resolve_columns(&header, options, &name)?;
        Ok(Reading {
            rows,
            record: ByteRecord::new(),
            name,
            options,
            columns,
            scratch: Scratch::default(),
            width: None,
            stats: ReadStats {
                keys: KeyTable::telling(&options.key_notes),
                ..ReadStats::default()
            },
            progress: options.ticker(size),
            header,
            later: None,
            at_start: false,
        })
    }

    /// Goes on, once this input ends, to the files of `later`, as one catalog.
    pub(super) fn then(self, later: Later<'a, R>) -> Reading<'a, R> {
        Reading { later: Some(later), ..self }
    }

    /// Goes on to the next of the later files, if there is one; false if there is none.
    fn next_file(&mut self) -> Result<bool> {
        let Some(later) = &mut self.later else { return Ok(false) };
        let Some((name, reader)) = later.next()? else { return Ok(false) };
        if self.header.is_empty() {
            // Nothing came before, not even a header: this file is read as the first is.
            let mut first = Reading::new(reader, name, self.options, (None, None))?;
            std::mem::swap(&mut first.progress, &mut self.progress);
            first.stats = std::mem::take(&mut self.stats);
            first.later = self.later.take();
            *self = first;
            return Ok(true);
        }
        let (rows, _) = open_rows(reader, self.options, &name, Some(&self.header))?;
        self.rows = rows;
        self.name = name;
        // A CSV's later file is read without a header of its own, so each row is checked
        // against the first file's here; other formats name their fields themselves.
        self.width = matches!(self.rows, RowReader::Csv(_)).then_some(self.header.len());
        self.at_start = true;
        Ok(true)
    }

    pub(super) fn line(&self) -> u64 {
        self.record.position().map_or(0, |p| p.line())
    }

    /// Returns what reading found, ending the reading.
    pub(super) fn into_stats(self) -> ReadStats {
        self.stats
    }

    /// Returns what the header settled, and where the rows after it start, for reading
    /// them in pieces; `None` for a format that is not CSV or TSV.
    pub(super) fn header(&mut self) -> Option<Header> {
        let (width, body, json) = match &mut self.rows {
            RowReader::Csv(csv) => {
                let width = csv.byte_headers().ok()?.len();
                // Without a header, the rows start where the input does.
                let body = match self.options.headers {
                    true => csv.position().clone(),
                    false => csv::Position::new(),
                };
                (width, body, None)
            }
            RowReader::Other(records) => {
                let (body, layout) = records.layout()?;
                (layout.fields.len(), body, Some(layout))
            }
        };
        Some(Header { name: self.name.clone(), columns: self.columns.clone(), width, body, json })
    }

    /// Returns the event of the next row the filters keep.
    pub(super) fn next_event(&mut self) -> Result<Option<Event>> {
        let Some((time, cost)) = self.next_kept()? else { return Ok(None) };
        let key = match self.columns.key {
            Some(index) => {
                let bytes = self.record.get(index).unwrap_or_default();
                keys_error(&self.name, self.line(), self.stats.keys.intern(bytes))?
            }
            None => 0,
        };
        Ok(Some(Event { time, key, cost }))
    }

    /// Reads up to the next row the filters keep, which stays in `record`, and returns its
    /// time and cost. A bad row stops the reading, unless `--skip-bad` still allows one: then it is
    /// counted, and the first one's error kept.
    pub(super) fn next_kept(&mut self) -> Result<Option<(Timestamp, u64)>> {
        loop {
            let at_start = std::mem::take(&mut self.at_start);
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
                if self.next_file()? {
                    continue;
                }
                return Ok(None);
            }
            if at_start && self.repeats_header() {
                continue;
            }
            self.stats.rows += 1;
            if let Some(width) = self.width
                && self.record.len() != width
            {
                let (width, found) = (wide(width), wide(self.record.len()));
                self.skip(unequal_lengths(&self.name, self.line(), width, found))?;
                continue;
            }
            self.progress.tick(self.stats.rows, self.rows.byte())?;
            match self.keep() {
                Ok(Some(kept)) => {
                    self.stats.events += 1;
                    return Ok(Some(kept));
                }
                Ok(None) => {}
                Err(error) => self.skip(error)?,
            }
        }
    }

    /// Whether the row read last is a repeat of the first file's header: only a format with
    /// a header row has one to repeat.
    fn repeats_header(&self) -> bool {
        self.options.headers
            && matches!(self.rows, RowReader::Csv(_))
            && self.record.iter().eq(self.header.iter())
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

    /// Returns the time and cost of the row read last if the filters keep it, `None` if not.
    fn keep(&mut self) -> Result<Option<(Timestamp, u64)>> {
        let (record, scratch) = (&self.record, &mut self.scratch);
        match row_event(record, &self.columns, self.options, scratch, &mut self.stats) {
            Ok(kept) => Ok(kept.map(|event| (event.time, event.cost))),
            Err(p) => {
                Err(field_error(&self.name, ("line", self.line()), p.field, &p.value, p.reason))
            }
        }
    }

    /// Returns field `index` of the row read last.
    pub(super) fn field(&self, index: usize) -> &[u8] {
        self.record.get(index).unwrap_or_default()
    }

    /// Returns the header the columns were found in.
    pub(super) fn header_record(&self) -> &ByteRecord {
        &self.header
    }

    /// The key of the row read last, as bytes; empty without a key column: the key
    /// [`row_event`] gave, as a record's fields need no scratch.
    pub(super) fn key_bytes(&self) -> &[u8] {
        self.columns.key.and_then(|index| self.record.get(index)).unwrap_or_default()
    }
}

/// Returns the rows of `reader` (the input `name`) and their header. For a later file of
/// several, `first` is the first file's header, which a CSV's later file is read by:
/// without a header of its own, its first row compared with that one by the reading.
fn open_rows<R: Read>(
    reader: R,
    options: &ReadOptions,
    name: &str,
    first: Option<&ByteRecord>,
) -> Result<(RowReader<R>, ByteRecord)> {
    match options.format {
        InputFormat::Csv | InputFormat::Tsv => {
            let mut csv = csv::ReaderBuilder::new()
                .buffer_capacity(1 << 16)
                .delimiter(options.delimiter())
                .has_headers(options.headers && first.is_none())
                .flexible(first.is_some())
                .from_reader(Bounded::new(reader));
            if let Some(first) = first {
                return Ok((RowReader::Csv(csv), first.clone()));
            }
            let header = match csv.byte_headers() {
                // Without a header, the first row gives the number of columns.
                Ok(first) if !options.headers => numbered(first.len()),
                Ok(header) => header.clone(),
                Err(e) => return Err(csv_read_error(name, 1, e)),
            };
            csv.get_mut().row_ended();
            Ok((RowReader::Csv(csv), header))
        }
        InputFormat::Parquet => Err(parquet_not_here(name)),
        format => {
            // The fields asked for, each once, are the header.
            let fields = asked_fields(options);
            let records = Records::new(Bounded::new(reader), format, fields)
                .with_log_format(options.log_format.clone());
            let header = records.header();
            Ok((RowReader::Other(records), header))
        }
    }
}

/// Says where Parquet is not read: it is read from a file, by its row groups (its index is
/// at its end), and only where this program was built with it.
pub(super) fn parquet_not_here(name: &str) -> ReadError {
    let problem = if cfg!(all(unix, feature = "parquet")) {
        "Parquet is read from a file, by its row groups: not from a pipe, and not row by row \
         as --emit, report's magnitudes and filter read"
    } else {
        "this ratelimit was built without Parquet (its `parquet` feature)"
    };
    layout(name, problem.into())
}

/// Returns the fields a reading asks for, each once: the time's, the column filters', the
/// cost's and the key's.
pub(super) fn asked_fields(options: &ReadOptions) -> Vec<String> {
    let mut fields: Vec<String> = Vec::new();
    let wanted = options.time_column.split(',');
    let wanted = wanted.chain(options.column_filters().map(|f| f.column.as_str()));
    let wanted = wanted.chain(options.cost_column());
    let wanted = wanted.chain(options.also.iter().map(String::as_str));
    for field in wanted.chain(options.key_column.as_deref()) {
        if !fields.iter().any(|f| f == field) {
            fields.push(field.to_owned());
        }
    }
    fields
}

/// Finds column `wanted` in `header`, the names of input `name`'s fields, or says why it
/// is not there (`why`: what asked for it). An empty input is an empty catalog, not a
/// missing column: every column of it is the first.
pub(super) fn column_in(header: &ByteRecord, wanted: &str, why: &str, name: &str) -> Result<usize> {
    if header.is_empty() {
        return Ok(0);
    }
    find_column(header, wanted, why).map_err(|problem| layout(name, problem.to_string()))
}

/// Finds the columns `options` names in `header`, the names of input `name`'s fields.
pub(super) fn resolve_columns(
    header: &ByteRecord,
    options: &ReadOptions,
    name: &str,
) -> Result<Columns> {
    let column = |wanted: &str, why: &str| column_in(header, wanted, why, name);
    // A header that is an access log's line: the log was read as CSV.
    let logged = super::clf::is_access_log_line(&header.iter().collect::<Vec<_>>().join(&b","[..]));
    let why = match logged {
        true => "(this is an access log read as CSV: give --input-format clf)",
        false => "(choose the time column with --time-column)",
    };
    let time =
        options.time_column.split(',').map(|c| column(c, why)).collect::<Result<Vec<_>>>()?;
    let filters = (options.column_filters())
        .map(|f| column(&f.column, &format!("(needed by {})", f.asked_by)))
        .collect::<Result<Vec<_>>>()?;
    let key = match &options.key_column {
        Some(key) => Some(column(key, &format!("(named by {})", options.key_asked_by))?),
        None => None,
    };
    let cost = match &options.cost {
        Cost::Each(units) => CostAt::Each(*units),
        Cost::Column(name) => CostAt::Column(column(name, "(named by --cost)")?),
    };
    Ok(Columns { time, filters, key, cost })
}

/// What a CSV's header settled: the columns to read, the number of fields each row has,
/// and where the first row after it starts.
pub(super) struct Header {
    pub name: String,
    pub columns: Columns,
    pub width: usize,
    pub body: csv::Position,
    /// For JSON Lines and GeoJSON, how their records are read.
    pub json: Option<JsonLayout>,
}

impl<'a, R: Read + Seek> Reading<'a, R> {
    /// Returns a reading of `input` (of `size` bytes) that goes on from `at` (the start of a
    /// row, and its line), with what `header` settled and what reading found so far,
    /// `stats`.
    pub(super) fn resume(
        input: R,
        size: Measure,
        header: &Header,
        options: &'a ReadOptions,
        at: csv::Position,
        stats: ReadStats,
    ) -> Result<Reading<'a, R>> {
        let mut input = Bounded::new(input);
        let rows = match &header.json {
            Some(layout) => {
                input
                    .seek(SeekFrom::Start(at.byte()))
                    .map_err(|error| ReadError::Rewind { name: header.name.clone(), error })?;
                RowReader::Other(Records::resume(input, layout, at.byte(), at.line()))
            }
            None => RowReader::Csv(resume_csv(input, header, options, &at)?),
        };
        Ok(Reading {
            rows,
            record: ByteRecord::new(),
            name: header.name.clone(),
            options,
            columns: header.columns.clone(),
            scratch: Scratch::default(),
            width: Some(header.width),
            stats,
            progress: options.ticker(size),
            header: ByteRecord::new(),
            later: None,
            at_start: false,
        })
    }
}

/// Returns a CSV reader of `input` that goes on from `at`, as [`Reading::resume`] does.
fn resume_csv<R: Read + Seek>(
    input: Bounded<R>,
    header: &Header,
    options: &ReadOptions,
    at: &csv::Position,
) -> Result<csv::Reader<Bounded<R>>> {
    let mut csv = csv::ReaderBuilder::new()
        .buffer_capacity(1 << 16)
        .delimiter(options.delimiter())
        .has_headers(false)
        .flexible(true)
        .from_reader(input);
    // Not `seek`: it does nothing when the place asked for is where its reader thinks
    // it is, and before it looks, it has read a row from wherever `input` stood.
    // That row is the one at `at`, which is read next anyway, when `input` stands there.
    csv.get_mut()
        .seek(SeekFrom::Start(at.byte()))
        .map_err(|error| ReadError::Rewind { name: header.name.clone(), error })?;
    let line = at.line();
    csv.seek_raw(SeekFrom::Start(at.byte()), at.clone())
        .map_err(|e| csv_read_error(&header.name, line, e))?;
    Ok(csv)
}

/// Returns a reading of `paths`, one after the other, each file's bytes given by `open`.
pub(super) fn several<'a, R: Read>(
    paths: &[PathBuf],
    options: &'a ReadOptions,
    open: impl FnMut(&Path) -> Result<R> + Send + 'a,
    measure: Measure,
) -> Result<Reading<'a, R>> {
    let mut later = Later::new(paths, open);
    let Some((name, first)) = later.next()? else {
        return Err(layout("no files", "several files were asked for, and none given".into()));
    };
    Ok(Reading::new(first, name, options, measure)?.then(later))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::{layout::TimeLayout, time::TimeFormat};

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
        let mut pass = several(&paths, options, open, (None, None)).map_err(|e| e.to_string())?;
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
