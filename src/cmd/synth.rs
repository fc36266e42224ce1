//! `ratelimit synth`: a synthetic catalog in the USGS CSV layout, streamed.

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::args::SynthArgs;
use crate::synth::etas::Simulation;
use crate::synth::usgs::write_catalog;

pub(super) fn run(args: &SynthArgs) -> Result<ExitCode> {
    let (params, output) = args.resolve()?;
    let simulation = Simulation::new(params);
    output.write(|out| write_catalog(simulation, out))?;
    Ok(ExitCode::SUCCESS)
}
