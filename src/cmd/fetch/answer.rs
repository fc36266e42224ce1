//! What `fetch` takes of an answer: the rows of the span it asked for, each once, oldest
//! first, as many as the count said, read as a stream and written as they come.

use std::io::{BufRead, BufReader, Read, Write};

use anyhow::{Result, anyhow, bail};
use csv::ByteRecord;

use super::{FetchFormat, stamp};
use crate::input::bounded::{Bounded, MOST_ROW};
use crate::input::format::{InputFormat, ReadFailure, Records};
use crate::input::keys::wide;
use crate::message::one_line;
use crate::units::time::{TimeFormat, Timestamp};

/// What one request asked for: its URL (for messages), the span `[start, end)` in
/// microseconds, and how many events the service counted in it, if it counts.
pub(super) struct Asked<'a> {
    pub url: &'a str,
    pub start: i64,
    pub end: i64,
    pub count: Option<u64>,
}

/// Writes the answers as one file: one header for CSV, one collection for GeoJSON; and
/// checks each row against what was asked and what came before.
pub(super) struct Writer {
    format: FetchFormat,
    header: Option<Vec<u8>>,
    pub events: u64,
    /// The time of the last row written, and the rows written at that time, to find one
    /// that repeats.
    last: Option<Timestamp>,
    at_last: Vec<Vec<u8>>,
}

impl Writer {
    pub(super) fn new(format: FetchFormat) -> Writer {
        Writer { format, header: None, events: 0, last: None, at_last: Vec::new() }
    }

    pub(super) fn format(&self) -> FetchFormat {
        self.format
    }

    pub(super) fn start(&mut self, out: &mut dyn Write) -> Result<()> {
        if self.format == FetchFormat::Geojson {
            out.write_all(b"{\"type\":\"FeatureCollection\",\"features\":[\n")?;
        }
        Ok(())
    }

    /// Reads an answer to `asked` from `body`, and writes its rows to `out` as they come;
    /// the first row that is not what was asked for is an error, and so is an answer with
    /// other than the rows counted.
    pub(super) fn add(
        &mut self,
        body: impl Read,
        asked: &Asked,
        out: &mut dyn Write,
    ) -> Result<()> {
        let rows = match self.format {
            FetchFormat::Csv => self.add_csv(body, asked, out)?,
            FetchFormat::Geojson => self.add_geojson(body, asked, out)?,
        };
        match asked.count {
            Some(count) if count != rows => bail!(
                "{}: the service counted {count} events in the span and sent {rows}: {}",
                asked.url,
                if rows < count { "the answer was cut short" } else { "it sent more" }
            ),
            _ => Ok(()),
        }
    }

    fn add_csv(&mut self, body: impl Read, asked: &Asked, out: &mut dyn Write) -> Result<u64> {
        let url = asked.url;
        let mut body = BufReader::with_capacity(1 << 16, body);
        let mut line = Vec::new();
        if !next_line(&mut body, &mut line, url, 1)? {
            return Ok(0);
        }
        let header = parse_record(&line);
        let time_at = header.as_ref().and_then(|h| h.iter().position(|f| f == b"time"));
        let (Some(header), Some(time_at)) = (header, time_at) else {
            bail!(
                "{url}: the answer is not the CSV asked for: it begins {:?}",
                one_line(&String::from_utf8_lossy(&line[..line.len().min(80)]))
            );
        };
        match &self.header {
            None => {
                out.write_all(&line)?;
                out.write_all(b"\n")?;
                self.header = Some(line.clone());
            }
            Some(first) if *first == line => {}
            Some(_) => bail!("{url}: the service changed its CSV columns between answers"),
        }
        let (mut rows, mut number) = (0, 1);
        while next_line(&mut body, &mut line, url, number + 1)? {
            number += 1;
            if line.trim_ascii().is_empty() {
                continue;
            }
            let at = |problem: String| anyhow!("{url}: line {number} of the answer: {problem}");
            let record = parse_record(&line).ok_or_else(|| at("not a CSV row".into()))?;
            if record.len() != header.len() {
                return Err(at(format!(
                    "{} fields, where the header has {}",
                    record.len(),
                    header.len()
                )));
            }
            let text = &record[time_at];
            let time = crate::units::time::parse(text, TimeFormat::Rfc3339).map_err(|_| {
                at(format!(
                    "the time {:?} is not RFC 3339",
                    one_line(&String::from_utf8_lossy(text))
                ))
            })?;
            self.check(time, &line, asked).map_err(at)?;
            out.write_all(&line)?;
            out.write_all(b"\n")?;
            rows += 1;
        }
        self.events += rows;
        Ok(rows)
    }

