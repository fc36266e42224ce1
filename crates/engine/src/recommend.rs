//! `recommend`: for each rate on a grid, the least burst that leaves a share of the keys
//! untouched and what it costs the rest; one point recommended, and why.
//!
//! A key is never throttled by a token bucket of burst b at rate r exactly when its own
//! smallest lossless bucket at r is at most b. The share of keys untouched is therefore an
//! exact (nearest-rank) quantile of the keys' smallest buckets, which are counted, not
//! sketched.

use std::num::NonZeroU64;

use anyhow::{Result, bail};

use crate::frontier::{Grouped, Weigh};
use crate::input::asked::Names;
use crate::input::catalog::{self, Cost, Event, KeyTable, ReadOptions, Source};
use crate::key_sizing::MAX_KEY_RATES;
use crate::key_summaries::{Demand, Needs, Refusals};
use crate::limiter::export::{BurstRule, ExportAsk};
use crate::limiter::{Algorithm, Export, OwnSize};
use crate::lossless::{Found, Kept, system_asked};
use crate::notes::notes;
use crate::per_key::{KeptEvents, fold_keys};
pub use crate::recommendation::{
    Contour, ContourPoint, CostLimits, Point, Prefer, Recommendation, Recommended, RefusedKey,
    Setting, SystemPoint, Together, WindowLimit,
};
use crate::sizing::curve::ExactRate;
use crate::sizing::quantile::{Histogram, Percent, Quantiles};
use crate::units::rate::Rate;
use crate::units::time::{MICROS_PER_SEC, Span};

/// The most rates a frontier is found at.
pub const MAX_GRID: usize = 1000;

/// The rates a frontier spreads over when none is given.
pub const SPREAD: usize = 20;

/// What `recommend` is asked.
#[derive(Clone, Debug)]
pub struct RecommendAsk {
    /// The rates of the frontier; none: [`SPREAD`] spread over the keys' demand.
    pub rates: Vec<Rate>,
    /// The share of keys that must lose nothing.
    pub untouched: Percent,
    /// Which point of the frontier to recommend.
    pub prefer: Prefer,
    /// With window limits: the window whose busiest counts are given.
    pub window: Option<Span>,
    /// A system to write the recommended point for, in its own terms.
    pub system: Option<Algorithm>,
}

impl Default for RecommendAsk {
    fn default() -> RecommendAsk {
        RecommendAsk {
            rates: Vec::new(),
            // 99.9%: parts per million, in range.
            untouched: Percent::from_ppm(999_000).unwrap_or(Percent::ALL),
            prefer: Prefer::default(),
            window: None,
            system: None,
        }
    }
}

/// Finds the frontier of the events of `source`, read with `read` (which must name a key
/// column), and recommends one point of it, as `ask` says. Options are named in messages
/// as `names` says: the system as `--for nginx` or `system=nginx`.
pub fn recommend(
    source: &Source,
    read: &ReadOptions,
    ask: &RecommendAsk,
    names: Names,
) -> crate::error::Result<Found<Recommendation>> {
    Ok(find(source, read, ask, names)?)
}

/// [`recommend`], its errors the internals'.
fn find(
    source: &Source,
    read: &ReadOptions,
    ask: &RecommendAsk,
    names: Names,
) -> Result<Found<Recommendation>> {
    let asked = |system: Algorithm| system_asked(system, names);
    let Some(column) = read.key_column.clone() else {
        bail!(
            "recommend leaves a share of keys untouched: give a key column ({})",
            names.of("key")
        );
    };
    if ask.rates.len() > MAX_GRID {
        bail!("{} rates are asked; recommend finds at most {MAX_GRID}", ask.rates.len());
    }
    check_window(ask, names)?;
    let own = ask.system.map(|system| Own::of(system, &asked(system))).transpose()?;
    if let Some(own) = &own
        && let Some(why) = ask.rates.iter().find_map(|&rate| (own.size.refuses)(rate))
    {
        bail!("{}: {why}", asked(own.system));
    }
    let (Kept(kept, _), stats) = catalog::read_events(source, read, || Kept::new("recommend"))?;
    let keys = stats.keys.len();
    if keys == 0 {
        bail!("no events: nothing to recommend a limit for");
    }
    let (groups, events) = kept.into_grouped(keys);
    let grouped =
        Grouped { groups: &groups, events: &events, table: &stats.keys, threads: read.threads };
    let share = ask.untouched;
    let writable = |rate: Rate| own.as_ref().is_none_or(|own| (own.size.refuses)(rate).is_none());
    let rates = match ask.rates.is_empty() {
        false => ask.rates.clone(),
        true => spread(&grouped.demand(Weigh::Requests), share, &writable),
    };
    if rates.is_empty() {
        bail!("no round rate between the keys' least and busiest demand can be written");
    }
    bound(keys, rates.len())?;
    let (summary, needs) = grouped.needs_summary(&rates, Weigh::Requests, ask.window);
    let bursts = bursts(&summary, share);
    let refusals = grouped.refusals(&rates, &bursts, &needs, Weigh::Requests);
    let mut found = answer(ask, column, &rates, &summary, &refusals);
    if read.cost != Cost::default() {
        let point = &found.recommended.point;
        let by_count = needs_at(&needs, &rates, point.rate);
        found.cost = Some(cost_limits(&grouped, &read.cost, ask, (point, by_count))?);
    }
    if let Some(own) = &own {
        found.system =
            Some(own.point(&grouped, &found.column, &needs, &rates, &found.recommended)?);
    }
    Ok(Found { found, notes: notes(source, read, &stats) })
}

