//! The smallest sizes that lose none of a source's events: the bucket at each rate (per
//! key, and in a system's own terms), the whole burst–rate curve, and the rate at each
//! burst. The one call behind the program's `min-bucket` and `min-rate` and the library's.

use std::cmp::Ordering;

use anyhow::{Result, anyhow, bail};

use crate::input::asked::Names;
use crate::input::catalog::{self, Cost, Key, ReadOptions, ReadStats, Source, Timeline};
use crate::key_sizing::KeyedFinders;
use crate::limiter::Algorithm;
use crate::notes::notes;
use crate::per_key::KeptEvents;
use crate::recorder::KeyNames;
use crate::report::{CurveSegment, MinBucket, MinRate, RateKey};
use crate::sizing::curve::{Curve, ExactRate, Line};
use crate::sizing::min_bucket::Stretch;
use crate::sizing::quantile::Percent;
use crate::units::rate::{MAX_RANGE, Rate};
use crate::units::time::{Span, Timestamp};

/// What a sizing found, and the notes of its reading (a line each).
#[derive(Clone, Debug)]
pub struct Found<T> {
    /// What it found.
    pub found: T,
    /// What the reading found worth saying.
    pub notes: Vec<String>,
}

/// What `min_bucket` is asked: the rates, how many keys each lists (0 for all), the share
/// of keys a bucket must cover, and the system whose own terms it also answers in.
#[derive(Clone, Debug, Default)]
pub struct MinBucketAsk {
    /// The rates to size a bucket for: at most [`MAX_RANGE`].
    pub rates: Vec<Rate>,
    /// How many keys each rate lists; 0 lists all.
    pub top: usize,
    /// With keys, the share of keys that a bucket must leave untouched.
    pub cover: Option<Percent>,
    /// The system (nginx, HAProxy, Traefik) whose own setting is also found.
    pub system: Option<Algorithm>,
}

/// The limiters whose systems have an own lossless setting that `min_bucket` finds
/// ([`Algorithm::own_size`]), in the registry's order.
pub fn systems() -> impl Iterator<Item = Algorithm> {
    Algorithm::ALL.into_iter().filter(|a| a.own_size().is_some())
}

/// Finds, for each rate `ask` gives, the smallest token bucket that loses none of the
/// events of `source` read with `read` (per key if it has a key column). Options are named
/// in messages as `names` says: the system as `--for nginx` or `system=nginx`.
pub fn min_bucket(
    source: &Source,
    read: &ReadOptions,
    ask: &MinBucketAsk,
    names: Names,
) -> crate::error::Result<Found<Vec<MinBucket>>> {
    Ok(buckets(source, read, ask, names)?)
}

/// [`min_bucket`], its errors the internals'.
fn buckets(
    source: &Source,
    read: &ReadOptions,
    ask: &MinBucketAsk,
    names: Names,
) -> Result<Found<Vec<MinBucket>>> {
    let rates = &ask.rates;
    if rates.len() > MAX_RANGE {
        bail!("{} rates are asked; at most {MAX_RANGE} are allowed", rates.len());
    }
    let keyed = read.key_column.is_some();
    if ask.cover.is_some() && !keyed {
        bail!("a cover is a share of keys: give a key column");
    }
    if let Some(system) = ask.system {
        let asked = system_asked(system, names);
        let Some(own) = system.own_size() else {
            let them: Vec<&str> = systems().map(Algorithm::name).collect();
            bail!("{asked}: only {} are sized in their own terms", them.join(", "));
        };
        if let Some(why) = rates.iter().find_map(|&rate| (own.refuses)(rate)) {
            bail!("{asked}: {why}");
        }
        if !own.weighs && read.cost != Cost::default() {
            let (name, cost) = (system.name(), names.of("cost"));
            bail!("{asked}: {name} counts requests, not what they cost: leave out {cost}");
        }
    }
    let fresh = || {
        let finders = KeyedFinders::new(rates, keyed, ask.top, read.threads);
        match ask.system {
            Some(system) => finders.for_system(system, &read.key_notes),
            None => finders,
        }
    };
    let (per_rate, stats) = catalog::read_events(source, read, fresh)?;
    let names = KeyNames::of(read.key_column.as_deref(), &stats);
    let found = per_rate.results(names, ask.cover);
    Ok(Found { found, notes: notes(source, read, &stats) })
}

