//! `ratelimit report`: one self-contained HTML page that tells a replay's whole story.
//!
//! The page is drawn, in the reader's browser, from one JSON document that this command
//! writes into it: the events over time, every limiter on the busiest stretch, the curve
//! of the smallest lossless bucket, the keys, the fleet and the layers, and how it was made.
//! The figures are the reports of `compare`, `min-bucket` and `replay --limit`, as their
//! JSON gives them.

use std::borrow::Cow;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Result, bail};
use clap::Args;
use serde::Serialize;
use serde_json::Value;

use crate::cli::args::{JobArgs, LimitArgs, RateArgs, Shape, UnlessLimits};
use crate::cli::layer;
use crate::cli::notes::notes;
use crate::engine::key_sizing::KeyedFinders;
use crate::engine::limit::Limit;
use crate::engine::lossless::curve_of;
use crate::engine::recorder::KeyNames;
use crate::input::catalog::{self, Event, ReadStats, Sink, Source, Timeline, slot};
use crate::input::csv_line::LineReader;
use crate::input::keys::wide;
use crate::limiter::Algorithm;
use crate::render::html;
use crate::render::outfile::Output;
use crate::sizing::curve::{Curve, ExactRate};
use crate::sizing::quantile::Percent;
use crate::units::rate::Rate;
use crate::units::time::{Span, Timestamp};

/// Above this many events the timeline is drawn from bins, not event by event.
pub const MAX_DRAWN_EVENTS: usize = 100_000;

/// The most events the scene draws; a busier stretch is cut short at this many.
const MAX_SCENE_EVENTS: usize = 20_000;

/// The scene's length when no --since/--until gives it, in the rate's periods: 48, the
/// 48 hours of the article's picture at 5/h.
const SCENE_PERIODS: i64 = 48;

/// The bins of the coarsest level, and how many times finer each next level is.
const FIRST_BINS: i64 = 1_000;
const FINER: i64 = 4;
const LEVELS: u32 = 5;

/// The most keys a page lists, whatever `--top` asks.
const MOST_KEYS: usize = 500;

