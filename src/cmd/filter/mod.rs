//! `ratelimit filter`: a limiter in a pipeline, deciding each line of stdin as it arrives.
//!
//! One thread reads stdin and stamps each line with the time it arrived, handing over at
//! once the lines that came together; this one decides each at that time, writes the
//! passed lines to stdout, holds a leaky queue's lines until they leave, and appends the
//! dropped ones to `--dropped`, each output written on a thread of its own ([`Output`]).
//! What is written goes out whenever the filter would wait for input, and after each line
//! to a terminal or with `--line-buffered`. The clock
//! is the wall clock at the start, carried on by a monotonic clock, so that it never runs
//! backwards under a limiter; with Redis, the server's clock decides, shared by every
//! process that uses it.

mod output;

use std::borrow::Cow;
use std::collections::VecDeque;
use std::fs::OpenOptions;
use std::io::{self, BufRead, IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use clap::Args;

use self::output::Output;
use crate::cli::args::{LiveLimitArgs, RedisArgs};
use crate::cli::diagnostics::diagnostics;
use crate::cli::empty_key::EmptyKeyArg;
use crate::cli::layer::{self, Layers};
use crate::engine::Backend;
use crate::engine::limit::Limit;
use crate::engine::live::{Live, MAX_LIVE_KEYS};
use crate::engine::live_limiter::{Clock, wait_micros};
use crate::engine::recorder::Settings;
use crate::engine::replay::Settled;
use crate::input::bounded::{LongRow, MOST_ROW};
use crate::input::catalog::ReadError;
use crate::input::cost::{Cost, parse_cost};
use crate::input::csv_line::LineReader;
use crate::input::header::find_column;
use crate::input::keys::wide;
use crate::render::outfile::Identity;
use crate::units::time::human_duration;

/// How often the filter looks for SIGINT while it waits.
const TICK: Duration = Duration::from_millis(50);

/// The most a leaky queue's admitted lines may hold, waiting to leave: the bound README
/// states.
pub const MOST_QUEUED: usize = 64 << 20;

/// What decides a filter's lines: its live engine, its one limiter's settings (none for
/// layers), and its key and cost columns.
type Decider = (Box<dyn Live>, Option<Settings>, Option<String>, Cost);

/// Settles what decides the lines: one limit, or layers, in memory or in Redis. The flags
/// part in one place, into a settled policy; its live engine is the backend's either way.
fn decider(args: &FilterArgs) -> Result<Decider> {
    let (settled, key, cost) = if args.limits.is_empty() {
        let settings = args.limit.settings("filter")?;
        let cost = args.cost.clone().unwrap_or_default();
        if let Some(why) = crate::engine::limit::cost_refused(&cost, [settings.algorithm], "--cost")
        {
            bail!(why);
        }
        (Settled::One(settings), args.key.clone(), cost)
    } else {
        let Layers { layers, key, cost } =
            layer::resolve(&args.limits, None, args.stop_counting_over_limit, "layers")?;
        (Settled::Layers { limits: args.limits.clone(), layers }, key, cost)
    };
    let backend = Backend::new(&settled.settings(), args.remote.target()?.as_ref(), None)?;
    let one = match settled {
        Settled::One(settings) => Some(settings),
        Settled::Layers { .. } => None,
    };
    Ok((backend.live(settled.policy())?, one, key, cost))
}

pub(crate) fn run(args: &FilterArgs) -> Result<ExitCode> {
    let (mut decider, settings, key, cost) = decider(args)?;
    let key = key.as_deref();
    let empty = args.empty_key.resolve(key.is_some())?;
    if let (Some(key), true) = (key, args.lines)
        && key != "line"
    {
        bail!("--lines has no columns: --key line makes each whole line its key")
    }
    if let (Cost::Column(_), true) = (&cost, args.lines) {
        bail!("--lines has no columns: --cost takes a whole number there");
    }
    let dropped = match &args.dropped {
        Some(path) => {
            let file = OpenOptions::new()
                .append(true)
                .create(true)
                .open(path)
                .with_context(|| format!("cannot open {} for --dropped", path.display()))?;
            let same = Identity::of_stdin().is_some_and(|stdin| {
                file.metadata().ok().as_ref().and_then(Identity::of) == Some(stdin)
            });
            if same {
                bail!(
                    "--dropped {} is the input: it would be written as it is read",
                    path.display()
                );
            }
            Some(file)
        }
        None => None,
    };
    let interrupted = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGINT, interrupted.clone())?;
    let lines = read_lines(!args.lines);
    let clock = Clock::start();
    let mut out = Output::stdout();
    let each_line = args.line_buffered || io::stdout().is_terminal();
    let mut dropped = (dropped.zip(args.dropped.clone())).map(|(f, p)| Output::dropped(f, p));
    let mut tally = Tally::default();
    let mut column = None;
    let mut cost_column = None;
    // The header, to see whether it comes again, and whether that was said.
    let (mut header, mut repeated): (Option<Vec<u8>>, bool) = (None, false);
    let mut csv = LineReader::new();
    let mut queue: VecDeque<(Instant, Vec<u8>)> = VecDeque::new();
    // The bytes of the lines in the queue.
    let mut queued = 0usize;
    // The lines that came together, and the next of them to decide.
    let (mut batch, mut at) = (Batch::default(), 0);
    // Only one limiter delays: layers decide at once.
    let delays = settings.filter(|s| s.algorithm.delays());
    let ended = loop {
        if interrupted.load(Ordering::Relaxed) {
            break false;
        }
        while let Some((due, line)) = queue.front() {
            if *due > Instant::now() {
                break;
            }
            out.line(line, &interrupted)?;
            queued -= line.len();
            queue.pop_front();
            if each_line {
                out.hand_over(&interrupted)?;
            }
        }
        let Some(&(arrived, from, to)) = batch.lines.get(at) else {
            // Nothing is left to decide: what was written goes out before the wait.
            out.hand_over(&interrupted)?;
            dropped.as_mut().map_or(Ok(()), |d| d.hand_over(&interrupted))?;
            let wait = queue
                .front()
                .map_or(TICK, |(due, _)| due.saturating_duration_since(Instant::now()));
            match lines.recv_timeout(wait.min(TICK)) {
                Ok(Ok(next)) => (batch, at) = (next, 0),
                Ok(Err(e)) => return Err(anyhow!(e).context("cannot read stdin")),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break true,
            }
            continue;
        };
        at += 1;
        let line = &batch.text[from..to];
        if !args.lines && line.is_empty() {
            // A blank line is no CSV record, as a replay's reader skips it too.
            continue;
        }
        if !args.lines && column.is_none() {
            // The header: it goes to both outputs, and names the key column.
            column = Some(header_column(&mut csv, line, key, "--key")?);
            if let Cost::Column(name) = &cost {
                cost_column = Some(header_column(&mut csv, line, Some(name), "--cost")?);
            }
            out.line(line, &interrupted)?;
            dropped.as_mut().map_or(Ok(()), |d| d.line(line, &interrupted))?;
            header = Some(line.to_vec());
            continue;
        }
        tally.lines += 1;
        if !args.lines && !repeated && header.as_deref() == Some(line) {
            // A header that comes again is likelier a plain line than a header.
            repeated = true;
            let _ = writeln!(
                diagnostics(),
                "ratelimit: note: line {} repeats line 1, which filter took for a CSV header: \
                 for plain lines, give --lines",
                tally.lines + 1
            );
        }
        let key_bytes = match (key, column) {
            (None, _) => Cow::Borrowed(&[][..]),
            (Some(key), Some(index)) => {
                Cow::Owned(field(&mut csv, line, index, tally.lines + 1, key)?)
            }
            (Some(_), None) => Cow::Borrowed(line),
        };
        let units = match (&cost, cost_column) {
            (Cost::Column(name), Some(index)) => {
                let text = field(&mut csv, line, index, tally.lines + 1, name)?;
                parse_cost(&text).map_err(|reason| ReadError::Field {
                    // The reader's own error, so that a bad cost reads alike everywhere.
                    name: "<stdin>".into(),
                    counts: "line",
                    line: tally.lines + 1,
                    field: name.clone(),
                    value: String::from_utf8_lossy(&text).into_owned(),
                    reason: reason.to_string(),
                })?
            }
            (Cost::Each(units), _) => *units,
            // The header comes first, and names the cost's column.
            (Cost::Column(name), None) => bail!("--cost {name}: no header was read"),
        };
        let key_bytes = key.map(|_| empty.value(&key_bytes));
        let decision = decider.decide_now(clock.at(arrived), key_bytes, units)?;
        if decision.passed {
            tally.passed += 1;
            let hold = delays.map_or(0, |s| wait_micros(decision.wait, s.rate));
            if hold > 0 {
                tally.delayed += 1;
                tally.longest = tally.longest.max(hold);
            }
            if hold == 0 && queue.is_empty() {
                out.line(line, &interrupted)?;
                if each_line {
                    out.hand_over(&interrupted)?;
                }
            } else {
                queued += line.len();
                if queued > MOST_QUEUED {
                    bail!(
                        "the leaky queue holds {} lines waiting to leave, past the {} MiB it may \
                         hold: a smaller --burst bounds it (at most b lines wait a key)",
                        queue.len() + 1,
                        MOST_QUEUED >> 20
                    );
                }
                queue.push_back((arrived + Duration::from_micros(hold), line.to_vec()));
            }
        } else {
            dropped.as_mut().map_or(Ok(()), |d| d.line(line, &interrupted))?;
        }
    };
    if ended {
        // The end of input: the queue leaves as it would have, unless SIGINT comes first.
        while let Some((due, line)) = queue.front() {
            if interrupted.load(Ordering::Relaxed) {
                break;
            }
            let now = Instant::now();
            if *due > now {
                thread::sleep((*due - now).min(TICK));
                continue;
            }
            out.line(line, &interrupted)?;
            out.hand_over(&interrupted)?;
            queue.pop_front();
        }
    }
    tally.unwritten = out.finish(&interrupted)?;
    if let Some(dropped) = &mut dropped {
        dropped.finish(&interrupted)?;
        tally.left_out = dropped.left_out();
    }
    tally.evicted = decider.evicted();
    tally.summary(queue.len(), clock.elapsed(), delays.is_some());
    Ok(ExitCode::SUCCESS)
}

