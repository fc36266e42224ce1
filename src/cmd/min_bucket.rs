//! `ratelimit min-bucket`: the smallest lossless token bucket for each rate, or the curve.

use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Result, anyhow, bail};
use clap::Args;

use super::{curve_of, layered, notes};
use crate::cli::args::{InputArgs, KeyArgs, OutputArgs};
use crate::cli::config::{Input, MAX_RATES, Styles};
use crate::cli::diagnostics::diagnostics;
use crate::engine::key_sizing::KeyedFinders;
use crate::engine::limit::Limit;
use crate::engine::recorder::KeyNames;
use crate::input::catalog::{self, Timeline};
use crate::limiter::Algorithm;
use crate::policy_report::LayerNeeds;
use crate::render::outfile::Output;
use crate::render::outfile::stdout;
use crate::render::{curve_svg, export};
use crate::report;
use crate::sizing::curve::{Curve, Line};
use crate::sizing::min_bucket::Stretch;
use crate::sizing::quantile::Percent;
use crate::units::rate::Rate;
use crate::units::time::Span;

pub(crate) fn run(args: &MinBucketArgs, styles: &Styles) -> Result<ExitCode> {
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
        let algorithm = system.algorithm();
        let refused = rates.iter().find_map(|&rate| algorithm.refuses(rate));
        if let Some(why) = refused {
            bail!("--for {}: {why}", algorithm.name());
        }
    }
    let fresh = || {
        let finders = KeyedFinders::new(&rates, keyed, args.keys.top, input.read.threads);
        match args.system {
            Some(system) => finders.for_system(system.algorithm(), &input.read.empty_key),
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

/// Returns the curve's pieces as the report gives them, each with the stretch that sets
/// it, which `stretch` finds.
pub(crate) fn segments(
    curve: &Curve,
    stretch: impl Fn(&Line) -> Option<Stretch>,
) -> Result<Vec<report::CurveSegment>> {
    let piece = |(m, line): (usize, &Line)| {
        let Stretch { start, end, events } =
            stretch(line).ok_or_else(|| anyhow!("a piece of the curve names no stretch"))?;
        let to = curve.starts.get(m + 1).copied();
        Ok(report::CurveSegment {
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
    let segments = segments(&curve, |line| Some(Curve::stretch(line, times)))?;
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
    pub limits: Vec<Limit>,

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

impl SizedFor {
    /// The limiter that models the system.
    fn algorithm(self) -> Algorithm {
        match self {
            SizedFor::Nginx => Algorithm::Nginx,
            SizedFor::Haproxy => Algorithm::Haproxy,
            SizedFor::Traefik => Algorithm::Traefik,
        }
    }
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
