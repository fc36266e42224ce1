//! Resolving the command line: each group of arguments settles its own defaults and
//! conflicts, once, before anything is read; each command's own options stay where clap
//! put them.

use std::io::{self, IsTerminal};
use std::path::Path;
use std::time::Duration;

use anyhow::{Result, bail};

use crate::cli::args::{
    ColorChoice, FleetArgs, InputArgs, LimitArgs, LiveLimitArgs, RateArgs, RedisArgs, ShareMode,
};
use crate::engine::fleet_ask::{self, FleetAsk};
use crate::engine::limit::Limit;
use crate::engine::recorder::Settings;
use crate::engine::redis::RedisTarget;
use crate::input::asked::{Asked, Names};
use crate::input::catalog::{ReadOptions, Source};
use crate::input::cost::Cost;
use crate::limiter::Algorithm;
use crate::render::export::Style;
use crate::render::outfile::{Identity, Output};
use crate::sample;
use crate::units::time::Span;

pub use crate::engine::limit::MAX_BURST;

/// The most rates `min-bucket` takes, in all its `--rate` lists and ranges.
pub const MAX_RATES: usize = crate::units::rate::MAX_RANGE;

/// How tables are styled on stdout and on stderr: colored only for a terminal, unless
/// `--color` says otherwise, or the environment does: anstream reads `NO_COLOR`,
/// `CLICOLOR`, `CLICOLOR_FORCE` and `TERM=dumb` as other well-made tools do.
#[derive(Clone, Copy, Debug)]
pub struct Styles {
    /// For tables on stdout.
    pub stdout: Style,
    /// For tables on stderr.
    pub stderr: Style,
}

impl Styles {
    /// Settles the colors from `--color`, the environment and the terminals.
    pub fn resolve(choice: ColorChoice) -> Styles {
        // Tables are built as strings, padded by width before they are written, so the
        // colors are chosen here once, rather than stripped by an anstream writer after.
        let color = |auto: anstream::ColorChoice| match choice {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => auto != anstream::ColorChoice::Never,
        };
        Styles {
            stdout: Style::new(color(anstream::AutoStream::choice(&io::stdout()))),
            stderr: Style::new(color(anstream::AutoStream::choice(&io::stderr()))),
        }
    }
}

/// The input of a command: where the catalog comes from, and what to read from it.
#[derive(Debug)]
pub struct Input {
    /// Where the catalog comes from.
    pub source: Source,
    /// What to read from it.
    pub read: ReadOptions,
    /// A note for stderr about the input's choice, when the user did not make it.
    pub note: Option<&'static str>,
}

impl LiveLimitArgs {
    /// Settles the one limiter; `command` names the command that needs it, for the error.
    pub fn settings(&self, command: &str) -> Result<Settings> {
        let Some(rate) = self.rate else { bail!("{command} needs --rate, or --limit") };
        RateArgs { rate, shape: self.shape.clone() }.settings(self.algo, None, true)
    }
}

impl RateArgs {
    /// Settles one limiter's settings, with a window of `window` (the rate's period if
    /// `None`). A burst given to a limiter without one is an error when the user named
    /// that limiter (`strict`), and ignored when it is one of several.
    pub fn settings(
        &self,
        algorithm: Algorithm,
        window: Option<Span>,
        strict: bool,
    ) -> Result<Settings> {
        let limit = Limit {
            algorithm,
            rate: self.rate,
            burst: self.shape.burst,
            cost: Cost::default(),
            key: None,
            params: self.shape.given(),
        };
        let settings = limit.settings(window, strict, "--")?;
        check_window(window)?;
        Ok(settings)
    }
}

/// Refuses a `--window` of zero.
pub fn check_window(window: Option<Span>) -> Result<()> {
    if window.is_some_and(Span::is_zero) {
        bail!("--window must be longer than zero");
    }
    Ok(())
}

