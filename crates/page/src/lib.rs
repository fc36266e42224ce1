//! The report page: one self-contained HTML file that tells a replay's whole story, made
//! on the engine's API for the program's `report` and the Python package's alike.
//!
//! The page is drawn, in the reader's browser, from one JSON document written into it
//! ([`Page`]): the events over time, every limiter on the busiest stretch, the curve of
//! the smallest lossless bucket, the keys, the fleet and the layers, and how it was made.
//! The figures are the engine's reports, as `compare`, `min-bucket` and `replay --limit`
//! give them in JSON.

#![warn(missing_docs)]

use std::time::Instant;

use anyhow::{Result, bail};
use serde::Serialize;
use serde_json::Value;

use ratelimit_core::{limiter, sizing};
use ratelimit_engine::Backend;
use ratelimit_engine::compare;
use ratelimit_engine::fleet_ask::FleetAsk;
use ratelimit_engine::key_sizing::KeyedFinders;
use ratelimit_engine::limit::Limit;
use ratelimit_engine::lossless::curve_of;
use ratelimit_engine::recommend::{Contour, contours};
use ratelimit_engine::recorder::KeyNames;
use ratelimit_engine::redis::RedisTarget;
use ratelimit_engine::replay::Run;
use ratelimit_input as input;
use ratelimit_input::asked::Names;
use ratelimit_input::catalog::{self, Event, ReadOptions, Sink, Source, Timeline, slot};
use ratelimit_input::keys::wide;
use ratelimit_input::units;

use self::curve::{CurvePoint, curve_points};
use self::scene::Scene;
use self::timeline::{MAX_DRAWN_EVENTS, TimelineData, values};
use crate::limiter::Algorithm;
use crate::sizing::quantile::Percent;
use crate::units::time::{Span, Timestamp};

mod curve;
mod html;
mod scene;
mod timeline;

pub use self::html::write_page;

/// The scene's length when no range of time is given, in the rate's periods: 48, the 48
/// hours of the article's picture at 5/h.
const SCENE_PERIODS: i64 = 48;

/// The most keys a page lists, whatever is asked: each is about 2.8 kB of it, and the page
/// stays under 5 MB and is made in bounded memory.
pub const MOST_KEYS: usize = 500;

/// What a page is asked to show, settled: the limit it leads with, layers or
/// configurations beside it, and where its limits run.
#[derive(Clone, Debug)]
pub struct PageAsk {
    /// The limit the page leads with: its limiter's figures lead, beside the six exact
    /// ones, at its rate and burst; keyed as the input is read.
    pub lead: Limit,
    /// The length of the busiest windows (the rate's period if `None`).
    pub window: Option<Span>,
    /// Layers of several limits at once, each shown with its refusals; or, with
    /// `side_by_side`, whole configurations drawn side by side.
    pub limits: Vec<Limit>,
    /// Whether `limits` are configurations, each decided alone, rather than layers.
    pub side_by_side: bool,
    /// With keys, the share of keys the page says a burst keeps whole.
    pub cover: Percent,
    /// How many keys the page lists (0 for all; at most [`MOST_KEYS`] either way).
    pub top: usize,
    /// A simulated fleet, if asked: the page shows its share modes side by side.
    pub fleet: FleetAsk,
    /// Redis, if the limits run there.
    pub redis: Option<RedisTarget>,
    /// How options are named in messages.
    pub names: Names,
    /// How the page was asked for, as its footer says (the command line, or a call).
    pub command: String,
    /// Whether a range of time (`--since`, `--until`) was given: then the scene is all of
    /// it, not the busiest stretch.
    pub span_given: bool,
}

/// What to read for a page: its lead's events, and the layers' or configurations', keyed
/// and weighed by their own columns (a second reading), if any.
#[derive(Clone, Debug)]
pub struct Reads {
    /// For the lead and the limiters beside it.
    pub lead: ReadOptions,
    /// For [`PageAsk::limits`], if any.
    pub limits: Option<ReadOptions>,
}

/// What making a page said, beside the page, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Said {
    /// A note on the input: what its reading found worth saying.
    Note(String),
    /// That the page lists fewer keys than asked, and why.
    Cut(String),
}

/// A page made, and what making it said.
#[derive(Debug)]
pub struct Made {
    /// The page's data.
    pub page: Page,
    /// What making it said, in order.
    pub said: Vec<Said>,
}

