//! What a user asks to read, as given, and how it settles into [`ReadOptions`]: the one
//! place where the options of every reading command meet their defaults and conflicts,
//! for the command line's flags and a library's keywords alike.

use std::borrow::Cow;
use std::str::FromStr;

use crate::cost::Cost;
use crate::filter::{ColumnFilter, RowFilter, TimeFilter};
use crate::format::InputFormat;
use crate::keys::KeyNotes;
use crate::log_format::{ARRIVAL, LogFormat, TIMED_COMBINED, is_timed_log};
use crate::message::one_line;
use crate::options::{ReadOptions, available_threads};
use crate::source::Source;
use crate::units::decimal::{self, DecimalError};
use crate::units::layout::{TimeLayout, TimePattern, parse_offset};
use crate::units::time::{Span, TimeFormat, Timestamp, rfc3339};

/// Why what was asked cannot be read: one line, naming the option as the user gave it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct AskedError(pub String);

/// How options are named to the user: as the command line's flags (`--time-format`) or as
/// a library's keywords (`time_format=`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Names {
    /// `--time-format`.
    #[default]
    Flags,
    /// `time_format=`; the time column is `time=`.
    Keywords,
}

impl Names {
    /// Returns option `flag` (its flag's name, without dashes) as the user names it.
    pub fn of(self, flag: &'static str) -> Cow<'static, str> {
        match (self, flag) {
            (Names::Flags, _) => Cow::Owned(format!("--{flag}")),
            (Names::Keywords, "time-column") => Cow::Borrowed("time="),
            (Names::Keywords, _) => Cow::Owned(format!("{}=", flag.replace('-', "_"))),
        }
    }

    /// Returns option `flag` given `value`, as the user writes it: `--window 0s`,
    /// `window=0s`.
    pub fn with(self, flag: &'static str, value: &str) -> String {
        match self {
            Names::Flags => format!("{} {value}", self.of(flag)),
            Names::Keywords => format!("{}{value}", self.of(flag)),
        }
    }

    /// Returns what asked for a filter on a column, `flag` (`where`, `min-mag`), as a
    /// reader's message names it.
    fn asked_by(self, flag: &'static str) -> &'static str {
        match (self, flag) {
            (Names::Flags, "min-mag") => "--min-mag",
            (Names::Keywords, "min-mag") => "min_mag=",
            (Names::Flags, _) => "--where",
            (Names::Keywords, _) => "where=",
        }
    }
}

/// The end of the time range: an instant, or a duration after the start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Until {
    /// Before this instant.
    At(Timestamp),
    /// Before the start plus this long.
    After(Span),
}

impl FromStr for Until {
    type Err = AskedError;

    /// Reads an RFC 3339 instant, or `+DURATION`.
    fn from_str(text: &str) -> Result<Until, AskedError> {
        let failed = |err: &dyn std::fmt::Display| AskedError(err.to_string());
        match text.strip_prefix('+') {
            Some(span) => span.parse().map(Until::After).map_err(|e| failed(&e)),
            None => rfc3339(text).map(Until::At).map_err(|e| failed(&e)),
        }
    }
}

/// Reads a decimal number such as a magnitude, exact to the millionth, as millionths.
pub fn millionths(text: &str) -> Result<i64, AskedError> {
    decimal::parse_exact(text.as_bytes(), 6).map_err(|e| {
        AskedError(match e {
            DecimalError::TooPrecise => {
                format!("'{text}' has more than 6 decimals, the most that are kept")
            }
            DecimalError::Overflow => format!("'{text}' is too large"),
            DecimalError::Malformed => format!("'{text}' is not a number like 5 or 4.5"),
        })
    })
}

/// Reads a field delimiter: one ASCII character that is not a quote or a line break, or
/// `\t` or `tab` for a tab.
pub fn delimiter(text: &str) -> Result<u8, AskedError> {
    let byte = match text {
        "\\t" | "tab" => b'\t',
        _ => match text.as_bytes() {
            [byte] if byte.is_ascii() => *byte,
            _ => {
                let message = format!("'{text}' is not one character (\\t or tab for a tab)");
                return Err(AskedError(message));
            }
        },
    };
    if matches!(byte, b'"' | b'\n' | b'\r') {
        return Err(AskedError("a quote or a line break cannot separate fields".into()));
    }
    Ok(byte)
}

/// `COLUMN>=NUMBER`: a column, and the least number its rows must hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AtLeast {
    /// The column's name (a dotted path in JSON).
    pub column: String,
    /// The least value kept, in millionths.
    pub at_least: i64,
}

