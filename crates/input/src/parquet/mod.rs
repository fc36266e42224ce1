//! Reading Parquet files: only the columns a command needs, row groups on every thread.
//!
//! The columns are found by name (a nested one by its dotted path) in the file's schema,
//! and each row's fields are given to [`row_event`] as the text a CSV would hold (an
//! integer in decimal, a float as Rust writes it, a decimal with its point), so that what
//! a row makes is decided as for every other format. A time stored as a timestamp, a date
//! or an INT96 is taken as it is, whatever `--time-format` says. Row groups are decoded on
//! every thread, in slices of [`SLICE`] rows, and taken in order.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::sync::{Arc, mpsc};

use bytes::Bytes;
use csv::ByteRecord;
use parquet::file::reader::{ChunkReader, FileReader, Length};
use parquet::file::serialized_reader::SerializedFileReader;

mod columns;
mod pages;

use self::columns::{Cells, Kind, TimeScale, decode, kind_of};
use super::columnar::{self, SLICE, Slice, Taker, events};
use super::error::{ReadError, layout};
use super::keys::wide;
use super::options::ReadOptions;
use super::pipeline::Flow;
use super::reading::Header;
use super::row::Fields;
use super::stats::ReadStats;
use crate::units::time::Timestamp;

/// Row `row` of a slice: its fields, by the schema's column numbers.
struct SliceRow<'s> {
    cells: &'s [Cells],
    /// For each column of the schema, which of `cells` holds it.
    slot_of: &'s [usize],
    /// The slot of the time's column, if it is stored as a time.
    time: Option<usize>,
    finer: bool,
    row: usize,
}

impl Fields for SliceRow<'_> {
    fn field<'a>(&'a self, index: usize, _: &'a mut Vec<u8>) -> &'a [u8] {
        match self.slot_of.get(index) {
            Some(&slot) if slot < self.cells.len() => self.cells[slot].values.get(self.row),
            _ => &[],
        }
    }

    fn time(&self) -> Option<(Timestamp, bool)> {
        let time = self.cells[self.time?].times[self.row]?;
        Some((time, self.finer))
    }
}

/// A file read at given places (`pread`), so that threads reading it share no offset:
/// the `parquet` crate's reader of a `File` seeks a clone, whose offset all clones share.
struct Placed(Arc<File>);

impl Length for Placed {
    fn len(&self) -> u64 {
        self.0.metadata().map_or(0, |m| m.len())
    }
}

impl ChunkReader for Placed {
    type T = PlacedRead;

    fn get_read(&self, start: u64) -> parquet::errors::Result<PlacedRead> {
        Ok(PlacedRead { file: Arc::clone(&self.0), at: start })
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        // A length the file cannot hold is refused before it is allocated.
        if start.saturating_add(wide(length)) > self.len() {
            let problem = format!("{length} bytes at byte {start}, past the file's end");
            return Err(parquet::errors::ParquetError::EOF(problem));
        }
        let mut buffer = vec![0; length];
        self.0.read_exact_at(&mut buffer, start)?;
        Ok(buffer.into())
    }
}

/// A reader of a [`Placed`] file from a place on.
struct PlacedRead {
    file: Arc<File>,
    at: u64,
}

impl Read for PlacedRead {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        let read = self.file.read_at(buffer, self.at)?;
        self.at += wide(read);
        Ok(read)
    }
}

/// What every worker reads with: the file, the columns and what the header settled.
struct Plan<'a> {
    reader: &'a SerializedFileReader<Placed>,
    /// The file, for reading page headers ahead of the decoder.
    file: Arc<File>,
    header: &'a Header,
    options: &'a ReadOptions,
    /// The schema's numbers of the columns read, and how each is written.
    read: Vec<(usize, Kind)>,
    slot_of: Vec<usize>,
    time: Option<usize>,
    finer: bool,
    /// The first row of each row group, counted from 1.
    first_rows: Vec<u64>,
}