/// The page's data: what the script draws, and the reports it quotes. Its fields are
/// the page's own; the reports inside are the engine's JSON.
#[derive(Debug, Serialize)]
pub struct Page {
    meta: Meta,
    timeline: TimelineData,
    scene: Scene,
    curve: Vec<CurvePoint>,
    /// `compare`'s report: one limiter a lane, the one asked for at `meta.chosen`.
    lanes: Value,
    /// `min-bucket`'s report at the rate, with the cover with keys.
    need: Value,
    /// With a fleet: `compare`'s report of the share modes side by side.
    fleet: Option<Value>,
    /// With layers: `replay --limit`'s report.
    layers: Option<Value>,
    /// Side by side: `compare --limit`'s report.
    configurations: Option<Value>,
    /// Side by side: each configuration's decisions on the scene's events.
    configuration_scene: Option<Vec<String>>,
    /// With keys: `recommend`'s frontier, a contour for each share of keys untouched.
    frontier: Option<Vec<Contour>>,
}

/// How the page was made.
#[derive(Debug, Serialize)]
struct Meta {
    command: String,
    input: String,
    bytes: Option<u64>,
    events: usize,
    version: &'static str,
    seconds: f64,
    /// The lane of the limiter asked for.
    chosen: usize,
}

/// Makes the page of `source`'s events, read as `reads` say, as `ask` asks; `began` is
/// when the work began, for the footer's time.
pub fn page(
    ask: &PageAsk,
    source: &Source,
    reads: &Reads,
    began: Instant,
) -> ratelimit_engine::error::Result<Made> {
    Ok(made(ask, source, reads, began)?)
}

/// [`page`], its errors the internals'.
fn made(ask: &PageAsk, source: &Source, reads: &Reads, began: Instant) -> Result<Made> {
    let read = &reads.lead;
    let algorithms = scene_algorithms(ask.lead.algorithm);
    let settings = compare::settings(&ask.lead, &algorithms, ask.window, "--")?;
    let chosen = settings.iter().position(|s| s.algorithm == ask.lead.algorithm).unwrap_or(0);
    let rate = settings[chosen].rate;
    if let Some(why) = ratelimit_engine::limit::cost_refused(
        &read.cost,
        settings.iter().map(|s| s.algorithm),
        &ask.names.of("cost"),
    ) {
        bail!(why);
    }
    let key = read.key_column.as_deref();
    let keyed = key.is_some();
    let (settings, fleet) = ask.fleet.plan(settings, key, false, ask.names)?;
    let backend = Backend::new(&settings, ask.redis.as_ref(), fleet)?;
    // The page lists at most MOST_KEYS keys, whatever is asked, so that it stays under
    // 5 MB (each key is about 2.8 kB of it) and is made in bounded memory.
    let top = if keyed && (ask.top == 0 || ask.top > MOST_KEYS) { MOST_KEYS } else { ask.top };
    let fresh = || Collect(Vec::new());
    let (Collect(events), stats) = catalog::read_events(source, read, fresh)?;
    let mut said: Vec<Said> =
        ratelimit_engine::notes::notes(source, read, &stats).into_iter().map(Said::Note).collect();
    if events.is_empty() {
        bail!("{} has no events to report on", source.name());
    }
    let recorder = backend.decide(&settings, keyed, (events.iter().copied(), &stats.keys))?;
    let names = KeyNames::of(key, &stats);
    let lanes = recorder.reports(&source.name(), names, top, read.threads).lanes;
    let keys = stats.keys.names().count();
    if keyed && keys > top && (ask.top == 0 || ask.top > top) {
        said.push(Said::Cut(format!(
            "the page lists the {top} keys with the most drops, of {keys}: at most \
             {MOST_KEYS}, to stay under 5 MB"
        )));
    }

    // The smallest lossless bucket, per key if keyed, and the cover.
    let mut finders = KeyedFinders::new(&[rate], keyed, top, read.threads);
    for &event in &events {
        finders.event(event)?;
    }
    let need = finders.results(names, Some(ask.cover));
    let frontier = match keyed {
        true => Some(contours(&events, &stats.keys, ask.cover, read.threads)?),
        false => None,
    };

    let fleet = match ask.fleet.servers {
        Some(_) => {
            let one = vec![settings[chosen]];
            let (modes, fleet) = ask.fleet.plan(one, key, true, ask.names)?;
            let backend = Backend::new(&modes, ask.redis.as_ref(), fleet)?;
            let recorder = backend.decide(&modes, keyed, (events.iter().copied(), &stats.keys))?;
            // The share modes list the keys as asked.
            let lanes = recorder.reports(&source.name(), names, ask.top, read.threads).lanes;
            Some(serde_json::to_value(lanes)?)
        }
        None => None,
    };
    let (layers, configurations) = beside(ask, source, reads, top, &mut said)?;

    // With keys, the curve of the key that needs the most, on which the answer lies.
    let neediest = (need.first().and_then(|n| n.worst_key.as_ref()))
        .and_then(|worst| stats.keys.names().position(|name| name == worst.key));
    let curved: Vec<Event> = match neediest {
        Some(key) => events.iter().filter(|e| slot(e.key) == key).copied().collect(),
        None => Vec::new(),
    };
    let curved = if curved.is_empty() { &events } else { &curved };
    let mut timeline = Timeline::new();
    curved.iter().for_each(|e| timeline.push(e.time, e.cost));
    let curve = curve_points(&curve_of(&timeline)?, rate);
    let trace = recorder.trace();
    let scene_ms = rate.period().as_micros() / 1000 * SCENE_PERIODS;
    // Per key, the busiest demand may be many keys' calm: the scene is where yours drops most.
    let busiest_start = match keyed {
        true => Scene::most_dropped(&events, trace, (lanes.len(), chosen), scene_ms),
        false => None,
    }
    .or(lanes[chosen].demand_busiest_window.start);
    let scene = Scene::of(&events, trace, lanes.len(), (busiest_start, scene_ms), ask.span_given);
    // Each configuration's decisions on the scene's events: the rows in the scene's span,
    // in the order the scene has them.
    let configuration_scene = configurations.as_ref().map(|decided| {
        let ms = |t: Timestamp| t.as_micros().div_euclid(1000);
        let (from, to) = (scene.start, scene.end);
        let shown: Vec<usize> = (decided.rows.iter().enumerate())
            .filter(|(_, (event, _))| (from..to).contains(&ms(event.time)))
            .map(|(i, _)| i)
            .take(scene.t.len())
            .collect();
        (decided.traces.iter())
            .map(|trace| {
                shown.iter().map(|&i| if trace[i] { '1' } else { '0' }).collect::<String>()
            })
            .collect::<Vec<String>>()
    });
    let values = match events.len() <= MAX_DRAWN_EVENTS {
        true => values(source, read, events.len()),
        false => None,
    };
    let timeline = TimelineData::of(&events, &stats, values);
    let page = Page {
        meta: Meta {
            command: ask.command.clone(),
            input: source.name(),
            bytes: match source {
                Source::Path(path) => std::fs::metadata(path).ok().map(|m| m.len()),
                Source::Embedded { bytes, .. } => Some(wide(bytes.len())),
                _ => None,
            },
            events: events.len(),
            version: env!("CARGO_PKG_VERSION"),
            seconds: began.elapsed().as_secs_f64(),
            chosen,
        },
        timeline,
        scene,
        curve,
        lanes: serde_json::to_value(&lanes)?,
        need: serde_json::to_value(&need)?,
        fleet,
        layers,
        configurations: configurations.map(|d| serde_json::to_value(d.result)).transpose()?,
        configuration_scene,
        frontier,
    };
    Ok(Made { page, said })
}

