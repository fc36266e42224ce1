//! `ratelimit recommend`: the limit that leaves a share of the keys untouched, and what
//! it costs the rest.

use std::io::{BufWriter, Write};
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use crate::cli::args::{InputArgs, OutputArgs};
use crate::cli::config::Styles;
use crate::cli::notes::say_notes;
use crate::engine::limit::column;
use crate::engine::lossless::Found;
use crate::engine::recommend::{self, Prefer, RecommendAsk};
use crate::input::asked::Names;
use crate::limiter::Algorithm;
use crate::render::export;
use crate::render::outfile::stdout;
use crate::sizing::quantile::Percent;
use crate::units::rate::Rate;
use crate::units::time::Span;

pub(super) fn run(args: &RecommendArgs, styles: &Styles) -> Result<ExitCode> {
    let input = args.input.resolve(Some((&args.key, "--key")))?;
    let ask = RecommendAsk {
        rates: args.rate.iter().flatten().copied().collect(),
        untouched: args.untouched,
        prefer: args.prefer,
        window: args.window,
        system: args.system,
    };
    let Found { found, notes } =
        recommend::recommend(&input.source, &input.read, &ask, Names::Flags)?;
    say_notes(&input, &notes);
    let mut out = BufWriter::new(stdout());
    export::write(&mut out, args.output.format, styles.stdout, &found)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `ratelimit recommend`.
#[derive(Debug, Args)]
pub struct RecommendArgs {
    #[command(flatten)]
    pub input: InputArgs,

    /// The column whose values are the clients to leave untouched: --key client. An nginx
    /// variable names an access log's field: $binary_remote_addr.
    #[arg(short = 'k', long, value_name = "COLUMN", value_parser = |name: &str| Ok::<_, String>(column(name)))]
    pub key: String,

    /// The share of keys that must lose nothing.
    #[arg(long, value_name = "SHARE", default_value = "99.9%", allow_hyphen_values = true)]
    pub untouched: Percent,

    /// The rates of the frontier; repeat it, separate rates with commas, or give a range:
    /// 10/m..60/m:10/m [default: 20 round rates spread over the keys' demand].
    #[arg(
        short = 'r',
        long,
        value_name = "RATE",
        value_delimiter = ',',
        allow_hyphen_values = true,
        value_parser = parse_rate_list
    )]
    pub rate: Vec<Vec<Rate>>,

    /// Which point to recommend: the one that refuses the fewest events of the keys over
    /// the line, the smallest burst, or the lowest rate.
    #[arg(long, value_name = "CHOICE", default_value = "fewest-refused", value_parser = prefer_parser())]
    pub prefer: Prefer,

    /// For window limits: each key's busiest count in any window of this length, across
    /// the keys (p50, p90, p99, max), and the limit N per window at the share.
    #[arg(long, value_name = "DURATION")]
    pub window: Option<Span>,

    /// Write the recommended point as this system's configuration, in its own arithmetic
    /// (nginx's rate= in whole requests a second or a minute, and its burst=).
    #[arg(long = "for", value_name = "SYSTEM", value_parser = system_parser())]
    pub system: Option<Algorithm>,

    #[command(flatten)]
    pub output: OutputArgs,
}

fn parse_rate_list(text: &str) -> anyhow::Result<Vec<Rate>> {
    Ok(crate::units::rate::parse_rates(text)?)
}

/// Reads `--prefer`, each choice listed in the help.
fn prefer_parser() -> impl clap::builder::TypedValueParser<Value = Prefer> {
    use clap::builder::{PossibleValuesParser, TypedValueParser};
    let names = Prefer::ALL.map(|(name, _)| name);
    PossibleValuesParser::new(names).try_map(|name| name.parse::<Prefer>())
}

/// Reads `--for`: a system whose burst recommend writes.
fn system_parser() -> impl clap::builder::TypedValueParser<Value = Algorithm> {
    use clap::builder::{PossibleValuesParser, TypedValueParser};
    let names: Vec<&str> = recommend::systems().map(Algorithm::name).collect();
    PossibleValuesParser::new(names).try_map(|name| name.parse::<Algorithm>())
}
