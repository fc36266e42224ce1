//! The commands: parse the command line, resolve it, and run the job.

mod check;
mod compare;
mod config;

#[cfg(feature = "quakes")]
mod fetch;
pub(crate) mod filter;
mod limiters;
mod man;
pub(crate) mod min_bucket;
mod min_limit;
mod min_rate;
mod plot;
mod presets;
mod recommend;
pub(crate) mod replay;
mod report;
mod schema;
mod synth;

use std::ffi::OsString;
use std::io::Write;
use std::process::ExitCode;

use anyhow::{Result, anyhow};
use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{Args, CommandFactory, Parser, Subcommand};

use crate::cli::args::{AFTER_HELP, ColorChoice};
use crate::cli::config::Styles;
use crate::cli::diagnostics::set_quiet;
use crate::render::outfile::stdout;

/// Runs ratelimit with the given arguments, the program name first, and returns the exit
/// code for success; errors are returned, for `main` to print once.
pub fn run(args: impl IntoIterator<Item = impl Into<OsString> + Clone>) -> Result<ExitCode> {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(err) => return clap_exit(err),
    };
    dispatch(cli)
}

/// Runs the command `cli` gives.
pub(crate) fn dispatch(cli: Cli) -> Result<ExitCode> {
    set_quiet(cli.quiet);
    let styles = Styles::resolve(cli.color);
    match cli.command {
        Command::Replay(args) => {
            if args.of_requests() {
                return replay::settled(&args, &styles);
            }
            // One report either way: one limit's, or the layers' all or nothing.
            let report = replay::run(&args)?;
            replay::write(&report, &args, &styles)
        }
        Command::Compare(args) => compare::run(&args, &styles),
        Command::Plot(args) => plot::run(&args),
        Command::Report(args) => report::run(&args),
        Command::MinBucket(args) => min_bucket::run(&args, &styles),
        Command::MinRate(args) => min_rate::run(&args, &styles),
        Command::MinLimit(args) => min_limit::run(&args, &styles),
        Command::Recommend(args) => recommend::run(&args, &styles),
        Command::Presets(args) => presets::run(&args, &styles),
        Command::Filter(args) => filter::run(&args),
        Command::Synth(args) => synth::run(&args),
        #[cfg(feature = "quakes")]
        Command::Fetch(args) => fetch::run(&args),
        Command::Check(args) => check::run(&args, &styles),
        Command::Schema(args) => schema::run(&args),
        Command::Limiters(args) => limiters::run(&args),
        Command::Config(args) => config::run(&args),
        Command::Completions(args) => {
            // clap_complete panics if it cannot write; a buffer it can always write.
            let mut script = Vec::new();
            clap_complete::generate(args.shell, &mut Cli::command(), "ratelimit", &mut script);
            write_stdout(&script)
        }
        Command::Man(args) => man::run(&args),
    }
}

pub use crate::engine::error::error_line;

/// Writes bytes to stdout.
fn write_stdout(bytes: &[u8]) -> Result<ExitCode> {
    let mut out = stdout();
    out.write_all(bytes)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Help and version go to stdout with success; a usage error becomes one line.
pub(crate) fn clap_exit(err: clap::Error) -> Result<ExitCode> {
    match err.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            err.print()?;
            Ok(ExitCode::SUCCESS)
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            err.print()?;
            Ok(ExitCode::from(2))
        }
        _ => {
            // The first paragraph says what is wrong; the rest is usage and tips.
            let text = err.render().to_string();
            let first: Vec<&str> =
                text.lines().take_while(|l| !l.is_empty()).map(str::trim).collect();
            let first = first.join(" ");
            let first = first.strip_prefix("error: ").unwrap_or(&first);
            // The tip of what it may mean, which is in a paragraph of its own.
            let suggested = [ContextKind::SuggestedValue, ContextKind::SuggestedArg]
                .into_iter()
                .find_map(|kind| match err.get(kind)? {
                    ContextValue::String(one) => Some(one.clone()),
                    ContextValue::Strings(many) => many.first().cloned(),
                    _ => None,
                });
            let tip = suggested.map(|s| format!(" (did you mean '{s}'?)")).unwrap_or_default();
            match err.kind() {
                ErrorKind::InvalidValue | ErrorKind::ValueValidation => {
                    Err(anyhow!("{first}{tip}"))
                }
                _ => Err(anyhow!("{first}{tip} (see --help)")),
            }
        }
    }
}

pub(super) const ABOUT: &str =
    "Replay a recorded event catalog through a rate limiter, on the events' own clock.";

