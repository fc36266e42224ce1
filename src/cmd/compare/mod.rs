//! `ratelimit compare`: limiters side by side over the same events, in one read; on a
//! fleet, the ways of sharing a limit side by side too; with `--limit`, whole
//! configurations (`side_by_side.rs`).

mod side_by_side;

use std::io::{BufWriter, Write};
use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::{Args, ValueEnum};

use crate::cli::args::{JobArgs, OutputArgs, UnlessLimits};
use crate::cli::config::Styles;
use crate::cli::notes::say_notes;
use crate::engine::limit::Limit;
use crate::engine::side_by_side::KeysKept;
use crate::limiter::Algorithm;
use crate::render::export::{self, Compared};
use crate::render::outfile::stdout;

pub(super) fn run(args: &CompareArgs, styles: &Styles) -> Result<ExitCode> {
    if !args.configurations.is_empty() {
        let asked = side_by_side::Asked {
            specs: &args.configurations,
            job: &args.job,
            emit_changed: args.emit == Some(CompareEmit::Changed),
            by_key: args.by_key.then(|| args.only.map_or(KeysKept::All, KeysOnly::kept)),
            header: !args.no_header,
            output: &args.output,
        };
        return side_by_side::run(&asked, styles);
    }
    let Some(limit) = args.size.limit() else {
        bail!(
            "compare needs --rate RATE (the limiters at one rate), or --limit SPEC once for \
             each whole configuration"
        );
    };
    let input = args.job.input()?;
    let mut algorithms: Vec<Algorithm> = Vec::new();
    for &algorithm in &args.algo {
        if !algorithms.contains(&algorithm) {
            algorithms.push(algorithm);
        }
    }
    if algorithms.is_empty() {
        algorithms = Algorithm::ALL.into_iter().filter(|a| !a.is_system()).collect();
    }
    // One limiter on a fleet, with no mode chosen: the modes side by side.
    let settings = limit.side_by_side(&algorithms)?;
    let job = args.job.job(input, settings, true)?;
    let (source, read) = (&job.input.source, &job.input.read);
    let found =
        crate::engine::compare::limiters(&job.settings, source, read, &job.backend, job.top)?;
    say_notes(&job.input, &found.notes);
    let (reports, across) = (&found.found.lanes, &found.found.across);
    let mut out = BufWriter::new(stdout());
    let compared = Compared { lanes: reports, across };
    export::write(&mut out, args.output.format, styles.stdout, &compared)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `ratelimit compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    #[command(flatten)]
    pub job: JobArgs,

    /// The limiters to compare [default: all six]; repeat it, or separate names with
    /// commas. With --servers and one limiter but no --share, the share modes are
    /// compared instead: local, split, and synced at each --sync (default 1m).
    #[arg(short = 'a', long, value_parser = crate::cli::algorithm_parser(), value_name = "ALGO", value_delimiter = ',')]
    pub algo: Vec<Algorithm>,

    #[command(flatten)]
    pub size: UnlessLimits,

    /// A whole configuration, as replay's --limit writes a layer: algo=, rate=, burst=,
    /// key=, cost= and a system's own parameters, in its own notation
    /// (`algo=nginx,rate=10r/s,burst=20,nodelay,key=remote_addr`). Give it once for each;
    /// they decide the same events side by side, each on its own, and with two the
    /// result also says what changes from the first to the second.
    #[arg(long = "limit", id = "limits", value_name = "SPEC")]
    #[arg(conflicts_with_all = ["algo", "rate", "burst", "delay", "nodelay", "dry_run", "window", "cost", "key", "servers"])]
    pub configurations: Vec<Limit>,

    /// With two configurations: write to stdout the rows whose decision changes, each with
    /// both decisions (two more columns of a CSV, or a prefix of a log line), and the
    /// result to stderr.
    #[arg(long, value_enum, value_name = "WHICH", requires = "limits")]
    pub emit: Option<CompareEmit>,

    /// With --emit: leave out the CSV or TSV header.
    #[arg(long, requires = "emit")]
    pub no_header: bool,

    /// With two configurations and a key: one row a key (its events, what each
    /// configuration drops of them, the change, and whether it is newly throttled or no
    /// longer throttled), the most newly dropped first, then by name, IP addresses in
    /// numeric order; as a table, CSV or JSON.
    #[arg(long, requires = "limits", conflicts_with = "emit")]
    pub by_key: bool,

    /// With --by-key: keep only these keys.
    #[arg(long, value_enum, value_name = "WHICH", requires = "by_key")]
    pub only: Option<KeysOnly>,

    #[command(flatten)]
    pub output: OutputArgs,
}

/// Which keys `compare --by-key` keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum KeysOnly {
    /// Those with an event whose decision changes.
    Changed,
    /// Those the first configuration never throttled and the second does.
    NewlyThrottled,
    /// Those the first configuration throttled and the second never does.
    NoLongerThrottled,
}

impl KeysOnly {
    fn kept(self) -> KeysKept {
        match self {
            KeysOnly::Changed => KeysKept::Changed,
            KeysOnly::NewlyThrottled => KeysKept::NewlyThrottled,
            KeysOnly::NoLongerThrottled => KeysKept::NoLongerThrottled,
        }
    }
}

/// Which rows `compare --emit` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum CompareEmit {
    /// The rows the two configurations decide differently.
    Changed,
}
