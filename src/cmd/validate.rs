//! `replay --validate COLUMN`: the replay's decisions against what the system logged.

use anyhow::{Result, bail};

use crate::input::catalog::{Event, ReadOptions, Rows};
use crate::input::format::InputFormat;
use crate::message::one_line;

/// How many disagreements are shown, first in time.
const SHOWN: usize = 5;

/// What a logged status says of a request: nginx's `$limit_req_status`.
fn logged(value: &[u8]) -> Option<Option<bool>> {
    match value {
        b"PASSED" | b"DELAYED" | b"DELAYED_DRY_RUN" => Some(Some(true)),
        b"REJECTED" | b"REJECTED_DRY_RUN" => Some(Some(false)),
        // No limit applied to the request (an empty key, or a location without one).
        b"-" | b"" => Some(None),
        _ => None,
    }
}

/// Returns the rows in the order nginx decided them, as far as its log can tell: in time
/// order, and among the rows of one key at one time, the PASSED first, then the DELAYED by
/// their `$request_time` (nginx logs a delayed request when it is served, so two requests
/// of one client in one millisecond are logged in the order they were served), then the
/// REJECTED; rows alike keep their order.
pub fn decided_order<'r>(
    rows: &'r Rows,
    column: &str,
    read: &ReadOptions,
) -> Result<Vec<(Event, &'r [u8])>> {
    let status = field_of(rows, column, read)?;
    // $request_time, if the log has it: the delay a DELAYED request waited, in seconds.
    let took = field_of(rows, "request_time", read).ok();
    let mut ranked = Vec::with_capacity(rows.len());
    for (event, row) in rows.iter() {
        let rank = match status(row)?.as_slice() {
            b"DELAYED" | b"DELAYED_DRY_RUN" => 1,
            b"REJECTED" | b"REJECTED_DRY_RUN" => 2,
            _ => 0,
        };
        let took = match (&took, rank) {
            (Some(took), 1) => crate::units::decimal::parse_floor(&took(row)?, 3).unwrap_or(0),
            _ => 0,
        };
        ranked.push(((rank, took), (event, row)));
    }
    // Within each run of one time, each key's rows are put in order in the places that
    // key's rows had: other keys' rows stay where they were (nginx's zone sees the keys in
    // the order they came). Stable: rows alike keep their order.
    let mut start = 0;
    while start < ranked.len() {
        let time = ranked[start].1.0.time;
        let end = start + ranked[start..].iter().take_while(|r| r.1.0.time == time).count();
        // The run's places, grouped by key, each key's in order.
        let mut places: Vec<(u32, usize)> = (start..end).map(|i| (ranked[i].1.0.key, i)).collect();
        places.sort_unstable();
        let places: Vec<(u32, usize)> = places;
        for group in places.chunk_by(|a, b| a.0 == b.0) {
            let group: Vec<usize> = group.iter().map(|&(_, i)| i).collect();
            let mut mine: Vec<_> = group.iter().map(|&i| ranked[i]).collect();
            mine.sort_by_key(|(order, _)| *order);
            for (&at, row) in group.iter().zip(mine) {
                ranked[at] = row;
            }
        }
        start = end;
    }
    Ok(ranked.into_iter().map(|(_, row)| row).collect())
}

/// Compares `trace` with each row's `column`, as [`validate`] does, and says how they agree
/// on stderr (as `--emit`'s report is: `-q` silences it).
pub fn say(
    rows: &Rows,
    decided: &[(Event, &[u8])],
    trace: &[bool],
    column: &str,
    read: &ReadOptions,
) -> Result<()> {
    let lines = validate(rows, decided, trace, column, read)?;
    let mut err = crate::cli::diagnostics::diagnostics();
    for line in lines {
        let _ = writeln!(err, "ratelimit: {line}");
    }
    Ok(())
}

