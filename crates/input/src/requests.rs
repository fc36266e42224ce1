//! Reading requests: each row's arrival, its completion and the whole numbers it counts
//! (tokens), for limits settled after the response.

use ratelimit_core::settle::Request;
use ratelimit_core::units::decimal::{DecimalError, parse_exact};

use std::io::Read;
use std::sync::mpsc;

use super::cost::parse_cost;
use super::error::{ReadError, Result, field_error, layout};
use super::keys::joined;
use super::options::ReadOptions;
use super::reading::{Reading, column_in};
use super::sorted::MOST_KEPT;
use super::source::{Opened, Source};
use super::stats::ReadStats;
use crate::units::layout::TimeLayout;
use crate::units::time::Timestamp;

/// When a request completes: after a duration (`--duration COL`: bare numbers are
/// milliseconds, and a value may carry a unit: `850ms`, `1.2s`), or at a time (`--end
/// COL`, written as the arrival's time is).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Completion {
    /// The column holding each request's duration.
    Duration(String),
    /// The column holding each request's end time.
    End(String),
}

impl Completion {
    /// Returns the completions `--duration COL` or `--end COL` give, if either is given:
    /// a duration's column if both are.
    pub fn given(duration: Option<&str>, end: Option<&str>) -> Option<Completion> {
        match (duration, end) {
            (Some(column), _) => Some(Completion::Duration(column.to_owned())),
            (None, Some(column)) => Some(Completion::End(column.to_owned())),
            (None, None) => None,
        }
    }

    /// The column it is read from.
    pub fn column(&self) -> &str {
        match self {
            Completion::Duration(column) | Completion::End(column) => column,
        }
    }
}

/// A catalog's requests in arrival order (stable for equal times), and the whole numbers
/// each row holds in the columns asked for.
#[derive(Clone, Debug, Default)]
pub struct Requests {
    /// Each request.
    pub requests: Vec<Request>,
    /// The columns' values, `width` a request, in the requests' order.
    pub values: Vec<u64>,
    /// How many columns were asked for.
    pub width: usize,
    /// The line (or row) each request's row starts on, for messages.
    pub lines: Vec<u64>,
    /// What [`lines`](Requests::lines) counts: `line` (of a file) or `row` (of a table).
    pub counts: &'static str,
}

impl Requests {
    /// Returns request `n`'s values of the columns asked for, in their order.
    pub fn values(&self, n: usize) -> &[u64] {
        &self.values[n * self.width..(n + 1) * self.width]
    }

    /// Returns the number of requests.
    pub fn len(&self) -> usize {
        self.requests.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.requests.is_empty()
    }
}

/// Requests handed from the reading thread at a time: enough that handing them over costs
/// little, few enough that the memory for them is reused.
const CHUNK: usize = 4096;

impl Requests {
    /// Appends the requests of `chunk` (read with the same columns) to these, unless
    /// memory for them would pass its bound: 32 bytes a request and 8 a column, at most
    /// 4 GiB. `name` is the input's, for that error.
    pub fn append(&mut self, chunk: &Requests, name: &str) -> Result<()> {
        let each = size_of::<Request>() + 8 + 8 * self.width;
        if self.len().saturating_add(chunk.len()).saturating_mul(each) > MOST_KEPT {
            let most = MOST_KEPT >> 30;
            return Err(layout(name, format!("too many requests to keep: the most is {most} GiB")));
        }
        self.requests.extend_from_slice(&chunk.requests);
        self.values.extend_from_slice(&chunk.values);
        self.lines.extend_from_slice(&chunk.lines);
        self.counts = chunk.counts;
        Ok(())
    }

    /// Whether request `n` arrives no earlier than the one before it.
    pub fn in_order_at(&self, n: usize) -> bool {
        n == 0 || self.requests[n - 1].arrival <= self.requests[n].arrival
    }

