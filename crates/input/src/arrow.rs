//! Reading Arrow record batches held in memory, where they are: a data frame's columns, as
//! a binding hands them over.
//!
//! Each row's fields are given to the one row reader as the text a CSV would hold (a
//! string as it is, an integer in decimal, a float as Rust writes it), as Parquet's are, so
//! that a row makes the same event whatever holds it. A time column of timestamps (of any
//! unit and zone: the instant is the same) or of dates is taken as it is, whatever
//! `--time-format` says. A null is an empty field. Nothing is copied: a string is read
//! where it lies, a number is written out in a buffer kept from row to row.

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Date64Type, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type,
    TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use arrow_array::{Array, ArrowPrimitiveType, RecordBatch};
use arrow_schema::{DataType, TimeUnit};
use csv::ByteRecord;

use super::arrow_data::ArrowData;
use super::bounded::MOST_ROW;
use super::columnar::{self, SLICE, Slice, Taker, events};
use super::error::{ReadError, layout};
use super::event::Event;
use super::keys::wide;
use super::options::ReadOptions;
use super::pipeline::Flow;
use super::reading::Header;
use super::row::Fields;
use super::stats::ReadStats;
use crate::units::time::Timestamp;

/// A column read a row at a time: its text, written out if it is not text already, and
/// for a time stored as one, its microseconds since the epoch.
struct Column<'a> {
    array: &'a dyn Array,
    text: Text<'a>,
    /// The column's microseconds since the epoch, if it holds times; `None` for a time out
    /// of range, which is then read (and refused) from its number.
    time: Option<Time<'a>>,
}

/// Writes a column's value in a row, as text.
type Write<'a> = Box<dyn Fn(usize, &mut Vec<u8>) + 'a>;

/// A column's instant in a row, if it is in range.
type Time<'a> = Box<dyn Fn(usize) -> Option<Timestamp> + 'a>;

/// The first row of `column` whose value, where it lies, is longer than a field may be
/// ([`MOST_ROW`], as a row of a file): only an array that holds more than that in all is
/// looked through. A value written (a number, a time) is short.
fn too_long(column: &Column<'_>, array: &dyn Array) -> Option<usize> {
    let Text::Borrowed(value) = &column.text else { return None };
    if wide(array.get_buffer_memory_size()) <= MOST_ROW {
        return None;
    }
    (0..array.len()).find(|&row| array.is_valid(row) && wide(value(row).len()) > MOST_ROW)
}

/// How a column's value is had as text.
enum Text<'a> {
    /// Borrowed where it lies.
    Borrowed(Box<dyn Fn(usize) -> &'a [u8] + 'a>),
    /// Written into a buffer.
    Written(Write<'a>),
    /// Every value is null.
    Empty,
}

/// Row `row` of a batch: its fields, by the schema's column numbers.
struct ArrowRow<'s, 'a> {
    columns: &'s [Option<Column<'a>>],
    /// The column of the time, if it is stored as a time.
    time: Option<usize>,
    finer: bool,
    row: usize,
}

impl Fields for ArrowRow<'_, '_> {
    fn field<'f>(&'f self, index: usize, scratch: &'f mut Vec<u8>) -> &'f [u8] {
        let Some(Some(column)) = self.columns.get(index) else { return &[] };
        if column.array.is_null(self.row) {
            return &[];
        }
        match &column.text {
            Text::Borrowed(text) => text(self.row),
            Text::Written(write) => {
                scratch.clear();
                write(self.row, scratch);
                scratch
            }
            Text::Empty => &[],
        }
    }

    fn time(&self) -> Option<(Timestamp, bool)> {
        let column = self.columns[self.time?].as_ref()?;
        if column.array.is_null(self.row) {
            return None;
        }
        Some((column.time.as_ref()?(self.row)?, self.finer))
    }
}