/// What the filter did, for the summary.
#[derive(Default)]
struct Tally {
    lines: u64,
    passed: u64,
    delayed: u64,
    longest: u64,
    /// Passed lines stdout had not taken at SIGINT.
    unwritten: u64,
    /// Dropped lines left out of `--dropped` while its reader was behind.
    left_out: u64,
    /// Keys not back at their start evicted, the least recently used, past the bound.
    evicted: u64,
}

impl Tally {
    /// Prints the one-line summary on stderr.
    fn summary(&self, queued: usize, took: Duration, delays: bool) {
        let dropped = self.lines - self.passed;
        let micros = i64::try_from(took.as_micros()).unwrap_or(i64::MAX);
        let lines = if self.lines == 1 { "line" } else { "lines" };
        let mut line = format!(
            "ratelimit: filter: {} {lines} in {}: {} passed, {dropped} dropped",
            self.lines,
            human_duration(micros / 1000 * 1000),
            self.passed - wide(queued),
        );
        if delays {
            let longest = i64::try_from(self.longest).unwrap_or(i64::MAX);
            line += &format!(
                ", {} delayed (longest {})",
                self.delayed,
                human_duration(longest / 1000 * 1000)
            );
        }
        if queued > 0 {
            line += &format!(", {queued} still queued at SIGINT, not written");
        }
        if self.unwritten > 0 {
            line += &format!(", {} not taken by stdout at SIGINT", self.unwritten);
        }
        if self.evicted > 0 {
            line += &format!(
                ", {} keys evicted (the least recently used, past {MAX_LIVE_KEYS} at once)",
                self.evicted
            );
        }
        if self.left_out > 0 {
            line +=
                &format!(", {} left out of --dropped while its reader was behind", self.left_out);
        }
        // A summary that stderr cannot take is lost; the exit code is not.
        let _ = writeln!(diagnostics(), "{line}");
    }
}

