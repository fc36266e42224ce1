//! `ratelimit synth`: a synthetic catalog in the USGS CSV layout, streamed.

use std::io;
use std::process::ExitCode;

use anyhow::Result;

use crate::config::SynthJob;
use crate::etas::Simulation;
use crate::output::write_whole;
use crate::usgs::write_catalog;

pub(super) fn run(job: SynthJob) -> Result<ExitCode> {
    let simulation = Simulation::new(job.params);
    match &job.output {
        None => write_catalog(simulation, &mut io::stdout().lock())?,
        Some(path) => write_whole(path, |file| write_catalog(simulation, file))?,
    }
    Ok(ExitCode::SUCCESS)
}