/// The least burst at each rate that leaves `share` of the keys untouched: the
/// nearest-rank quantile of their needs, counted in `needs`.
pub fn bursts(needs: &Needs, share: Percent) -> Vec<u64> {
    needs.per_rate.iter().map(|counted| counted.quantile(share).unwrap_or(1)).collect()
}

/// `recommend`'s answer, without cost or system, from the keys' needs at `rates` and what
/// the bursts at the share refuse, summed over every part: the frontier, its point
/// recommended as `ask` prefers, and with a window its limit; keyed by `column`. The rates
/// were given if `ask` gives any, else spread.
pub fn answer(
    ask: &RecommendAsk,
    column: String,
    rates: &[Rate],
    needs: &Needs,
    refusals: &Refusals,
) -> Recommendation {
    let share = ask.untouched;
    let frontier = frontier(rates, needs, share, refusals, Weigh::Requests);
    let total = needs.per_rate.first().map(Histogram::total).unwrap_or_default();
    let keys = usize::try_from(total.count).unwrap_or(usize::MAX);
    let recommended = choose(&frontier, ask.prefer, share, keys);
    Recommendation {
        column,
        keys,
        events: total.weight,
        untouched: share,
        rates: if ask.rates.is_empty() { "spread" } else { "given" },
        frontier,
        recommended,
        window: ask.window.map(|length| window(length, &needs.window, share)),
        cost: None,
        system: None,
    }
}

/// Refuses a window of no length: no event falls in one, and no limit counts over one.
pub fn check_window(ask: &RecommendAsk, names: Names) -> Result<()> {
    match ask.window {
        Some(window) if window.is_zero() => {
            bail!("{}: a window is longer than 0", names.with("window", "0s"))
        }
        _ => Ok(()),
    }
}

/// Refuses a frontier past [`MAX_KEY_RATES`] key-rate pairs.
fn bound(keys: usize, rates: usize) -> Result<()> {
    if keys.saturating_mul(rates) > MAX_KEY_RATES {
        bail!(
            "{rates} rates for each of {keys} keys are more than the {MAX_KEY_RATES} key-rate \
             pairs recommend sizes; give fewer rates"
        );
    }
    Ok(())
}

/// Returns the rates of a frontier that none was given for: up to [`SPREAD`] round rates
/// (1, 2, 3 or 5 times a power of ten, a second, a minute, an hour or a day) that a system
/// can write (`writable`), from the mean rate over the whole input of the key at the share
/// (ranked by events) to the busiest minute of the key at the share (ranked by it): the
/// demand of the keys to be left untouched, not of those beyond them.
pub fn spread(demand: &Demand, share: Percent, writable: &dyn Fn(Rate) -> bool) -> Vec<Rate> {
    let at_share = demand.units.quantile(share).unwrap_or(1).max(1);
    let span = demand.span.map_or(0, |(first, last)| last.saturating_sub(first));
    let span = span.max(MICROS_PER_SEC);
    let busiest = demand.busiest_minute.quantile(share).unwrap_or(1).max(1);
    let ladder: Vec<Rate> = round_rates().into_iter().filter(|&rate| writable(rate)).collect();
    if ladder.is_empty() {
        return ladder;
    }
    // Units are counts of events or their costs; past i64, the most an i64 holds.
    let per =
        |units: u64, micros: i64| ExactRate::new(i64::try_from(units).unwrap_or(i64::MAX), micros);
    let (least, most) = (per(at_share, span), per(busiest, Span::MINUTE.as_micros()));
    let low = ladder.iter().rposition(|&r| exact(r) <= least).unwrap_or(0);
    let high = (ladder.iter().position(|&r| exact(r) > most)).unwrap_or(ladder.len() - 1).max(low);
    let steps = (high - low).min(SPREAD - 1);
    let mut picked: Vec<usize> =
        (0..=steps).map(|j| low + (high - low) * j / steps.max(1)).collect();
    picked.dedup();
    picked.into_iter().map(|n| ladder[n]).collect()
}

