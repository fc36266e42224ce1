//! Reading requests: each row's arrival, its completion and the whole numbers it counts
//! (tokens), for limits settled after the response.

use ratelimit_core::settle::Request;
use ratelimit_core::units::decimal::{DecimalError, parse_exact};

use super::cost::parse_cost;
use super::error::{Result, field_error, layout};
use super::options::ReadOptions;
use super::reading::column_in;
use super::sorted::MOST_KEPT;
use super::source::{Opened, Source};
use super::stats::ReadStats;
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

/// Reads the requests of `source`: each kept row's time (its arrival), key, completion
/// (its arrival, without a `completion` column),
/// and the whole numbers (0 to [`MAX_COST`](ratelimit_core::limiter::MAX_COST)) of `columns`, in arrival order. A field that
/// does not read stops the reading with its file, line and column, as a bad event's does
/// (or is skipped, as `--skip-bad` allows). Requests are kept in memory to be put in
/// order, 32 bytes each and 8 a column, at most 4 GiB.
pub fn read_requests(
    source: &Source,
    options: &ReadOptions,
    completion: Option<&Completion>,
    columns: &[String],
) -> Result<(Requests, ReadStats)> {
    let mut options = options.clone();
    let ended = completion.map(|c| c.column().to_owned());
    options.also = ended.into_iter().chain(columns.iter().cloned()).collect();
    let mut input = Opened::open(source)?;
    let mut pass = input.reading(source, &options)?;
    let name = source.name();
    let header = pass.header_record().clone();
    let find = |column: &str| column_in(&header, column, "(named for the requests)", &name);
    let ends = completion.map(|c| find(c.column())).transpose()?;
    let at: Vec<usize> = columns.iter().map(|c| find(c)).collect::<Result<_>>()?;
    let width = columns.len();
    let each = size_of::<Request>() + 8 + 8 * width;
    let mut read = Requests { width, ..Requests::default() };
    let mut sorted = true;
    while let Some(event) = pass.next_event()? {
        if read.len().saturating_add(1).saturating_mul(each) > MOST_KEPT {
            let most = MOST_KEPT >> 30;
            return Err(layout(
                &name,
                format!("too many requests to keep: the most is {most} GiB"),
            ));
        }
        let line = pass.line();
        let arrival = event.time;
        let bad = |field: &str, text: &[u8], reason: String| {
            field_error(&name, ("line", line), field, text, reason)
        };
        let text = ends.map_or(&[][..], |at| pass.field(at));
        let ended = match completion {
            // Without completions, each request completes as it arrives.
            None => Some(arrival),
            Some(Completion::Duration(column)) => {
                let micros = duration(text).map_err(|reason| bad(column, text, reason))?;
                arrival.as_micros().checked_add(micros).and_then(Timestamp::from_micros)
            }
            Some(Completion::End(column)) => {
                let end = options
                    .time_format
                    .parse(text)
                    .map_err(|e| bad(column, text, e.to_string()))?;
                if end < arrival {
                    return Err(bad(column, text, "before the request's own time".into()));
                }
                Some(end)
            }
        };
        let Some(ended) = ended else {
            let column = completion.map_or("", Completion::column);
            return Err(bad(column, text, "past the latest time".into()));
        };
        for (column, &index) in columns.iter().zip(&at) {
            let text = pass.field(index);
            let value = parse_cost(text).map_err(|reason| bad(column, text, reason.to_string()))?;
            read.values.push(value);
        }
        sorted &= read.requests.last().is_none_or(|last| last.arrival <= arrival);
        read.requests.push(Request { arrival, completion: ended, key: event.key });
        read.lines.push(line);
    }
    let stats = pass.into_stats();
    if sorted {
        return Ok((read, stats));
    }
    // Stable: requests at one time stay in input order.
    let mut order: Vec<usize> = (0..read.len()).collect();
    order.sort_by_key(|&n| read.requests[n].arrival);
    let mut requests = Requests { width, ..Requests::default() };
    requests.requests.extend(order.iter().map(|&n| read.requests[n]));
    requests.lines.extend(order.iter().map(|&n| read.lines[n]));
    for &n in &order {
        requests.values.extend_from_slice(read.values(n));
    }
    Ok((requests, stats))
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
}
