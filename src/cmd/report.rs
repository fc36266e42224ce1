//! `ratelimit report`: one self-contained HTML page that tells a replay's whole story,
//! made by the page crate on the engine's API; this command settles what its flags ask.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Result, bail};
use clap::Args;
use ratelimit_page::{PageAsk, Reads, Said};

use crate::cli::args::{JobArgs, UnlessLimits};
use crate::cli::diagnostics::diagnostics;
use crate::cli::layer;
use crate::cli::notes::say_notes;
use crate::engine::limit::{Given, Limit};
use crate::input::asked::Names;
use crate::input::catalog::Source;
use crate::input::cost::Cost;
use crate::limiter::Algorithm;
use crate::render::outfile::Output;
use crate::sizing::quantile::Percent;

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
    let (lead, window) = match (args.size.rate, args.limits.first()) {
        (Some(rate), _) => {
            let shape = &args.size.shape;
            let params = shape.given();
            let lead = Limit { rate, burst: shape.burst, params, ..bare(args.algo, rate) };
            (lead, args.size.window)
        }
        (None, Some(first)) => {
            (Limit { burst: first.burst, ..bare(first.algorithm, first.rate) }, None)
        }
        (None, None) => bail!("report needs --rate RATE, or --limit SPEC"),
    };
    crate::cli::config::check_window(window)?;
    // The layers, or configurations, read their own key and cost columns.
    let limits = match args.limits.is_empty() {
        true => None,
        false => {
            let noun = if args.side_by_side { "configurations" } else { "layers" };
            Some(layer::setup(&args.limits, &args.job.input, None, false, noun)?.1.read)
        }
    };
    let ask = PageAsk {
        lead,
        window,
        limits: args.limits.clone(),
        side_by_side: args.side_by_side,
        cover: args.cover,
        top: args.job.keys.top,
        fleet: args.job.fleet.asked(),
        redis: args.job.remote.target()?,
        names: Names::Flags,
        command: command_line(),
        span_given: args.job.input.since.is_some() || args.job.input.until.is_some(),
    };
    let reads = Reads { lead: input.read.clone(), limits };
    let made = ratelimit_page::page(&ask, &input.source, &reads, began)?;
    // The input's own note, then what making the page said, in order. A line stderr
    // cannot take is lost; the page and the exit code are not.
    say_notes(&input, &[]);
    let mut err = diagnostics();
    for said in &made.said {
        let (kind, text) = match said {
            Said::Note(note) => ("note", note),
            Said::Cut(cut) => ("report", cut),
        };
        let _ = writeln!(err, "ratelimit: {kind}: {text}");
    }
    output.write(|out| ratelimit_page::write_page(out, &made.page))?;
    Ok(ExitCode::SUCCESS)
}

/// A limit of `algorithm` at `rate`, with nothing else given.
fn bare(algorithm: Algorithm, rate: crate::units::rate::Rate) -> Limit {
    Limit {
        algorithm,
        rate,
        burst: None,
        cost: Cost::default(),
        key: None,
        params: Given::default(),
    }
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
