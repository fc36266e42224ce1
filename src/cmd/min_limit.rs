//! `ratelimit min-limit`: the smallest provider limit that refuses none of a log's
//! requests (a bucket of L refilled at L a period), or the fewest requests in flight.

use std::io::{BufWriter, Write};
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use crate::cli::args::{InputArgs, OutputArgs};
use crate::cli::config::Styles;
use crate::cli::notes::say_notes;
use crate::engine::limit::column;
use crate::engine::settled::min_limit::{self, MinLimitAsk};
use crate::engine::settled::presets;
use crate::engine::settled::{Sum, parse_charge};
use crate::input::asked::Names;
use crate::input::cost::Cost;
use crate::input::requests::Completion;
use crate::render::export;
use crate::render::outfile::stdout;
use crate::settle::Charge;
use crate::units::time::Span;

pub(super) fn run(args: &MinLimitArgs, styles: &Styles) -> Result<ExitCode> {
    if let Some(name) = &args.preset {
        let mut input = args.input.resolve(None)?;
        input.read.cost = Cost::default();
        let completion = Completion::given(args.duration.as_deref(), args.end.as_deref());
        let (found, stats) = presets::fit(&input.source, &input.read, completion.as_ref(), name)?;
        say_notes(&input, &crate::engine::notes::notes(&input.source, &input.read, &stats));
        let mut out = BufWriter::new(stdout());
        export::write(&mut out, args.output.format, styles.stdout, &found)?;
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    }
    let ask = args.ask()?;
    let mut input = args.input.resolve(args.key.as_deref().map(|k| (k, "--key")))?;
    // The cost is a sum the requests are read with, not an event's column.
    input.read.cost = Cost::default();
    let (found, stats) = min_limit::find(&input.source, &input.read, &ask)?;
    say_notes(&input, &crate::engine::notes::notes(&input.source, &input.read, &stats));
    let mut out = BufWriter::new(stdout());
    export::write(&mut out, args.output.format, styles.stdout, &found)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

impl MinLimitArgs {
    /// Settles what is asked, once: the cost as a sum, the charge, and the completions.
    fn ask(&self) -> Result<MinLimitAsk> {
        let cost = match &self.input.cost {
            None => Sum::number(1),
            Some(Cost::Each(n)) => Sum::number(*n),
            Some(Cost::Column(text)) => {
                text.parse::<Sum>().map_err(|e| anyhow::anyhow!("--cost {text}: {e}"))?
            }
        };
        let completion = Completion::given(self.duration.as_deref(), self.end.as_deref());
        let (charge, reserve) = (self.charge, self.reserve.clone());
        MinLimitAsk::settle(
            self.per,
            cost,
            charge,
            reserve,
            completion,
            self.concurrency,
            Names::Flags,
        )
        .map_err(anyhow::Error::msg)
    }
}

/// `ratelimit min-limit`.
#[derive(Debug, Args)]
pub struct MinLimitArgs {
    #[command(flatten)]
    pub input: InputArgs,

    /// The limit's period: the answer L is a bucket of L refilled at L each PERIOD (1m for
    /// a limit a minute, as providers write TPM and RPM).
    #[arg(long, value_name = "PERIOD", required_unless_present_any = ["concurrency", "preset"])]
    pub per: Option<Span>,

    /// The estimate each request reserves on arrival (prompt_tokens+max_tokens), settled to
    /// --cost when it completes: charge reserve.
    #[arg(long, value_name = "SUM")]
    pub reserve: Option<Sum>,

    /// When the cost is charged: on arrival (the default), reserved (with --reserve), or
    /// on completion, as Envoy's AI gateway does.
    #[arg(long, value_name = "WHEN", value_parser = parse_charge)]
    pub charge: Option<Charge>,

    /// Each request's duration is in COLUMN: bare numbers are milliseconds, and a value may
    /// carry a unit (850ms, 1.2s).
    #[arg(long, value_name = "COLUMN", conflicts_with = "end")]
    pub duration: Option<String>,

    /// Each request's end time is in COLUMN, written as its time is.
    #[arg(long, value_name = "COLUMN")]
    pub end: Option<String>,

    /// Size each key's limit, as a provider limits each API key: the answer is the key
    /// that needs the most, with each key's quantiles.
    #[arg(short = 'k', long, value_name = "COLUMN", value_parser = |name: &str| Ok::<_, String>(column(name)))]
    pub key: Option<String>,

    /// Size a cap on requests in flight instead of a rate: the most in flight at once.
    #[arg(long, conflicts_with_all = ["reserve", "charge"])]
    pub concurrency: bool,

    /// Replay a provider's presets instead, PROVIDER:*:MODEL (or one tier), and name the
    /// smallest tier that refuses none of the requests, as `ratelimit presets` lists them.
    #[arg(long, value_name = "NAME", conflicts_with_all = ["per", "reserve", "charge", "key", "concurrency", "cost"])]
    pub preset: Option<String>,

    #[command(flatten)]
    pub output: OutputArgs,
}
