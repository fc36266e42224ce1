//! `filter`'s outputs, each written on a thread of its own: a reader that stalls holds up
//! only what goes to it, and SIGINT still ends the filter.
//!
//! Lines are gathered in a batch and handed to the output's thread, which writes and
//! flushes each; at most [`MOST_WAITING`] batches wait there. Past that, stdout makes the
//! filter wait, as a pipeline does (the passed lines are what it is for), and `--dropped`
//! leaves its lines out until its reader catches up, and says so: a side stream never
//! stops the main one.

use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, SyncSender, TrySendError};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use anyhow::{Result, anyhow};

use crate::cli::diagnostics::diagnostics;
use crate::message::io_reason;

/// How many batches may wait for an output's thread; with [`BATCH`], about 1 MiB.
pub const MOST_WAITING: usize = 16;

/// How many bytes of lines a batch gathers before it is handed over (a longer line makes a
/// batch of its own).
const BATCH: usize = 64 << 10;

/// How long the filter waits, at a time, for an output's thread to take a batch: std's
/// bounded channel has no send that gives up after a while, so a full one is tried again.
const RETRY: Duration = Duration::from_millis(1);

/// How long an output that ends on an error waits for its reader to take what is left.
const LAST_WAIT: Duration = Duration::from_secs(1);

/// An output written on a thread of its own.
pub(super) struct Output {
    /// The lines gathered, not yet handed over, and how many they are (a CSV record may
    /// hold newlines).
    batch: (Vec<u8>, u64),
    /// Lines gathered, in all.
    lines: u64,
    /// Lines the thread has written, in all.
    written: Arc<AtomicU64>,
    send: Option<SyncSender<(Vec<u8>, u64)>>,
    thread: Option<JoinHandle<io::Result<()>>>,
    /// `--dropped`'s file, for its messages; `None` for stdout.
    path: Option<PathBuf>,
    /// Lines of `--dropped` left out while its reader was behind.
    left_out: u64,
}

impl Output {
    /// Returns stdout, written on a thread that locks it there.
    pub(super) fn stdout() -> Output {
        Output::spawn(crate::render::outfile::stdout, None)
    }

    /// Returns `--dropped`'s `file`, at `path`.
    pub(super) fn dropped(file: std::fs::File, path: PathBuf) -> Output {
        Output::spawn(move || file, Some(path))
    }

    fn spawn<W: Write>(open: impl FnOnce() -> W + Send + 'static, path: Option<PathBuf>) -> Output {
        let (send, batches) = mpsc::sync_channel::<(Vec<u8>, u64)>(MOST_WAITING);
        let written = Arc::new(AtomicU64::new(0));
        let count = written.clone();
        let thread = thread::spawn(move || {
            let mut out = open();
            for (batch, lines) in batches {
                out.write_all(&batch)?;
                out.flush()?;
                count.fetch_add(lines, Ordering::Relaxed);
            }
            Ok(())
        });
        Output {
            batch: (Vec::new(), 0),
            lines: 0,
            written,
            send: Some(send),
            thread: Some(thread),
            path,
            left_out: 0,
        }
    }

    /// Adds a line; it goes out with the batch.
    pub(super) fn line(&mut self, line: &[u8], interrupted: &AtomicBool) -> Result<()> {
        self.batch.0.extend_from_slice(line);
        self.batch.0.push(b'\n');
        self.batch.1 += 1;
        self.lines += 1;
        if self.batch.0.len() >= BATCH { self.hand_over(interrupted) } else { Ok(()) }
    }

