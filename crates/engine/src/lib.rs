//! Deciding and recording: engines decide events (in memory, on a simulated fleet, or in
//! Redis, as [`Backend`] chooses), and the record counts what they decided, finds the
//! busiest windows and checks the promises; the reports are the one result type of every
//! output.
//!
//! The seam is [`Engine`]: an engine decides the events of a [`Policy`] in time order and
//! hands each limit's [`Decision`] to a [`Record`] (a [`Recorder`] for limiters side by
//! side, a [`Tally`](layered::Tally) for layers), at once or in batches. The record counts,
//! finds the busiest windows and checks the promises, the same way for every engine.
//! Redis's engine ([`redis`]) implements [`Engine`] too.

/// The engine API's example in `docs/library.md`, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/library.md")]
struct LibraryExample;

mod backend;
mod by_key;
pub mod compare;
pub mod decisions;
pub mod error;
pub mod fleet;
pub mod fleet_ask;
pub mod frontier;
pub mod huge_pages;
pub mod key_sizing;
mod key_spread;
pub mod key_summaries;
pub mod lane;
pub mod layered;
pub mod limit;
pub mod limits;
pub mod live;
mod live_check;
pub mod live_limiter;
pub mod live_settled;
pub mod lossless;
pub mod memory;
pub mod notes;
pub mod parts;
pub mod per_key;
pub mod policy_report;
pub mod recommend;
pub mod recommendation;
pub mod recorder;
pub mod redis;
pub mod replay;
pub mod report;
mod seconds;
pub mod settled;
pub mod side_by_side;
pub mod suggest;
mod system_size;

// The core's and the readers' modules, by the paths the engine's files name them.
use ratelimit_core::{limiter, policy, sizing};
use ratelimit_input as input;
use ratelimit_input::units;

use anyhow::Result;

pub use self::backend::Backend;
use self::memory::Memory;
use self::recorder::{Recorder, Settings};
use crate::input::catalog::{self, Event, ReadOptions, ReadStats, Sink, Source};
use crate::limiter::Decision;
pub use crate::policy::Policy;

/// Who decides: an engine runs the limits of a [`Policy`], for every key, and hands what
/// they decided to a [`Record`]: limiters side by side to a [`Recorder`], layers all or
/// nothing to a [`Tally`](layered::Tally). The one trait every backend's deciding
/// implements, once: in a replay, in batches; live, a batch of one
/// ([`live`](Engine::live)).
pub trait Engine {
    /// Takes the next event, in time order, and hands every limit's decision on it to
    /// `record`: now, or later but in event order.
    fn push<R: Record>(&mut self, event: Event, record: &mut R) -> Result<()>;

    /// Decides every event still held, handing the decisions to `record`.
    fn flush<R: Record>(&mut self, record: &mut R) -> Result<()>;

    /// Asks a fresh engine to decide a keyed replay after reading, key by key, on up to
    /// `threads` threads, and says whether it will: an engine in memory whose keys share
    /// nothing can, as each decision is then that of the key's own limiters on the key's
    /// events alone. It then keeps the events it is given, and hands every decision to the
    /// record at once when flushed, which the record must take (`Recorder::takes_by_key`).
    fn decide_by_key(&mut self, threads: usize) -> bool {
        let _ = threads;
        false
    }

    /// Shares `notes`, what the reading of the events notes of their keys as it numbers
    /// them: the limits whose systems let an event of the empty key through uncounted then
    /// do, and those whose systems read a key's text read it there. An engine whose
    /// limiters count every key alike (Redis's scripts, which run only exact limiters) has
    /// nothing to do.
    fn share_key_notes(&mut self, notes: &catalog::KeyNotes) {
        let _ = notes;
    }

    /// Returns this engine, fresh, deciding each event as it arrives: live, a batch of one
    /// ([`Live`](live::Live)); or why it decides only in a replay.
    fn live(self) -> Result<Box<dyn live::Live>>
    where
        Self: Sized;
}

/// What an engine hands its decisions to, in event order.
pub trait Record {
    /// Takes the next event, in time order, and each limit's decision on it, in limit
    /// order, with the event as that limit saw it (its key and its cost); `refused` has
    /// bit n set if limit n refused the event when asked (layers; side by side, where each
    /// decides alone, 0).
    fn decided(
        &mut self,
        event: Event,
        refused: u32,
        each: impl IntoIterator<Item = (Event, Decision)>,
    ) -> Result<()>;

    /// Returns the record of limiters side by side, if this is one: what only they record
    /// (a fleet's servers, decisions made key by key after reading) goes there.
    fn side_by_side(&mut self) -> Option<&mut Recorder> {
        None
    }
}

impl Record for Recorder {
    #[inline]
    fn decided(
        &mut self,
        event: Event,
        _: u32,
        each: impl IntoIterator<Item = (Event, Decision)>,
    ) -> Result<()> {
        self.record(event, each.into_iter().map(|(_, decision)| decision))
    }

    fn side_by_side(&mut self) -> Option<&mut Recorder> {
        Some(self)
    }
}

