//! `ratelimit min-bucket`: the smallest lossless token bucket for each rate, or the curve.

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

use anyhow::{Result, bail};

use super::{key_names, notes, write_result};
use crate::cli::args::MinBucketArgs;
use crate::cli::config::{Input, Styles};
use crate::engine::recorder::KeyNames;
use crate::input::catalog::{self, Key, Sink, slot};
use crate::render::curve_svg;
use crate::render::formats;
use crate::render::outfile::Output;
use crate::report::{self, Cover, KeyList, KeyNeed, KeyQuantiles, LeftOut};
use crate::sizing::curve::Curve;
use crate::sizing::min_bucket::{Lossless, MinBucketFinder, MinBucketFinders, Stretch};
use crate::sizing::quantile::{Share, nearest_rank};
use crate::units::rate::Rate;
use crate::units::time::{Span, Timestamp};

/// The most memory the trackers of every rate and key may take, with their results: 1 GiB.
pub const MAX_TRACKER_BYTES: usize = 1 << 30;

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

    /// The most memory one key's trackers for `rates` take, with their results.
    fn footprint(rates: usize) -> usize {
        if rates < KeyFinders::MANY {
            let per_rate = size_of::<MinBucketFinder>() + size_of::<Lossless>();
            size_of::<KeyFinders>() + rates * per_rate
        } else {
            size_of::<KeyFinders>() + MinBucketFinders::footprint(rates)
        }
    }

    #[inline]
    fn push(&mut self, time: Timestamp) {
        match self {
            KeyFinders::Few(finders) => finders.iter_mut().for_each(|f| f.push(time)),
            KeyFinders::Many(finders) => finders.push(time),
        }
    }

    fn events(&self) -> u64 {
        match self {
            KeyFinders::Few(finders) => finders.first().map_or(0, MinBucketFinder::events),
            KeyFinders::Many(finders) => finders.events(),
        }
    }

    fn results(self) -> Vec<Lossless> {
        match self {
            KeyFinders::Few(finders) => finders.iter().map(MinBucketFinder::result).collect(),
            KeyFinders::Many(mut finders) => finders.results(),
        }
    }
}

/// The most rows a keyed min-bucket lists: rates times the keys shown for each. A million
/// rows is more than anyone reads, and building and writing more took minutes and
/// gigabytes.
pub const MAX_LISTED_ROWS: usize = 1_000_000;

/// Trackers for every rate, one set per key, all fed in the same pass.
struct KeyedFinders {
    rates: Vec<Rate>,
    keys: Vec<KeyFinders>,
    /// How many keys each rate lists; 0 lists all.
    top: usize,
}

impl Sink for KeyedFinders {
    type Error = anyhow::Error;

    fn event(&mut self, time: Timestamp, key: Key) -> Result<()> {
        let key = slot(key);
        while self.keys.len() <= key {
            self.add_key()?;
        }
        self.keys[key].push(time);
        Ok(())
    }
}

impl KeyedFinders {
    /// Adds a key's trackers, if they fit in [`MAX_TRACKER_BYTES`] with the others.
    #[cold]
    fn add_key(&mut self) -> Result<()> {
        let each = KeyFinders::footprint(self.rates.len());
        let keys = self.keys.len() + 1;
        if keys.saturating_mul(each) > MAX_TRACKER_BYTES {
            let rates = self.rates.len();
            bail!(
                "{rates} rates for each of more than {} keys need more than the {} GiB that \
                 min-bucket may use (about {each} bytes a key); give fewer rates, or a --key \
                 column with fewer values",
                keys - 1,
                MAX_TRACKER_BYTES >> 30
            );
        }
        let listed = if self.top == 0 { keys } else { keys.min(self.top) };
        if self.rates.len().saturating_mul(listed) > MAX_LISTED_ROWS {
            let rates = self.rates.len();
            bail!(
                "listing {listed} keys for each of {rates} rates is more than the \
                 {MAX_LISTED_ROWS} rows min-bucket lists; give --top K, or fewer rates"
            );
        }
        self.keys.push(KeyFinders::new(&self.rates));
        Ok(())
    }

