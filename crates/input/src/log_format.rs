//! Access logs in a layout of one's own: an nginx `log_format` string, read as goaccess does.

use crate::message::one_line;
use crate::units::decimal;

/// The field an event's arrival is read from when the log has `$msec` and
/// `$request_time`: `$msec` is when the response was sent, so the request came
/// `$request_time` seconds before.
pub const ARRIVAL: &str = "arrival";

/// Why a `log_format` string cannot be read, or a line cannot be read by one; names and
/// values are as a message quotes them, each on one line.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LogFormatError {
    /// A `${` with no `}`.
    #[error("a `${{` is not closed")]
    Unclosed,
    /// A `$` with no name after it.
    #[error("a `$` names no variable")]
    NoName,
    /// Two variables with nothing between them.
    #[error("${before} and ${after} have nothing between them, so they cannot be told apart")]
    Adjacent {
        /// The first variable.
        before: String,
        /// The second.
        after: String,
    },
    /// A format without a variable.
    #[error("it names no $variable")]
    NoVariable,
    /// A line that the format does not split.
    #[error("the line is not in the --log-format '{0}'")]
    NotInFormat(String),
    /// The arrival asked for without `$msec` and `$request_time`.
    #[error("the arrival needs $msec and $request_time in the --log-format")]
    NoArrival,
    /// A variable the format lacks.
    #[error("the --log-format has no ${name}; it has ${has}")]
    Missing {
        /// The variable asked for.
        name: String,
        /// The format's variables, joined with `, $`.
        has: String,
    },
    /// `$msec` less `$request_time` that is no time.
    #[error(
        "$msec {msec:?} less $request_time {request_time:?} is no time: each must be seconds, \
         to the millisecond"
    )]
    NoTime {
        /// `$msec` as logged.
        msec: String,
        /// `$request_time` as logged.
        request_time: String,
    },
}

/// The combined log format with `$msec` and `$request_time` after it: the layout this
/// project recommends for nginx (times to the millisecond, and when each request came),
/// and the one an access log whose first line has those two numbers after the combined
/// fields is read in without being told.
pub const TIMED_COMBINED: &str = "$remote_addr - $remote_user [$time_local] \"$request\" \
                                  $status $body_bytes_sent \"$http_referer\" \
                                  \"$http_user_agent\" $msec $request_time";

/// Returns whether a regular file's first line is an access log in [`TIMED_COMBINED`]'s
/// layout: two decimal numbers after the combined fields' user agent.
pub fn is_timed_log(path: &std::path::Path) -> bool {
    crate::sniff::first_line(path).is_some_and(|line| crate::clf::is_timed_line(&line))
}

/// An nginx `log_format` string: text written as it is, and `$variables` between.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogFormat {
    parts: Vec<Part>,
    /// The format as the user gave it, for messages.
    text: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    Text(Vec<u8>),
    Variable(String),
}

impl LogFormat {
    /// Reads a `log_format` string: `$name` or `${name}` for a variable, anything else as
    /// written. Two variables with nothing between them cannot be told apart, and are
    /// refused, as is a format with no variable.
    pub fn parse(text: &str) -> Result<LogFormat, LogFormatError> {
        let mut parts = Vec::new();
        let mut literal = Vec::new();
        let mut rest = text.as_bytes();
        while let Some((&byte, after)) = rest.split_first() {
            if byte != b'$' {
                literal.push(byte);
                rest = after;
                continue;
            }
            let (name, after) = match after.strip_prefix(b"{") {
                Some(braced) => {
                    let end =
                        braced.iter().position(|&b| b == b'}').ok_or(LogFormatError::Unclosed)?;
                    (&braced[..end], &braced[end + 1..])
                }
                None => {
                    let end = after
                        .iter()
                        .position(|b| !(b.is_ascii_alphanumeric() || *b == b'_'))
                        .unwrap_or(after.len());
                    (&after[..end], &after[end..])
                }
            };
            if name.is_empty() {
                return Err(LogFormatError::NoName);
            }
            if !literal.is_empty() {
                parts.push(Part::Text(std::mem::take(&mut literal)));
            } else if let Some(Part::Variable(before)) = parts.last() {
                return Err(LogFormatError::Adjacent {
                    before: before.clone(),
                    after: String::from_utf8_lossy(name).into_owned(),
                });
            }
            parts.push(Part::Variable(String::from_utf8_lossy(name).into_owned()));
            rest = after;
        }
        if !literal.is_empty() {
            parts.push(Part::Text(literal));
        }
        let format = LogFormat { parts, text: text.to_owned() };
        if format.variables().next().is_none() {
            return Err(LogFormatError::NoVariable);
        }
        Ok(format)
    }