pub(super) fn run(args: &ReportArgs) -> Result<ExitCode> {
    let began = Instant::now();
    let input = args.job.input()?;
    let output = Output::new(args.output.clone());
    input.check_output(&output)?;
    if !args.limits.is_empty() && matches!(input.source, Source::Stdin) {
        // The layers read their own key and cost columns, in a reading of their own.
        bail!(
            "report --limit reads its input twice, the second time for the layers: give a file, not stdin"
        );
    }
    // Without --rate, the first layer is the limit the page leads with.
    let (limit, algo) = match (args.size.limit(), args.limits.first()) {
        (Some(limit), _) => (limit, args.algo),
        (None, Some(first)) => {
            let shape = Shape { burst: first.burst, ..Shape::default() };
            let size = RateArgs { rate: first.rate, shape };
            (LimitArgs { size, window: None }, first.algorithm)
        }
        (None, None) => bail!("report needs --rate RATE, or --limit SPEC"),
    };
    let algorithms = scene_algorithms(algo);
    let settings = limit.side_by_side(&algorithms)?;
    let chosen = settings.iter().position(|s| s.algorithm == algo).unwrap_or(0);
    let rate = settings[chosen].rate;
    let mut job = args.job.job(input, settings, false)?;
    // The page lists at most MOST_KEYS keys, whatever --top asks, so that it stays under
    // 5 MB (each key is about 2.8 kB of it) and is made in bounded memory.
    if job.keyed() && (job.top == 0 || job.top > MOST_KEYS) {
        job.top = MOST_KEYS;
    }
    let fresh = || Collect(Vec::new());
    let (Collect(events), stats) = catalog::read_events(&job.input.source, &job.input.read, fresh)?;
    notes(&job.input, &stats);
    if events.is_empty() {
        bail!("{} has no events to report on", job.input.source.name());
    }
    let empty = &job.input.read.empty_key;
    let recorder =
        job.backend.decide(&job.settings, job.keyed(), (events.iter().copied(), empty))?;
    let lanes = job.reports(&recorder, &stats).lanes;
    let names = KeyNames::of(job.key.as_deref(), &stats);
    let keys = stats.keys.names().count();
    if job.keyed() && keys > job.top && (args.job.keys.top == 0 || args.job.keys.top > job.top) {
        let _ = writeln!(
            crate::cli::diagnostics::diagnostics(),
            "ratelimit: report: the page lists the {} keys with the most drops, of {keys}: at \
             most {MOST_KEYS}, to stay under 5 MB",
            job.top
        );
    }

    // The smallest lossless bucket, per key with --key, and the cover.
    let mut finders = KeyedFinders::new(&[rate], job.keyed(), job.top, job.input.read.threads);
    for &event in &events {
        finders.event(event)?;
    }
    let need = finders.results(names, Some(args.cover));

    let fleet = match args.job.fleet.servers {
        Some(_) => {
            let one = vec![job.settings[chosen]];
            let modes = args.job.job(args.job.input()?, one, true)?;
            let events = (events.iter().copied(), &job.input.read.empty_key);
            let recorder = modes.backend.decide(&modes.settings, modes.keyed(), events)?;
            Some(serde_json::to_value(modes.reports(&recorder, &stats).lanes)?)
        }
        None => None,
    };
    let layers = match args.limits.is_empty() || args.side_by_side {
        true => None,
        false => Some(serde_json::to_value(layer::replay(
            &args.limits,
            &args.job.input,
            None,
            job.top,
        )?)?),
    };
    // With --side-by-side, each --limit is a whole configuration, decided on its own.
    let configurations = match args.side_by_side {
        true => {
            let (configured, input) = layer::configured(&args.limits, &args.job)?;
            // The page lists at most MOST_KEYS keys, as it does elsewhere.
            let asked = (input, if job.top == 0 { MOST_KEYS } else { job.top.min(MOST_KEYS) });
            Some(layer::decide(&args.limits, &configured, asked, &args.job)?)
        }
        false => None,
    };

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
    let given = args.job.input.since.is_some() || args.job.input.until.is_some();
    let scene_ms = rate.period().as_micros() / 1000 * SCENE_PERIODS;
    // Per key, the busiest demand may be many keys' calm: the scene is where yours drops most.
    let busiest_start = match job.keyed() {
        true => Scene::most_dropped(&events, trace, (lanes.len(), chosen), scene_ms),
        false => None,
    }
    .or(lanes[chosen].demand_busiest_window.start);
    let scene = Scene::of(&events, trace, lanes.len(), (busiest_start, scene_ms), given);
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
    let values = match (events.len() <= MAX_DRAWN_EVENTS, &job.input.source) {
        (true, source) => values(source, &job.input.read, events.len()),
        (false, _) => None,
    };
    let timeline = TimelineData::of(&events, &stats, values);
    let page = Page {
        meta: Meta {
            command: command_line(),
            input: job.input.source.name(),
            bytes: match &job.input.source {
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
    };
    output.write(|out| html::write_page(out, &page))?;
    Ok(ExitCode::SUCCESS)
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

/// The command line, as typed (each argument quoted if it needs it).
fn command_line() -> String {
    let quote = |arg: String| {
        let plain = arg.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,%+@".contains(c));
        if plain && !arg.is_empty() { arg } else { format!("'{}'", arg.replace('\'', "'\\''")) }
    };
    let mut args = std::env::args().map(quote).collect::<Vec<_>>();
    if let Some(first) = args.first_mut() {
        *first = "ratelimit".into();
    }
    args.join(" ")
}

/// The page's data: what the script draws, and the reports it quotes.
#[derive(Serialize)]
pub struct Page {
    meta: Meta,
    timeline: TimelineData,
    scene: Scene,
    curve: Vec<CurvePoint>,
    /// `compare`'s report: one limiter a lane, the one asked for at `meta.chosen`.
    lanes: Value,
    /// `min-bucket`'s report at the rate, with the cover with --key.
    need: Value,
    /// With --servers: `compare`'s report of the share modes side by side.
    fleet: Option<Value>,
    /// With --limit: `replay --limit`'s report.
    layers: Option<Value>,
    /// With --side-by-side: `compare --limit`'s report.
    configurations: Option<Value>,
    /// With --side-by-side: each configuration's decisions on the scene's events.
    configuration_scene: Option<Vec<String>>,
}

/// How the page was made.
#[derive(Serialize)]
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

/// The events over time: each one (up to [`MAX_DRAWN_EVENTS`]), and bins at every level.
#[derive(Serialize)]
struct TimelineData {
    /// The first event's time, ms since the epoch; the others are ms after it.
    start: i64,
    end: i64,
    /// Each event, if there are few enough to draw.
    events: Option<Drawn>,
    /// Levels of bins, coarsest first: each bin `width` ms, and the bins that hold events
    /// as pairs (index after the last pair's, count).
    levels: Vec<Level>,
}

#[derive(Serialize)]
struct Drawn {
    /// ms after `start`.
    t: Vec<i64>,
    /// Key numbers, with the names in `keys`; none without --key.
    k: Option<Vec<u32>>,
    keys: Vec<String>,
    /// What each event's row says of it beyond time and key: its magnitude, or its cost.
    v: Vec<String>,
    /// What `v` is.
    v_name: String,
}

#[derive(Serialize)]
struct Level {
    width: i64,
    bins: Vec<i64>,
}

/// The magnitudes of a catalog's events, read again from its rows (a file or the sample,
/// few enough to draw), with the name of the column; `None` where there is none.
fn values(
    source: &Source,
    read: &catalog::ReadOptions,
    count: usize,
) -> Option<(String, Vec<String>)> {
    if matches!(source, Source::Stdin) {
        return None;
    }
    let (rows, _) = catalog::read_rows(source, read).ok()?;
    let mut csv = LineReader::with_delimiter(read.delimiter());
    let header = csv.record(rows.header())?;
    let column = header.iter().position(|h| h.eq_ignore_ascii_case(b"mag"))?;
    let mut out = Vec::with_capacity(count);
    for (_, row) in rows.iter() {
        csv.read(row);
        let field = csv.field(column).map(String::from_utf8_lossy);
        out.push(field.map(Cow::into_owned).unwrap_or_default());
    }
    (out.len() == count).then(|| ("magnitude".to_owned(), out))
}

impl TimelineData {
    fn of(
        events: &[Event],
        stats: &ReadStats,
        values: Option<(String, Vec<String>)>,
    ) -> TimelineData {
        let ms = |e: &Event| e.time.as_micros().div_euclid(1000);
        let (start, end) = (ms(&events[0]), ms(&events[events.len() - 1]));
        let span = (end - start).max(1) + 1;
        let mut levels = Vec::new();
        for level in 0..LEVELS {
            let width = (span / (FIRST_BINS * FINER.pow(level))).max(1);
            let mut bins = Vec::new();
            let (mut last, mut at, mut count) = (0, -1, 0);
            for e in events {
                let bin = (ms(e) - start) / width;
                if bin != at && count > 0 {
                    bins.extend([at - last, count]);
                    last = at;
                    count = 0;
                }
                at = bin;
                count += 1;
            }
            bins.extend([at - last, count]);
            levels.push(Level { width, bins });
            if width == 1 {
                break;
            }
        }
        let drawn = (events.len() <= MAX_DRAWN_EVENTS).then(|| {
            let keyed = !stats.keys.is_empty();
            let (v_name, v) = values.unwrap_or_else(|| {
                ("cost".to_owned(), events.iter().map(|e| e.cost.to_string()).collect())
            });
            Drawn {
                t: events.iter().map(|e| ms(e) - start).collect(),
                // Key numbers are u32 (see `input::keys::slot`).
                k: keyed.then(|| {
                    events.iter().map(|e| u32::try_from(slot(e.key)).unwrap_or(u32::MAX)).collect()
                }),
                keys: stats.keys.names().collect(),
                v,
                v_name,
            }
        });
        TimelineData { start, end, events: drawn, levels }
    }
}

/// Every limiter on the busiest stretch: its events, and each lane's decision on each.
#[derive(Serialize)]
struct Scene {
    /// ms since the epoch.
    start: i64,
    end: i64,
    /// Whether the stretch was cut short at [`MAX_SCENE_EVENTS`].
    cut: bool,
    /// Whether --since/--until gave it.
    given: bool,
    /// ms after `start`.
    t: Vec<i64>,
    /// For each lane, a character an event: `1` passed, `0` dropped.
    decisions: Vec<String>,
}

impl Scene {
    /// The start of the `length` ms in which lane `chosen` of `lanes` drops the most of
    /// `events` (decided as `trace` says), the earliest of those; `None` if it drops none.
    fn most_dropped(
        events: &[Event],
        trace: &[bool],
        (lanes, chosen): (usize, usize),
        length: i64,
    ) -> Option<Timestamp> {
        let dropped = |i: usize| !trace.get(i * lanes + chosen).copied().unwrap_or(true);
        let ms = |i: usize| events[i].time.as_micros().div_euclid(1000);
        let (mut best, mut count, mut from) = (None::<(usize, usize)>, 0, 0);
        for to in 0..events.len() {
            count += usize::from(dropped(to));
            while ms(to) - ms(from) >= length.max(1) {
                count -= usize::from(dropped(from));
                from += 1;
            }
            if count > best.map_or(0, |(most, _)| most) {
                best = Some((count, from));
            }
        }
        // The window starts at its first event, which a drop may follow.
        best.map(|(_, from)| events[from].time)
    }

    /// The scene of `events`, decided as `trace` says (`lanes` decisions an event): the
    /// `length` ms from the start of the busiest window, or all of them if `given`.
    fn of(
        events: &[Event],
        trace: &[bool],
        lanes: usize,
        (busiest, length): (Option<Timestamp>, i64),
        given: bool,
    ) -> Scene {
        let ms = |e: &Event| e.time.as_micros().div_euclid(1000);
        let (first, last) = (ms(&events[0]), ms(&events[events.len() - 1]));
        let (start, end) = match (given, busiest) {
            (false, Some(at)) => {
                let at = at.as_micros().div_euclid(1000);
                (at, at.saturating_add(length.max(1)))
            }
            _ => (first, last + 1),
        };
        let from = events.partition_point(|e| ms(e) < start);
        let mut to = events.partition_point(|e| ms(e) < end);
        let cut = to - from > MAX_SCENE_EVENTS;
        if cut {
            to = from + MAX_SCENE_EVENTS;
        }
        let end = if cut { ms(&events[to - 1]) + 1 } else { end };
        let decisions =
            (0..lanes)
                .map(|n| {
                    (from..to)
                        .map(|i| {
                            if trace.get(i * lanes + n).copied().unwrap_or(false) {
                                '1'
                            } else {
                                '0'
                            }
                        })
                        .collect()
                })
                .collect();
        Scene {
            start,
            end,
            cut,
            given,
            t: events[from..to].iter().map(|e| ms(e) - start).collect(),
            decisions,
        }
    }
}

/// One point of the curve: a rate, per hour, and the smallest lossless bucket at it.
#[derive(Serialize)]
struct CurvePoint {
    rate: String,
    per_hour: f64,
    min_bucket: u64,
}

/// The smallest lossless bucket on `curve` at 49 rates from 1/64 to 64 times `rate`, on a
/// log scale.
fn curve_points(curve: &Curve, rate: Rate) -> Vec<CurvePoint> {
    let (n, p) = (rate.n64(), rate.period().as_micros());
    let mut points = Vec::new();
    for step in -24i32..=24 {
        // N per P at 2^(step/4): the period scaled, counts kept whole.
        let scale = 2f64.powf(f64::from(step) / 4.0);
        #[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]
        // The user's period, scaled: a float cast to i64 saturates, and a period past what a
        // `Span` and a `Rate` hold is refused below and left out, so no value overflows.
        let micros = ((p as f64 / scale).round() as i64).max(1);
        let Some(at) =
            Span::from_micros(micros).and_then(|span| Rate::new(rate.count(), span).ok())
        else {
            continue;
        };
        points.push(CurvePoint {
            rate: at.to_string(),
            per_hour: ExactRate::new(n, micros).per_hour(),
            min_bucket: curve.min_bucket(n, micros),
        });
    }
    points
}

/// `ratelimit report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    #[command(flatten)]
    pub job: JobArgs,

    /// The limiter you run [default: gcra]: its figures lead, beside the six exact ones.
    #[arg(short = 'a', long, value_parser = crate::cli::algorithm_parser(), value_name = "ALGO", default_value_t = Algorithm::default())]
    pub algo: Algorithm,

    #[command(flatten)]
    pub size: UnlessLimits,

    /// Layers of several limits at once, as replay takes them: the page shows each
    /// layer's refusals. Without --rate, the page leads with the first layer's limiter,
    /// rate and burst.
    #[arg(long = "limit", id = "limits", value_name = "SPEC")]
    pub limits: Vec<Limit>,

    /// Each --limit is a whole configuration, not a layer: the page draws them side by
    /// side over the same events, as compare --limit reports them, and what changes.
    #[arg(long, requires = "limits")]
    pub side_by_side: bool,

    /// With --key: the share of keys the page says a burst keeps whole.
    #[arg(long, value_name = "PERCENT", default_value = "90%")]
    pub cover: Percent,

    /// Where to write the page: one HTML file that opens offline; - is stdout.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: PathBuf,
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