/// Returns a column's text and time, or why it cannot be read.
fn column<'a>(array: &'a dyn Array, name: &str) -> Result<Column<'a>, String> {
    fn number<'a, T: ArrowPrimitiveType>(
        array: &'a dyn Array,
        write: impl Fn(T::Native, &mut Vec<u8>) + 'a,
    ) -> Text<'a> {
        let values = array.as_primitive::<T>();
        Text::Written(Box::new(move |row, out| write(values.value(row), out)))
    }
    fn integer(value: impl itoa::Integer, out: &mut Vec<u8>) {
        out.extend_from_slice(itoa::Buffer::new().format(value).as_bytes());
    }
    /// A float as Rust writes it (the shortest text that reads back the same), and a
    /// boolean as `true` or `false`, as Parquet's are.
    fn shown(value: impl ToString, out: &mut Vec<u8>) {
        out.extend_from_slice(value.to_string().as_bytes());
    }
    /// A column of times, each as its number and as its instant.
    fn stamps<'a, T: ArrowPrimitiveType<Native = i64>>(
        array: &'a dyn Array,
        micros: fn(i64) -> Option<i64>,
    ) -> (Text<'a>, Option<Time<'a>>) {
        let values = array.as_primitive::<T>();
        let time = move |row| Timestamp::from_micros(micros(values.value(row))?);
        (number::<T>(array, integer), Some(Box::new(time)))
    }
    let millis: fn(i64) -> Option<i64> = |ms| ms.checked_mul(1000);
    let (text, time) = match array.data_type() {
        DataType::Utf8 => {
            let strings = array.as_string::<i32>();
            (Text::Borrowed(Box::new(move |row| strings.value(row).as_bytes())), None)
        }
        DataType::LargeUtf8 => {
            let strings = array.as_string::<i64>();
            (Text::Borrowed(Box::new(move |row| strings.value(row).as_bytes())), None)
        }
        DataType::Utf8View => {
            let strings = array.as_string_view();
            (Text::Borrowed(Box::new(move |row| strings.value(row).as_bytes())), None)
        }
        DataType::Dictionary(_, values) if is_string(values) => {
            let dictionary = array.as_any_dictionary();
            let keys = dictionary.normalized_keys();
            let values = column(dictionary.values().as_ref(), name)?;
            let Text::Borrowed(value) = values.text else {
                return Err(format!("column `{name}`: a dictionary of strings unread"));
            };
            (Text::Borrowed(Box::new(move |row| value(keys[row]))), None)
        }
        DataType::Int8 => (number::<Int8Type>(array, integer), None),
        DataType::Int16 => (number::<Int16Type>(array, integer), None),
        DataType::Int32 => (number::<Int32Type>(array, integer), None),
        DataType::Int64 => (number::<Int64Type>(array, integer), None),
        DataType::UInt8 => (number::<UInt8Type>(array, integer), None),
        DataType::UInt16 => (number::<UInt16Type>(array, integer), None),
        DataType::UInt32 => (number::<UInt32Type>(array, integer), None),
        DataType::UInt64 => (number::<UInt64Type>(array, integer), None),
        DataType::Float32 => (number::<Float32Type>(array, shown), None),
        DataType::Float64 => (number::<Float64Type>(array, shown), None),
        DataType::Boolean => {
            let values = array.as_boolean();
            let text = move |row, out: &mut Vec<u8>| shown(values.value(row), out);
            (Text::Written(Box::new(text)), None)
        }
        DataType::Null => (Text::Empty, None),
        DataType::Timestamp(TimeUnit::Second, _) => {
            let micros = |s: i64| s.checked_mul(1_000_000);
            stamps::<TimestampSecondType>(array, micros)
        }
        DataType::Timestamp(TimeUnit::Millisecond, _) => {
            stamps::<TimestampMillisecondType>(array, millis)
        }
        DataType::Timestamp(TimeUnit::Microsecond, _) => {
            stamps::<TimestampMicrosecondType>(array, Some)
        }
        // Cut to the microsecond before, as a finer fraction in a text time is.
        DataType::Timestamp(TimeUnit::Nanosecond, _) => {
            stamps::<TimestampNanosecondType>(array, |ns| Some(ns.div_euclid(1000)))
        }
        DataType::Date32 => {
            let days = array.as_primitive::<Date32Type>();
            let time = move |row| {
                Timestamp::from_micros(i64::from(days.value(row)).checked_mul(86_400_000_000)?)
            };
            (number::<Date32Type>(array, integer), Some(Box::new(time) as Time<'a>))
        }
        DataType::Date64 => stamps::<Date64Type>(array, millis),
        other => {
            return Err(format!(
                "column `{name}` holds {other}; read are strings, numbers, booleans, \
                 timestamps and dates"
            ));
        }
    };
    Ok(Column { array, text, time })
}

/// Whether a dictionary's values are strings.
fn is_string(values: &DataType) -> bool {
    matches!(values, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
}

/// Whether a column of this type holds times finer than whole seconds.
fn finer(data_type: &DataType) -> bool {
    !matches!(
        data_type,
        DataType::Timestamp(TimeUnit::Second, _) | DataType::Date32 | DataType::Date64
    )
}

/// Reads the events of `data`, as [`super::chunked::stream`] reads a CSV's: each to
/// `take`, in order, until it says stop (then `None`).
pub(super) fn stream<E: From<ReadError>>(
    data: &ArrowData,
    options: &ReadOptions,
    mut take: impl FnMut(Event) -> Result<Flow, E>,
) -> Result<Option<ReadStats>, E> {
    each_row(data, options, |event, _| take(event))
}

/// Reads the events of `data` as [`stream`] does, giving `take` each one's row too,
/// counted from 0.
pub(super) fn each_row<E: From<ReadError>>(
    data: &ArrowData,
    options: &ReadOptions,
    mut take: impl FnMut(Event, u64) -> Result<Flow, E>,
) -> Result<Option<ReadStats>, E> {
    let plan = Plan::new(data, options)?;
    let mut taker = Taker::new(options);
    let mut give = |taker: &mut Taker, slice: Result<Slice, ReadError>| {
        // The slice's events come out in the order of their rows.
        let lines = slice.as_ref().map(|s| s.piece.batch.lines.clone()).unwrap_or_default();
        let mut rows = lines.into_iter();
        let mut take = |event| take(event, rows.next().map_or(0, |row| row - 1));
        taker.slice(slice, &plan.header, &mut take)
    };
    // With a second core, one thread makes the rows' events while this one takes them.
    if options.threads < 2 || data.rows() < wide(2 * SLICE) {
        let mut stop = None;
        plan.slices(|slice| match give(&mut taker, slice) {
            Ok(Flow::More) => true,
            other => {
                stop = Some(other);
                false
            }
        });
        if let Some(stopped) = stop {
            stopped?;
            return Ok(None);
        }
        return Ok(Some(taker.finish()));
    }
    std::thread::scope(|scope| {
        let (send, receive) = std::sync::mpsc::sync_channel(2);
        let plan = &plan;
        scope.spawn(move || plan.slices(|slice| send.send(slice).is_ok()));
        // Dropping `receive` on the way out stops the maker at its next slice.
        for slice in receive {
            if let Flow::Stop = give(&mut taker, slice)? {
                return Ok(None);
            }
        }
        Ok(Some(taker.finish()))
    })
}

/// What reading a table settled: its columns, and whether its time is stored as one.
struct Plan<'d> {
    data: &'d ArrowData,
    options: &'d ReadOptions,
    header: Header,
    /// The columns read, by the schema's numbers, in its order.
    wanted: Vec<usize>,
    time: Option<usize>,
    finer: bool,
}

impl<'d> Plan<'d> {
    fn new(data: &'d ArrowData, options: &'d ReadOptions) -> Result<Plan<'d>, ReadError> {
        let name = data.name();
        let names: ByteRecord = data.schema.fields().iter().map(|f| f.name().as_bytes()).collect();
        let (header, mut wanted) = columnar::header(&names, options, name)?;
        if names.is_empty() {
            // No columns, as an empty file has no header: no rows, or no time to read.
            let rows: usize = data.batches.iter().map(RecordBatch::num_rows).sum();
            if rows > 0 {
                return Err(layout(name, format!("{rows} rows and no column: no time to read")));
            }
            wanted.clear();
        }
        // A time stored as one is taken as it is, if the time is one column.
        let stored = |index: usize| {
            let data_type = data.schema.fields().get(index)?.data_type();
            matches!(data_type, DataType::Timestamp(..) | DataType::Date32 | DataType::Date64)
                .then(|| (index, finer(data_type)))
        };
        let (time, finer) = match header.columns.time[..] {
            [one] => stored(one).map_or((None, false), |(index, finer)| (Some(index), finer)),
            _ => (None, false),
        };
        Ok(Plan { data, options, header, wanted, time, finer })
    }

    /// Makes the events of every row, a slice at a time, giving each slice to `give` until
    /// it says stop; a column that cannot be read is given as an error, and ends it.
    fn slices(&self, mut give: impl FnMut(Result<Slice, ReadError>) -> bool) {
        let mut first = 1u64;
        for batch in self.data.batches.iter() {
            let mut read: Vec<Option<Column>> = (0..batch.num_columns()).map(|_| None).collect();
            for &index in &self.wanted {
                let field = self.data.schema.field(index);
                let array = batch.column(index).as_ref();
                let made =
                    column(array, field.name()).and_then(|column| match too_long(&column, array) {
                        Some(row) => Err(format!(
                            "row {}, field `{}`: a value longer than {} MiB, the most a field \
                             may hold (as a CSV row may)",
                            first + wide(row),
                            field.name(),
                            MOST_ROW >> 20
                        )),
                        None => Ok(column),
                    });
                match made {
                    Ok(column) => read[index] = Some(column),
                    Err(problem) => {
                        give(Err(layout(self.data.name(), problem)));
                        return;
                    }
                }
            }
            let rows = batch.num_rows();
            let mut done = 0;
            while done < rows {
                // Its caller may stop it (Python, at Ctrl-C) between slices.
                if let Err(stopped) = self.options.stop.check() {
                    give(Err(stopped));
                    return;
                }
                let want = SLICE.min(rows - done);
                let (columns, time, finer) = (&read[..], self.time, self.finer);
                let slice = events(want, first, &self.header, self.options, |row| ArrowRow {
                    columns,
                    time,
                    finer,
                    row: done + row,
                });
                if !give(Ok(slice)) {
                    return;
                }
                done += want;
                first += wide(want);
            }
        }
    }
}

