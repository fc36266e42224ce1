//! `replay --validate COLUMN`: the replay's decisions against what the system logged.

use anyhow::{Result, bail};

use crate::input::catalog::{ReadOptions, Rows};
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

/// Compares `trace` with each row's `column`, as [`validate`] does, and says how they agree
/// on stderr (as `--emit`'s report is: `-q` silences it).
pub fn say(rows: &Rows, trace: &[bool], column: &str, read: &ReadOptions) -> Result<()> {
    let lines = validate(rows, trace, column, read)?;
    let mut err = crate::cli::diagnostics::diagnostics();
    for line in lines {
        let _ = writeln!(err, "ratelimit: {line}");
    }
    Ok(())
}

/// Compares `trace` (one decision a row, in `rows`' order) with each row's `column`, and
/// returns the lines that say how they agree: the count, then the first disagreements.
pub fn validate(
    rows: &Rows,
    trace: &[bool],
    column: &str,
    read: &ReadOptions,
) -> Result<Vec<String>> {
    let field = field_of(rows, column, read)?;
    let (mut compared, mut agree, mut unlimited) = (0u64, 0u64, 0u64);
    let mut apart = Vec::new();
    for ((event, row), &replayed) in rows.iter().zip(trace) {
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