/// Round rates, the slowest first: 1, 2, 3 and 5 times a power of ten per day, hour,
/// minute or second, each period for the rates below one per the next (1/d to 20/d, 1/h
/// to 50/h, 1/m to 30/m), and per second from 1/s up.
fn round_rates() -> Vec<Rate> {
    let round = |below: u64| {
        (0..7u32)
            .flat_map(|power| [1, 2, 3, 5].map(|times| times * 10u64.pow(power)))
            .filter(move |&n| n < below)
    };
    let periods = [(86_400, 24), (3600, 60), (60, 60), (1, u64::MAX)];
    let mut rates = Vec::new();
    for (seconds, below) in periods {
        let Some(period) = Span::from_micros(seconds * MICROS_PER_SEC) else { continue };
        rates.extend(round(below).filter_map(|n| Rate::new(n, period).ok()));
    }
    rates
}

/// The frontier at each of `rates`: the least burst at the share, from the keys' needs
/// counted in `needs`, and what it refuses of the keys over the line (`refusals`), weighed
/// as `weigh` says.
fn frontier(
    rates: &[Rate],
    needs: &Needs,
    share: Percent,
    refusals: &Refusals,
    weigh: Weigh,
) -> Vec<Point> {
    let bursts = bursts(needs, share);
    (rates.iter().zip(&needs.per_rate).zip(bursts).zip(&refusals.per_rate))
        .map(|(((&rate, counted), burst), refusal)| {
            let untouched = counted.at_most(burst);
            Point {
                rate,
                per_hour: per_hour(rate),
                burst,
                untouched_keys: usize::try_from(untouched.count).unwrap_or(usize::MAX),
                untouched_events: untouched.weight,
                touched_keys: usize::try_from(refusal.touched).unwrap_or(usize::MAX),
                refused: refusal.events,
                refused_units: (weigh == Weigh::Cost)
                    .then(|| u64::try_from(refusal.units).unwrap_or(u64::MAX)),
                top_refused: refusal.top.iter().map(RefusedKey::from).collect(),
            }
        })
        .collect()
}

/// A rate per hour, for reading.
fn per_hour(rate: Rate) -> f64 {
    exact(rate).per_hour()
}

/// A rate as events per µs, exactly: rates compare as the fractions they are.
fn exact(rate: Rate) -> ExactRate {
    ExactRate::new(rate.n64(), rate.period().as_micros())
}

/// Recommends a point of `frontier` (one point a rate, at least one) as `prefer` says:
/// ties go to the fewest refused, then the smaller burst, then the lower rate.
fn choose(frontier: &[Point], prefer: Prefer, share: Percent, keys: usize) -> Recommended {
    let by_rate = |a: &Point, b: &Point| exact(a.rate).cmp(&exact(b.rate));
    let mut order: Vec<&Point> = frontier.iter().collect();
    order.sort_by(|a, b| {
        let fewest = a.refused.cmp(&b.refused);
        let smaller = a.burst.cmp(&b.burst);
        match prefer {
            Prefer::FewestRefused => fewest.then(smaller).then(by_rate(a, b)),
            Prefer::SmallerBurst => smaller.then(fewest).then(by_rate(a, b)),
            Prefer::LowerRate => by_rate(a, b).then(fewest).then(smaller),
        }
    });
    let point = order[0].clone();
    let of = match prefer {
        Prefer::FewestRefused => format!("the fewest events refused ({})", point.refused),
        Prefer::SmallerBurst => "the smallest burst".to_owned(),
        Prefer::LowerRate => "the lowest rate".to_owned(),
    };
    let why = format!(
        "{} with burst {}: {of} of the {} rates, each with the least burst that leaves at \
         least {share} of the {keys} keys untouched; it leaves {} untouched, and refuses \
         {} events of the {} it touches",
        point.rate,
        point.burst,
        frontier.len(),
        point.untouched_keys,
        point.refused,
        point.touched_keys,
    );
    Recommended { point, prefer, why }
}