/// Columns of a table read by name a row at a time, as the row reader reads a field:
/// the durations, ends and counts of requests.
pub(super) struct Cells<'a> {
    /// Each batch's first row (from 0) and its columns, in the order named.
    batches: Vec<(u64, Vec<Column<'a>>)>,
    scratch: Vec<u8>,
}

impl<'a> Cells<'a> {
    /// Returns the columns of `data` numbered `at` in its schema, or why one cannot be
    /// read.
    pub(super) fn new(data: &'a ArrowData, at: &[usize]) -> Result<Cells<'a>, ReadError> {
        let mut batches = Vec::with_capacity(data.batches.len());
        let mut first = 0;
        for batch in data.batches.iter() {
            let columns = (at.iter())
                .map(|&index| column(batch.column(index).as_ref(), data.schema.field(index).name()))
                .collect::<Result<Vec<_>, String>>()
                .map_err(|problem| layout(data.name(), problem))?;
            batches.push((first, columns));
            first += wide(batch.num_rows());
        }
        Ok(Cells { batches, scratch: Vec::new() })
    }

    /// The names of the columns of `data`, in its schema's order.
    pub(super) fn names(data: &ArrowData) -> ByteRecord {
        data.schema.fields().iter().map(|f| f.name().as_bytes()).collect()
    }

    /// Returns column `n`'s field in row `row` (from 0) as text, as a CSV would hold it
    /// (a null is empty), and its instant if the column holds times.
    pub(super) fn field(&mut self, row: u64, n: usize) -> (&[u8], Option<Timestamp>) {
        let batch = self.batches.partition_point(|(first, _)| *first <= row).saturating_sub(1);
        let Some((first, columns)) = self.batches.get(batch) else { return (&[], None) };
        let row = usize::try_from(row - first).unwrap_or(usize::MAX);
        let column = &columns[n];
        if row >= column.array.len() || column.array.is_null(row) {
            return (&[], None);
        }
        let time = column.time.as_ref().and_then(|time| time(row));
        let text = match &column.text {
            Text::Borrowed(text) => text(row),
            Text::Written(write) => {
                self.scratch.clear();
                write(row, &mut self.scratch);
                &self.scratch
            }
            Text::Empty => &[],
        };
        (text, time)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Int64Array, RecordBatch, StringArray, TimestampMillisecondArray};
    use arrow_schema::{Field, Schema};

    use super::*;
    use crate::catalog::{Source, read_events};

    fn table(times: Vec<Option<i64>>, keys: Vec<Option<&str>>, costs: Vec<i64>) -> ArrowData {
        let zone = Some("Asia/Tokyo".into());
        let schema = Arc::new(Schema::new(vec![
            Field::new("time", DataType::Timestamp(TimeUnit::Millisecond, zone.clone()), true),
            Field::new("client", DataType::Utf8, true),
            Field::new("tokens", DataType::Int64, false),
        ]));
        let columns: Vec<arrow_array::ArrayRef> = vec![
            Arc::new(TimestampMillisecondArray::from(times).with_timezone_opt(zone)),
            Arc::new(StringArray::from(keys)),
            Arc::new(Int64Array::from(costs)),
        ];
        let batch = RecordBatch::try_new(Arc::clone(&schema), columns).unwrap();
        ArrowData::new("<arrow>", schema, vec![batch])
    }

    /// Events kept as they come.
    #[derive(Default)]
    struct Kept(Vec<Event>);

    impl crate::catalog::Sink for Kept {
        type Error = ReadError;

        fn event(&mut self, event: Event) -> Result<(), ReadError> {
            self.0.push(event);
            Ok(())
        }
    }

    fn events(data: ArrowData, options: &ReadOptions) -> Result<Vec<Event>, ReadError> {
        let (kept, _) = read_events(&Source::Arrow(data), options, Kept::default)?;
        Ok(kept.0)
    }

    #[test]
    fn a_table_makes_the_events_its_rows_say_in_time_order_whatever_the_zone() {
        let data = table(
            vec![Some(2_000), Some(1_500), Some(2_000)],
            vec![Some("a"), None, Some("")],
            vec![3, 1, 7],
        );
        let options = ReadOptions {
            key_column: Some("client".into()),
            cost: crate::cost::Cost::Column("tokens".into()),
            ..ReadOptions::new()
        };
        let ms = |ms: i64| Timestamp::from_micros(ms * 1000).unwrap();
        // A null key is an empty one: rows 2 and 3 share key 1. Sorted, stable.
        let want = [
            Event { time: ms(1_500), key: 1, cost: 1 },
            Event { time: ms(2_000), key: 0, cost: 3 },
            Event { time: ms(2_000), key: 1, cost: 7 },
        ];
        assert_eq!(events(data, &options).unwrap(), want);
    }

    #[test]
    fn a_null_time_is_an_empty_field_refused_with_its_row() {
        let data = table(vec![Some(0), None], vec![None, None], vec![1, 1]);
        let err = events(data, &ReadOptions::new()).unwrap_err().to_string();
        assert!(err.starts_with("<arrow>: row 2, field `time`: "), "{err}");
    }
}
