//! `ratelimit plot`: the replay of every chosen limiter, drawn as one SVG.

use std::process::ExitCode;

use anyhow::Result;

use super::notes;
use crate::cli::args::PlotArgs;
use crate::cli::config::Input;
use crate::engine::Backend;
use crate::engine::recorder::KeyNames;
use crate::input::catalog::{self, Event};
use crate::render::plot::{COLUMNS, LanePlot, Scene};
use crate::units::time::{MICROS_PER_SEC, Span, Timestamp};

pub(super) fn run(args: &PlotArgs) -> Result<ExitCode> {
    let (settings, output, input) = args.resolve()?;
    let (times, stats) = catalog::read_events(&input.source, &input.read, Vec::<Timestamp>::new)?;
    notes(&input, &stats);
    let (start, end) = axis(&input, &times);
    let recorder =
        Backend::Memory.decide(&settings, false, times.iter().map(|&t| Event::new(t, 0)))?;
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
    let read = &input.read;
    let start = read.since.or(times.first().copied()).unwrap_or(Timestamp::EPOCH);
    let end = read.until.or(times.last().copied()).unwrap_or(start);
    let minute = Span::from_micros(60 * MICROS_PER_SEC).expect("positive");
    if end > start { (start, end) } else { (start, start.checked_add(minute).unwrap_or(start)) }
}
