//! `ratelimit min-bucket`: the smallest lossless token bucket for each rate, or the curve.

use std::collections::HashMap;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::Args;

use super::{curve_of, layered, notes};
use crate::cli::args::{InputArgs, KeyArgs, OutputArgs};
use crate::cli::config::{Input, MAX_RATES, Styles};
use crate::cli::diagnostics::diagnostics;
use crate::cli::layer::LayerSpec;
use crate::engine::recorder::KeyNames;
use crate::input::catalog::{self, Event, Key, KeyTable, Sink, Timeline, slot};
use crate::input::keys::{Groups, MAX_KEYED_EVENTS, Ranking, fold_keys, for_each_listed};
use crate::limiter::{Algorithm, HaproxyLimit, NginxBurst, traefik_burst};
use crate::render::outfile::Output;
use crate::render::outfile::stdout;
use crate::render::{curve_svg, export};
use crate::report::LayerNeeds;
use crate::report::{
    self, Cover, KeyList, KeyNeed, KeyQuantiles, LeftOut, SystemBurst, SystemLimit, WorstKey,
};
use crate::sizing::curve::Curve;
use crate::sizing::many_rates::MinBucketFinders;
use crate::sizing::min_bucket::{Lossless, MinBucketFinder, Stretch};
use crate::sizing::quantile::{Histogram, Percent};
use crate::units::rate::Rate;
use crate::units::time::{Span, Timestamp};

/// The most key-rate pairs a keyed min-bucket sizes: 2^24, about 17 million. A pair costs
/// 60 to 300 ns (more with many rates, which are made again for each key), so the bound
/// keeps a run to seconds where it would take minutes.
pub const MAX_KEY_RATES: usize = 1 << 24;

/// One key's trackers: one finder per rate for a few rates, which is small; the blocked,
/// vectorized finders for many, which are fast.
enum KeyFinders {
    Few(Vec<MinBucketFinder>),
    Many(Box<MinBucketFinders>),
}

impl KeyFinders {
    /// Rates from which the blocked finders pay for their block.
    const MANY: usize = 8;

    fn new(rates: &[Rate]) -> KeyFinders {
        if rates.len() < KeyFinders::MANY {
            KeyFinders::Few(rates.iter().map(|&r| MinBucketFinder::new(r)).collect())
        } else {
            KeyFinders::Many(Box::new(MinBucketFinders::new(rates)))
        }
    }

    /// Forgets every event, to size the next key.
    fn clear(&mut self, rates: &[Rate]) {
        match self {
            KeyFinders::Few(finders) => {
                finders.iter_mut().zip(rates).for_each(|(f, &r)| *f = MinBucketFinder::new(r));
            }
            KeyFinders::Many(finders) => **finders = MinBucketFinders::new(rates),
        }
    }

    #[inline]
    fn push(&mut self, time: Timestamp, cost: u64) {
        match self {
            KeyFinders::Few(finders) => finders.iter_mut().for_each(|f| f.push_cost(time, cost)),
            KeyFinders::Many(finders) => finders.push_cost(time, cost),
        }
    }

    fn results(&mut self) -> Vec<Lossless> {
        match self {
            KeyFinders::Few(finders) => finders.iter().map(MinBucketFinder::result).collect(),
            KeyFinders::Many(finders) => finders.results(),
        }
    }
}

/// The most rows a keyed min-bucket lists: rates times the keys shown for each. 200 000
/// rows is more than anyone reads; a million took 4.5 s and 600 MB to build and write as a
/// table (23 s and 3.2 GB as CSV, before its rows were written one at a time).
pub const MAX_LISTED_ROWS: usize = 200_000;

/// The trackers of a min-bucket run: for one key, fed as events come; for many, every
/// event kept (12 bytes, 20 once an event costs other than 1) to be grouped by key, and
/// each key sized alone at the end, so that a key costs a few bytes however many rates it
/// is sized at.
enum Sizing {
    One(KeyFinders),
    Keyed { events: Timeline, keys: Vec<Key> },
}

