//! `ratelimit replay`: one limiter over a catalog, as a report or as a filter.

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

use anyhow::{Result, bail};

use super::{key_names, notes, write_result};
use crate::cli::args::Emit;
use crate::cli::args::ReplayArgs;
use crate::cli::config::Styles;
use crate::engine::Backend;
use crate::input::catalog;
use crate::input::format::InputFormat;
use crate::render::formats;
use crate::render::outfile::Output;
use crate::report::csv_rows;

pub(super) fn run(args: &ReplayArgs, styles: &Styles) -> Result<ExitCode> {
    let key = args.keys.key.as_deref();
    let mut input = args.input.resolve(args.fleet.key_column(key))?;
    let format = input.read.format;
    let tabular = matches!(format, InputFormat::Csv | InputFormat::Tsv);
    if args.emit == Some(Emit::All) && !tabular {
        bail!(
            "--emit all adds a column, which {} has not: use --emit passed or --emit dropped",
            format.name()
        );
    }
    if args.emit.is_some() {
        // The rows go to stdout: it must not be the file they are read from.
        input.check_output(&Output::Stdout)?;
    }
    let settings = [args.limit.settings(args.algo)?];
    let fleet = args.fleet.one_share(key, settings.len())?;
    let backend = Backend::new(&settings, args.remote.target()?.as_ref(), fleet)?;
    let name = input.source.name();
    let keyed = key.is_some();
    if !keyed && input.read.key_column.is_some() {
        input.read.key_flag = "--route";
    }
    let (recorder, stats, style, mut out): (_, _, _, Box<dyn Write>) = match args.emit {
        None => {
            let (recorder, stats) = backend.replay(&settings, keyed, &input.source, &input.read)?;
            (recorder, stats, styles.stdout, Box::new(BufWriter::new(io::stdout().lock())))
        }
        Some(emit) => {
            // Every row is read and checked, and every decision taken, before the first
            // row is written, so an error leaves no half-written output.
            let (rows, stats) = catalog::read_rows(&input.source, &input.read)?;
            let events = rows.iter().map(|(event, _)| event);
            let recorder = backend.decide(&settings, keyed, events)?;
            let mut out = BufWriter::new(io::stdout().lock());
            // Rows go out as they came in: CSV and TSV with their header (and a column for
            // the decision), the others line by line, GeoJSON as JSON Lines of features.
            let (comma, passed, dropped): (&[u8], &[u8], &[u8]) = match format {
                InputFormat::Tsv => (b"\tdecision\n", b"\tpassed", b"\tdropped"),
                _ => (b",decision\n", b",passed", b",dropped"),
            };
            if tabular {
                out.write_all(rows.header())?;
                out.write_all(if emit == Emit::All { comma } else { b"\n" })?;
            }
            // One limiter: the trace holds one decision per row.
            for ((_, row), &pass) in rows.iter().zip(recorder.trace()) {
                match emit {
                    Emit::Passed if pass => writeln_bytes(&mut out, row, b"")?,
                    Emit::Dropped if !pass => writeln_bytes(&mut out, row, b"")?,
                    Emit::All => writeln_bytes(&mut out, row, if pass { passed } else { dropped })?,
                    _ => {}
                }
            }
            out.flush()?;
            (recorder, stats, styles.stderr, Box::new(io::stderr().lock()))
        }
    };
    notes(&input, &stats);
    let names = key_names(key, &stats);
    let reports = recorder.reports(&name, names, args.keys.top, input.read.threads).lanes;
    let report = &reports[0];
    let table = |w: &mut dyn Write| formats::replay_table(w, report, style);
    write_result(&mut out, args.output.format, report, &csv_rows(&reports), table)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn writeln_bytes(out: &mut impl Write, row: &[u8], suffix: &[u8]) -> io::Result<()> {
    out.write_all(row)?;
    out.write_all(suffix)?;
    out.write_all(b"\n")
}