impl Plan<'_> {
    /// Decodes row group `group`, giving each slice to `send` until it says stop.
    fn decode(
        &self,
        group: usize,
        send: &mut impl FnMut(Result<Slice, ReadError>) -> bool,
    ) -> Result<(), ()> {
        let name = &self.header.name;
        let fail = |e: parquet::errors::ParquetError| {
            layout(
                name,
                format!("cannot read Parquet: {}", crate::message::one_line(&e.to_string())),
            )
        };
        let opened = self.reader.get_row_group(group).map_err(fail);
        let row_group = match opened {
            Ok(row_group) => row_group,
            Err(error) => return if send(Err(error)) { Ok(()) } else { Err(()) },
        };
        let mut readers = Vec::with_capacity(self.read.len());
        for &(column, _) in &self.read {
            // No page is decompressed past its bound: its header says its size first.
            if let Err(error) = self.check_pages(group, column) {
                return if send(Err(error)) { Ok(()) } else { Err(()) };
            }
            match row_group.get_column_reader(column).map_err(fail) {
                Ok(reader) => readers.push(reader),
                Err(error) => return if send(Err(error)) { Ok(()) } else { Err(()) },
            }
        }
        let rows = usize::try_from(row_group.metadata().num_rows()).unwrap_or(0);
        let schema = self.reader.metadata().file_metadata().schema_descr();
        let max_def: Vec<i16> =
            self.read.iter().map(|&(c, _)| schema.column(c).max_def_level()).collect();
        let mut cells: Vec<Cells> = self.read.iter().map(|_| Cells::default()).collect();
        let mut levels = Vec::new();
        let mut done = 0;
        let mut row_number = self.first_rows[group];
        while done < rows {
            let want = SLICE.min(rows - done);
            for (at, reader) in readers.iter_mut().enumerate() {
                cells[at].clear();
                let kind = self.read[at].1;
                let read = decode(reader, want, max_def[at], kind, &mut levels, &mut cells[at]);
                if let Some((index, length)) = cells[at].too_long {
                    let problem = format!(
                        "row {}, field `{}`: a value of {} MiB, past the 16 MiB a field may hold \
                         (as a CSV row may)",
                        row_number + wide(index),
                        self.column_name(self.read[at].0),
                        length >> 20
                    );
                    return if send(Err(layout(name, problem))) { Ok(()) } else { Err(()) };
                }
                match read.map_err(fail) {
                    Ok(got) if got == want => {}
                    Ok(got) => {
                        let problem = format!(
                            "cannot read Parquet: row group {group} ends after {} of its {rows} rows",
                            done + got
                        );
                        return if send(Err(layout(name, problem))) { Ok(()) } else { Err(()) };
                    }
                    Err(error) => return if send(Err(error)) { Ok(()) } else { Err(()) },
                }
            }
            let slice = self.events(&cells, want, row_number);
            done += want;
            row_number += wide(want);
            if !send(Ok(Slice { last: done == rows, ..slice })) {
                return Err(());
            }
        }
        if rows == 0 && !send(Ok(self.events(&cells, 0, row_number))) {
            return Err(());
        }
        Ok(())
    }

    /// Returns column `column`'s name, its dotted path.
    fn column_name(&self, column: usize) -> String {
        let schema = self.reader.metadata().file_metadata().schema_descr();
        crate::message::one_line(&schema.column(column).path().string())
    }

    /// Reads the page headers of column `column` in row group `group` and refuses a page
    /// past [`pages::MOST_PAGE`] uncompressed, naming its first row and the column.
    fn check_pages(&self, group: usize, column: usize) -> Result<(), ReadError> {
        let name = &self.header.name;
        let chunk = self.reader.metadata().row_group(group).column(column);
        let start = chunk.dictionary_page_offset().unwrap_or(chunk.data_page_offset());
        let (Ok(start), Ok(length)) =
            (u64::try_from(start), u64::try_from(chunk.compressed_size()))
        else {
            return Err(layout(
                name,
                "cannot read Parquet: a column chunk at a negative place".into(),
            ));
        };
        let end = start.saturating_add(length);
        let (mut at, mut row) = (start, self.first_rows[group]);
        while at < end {
            let read = PlacedRead { file: Arc::clone(&self.file), at };
            let (page, header) = pages::header(std::io::BufReader::new(read)).map_err(|e| {
                let why = crate::message::one_line(&e.to_string());
                layout(name, format!("cannot read Parquet: the page at byte {at}: {why}"))
            })?;
            if page.uncompressed > pages::MOST_PAGE {
                let problem = format!(
                    "row {row}, field `{}`: a page of {} MiB uncompressed, past the {} MiB a \
                     page may hold here (a field may hold 16 MiB, as a CSV row may)",
                    self.column_name(column),
                    page.uncompressed >> 20,
                    pages::MOST_PAGE >> 20
                );
                return Err(layout(name, problem));
            }
            if page.data {
                row = row.saturating_add(page.values);
            }
            at = at.saturating_add(header).saturating_add(page.compressed);
        }
        Ok(())
    }

    /// Makes the events of `rows` decoded rows, the first of them row `first`.
    fn events(&self, cells: &[Cells], rows: usize, first: u64) -> Slice {
        let (slot_of, time, finer) = (&self.slot_of[..], self.time, self.finer);
        events(rows, first, self.header, self.options, |row| SliceRow {
            cells,
            slot_of,
            time,
            finer,
            row,
        })
    }
}