/// How a system was asked for, as `names` names options: `--for nginx`, `system=nginx`.
pub(crate) fn system_asked(system: Algorithm, names: Names) -> String {
    match names {
        Names::Flags => format!("--for {}", system.name()),
        Names::Keywords => format!("system={}", system.name()),
    }
}

/// The whole burst–rate curve of a source's events, with the events it was drawn from.
pub struct Drawn {
    /// The curve.
    pub curve: Curve,
    /// Its pieces, as the report gives them.
    pub segments: Vec<CurveSegment>,
    /// The events, in time order.
    pub events: Timeline,
}

/// Draws the whole burst–rate curve of the events of `source` read with `read`.
pub fn curve(source: &Source, read: &ReadOptions) -> crate::error::Result<Found<Drawn>> {
    Ok(draw(source, read)?)
}

/// [`curve`], its errors the internals'.
fn draw(source: &Source, read: &ReadOptions) -> Result<Found<Drawn>> {
    let (events, stats) = read_timeline(source, read)?;
    let curve = curve_of(&events)?;
    let segments = segments(&curve, |line| Some(Curve::stretch(line, events.times())))?;
    Ok(Found { found: Drawn { curve, segments, events }, notes: notes(source, read, &stats) })
}

/// Finds, for each of `bursts`, the smallest rate at which a bucket that holds it loses
/// none of the events of `source` read with `read`.
pub fn min_rate(
    source: &Source,
    read: &ReadOptions,
    bursts: &[u64],
) -> crate::error::Result<Found<Vec<MinRate>>> {
    Ok(rates(source, read, bursts)?)
}

/// [`min_rate`], its errors the internals'.
fn rates(source: &Source, read: &ReadOptions, bursts: &[u64]) -> Result<Found<Vec<MinRate>>> {
    if read.key_column.is_some() {
        return keyed_rates(source, read, bursts);
    }
    let (events, stats) = read_timeline(source, read)?;
    let curve = curve_of(&events)?;
    let found = bursts.iter().map(|&burst| min_rate_of(&curve, burst, events.times())).collect();
    Ok(Found { found, notes: notes(source, read, &stats) })
}

/// The least lossless rate of the events whose curve is `curve` and times `times`, for a
/// bucket of `burst`.
fn min_rate_of(curve: &Curve, burst: u64, times: &[Timestamp]) -> MinRate {
    let stretch = |line: &Line| Curve::stretch(line, times);
    let (rate, span) = match curve.min_rate(burst) {
        Ok((rate, line)) => (Some(rate), line.as_ref().map(stretch)),
        Err(line) => (None, Some(stretch(&line))),
    };
    MinRate { burst, rate, per_hour: rate.map(|r| r.per_hour()), span, worst_key: None }
}