    /// Returns the names of its variables, in order.
    pub fn variables(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|part| match part {
            Part::Variable(name) => Some(name.as_str()),
            Part::Text(_) => None,
        })
    }

    fn has(&self, name: &str) -> bool {
        self.variables().any(|v| v == name)
    }

    /// Returns the field that holds each event's arrival, and whether it is epoch seconds
    /// (else it is the variable's own layout): [`ARRIVAL`] with `$msec` and
    /// `$request_time`, `msec` alone, else `time_iso8601` or `time_local`.
    pub fn time_field(&self) -> Option<&'static str> {
        if self.has("msec") && self.has("request_time") {
            Some(ARRIVAL)
        } else {
            ["msec", "time_iso8601", "time_local"].into_iter().find(|name| self.has(name))
        }
    }

    /// Returns the values of `fields` in `line`, each a variable's name or [`ARRIVAL`].
    pub fn fields(&self, line: &[u8], fields: &[String]) -> Result<Vec<Vec<u8>>, LogFormatError> {
        let values =
            self.split(line).ok_or_else(|| LogFormatError::NotInFormat(one_line(&self.text)))?;
        let value = |name: &str| {
            let index = self.variables().position(|v| v == name)?;
            Some(values[index])
        };
        fields
            .iter()
            .map(|name| match name.as_str() {
                ARRIVAL => match (value("msec"), value("request_time")) {
                    (Some(sent), Some(took)) => arrival(sent, took),
                    _ => Err(self.missing(name)),
                },
                // A variable the format lacks may be a part of its `$request`.
                _ => (value(name).or_else(|| crate::clf::request_part(value("request")?, name)))
                    .map(<[u8]>::to_vec)
                    .ok_or_else(|| self.missing(name)),
            })
            .collect()
    }

    fn missing(&self, name: &str) -> LogFormatError {
        let names: Vec<&str> = self.variables().collect();
        match name {
            ARRIVAL => LogFormatError::NoArrival,
            _ => LogFormatError::Missing { name: one_line(name), has: names.join(", $") },
        }
    }

    /// Returns each variable's text in `line`, or `None` if the line is not in the format.
    /// A variable ends where the text after it first appears; between double quotes, at
    /// the first quote that `\` does not escape, as nginx escapes quotes in values.
    fn split<'l>(&self, line: &'l [u8]) -> Option<Vec<&'l [u8]>> {
        let mut values = Vec::new();
        let mut rest = line;
        let mut quoted = false;
        for (at, part) in self.parts.iter().enumerate() {
            match part {
                Part::Text(text) => {
                    rest = rest.strip_prefix(text.as_slice())?;
                    quoted = text.ends_with(b"\"");
                }
                Part::Variable(_) => {
                    let end = match self.parts.get(at + 1) {
                        None => rest.len(),
                        Some(Part::Text(next)) if quoted && next.starts_with(b"\"") => {
                            unescaped_quote(rest)?
                        }
                        Some(Part::Text(next)) => memchr::memmem::find(rest, next)?,
                        // Two variables in a row are refused when the format is read.
                        Some(Part::Variable(_)) => return None,
                    };
                    values.push(&rest[..end]);
                    rest = &rest[end..];
                }
            }
        }
        // Text past the format (a field added later) is left alone, as in the combined log.
        Some(values)
    }
}

/// Returns where the first `"` not escaped by `\` is.
fn unescaped_quote(text: &[u8]) -> Option<usize> {
    let mut escaped = false;
    text.iter().position(|&b| {
        let close = b == b'"' && !escaped;
        escaped = b == b'\\' && !escaped;
        close
    })
}

