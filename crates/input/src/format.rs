//! The layouts a catalog comes in besides CSV: JSON Lines, GeoJSON and access logs.
//!
//! Each is read record by record into the fields a command asks for, in the order asked,
//! so that everything after reading (times, filters, keys) is the same for every format.

use std::io::{BufRead, BufReader, Read};

use csv::{ByteRecord, Position};

pub use super::clf::CLF_FIELDS;
use super::clf::clf_fields;
use super::json::{BOM, JsonPaths};
use super::log_format::LogFormat;
use super::values::Values;

/// The layouts a catalog can be read in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum InputFormat {
    /// Comma-separated values with a header row.
    #[default]
    Csv,
    /// Tab-separated values with a header row.
    Tsv,
    /// One JSON object per line; fields by name or dotted path (`properties.time`).
    Jsonl,
    /// A GeoJSON FeatureCollection, as the USGS feeds serve it; read feature by feature.
    Geojson,
    /// The combined log format of nginx and Apache.
    Clf,
    /// An Apache Parquet file: only the columns asked for are read, row groups on every
    /// thread. Times may be strings, timestamps or dates, or integers read by
    /// `--time-format`.
    Parquet,
}

impl InputFormat {
    /// Every format, in the order the command line offers them.
    pub const ALL: [InputFormat; 6] = [
        InputFormat::Csv,
        InputFormat::Tsv,
        InputFormat::Jsonl,
        InputFormat::Geojson,
        InputFormat::Clf,
        InputFormat::Parquet,
    ];

    /// Returns the format named `name` ([`name`](InputFormat::name)), in any case.
    pub fn named(name: &str) -> Option<InputFormat> {
        InputFormat::ALL.into_iter().find(|format| format.name().eq_ignore_ascii_case(name))
    }

    /// Returns the format a file's name says, if it says one: `.csv`, `.tsv`, `.jsonl` or
    /// `.ndjson`, `.geojson`, `.log`, `.parquet`, each maybe with `.gz` or `.zst` after.
    pub fn of_path(path: &std::path::Path) -> Option<InputFormat> {
        // A compressed file's format is its name's without `.gz` or `.zst`.
        let extension = path.extension()?.to_str()?.to_ascii_lowercase();
        if matches!(extension.as_str(), "gz" | "zst") {
            return InputFormat::of_path(&path.with_extension(""));
        }
        Some(match extension.as_str() {
            "csv" => InputFormat::Csv,
            "tsv" => InputFormat::Tsv,
            "jsonl" | "ndjson" => InputFormat::Jsonl,
            "geojson" => InputFormat::Geojson,
            "log" => InputFormat::Clf,
            "parquet" => InputFormat::Parquet,
            _ => return None,
        })
    }

    /// Returns the format a file's first line says, when its name says none: an access log
    /// (`access.log.1`) is one whatever it is called.
    pub fn of_content(path: &std::path::Path) -> Option<InputFormat> {
        super::clf::is_access_log_line(&super::sniff::first_line(path)?).then_some(InputFormat::Clf)
    }

    /// Returns the field that holds each event's time unless told otherwise.
    pub fn time_column(self) -> &'static str {
        match self {
            InputFormat::Geojson => "properties.time",
            InputFormat::Clf => "time_local",
            _ => "time",
        }
    }

    /// Returns the name messages use.
    pub fn name(self) -> &'static str {
        match self {
            InputFormat::Csv => "csv",
            InputFormat::Tsv => "tsv",
            InputFormat::Jsonl => "jsonl",
            InputFormat::Geojson => "geojson",
            InputFormat::Clf => "clf",
            InputFormat::Parquet => "parquet",
        }
    }
}

/// Why a record could not be read: on one line, without the input's name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordError {
    /// The line the record starts on.
    pub line: u64,
    /// What was expected.
    pub problem: String,
}

/// How the records of a JSON Lines or GeoJSON input are read in pieces: the fields asked
/// for, by name and as paths.
pub(super) struct JsonLayout {
    pub(super) format: InputFormat,
    pub(super) fields: Vec<String>,
    pub(super) paths: JsonPaths,
}