/// The keys' busiest counts in any window of `length`, counted in `busiest`, and the
/// limit at `share`.
fn window(length: Span, busiest: &Histogram, share: Percent) -> WindowLimit {
    let limit = busiest.quantile(share).unwrap_or(0);
    let none = Quantiles { p50: 0, p90: 0, p99: 0, p99_9: 0, max: 0 };
    WindowLimit {
        window: length.compact(),
        busiest: busiest.quantiles().unwrap_or(none),
        limit,
        untouched_keys: usize::try_from(busiest.at_most(limit).count).unwrap_or(usize::MAX),
    }
}

/// Every key's need at `rate`, one of `rates`, from `needs` laid out key by key (key k's
/// at rate n at `k · rates.len() + n`).
fn needs_at(needs: &[u64], rates: &[Rate], rate: Rate) -> Vec<u64> {
    let n = rates.iter().position(|&r| r == rate).unwrap_or(0);
    needs.iter().skip(n).step_by(rates.len().max(1)).copied().collect()
}

/// The frontier of what the events cost, its recommended point, and both limits
/// together: the requests' at `requests`, recommended, with each key's need there, and
/// the units'.
fn cost_limits(
    grouped: &Grouped<'_>,
    cost: &Cost,
    ask: &RecommendAsk,
    requests: (&Point, Vec<u64>),
) -> Result<CostLimits> {
    let share = ask.untouched;
    let rates = spread(&grouped.demand(Weigh::Cost), share, &|_| true);
    bound(grouped.keys(), rates.len())?;
    let (summary, needs) = grouped.needs_summary(&rates, Weigh::Cost, None);
    let refusals = grouped.refusals(&rates, &bursts(&summary, share), &needs, Weigh::Cost);
    let frontier = frontier(&rates, &summary, share, &refusals, Weigh::Cost);
    let recommended = choose(&frontier, ask.prefer, share, grouped.keys());
    let by_cost = needs_at(&needs, &rates, recommended.point.rate);
    let together = together(grouped, share, requests, (&recommended.point, by_cost));
    let cost = match cost {
        Cost::Column(column) => column.clone(),
        Cost::Each(units) => format!("{units} each"),
    };
    Ok(CostLimits { cost, frontier, recommended, together })
}

/// Both limits at their rates (each a point, with every key's need there), their bursts
/// raised together: to the k-th smallest need of each, for the least k at which at least
/// `share` of the keys are untouched by both. The keys untouched by both only grow with k,
/// so a binary search finds it.
fn together(
    grouped: &Grouped<'_>,
    share: Percent,
    (requests, by_count): (&Point, Vec<u64>),
    (units, by_cost): (&Point, Vec<u64>),
) -> Together {
    let keys = by_count.len();
    let sorted = |needs: &[u64]| {
        let mut sorted = needs.to_vec();
        sorted.sort_unstable();
        sorted
    };
    let (count_sorted, cost_sorted) = (sorted(&by_count), sorted(&by_cost));
    let bursts = |k: usize| (count_sorted[k - 1], cost_sorted[k - 1]);
    let untouched = |(b1, b2): (u64, u64)| {
        (0..keys).filter(|&key| by_count[key] <= b1 && by_cost[key] <= b2).count()
    };
    let want = share.rank(keys).max(1);
    let (mut low, mut high) = (want, keys);
    while low < high {
        let mid = low + (high - low) / 2;
        if untouched(bursts(mid)) >= want { high = mid } else { low = mid + 1 }
    }
    let (b1, b2) = bursts(low);
    let touched: Vec<usize> =
        (0..keys).filter(|&key| by_count[key] > b1 || by_cost[key] > b2).collect();
    let nonzero = |b: u64| NonZeroU64::new(b).unwrap_or(NonZeroU64::MIN);
    let refused =
        grouped.refused_by_both(&touched, (requests.rate, nonzero(b1)), (units.rate, nonzero(b2)));
    Together {
        requests: Setting { rate: requests.rate, burst: b1 },
        units: Setting { rate: units.rate, burst: b2 },
        untouched_keys: keys - touched.len(),
        refused: refused.iter().map(|(_, r)| r.events).sum(),
    }
}

/// The systems `--for` writes a recommended point for, in the registry's order.
pub fn systems() -> impl Iterator<Item = Algorithm> {
    Algorithm::ALL.into_iter().filter(|&a| Own::found(a).is_some())
}