/// Trackers for every rate, fed in one pass.
pub(super) struct KeyedFinders {
    rates: Vec<Rate>,
    sizing: Sizing,
    /// How many keys each rate lists; 0 lists all.
    top: usize,
    /// The number of keys seen so far.
    keys: usize,
    /// How many threads size the keys.
    threads: usize,
    /// With `--for nginx`, nginx's own need at each rate; with `--for haproxy`, HAProxy's.
    nginx: Vec<NginxBurst>,
    haproxy: Vec<HaproxyLimit>,
    /// With `--for traefik`, every event, kept: its burst is found by replaying them.
    traefik: Option<Vec<Event>>,
}

impl Sink for KeyedFinders {
    type Error = anyhow::Error;

    fn event(&mut self, event @ Event { time, key, cost }: Event) -> Result<()> {
        self.nginx.iter_mut().for_each(|need| need.push(event));
        self.haproxy.iter_mut().for_each(|need| need.push(event));
        if let Some(kept) = &mut self.traefik {
            kept.push(event);
        }
        if slot(key) >= self.keys && matches!(self.sizing, Sizing::Keyed { .. }) {
            self.add_keys(slot(key) + 1)?;
        }
        match &mut self.sizing {
            Sizing::One(finders) => finders.push(time, cost),
            Sizing::Keyed { events, keys } => {
                if events.len() >= MAX_KEYED_EVENTS {
                    bail!(
                        "more than {MAX_KEYED_EVENTS} events with --key; min-bucket numbers its events in 32 bits"
                    );
                }
                events.push(time, cost);
                keys.push(key);
            }
        }
        Ok(())
    }
}

impl KeyedFinders {
    pub(super) fn new(rates: &[Rate], keyed: bool, top: usize, threads: usize) -> KeyedFinders {
        let sizing = if keyed {
            Sizing::Keyed { events: Timeline::new(), keys: Vec::new() }
        } else {
            Sizing::One(KeyFinders::new(rates))
        };
        let (nginx, haproxy) = (Vec::new(), Vec::new());
        let traefik = None;
        KeyedFinders {
            rates: rates.to_vec(),
            sizing,
            top,
            keys: 0,
            threads,
            nginx,
            haproxy,
            traefik,
        }
    }

    /// Also finds a system's own need at each rate (each of which nginx can write, for
    /// nginx).
    pub(super) fn for_system(self, system: SizedFor) -> KeyedFinders {
        let rates = self.rates.iter();
        match system {
            SizedFor::Nginx => {
                KeyedFinders { nginx: rates.map(|&r| NginxBurst::new(r)).collect(), ..self }
            }
            SizedFor::Haproxy => {
                KeyedFinders { haproxy: rates.map(|&r| HaproxyLimit::new(r)).collect(), ..self }
            }
            SizedFor::Traefik => KeyedFinders { traefik: Some(Vec::new()), ..self },
        }
    }

    /// Counts keys up to `keys` (keys come numbered in order of first appearance, but may
    /// be met out of that order once events are sorted), if they keep the work within
    /// [`MAX_KEY_RATES`] and the listing within [`MAX_LISTED_ROWS`].
    #[cold]
    fn add_keys(&mut self, keys: usize) -> Result<()> {
        let rates = self.rates.len();
        if keys.saturating_mul(rates) > MAX_KEY_RATES {
            bail!(
                "{rates} rates for each of more than {} keys are more than the \
                 {MAX_KEY_RATES} key-rate pairs min-bucket sizes; give fewer rates, or a \
                 --key column with fewer values",
                keys - 1
            );
        }
        let listed = if self.top == 0 { keys } else { keys.min(self.top) };
        if rates.saturating_mul(listed) > MAX_LISTED_ROWS {
            // Refused while reading, as soon as the keys met pass the bound: the input may
            // hold more, and --top 0 lists them all.
            if self.top == 0 {
                bail!(
                    "with --top 0, {rates} rates list more than the {MAX_LISTED_ROWS} rows \
                     min-bucket lists once {keys} keys are met (the input may hold more); \
                     give --top K, or fewer rates"
                );
            }
            bail!(
                "listing {listed} keys for each of {rates} rates is more than the \
                 {MAX_LISTED_ROWS} rows min-bucket lists; give --top K, or fewer rates"
            );
        }
        self.keys = keys;
        Ok(())
    }