/// Returns `$msec − $request_time` as epoch seconds to the millisecond, or why not:
/// either is not a number of seconds with at most three decimals.
fn arrival(msec: &[u8], request_time: &[u8]) -> Result<Vec<u8>, LogFormatError> {
    let seconds = |text: &[u8]| decimal::parse_exact(text, 3).ok();
    let Some(came) = seconds(msec).zip(seconds(request_time)).and_then(|(s, t)| s.checked_sub(t))
    else {
        return Err(LogFormatError::NoTime {
            msec: one_line(&String::from_utf8_lossy(msec)),
            request_time: one_line(&String::from_utf8_lossy(request_time)),
        });
    };
    let sign = if came < 0 { "-" } else { "" };
    let (whole, millis) = (came.unsigned_abs() / 1000, came.unsigned_abs() % 1000);
    Ok(format!("{sign}{whole}.{millis:03}").into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAIN: &str = r#"$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" $msec $request_time"#;

    fn fields(format: &str, line: &str, names: &[&str]) -> Result<Vec<String>, String> {
        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let format = LogFormat::parse(format).map_err(|e| e.to_string())?;
        let values = format.fields(line.as_bytes(), &names).map_err(|e| e.to_string())?;
        Ok(values.into_iter().map(|v| String::from_utf8(v).unwrap()).collect())
    }

    #[test]
    fn a_combined_log_with_msec_and_request_time_arrives_at_their_difference() {
        let line = r#"10.0.0.1 - - [30/Jul/2025:00:30:00 +0000] "GET /a?q=\"x\" HTTP/1.1" 200 12 "-" "curl/8 \"quoted\"" 1753835400.250 0.300"#;
        let got = fields(MAIN, line, &["remote_addr", "request", "http_user_agent", ARRIVAL]);
        assert_eq!(
            got.unwrap(),
            ["10.0.0.1", r#"GET /a?q=\"x\" HTTP/1.1"#, r#"curl/8 \"quoted\""#, "1753835399.950"]
        );
        assert_eq!(LogFormat::parse(MAIN).unwrap().time_field(), Some(ARRIVAL));
    }

    #[test]
    fn a_format_is_read_with_braces_and_refused_where_it_cannot_be_split() {
        let format = LogFormat::parse("${msec}|$remote_addr").unwrap();
        assert_eq!(format.variables().collect::<Vec<_>>(), ["msec", "remote_addr"]);
        assert_eq!(format.time_field(), Some("msec"));
        let err = LogFormat::parse("$msec$remote_addr").unwrap_err().to_string();
        assert_eq!(
            err,
            "$msec and $remote_addr have nothing between them, so they cannot be told apart"
        );
        assert_eq!(LogFormat::parse("no variables").unwrap_err(), LogFormatError::NoVariable);
        assert_eq!(LogFormat::parse("${msec").unwrap_err().to_string(), "a `${` is not closed");
        assert_eq!(LogFormat::parse("$request_time").unwrap().time_field(), None);
    }

    #[test]
    fn a_line_out_of_format_or_a_field_it_lacks_is_named() {
        let err = fields("$msec [$remote_addr]", "1.5 10.0.0.1", &["msec"]).unwrap_err();
        assert_eq!(err, "the line is not in the --log-format '$msec [$remote_addr]'");
        let err = fields("$msec $remote_addr", "1.5 10.0.0.1", &["status"]).unwrap_err();
        assert_eq!(err, "the --log-format has no $status; it has $msec, $remote_addr");
        let err = fields("$msec $status", "1.5 200", &[ARRIVAL]).unwrap_err();
        assert_eq!(err, "the arrival needs $msec and $request_time in the --log-format");
        assert_eq!(arrival(b"0.100", b"0.250"), Ok(b"-0.150".to_vec()));
        let err = arrival(b"1.5", b"-").unwrap_err().to_string();
        assert_eq!(
            err,
            "$msec \"1.5\" less $request_time \"-\" is no time: each must be seconds, to the millisecond"
        );
    }
}