/// Lines that arrived together: their text, one after another, and each one's span in it
/// (its line ending left out) with the time it arrived.
#[derive(Default)]
struct Batch {
    text: Vec<u8>,
    lines: Vec<(Instant, usize, usize)>,
}

/// The most lines, and about the most bytes, one batch holds.
const MOST_BATCHED: usize = 4096;
const MOST_BATCHED_BYTES: usize = 1 << 20;

/// Starts a thread that reads stdin line by line and sends each line, without its line
/// ending, with the time it arrived; a `csv` record whose quotes hold newlines is one line.
/// The lines already read when one ends go together (up to [`MOST_BATCHED`] lines and
/// [`MOST_BATCHED_BYTES`] bytes, or one longer line); a batch is sent as soon as stdin
/// holds no more, so a line that comes alone is sent at once. The channel holds a few
/// batches: a reader far ahead waits, and memory stays bounded.
fn read_lines(csv: bool) -> mpsc::Receiver<io::Result<Batch>> {
    let (send, lines) = mpsc::sync_channel(4);
    thread::spawn(move || {
        let mut stdin = io::BufReader::with_capacity(64 << 10, io::stdin().lock());
        // The line the next record starts on.
        let mut next = 1;
        let mut batch = Batch::default();
        loop {
            let start = batch.text.len();
            // A line may hold MOST_ROW bytes: one more says it holds too many.
            let mut read = (&mut stdin).take(MOST_ROW + 1).read_until(b'\n', &mut batch.text);
            // A CSV record holds newlines inside quotes: it ends at a newline after an even
            // number of quotes (an escaped quote, `""`, is two).
            while csv && matches!(read, Ok(n) if n > 0) && open_quote(&batch.text[start..]) {
                let room = (MOST_ROW + 1).saturating_sub(wide(batch.text.len() - start));
                read = (&mut stdin).take(room).read_until(b'\n', &mut batch.text);
            }
            let line = &batch.text[start..];
            if wide(line.len()) > MOST_ROW {
                read = Err(io::Error::other(format!("line {next}: {LongRow}")));
            }
            next += wide(memchr::memchr_iter(b'\n', line).count());
            match read {
                Ok(0) if line.is_empty() => {
                    let _ = send.send(Ok(batch));
                    return;
                }
                Ok(_) => {
                    let arrived = Instant::now();
                    // The line holds a byte at least: an empty read ended the input above.
                    let mut end = batch.text.len();
                    if batch.text[end - 1] == b'\n' {
                        end -= 1;
                        if end > start && batch.text[end - 1] == b'\r' {
                            end -= 1;
                        }
                    }
                    batch.lines.push((arrived, start, end));
                    // Reading more would wait for it: what came goes now.
                    let full =
                        batch.lines.len() == MOST_BATCHED || batch.text.len() >= MOST_BATCHED_BYTES;
                    if (stdin.buffer().is_empty() || full)
                        && send.send(Ok(std::mem::take(&mut batch))).is_err()
                    {
                        return;
                    }
                }
                Err(e) => {
                    let _ = send.send(Ok(batch));
                    let _ = send.send(Err(e));
                    return;
                }
            }
        }
    });
    lines
}