    /// Returns one result per rate; with keys, the key needing the most, and the first keys
    /// by need, the largest bucket first.
    pub(super) fn results(
        mut self,
        names: KeyNames,
        cover: Option<Percent>,
    ) -> Vec<report::MinBucket> {
        let (nginx, haproxy) = (std::mem::take(&mut self.nginx), std::mem::take(&mut self.haproxy));
        let traefik = self.traefik.take();
        let keyed = matches!(self.sizing, Sizing::Keyed { .. });
        let named =
            |key: Option<Key>| key.filter(|_| keyed).zip(names.names).map(|(k, t)| t.name(k));
        let mut found = self.buckets(names, cover);
        for (result, need) in found.iter_mut().zip(&nginx) {
            let (burst, key) = need.result();
            result.nginx = Some(SystemBurst { burst, key: named(key) });
        }
        for (result, need) in found.iter_mut().zip(&haproxy) {
            let (gt, key) = need.result();
            result.haproxy = Some(SystemLimit { gt, key: named(key) });
        }
        if let Some(events) = &traefik {
            for result in &mut found {
                let burst = traefik_burst(result.rate, events);
                result.traefik = Some(SystemBurst { burst, key: None });
            }
        }
        found
    }

    /// The smallest lossless buckets, one result per rate.
    fn buckets(self, names: KeyNames, cover: Option<Percent>) -> Vec<report::MinBucket> {
        let (events, keys) = match self.sizing {
            Sizing::One(mut finders) => {
                return finders.results().into_iter().map(report::MinBucket::from).collect();
            }
            Sizing::Keyed { events, keys } => (events, keys),
        };
        let empty = KeyTable::new();
        let table = names.names.unwrap_or(&empty);
        let groups = Groups::new(&keys, table.len());
        drop(keys);
        let events = events.gather(&groups);
        let rates = &self.rates;
        let sizing = KeySizing {
            fresh: || KeyFinders::new(rates),
            size: |finders: &mut KeyFinders, key: usize| {
                finders.clear(rates);
                events.each(groups.range(key)).for_each(|(time, cost)| finders.push(time, cost));
                finders.results()
            },
            events: |key: usize| groups.count(key),
        };
        let shown = Shown { top: self.top, cover, column: names.column, threads: self.threads };
        by_key(rates, table, &sizing, &shown)
    }
}

/// How a keyed min-bucket sizes its keys: `size` finds key n's buckets, one a rate, with
/// room that `fresh` makes (one a thread), and `events` counts key n's events.
pub(super) struct KeySizing<F, S, E> {
    pub(super) fresh: F,
    pub(super) size: S,
    pub(super) events: E,
}

/// What a keyed min-bucket shows: its `top` keys (all for 0), a `cover` if asked, the
/// key `column`, sized on `threads` threads.
pub(super) struct Shown<'a> {
    pub(super) top: usize,
    pub(super) cover: Option<Percent>,
    pub(super) column: &'a str,
    pub(super) threads: usize,
}