impl LimitArgs {
    /// Settles the settings of several limiters side by side, in order: a burst goes to
    /// those that have one.
    pub fn side_by_side(&self, algorithms: &[Algorithm]) -> Result<Vec<Settings>> {
        algorithms.iter().map(|&a| self.size.settings(a, self.window, false)).collect()
    }
}

impl InputArgs {
    /// Settles the input: the file, stdin or the sample, and the rows to keep, with keys
    /// from `key_column` if given, with the flag that asked for it.
    pub fn resolve(&self, key_column: Option<(&str, &'static str)>) -> Result<Input> {
        let mut note = None;
        let source = match &self.file[..] {
            _ if self.sample => sample::source(),
            [path] if path == Path::new("-") => Source::Stdin,
            [path] => Source::of_paths(std::slice::from_ref(path))?,
            [] if io::stdin().is_terminal() => {
                note = Some(sample::NOTE);
                sample::source()
            }
            [] => Source::Stdin,
            paths if paths.iter().any(|p| p == Path::new("-")) => {
                bail!("- (standard input) is read alone, not with other files")
            }
            paths => Source::of_paths(paths)?,
        };
        let mut read = self.asked().settle(&source, key_column, Names::Flags)?;
        // Only a person at a terminal wants to see a bar; it goes to stderr.
        read.progress = super::diagnostics::progress().then_some(crate::render::progress::bar);
        Ok(Input { source, read, note })
    }

    /// What the flags ask to read, as given.
    fn asked(&self) -> Asked {
        #[cfg(feature = "quakes")]
        let min_mag = self.min_mag.map(|m| m.0);
        #[cfg(not(feature = "quakes"))]
        let min_mag = None;
        Asked {
            format: self.input_format,
            delimiter: self.delimiter,
            no_headers: self.no_headers,
            log_format: self.log_format.clone(),
            time_column: self.time_column.clone(),
            time_format: self.time_format.clone(),
            time_zone: self.time_zone.clone(),
            skip_bad: self.skip_bad,
            threads: self.threads.map(usize::from),
            since: self.since,
            until: self.until,
            min_mag,
            at_least: self.at_least.clone(),
            cost: self.cost.clone(),
            empty_key: self.empty_key.value.clone(),
            ties: self.ties.unwrap_or_default(),
        }
    }
}

impl Input {
    /// Refuses an output that would overwrite this input, before anything is read.
    pub fn check_output(&self, output: &Output) -> Result<()> {
        let of = |path: &std::path::PathBuf| {
            std::fs::metadata(path).ok().as_ref().and_then(Identity::of)
        };
        match &self.source {
            Source::Path(path) => output.check_not_input(of(path).as_ref(), &self.source.name()),
            Source::Stdin => output.check_not_input(Identity::of_stdin().as_ref(), "<stdin>"),
            Source::Files(paths) => paths.iter().try_for_each(|path| {
                output.check_not_input(of(path).as_ref(), &path.display().to_string())
            }),
            _ => output.check_not_input(None, &self.source.name()),
        }
    }
}

impl FleetArgs {
    /// The fleet the flags ask for, as given.
    pub fn asked(&self) -> FleetAsk {
        FleetAsk {
            servers: self.servers,
            route: self.route.clone(),
            seed: self.seed,
            share: self.share.map(|share| match share {
                ShareMode::Local => fleet_ask::ShareMode::Local,
                ShareMode::Split => fleet_ask::ShareMode::Split,
                ShareMode::Synced => fleet_ask::ShareMode::Synced,
            }),
            sync: self.sync.clone(),
        }
    }
}

impl RedisArgs {
    /// Settles where limiters run in Redis, if anywhere.
    pub fn target(&self) -> Result<Option<RedisTarget>> {
        let micros = u64::try_from(self.redis_timeout.as_micros()).unwrap_or(0);
        if micros == 0 {
            bail!("--redis-timeout must be longer than zero");
        }
        let timeout = Duration::from_micros(micros);
        let prefix = &self.redis_prefix;
        Ok((!self.redis.is_empty()).then(|| RedisTarget {
            urls: self.redis.clone(),
            prefix: prefix.clone(),
            timeout,
        }))
    }
}