/// ratelimit: replay a recorded event catalog through rate limiters.
#[derive(Debug, Parser)]
#[command(name = "ratelimit", version, about = ABOUT, after_help = AFTER_HELP)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,

    /// When to color the table output.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto, global = true)]
    pub color: ColorChoice,

    /// Write data only: no notes, summaries, progress or reports on stderr; errors still.
    #[arg(short, long, global = true)]
    pub quiet: bool,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Replay a catalog through one limiter and report what passed.
    #[command(after_help = replay::REPLAY_AFTER_HELP)]
    Replay(replay::ReplayArgs),
    /// Replay a catalog through all six limiters at once, side by side.
    #[command(after_help = replay::REPLAY_AFTER_HELP)]
    Compare(compare::CompareArgs),
    /// Draw a replay as an SVG timeline: one lane per limiter, each event a tick.
    #[command(after_help = AFTER_HELP)]
    Plot(plot::PlotArgs),
    /// Write one HTML page that tells a replay's whole story, to look at in a browser.
    #[command(after_help = AFTER_HELP)]
    Report(report::ReportArgs),
    /// Find the smallest token bucket that drops nothing, for one or more rates.
    #[command(after_help = AFTER_HELP)]
    MinBucket(min_bucket::MinBucketArgs),
    /// Decide one event now, in Redis, for a script: exit 0 if allowed, 1 if limited.
    #[command(after_help = check::CHECK_AFTER_HELP)]
    Check(check::CheckArgs),
    /// Find the smallest rate at which a bucket of a given burst drops nothing.
    #[command(after_help = AFTER_HELP)]
    MinRate(min_rate::MinRateArgs),
    /// Find the smallest provider limit (a bucket of L refilled at L a period) that refuses
    /// none of a log's requests, reserved, charged after or on arrival; or the fewest
    /// requests in flight.
    #[command(after_help = AFTER_HELP)]
    MinLimit(min_limit::MinLimitArgs),
    /// Recommend a limit from a keyed log: for each rate, the least burst that leaves a
    /// share of the keys (99.9%) untouched, what the others lose, and the best point.
    #[command(after_help = AFTER_HELP)]
    Recommend(recommend::RecommendArgs),
    /// List the providers' published LLM limits (OpenAI, Anthropic, Azure, Bedrock,
    /// Gemini) that --preset takes, with the day each was read and its source.
    Presets(presets::PresetsArgs),
    /// Limit a live stream: pass the lines of stdin that a limiter admits, as they arrive.
    #[command(after_help = filter::FILTER_AFTER_HELP)]
    Filter(filter::FilterArgs),
    /// Write a synthetic earthquake catalog (ETAS model) in the USGS CSV layout.
    #[cfg_attr(feature = "quakes", command(after_help = synth::SYNTH_AFTER_HELP))]
    Synth(synth::SynthArgs),
    /// Download a USGS (FDSN) event query of any length, in requests under its limit.
    #[cfg(feature = "quakes")]
    #[command(after_help = fetch::FETCH_AFTER_HELP)]
    Fetch(fetch::FetchArgs),
    /// Print the JSON Schema of a command's --format json output.
    Schema(schema::SchemaArgs),
    /// List every limiter: what it models, its burst and parameters, its rule and promise.
    Limiters(limiters::LimitersArgs),
    /// Print the configuration that runs a limit on nginx, envoy (ratelimit or local),
    /// Python's limits, Traefik or HAProxy, in that system's units.
    Config(config::ConfigArgs),
    /// Print a completion script for a shell: bash, zsh, fish, elvish or powershell.
    #[command(after_help = COMPLETIONS_AFTER_HELP)]
    Completions(CompletionsArgs),
    /// Print a manual page, in roff: ratelimit man replay > ratelimit-replay.1; or write
    /// them all: ratelimit man --dir DIR
    Man(man::ManArgs),
}

pub(super) const COMPLETIONS_AFTER_HELP: &str = "\
Install, for example:
  ratelimit completions bash > ~/.local/share/bash-completion/completions/ratelimit
  ratelimit completions zsh > ~/.zfunc/_ratelimit        # with fpath+=~/.zfunc
  ratelimit completions fish > ~/.config/fish/completions/ratelimit.fish";

/// `ratelimit completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn no_two_flags_of_a_command_share_a_name_or_a_short_letter() {
        // clap checks names, short letters and conflicts here, rather than when a user
        // first types the command that breaks them.
        super::Cli::command().debug_assert();
    }
}
