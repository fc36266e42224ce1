//! `ratelimit min-rate`: the smallest rate at which a bucket of a given burst loses nothing.

use std::io::{BufWriter, Write};
use std::num::NonZeroU64;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use crate::cli::args::{InputArgs, OutputArgs, parse_burst};
use crate::cli::config::Styles;
use crate::cli::notes::say_notes;
use crate::engine::limit::column;
use crate::engine::lossless::{self, Found};
use crate::render::export;
use crate::render::outfile::stdout;

pub(super) fn run(args: &MinRateArgs, styles: &Styles) -> Result<ExitCode> {
    let input = args.input.resolve(args.key.as_deref().map(|key| (key, "--key")))?;
    let bursts: Vec<u64> = args.burst.iter().map(|&burst| u64::from(burst)).collect();
    let Found { found, notes } = lossless::min_rate(&input.source, &input.read, &bursts)?;
    say_notes(&input, &notes);
    let mut out = BufWriter::new(stdout());
    let found = export::PerUnit { found: &found, per: args.per };
    export::write(&mut out, args.output.format, styles.stdout, &found)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `ratelimit min-rate`.
#[derive(Debug, Args)]
pub struct MinRateArgs {
    #[command(flatten)]
    pub input: InputArgs,

    /// The bucket's capacity; repeat it, or separate bursts with commas.
    #[arg(
        short = 'b',
        long,
        value_name = "B",
        required = true,
        value_delimiter = ',',
        allow_hyphen_values = true,
        value_parser = parse_burst
    )]
    pub burst: Vec<NonZeroU64>,

    /// Give each distinct value of this column a bucket of its own, as a service limits
    /// each client: the rate found is the highest any key needs, and that key is named
    /// (--key client).
    #[arg(short = 'k', long, value_name = "COLUMN", value_parser = |name: &str| Ok::<_, String>(column(name)))]
    pub key: Option<String>,

    /// The unit the table gives each rate in, as a decimal beside the exact rate: s, m, h
    /// or d.
    #[arg(long, value_enum, value_name = "UNIT", default_value = "h")]
    pub per: export::Per,

    #[command(flatten)]
    pub output: OutputArgs,
}