/// What the page shows beside its lead, from a reading of its own: the layers' report, or
/// the configurations decided side by side (listing at most `top` keys, all if 0, and
/// never more than [`MOST_KEYS`]). Their notes are added to `said`.
fn beside(
    ask: &PageAsk,
    source: &Source,
    reads: &Reads,
    top: usize,
    said: &mut Vec<Said>,
) -> Result<(Option<Value>, Option<compare::Decided>)> {
    let Some(read) = reads.limits.as_ref().filter(|_| !ask.limits.is_empty()) else {
        return Ok((None, None));
    };
    let noun = if ask.side_by_side { "configurations" } else { "layers" };
    let settled = ratelimit_engine::limits::layers(&ask.limits, None, false, noun)?;
    if ask.side_by_side {
        let top = if top == 0 { MOST_KEYS } else { top.min(MOST_KEYS) };
        let limits = (&ask.limits[..], &settled.layers[..]);
        let found = compare::configurations(limits, source, read, ask.redis.as_ref(), top)?;
        said.extend(found.notes.into_iter().map(Said::Note));
        return Ok((None, Some(found.found)));
    }
    let run = Run { source, read, backend: &Backend::Memory, top, decisions: false };
    let replayed = run.layers(&ask.limits, &settled.layers)?;
    said.extend(replayed.notes.into_iter().map(Said::Note));
    Ok((Some(serde_json::to_value(replayed.report)?), None))
}

/// The limiters the scene shows: the six exact ones, and the one asked for if it is a
/// model of a system.
fn scene_algorithms(chosen: Algorithm) -> Vec<Algorithm> {
    let mut all: Vec<Algorithm> = Algorithm::ALL.into_iter().filter(|a| !a.is_system()).collect();
    if !all.contains(&chosen) {
        all.push(chosen);
    }
    all
}

/// Keeps every event, in order.
struct Collect(Vec<Event>);

impl Sink for Collect {
    type Error = anyhow::Error;

    fn event(&mut self, event: Event) -> Result<()> {
        self.0.push(event);
        Ok(())
    }
}
