//! `ratelimit synth`: a synthetic catalog in the USGS CSV layout, streamed.

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::args::{SynthArgs, SynthModel};
use crate::synth::etas::Simulation;
use crate::synth::requests::{RequestLog, write_log};
use crate::synth::usgs::write_catalog;

pub(super) fn run(args: &SynthArgs) -> Result<ExitCode> {
    if let Some(SynthModel::Requests(requests)) = &args.model {
        let (params, output) = requests.resolve()?;
        let log = RequestLog::new(params)
            .ok_or_else(|| anyhow::anyhow!("the request model cannot be made from these"))?;
        output.write(|out| write_log(log, out))?;
        return Ok(ExitCode::SUCCESS);
    }
    let (params, output) = args.resolve()?;
    let simulation = Simulation::new(params);
    output.write(|out| write_catalog(simulation, out))?;
    Ok(ExitCode::SUCCESS)
}