/// A system that `--for` writes a recommended point for: one with a bucket's burst, whose
/// own lossless setting the registry finds, and whose configuration it writes.
struct Own {
    system: Algorithm,
    size: OwnSize,
    export: Export,
}

impl Own {
    /// The system's own size and configuration, if it writes a burst and its setting is
    /// found.
    fn found(system: Algorithm) -> Option<(OwnSize, Export)> {
        let export = system.export().filter(|e| e.burst != BurstRule::Without)?;
        Some((system.own_size()?, export))
    }

    /// The system, if it writes a burst and its setting is found; `asked` is how it was
    /// asked for.
    fn of(system: Algorithm, asked: &str) -> Result<Own> {
        let Some((size, export)) = Own::found(system) else {
            let them: Vec<&str> = systems().map(Algorithm::name).collect();
            let (last, rest) = them.split_last().map_or(("", &[][..]), |(l, r)| (*l, r));
            bail!(
                "{asked}: recommend writes a bucket's burst, as {} and {last} take it",
                rest.join(", ")
            );
        };
        Ok(Own { system, size, export })
    }

    /// The recommended point in the system's terms: the least setting with which every
    /// key that the point leaves untouched loses nothing in the system's arithmetic.
    fn point(
        &self,
        grouped: &Grouped<'_>,
        column: &str,
        needs: &[u64],
        rates: &[Rate],
        recommended: &Recommended,
    ) -> Result<SystemPoint> {
        let Recommended { point, .. } = recommended;
        let needs = needs_at(needs, rates, point.rate);
        // A bucket passes what it admits at once: a system that can (nginx's nodelay) is
        // written so, else it would delay, not refuse, what a bucket passes.
        let params = (self.system.params(&[("nodelay", None)]))
            .unwrap_or_else(|_| self.system.default_params());
        // Each key's own setting, a run of keys a thread, in key order.
        let each = |found: &mut Vec<u64>, key: usize| {
            let mut finder = (self.size.finder)(point.rate, &params);
            grouped.events_of(key).for_each(|event| finder.push(event));
            found.push(finder.result().0);
        };
        let own = fold_keys(grouped.keys(), grouped.threads, Vec::new, each, |all, part| {
            all.extend(part);
        });
        let spared = (0..own.len()).filter(|&k| needs[k] <= point.burst);
        let value = spared.map(|k| own[k]).max().unwrap_or(0);
        let key = (self.export.key)(column).ok();
        let ask =
            ExportAsk { rate: point.rate, burst: Some(value), key: key.as_ref(), params: &params };
        let mut config = (self.export.write)(&ask);
        if key.is_none() {
            config.insert_str(0, &format!("# keyed by {column} in the log: key it so here\n"));
        }
        Ok(SystemPoint {
            system: self.export.system.to_owned(),
            setting: self.size.setting.to_owned(),
            value,
            untouched_keys: own.iter().filter(|&&v| v <= value).count(),
            config,
        })
    }
}

/// The frontier's contours of keyed `events` (in time order, numbered by `table`, each
/// weighed by its cost): the least burst at each rate spread as `recommend` spreads them
/// for `share`, for the shares 50%, 90%, 99%, `share` and 100%, on `threads` threads.
pub fn contours(
    events: &[Event],
    table: &KeyTable,
    share: Percent,
    threads: usize,
) -> Result<Vec<Contour>> {
    let mut kept = KeptEvents::default();
    events.iter().try_for_each(|&event| kept.push(event, "the report's frontier"))?;
    if table.is_empty() {
        return Ok(Vec::new());
    }
    let (groups, events) = kept.into_grouped(table.len());
    let grouped = Grouped { groups: &groups, events: &events, table, threads };
    let rates = spread(&grouped.demand(Weigh::Cost), share, &|_| true);
    bound(table.len(), rates.len())?;
    let (summary, _) = grouped.needs_summary(&rates, Weigh::Cost, None);
    let mut shares: Vec<Percent> = [500_000, 900_000, 990_000, 1_000_000]
        .into_iter()
        .filter_map(Percent::from_ppm)
        .chain([share])
        .collect();
    shares.sort_unstable();
    shares.dedup();
    let contour = |share: Percent| Contour {
        share,
        points: (rates.iter().zip(bursts(&summary, share)))
            .map(|(&rate, burst)| ContourPoint { rate, per_hour: per_hour(rate), burst })
            .collect(),
    };
    Ok(shares.into_iter().map(contour).collect())
}
