//! A command run inside another program (the Python package): its arguments are the
//! command line's, its input may be handed over (Arrow data), and what it would print, and
//! each row's decision, are returned instead; and the replay in partitions behind Spark
//! and Dask (the files beside this one), which is not a command.

use std::sync::mpsc;

use anyhow::{Result, anyhow, bail};

pub use crate::engine::live::Answer;
use crate::engine::live::Live;
use crate::units::time::Timestamp;

mod blocks;
mod chunks;
mod layered_parts;
mod layers_beside;
mod parts_plan;
mod replay_parts;
mod stream_parts;

pub use self::blocks::BlockRows;
pub use self::chunks::{chunk_lines, merge_chunks};
use self::layered_parts::LayeredPlan;
pub use self::layered_parts::layers_key;
pub use self::layers_beside::{Beside, GlobalLayer, layers_beside};
pub use self::parts_plan::Part;
pub use self::replay_parts::{decide_range, range_line, range_starts, range_transfer};
pub use self::stream_parts::stream_part;
use crate::cli::diagnostics::{noted, stoppable};
use crate::cmd::{Cli, clap_exit, dispatch};
use crate::input::catalog::{ReadError, Source};
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

/// What kind of failure an error of this module's is, for a caller that raises a type of
/// its own for each (the Python package's exceptions).
#[derive(Debug)]
pub enum Failure<'a> {
    /// The input could not be read: its name, and where, and which field.
    Input(&'a ReadError),
    /// An argument the command takes no flag for: the flag as given (`--brust`), and the
    /// one it may have meant (`--burst`).
    Unknown(&'a str, Option<&'a str>),
    /// Redis, or the way to it, failed.
    Backend,
    /// The system refused to open, read or write a file.
    Io(std::io::ErrorKind),
    /// What was asked cannot be done: a limit, an option's value, options together.
    Policy,
}

/// Tells what kind of failure `err` is: by the first of its causes whose kind is known,
/// from the outermost; what is none of them is what was asked.
pub fn failure(err: &anyhow::Error) -> Failure<'_> {
    for cause in err.chain() {
        if let Some(read) = cause.downcast_ref::<ReadError>() {
            return match read {
                ReadError::Io { error, .. } | ReadError::Rewind { error, .. } => {
                    Failure::Io(error.kind())
                }
                _ => Failure::Input(read),
            };
        }
        if let Some(unknown) = cause.downcast_ref::<UnknownFlag>() {
            return Failure::Unknown(&unknown.flag, unknown.suggested.as_deref());
        }
        if cause.is::<crate::engine::redis::Unavailable>() {
            return Failure::Backend;
        }
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            return Failure::Io(io.kind());
        }
    }
    Failure::Policy
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

/// One limit decided live, event by event, as `filter` decides lines: in memory at the
/// times given, or in Redis at the server's clock, shared with every process that uses
/// the same keys. It may move between threads, and a caller may wait for it while it
/// holds nothing (Python's GIL): Redis is asked from a thread of the limiter's own.
pub struct Limiter {
    decider: Decider,
    settings: crate::engine::recorder::Settings,
    /// The time of the last decision, in memory: none may come before it.
    last: Option<Timestamp>,
    clock: crate::cmd::filter::Clock,
    /// The value read as an empty key, if `--empty-key` gives one.
    empty: crate::input::keys::EmptyKey,
}

/// Who decides a live limit's events.
enum Decider {
    /// This process, in memory.
    Here(Box<dyn Live + Send>),
    /// Redis, asked by a thread that holds the connection: each question goes to it, and
    /// its answer comes back.
    Remote {
        ask: mpsc::SyncSender<(Option<Vec<u8>>, u64)>,
        answers: mpsc::Receiver<Result<Option<Answer>>>,
    },
}

impl Limiter {
    /// Makes the limit that `args` give as `ratelimit filter`'s flags, the program's name
    /// first: `--algo`, `--rate`, `--burst`, their parameters, `--redis`.
    pub fn new(args: &[String]) -> Result<Limiter> {
        let cli: Cli = parse(args)?;
        let Some(filter) = cli.command.filter() else { bail!("a live limit takes filter's flags") };
        if !filter.limits.is_empty() {
            bail!("a live limit is one limit: several at once are replay's --limit layers");
        }
        let settings = filter.limit.settings("filter")?;
        let empty = filter.empty_key.resolve(true)?;
        let decider = if filter.remote.redis.is_empty() {
            Decider::Here(crate::engine::live::in_memory(&settings)?)
        } else {
            remote(cli)?
        };
        let clock = crate::cmd::filter::Clock::start();
        Ok(Limiter { decider, settings, last: None, clock, empty })
    }