/// Returns a keyed min-bucket's answer for each of `rates`, over the keys of `table`,
/// each sized by `sizing`: its quantiles, its top keys, the worst, and the cover. What it
/// says depends only on each key's name, events and buckets, not on the keys' numbers.
pub(super) fn by_key<'t, P: Send, F, S, E>(
    rates: &[Rate],
    table: &'t KeyTable,
    sizing: &KeySizing<F, S, E>,
    shown: &Shown,
) -> Vec<report::MinBucket>
where
    F: Fn() -> P + Sync,
    S: Fn(&mut P, usize) -> Vec<Lossless> + Sync,
    E: Fn(usize) -> u64 + Sync,
{
    let KeySizing { fresh: room, size, events: count } = sizing;
    let (top, cover) = (shown.top, shown.cover);
    // A cover names the neediest keys it leaves out: rank at least that many.
    let ranked_top = if top == 0 { 0 } else { top.max(LEFT_OUT_SHOWN) };
    // Each core sizes a run of keys, with histograms and rankings of its own.
    let fresh = || {
        let needs = vec![Histogram::new(); rates.len()];
        let rankings: Vec<Ranking> =
            rates.iter().map(|_| Ranking::new(table, ranked_top)).collect();
        (needs, rankings, room())
    };
    let each = |part: &mut (Vec<Histogram>, Vec<Ranking<'t>>, P), key: usize| {
        let (needs, rankings, finders) = part;
        let events = count(key);
        // Keys count up from 0 to the table's length, and the table numbers keys in 32
        // bits.
        let number = Key::try_from(key).expect("keys are numbered in 32 bits");
        let name = table.get(number);
        for (n, found) in size(finders, key).iter().enumerate() {
            needs[n].add(found.min_bucket, events);
            rankings[n].offer_named(number, name, found.min_bucket);
        }
    };
    let (needs, rankings, _) =
        fold_keys(table.len(), shown.threads, fresh, each, |all, (needs, rankings, _)| {
            let (all_needs, all_rankings, _) = all;
            all_needs.iter_mut().zip(&needs).for_each(|(mine, other)| mine.merge(other));
            all_rankings.iter_mut().zip(rankings).for_each(|(mine, other)| mine.merge(other));
        });
    // The keys listed, sized again for their spans, the largest first, on every core.
    let ranked: Vec<Vec<(Key, u64)>> = rankings.into_iter().map(Ranking::into_keys).collect();
    let mut keys: Vec<Key> = ranked.iter().flatten().map(|&(key, _)| key).collect();
    keys.sort_unstable();
    keys.dedup();
    keys.sort_by_key(|&key| std::cmp::Reverse(count(slot(key))));
    let sized = for_each_listed(&keys, shown.threads, |key| size(&mut room(), slot(key)));
    let listed: HashMap<Key, Vec<Lossless>> = keys.into_iter().zip(sized).collect();
    let need_of = |n: usize, key: Key| KeyNeed {
        key: table.name(key),
        min_bucket: listed[&key][n].min_bucket,
        events: count(slot(key)),
    };
    (0..rates.len())
        .map(|n| {
            let mut keys: Vec<report::MinBucket> = ranked[n]
                .iter()
                .map(|&(key, _)| report::MinBucket {
                    key: Some(table.name(key)),
                    ..listed[&key][n].into()
                })
                .collect();
            let worst_key = keys.first().map(|worst| {
                let need = worst.shown();
                WorstKey {
                    key: worst.key.clone().unwrap_or_default(),
                    min_bucket: need.min_bucket,
                    span: need.span,
                }
            });
            let cover = cover.map(|share| {
                let min_bucket = needs[n].quantile(share).unwrap_or(0);
                let covered = needs[n].at_most(min_bucket);
                let all = needs[n].total();
                let count = usize::try_from(all.count - covered.count).unwrap_or(usize::MAX);
                let shown = ranked[n].iter().take(count.min(LEFT_OUT_SHOWN));
                Box::new(Cover {
                    share,
                    min_bucket,
                    keys_covered: usize::try_from(covered.count).unwrap_or(usize::MAX),
                    events_covered: covered.weight,
                    events: all.weight,
                    left_out: LeftOut {
                        count,
                        top: shown.map(|&(key, _)| need_of(n, key)).collect(),
                    },
                })
            });
            if top > 0 {
                keys.truncate(top);
            }
            let quantiles =
                needs[n].quantiles().map(|min_bucket| KeyQuantiles { min_bucket, dropped: None });
            let column = shown.column.to_owned();
            let by_key = KeyList { column, count: table.len(), quantiles, top: keys };
            report::MinBucket {
                rate: rates[n],
                key: None,
                need: None,
                worst_key,
                cover,
                by_key: Some(by_key),
                nginx: None,
                haproxy: None,
                traefik: None,
            }
        })
        .collect()
}

