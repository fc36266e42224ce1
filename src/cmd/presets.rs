//! `ratelimit presets`: the providers' published LLM limits the program carries, each with
//! the day it was read, its source and the layers it is.

use std::io::{BufWriter, Write};
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use crate::cli::args::OutputArgs;
use crate::cli::config::Styles;
use crate::cli::diagnostics::diagnostics;
use crate::engine::settled::presets::listed;
use crate::render::export::{self, PresetList};
use crate::render::outfile::stdout;

/// `ratelimit presets`.
#[derive(Debug, Args)]
pub struct PresetsArgs {
    #[command(flatten)]
    pub output: OutputArgs,
}

pub(super) fn run(args: &PresetsArgs, styles: &Styles) -> Result<ExitCode> {
    let list = PresetList(listed().map_err(anyhow::Error::msg)?);
    let mut out = BufWriter::new(stdout());
    export::write(&mut out, args.output.format, styles.stdout, &list)?;
    out.flush()?;
    // A note that stderr cannot take is lost; the data and the exit code are not.
    let _ = writeln!(
        diagnostics(),
        "ratelimit: note: presets go stale: each was read on its day from its source \
         (--format json); check your own limits before you trust one"
    );
    Ok(ExitCode::SUCCESS)
}
