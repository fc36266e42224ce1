//! A command run inside another program (the Python package's `report`): its arguments
//! are the command line's, its input may be handed over (Arrow data), and what it would
//! print, and each row's decision, are returned instead.

use anyhow::{Result, anyhow, bail};

use crate::cli::diagnostics::{noted, stoppable};
use crate::cmd::{Cli, clap_exit, dispatch};
use crate::input::catalog::Source;
pub use crate::input::progress::Stop;
pub use crate::render::decisions::{self, Decisions};
use crate::render::outfile;
use clap::Parser;
use clap::error::{ContextKind, ContextValue, ErrorKind};

/// What a command run by [`call`] gave.
#[derive(Debug)]
pub struct Output {
    /// What it would have printed on stdout.
    pub stdout: Vec<u8>,
    /// Each row's decision, if asked for and the command decides rows (`replay`).
    pub decisions: Option<Decisions>,
    /// The notes it would have written on stderr, a line each, without the program's name.
    pub notes: Vec<String>,
}

/// Runs the command that `args` give (the program's name first, as on the command line),
/// reading `given` instead of a FILE if given, and returns what it would have printed on
/// stdout; with `decisions`, `replay` keeps each row's decision too. Notes on stderr are
/// not written, but returned. Its reads stop, with an error, once `stop` is raised (from
/// another thread: a caller's user pressed Ctrl-C). An error is the command's, as the
/// program prints it (see [`crate::error_line`]).
pub fn call(args: &[String], given: Option<Source>, decisions: bool, stop: Stop) -> Result<Output> {
    // Ctrl-C is the caller's: it stops the reads through `stop`.
    outfile::host_owns_signals();
    let mut cli: Cli = parse(args)?;
    cli.quiet = true;
    if let Some(source) = given {
        match cli.command.input_mut() {
            Some(input) => input.given = Some(source),
            None => bail!("this command reads no catalog"),
        }
    }
    if decisions {
        match cli.command.replay_mut() {
            Some(replay) => replay.keep_decisions = true,
            None => bail!("only replay decides rows"),
        }
    }
    let run = || decisions::kept(|| outfile::captured(|| dispatch(cli)));
    let (((ran, stdout), decisions), notes) = noted(|| stoppable(stop, run));
    ran?;
    Ok(Output { stdout, decisions, notes })
}

/// Parses `args` as the command line, for a program that runs a command itself: help is
/// an error too, as there is no terminal to print it on.
pub(crate) fn parse(args: &[String]) -> Result<Cli> {
    Cli::try_parse_from(args).map_err(|err| {
        // A flag the command has not: kept, for a caller that names it its own way.
        let unknown = match (err.kind(), err.get(ContextKind::InvalidArg)) {
            (ErrorKind::UnknownArgument, Some(ContextValue::String(flag))) => Some(flag.clone()),
            _ => None,
        };
        let suggested = match err.get(ContextKind::SuggestedArg) {
            Some(ContextValue::String(flag)) => Some(flag.clone()),
            _ => None,
        };
        match (clap_exit(err), unknown) {
            (Err(err), Some(flag)) => anyhow::Error::new(UnknownFlag { flag, suggested, err }),
            (Err(err), None) => err,
            (Ok(_), _) => anyhow!("help and version are the command line's"),
        }
    })
}

/// The flag an error of this module's names as one the command has not (`--brust`), and
/// the one it may have meant (`--burst`), for a caller that names arguments its own way;
/// `None` for any other error, whose kind the engine's [`Error::of`](crate::engine::error::Error::of) says.
pub fn unknown_flag(err: &anyhow::Error) -> Option<(&str, Option<&str>)> {
    let unknown = err.chain().find_map(|cause| cause.downcast_ref::<UnknownFlag>())?;
    Some((&unknown.flag, unknown.suggested.as_deref()))
}

/// A flag the command has not, as given (`--brust`), with the command line's error.
#[derive(Debug)]
pub struct UnknownFlag {
    /// The flag.
    pub(super) flag: String,
    /// The flag it may be a misspelling of.
    pub(super) suggested: Option<String>,
    /// What the command line says of it.
    pub(super) err: anyhow::Error,
}

impl std::fmt::Display for UnknownFlag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&self.err, f)
    }
}

impl std::error::Error for UnknownFlag {}