impl FromStr for AtLeast {
    type Err = AskedError;

    fn from_str(text: &str) -> Result<AtLeast, AskedError> {
        let Some((column, value)) = text.split_once(">=") else {
            return Err(AskedError(format!("'{text}' is not COLUMN>=NUMBER, like mag>=5.5")));
        };
        if column.is_empty() {
            let message = format!("'{text}' names no column: COLUMN>=NUMBER, like mag>=5.5");
            return Err(AskedError(message));
        }
        Ok(AtLeast { column: column.to_owned(), at_least: millionths(value)? })
    }
}

/// What a user asks to read from a catalog, as given: every field is the user's, or its
/// "not given"; [`Asked::settle`] gives the defaults and refuses the conflicts.
#[derive(Clone, Debug, Default)]
pub struct Asked {
    /// The input's format, if named; else its name or first line says.
    pub format: Option<InputFormat>,
    /// For CSV and TSV, the byte between fields.
    pub delimiter: Option<u8>,
    /// For CSV and TSV, that the first row is data, not names.
    pub no_headers: bool,
    /// An access log's nginx `log_format`, as written.
    pub log_format: Option<String>,
    /// The time column's name (names separated by commas for a time split over columns).
    pub time_column: Option<String>,
    /// How times are written: a named format or a strftime pattern.
    pub time_format: Option<String>,
    /// The offset of a pattern's times that name no zone.
    pub time_zone: Option<String>,
    /// How many bad rows may be skipped.
    pub skip_bad: u64,
    /// How many threads may read (all the machine's if `None`).
    pub threads: Option<usize>,
    /// Keep only the events at or after this time.
    pub since: Option<Timestamp>,
    /// Keep only the events before this.
    pub until: Option<Until>,
    /// Of an earthquake catalog, the least magnitude kept, in millionths.
    pub min_mag: Option<i64>,
    /// Keep only the rows whose columns hold at least these.
    pub at_least: Vec<AtLeast>,
    /// What each event costs, if not 1.
    pub cost: Option<Cost>,
    /// The value of the key column read as an empty key.
    pub empty_key: Option<String>,
    /// How events written at the same whole second are read.
    pub ties: crate::catalog::Ties,
}

