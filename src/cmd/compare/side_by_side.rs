//! `ratelimit compare --limit … --limit …`: whole configurations side by side over the
//! same events, in one read, and what changes from the first to the second.

use std::io::{BufWriter, Write};
use std::process::ExitCode;

use anyhow::{Result, bail};

use crate::cli::args::{JobArgs, OutputArgs};
use crate::cli::config::{Input, Styles};
use crate::cli::diagnostics::diagnostics;
use crate::cli::layer::{self, Decided};
use crate::engine::limit::Limit;
use crate::engine::side_by_side::{self, ByKey, KeysKept};
use crate::input::catalog::Rows;
use crate::input::format::InputFormat;
use crate::render::export;
use crate::render::outfile::{Output, stdout};

/// What `compare --limit …` was asked: the configurations, the job's input and keys, and
/// whether to write the changed rows (and their header).
pub(super) struct Asked<'a> {
    pub specs: &'a [Limit],
    pub job: &'a JobArgs,
    pub emit_changed: bool,
    /// With `--by-key`: which keys to list, one row each, as the result.
    pub by_key: Option<KeysKept>,
    pub header: bool,
    pub output: &'a OutputArgs,
}

pub(super) fn run(args: &Asked, styles: &Styles) -> Result<ExitCode> {
    let (layers, input) = layer::configured(args.specs, args.job)?;
    if args.emit_changed {
        check_emit(&input, args.specs.len())?;
    }
    if args.by_key.is_some() {
        check_by_key(&input, args.specs.len())?;
    }
    let asked = (input, args.job.keys.top);
    let Decided { result, traces, rows, keys, input } =
        layer::decide(args.specs, &layers, asked, args.job)?;
    if let Some(kept) = args.by_key {
        let of: Vec<u32> = rows.iter().map(|(event, _)| event.key).collect();
        let column = input.read.key_column.clone().unwrap_or_default();
        let by_key = ByKey {
            column,
            keys: side_by_side::by_key(&traces[0], &traces[1], (&of, &keys), kept),
        };
        let mut out = BufWriter::new(stdout());
        export::write(&mut out, args.output.format, styles.stdout, &by_key)?;
        out.flush()?;
    } else if args.emit_changed {
        emit_changed(&rows, &traces[0], &traces[1], &input, args.header)?;
        let mut err = diagnostics();
        export::write(&mut err, args.output.format, styles.stderr, &result)?;
    } else {
        let mut out = BufWriter::new(stdout());
        export::write(&mut out, args.output.format, styles.stdout, &result)?;
        out.flush()?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Says whether `--emit changed` can write `input`'s rows: two configurations, rows with
/// text, and stdout not the input.
fn check_emit(input: &Input, configurations: usize) -> Result<()> {
    if configurations != 2 {
        bail!(
            "--emit changed compares two configurations, and --limit is given {configurations} times"
        );
    }
    if matches!(input.read.format, InputFormat::Jsonl | InputFormat::Geojson | InputFormat::Parquet)
    {
        bail!(
            "--emit changed writes CSV, TSV or log lines with both decisions, which {} has not",
            input.read.format.name()
        );
    }
    input.check_output(&Output::Stdout)
}

/// Says whether `compare --by-key` can list `input`'s keys: two configurations, keyed.
fn check_by_key(input: &Input, configurations: usize) -> Result<()> {
    if configurations != 2 {
        bail!("--by-key compares two configurations, and --limit is given {configurations} times");
    }
    if input.read.key_column.is_none() {
        bail!("--by-key lists keys: give the configurations a key (key= in each --limit)");
    }
    Ok(())
}

/// Writes each row whose decision differs between the two configurations, as it came in,
/// with both decisions: two more columns of a CSV or TSV (`first`, `second`, after a header
/// if asked), or a prefix of a log line (`passed dropped `, as a log's fields are spaced).
fn emit_changed(
    rows: &Rows,
    first: &[bool],
    second: &[bool],
    input: &Input,
    header: bool,
) -> Result<()> {
    let mut out = BufWriter::new(stdout());
    let read = &input.read;
    let tabular = matches!(read.format, InputFormat::Csv | InputFormat::Tsv);
    let word = |pass: bool| if pass { "passed" } else { "dropped" };
    let delimiter = char::from(read.delimiter());
    if header && read.headers && tabular {
        out.write_all(rows.header())?;
        writeln!(out, "{delimiter}first{delimiter}second")?;
    }
    for (((_, row), &a), &b) in rows.iter().zip(first).zip(second) {
        if a == b {
            continue;
        }
        if tabular {
            out.write_all(row)?;
            writeln!(out, "{delimiter}{}{delimiter}{}", word(a), word(b))?;
        } else {
            write!(out, "{} {} ", word(a), word(b))?;
            out.write_all(row)?;
            out.write_all(b"\n")?;
        }
    }
    out.flush()?;
    Ok(())
}
