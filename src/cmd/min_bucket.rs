//! `ratelimit min-bucket`: the smallest lossless token bucket for each rate, or the curve.

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

use anyhow::{Result, bail};

use super::{key_names, notes, write_result};
use crate::cli::args::MinBucketArgs;
use crate::cli::config::{Input, Styles};
use crate::engine::recorder::KeyNames;
use crate::input::catalog::{self, Key, Sink};
use crate::render::curve_svg;
use crate::render::formats;
use crate::render::outfile::Output;
use crate::report::{self, KeyList};
use crate::sizing::curve::Curve;
use crate::sizing::min_bucket::{Lossless, MinBucketFinders, Stretch};
use crate::units::rate::Rate;
use crate::units::time::{Span, Timestamp};

/// The most memory the trackers of every rate and key may take: 2 GiB.
pub const MAX_TRACKER_BYTES: usize = 2 << 30;

/// Trackers for every rate, one set per key, all fed in the same pass.
struct KeyedFinders {
    rates: Vec<Rate>,
    keys: Vec<MinBucketFinders>,
}

impl Sink for KeyedFinders {
    type Error = anyhow::Error;

    fn event(&mut self, time: Timestamp, key: Key) -> Result<()> {
        let key = key as usize;
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
        let each = MinBucketFinders::footprint(self.rates.len());
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
        self.keys.push(MinBucketFinders::new(&self.rates));
        Ok(())
    }

    /// Returns one result per rate; with keys, the key needing the most, and every key,
    /// the largest bucket first.
    fn results(&mut self, names: KeyNames) -> Vec<report::MinBucket> {
        let results: Vec<Vec<Lossless>> =
            self.keys.iter_mut().map(MinBucketFinders::results).collect();
        let per_key = |n: usize| results.iter().map(move |k| report::MinBucket::from(k[n]));
        if names.names.is_empty() {
            return (0..self.rates.len()).filter_map(|n| per_key(n).next()).collect();
        }
        (0..self.rates.len())
            .map(|n| {
                let mut keys: Vec<report::MinBucket> = per_key(n)
                    .zip(names.names)
                    .map(|(found, name)| report::MinBucket { key: Some(name.clone()), ..found })
                    .collect();
                keys.sort_by(|a, b| {
                    b.min_bucket.cmp(&a.min_bucket).then_with(|| a.key.cmp(&b.key))
                });
                let worst = keys[0].clone();
                let key_count = keys.len();
                let key_column = names.column.to_owned();
                report::MinBucket { by_key: Some(KeyList { key_column, key_count, keys }), ..worst }
            })
            .collect()
    }
}

pub(super) fn run(args: &MinBucketArgs, styles: &Styles) -> Result<ExitCode> {
    let (rates, plot, input) = args.resolve()?;
    if args.curve {
        return run_curve(args, &input, plot.as_ref(), styles);
    }
    let fresh = || KeyedFinders { rates: rates.clone(), keys: Vec::new() };
    let (mut per_rate, stats) = catalog::read_events(&input.source, &input.read, fresh)?;
    notes(&input, &stats);
    let mut found = per_rate.results(key_names(input.read.key_column.as_deref(), &stats));
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