impl Asked {
    /// Settles what to read from `source`, with keys from `key_column` if given (with what
    /// asked for it, for messages), naming options as `names` says. What reading shows and
    /// when it stops are the caller's: none and never here.
    pub fn settle(
        &self,
        source: &Source,
        key_column: Option<(&str, &'static str)>,
        names: Names,
    ) -> Result<ReadOptions, AskedError> {
        let n = |flag| names.of(flag);
        let fail = |message: String| Err(AskedError(message));
        let until = match (self.until, self.since) {
            (Some(Until::After(span)), Some(since)) => match since.checked_add(span) {
                Some(until) => Some(until),
                None => {
                    return fail(format!(
                        "{} plus {} {span} is past the year 9999",
                        n("since"),
                        n("until")
                    ));
                }
            },
            (Some(Until::After(_)), None) => {
                return fail(format!("{} +DURATION needs {}", n("until"), n("since")));
            }
            (Some(Until::At(until)), _) => Some(until),
            (None, _) => None,
        };
        if let (Some(since), Some(until)) = (self.since, until)
            && since >= until
        {
            return fail(format!(
                "{} ({since}) must be before {} ({until})",
                n("since"),
                n("until")
            ));
        }
        let log_format = match &self.log_format {
            Some(text) => match LogFormat::parse(text) {
                Ok(format) => Some(format),
                Err(why) => {
                    return fail(format!("{} '{}': {why}", n("log-format"), one_line(text)));
                }
            },
            None => None,
        };
        // A file's name or first line says its format; of several files, the first's. So
        // does standard input's first line when it is a file (`< access.log`), which can be
        // looked at from its start without taking what the reader reads; a pipe cannot.
        let stdin = std::path::PathBuf::from("/dev/stdin");
        let first = match source {
            Source::Path(path) => Some(path),
            Source::Files(paths) => paths.first(),
            Source::Stdin if cfg!(unix) => Some(&stdin),
            _ => None,
        };
        let format = match (&self.format, first) {
            (Some(format), _) if log_format.is_some() && *format != InputFormat::Clf => {
                return fail(format!(
                    "{} reads access logs; {} {} is not one",
                    n("log-format"),
                    n("input-format"),
                    format.name()
                ));
            }
            _ if log_format.is_some() => InputFormat::Clf,
            (Some(format), _) => *format,
            (None, Some(path)) => InputFormat::of_path(path)
                .or_else(|| InputFormat::of_content(path))
                .unwrap_or_default(),
            (None, None) => InputFormat::Csv,
        };
        // An access log whose lines carry $msec and $request_time after the combined
        // fields is read in that layout unless told another: times to the millisecond.
        let log_format = match (log_format, first) {
            (None, Some(path))
                if format == InputFormat::Clf
                    && self.time_column.is_none()
                    && is_timed_log(path) =>
            {
                LogFormat::parse(TIMED_COMBINED).ok()
            }
            (given, _) => given,
        };
        // Of several files, each is read as the first is: one whose name says another
        // format would be misread.
        if let (None, Source::Files(paths)) = (&self.format, source)
            && let Some((other, said)) = paths.iter().find_map(|path| {
                InputFormat::of_path(path).filter(|&said| said != format).map(|said| (path, said))
            })
        {
            return fail(format!(
                "{}: its name says {}, but {} is read as {}: several files are read in one \
                 format",
                other.display(),
                said.name(),
                paths[0].display(),
                format.name()
            ));
        }
        let tabular = matches!(format, InputFormat::Csv | InputFormat::Tsv);
        if !tabular && (self.delimiter.is_some() || self.no_headers) {
            let flag = if self.no_headers { n("no-headers") } else { n("delimiter") };
            return fail(format!(
                "{flag} is for CSV and TSV input; this input is {}",
                format.name()
            ));
        }
        let time_column = match (&self.time_column, &log_format) {
            (Some(column), _) => column.clone(),
            (None, Some(layout)) => match layout.time_field() {
                Some(field) => field.into(),
                None => {
                    return fail(format!(
                        "{} has no time: $msec, $time_iso8601 or $time_local (or name one with \
                         {} and {})",
                        n("log-format"),
                        n("time-column"),
                        n("time-format")
                    ));
                }
            },
            (None, None) if self.no_headers => "1".into(),
            (None, None) => format.time_column().into(),
        };
        if time_column.split(',').any(str::is_empty) {
            return fail(format!("{} '{time_column}' has an empty name", n("time-column")));
        }
        let time_format = self.time_layout(format, log_format.is_some(), &time_column, names)?;
        let empty_key = empty_key(self.empty_key.as_deref(), key_column.is_some(), names)?;
        let min_mag = self.min_mag.map(|at_least| {
            RowFilter::Column(ColumnFilter {
                column: mag_column(format).to_owned(),
                at_least,
                asked_by: names.asked_by("min-mag"),
            })
        });
        let filters = (self.since.map(|t| RowFilter::Time(TimeFilter::Since(t))))
            .into_iter()
            .chain(until.map(|t| RowFilter::Time(TimeFilter::Until(t))))
            .chain(min_mag)
            .chain(self.at_least.iter().map(|w| {
                RowFilter::Column(ColumnFilter {
                    column: w.column.clone(),
                    at_least: w.at_least,
                    asked_by: names.asked_by("where"),
                })
            }))
            .collect();
        Ok(ReadOptions {
            format,
            delimiter: self.delimiter,
            headers: !self.no_headers,
            log_format,
            time_column,
            time_format,
            filters,
            cost: self.cost.clone().unwrap_or_default(),
            key_column: key_column.map(|(column, _)| column.to_owned()),
            key_asked_by: key_column.map_or("--key", |(_, flag)| flag),
            skip_bad: self.skip_bad,
            key_notes: empty_key,
            threads: self.threads.unwrap_or_else(available_threads),
            ties: self.ties,
            ..ReadOptions::new()
        })
    }

    /// Settles how times are written: a named format or a pattern, else the format's own
    /// (`logged`: a log read by a `log_format`, whose variables say how).
    fn time_layout(
        &self,
        format: InputFormat,
        logged: bool,
        time_column: &str,
        names: Names,
    ) -> Result<TimeLayout, AskedError> {
        let n = |flag| names.of(flag);
        let offset = match &self.time_zone {
            Some(text) => Some(parse_offset(text).ok_or_else(|| {
                AskedError(format!(
                    "{} '{text}' is not an offset from UTC like +00:00, -0700 or Z",
                    n("time-zone")
                ))
            })?),
            None => None,
        };
        let pattern =
            |text: &str| TimePattern::new(text, offset).map_err(|e| AskedError(e.to_string()));
        let layout = match self.time_format.as_deref() {
            Some(text) if text.contains('%') => TimeLayout::Pattern(pattern(text)?),
            Some(text) => TimeLayout::Named(TimeFormat::named(text).ok_or_else(|| {
                AskedError(format!(
                    "{} '{text}' is neither rfc3339, unix-s, unix-ms, unix-us nor a strftime \
                     pattern (with %)",
                    n("time-format")
                ))
            })?),
            // nginx's variables, in a log_format: $msec (and the arrival made of it) is
            // epoch seconds, $time_iso8601 RFC 3339, $time_local the combined log's.
            None if logged && matches!(time_column, "msec" | ARRIVAL) => {
                TimeLayout::Named(TimeFormat::UnixS)
            }
            None if logged && time_column == "time_iso8601" => {
                TimeLayout::Named(TimeFormat::Rfc3339)
            }
            None if format == InputFormat::Clf => TimeLayout::Pattern(pattern(CLF_TIME)?),
            None if format == InputFormat::Geojson => TimeLayout::Named(TimeFormat::UnixMs),
            None => TimeLayout::Named(TimeFormat::Rfc3339),
        };
        if offset.is_some() && matches!(layout, TimeLayout::Named(_)) {
            return Err(AskedError(format!(
                "{} applies to a {} pattern that names no zone",
                n("time-zone"),
                n("time-format")
            )));
        }
        Ok(layout)
    }
}

/// Returns the cell a reading tells the empty key's number, reading `value` as the empty
/// key: refused unless `keyed` (a key column is read).
pub fn empty_key(value: Option<&str>, keyed: bool, names: Names) -> Result<KeyNotes, AskedError> {
    match value {
        None => Ok(KeyNotes::default()),
        Some(_) if !keyed => {
            let (key, empty) = (names.of("key"), names.of("empty-key"));
            Err(AskedError(format!("{empty} reads a key's value: give {key}")))
        }
        Some(value) => Ok(KeyNotes::reading_as_empty(value.as_bytes())),
    }
}

/// How nginx and Apache write `$time_local`: `10/Oct/2000:13:55:36 -0700`.
const CLF_TIME: &str = "%d/%b/%Y:%H:%M:%S %z";

/// Returns the field an earthquake catalog of `format` holds its magnitude in: the USGS
/// CSV's `mag`, or its GeoJSON's `properties.mag`. To the readers it is a column like any
/// other; only the minimum magnitude asked for names it.
fn mag_column(format: InputFormat) -> &'static str {
    match format {
        InputFormat::Geojson => "properties.mag",
        _ => "mag",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_named_as_the_user_gave_them() {
        let asked = Asked { until: Some(Until::After(Span::MINUTE)), ..Asked::default() };
        let source = Source::Stdin;
        let flags = asked.settle(&source, None, Names::Flags).unwrap_err();
        assert_eq!(flags.0, "--until +DURATION needs --since");
        let keywords = asked.settle(&source, None, Names::Keywords).unwrap_err();
        assert_eq!(keywords.0, "until= +DURATION needs since=");
        let asked = Asked { time_column: Some("a,".into()), ..Asked::default() };
        let keywords = asked.settle(&source, None, Names::Keywords).unwrap_err();
        assert_eq!(keywords.0, "time= 'a,' has an empty name");
    }

    #[cfg(feature = "clap")]
    #[test]
    fn time_formats_are_named_as_the_command_line_offers_them() {
        use clap::ValueEnum;
        for format in TimeFormat::value_variants() {
            let name = format.to_possible_value().unwrap().get_name().to_owned();
            assert_eq!(TimeFormat::named(&name.to_uppercase()), Some(*format), "{name}");
        }
        assert_eq!(TimeFormat::NAMED.len(), TimeFormat::value_variants().len());
        for format in InputFormat::value_variants() {
            let name = format.to_possible_value().unwrap().get_name().to_owned();
            assert_eq!(InputFormat::named(&name), Some(*format), "{name}");
        }
        assert_eq!(InputFormat::ALL.len(), InputFormat::value_variants().len());
    }

    #[test]
    fn a_threshold_is_read_exactly_to_the_millionth() {
        let at: AtLeast = "mag>=4.25".parse().unwrap();
        assert_eq!(at, AtLeast { column: "mag".into(), at_least: 4_250_000 });
        assert_eq!(
            millionths("1.0000001").unwrap_err().0,
            "'1.0000001' has more than 6 decimals, the most that are kept"
        );
        assert!("mag=4".parse::<AtLeast>().is_err());
    }
}
