//! Where decisions are made: in memory, on a simulated fleet, or in Redis; [`Backend`]
//! chooses, in one place.
//!
//! A new engine is one file implementing [`Engine`], a variant of [`Backend`], and one arm
//! in [`Backend::run`], where engines are chosen.

use std::cell::RefCell;
use std::rc::Rc;

use anyhow::{Result, bail};

use crate::fleet::{FleetEngine, FleetPlan, LAYERED_FLEET};
use crate::input::catalog::{Event, KeyTable, ReadOptions, ReadStats, Source};
use crate::layered::{DecideLayers, Layer, LayeredRecord, ReplayLayers};
use crate::live::Live;
use crate::memory::Memory;
use crate::recorder::{Recorder, Settings};
use crate::redis::{self, RedisEngine, RedisTarget, Remote, RemoteLayers, Scripts, Server};
use crate::{Decide, Engine, Policy, ReadAll, UseEngine};

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
        let remotes = redis::prepare(&mut redis, settings)?;
        Ok(Backend::Redis {
            redis: Rc::new(RefCell::new(redis)),
            remotes,
            prefix: target.prefix.clone(),
        })
    }

    /// Runs `job` with this backend's engine for `policy` (limiters side by side, or layers
    /// all or nothing), made fresh as the job needs them: the one place where engines are
    /// chosen, for a replay and for live use alike. A new engine is one file implementing
    /// [`Engine`], a variant of [`Backend`], and one arm here.
    pub fn run<J: UseEngine>(&self, policy: Policy<'_>, job: J) -> Result<J::Out> {
        match self {
            Backend::Memory => {
                let memory = Memory::new(policy)?;
                job.with(|| memory.clone())
            }
            Backend::Fleet(plan) => {
                let Policy::SideBySide(settings) = policy else { bail!(LAYERED_FLEET) };
                job.with(|| FleetEngine::new(settings, plan))
            }
            Backend::Redis { redis, remotes, prefix } => {
                let scripts = match policy {
                    Policy::SideBySide(_) => Scripts::Lanes(remotes.clone()),
                    // The layered script, loaded once for every replay the job starts.
                    Policy::AllOrNothing(layers) => {
                        Scripts::Layers(RemoteLayers::new(&mut redis.borrow_mut(), layers)?)
                    }
                };
                job.with(|| RedisEngine::new(redis.clone(), scripts.clone(), prefix))
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
        self.run(Policy::SideBySide(settings), ReadAll { settings, keyed, source, options, trace })
    }

    /// Replays events already read, in time order, and returns the record with every
    /// decision traced: for each event, one per limiter. `keys` is the table that numbered
    /// their keys as they were read, which tells what the limits read of them.
    pub fn decide(
        &self,
        settings: &[Settings],
        keyed: bool,
        (events, keys): (impl IntoIterator<Item = Event>, &KeyTable),
    ) -> Result<Recorder> {
        self.run(Policy::SideBySide(settings), Decide { settings, keyed, events, keys })
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
        self.run(Policy::AllOrNothing(layers), ReplayLayers { layers, source, options })
    }

    /// Decides events already read, in time order, through `layers`, keeping every decision;
    /// `keys` is the table that numbered their keys as they were read.
    pub fn decide_layers(
        &self,
        layers: &[Layer],
        (events, keys): (impl IntoIterator<Item = Event>, &KeyTable),
    ) -> Result<LayeredRecord> {
        self.run(Policy::AllOrNothing(layers), DecideLayers { layers, events, keys })
    }
}

impl Backend {
    /// Returns a live engine for `policy`: one limiter, or several layers at once, all or
    /// nothing (a leaky queue delays rather than decides at once, so it is no live layer).
    /// It is the backend's own engine for the policy, from the one match in
    /// [`Backend::run`], deciding a batch of one ([`Engine::live`]): in memory, or in Redis
    /// (one limiter's script loaded when the backend was made; layers as one script call a
    /// line). A fleet is simulated only in a replay.
    pub fn live(&self, policy: Policy<'_>) -> Result<Box<dyn Live>> {
        crate::live::check(policy)?;
        self.run(policy, Now)
    }
}

/// The job of deciding live: the backend's first engine, made live.
struct Now;

impl UseEngine for Now {
    type Out = Box<dyn Live>;

    fn with<E: Engine>(self, mut fresh: impl FnMut() -> E) -> Result<Box<dyn Live>> {
        fresh().live()
    }
}