/// Records read from a line-based or GeoJSON input, each as the fields asked for.
pub struct Records<R> {
    input: BufReader<R>,
    format: InputFormat,
    fields: Vec<String>,
    /// The text of the record read last.
    text: Vec<u8>,
    /// Where the next record starts: its byte offset and its line.
    byte: u64,
    line: u64,
    /// For GeoJSON: where reading is in the document.
    collection: Collection,
    /// For an access log, its layout, if not the combined log format.
    log_format: Option<LogFormat>,
    /// For JSON, the paths of the fields, and the fields of the record read last.
    paths: JsonPaths,
    values: Values,
}

/// How far reading a FeatureCollection has come.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Collection {
    /// Before the `features` array.
    Start,
    /// Inside it: the next feature, or its end.
    Features,
    /// After it.
    Done,
}

impl<R: Read> Records<R> {
    /// Returns records of `format` (not CSV or TSV) with the named fields.
    pub fn new(input: R, format: InputFormat, fields: Vec<String>) -> Records<R> {
        Records {
            input: BufReader::with_capacity(1 << 16, input),
            format,
            text: Vec::new(),
            byte: 0,
            line: 1,
            collection: Collection::Start,
            log_format: None,
            paths: JsonPaths::new(&fields, format == InputFormat::Geojson),
            values: Values::default(),
            fields,
        }
    }

    /// Returns records of `layout` from `input`, which stands at byte `byte` of line `line`,
    /// between records (for GeoJSON, inside `features`).
    pub(super) fn resume(input: R, layout: &JsonLayout, byte: u64, line: u64) -> Records<R> {
        let records = Records::new(input, layout.format, layout.fields.clone());
        let collection = match layout.format {
            InputFormat::Geojson => Collection::Features,
            _ => Collection::Start,
        };
        Records { byte, line, collection, ..records }
    }

    /// Returns where the first record starts, and how to read the records in pieces, for
    /// JSON Lines and GeoJSON; for GeoJSON, reads up to the first feature. `None` for a
    /// format read only as it comes, or a document whose start is not as it should be (its
    /// reading says why).
    pub(super) fn layout(&mut self) -> Option<(Position, JsonLayout)> {
        match (self.format, self.collection) {
            (InputFormat::Jsonl, _) if self.byte == 0 => {}
            (InputFormat::Geojson, Collection::Start) => self.open_collection().ok()?,
            _ => return None,
        }
        let mut body = Position::new();
        body.set_byte(self.byte).set_line(self.line);
        let (format, fields) = (self.format, self.fields.clone());
        let paths = JsonPaths::new(&fields, format == InputFormat::Geojson);
        Some((body, JsonLayout { format, fields, paths }))
    }

    /// Reads an access log in `log_format` rather than the combined log format.
    pub fn with_log_format(self, log_format: Option<LogFormat>) -> Records<R> {
        Records { log_format, ..self }
    }

    /// Returns the names of the fields each record holds, as a header.
    pub fn header(&self) -> ByteRecord {
        ByteRecord::from(self.fields.iter().map(String::as_str).collect::<Vec<_>>())
    }

    /// Returns the input, to let go of what it kept.
    pub fn get_mut(&mut self) -> &mut R {
        self.input.get_mut()
    }

    /// Returns the line the next record starts on.
    pub fn line(&self) -> u64 {
        self.line
    }

    /// Returns the byte offset reached.
    pub fn byte(&self) -> u64 {
        self.byte
    }

    /// Returns the text of the record read last, as it was written.
    pub fn text(&self) -> &[u8] {
        &self.text
    }

    /// Reads the next record into `record`, with its position; false at the end.
    pub fn read(&mut self, record: &mut ByteRecord) -> Result<bool, ReadFailure> {
        loop {
            let start = (self.byte, self.line);
            let found = match self.format {
                InputFormat::Geojson => self.next_feature()?,
                _ => self.next_line()?,
            };
            if !found {
                return Ok(false);
            }
            // Blank lines between records are no records.
            if self.text.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let mut position = Position::new();
            position.set_byte(start.0).set_line(start.1);
            record.clear();
            let read = match self.format {
                InputFormat::Clf => match &self.log_format {
                    Some(layout) => {
                        layout.fields(&self.text, &self.fields).map_err(|e| e.to_string())
                    }
                    None => clf_fields(&self.text, &self.fields),
                }
                .map(|values| values.iter().for_each(|v| record.push_field(v))),
                _ => (self.paths.read(&self.text, &mut self.values))
                    .map(|()| self.values.iter().for_each(|v| record.push_field(v))),
            };
            if let Err(problem) = read {
                return Err(ReadFailure::Record(RecordError { line: start.1, problem }));
            }
            record.set_position(Some(position));
            return Ok(true);
        }
    }

