//! `ratelimit plot`: the replay of every chosen limiter, drawn as one SVG.

use std::io::{self, IsTerminal};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::Args;

use crate::cli::args::{InputArgs, LimitArgs};
use crate::cli::config::Input;
use crate::cli::notes::notes;
use crate::engine::Backend;
use crate::engine::recorder::{KeyNames, Settings};
use crate::input::catalog::{self, Timeline};
use crate::limiter::Algorithm;
use crate::render::outfile::Output;
use crate::render::plot::{COLUMNS, LanePlot, Scene};
use crate::units::time::{MICROS_PER_SEC, Span, Timestamp};

pub(super) fn run(args: &PlotArgs) -> Result<ExitCode> {
    let (settings, output, input) = args.resolve()?;
    let (events, stats) = catalog::read_events(&input.source, &input.read, Timeline::new)?;
    notes(&input, &stats);
    let times = events.times();
    let (start, end) = axis(&input, times);
    let recorder = Backend::Memory.decide(&settings, false, (events.events(), &stats.keys))?;
    let lanes = recorder.lanes();
    let mut bins = vec![vec![(0u32, 0u32); COLUMNS]; lanes];
    for (&time, decisions) in times.iter().zip(recorder.trace().chunks(lanes)) {
        let column = Scene::column(start, end, time);
        for (lane, &pass) in bins.iter_mut().zip(decisions) {
            let (passed, dropped) = &mut lane[column];
            *if pass { passed } else { dropped } += 1;
        }
    }
    let name = input.source.name();
    let lanes = recorder
        .reports(&name, KeyNames::default(), 0, 1)
        .lanes
        .into_iter()
        .zip(bins)
        .map(|(report, bins)| LanePlot { report, bins });
    // The title names the file, not the directories it is in.
    let title = std::path::Path::new(&name)
        .file_name()
        .map_or(name.clone(), |n| n.to_string_lossy().into());
    let scene = Scene { input: title, start, end, lanes: lanes.collect() };
    let svg = scene.draw();
    output.write(|out| out.write_all(svg.as_bytes()))?;
    Ok(ExitCode::SUCCESS)
}

/// The time axis: the --since/--until range where given, else the events' own, and never
/// empty.
fn axis(input: &Input, times: &[Timestamp]) -> (Timestamp, Timestamp) {
    let (since, until) = input.read.time_range();
    let start = since.or(times.first().copied()).unwrap_or(Timestamp::EPOCH);
    let end = until.or(times.last().copied()).unwrap_or(start);
    let minute = Span::from_micros(60 * MICROS_PER_SEC).expect("positive");
    if end > start { (start, end) } else { (start, start.checked_add(minute).unwrap_or(start)) }
}

/// `ratelimit plot`.
#[derive(Debug, Args)]
pub struct PlotArgs {
    #[command(flatten)]
    pub input: InputArgs,

    #[command(flatten)]
    pub limit: LimitArgs,

    /// The limiters to draw, top to bottom [default: all six]; repeat it, or separate
    /// names with commas.
    #[arg(short = 'a', long, value_parser = crate::cli::algorithm_parser(), value_name = "ALGO", value_delimiter = ',')]
    pub algo: Vec<Algorithm>,

    /// Write the SVG to FILE, which appears whole or not at all, or to stdout with `-o -`
    /// [default: stdout, unless it is a terminal].
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

impl PlotArgs {
    /// Settles the lanes to draw, where the SVG goes, and the input, which it must not be.
    pub fn resolve(&self) -> Result<(Vec<Settings>, Output, Input)> {
        let algorithms = if self.algo.is_empty() {
            Algorithm::ALL.into_iter().filter(|a| !a.is_system()).collect()
        } else {
            self.algo.clone()
        };
        let settings = self.limit.side_by_side(&algorithms)?;
        let output = match &self.output {
            Some(path) => Output::new(path.clone()),
            None if io::stdout().is_terminal() => {
                bail!("refusing to write SVG to a terminal: give -o FILE, or -o - for stdout")
            }
            None => Output::Stdout,
        };
        let input = self.input.resolve(None)?;
        input.check_output(&output)?;
        Ok((settings, output, input))
    }
}