/// Whether a CSV record's text so far leaves a quoted field open.
fn open_quote(text: &[u8]) -> bool {
    text.iter().filter(|&&b| b == b'"').count() % 2 == 1
}

/// Finds the column `name` (that `flag` asks for) in a CSV header, as every reader does;
/// 0 (unused) without a name.
fn header_column(
    csv: &mut LineReader,
    header: &[u8],
    name: Option<&str>,
    flag: &str,
) -> Result<usize> {
    let Some(name) = name else { return Ok(0) };
    let names =
        csv.record(header).ok_or_else(|| anyhow!("<stdin>: line 1: the header is not CSV"))?;
    find_column(&names, name, &format!("(named by {flag})")).map_err(|problem| {
        // A "header" of one field is likelier a plain line.
        let hint = if names.len() == 1 {
            "; filter reads a CSV with a header unless given --lines, for plain lines"
        } else {
            ""
        };
        anyhow!("<stdin>: line 1: {problem}{hint}")
    })
}

/// Returns field `index` of CSV line `number`, the key column `key`.
fn field(
    csv: &mut LineReader,
    line: &[u8],
    index: usize,
    number: u64,
    key: &str,
) -> Result<Vec<u8>> {
    let width = csv.read(line).ok_or_else(|| anyhow!("<stdin>: line {number}: not a CSV row"))?;
    match csv.field(index) {
        Some(value) => Ok(value.to_vec()),
        None => bail!(
            "<stdin>: line {number}: field `{key}`: the row has {width} fields, and it is column {}",
            index + 1
        ),
    }
}

