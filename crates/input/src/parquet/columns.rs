//! Parquet's columns decoded, a slice of rows at a time, into each row's text and time.

use parquet::basic::{LogicalType, TimeUnit, Type as Physical};

use crate::bounded::MOST_ROW;
use parquet::column::reader::{ColumnReader, ColumnReaderImpl};
use parquet::data_type::DataType;
use parquet::schema::types::ColumnDescriptor;

use crate::units::time::Timestamp;
use crate::values::Values;

/// The Julian day of 1970-01-01, as INT96 timestamps count days.
const JULIAN_DAY_OF_EPOCH: i64 = 2_440_588;

/// How one column is written as text.
#[derive(Clone, Copy, Debug)]
pub(super) enum Kind {
    /// Bytes (a string), as they are.
    Bytes,
    /// An integer, in decimal; with a scale, a decimal number with that many digits after
    /// its point.
    Integer { scale: u32 },
    /// An unsigned integer, stored in the bits of a signed one: as written, never negative.
    Unsigned,
    /// A float, as Rust writes it: the shortest text that reads back the same.
    Float,
    /// `true` or `false`.
    Bool,
    /// A time (or a date) since the epoch, in this unit.
    Time(TimeScale),
    /// An INT96 timestamp (Impala's and old Spark's): days and nanoseconds.
    Int96,
}

/// The unit of a stored time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum TimeScale {
    Days,
    Millis,
    Micros,
    Nanos,
}

impl TimeScale {
    /// Returns the time `value` units after the epoch, if it is in range; nanoseconds are
    /// cut to the microsecond before, as a finer fraction in a text time is.
    pub(super) fn timestamp(self, value: i64) -> Option<Timestamp> {
        let micros = match self {
            TimeScale::Days => value.checked_mul(86_400_000_000)?,
            TimeScale::Millis => value.checked_mul(1000)?,
            TimeScale::Micros => value,
            TimeScale::Nanos => value.div_euclid(1000),
        };
        Timestamp::from_micros(micros)
    }
}

/// Returns how a column is written, or why it cannot be read.
pub(super) fn kind_of(column: &ColumnDescriptor) -> Result<Kind, String> {
    let name = column.path().string();
    if column.max_rep_level() > 0 {
        return Err(format!("column `{name}` is a list; only columns of one value a row are read"));
    }
    let scale = || u32::try_from(column.type_scale()).unwrap_or(0);
    Ok(match (column.physical_type(), column.logical_type_ref()) {
        (Physical::INT32 | Physical::INT64, Some(LogicalType::Timestamp(t))) => {
            Kind::Time(match t.unit {
                TimeUnit::MILLIS => TimeScale::Millis,
                TimeUnit::MICROS => TimeScale::Micros,
                TimeUnit::NANOS => TimeScale::Nanos,
            })
        }
        (Physical::INT32, Some(LogicalType::Date)) => Kind::Time(TimeScale::Days),
        (Physical::INT32 | Physical::INT64, Some(LogicalType::Decimal(_))) => {
            Kind::Integer { scale: scale() }
        }
        (Physical::INT32 | Physical::INT64, Some(LogicalType::Integer(int))) if !int.is_signed => {
            Kind::Unsigned
        }
        (Physical::INT32 | Physical::INT64, _) => match column.converted_type() {
            parquet::basic::ConvertedType::UINT_8
            | parquet::basic::ConvertedType::UINT_16
            | parquet::basic::ConvertedType::UINT_32
            | parquet::basic::ConvertedType::UINT_64 => Kind::Unsigned,
            parquet::basic::ConvertedType::TIMESTAMP_MILLIS => Kind::Time(TimeScale::Millis),
            parquet::basic::ConvertedType::TIMESTAMP_MICROS => Kind::Time(TimeScale::Micros),
            parquet::basic::ConvertedType::DATE => Kind::Time(TimeScale::Days),
            parquet::basic::ConvertedType::DECIMAL => Kind::Integer { scale: scale() },
            _ => Kind::Integer { scale: 0 },
        },
        (Physical::INT96, _) => Kind::Int96,
        (Physical::FLOAT | Physical::DOUBLE, _) => Kind::Float,
        (Physical::BOOLEAN, _) => Kind::Bool,
        (Physical::BYTE_ARRAY, Some(LogicalType::Decimal(_)))
        | (Physical::FIXED_LEN_BYTE_ARRAY, Some(LogicalType::Decimal(_))) => {
            return Err(format!("column `{name}` is a decimal of more than 64 bits; not read"));
        }
        (Physical::BYTE_ARRAY | Physical::FIXED_LEN_BYTE_ARRAY, _) => Kind::Bytes,
    })
}