/// Keys a cover lists among those it leaves out.
const LEFT_OUT_SHOWN: usize = 5;

pub(super) fn run(args: &MinBucketArgs, styles: &Styles) -> Result<ExitCode> {
    if !args.limits.is_empty() {
        let layered = layered::replay(&args.limits, &args.input, None, args.keys.top)?;
        let mut out = BufWriter::new(stdout());
        export::write(&mut out, args.output.format, styles.stdout, &LayerNeeds::of(&layered))?;
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    }
    let (rates, plot, input) = args.resolve()?;
    if args.curve {
        return run_curve(args, &input, plot.as_ref(), styles);
    }
    let keyed = input.read.key_column.is_some();
    if args.system == Some(SizedFor::Nginx) {
        if let Some(rate) = rates.iter().find(|&&rate| crate::limiter::nginx_rate(rate).is_none()) {
            bail!("--for nginx: nginx writes a rate as N r/s or N r/m, and {rate} is neither");
        }
        if input.read.cost != crate::input::catalog::Cost::default() {
            bail!("--for nginx: nginx counts requests, not what they cost: leave out --cost");
        }
    }
    if let Some(system @ (SizedFor::Haproxy | SizedFor::Traefik)) = args.system {
        let algorithm =
            if system == SizedFor::Haproxy { Algorithm::Haproxy } else { Algorithm::Traefik };
        let refused = rates.iter().find_map(|&rate| algorithm.refuses(rate));
        if let Some(why) = refused {
            bail!("--for {}: {why}", algorithm.name());
        }
    }
    let fresh = || {
        let finders = KeyedFinders::new(&rates, keyed, args.keys.top, input.read.threads);
        match args.system {
            Some(system) => finders.for_system(system),
            None => finders,
        }
    };
    let (per_rate, stats) = catalog::read_events(&input.source, &input.read, fresh)?;
    notes(&input, &stats);
    let names = KeyNames::of(input.read.key_column.as_deref(), &stats);
    let found = per_rate.results(names, args.cover);
    let mut out = BufWriter::new(stdout());
    export::write(&mut out, args.output.format, styles.stdout, &found)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn run_curve(
    args: &MinBucketArgs,
    input: &Input,
    plot: Option<&Output>,
    styles: &Styles,
) -> Result<ExitCode> {
    let (events, stats) = catalog::read_events(&input.source, &input.read, Timeline::new)?;
    notes(input, &stats);
    let curve = curve_of(&events)?;
    let times = events.times();
    let segments: Vec<report::CurveSegment> = curve
        .lines
        .iter()
        .enumerate()
        .map(|(m, line)| {
            let Stretch { start, end, events } = Curve::stretch(line, times);
            let to = curve.starts.get(m + 1).copied();
            report::CurveSegment {
                from: curve.starts[m],
                from_per_hour: curve.starts[m].per_hour(),
                to,
                to_per_hour: to.map(|t| t.per_hour()),
                min_bucket: curve.min_bucket(curve.starts[m].events, curve.starts[m].micros),
                events,
                span_s: Span::from_micros(line.span).expect("times are sorted"),
                start,
                end,
            }
        })
        .collect();
    let mut style = styles.stdout;
    let mut out: Box<dyn Write> = Box::new(BufWriter::new(stdout()));
    if let Some(plot) = plot {
        let svg = curve_svg::draw(&curve, &input.source.title(), times.len());
        plot.write(|file| file.write_all(svg.as_bytes()))?;
        if plot.is_stdout() {
            // The picture has stdout; the table goes to stderr, as --emit's report does.
            out = diagnostics();
            style = styles.stderr;
        }
    }
    let segments = export::PerUnit { found: &segments, per: args.per.unwrap_or_default() };
    export::write(&mut out, args.output.format, style, &segments)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `ratelimit min-bucket`.
#[derive(Debug, Args)]
pub struct MinBucketArgs {
    #[command(flatten)]
    pub input: InputArgs,

    #[command(flatten)]
    pub keys: KeyArgs,

    /// The rates to size a bucket for; repeat it, separate rates with commas, or give a
    /// range with one period: 1/h..20/h, or 1/h..20/h:2/h for a step.
    #[arg(
        short = 'r',
        long,
        value_name = "RATE",
        required_unless_present_any = ["curve", "limits"],
        value_delimiter = ',',
        allow_hyphen_values = true,
        value_parser = parse_rate_list
    )]
    pub rate: Vec<Vec<Rate>>,

    /// Print the whole burst-rate curve instead: its breakpoints, with the stretch of
    /// events that needs the most between each.
    #[arg(long, conflicts_with = "rate")]
    pub curve: bool,

    /// With --key, also find the smallest burst with which at least this share of the keys
    /// loses nothing, for each rate: --cover 99%.
    #[arg(long, value_name = "SHARE", conflicts_with = "curve", allow_hyphen_values = true)]
    pub cover: Option<Percent>,

    /// Size each layer of several limits instead, given again for each, as replay's
    /// --limit takes them: each layer's smallest lossless bucket, and the tightest.
    #[arg(long = "limit", id = "limits", value_name = "SPEC")]
    #[arg(conflicts_with_all = ["rate", "curve", "cover", "key", "cost"])]
    pub limits: Vec<LayerSpec>,

    /// Also answer in a system's own terms, in its own arithmetic, at each rate (with --key,
    /// of any key): for nginx, the smallest burst= with which limit_req refuses none of the
    /// events; for haproxy, the smallest N of http_req_rate(P) gt N, P the rate's period;
    /// for traefik, the smallest burst (every event kept, to replay).
    #[arg(long = "for", value_enum, value_name = "SYSTEM", conflicts_with_all = ["curve", "limits"])]
    pub system: Option<SizedFor>,

    /// With --curve: the unit the table gives each rate in, as a decimal beside the exact
    /// rate: s, m, h or d [default: h].
    #[arg(long, value_enum, value_name = "UNIT", requires = "curve")]
    pub per: Option<export::Per>,

    /// With --curve, also draw it as an SVG: burst against rate, on log axes.
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,

    #[command(flatten)]
    pub output: OutputArgs,
}

