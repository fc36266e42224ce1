//! `ratelimit min-bucket`: the smallest lossless token bucket for each rate, or the curve.

use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::Args;

use crate::cli::args::{InputArgs, KeyArgs, OutputArgs};
use crate::cli::config::{Input, MAX_RATES, Styles};
use crate::cli::diagnostics::diagnostics;
use crate::cli::layer;
use crate::cli::notes::say_notes;
use crate::engine::limit::Limit;
use crate::engine::lossless::{self, Drawn, Found, MinBucketAsk};
use crate::input::asked::Names;
use crate::limiter::Algorithm;
use crate::policy_report::LayerNeeds;
use crate::render::outfile::Output;
use crate::render::outfile::stdout;
use crate::render::{curve_svg, export};
use crate::sizing::quantile::Percent;
use crate::units::rate::Rate;

pub(crate) fn run(args: &MinBucketArgs, styles: &Styles) -> Result<ExitCode> {
    if !args.limits.is_empty() {
        let layered = layer::replay(&args.limits, &args.input, None, args.keys.top)?;
        let mut out = BufWriter::new(stdout());
        export::write(&mut out, args.output.format, styles.stdout, &LayerNeeds::of(&layered))?;
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    }
    let (rates, plot, input) = args.resolve()?;
    if args.curve {
        return run_curve(args, &input, plot.as_ref(), styles);
    }
    let ask = MinBucketAsk { rates, top: args.keys.top, cover: args.cover, system: args.system };
    let Found { found, notes } =
        lossless::min_bucket(&input.source, &input.read, &ask, Names::Flags)?;
    say_notes(&input, &notes);
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
    let Found { found, notes } = lossless::curve(&input.source, &input.read)?;
    say_notes(input, &notes);
    let Drawn { curve, segments, events } = found;
    let times = events.times();
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
    #[arg(long = "for", value_name = "SYSTEM", value_parser = sized_for_parser())]
    #[arg(conflicts_with_all = ["curve", "limits"])]
    pub system: Option<Algorithm>,

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

/// Reads `--for`: a system whose own lossless setting the registry finds
/// ([`Algorithm::own_size`]), each listed in the help with its line.
fn sized_for_parser() -> impl clap::builder::TypedValueParser<Value = Algorithm> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    let names: Vec<PossibleValue> = lossless::systems()
        .filter_map(|a| a.own_size().map(|own| PossibleValue::new(a.name()).help(own.help)))
        .collect();
    PossibleValuesParser::new(names).try_map(|name| name.parse::<Algorithm>())
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