    /// Reads one line into `text`, without its ending.
    fn next_line(&mut self) -> Result<bool, ReadFailure> {
        self.text.clear();
        let n = self.input.read_until(b'\n', &mut self.text).map_err(ReadFailure::Io)?;
        if n == 0 {
            return Ok(false);
        }
        // Widening: a length in memory fits in 64 bits on every platform Rust supports.
        self.byte += n as u64;
        self.line += 1;
        while self.text.last().is_some_and(|&b| b == b'\n' || b == b'\r') {
            self.text.pop();
        }
        Ok(true)
    }

    /// Reads the next feature of a FeatureCollection into `text`.
    fn next_feature(&mut self) -> Result<bool, ReadFailure> {
        let at = |line| {
            move |problem: &str| {
                ReadFailure::Record(RecordError { line, problem: problem.to_owned() })
            }
        };
        if self.collection == Collection::Start {
            self.open_collection()?;
        }
        if self.collection == Collection::Done {
            return Ok(false);
        }
        // Between features: a comma, or the end of the array.
        let byte = self.skip_space()?;
        let byte = match byte {
            Some(b',') => {
                self.take(1);
                self.skip_space()?
            }
            other => other,
        };
        match byte {
            Some(b']') => {
                self.take(1);
                self.collection = Collection::Done;
                self.close_collection()?;
                return Ok(false);
            }
            Some(b'{') => {}
            Some(_) => return Err(at(self.line)("expected a feature (a JSON object) or `]`")),
            None => return Err(at(self.line)("the document ends inside `features`")),
        }
        self.text.clear();
        self.value_into_text()?;
        Ok(true)
    }

    /// Reads up to the first feature: a top-level object whose `features` is an array.
    fn open_collection(&mut self) -> Result<(), ReadFailure> {
        let fail = |line, problem: &str| {
            ReadFailure::Record(RecordError { line, problem: problem.to_owned() })
        };
        // A byte-order mark before the document, as some Windows tools write, is no part of it.
        if self.input.fill_buf().map_err(ReadFailure::Io)?.starts_with(BOM) {
            self.take(BOM.len());
        }
        if self.skip_space()? != Some(b'{') {
            return Err(fail(self.line, "expected a GeoJSON FeatureCollection: a JSON object"));
        }
        self.take(1);
        loop {
            let Some(name) = self.member_name()? else {
                return Err(fail(self.line, "a GeoJSON FeatureCollection needs `features`"));
            };
            if name == "features" {
                if self.skip_space()? != Some(b'[') {
                    return Err(fail(self.line, "`features` must be an array"));
                }
                self.take(1);
                self.collection = Collection::Features;
                return Ok(());
            }
            self.member_value(&name)?;
        }
    }

    /// Reads what follows the features: other members, the end of the object, and then
    /// nothing but white space. A second collection is a second file's, read as one.
    fn close_collection(&mut self) -> Result<(), ReadFailure> {
        while let Some(name) = self.member_name()? {
            self.member_value(&name)?;
        }
        let Some(found) = self.skip_space()? else { return Ok(()) };
        let problem = format!(
            "at byte offset {}: expected the end of the file after the FeatureCollection, \
             found {:?} (give several collections as several files)",
            self.byte,
            char::from(found)
        );
        Err(ReadFailure::Record(RecordError { line: self.line, problem }))
    }