/// Decides events already read, in time order, in memory, and returns the record with
/// every decision traced: for each event, one per limiter. Their keys' values are not
/// known: a limiter that reads a key's text reads each as empty.
pub fn decide_in_memory(
    settings: &[Settings],
    keyed: bool,
    events: impl IntoIterator<Item = Event>,
) -> Result<Recorder> {
    let memory = Memory::new(Policy::SideBySide(settings))?;
    let keys = &catalog::KeyTable::new();
    Decide { settings, keyed, events, keys }.with(|| memory.clone())
}

/// What a job does with an engine, whatever its type: engines differ in type, and a
/// replay is compiled for each, so that deciding an event costs no dynamic call.
pub trait UseEngine {
    /// What the job returns.
    type Out;

    /// Runs the job with engines that `fresh` makes.
    fn with<E: Engine>(self, fresh: impl FnMut() -> E) -> Result<Self::Out>;
}

/// Reading a catalog through the engine: streamed, or read again and sorted.
pub struct ReadAll<'a> {
    /// The limiters.
    pub settings: &'a [Settings],
    /// Whether each key has limiters of its own.
    pub keyed: bool,
    /// The catalog.
    pub source: &'a Source,
    /// How to read it.
    pub options: &'a ReadOptions,
    /// Whether to keep every decision (see [`Recorder::trace`]).
    pub trace: bool,
}

impl UseEngine for ReadAll<'_> {
    type Out = (Recorder, ReadStats);

    fn with<E: Engine>(self, mut fresh: impl FnMut() -> E) -> Result<Self::Out> {
        let recorder = || {
            let mut recorder = Recorder::new(self.settings, self.keyed);
            if self.trace {
                recorder.keep_trace();
            }
            recorder
        };
        let threads = self.options.threads;
        let run = || Run::new(sharing(fresh(), &self.options.key_notes), recorder(), threads);
        let read = catalog::read_events(self.source, self.options, run);
        finish(read)
    }
}

/// Deciding events already read, keeping every decision.
pub struct Decide<'a, I> {
    /// The limiters.
    pub settings: &'a [Settings],
    /// Whether each key has limiters of its own.
    pub keyed: bool,
    /// The events, in time order.
    pub events: I,
    /// The table that numbered their keys as they were read.
    pub keys: &'a catalog::KeyTable,
}

impl<I: IntoIterator<Item = Event>> UseEngine for Decide<'_, I> {
    type Out = Recorder;

    fn with<E: Engine>(self, mut fresh: impl FnMut() -> E) -> Result<Recorder> {
        let mut recorder = Recorder::new(self.settings, self.keyed);
        recorder.keep_trace();
        // A trace is kept: every decision is made as read, on this thread.
        feed(Run::new(read_by(fresh(), self.keys), recorder, 1), self.events)
    }
}

/// Returns `engine`, sharing `notes`, what the reading of the events tells of their keys
/// as it numbers them: shared before the reading begins.
pub(crate) fn sharing<E: Engine>(mut engine: E, notes: &catalog::KeyNotes) -> E {
    engine.share_key_notes(notes);
    engine
}

/// Returns `engine`, sharing what `keys`, the table that numbered the keys of events
/// already read, tells of them: once the engine has said what it reads of them (a key's
/// text), the table notes it of every key.
pub(crate) fn read_by<E: Engine>(engine: E, keys: &catalog::KeyTable) -> E {
    let engine = sharing(engine, keys.notes());
    keys.note_all();
    engine
}

fn finish<E: Engine>(read: Result<(Run<E>, ReadStats)>) -> Result<(Recorder, ReadStats)> {
    let (run, stats) = read?;
    Ok((run.finish()?, stats))
}

fn feed<E: Engine>(mut run: Run<E>, events: impl IntoIterator<Item = Event>) -> Result<Recorder> {
    for event in events {
        run.event(event)?;
    }
    run.finish()
}

/// A replay under way: an engine deciding each event, and the record of what it decided.
/// It takes a catalog's events as a [`Sink`].
pub struct Run<E> {
    engine: E,
    recorder: Recorder,
    /// Whether the engine decides after reading, key by key.
    later: bool,
}

impl<E: Engine> Run<E> {
    /// Starts a replay with `engine` deciding and `recorder` recording; keyed, an engine
    /// that can decides after reading, key by key, on up to `threads` threads.
    pub fn new(mut engine: E, recorder: Recorder, threads: usize) -> Run<E> {
        // Keyed in memory, a key's state is touched once an event at random; key by key,
        // no state is kept between keys, and the keys are decided on every core.
        let later = recorder.takes_by_key() && engine.decide_by_key(threads);
        Run { engine, recorder, later }
    }

    /// Has the engine decide what it still holds, and returns the record.
    pub fn finish(mut self) -> Result<Recorder> {
        self.engine.flush(&mut self.recorder)?;
        Ok(self.recorder)
    }
}

impl<E: Engine> Sink for Run<E> {
    type Error = anyhow::Error;

    #[inline]
    fn event(&mut self, event: Event) -> Result<()> {
        self.engine.push(event, &mut self.recorder)
    }

    fn busy(&self) -> bool {
        // Measured on 2 million keys: from three limiters, deciding and recording take
        // as long as parsing, and numbering keys is best done by a thread of its own.
        // Deciding later, the engine only keeps each event, and the taker numbers the keys
        // itself.
        !self.later && self.recorder.lanes() >= 3
    }
}
