//! Reading lines as CSV records one at a time, with one reader for all of them.

/// Reads lines as CSV records, one at a time, as the csv crate's reader with its defaults
/// reads a line alone, with one csv-core reader built once: a csv reader built for each
/// line spent 30 µs building its state machine, nine tenths of a keyed filter's time.
pub struct LineReader {
    reader: csv_core::Reader,
    fields: Vec<u8>,
    ends: Vec<usize>,
    /// The fields of the record read last.
    width: usize,
}

impl Default for LineReader {
    fn default() -> LineReader {
        LineReader::new()
    }
}

impl LineReader {
    /// Returns a reader of comma-separated fields.
    pub fn new() -> LineReader {
        LineReader::with_delimiter(b',')
    }

    /// Returns a reader of fields split by `delimiter` (`,` for [`new`](LineReader::new)).
    pub fn with_delimiter(delimiter: u8) -> LineReader {
        let (fields, ends) = (vec![0; 1024], vec![0; 64]);
        let reader = csv_core::ReaderBuilder::new().delimiter(delimiter).build();
        LineReader { reader, fields, ends, width: 0 }
    }

    /// Reads `line` as one CSV record, as `csv::Reader` reads it alone (a leading UTF-8
    /// byte-order mark taken off); `None` for no record.
    pub fn record(&mut self, line: &[u8]) -> Option<csv::ByteRecord> {
        let width = self.read(line)?;
        let bytes = self.ends[..width].last().copied().unwrap_or(0);
        let mut record = csv::ByteRecord::with_capacity(bytes, width);
        (0..width).filter_map(|n| self.field(n)).for_each(|field| record.push_field(field));
        Some(record)
    }

    /// Returns field `n` of the record [`read`](LineReader::read) read last, if it has one.
    pub fn field(&self, n: usize) -> Option<&[u8]> {
        let end = *self.ends.get(n).filter(|_| n < self.width)?;
        let start = if n == 0 { 0 } else { self.ends[n - 1] };
        Some(&self.fields[start..end])
    }

    /// Reads `line` as [`record`](LineReader::record) does, keeping its fields here;
    /// returns how many there are, or `None` for no record.
    pub fn read(&mut self, line: &[u8]) -> Option<usize> {
        use csv_core::ReadRecordResult;
        self.width = 0;
        let mut input = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        self.reader.reset();
        let (mut written, mut ended) = (0, 0);
        loop {
            let (result, read, wrote, ends) = self.reader.read_record(
                input,
                &mut self.fields[written..],
                &mut self.ends[ended..],
            );
            input = &input[read..];
            (written, ended) = (written + wrote, ended + ends);
            match result {
                // An empty input after the line says it has ended.
                ReadRecordResult::InputEmpty => {}
                ReadRecordResult::OutputFull => self.fields.resize(self.fields.len() * 2, 0),
                ReadRecordResult::OutputEndsFull => self.ends.resize(self.ends.len() * 2, 0),
                ReadRecordResult::Record => break,
                ReadRecordResult::End => return None,
            }
        }
        self.width = ended;
        Some(self.width)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A line read alone by a csv reader of its own, as filter read each line before.
    fn alone(line: &[u8]) -> Option<csv::ByteRecord> {
        let mut reader = csv::ReaderBuilder::new().has_headers(false).from_reader(line);
        let mut record = csv::ByteRecord::new();
        reader.read_byte_record(&mut record).ok().filter(|&read| read).map(|_| record)
    }

    #[test]
    fn one_reader_reads_each_line_as_a_reader_of_its_own_would() {
        let mut csv = LineReader::new();
        let lines: [&[u8]; 10] = [
            b"a,b,c",
            b"",
            b"\xEF\xBB\xBFtime,net",
            b"\"quoted, with a comma\",\"and \"\"quotes\"\"\",x",
            b"a,b\r",
            b"\"a\nb\",c",
            b"x\"y,z",
            b",,",
            b"\"unclosed,z",
            b"\r\n",
        ];
        for line in lines {
            assert_eq!(csv.record(line), alone(line), "{:?}", String::from_utf8_lossy(line));
        }
        // Longer than its buffers at first.
        let long = [&b"x"[..]; 3000].join(&b","[..]);
        assert_eq!(csv.record(&long), alone(&long));
    }

    proptest::proptest! {
        /// One reader, line after line, as filter reads them.
        #[test]
        fn any_lines_read_as_each_alone(lines in proptest::collection::vec(
            proptest::collection::vec(
                proptest::sample::select(vec![b'a', b',', b'"', b'\r', b'\n', 0xEF, 0xBB, 0xBF]),
                0..40,
            ),
            1..8,
        )) {
            let mut csv = LineReader::new();
            for line in &lines {
                proptest::prop_assert_eq!(csv.record(line), alone(line));
            }
        }
    }
}