/// One column of a slice of rows: each row's text (empty for a null), and for a time
/// stored as one, its time.
#[derive(Default)]
pub(super) struct Cells {
    pub(super) values: Values,
    pub(super) times: Vec<Option<Timestamp>>,
    /// The first value longer than a field may be ([`MOST_ROW`]), if one came: its row in
    /// the slice, and its length. It is kept as an empty cell.
    pub(super) too_long: Option<(usize, usize)>,
}

impl Cells {
    pub(super) fn clear(&mut self) {
        self.values.clear();
        self.times.clear();
        self.too_long = None;
    }

    /// Writes a string or bytes value, unless it is longer than a field may be.
    fn bytes(&mut self, value: &[u8]) {
        if crate::keys::wide(value.len()) > MOST_ROW {
            self.too_long.get_or_insert((self.values.len(), value.len()));
        } else {
            self.values.text().extend_from_slice(value);
        }
    }
}

/// Decodes `rows` values of a column into `cells`; returns how many rows it held.
pub(super) fn decode(
    reader: &mut ColumnReader,
    rows: usize,
    max_def: i16,
    kind: Kind,
    levels: &mut Vec<i16>,
    cells: &mut Cells,
) -> parquet::errors::Result<usize> {
    match reader {
        ColumnReader::BoolColumnReader(r) => typed(r, rows, max_def, levels, cells, |v, c| {
            c.values.text().extend_from_slice(if *v { b"true" } else { b"false" });
        }),
        // An unsigned column's values come in the bits of signed ones.
        ColumnReader::Int32ColumnReader(r) => {
            typed(r, rows, max_def, levels, cells, |v, c| match kind {
                Kind::Unsigned => unsigned(u64::from(v.cast_unsigned()), c),
                _ => integer(i64::from(*v), kind, c),
            })
        }
        ColumnReader::Int64ColumnReader(r) => {
            typed(r, rows, max_def, levels, cells, |v, c| match kind {
                Kind::Unsigned => unsigned(v.cast_unsigned(), c),
                _ => integer(*v, kind, c),
            })
        }
        ColumnReader::Int96ColumnReader(r) => typed(r, rows, max_def, levels, cells, |v, c| {
            // Its Julian day, and the nanoseconds of that day.
            let [low, high, day] = [v.data()[0], v.data()[1], v.data()[2]];
            let nanos = u64::from(high) << 32 | u64::from(low);
            let micros = (i64::from(day) - JULIAN_DAY_OF_EPOCH)
                .checked_mul(86_400_000_000)
                .and_then(|micros| micros.checked_add(i64::try_from(nanos / 1000).ok()?));
            c.times.push(micros.and_then(Timestamp::from_micros));
            let mut buffer = itoa::Buffer::new();
            c.values.text().extend_from_slice(buffer.format(micros.unwrap_or(i64::MAX)).as_bytes());
        }),
        ColumnReader::FloatColumnReader(r) => typed(r, rows, max_def, levels, cells, |v, c| {
            c.values.text().extend_from_slice(v.to_string().as_bytes());
        }),
        ColumnReader::DoubleColumnReader(r) => typed(r, rows, max_def, levels, cells, |v, c| {
            c.values.text().extend_from_slice(v.to_string().as_bytes());
        }),
        ColumnReader::ByteArrayColumnReader(r) => {
            typed(r, rows, max_def, levels, cells, |v, c| c.bytes(v.data()))
        }
        ColumnReader::FixedLenByteArrayColumnReader(r) => {
            typed(r, rows, max_def, levels, cells, |v, c| c.bytes(v.data()))
        }
    }
}