    /// Decides on an event of key `key` (`None` for one limit for all) that costs `cost`, at `now` µs
    /// after 1970: in memory, the time given (the clock's if none), which must not go
    /// back; in Redis, the server's clock, and `now` must not be given.
    pub fn decide_at(&mut self, now: Option<i64>, key: Option<&[u8]>, cost: u64) -> Result<Answer> {
        let now = match now {
            Some(micros) => match Timestamp::from_micros(micros) {
                Some(now) => Some(now),
                None => bail!("{micros} µs from 1970 is past the years 0000-9999"),
            },
            None => None,
        };
        self.decide(now, key, cost)
    }

    /// Returns how long an event this limit admitted with `answer` waits, in µs, rounded
    /// up: only a leaky queue (and nginx without nodelay) delays.
    pub fn wait_micros(&self, answer: &Answer) -> u64 {
        crate::cmd::filter::micros_of(answer.decision.wait, self.settings.rate)
    }

    /// Decides as [`decide_at`](Limiter::decide_at) does, at `now`.
    pub fn decide(
        &mut self,
        now: Option<Timestamp>,
        key: Option<&[u8]>,
        cost: u64,
    ) -> Result<Answer> {
        let remote = matches!(self.decider, Decider::Remote { .. });
        let now = match (now, remote) {
            (Some(_), true) => bail!("Redis decides at its own clock: give no time"),
            (Some(now), false) => now,
            (None, _) => self.clock.at(std::time::Instant::now()),
        };
        let algorithms = [self.settings.algorithm];
        let cost_given = crate::input::cost::Cost::Each(cost);
        if let Some(why) = crate::engine::limit::cost_refused(&cost_given, algorithms, "cost") {
            bail!(why);
        }
        if let Some(last) = self.last.filter(|&last| now < last) {
            bail!(
                "{now} is before {last}, the time of the last decision: a limit's clock never goes back"
            );
        }
        self.last = Some(now);
        let key = key.map(|key| self.empty.value(key));
        let answer = match &mut self.decider {
            Decider::Here(live) => live.answer_now(now, key, cost)?.one(),
            Decider::Remote { ask, answers } => {
                let gone = || anyhow::anyhow!("the thread that asks Redis has ended");
                ask.send((key.map(<[u8]>::to_vec), cost)).map_err(|_| gone())?;
                answers.recv().map_err(|_| gone())??
            }
        };
        answer.ok_or_else(|| anyhow::anyhow!("this limit cannot say what remains"))
    }
}

/// Starts the thread that asks Redis the limit `cli` gives, and returns how to ask it. The
/// connection lives and dies with the thread, which ends when the limiter is dropped.
fn remote(cli: Cli) -> Result<Decider> {
    let (ask, questions) = mpsc::sync_channel::<(Option<Vec<u8>>, u64)>(0);
    let (answer, answers) = mpsc::sync_channel(1);
    std::thread::Builder::new().name("ratelimit-redis".into()).spawn(move || {
        let made = cli.command.filter().map(crate::cmd::filter::decider);
        let mut live = match made {
            Some(Ok((live, ..))) => {
                let _ = answer.send(Ok(None));
                live
            }
            Some(Err(err)) => return drop(answer.send(Err(err))),
            None => return,
        };
        let clock = crate::cmd::filter::Clock::start();
        for (key, cost) in questions {
            // Redis decides at its clock; the time given names the call only.
            let now = clock.at(std::time::Instant::now());
            let found = live.answer_now(now, key.as_deref(), cost).map(|answered| answered.one());
            if answer.send(found).is_err() {
                return;
            }
        }
    })?;
    // The first answer says whether the connection was made.
    match answers.recv() {
        Ok(Ok(_)) => Ok(Decider::Remote { ask, answers }),
        Ok(Err(err)) => Err(err),
        Err(_) => bail!("the thread that asks Redis ended before it connected"),
    }
}

/// Replays the rows of `given`, which hold whole keys, by `args` (`ratelimit replay`'s
/// flags, the program's name first: `--key`, or `--limit` layers all keyed by one
/// column), and returns what they tell.
pub fn replay_part(args: &[String], given: Source) -> Result<Part> {
    match LayeredPlan::of(args)? {
        Some(plan) => plan.part(given),
        None => replay_parts::replay_part(args, given),
    }
}

/// Returns a line for each block in `rows` (sorted by block, then time), as
/// [`merge_parts`] reads them: with layers, each layer's.
pub fn block_lines(args: &[String], rows: &BlockRows) -> Result<Vec<String>> {
    match LayeredPlan::of(args)? {
        Some(plan) => plan.block_lines(rows),
        None => replay_parts::block_lines(args, rows),
    }
}

/// Merges every part's summary, and every block's line, into what `ratelimit replay
/// --format json` prints for all the rows, as a JSON object.
pub fn merge_parts(args: &[String], parts: &[String], blocks: &[String]) -> Result<Vec<u8>> {
    match LayeredPlan::of(args)? {
        Some(plan) => plan.merge(parts, blocks),
        None => replay_parts::merge_parts(args, parts, blocks),
    }
}
