//! Where decisions are made: in memory and on a simulated fleet (the engine crate's), or in
//! Redis; [`Backend`] chooses, in one place.
//!
//! A new engine is one file implementing [`Engine`], a variant of [`Backend`], one arm in
//! [`Backend::run`], where engines are chosen, and its type in each [`Engines`].

pub mod live;
pub mod redis;

pub use ratelimit_engine::{
    Engine, UseEngine, fleet, key_sizing, layered, memory, recorder, side_by_side,
};

use std::cell::RefCell;
use std::rc::Rc;

use anyhow::{Result, bail};

use self::fleet::{FleetEngine, FleetPlan};
use self::layered::{DecideLayers, Layer, LayeredRecord, Limits, ReplayLayers, Tally};
use self::memory::Memory;
use self::recorder::{Recorder, Settings};
use self::redis::{RedisEngine, RedisLayers, RedisTarget, Remote, RemoteLayers, Server};
use crate::input::catalog::{Event, ReadOptions, ReadStats, Source};
use ratelimit_engine::{Decide, ReadAll};

/// What decides an event: limiters side by side, each deciding every event alone (one for
/// `replay`, several for `compare`), or layers all or nothing (`--limit`), an event
/// passing only if every layer admits it.
#[derive(Clone, Copy, Debug)]
pub enum Policy<'a> {
    /// Each limiter decides alone.
    SideBySide(&'a [Settings]),
    /// Every layer must admit; a refused event charges none.
    AllOrNothing(&'a [Layer]),
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

    /// Runs `job` with this backend's engines for `policy` (limiters side by side, or
    /// layers all or nothing), made fresh as the job needs them: the one place where batch
    /// engines are chosen. A new engine is one file implementing [`Engine`], a variant of
    /// [`Backend`], one arm here, and its type in each [`Engines`].
    pub fn run<P, J>(&self, policy: &P, job: J) -> Result<J::Out>
    where
        P: Engines + ?Sized,
        J: UseEngine<P::Record>,
    {
        match self {
            Backend::Memory => job.with(|| policy.in_memory()),
            Backend::Fleet(plan) => job.with(policy.on_fleet(plan)?),
            Backend::Redis { redis, remotes, prefix } => {
                job.with(policy.in_redis(redis, remotes, prefix)?)
            }
        }
    }

    /// Replays the events of `source` through limiters with `settings` (by key if `keyed`),
    /// and returns the record (with every decision if `trace`) and what reading found.
    pub fn replay(
        &self,
        settings: &[Settings],
        keyed: bool,
        (source, options): (&Source, &ReadOptions),
        trace: bool,
    ) -> Result<(Recorder, ReadStats)> {
        self.run(settings, ReadAll { settings, keyed, source, options, trace })
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

/// Several limits at once: the layered replays, in memory or in Redis.
impl Backend {
    /// Reads the events of `source` through `layers`, and returns what each did.
    pub fn replay_layers(
        &self,
        layers: &[Layer],
        source: &Source,
        options: &ReadOptions,
    ) -> Result<(LayeredRecord, ReadStats)> {
        self.run(layers, ReplayLayers { layers, source, options })
    }

    /// Decides events already read, in time order, through `layers`, keeping every decision.
    pub fn decide_layers(
        &self,
        layers: &[Layer],
        events: impl IntoIterator<Item = Event>,
    ) -> Result<LayeredRecord> {
        self.run(layers, DecideLayers { layers, events })
    }
}

/// A policy's engines on each backend, made fresh for a job: limiters side by side
/// (`[Settings]`) hand their decisions to a [`Recorder`], layers all or nothing
/// (`[Layer]`) to a [`Tally`].
pub trait Engines {
    /// What its engines hand their decisions to.
    type Record;
    /// Its engine in memory.
    type InMemory: Engine<Self::Record>;
    /// Its engine on a simulated fleet.
    type OnFleet: Engine<Self::Record>;
    /// Its engine in Redis.
    type InRedis: Engine<Self::Record>;

    /// Returns a fresh engine in memory.
    fn in_memory(&self) -> Self::InMemory;

    /// Returns what makes fresh engines on the fleet `plan`, or why it cannot run there.
    fn on_fleet<'a>(&'a self, plan: &'a FleetPlan) -> Result<Maker<'a, Self::OnFleet>>;

    /// Returns what makes fresh engines in Redis (`redis`, its limiters' scripts
    /// `remotes`, every key under `prefix`), its scripts ready.
    fn in_redis<'a>(
        &'a self,
        redis: &'a Rc<RefCell<Server>>,
        remotes: &'a [Remote],
        prefix: &'a str,
    ) -> Result<Maker<'a, Self::InRedis>>;
}

/// What makes a fresh engine of type `E`, for each replay a job starts.
pub type Maker<'a, E> = Box<dyn FnMut() -> E + 'a>;

impl Engines for [Settings] {
    type Record = Recorder;
    type InMemory = Memory;
    type OnFleet = FleetEngine;
    type InRedis = RedisEngine;

    fn in_memory(&self) -> Memory {
        Memory::new(self)
    }

    fn on_fleet<'a>(&'a self, plan: &'a FleetPlan) -> Result<Maker<'a, FleetEngine>> {
        Ok(Box::new(move || FleetEngine::new(self, plan)))
    }

    fn in_redis<'a>(
        &'a self,
        redis: &'a Rc<RefCell<Server>>,
        remotes: &'a [Remote],
        prefix: &'a str,
    ) -> Result<Maker<'a, RedisEngine>> {
        Ok(Box::new(move || RedisEngine::new(redis.clone(), remotes.to_vec(), prefix)))
    }
}

impl Engines for [Layer] {
    type Record = Tally;
    type InMemory = Limits;
    type OnFleet = Limits;
    type InRedis = RedisLayers;

    fn in_memory(&self) -> Limits {
        Limits::new(self)
    }

    fn on_fleet<'a>(&'a self, _: &'a FleetPlan) -> Result<Maker<'a, Limits>> {
        bail!(LAYERED_FLEET)
    }

    fn in_redis<'a>(
        &'a self,
        redis: &'a Rc<RefCell<Server>>,
        _: &'a [Remote],
        prefix: &'a str,
    ) -> Result<Maker<'a, RedisLayers>> {
        // The layered script, loaded once for every replay the job starts.
        let remote = RemoteLayers::new(&mut redis.borrow_mut(), self)?;
        Ok(Box::new(move || RedisLayers::new(redis.clone(), remote.clone(), prefix)))
    }
}

/// Why layers do not run on a fleet.
const LAYERED_FLEET: &str = "--servers simulates one limit on a fleet, not layers";
