//! `ratelimit synth`: a synthetic catalog in the USGS CSV layout, streamed.

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::config::SynthJob;
use crate::synth::etas::Simulation;
use crate::synth::usgs::write_catalog;

pub(super) fn run(job: SynthJob) -> Result<ExitCode> {
    let simulation = Simulation::new(job.params);
    job.output.write(|out| write_catalog(simulation, out))?;
    Ok(ExitCode::SUCCESS)
}