    /// Returns these requests in arrival order; requests at one time stay in input order.
    pub fn into_arrival_order(self) -> Requests {
        if (0..self.len()).all(|n| self.in_order_at(n)) {
            return self;
        }
        let mut order: Vec<usize> = (0..self.len()).collect();
        order.sort_by_key(|&n| self.requests[n].arrival);
        let mut requests =
            Requests { width: self.width, counts: self.counts, ..Requests::default() };
        requests.requests.extend(order.iter().map(|&n| self.requests[n]));
        requests.lines.extend(order.iter().map(|&n| self.lines[n]));
        for &n in &order {
            requests.values.extend_from_slice(self.values(n));
        }
        requests
    }

    fn clear(&mut self) {
        self.requests.clear();
        self.values.clear();
        self.lines.clear();
    }
}

/// Reads the requests of `source`: each kept row's time (its arrival), key, completion
/// (its arrival, without a `completion` column), and the whole numbers (0 to
/// [`MAX_COST`](ratelimit_core::limiter::MAX_COST)) of `columns`, in arrival order. A
/// field that does not read stops the reading with its file, line and column, as a bad
/// event's does (or is skipped, as `--skip-bad` allows). Requests are kept in memory to
/// be put in order, 32 bytes each and 8 a column, at most 4 GiB.
pub fn read_requests(
    source: &Source,
    options: &ReadOptions,
    completion: Option<&Completion>,
    columns: &[String],
) -> Result<(Requests, ReadStats)> {
    let name = source.name();
    let mut read = Requests { width: columns.len(), ..Requests::default() };
    let stats =
        stream_requests(source, options, completion, columns, |chunk| read.append(chunk, &name))?;
    Ok((read.into_arrival_order(), stats))
}

/// Reads the requests of `source` as [`read_requests`] does, but hands them to `take` in
/// input order, a few thousand at a time, without keeping them; returns what reading
/// found. With two threads or more ([`ReadOptions::threads`]) reading runs on a thread of
/// its own, a few chunks ahead of `take`. An error of reading comes after the requests
/// before it are taken; an error of `take` stops the reading.
pub fn stream_requests<E: From<ReadError> + Send>(
    source: &Source,
    options: &ReadOptions,
    completion: Option<&Completion>,
    columns: &[String],
    mut take: impl FnMut(&Requests) -> Result<(), E>,
) -> Result<ReadStats, E> {
    // A request's arrival and completion are read together, as written: spreading the
    // arrivals would move them away from their completions.
    if options.ties == crate::options::Ties::Spread {
        let why = "--ties spread does not read requests settled after the response (--duration, \
                   --end): their arrivals are read as written (--ties together)";
        return Err(super::error::layout(&source.name(), why.to_owned()).into());
    }
    let mut options = options.clone();
    let ended = completion.map(|c| c.column().to_owned());
    options.also = ended.into_iter().chain(columns.iter().cloned()).collect();
    let threads = options.threads;
    let made =
        Made { completion, columns, time_format: options.time_format.clone(), name: source.name() };
    #[cfg(all(unix, feature = "arrow"))]
    if let Source::Arrow(data) = source {
        return arrow_requests(data, &options, &made, take);
    }
    let mut input = Opened::open(source)?;
    let pass = input.reading(source, &options)?;
    let mut rows = Rows::new(pass, made)?;
    let mut chunk = Requests { width: columns.len(), counts: "line", ..Requests::default() };
    if threads < 2 {
        while rows.fill(&mut chunk)? {
            take(&chunk)?;
        }
        take(&chunk)?;
        return Ok(rows.pass.into_stats());
    }
    let (full, chunks) = mpsc::sync_channel::<Result<Requests>>(4);
    let (empty, spares) = mpsc::channel::<Requests>();
    std::thread::scope(|scope| {
        let reader = scope.spawn(move || {
            loop {
                let mut chunk = spares.try_recv().unwrap_or_else(|_| chunk.clone());
                let outcome = rows.fill(&mut chunk);
                // The requests before an error go first; a closed channel means the taker
                // has stopped.
                let sent = full.send(Ok(chunk)).is_ok();
                match outcome {
                    Ok(true) if sent => {}
                    Ok(true) => return None,
                    Ok(false) => return Some(rows.pass.into_stats()),
                    Err(error) => {
                        let _ = full.send(Err(error));
                        return None;
                    }
                }
            }
        });
        let taken = (|| {
            for received in chunks {
                let chunk = received?;
                take(&chunk)?;
                // The reader may have finished; then the chunk is dropped.
                let _ = empty.send(chunk);
            }
            Ok::<_, E>(())
        })();
        let stats = joined(reader);
        taken?;
        Ok(stats.expect("a reader that read to the end returns its stats"))
    })
}