    /// Hands the lines gathered to the output's thread. stdout waits for room, until
    /// SIGINT; `--dropped` leaves the batch out if there is none, and says so once.
    pub(super) fn hand_over(&mut self, interrupted: &AtomicBool) -> Result<()> {
        if self.batch.1 == 0 {
            return Ok(());
        }
        let Some(send) = &self.send else {
            // `--dropped`'s reader went away: its lines are no longer written.
            self.batch = (Vec::new(), 0);
            return Ok(());
        };
        let mut batch = std::mem::take(&mut self.batch);
        loop {
            match send.try_send(batch) {
                Ok(()) => return Ok(()),
                Err(TrySendError::Full(back)) if self.path.is_some() => {
                    if self.left_out == 0 {
                        let _ = writeln!(
                            diagnostics(),
                            "ratelimit: note: the reader of --dropped {} is behind; dropped \
                             lines are left out of it while it is",
                            self.name()
                        );
                    }
                    self.left_out += back.1;
                    return Ok(());
                }
                Err(TrySendError::Full(back)) => {
                    if interrupted.load(Ordering::Relaxed) {
                        // Kept, to be counted as not written.
                        self.batch = back;
                        return Ok(());
                    }
                    batch = back;
                    thread::sleep(RETRY);
                }
                Err(TrySendError::Disconnected(_)) => return self.failed(),
            }
        }
    }

    /// Hands over what is left and waits for the thread to write it all, until SIGINT;
    /// returns how many lines were not written.
    pub(super) fn finish(&mut self, interrupted: &AtomicBool) -> Result<u64> {
        self.hand_over(interrupted)?;
        self.send = None;
        while self.thread.as_ref().is_some_and(|t| !t.is_finished()) {
            if interrupted.load(Ordering::Relaxed) {
                // Its reader is stalled: the thread is left blocked, and ends with the process.
                return Ok(self.unwritten());
            }
            thread::sleep(RETRY * 10);
        }
        self.failed()?;
        Ok(self.unwritten())
    }

    /// Lines gathered and not (yet) written.
    pub(super) fn unwritten(&self) -> u64 {
        let written = self.written.load(Ordering::Relaxed);
        self.lines.saturating_sub(self.left_out).saturating_sub(written)
    }

    /// Lines of `--dropped` left out while its reader was behind.
    pub(super) fn left_out(&self) -> u64 {
        self.left_out
    }

    /// Takes the end of the output's thread: its error, if it failed. stdout's error is
    /// the program's (a broken pipe ends it as success); for `--dropped`, a closed pipe
    /// closes it, with a note, and the filter goes on; another error ends the filter.
    fn failed(&mut self) -> Result<()> {
        self.send = None;
        let Some(thread) = self.thread.take() else { return Ok(()) };
        let ended = thread.join().unwrap_or_else(|_| Err(io::Error::other("its writer panicked")));
        match (ended, &self.path) {
            (Ok(()), _) => Ok(()),
            (Err(e), None) => Err(e.into()),
            (Err(e), Some(_)) if e.kind() == io::ErrorKind::BrokenPipe => {
                let _ = writeln!(
                    diagnostics(),
                    "ratelimit: note: the reader of --dropped {} went away; the dropped lines \
                     after this one are not written",
                    self.name()
                );
                Ok(())
            }
            (Err(e), Some(_)) => {
                Err(anyhow!("cannot write --dropped {}: {}", self.name(), io_reason(&e)))
            }
        }
    }

    fn name(&self) -> String {
        self.path.as_ref().map_or(String::new(), |p| p.display().to_string())
    }
}

impl Drop for Output {
    /// Writes what was gathered when the filter ends early, on an error, as a buffered
    /// writer would, so that the lines that passed before it are not lost; a reader that
    /// takes none of it for [`LAST_WAIT`] is left behind.
    fn drop(&mut self) {
        let (Some(send), Some(thread)) = (self.send.take(), self.thread.take()) else { return };
        if self.batch.1 > 0 {
            let _ = send.try_send(std::mem::take(&mut self.batch));
        }
        drop(send);
        let until = std::time::Instant::now() + LAST_WAIT;
        while !thread.is_finished() && std::time::Instant::now() < until {
            thread::sleep(RETRY);
        }
    }
}