/// Per key: each key has a bucket of its own, so the least rate at which every key's loses
/// nothing is the highest any key needs. Each key's events are kept as read (12 bytes an
/// event, as a keyed replay keeps them), grouped, and sized one key at a time.
fn keyed_rates(source: &Source, read: &ReadOptions, bursts: &[u64]) -> Result<Found<Vec<MinRate>>> {
    let (Kept(kept, _), stats) =
        catalog::read_events(source, read, || Kept::new("min-rate by key"))?;
    let (groups, events) = kept.into_grouped(stats.keys.len());
    // For each burst, the worst key so far and what it needs.
    let mut worst: Vec<Option<(usize, MinRate)>> = vec![None; bursts.len()];
    for key in 0..stats.keys.len() {
        let range = groups.range(key);
        let times = &events.times()[range.clone()];
        let curve = match events.costs() {
            None => Curve::new(times),
            Some(costs) => Curve::weighted(times, &costs[range])
                .ok_or_else(|| anyhow!("a key's costs sum past 2^63 units; no rate is found"))?,
        };
        let name = |key: usize| stats.keys.get(Key::try_from(key).unwrap_or(Key::MAX));
        for (worst, &burst) in worst.iter_mut().zip(bursts) {
            let found = min_rate_of(&curve, burst, times);
            let more =
                |(was_key, was): &(usize, MinRate)| match needs(&found).partial_cmp(&needs(was)) {
                    Some(Ordering::Equal) | None => name(key) < name(*was_key),
                    Some(order) => order == Ordering::Greater,
                };
            if worst.as_ref().is_none_or(more) {
                *worst = Some((key, found));
            }
        }
    }
    let found = (worst.into_iter().zip(bursts))
        .map(|(worst, &burst)| match worst {
            Some((key, found)) => {
                let key = stats.keys.name(Key::try_from(key).unwrap_or(Key::MAX));
                MinRate { worst_key: Some(RateKey { key }), ..found }
            }
            // No keys, no events: any rate will do.
            None => MinRate {
                burst,
                rate: Some(ExactRate::ZERO),
                per_hour: Some(0.0),
                span: None,
                worst_key: None,
            },
        })
        .collect();
    Ok(Found { found, notes: notes(source, read, &stats) })
}

/// What a key needs, in the order of need: a rate, the higher the more, below none at all
/// (more than the burst at one instant).
#[derive(PartialEq, PartialOrd)]
enum Need {
    Rate(ExactRate),
    None,
}

/// Orders needs; rates compare exactly, as fractions.
fn needs(found: &MinRate) -> Need {
    found.rate.map_or(Need::None, Need::Rate)
}

/// Events kept as read, to be grouped by key, by a sizing whose name its bound's error
/// gives.
pub(crate) struct Kept(pub(crate) KeptEvents, pub(crate) &'static str);

impl Kept {
    /// Keeps events for `who`.
    pub(crate) fn new(who: &'static str) -> Kept {
        Kept(KeptEvents::default(), who)
    }
}

impl catalog::Sink for Kept {
    type Error = anyhow::Error;

    fn event(&mut self, event: catalog::Event) -> Result<()> {
        self.0.push(event, self.1)
    }
}

/// Reads every event of `source`, in time order.
fn read_timeline(source: &Source, read: &ReadOptions) -> Result<(Timeline, ReadStats)> {
    Ok(catalog::read_events(source, read, Timeline::new)?)
}

/// Returns the burst–rate curve of a whole read's events, weighed by their costs.
pub fn curve_of(events: &Timeline) -> Result<Curve> {
    match events.costs() {
        None => Ok(Curve::new(events.times())),
        Some(costs) => Curve::weighted(events.times(), costs)
            .ok_or_else(|| anyhow!("the events' costs sum past 2^63 units; no curve is drawn")),
    }
}

/// Returns the curve's pieces as the report gives them, each with the stretch that sets
/// it, which `stretch` finds.
pub fn segments(
    curve: &Curve,
    stretch: impl Fn(&Line) -> Option<Stretch>,
) -> Result<Vec<CurveSegment>> {
    let piece = |(m, line): (usize, &Line)| {
        let Stretch { start, end, events } =
            stretch(line).ok_or_else(|| anyhow!("a piece of the curve names no stretch"))?;
        let to = curve.starts.get(m + 1).copied();
        Ok(CurveSegment {
            from: curve.starts[m],
            from_per_hour: curve.starts[m].per_hour(),
            to,
            to_per_hour: to.map(|t| t.per_hour()),
            min_bucket: curve.min_bucket(curve.starts[m].events, curve.starts[m].micros),
            events,
            span_s: Span::from_micros(line.span)
                .ok_or_else(|| anyhow!("a stretch runs backwards"))?,
            start,
            end,
        })
    };
    curve.lines.iter().enumerate().map(piece).collect()
}
