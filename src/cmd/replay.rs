//! `ratelimit replay`: one limiter over a catalog, as a report or as a filter.

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

use anyhow::Result;

use super::{Styles, notes, write_result};
use crate::catalog;
use crate::cli::Emit;
use crate::config::ReplayJob;
use crate::output;
use crate::replay::Replayer;

pub(super) fn run(job: ReplayJob, styles: &Styles) -> Result<ExitCode> {
    let name = job.input.source.name();
    let (replayer, stats, style, mut out): (_, _, _, Box<dyn Write>) = match job.emit {
        None => {
            let (replayer, stats) = catalog::replay(&job.input.source, &job.input.read, || {
                Replayer::new(&[job.settings])
            })?;
            (replayer, stats, styles.stdout, Box::new(BufWriter::new(io::stdout().lock())))
        }
        Some(emit) => {
            // Every row is read and checked before the first is written, so an error
            // leaves no half-written output.
            let (rows, stats) = catalog::read_rows(&job.input.source, &job.input.read)?;
            let mut replayer = Replayer::new(&[job.settings]);
            let mut out = BufWriter::new(io::stdout().lock());
            out.write_all(rows.header())?;
            out.write_all(if emit == Emit::All { b",decision\n" } else { b"\n" })?;
            for (time, row) in rows.iter() {
                let pass = replayer.decide(time);
                match emit {
                    Emit::Passed if pass => writeln_bytes(&mut out, row, b"")?,
                    Emit::Dropped if !pass => writeln_bytes(&mut out, row, b"")?,
                    Emit::All => {
                        let decision: &[u8] = if pass { b",passed" } else { b",dropped" };
                        writeln_bytes(&mut out, row, decision)?
                    }
                    _ => {}
                }
            }
            out.flush()?;
            (replayer, stats, styles.stderr, Box::new(io::stderr().lock()))
        }
    };
    notes(&job.input, &stats);
    let report = replayer.reports(&name).remove(0);
    let table = |w: &mut dyn Write| output::replay_table(w, &report, style);
    write_result(&mut out, job.format, &report, std::slice::from_ref(&report), table)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn writeln_bytes(out: &mut impl Write, row: &[u8], suffix: &[u8]) -> io::Result<()> {
    out.write_all(row)?;
    out.write_all(suffix)?;
    out.write_all(b"\n")
}
