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

/// A row as the log has it: its event, its text, and the status it logged.
pub struct Decided<'r> {
    /// The row's event.
    pub event: Event,
    row: &'r [u8],
    status: Vec<u8>,
    /// What the status says: passed, refused, or no limit applied.
    logged: Option<bool>,
}

/// Returns the rows in the order nginx decided them, as far as its log can tell, each with
/// its logged status (`column`), read once: in time order, and among the rows of one key at
/// one time, the PASSED first, then the DELAYED by their `$request_time` (nginx logs a
/// delayed request when it is served, so two requests of one client in one millisecond are
/// logged in the order they were served), then the REJECTED; rows alike keep their order.
/// A status that is none of nginx's is an error, before anything is decided.
pub fn decided_order<'r>(
    rows: &'r Rows,
    column: &str,
    read: &ReadOptions,
) -> Result<Vec<Decided<'r>>> {
    let status = field_of(rows, column, read)?;
    // $request_time, if the log has it: the delay a DELAYED request waited, in seconds.
    let took = field_of(rows, "request_time", read).ok();
    let mut decided = Vec::with_capacity(rows.len());
    let mut order = Vec::with_capacity(rows.len());
    for (event, row) in rows.iter() {
        let status = status(row)?;
        let Some(logged) = logged(&status) else {
            // A logged value is quoted with its control characters escaped, as every
            // message that quotes input is: a log's bytes never reach the terminal raw.
            let value = one_line(&String::from_utf8_lossy(&status));
            bail!(
                "--validate {column}: the row at {} has \"{value}\", which is not a \
                 $limit_req_status (PASSED, DELAYED, REJECTED, their _DRY_RUN, or -)",
                event.time
            );
        };
        let rank = match status.as_slice() {
            b"DELAYED" | b"DELAYED_DRY_RUN" => 1,
            b"REJECTED" | b"REJECTED_DRY_RUN" => 2,
            _ => 0,
        };
        let took = match (&took, rank) {
            (Some(took), 1) => crate::units::decimal::parse_floor(&took(row)?, 3).unwrap_or(0),
            _ => 0,
        };
        order.push((rank, took));
        decided.push(Some(Decided { event, row, status, logged }));
    }
    // Which row goes at each place. Within each run of one time, each key's rows are put in
    // order in the places that key's rows had: other keys' rows stay where they were
    // (nginx's zone sees the keys in the order they came). Stable: rows alike keep their
    // order.
    let mut at: Vec<usize> = (0..decided.len()).collect();
    let key = |i: usize| decided[i].as_ref().map_or(0, |d| d.event.key);
    let time = |i: usize| decided[i].as_ref().map(|d| d.event.time);
    let mut start = 0;
    while start < at.len() {
        let end = start + (start..at.len()).take_while(|&i| time(i) == time(start)).count();
        let mut places: Vec<(u32, usize)> = (start..end).map(|i| (key(i), i)).collect();
        places.sort_unstable();
        for group in places.chunk_by(|a, b| a.0 == b.0) {
            let mut mine: Vec<usize> = group.iter().map(|&(_, i)| i).collect();
            mine.sort_by_key(|&i| order[i]);
            for (&(_, place), row) in group.iter().zip(mine) {
                at[place] = row;
            }
        }
        start = end;
    }
    Ok(at.into_iter().filter_map(|row| decided[row].take()).collect())
}

/// Compares `trace` with each row's logged status, as [`validate`] does, and says how they
/// agree on stderr (as `--emit`'s report is: `-q` silences it).
pub fn say(decided: &[Decided], trace: &[bool], column: &str) {
    let mut err = crate::cli::diagnostics::diagnostics();
    for line in validate(decided, trace, column) {
        let _ = writeln!(err, "ratelimit: {line}");
    }
}

/// Compares `trace` (one decision a row of `decided`, in its order) with each row's logged
/// status (of `column`), and returns the lines that say how they agree: the count, then the
/// first disagreements.
pub fn validate(decided: &[Decided], trace: &[bool], column: &str) -> Vec<String> {
    let (mut compared, mut agree, mut unlimited) = (0u64, 0u64, 0u64);
    let mut apart = Vec::new();
    for (row, &replayed) in decided.iter().zip(trace) {
        let Some(passed) = row.logged else {
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
                row.event.time,
                one_line(&String::from_utf8_lossy(&row.status)),
                said(passed),
                said(replayed),
                one_line(&String::from_utf8_lossy(row.row))
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
        return vec![format!("validate: no event with a {column} to compare{unlimited}")];
    }
    #[allow(clippy::cast_precision_loss)] // A percentage to one decimal, for people.
    let share = agree as f64 * 100.0 / compared as f64;
    let mut lines = vec![format!(
        "validate: {compared} events with a {column}, {agree} decided alike ({share:.1}%), {} \
         apart{unlimited}",
        compared - agree,
    )];
    lines.extend(apart);
    lines
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