/// How a row's fields make a request: its completion, and its columns' whole numbers.
struct Made<'a> {
    completion: Option<&'a Completion>,
    columns: &'a [String],
    time_format: TimeLayout,
    name: String,
}

impl Made<'_> {
    /// Returns the completion of a request arriving at `arrival`, from `text`, its
    /// completion's field (`stored`, the field's instant if it holds one), in row `at`.
    fn completion(
        &self,
        at: (&'static str, u64),
        arrival: Timestamp,
        text: &[u8],
        stored: Option<Timestamp>,
    ) -> Result<Timestamp> {
        let bad = |field: &str, reason: String| field_error(&self.name, at, field, text, reason);
        let ended = match self.completion {
            // Without completions, each request completes as it arrives.
            None => Some(arrival),
            Some(Completion::Duration(column)) => {
                let micros = duration(text).map_err(|reason| bad(column, reason))?;
                arrival.as_micros().checked_add(micros).and_then(Timestamp::from_micros)
            }
            Some(Completion::End(column)) => {
                let end = match stored {
                    Some(end) => end,
                    None => self.time_format.parse(text).map_err(|e| bad(column, e.to_string()))?,
                };
                if end < arrival {
                    return Err(bad(column, "before the request's own time".into()));
                }
                Some(end)
            }
        };
        ended.ok_or_else(|| {
            bad(self.completion.map_or("", Completion::column), "past the latest time".into())
        })
    }

    /// Returns the whole number of column `n` (of those asked for) from `text`, its field
    /// in row `at`.
    fn value(&self, at: (&'static str, u64), n: usize, text: &[u8]) -> Result<u64> {
        let column = &self.columns[n];
        parse_cost(text)
            .map_err(|reason| field_error(&self.name, at, column, text, reason.to_string()))
    }
}

/// A pass over the rows of requests, and where in each row the completion and the
/// columns asked for are.
struct Rows<'a, R> {
    pass: Reading<'a, R>,
    made: Made<'a>,
    ends: Option<usize>,
    at: Vec<usize>,
}

impl<'a, R: Read> Rows<'a, R> {
    fn new(pass: Reading<'a, R>, made: Made<'a>) -> Result<Self> {
        let header = pass.header_record();
        let name = &made.name;
        let find = |column: &str| column_in(header, column, "(named for the requests)", name);
        let ends = made.completion.map(|c| find(c.column())).transpose()?;
        let at: Vec<usize> = made.columns.iter().map(|c| find(c)).collect::<Result<_>>()?;
        Ok(Rows { pass, made, ends, at })
    }

    /// Empties `chunk` and reads into it up to [`CHUNK`] requests; returns whether there
    /// may be more.
    fn fill(&mut self, chunk: &mut Requests) -> Result<bool> {
        chunk.clear();
        while chunk.len() < CHUNK {
            let Some(event) = self.pass.next_event()? else {
                return Ok(false);
            };
            let line = self.pass.line();
            let at = ("line", line);
            let text = self.ends.map_or(&[][..], |at| self.pass.field(at));
            let completion = self.made.completion(at, event.time, text, None)?;
            for (n, &index) in self.at.iter().enumerate() {
                chunk.values.push(self.made.value(at, n, self.pass.field(index))?);
            }
            chunk.requests.push(Request { arrival: event.time, completion, key: event.key });
            chunk.lines.push(line);
        }
        Ok(true)
    }
}