/// Reads the events of the Parquet files `files`, each with its name, one after the other,
/// as [`super::chunked::stream`] reads a CSV's: each to `take`, in order, until it says
/// stop (then `None`).
pub(super) fn stream<E: From<ReadError>>(
    files: &[(File, String)],
    options: &ReadOptions,
    mut take: impl FnMut(super::event::Event) -> Result<Flow, E>,
) -> Result<Option<ReadStats>, E> {
    // One taker for every file: its keys, counts and bad rows go on from one to the next.
    let mut taker = Taker::new(options);
    for (file, name) in files {
        if let Flow::Stop = stream_one(file, name, options, &mut taker, &mut take)? {
            return Ok(None);
        }
    }
    Ok(Some(taker.finish()))
}

/// Reads the events of one Parquet file into `taker`, as [`stream`] does; says whether
/// `take` asked to stop.
fn stream_one<E: From<ReadError>>(
    file: &File,
    name: &str,
    options: &ReadOptions,
    taker: &mut Taker,
    take: &mut impl FnMut(super::event::Event) -> Result<Flow, E>,
) -> Result<Flow, E> {
    let not_parquet = |e: parquet::errors::ParquetError| {
        layout(name, format!("not a Parquet file: {}", crate::message::one_line(&e.to_string())))
    };
    let copy = file.try_clone().map_err(|error| ReadError::Io { name: name.to_owned(), error })?;
    let copy = Arc::new(copy);
    let reader = SerializedFileReader::new(Placed(Arc::clone(&copy))).map_err(not_parquet)?;
    let metadata = reader.metadata();
    let schema = metadata.file_metadata().schema_descr();
    let names: ByteRecord = schema.columns().iter().map(|c| c.path().string()).collect();
    let (header, wanted) = columnar::header(&names, options, name)?;
    let mut read = Vec::with_capacity(wanted.len());
    for &column in &wanted {
        read.push((column, kind_of(schema.column(column).as_ref()).map_err(|p| layout(name, p))?));
    }
    let mut slot_of = vec![usize::MAX; schema.num_columns()];
    for (slot, &(column, _)) in read.iter().enumerate() {
        slot_of[column] = slot;
    }
    // A time stored as one is taken as it is, if the time is one column.
    let (time, finer) = match header.columns.time[..] {
        [one] => match read[slot_of[one]].1 {
            Kind::Time(scale) => (Some(slot_of[one]), scale != TimeScale::Days),
            Kind::Int96 => (Some(slot_of[one]), true),
            _ => (None, false),
        },
        _ => (None, false),
    };
    let groups = metadata.num_row_groups();
    let mut first_rows = Vec::with_capacity(groups);
    let mut next_row = 1u64;
    for group in metadata.row_groups() {
        first_rows.push(next_row);
        next_row += u64::try_from(group.num_rows()).unwrap_or(0);
    }
    let plan = Plan {
        reader: &reader,
        file: copy,
        header: &header,
        options,
        read,
        slot_of,
        time,
        finer,
        first_rows,
    };
    let workers = options.threads.clamp(1, groups.max(1));
    if workers == 1 {
        for group in 0..groups {
            let mut stop = None;
            let mut give = |slice: Result<Slice, ReadError>| match taker.slice(slice, &header, take)
            {
                Ok(Flow::More) => true,
                other => {
                    stop = Some(other);
                    false
                }
            };
            let _ = plan.decode(group, &mut give);
            match stop {
                Some(Ok(_)) => return Ok(Flow::Stop),
                Some(Err(error)) => return Err(error),
                None => {}
            }
        }
        return Ok(Flow::More);
    }
    std::thread::scope(|scope| {
        let mut receivers = Vec::with_capacity(workers);
        for worker in 0..workers {
            let (send, receive) = mpsc::sync_channel::<Result<Slice, ReadError>>(2);
            receivers.push(receive);
            let plan = &plan;
            scope.spawn(move || {
                let mut give = |slice| send.send(slice).is_ok();
                let mut group = worker;
                while group < groups {
                    if plan.decode(group, &mut give).is_err() {
                        return;
                    }
                    group += workers;
                }
            });
        }
        for group in 0..groups {
            loop {
                // Each worker sends its row groups' slices in order; a worker gone means
                // it failed to send, as this thread stopped taking.
                let Ok(slice) = receivers[group % workers].recv() else { return Ok(Flow::Stop) };
                let last = slice.as_ref().map_or(true, |s| s.last);
                if let Flow::Stop = taker.slice(slice, &header, take)? {
                    return Ok(Flow::Stop);
                }
                if last {
                    break;
                }
            }
        }
        Ok(Flow::More)
    })
}