pub(crate) const FILTER_AFTER_HELP: &str = "\
Each line is decided at the time it arrives, and a passed line is written at once (lines
that come together are flushed together; --line-buffered flushes each); a
leaky-queue holds each admitted line until it leaves the queue, so the output is smoothed,
not only thinned. With --redis, the decision is made in Redis at the server's time, so that
any number of filters, on any number of machines, share one limit. At the end of input (or
on SIGINT) it prints one line of summary on stderr and exits 0.

Example:
  tail -F alerts.log | ratelimit filter --lines --rate 5/h --burst 5 | while read -r l; do notify \"$l\"; done";

/// `ratelimit filter`.
#[derive(Debug, Args)]
pub struct FilterArgs {
    #[command(flatten)]
    pub limit: LiveLimitArgs,

    /// One layer of several limits at once, given again for each, as replay takes them:
    /// a line passes only if every layer admits it, and a refused line charges no layer
    /// (not a leaky-queue layer, which delays). With --redis, each line is one atomic
    /// script call over every layer's keys.
    #[arg(long = "limit", id = "limits", value_name = "SPEC")]
    #[arg(conflicts_with_all = ["algo", "rate", "burst", "cost", "key"])]
    pub limits: Vec<Limit>,

    /// With --limit layers of envoy-ratelimit: count a refused request's hits only in the
    /// limits it is over, as envoy's STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT does; without
    /// it every limit counts them.
    #[arg(long, requires = "limits")]
    pub stop_counting_over_limit: bool,

    /// Read plain lines, rather than a CSV whose first line is its header.
    #[arg(long)]
    pub lines: bool,

    /// Flush each passed line to stdout as it is written [default: when stdout is a
    /// terminal]; else lines are flushed whenever the filter waits for input.
    #[arg(long)]
    pub line_buffered: bool,

    /// Give each distinct value of this column its own limit; with --lines, `--key line`
    /// makes each whole line its key.
    #[arg(short = 'k', long, value_name = "COLUMN")]
    pub key: Option<String>,

    #[command(flatten)]
    pub empty_key: EmptyKeyArg,

    /// What each line costs: a whole number for every line (--cost 3), or, in a CSV, the
    /// column that holds each line's cost in units (--cost total_tokens) [default: 1].
    #[arg(long, value_name = "COLUMN|N")]
    pub cost: Option<Cost>,

    /// Append the dropped lines to FILE (a CSV's header first).
    #[arg(long, value_name = "FILE")]
    pub dropped: Option<PathBuf>,

    #[command(flatten)]
    pub remote: RedisArgs,
}