    /// Returns one result per rate; with keys, the key needing the most, and every key,
    /// the largest bucket first.
    fn results(&mut self, names: KeyNames, cover: Option<Share>) -> Vec<report::MinBucket> {
        let events: Vec<u64> = self.keys.iter().map(KeyFinders::events).collect();
        // Each key's trackers go as its results come, so that both are never held whole.
        let results: Vec<Vec<Lossless>> =
            std::mem::take(&mut self.keys).into_iter().map(KeyFinders::results).collect();
        let per_key = |n: usize| results.iter().map(move |k| report::MinBucket::from(k[n]));
        let Some(table) = names.names.filter(|t| !t.is_empty()) else {
            return (0..self.rates.len()).filter_map(|n| per_key(n).next()).collect();
        };
        let key_names: Vec<String> = table.names().collect();
        (0..self.rates.len())
            .map(|n| {
                let mut keys: Vec<report::MinBucket> = per_key(n)
                    .zip(&key_names)
                    .map(|(found, name)| report::MinBucket { key: Some(name.clone()), ..found })
                    .collect();
                keys.sort_by(|a, b| {
                    b.min_bucket.cmp(&a.min_bucket).then_with(|| a.key.cmp(&b.key))
                });
                let worst = keys[0].clone();
                let key_count = keys.len();
                let key_quantiles =
                    KeyQuantiles::of(keys.iter().map(|k| k.min_bucket).collect(), None);
                // Only the keys shown are kept: all of them, for every rate, do not fit.
                if self.top > 0 {
                    keys.truncate(self.top);
                }
                let key_column = names.column.to_owned();
                let needs = per_key(n).zip(&key_names).zip(&events);
                let needs = needs.map(|((found, name), &events)| KeyNeed {
                    key: name.clone(),
                    min_bucket: found.min_bucket,
                    events,
                });
                let cover = cover.map(|share| Box::new(cover_of(share, needs.collect())));
                let by_key = KeyList { key_column, key_count, key_quantiles, keys };
                report::MinBucket { by_key: Some(by_key), cover, ..worst }
            })
            .collect()
    }
}

/// Keys a cover lists among those it leaves out.
const LEFT_OUT_SHOWN: usize = 5;

/// Returns the smallest burst that keeps `share` of the keys whole, with what it covers
/// and the keys it leaves out, the neediest first.
fn cover_of(share: Share, mut needs: Vec<KeyNeed>) -> Cover {
    let mut buckets: Vec<u64> = needs.iter().map(|k| k.min_bucket).collect();
    buckets.sort_unstable();
    let min_bucket = nearest_rank(&buckets, share).unwrap_or(0);
    let events = needs.iter().map(|k| k.events).sum();
    needs.sort_by(|a, b| b.min_bucket.cmp(&a.min_bucket).then_with(|| a.key.cmp(&b.key)));
    let count = needs.iter().take_while(|k| k.min_bucket > min_bucket).count();
    let covered = &needs[count..];
    Cover {
        share,
        min_bucket,
        keys_covered: covered.len(),
        events_covered: covered.iter().map(|k| k.events).sum(),
        events,
        left_out: LeftOut {
            count,
            top: needs.into_iter().take(count.min(LEFT_OUT_SHOWN)).collect(),
        },
    }
}

pub(super) fn run(args: &MinBucketArgs, styles: &Styles) -> Result<ExitCode> {
    let (rates, plot, input) = args.resolve()?;
    if args.curve {
        return run_curve(args, &input, plot.as_ref(), styles);
    }
    let fresh = || KeyedFinders { rates: rates.clone(), keys: Vec::new(), top: args.keys.top };
    let (mut per_rate, stats) = catalog::read_events(&input.source, &input.read, fresh)?;
    notes(&input, &stats);
    let names = key_names(input.read.key_column.as_deref(), &stats);
    let mut found = per_rate.results(names, args.cover);
    report::keep_top(&mut found, args.keys.top);
    let mut out = BufWriter::new(io::stdout().lock());
    let table = |w: &mut dyn Write| formats::min_bucket_table(w, &found, styles.stdout);
    write_result(&mut out, args.output.format, &found, &report::csv_rows(&found), table)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn run_curve(
    args: &MinBucketArgs,
    input: &Input,
    plot: Option<&Output>,
    styles: &Styles,
) -> Result<ExitCode> {
    let (times, stats) = catalog::read_events(&input.source, &input.read, Vec::<Timestamp>::new)?;
    notes(input, &stats);
    let curve = Curve::new(&times);
    let segments: Vec<report::CurveSegment> = curve
        .lines
        .iter()
        .enumerate()
        .map(|(m, line)| {
            let Stretch { start, end, .. } = Curve::stretch(line, &times);
            let to = curve.starts.get(m + 1).copied();
            report::CurveSegment {
                from: curve.starts[m],
                from_per_hour: curve.starts[m].per_hour(),
                to,
                to_per_hour: to.map(|t| t.per_hour()),
                events: line.events.unsigned_abs(),
                span_s: Span::from_micros(line.span).expect("times are sorted"),
                start,
                end,
            }
        })
        .collect();
    let mut style = styles.stdout;
    let mut out: Box<dyn Write> = Box::new(BufWriter::new(io::stdout().lock()));
    if let Some(plot) = plot {
        let svg = curve_svg::draw(&curve, &input.source.title(), times.len());
        plot.write(|file| file.write_all(svg.as_bytes()))?;
        if plot.is_stdout() {
            // The picture has stdout; the table goes to stderr, as --emit's report does.
            out = Box::new(io::stderr().lock());
            style = styles.stderr;
        }
    }
    let table = |w: &mut dyn Write| formats::curve_table(w, &segments, style);
    write_result(&mut out, args.output.format, &segments, &segments, table)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