/// Writes an unsigned integer column's value.
fn unsigned(value: u64, cells: &mut Cells) {
    let mut buffer = itoa::Buffer::new();
    cells.values.text().extend_from_slice(buffer.format(value).as_bytes());
}

/// Writes an integer column's value: a time's as its time and its number, a decimal's
/// with its point.
fn integer(value: i64, kind: Kind, cells: &mut Cells) {
    let mut buffer = itoa::Buffer::new();
    match kind {
        Kind::Time(scale) => {
            cells.times.push(scale.timestamp(value));
            cells.values.text().extend_from_slice(buffer.format(value).as_bytes());
        }
        Kind::Integer { scale } if scale > 0 => {
            let text = buffer.format(value.unsigned_abs());
            let digits = usize::try_from(scale).unwrap_or(usize::MAX);
            let out = cells.values.text();
            if value < 0 {
                out.push(b'-');
            }
            let (whole, fraction) = match text.len().checked_sub(digits) {
                Some(split) => text.split_at(split),
                None => ("", text),
            };
            out.extend_from_slice(if whole.is_empty() { b"0" } else { whole.as_bytes() });
            out.push(b'.');
            out.extend(std::iter::repeat_n(b'0', digits.saturating_sub(fraction.len())));
            out.extend_from_slice(fraction.as_bytes());
        }
        _ => cells.values.text().extend_from_slice(buffer.format(value).as_bytes()),
    }
}

/// Decodes `rows` rows of a column of one physical type, writing each value with `write`;
/// a null is an empty cell (and no time).
fn typed<T: DataType>(
    reader: &mut ColumnReaderImpl<T>,
    rows: usize,
    max_def: i16,
    levels: &mut Vec<i16>,
    cells: &mut Cells,
    mut write: impl FnMut(&T::T, &mut Cells),
) -> parquet::errors::Result<usize>
where
    T::T: Clone,
{
    let mut values: Vec<T::T> = Vec::with_capacity(rows);
    levels.clear();
    let mut got = 0;
    // A page may end a read before `rows`: read on until the rows are all there.
    while got < rows {
        let def = (max_def > 0).then_some(&mut *levels);
        let (records, _, _) = reader.read_records(rows - got, def, None, &mut values)?;
        if records == 0 {
            break;
        }
        got += records;
    }
    // Only the rows that are not null have values.
    if max_def == 0 {
        for value in &values {
            write(value, cells);
            cells.values.end();
        }
        return Ok(got);
    }
    let mut next = values.iter();
    for &level in &levels[..got] {
        match (level == max_def).then(|| next.next()).flatten() {
            Some(value) => write(value, cells),
            None => cells.times.push(None),
        }
        cells.values.end();
    }
    Ok(got)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(value: i64, scale: u32) -> String {
        let mut cells = Cells::default();
        integer(value, Kind::Integer { scale }, &mut cells);
        cells.values.end();
        String::from_utf8(cells.values.get(0).to_vec()).unwrap()
    }

    #[test]
    fn a_decimal_is_written_with_its_point() {
        assert_eq!(text(12_345, 2), "123.45");
        assert_eq!(text(-5, 2), "-0.05");
        assert_eq!(text(0, 3), "0.000");
        assert_eq!(text(7, 0), "7");
        assert_eq!(text(i64::MIN, 0), "-9223372036854775808");
        assert_eq!(text(i64::MIN, 2), "-92233720368547758.08");
    }

    #[test]
    fn stored_times_in_every_unit() {
        let micros = |scale: TimeScale, value| scale.timestamp(value).map(Timestamp::as_micros);
        assert_eq!(micros(TimeScale::Days, 1), Some(86_400_000_000));
        assert_eq!(micros(TimeScale::Millis, 1_753_831_492_483), Some(1_753_831_492_483_000));
        assert_eq!(micros(TimeScale::Micros, -1), Some(-1));
        // Nanoseconds are cut to the microsecond before, as a finer fraction in text is.
        assert_eq!(micros(TimeScale::Nanos, 1_999), Some(1));
        assert_eq!(micros(TimeScale::Nanos, -1), Some(-1));
        assert_eq!(micros(TimeScale::Millis, i64::MAX), None);
        assert_eq!(micros(TimeScale::Days, 1 << 40), None);
    }
}