/// Reads the requests of Arrow data `data` as [`stream_requests`] does, on this thread:
/// the table's rows are had where they lie.
#[cfg(all(unix, feature = "arrow"))]
fn arrow_requests<E: From<ReadError>>(
    data: &super::arrow_data::ArrowData,
    options: &ReadOptions,
    made: &Made<'_>,
    mut take: impl FnMut(&Requests) -> Result<(), E>,
) -> Result<ReadStats, E> {
    let header = super::arrow::Cells::names(data);
    let find = |column: &str| column_in(&header, column, "(named for the requests)", &made.name);
    let named = made.completion.map(Completion::column).into_iter();
    let at: Vec<usize> =
        named.chain(made.columns.iter().map(String::as_str)).map(find).collect::<Result<_>>()?;
    let mut cells = super::arrow::Cells::new(data, &at)?;
    let ends = usize::from(made.completion.is_some());
    let mut chunk = Requests { width: made.columns.len(), counts: "row", ..Requests::default() };
    let stats = super::arrow::each_row(data, options, |event, row| -> Result<_, E> {
        let at = ("row", row + 1);
        let (text, stored) = if ends == 1 { cells.field(row, 0) } else { (&[][..], None) };
        let completion = made.completion(at, event.time, text, stored)?;
        for n in 0..made.columns.len() {
            chunk.values.push(made.value(at, n, cells.field(row, ends + n).0)?);
        }
        chunk.requests.push(Request { arrival: event.time, completion, key: event.key });
        chunk.lines.push(row + 1);
        if chunk.len() == CHUNK {
            take(&chunk)?;
            chunk.clear();
        }
        Ok(super::pipeline::Flow::More)
    })?;
    take(&chunk)?;
    Ok(stats.unwrap_or_default())
}