    fn add_geojson(&mut self, body: impl Read, asked: &Asked, out: &mut dyn Write) -> Result<u64> {
        let url = asked.url;
        let mut features =
            Records::new(Bounded::new(body), InputFormat::Geojson, vec!["properties.time".into()]);
        let mut record = ByteRecord::new();
        let mut rows = 0;
        loop {
            let read = features.read(&mut record);
            features.get_mut().row_ended();
            match read {
                Ok(true) => {}
                Ok(false) => break,
                Err(ReadFailure::Io(error)) => bail!("{url}: the answer was cut: {error}"),
                Err(ReadFailure::Record(e)) => bail!(
                    "{url}: the answer is not the GeoJSON asked for: line {}: {}",
                    e.line,
                    e.problem
                ),
            }
            let line = features.line();
            let at = |problem: String| anyhow!("{url}: line {line} of the answer: {problem}");
            let text = record.get(0).unwrap_or_default();
            let time = crate::units::time::parse(text, TimeFormat::UnixMs).map_err(|_| {
                at(format!(
                    "properties.time {:?} is not epoch milliseconds",
                    one_line(&String::from_utf8_lossy(text))
                ))
            })?;
            let feature = features.text().to_vec();
            self.check(time, &feature, asked).map_err(at)?;
            if self.events + rows > 0 {
                out.write_all(b",\n")?;
            }
            out.write_all(&feature)?;
            rows += 1;
        }
        self.events += rows;
        Ok(rows)
    }

    /// Checks a row at `time` against the span asked for and the rows before it.
    fn check(&mut self, time: Timestamp, row: &[u8], asked: &Asked) -> Result<(), String> {
        let micros = time.as_micros();
        if micros < asked.start || micros >= asked.end {
            return Err(format!(
                "{time} is outside the span asked for, {} to {}: the service did not keep to it",
                stamp(asked.start),
                stamp(asked.end)
            ));
        }
        if self.last.is_some_and(|last| time < last) {
            return Err(format!(
                "{time} comes before the row above it: the answer is not oldest first"
            ));
        }
        if self.last != Some(time) {
            self.last = Some(time);
            self.at_last.clear();
        } else if self.at_last.iter().any(|seen| seen == row) {
            return Err(format!("the row at {time} repeats one before it"));
        }
        self.at_last.push(row.to_vec());
        Ok(())
    }

    pub(super) fn finish(&mut self, out: &mut dyn Write) -> Result<()> {
        if self.format == FetchFormat::Geojson {
            out.write_all(b"\n]}\n")?;
        }
        Ok(())
    }
}

/// Reads the next line of an answer, without its line ending, into `line`; false at the
/// end. A line may hold [`MOST_ROW`] bytes; a read that fails is the answer cut.
fn next_line(body: &mut impl BufRead, line: &mut Vec<u8>, url: &str, number: u64) -> Result<bool> {
    line.clear();
    let read = body.take(MOST_ROW + 1).read_until(b'\n', line);
    let n = read.map_err(|error| anyhow!("{url}: the answer was cut: {error}"))?;
    if wide(line.len()) > MOST_ROW {
        bail!("{url}: line {number} of the answer is longer than {} MiB", MOST_ROW >> 20);
    }
    while line.last().is_some_and(|&b| b == b'\n' || b == b'\r') {
        line.pop();
    }
    Ok(n > 0)
}

/// Reads one CSV line as a record, or `None` if it is not one (a quote left open).
fn parse_record(line: &[u8]) -> Option<ByteRecord> {
    let mut reader = csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(line);
    let mut record = ByteRecord::new();
    match reader.read_byte_record(&mut record) {
        Ok(true) if reader.position().byte() >= wide(line.len()) => Some(record),
        _ => None,
    }
}
