//! A command run inside another program (the Python package): its arguments are the
//! command line's, its input may be handed over (Arrow data), and what it would print, and
//! each row's decision, are returned instead.

use std::cell::RefCell;

use anyhow::{Result, bail};

use super::{Cli, dispatch, parse};
use crate::input::catalog::{Rows, Source};
use crate::render::outfile;

thread_local! {
    /// Each kept row's decisions, while a command that keeps them runs on this thread.
    static DECISIONS: RefCell<Option<Decisions>> = const { RefCell::new(None) };
}

/// Each row's decision: for a table handed over, one per row of it, `None` for a row that
/// made no event (left out by a filter); for a file, one per event, in the order of its
/// rows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Decisions(pub Vec<Option<bool>>);

/// What a command run by [`call`] gave.
#[derive(Debug)]
pub struct Answer {
    /// What it would have printed on stdout.
    pub stdout: Vec<u8>,
    /// Each row's decision, if asked for and the command decides rows (`replay`).
    pub decisions: Option<Decisions>,
}

/// Runs the command that `args` give (the program's name first, as on the command line),
/// reading `given` instead of a FILE if given, and returns what it would have printed on
/// stdout; with `decisions`, `replay` keeps each row's decision too. Notes on stderr are
/// not written. An error is the command's, as the program prints it (see
/// [`crate::error_line`]).
pub fn call(args: &[String], given: Option<Source>, decisions: bool) -> Result<Answer> {
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
    DECISIONS.with(|kept| *kept.borrow_mut() = None);
    let (ran, stdout) = outfile::captured(|| dispatch(cli));
    let decisions = DECISIONS.with(|kept| kept.borrow_mut().take());
    ran?;
    Ok(Answer { stdout, decisions })
}

/// Keeps each row's decision, `trace` holding one for each row in the rows' order, for the
/// [`call`] that runs this thread's command.
pub(crate) fn keep_in_order(trace: &[bool]) {
    let decisions = trace.iter().map(|&passed| Some(passed)).collect();
    DECISIONS.with(|kept| *kept.borrow_mut() = Some(Decisions(decisions)));
}

/// Keeps each row's decision, `trace` holding one for each of `rows` in time order, for
/// the [`call`] that runs this thread's command.
pub(crate) fn keep(rows: &Rows, trace: &[bool], source: &Source) {
    let decisions = match source {
        // A table's rows are kept as their numbers.
        #[cfg(feature = "arrow")]
        Source::Arrow(data) => {
            let mut each = vec![None; usize::try_from(data.rows()).unwrap_or(0)];
            for ((_, text), &passed) in rows.iter().zip(trace) {
                let row = std::str::from_utf8(text).ok().and_then(|t| t.parse::<usize>().ok());
                if let Some(slot) = row.and_then(|row| each.get_mut(row)) {
                    *slot = Some(passed);
                }
            }
            each
        }
        // A file's rows are stored in the order they came.
        _ => {
            let mut each: Vec<(usize, bool)> =
                rows.places().zip(trace).map(|(place, &passed)| (place, passed)).collect();
            each.sort_unstable_by_key(|&(place, _)| place);
            each.into_iter().map(|(_, passed)| Some(passed)).collect()
        }
    };
    DECISIONS.with(|kept| *kept.borrow_mut() = Some(Decisions(decisions)));
}