/// Reads a duration: a decimal number of milliseconds, or of the unit after it (`us`,
/// `ms`, `s`, `m`, `h`), exact to the microsecond, 0 or more; in microseconds.
pub fn duration(text: &[u8]) -> Result<i64, String> {
    let text = text.trim_ascii();
    let digits = text
        .iter()
        .position(|b| !(b.is_ascii_digit() || *b == b'.' || *b == b'-'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(digits);
    let (scale, times) = match unit {
        b"" | b"ms" => (3, 1),
        b"us" | b"\xc2\xb5s" => (0, 1),
        b"s" => (6, 1),
        b"m" | b"min" => (6, 60),
        b"h" => (6, 3_600),
        _ => {
            return Err(
                "not a duration: a number of milliseconds, or with a unit (us, ms, s, m, h)".into(),
            );
        }
    };
    if number.first() == Some(&b'-') {
        return Err("negative: a duration is 0 or more".into());
    }
    let micros = parse_exact(number, scale).map_err(|e| match e {
        DecimalError::TooPrecise => "finer than a microsecond".to_owned(),
        DecimalError::Overflow => "too long".to_owned(),
        DecimalError::Malformed => {
            "not a number of milliseconds, or with a unit (us, ms, s, m, h)".to_owned()
        }
    })?;
    micros.checked_mul(times).ok_or_else(|| "too long".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_duration_is_milliseconds_bare_and_exact_to_the_microsecond_with_a_unit() {
        assert_eq!(duration(b"850"), Ok(850_000));
        assert_eq!(duration(b"850ms"), Ok(850_000));
        assert_eq!(duration(b"1.2s"), Ok(1_200_000));
        assert_eq!(duration(b"0.5"), Ok(500));
        assert_eq!(duration(b"2m"), Ok(120_000_000));
        assert_eq!(duration(b"0"), Ok(0));
        assert_eq!(duration(b"7us"), Ok(7));
        assert!(duration(b"-5").unwrap_err().starts_with("negative"));
        assert!(duration(b"0.0005").unwrap_err().starts_with("finer"));
        assert!(duration(b"5 parsecs").unwrap_err().starts_with("not a duration"));
        assert!(duration(b"").is_err());
    }

    fn read(csv: &'static str, completion: Completion) -> Result<Requests> {
        let source = Source::Embedded { name: "log.csv", bytes: csv.as_bytes() };
        let options = ReadOptions { key_column: Some("user".into()), ..ReadOptions::new() };
        read_requests(&source, &options, Some(&completion), &["tokens".into()]).map(|(r, _)| r)
    }

    #[test]
    fn requests_come_in_arrival_order_with_their_completions_and_values() {
        let csv = "time,user,ms,tokens\n\
                   2025-01-01T00:00:02Z,b,1.5s,7\n\
                   2025-01-01T00:00:01Z,a,250,30\n\
                   2025-01-01T00:00:02Z,a,0,1\n";
        let read = read(csv, Completion::Duration("ms".into())).unwrap();
        let at = |ms: i64| Timestamp::from_micros(1_735_689_600_000_000 + ms * 1_000).unwrap();
        let got: Vec<_> = read.requests.iter().map(|r| (r.arrival, r.completion, r.key)).collect();
        assert_eq!(
            got,
            [(at(1_000), at(1_250), 1), (at(2_000), at(3_500), 0), (at(2_000), at(2_000), 1)]
        );
        assert_eq!(read.values, [30, 7, 1]);
    }

    #[test]
    fn a_bad_duration_end_or_count_names_the_file_line_and_column() {
        let bad = |csv, completion| read(csv, completion).unwrap_err().to_string();
        let csv = "time,user,ms,tokens\n2025-01-01T00:00:02Z,b,-3,7\n";
        assert_eq!(
            bad(csv, Completion::Duration("ms".into())),
            "log.csv: line 2, field `ms`: \"-3\" is negative: a duration is 0 or more"
        );
        let csv = "time,user,end,tokens\n2025-01-01T00:00:02Z,b,2025-01-01T00:00:01Z,7\n";
        assert!(bad(csv, Completion::End("end".into())).ends_with("before the request's own time"));
        let csv = "time,user,ms,tokens\n2025-01-01T00:00:02Z,b,5,1.5\n";
        assert!(bad(csv, Completion::Duration("ms".into())).contains("field `tokens`"));
        let csv = "time,user,ms\n2025-01-01T00:00:02Z,b,5\n";
        assert!(bad(csv, Completion::Duration("ms".into())).contains("tokens"));
    }

    #[cfg(all(unix, feature = "arrow"))]
    #[test]
    fn a_table_gives_the_requests_a_file_does_its_rows_named_in_errors() {
        use std::sync::Arc;

        use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
        use arrow_schema::{DataType, Field, Schema};

        let table = |durations: Vec<&str>| {
            let schema = Arc::new(Schema::new(vec![
                Field::new("time", DataType::Utf8, false),
                Field::new("user", DataType::Utf8, false),
                Field::new("ms", DataType::Utf8, false),
                Field::new("tokens", DataType::Int64, false),
            ]));
            let times = ["2025-01-01T00:00:02Z", "2025-01-01T00:00:01Z", "2025-01-01T00:00:02Z"];
            let columns: Vec<ArrayRef> = vec![
                Arc::new(StringArray::from(times.to_vec())),
                Arc::new(StringArray::from(vec!["b", "a", "a"])),
                Arc::new(StringArray::from(durations)),
                Arc::new(Int64Array::from(vec![7, 30, 1])),
            ];
            // Two batches, so that a row is found past the first.
            let batch = RecordBatch::try_new(Arc::clone(&schema), columns).unwrap();
            let (first, second) = (batch.slice(0, 2), batch.slice(2, 1));
            Source::Arrow(crate::arrow_data::ArrowData::new("<arrow>", schema, vec![first, second]))
        };
        let options = ReadOptions { key_column: Some("user".into()), ..ReadOptions::new() };
        let columns = ["tokens".to_owned()];
        let completion = Completion::Duration("ms".into());
        let read = |source| read_requests(&source, &options, Some(&completion), &columns);
        let (got, _) = read(table(vec!["1.5s", "250", "0"])).unwrap();
        let file = "time,user,ms,tokens\n\
                    2025-01-01T00:00:02Z,b,1.5s,7\n\
                    2025-01-01T00:00:01Z,a,250,30\n\
                    2025-01-01T00:00:02Z,a,0,1\n";
        let want = super::tests::read(file, Completion::Duration("ms".into())).unwrap();
        assert_eq!((&got.requests, &got.values), (&want.requests, &want.values));
        assert_eq!((got.counts, &got.lines[..]), ("row", &[2, 1, 3][..]));
        let err = read(table(vec!["1.5s", "250", "-1"])).unwrap_err().to_string();
        assert_eq!(err, "<arrow>: row 3, field `ms`: \"-1\" is negative: a duration is 0 or more");
    }
}
