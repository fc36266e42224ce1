//! Engines decide events (in memory or in Redis); the replay records what they decided.
//!
//! The seam is [`Engine`]: an engine takes events in time order and hands each limiter's
//! [`Decision`](crate::limiter::Decision) to a [`Recorder`], at once or in batches. The
//! recorder counts, finds the busiest windows and checks the promises, the same way for
//! every engine. A new engine is one file implementing [`Engine`], a variant of
//! [`Backend`], and one arm in [`Backend::run`], where engines are chosen.

mod by_key;
pub mod fleet;
pub mod lane;
pub mod layered;
pub mod live;
pub mod memory;
pub mod recorder;
pub mod redis;

use std::cell::RefCell;
use std::rc::Rc;

use anyhow::{Result, bail};

use self::fleet::{FleetEngine, FleetPlan};
use self::layered::{Layer, LayeredRecord, Limits};
use self::memory::Memory;
use self::recorder::{Recorder, Settings};
use self::redis::{RedisEngine, RedisLayers, RedisTarget, Remote, RemoteLayers, Server};
use crate::input::catalog::{self, Event, ReadOptions, ReadStats, Sink, Source};

/// Who decides: an engine runs the limiters of a replay, for every key.
pub trait Engine {
    /// Takes the next event, in time order, and hands every limiter's decision on it to
    /// `recorder`: now, or later but in event order.
    fn push(&mut self, event: Event, recorder: &mut Recorder) -> Result<()>;

    /// Decides every event still held, handing the decisions to `recorder`.
    fn flush(&mut self, recorder: &mut Recorder) -> Result<()>;

    /// Whether each of its decisions is that of the key's own limiter, made by its
    /// settings in memory, on the key's own events alone: then a keyed replay may leave
    /// the deciding to the record, which makes it key by key after reading.
    fn decides_alone(&self) -> bool {
        false
    }
}

/// Where a job's decisions are made: in memory, or in a Redis server shared with others.
pub enum Backend {
    /// In this process.
    Memory,
    /// In this process, on a fleet of servers, simulated.
    Fleet(FleetPlan),
    /// In Redis, connected and with its scripts loaded.
    Redis {
        /// The connection, shared by the replays a job starts.
        redis: Rc<RefCell<Server>>,
        /// The limiters, as scripts.
        remotes: Vec<Remote>,
        /// The prefix of every key.
        prefix: String,
    },
}

impl Backend {
    /// Returns where limiters with `settings` run: in Redis if a target is given (then
    /// connected, and checked to run them exactly), on a simulated fleet of servers if
    /// `fleet` is given (never both), else in memory.
    pub fn new(
        settings: &[Settings],
        redis: Option<&RedisTarget>,
        fleet: Option<FleetPlan>,
    ) -> Result<Backend> {
        if let Some(plan) = fleet {
            if redis.is_some() {
                bail!(
                    "--servers simulates a fleet in memory; with --redis, every process already shares one limit"
                );
            }
            plan.check(settings)?;
            return Ok(Backend::Fleet(plan));
        }
        let Some(target) = redis else { return Ok(Backend::Memory) };
        // Said before any connection is tried: no server could run it.
        if let Some(s) = settings.iter().find(|s| s.algorithm.redis_script().is_none()) {
            bail!("{} cannot run in Redis", s.algorithm.name());
        }
        let mut redis = Server::connect(&target.urls, target.timeout)?;
        let remotes = RedisEngine::prepare(&mut redis, settings)?;
        Ok(Backend::Redis {
            redis: Rc::new(RefCell::new(redis)),
            remotes,
            prefix: target.prefix.clone(),
        })
    }

    /// Runs `job` with this backend's engines, made fresh as the job needs them: the one
    /// place where engines are chosen. A new engine is one file implementing [`Engine`],
    /// a variant of [`Backend`], and one arm here.
    pub fn run<J: UseEngine>(&self, settings: &[Settings], job: J) -> Result<J::Out> {
        match self {
            Backend::Memory => job.with(|| Memory::new(settings)),
            Backend::Fleet(plan) => job.with(|| FleetEngine::new(settings, plan)),
            Backend::Redis { redis, remotes, prefix } => {
                job.with(|| RedisEngine::new(redis.clone(), remotes.clone(), prefix))
            }
        }
    }

    /// Replays the events of `source` through limiters with `settings` (by key if `keyed`),
    /// and returns the record and what reading found.
    pub fn replay(
        &self,
        settings: &[Settings],
        keyed: bool,
        source: &Source,
        options: &ReadOptions,
    ) -> Result<(Recorder, ReadStats)> {
        self.run(settings, ReadAll { settings, keyed, source, options })
    }