/// Compares `trace` (one decision a row of `decided`, in its order) with each row's
/// `column`, and returns the lines that say how they agree: the count, then the first
/// disagreements.
pub fn validate(
    rows: &Rows,
    decided: &[(Event, &[u8])],
    trace: &[bool],
    column: &str,
    read: &ReadOptions,
) -> Result<Vec<String>> {
    let field = field_of(rows, column, read)?;
    let (mut compared, mut agree, mut unlimited) = (0u64, 0u64, 0u64);
    let mut apart = Vec::new();
    for (&(event, row), &replayed) in decided.iter().zip(trace) {
        let value = field(row)?;
        let Some(status) = logged(&value) else {
            // A logged value is quoted with its control characters escaped, as every
            // message that quotes input is: a log's bytes never reach the terminal raw.
            let value = one_line(&String::from_utf8_lossy(&value));
            bail!(
                "--validate {column}: the row at {} has \"{value}\", which is not a \
                 $limit_req_status (PASSED, DELAYED, REJECTED, their _DRY_RUN, or -)",
                event.time
            );
        };
        let Some(passed) = status else {
            unlimited += 1;
            continue;
        };
        compared += 1;
        if passed == replayed {
            agree += 1;
        } else if apart.len() < SHOWN {
            let said = |pass: bool| if pass { "passed" } else { "refused" };
            apart.push(format!(
                "validate: at {}, logged {} ({}), replayed {}: {}",
                event.time,
                one_line(&String::from_utf8_lossy(&value)),
                said(passed),
                said(replayed),
                one_line(&String::from_utf8_lossy(row))
            ));
        }
    }
    let column = one_line(column);
    let unlimited = if unlimited == 0 {
        String::new()
    } else {
        format!("; {unlimited} with no limit applied, not compared")
    };
    // With nothing compared there is no share to give: not 100%.
    if compared == 0 {
        return Ok(vec![format!("validate: no event with a {column} to compare{unlimited}")]);
    }
    #[allow(clippy::cast_precision_loss)] // A percentage to one decimal, for people.
    let share = agree as f64 * 100.0 / compared as f64;
    let mut lines = vec![format!(
        "validate: {compared} events with a {column}, {agree} decided alike ({share:.1}%), {} \
         apart{unlimited}",
        compared - agree,
    )];
    lines.extend(apart);
    Ok(lines)
}

/// Reads one field from a row's text.
type Field<'a> = Box<dyn Fn(&[u8]) -> Result<Vec<u8>> + 'a>;

/// Returns how to read `column` from a row's text: by the CSV header, or by the
/// `--log-format`.
fn field_of<'a>(rows: &Rows, column: &'a str, read: &'a ReadOptions) -> Result<Field<'a>> {
    if let Some(format) = &read.log_format {
        let name = column.trim_start_matches('$').to_owned();
        if !format.variables().any(|v| v == name) {
            bail!("--validate {column}: the --log-format has no ${name}");
        }
        return Ok(Box::new(move |row: &[u8]| {
            let mut values =
                format.fields(row, std::slice::from_ref(&name)).map_err(anyhow::Error::msg)?;
            Ok(values.pop().unwrap_or_default())
        }));
    }
    if !matches!(read.format, InputFormat::Csv | InputFormat::Tsv) || !read.headers {
        bail!("--validate reads a CSV or TSV with a header, or a log with --log-format");
    }
    let delimiter = read.delimiter();
    let record = move |text: &[u8]| {
        let mut reader =
            csv::ReaderBuilder::new().has_headers(false).delimiter(delimiter).from_reader(text);
        reader.byte_records().next().transpose().ok().flatten()
    };
    let header = record(rows.header()).unwrap_or_default();
    let Some(index) = header.iter().position(|name| name == column.as_bytes()) else {
        bail!("--validate {column}: the input has no column {column}");
    };
    Ok(Box::new(move |row: &[u8]| {
        Ok(record(row).and_then(|r| r.get(index).map(<[u8]>::to_vec)).unwrap_or_default())
    }))
}