/// The systems whose own terms `min-bucket --for` answers in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SizedFor {
    /// nginx's limit_req: burst=, in its milli-request arithmetic.
    Nginx,
    /// HAProxy's stick table: the N of sc_http_req_rate(0) gt N.
    Haproxy,
    /// Traefik's rateLimit: burst, in Go's float64 arithmetic (every event kept).
    Traefik,
}

fn parse_rate_list(text: &str) -> anyhow::Result<Vec<Rate>> {
    Ok(crate::units::rate::parse_rates(text)?)
}

impl MinBucketArgs {
    /// Settles the rates, the curve's picture if any, and the input, which it must not be.
    pub fn resolve(&self) -> Result<(Vec<Rate>, Option<Output>, Input)> {
        if self.plot.is_some() && !self.curve {
            bail!("--plot draws the curve: use it with --curve");
        }
        if self.cover.is_some() && self.keys.key.is_none() {
            bail!("--cover is a share of keys: use it with --key COLUMN");
        }
        let input = self.input.resolve(self.keys.key.as_deref().map(|key| (key, "--key")))?;
        let plot = self.plot.clone().map(Output::new);
        if let Some(plot) = &plot {
            input.check_output(plot)?;
        }
        let rates: Vec<Rate> = self.rate.iter().flatten().copied().collect();
        if rates.len() > MAX_RATES {
            bail!("--rate gives {} rates; at most {MAX_RATES} are allowed", rates.len());
        }
        Ok((rates, plot, input))
    }
}