    /// Reads past the comma before a member (if any) and its name and colon; `None` at the
    /// object's end.
    fn member_name(&mut self) -> Result<Option<String>, ReadFailure> {
        let line = self.line;
        let fail =
            |problem: &str| ReadFailure::Record(RecordError { line, problem: problem.to_owned() });
        let mut byte = self.skip_space()?;
        if byte == Some(b',') {
            self.take(1);
            byte = self.skip_space()?;
        }
        match byte {
            Some(b'}') => {
                self.take(1);
                return Ok(None);
            }
            Some(b'"') => {}
            _ => return Err(fail("expected a member of the FeatureCollection object")),
        }
        self.text.clear();
        self.value_into_text()?;
        let name: String =
            serde_json::from_slice(&self.text).map_err(|_| fail("a bad member name"))?;
        if self.skip_space()? != Some(b':') {
            return Err(fail("expected `:` after a member name"));
        }
        self.take(1);
        Ok(Some(name))
    }

    /// Reads a top-level member's value; `type` must say FeatureCollection.
    fn member_value(&mut self, name: &str) -> Result<(), ReadFailure> {
        let line = self.line;
        self.skip_space()?;
        self.text.clear();
        self.value_into_text()?;
        if name == "type"
            && serde_json::from_slice::<String>(&self.text).ok().as_deref()
                != Some("FeatureCollection")
        {
            let found = String::from_utf8_lossy(&self.text).into_owned();
            let problem = format!(
                "expected a GeoJSON FeatureCollection, found type {}",
                crate::message::one_line(&found)
            );
            return Err(ReadFailure::Record(RecordError { line, problem }));
        }
        Ok(())
    }

    /// Appends one JSON value (object, array, string or scalar) to `text`, as written.
    fn value_into_text(&mut self) -> Result<(), ReadFailure> {
        let start_line = self.line;
        let mut depth = 0usize;
        let mut in_string = false;
        let mut escaped = false;
        loop {
            let buffer = self.input.fill_buf().map_err(ReadFailure::Io)?;
            if buffer.is_empty() {
                let problem = "the document ends inside a value".to_owned();
                return Err(ReadFailure::Record(RecordError { line: start_line, problem }));
            }
            let (mut used, mut done) = (0, false);
            while used < buffer.len() {
                if in_string {
                    if escaped {
                        escaped = false;
                        used += 1;
                        continue;
                    }
                    // Strings are most of a feature's bytes: jump to their next quote or
                    // escape. A string holds no raw line break, so no line is passed.
                    match memchr::memchr2(b'"', b'\\', &buffer[used..]) {
                        None => used = buffer.len(),
                        Some(at) if buffer[used + at] == b'\\' => {
                            escaped = true;
                            used += at + 1;
                        }
                        Some(at) => {
                            in_string = false;
                            used += at + 1;
                            if depth == 0 {
                                done = true;
                                break;
                            }
                        }
                    }
                    continue;
                }
                let b = buffer[used];
                match b {
                    b'"' => in_string = true,
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' if depth > 0 => {
                        depth -= 1;
                        if depth == 0 {
                            used += 1;
                            done = true;
                            break;
                        }
                    }
                    // A scalar ends before a delimiter, which is not part of it.
                    b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n' if depth == 0 => {
                        done = true;
                        break;
                    }
                    b'\n' => self.line += 1,
                    _ => {}
                }
                used += 1;
            }
            self.text.extend_from_slice(&buffer[..used]);
            self.take(used);
            if done {
                return Ok(());
            }
        }
    }

    /// Skips white space and returns the next byte, without taking it.
    fn skip_space(&mut self) -> Result<Option<u8>, ReadFailure> {
        loop {
            let buffer = self.input.fill_buf().map_err(ReadFailure::Io)?;
            let Some(&first) = buffer.first() else { return Ok(None) };
            if !first.is_ascii_whitespace() {
                return Ok(Some(first));
            }
            if first == b'\n' {
                self.line += 1;
            }
            self.take(1);
        }
    }

    /// Takes `n` bytes that have been looked at.
    fn take(&mut self, n: usize) {
        self.input.consume(n);
        // Widening, as in `next_line`.
        self.byte += n as u64;
    }
}

/// Why reading stopped: the input failed, or a record is not what the format says.
#[derive(Debug)]
pub enum ReadFailure {
    /// The input could not be read.
    Io(std::io::Error),
    /// A record is malformed.
    Record(RecordError),
}

#[cfg(test)]
mod tests;