    /// Replays events already read, in time order, and returns the record with every
    /// decision traced: for each event, one per limiter.
    pub fn decide(
        &self,
        settings: &[Settings],
        keyed: bool,
        events: impl IntoIterator<Item = Event>,
    ) -> Result<Recorder> {
        self.run(settings, Decide { settings, keyed, events })
    }
}

/// Several limits at once: the layered replays and live decisions, in memory or in Redis.
impl Backend {
    /// Reads the events of `source` through `layers`, and returns what each did.
    pub fn replay_layers(
        &self,
        layers: &[Layer],
        source: &Source,
        options: &ReadOptions,
    ) -> Result<(LayeredRecord, ReadStats)> {
        match self {
            Backend::Memory => {
                layered::replay_layers(layers, || Limits::new(layers), source, options)
            }
            Backend::Redis { redis, prefix, .. } => {
                let remote = RemoteLayers::new(&mut redis.borrow_mut(), layers)?;
                let fresh = || RedisLayers::new(redis.clone(), remote.clone(), prefix);
                layered::replay_layers(layers, fresh, source, options)
            }
            Backend::Fleet(_) => bail!(LAYERED_FLEET),
        }
    }

    /// Decides events already read, in time order, through `layers`, keeping every decision.
    pub fn decide_layers(
        &self,
        layers: &[Layer],
        events: impl IntoIterator<Item = Event>,
    ) -> Result<LayeredRecord> {
        match self {
            Backend::Memory => layered::decide_layers(layers, Limits::new(layers), events),
            Backend::Redis { redis, prefix, .. } => {
                let remote = RemoteLayers::new(&mut redis.borrow_mut(), layers)?;
                let decide = RedisLayers::new(redis.clone(), remote, prefix);
                layered::decide_layers(layers, decide, events)
            }
            Backend::Fleet(_) => bail!(LAYERED_FLEET),
        }
    }
}

/// Why layers do not run on a fleet.
const LAYERED_FLEET: &str = "--servers simulates one limit on a fleet, not layers";

/// What a job does with an engine, whatever its type: engines differ in type, and a
/// replay is compiled for each, so that deciding an event costs no dynamic call.
pub trait UseEngine {
    /// What the job returns.
    type Out;

    /// Runs the job with engines that `fresh` makes.
    fn with<E: Engine>(self, fresh: impl FnMut() -> E) -> Result<Self::Out>;
}

/// Reading a catalog through the engine: streamed, or read again and sorted.
struct ReadAll<'a> {
    settings: &'a [Settings],
    keyed: bool,
    source: &'a Source,
    options: &'a ReadOptions,
}

impl UseEngine for ReadAll<'_> {
    type Out = (Recorder, ReadStats);

    fn with<E: Engine>(self, mut fresh: impl FnMut() -> E) -> Result<Self::Out> {
        let recorder = || Recorder::new(self.settings, self.keyed);
        let read =
            catalog::read_events(self.source, self.options, || Run::new(fresh(), recorder()));
        finish(read)
    }
}

/// Deciding events already read, keeping every decision.
struct Decide<'a, I> {
    settings: &'a [Settings],
    keyed: bool,
    events: I,
}

impl<I: IntoIterator<Item = Event>> UseEngine for Decide<'_, I> {
    type Out = Recorder;

    fn with<E: Engine>(self, mut fresh: impl FnMut() -> E) -> Result<Recorder> {
        let mut recorder = Recorder::new(self.settings, self.keyed);
        recorder.keep_trace();
        feed(Run::new(fresh(), recorder), self.events)
    }
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
    /// Whether the record decides, after reading.
    later: bool,
}

impl<E: Engine> Run<E> {
    /// Starts a replay with `engine` deciding and `recorder` recording; or with only
    /// `recorder`, deciding key by key after reading, where it decides as the engine does.
    pub fn new(engine: E, mut recorder: Recorder) -> Run<E> {
        // Keyed in memory, a key's state is touched once an event at random; key by key,
        // no state is kept between keys, and the keys are decided on every core.
        let later = engine.decides_alone() && recorder.decide_later();
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
        match self.later {
            true => self.recorder.keep(event),
            false => self.engine.push(event, &mut self.recorder),
        }
    }

    fn busy(&self) -> bool {
        // Measured on 2 million keys: from three limiters, deciding and recording take
        // as long as parsing, and numbering keys is best done by a thread of its own.
        // Deciding later, the taker only keeps each event, and numbers the keys itself.
        !self.later && self.recorder.lanes() >= 3
    }
}
