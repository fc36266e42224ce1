//! The Redis engine: a replay's events gathered in batches and decided by the scripts, many
//! to a round trip, for limiters side by side or for layers.

use std::cell::RefCell;
use std::rc::Rc;

use anyhow::Result;

use super::layers::Layers;
use super::pipeline::Lanes;
use super::{Remote, RemoteLayers, Server};
use crate::input::catalog::Event;
use crate::live::Live;
use crate::{Engine, Record};

/// Events sent to Redis in one pipeline.
const BATCH: usize = 512;

/// The scripts of a policy, loaded: each limiter's own, side by side, or the layered
/// script. Made once for a job, and shared by every replay it starts.
#[derive(Clone, Debug)]
pub enum Scripts {
    /// Limiters side by side, each its own batch script.
    Lanes(Vec<Remote>),
    /// Layers all or nothing, as one script.
    Layers(RemoteLayers),
}

/// An engine that has Redis decide every event: gathered `BATCH` at a time, each batch
/// decided by the policy's scripts (`Lanes`, or the layered script's `Layers`), in a
/// run of keys of its own under the prefix, so that no key of an earlier replay is read.
pub struct RedisEngine {
    /// The prefix of every key, which a live engine's keys take alone.
    prefix: String,
    pending: Vec<Event>,
    how: How,
}

/// How a batch is decided.
enum How {
    Lanes(Lanes),
    Layers(Layers),
}

impl RedisEngine {
    /// Returns an engine for `scripts`, loaded in `server`, its keys under `prefix`.
    pub fn new(server: Rc<RefCell<Server>>, scripts: Scripts, prefix: &str) -> RedisEngine {
        let base = format!("{prefix}replay:{}:", run_name());
        let how = match scripts {
            Scripts::Lanes(remotes) => How::Lanes(Lanes::new(server, remotes, base)),
            Scripts::Layers(remote) => How::Layers(Layers::new(server, remote, base)),
        };
        RedisEngine { prefix: prefix.to_owned(), pending: Vec::with_capacity(BATCH), how }
    }

    /// Has Redis decide the events held.
    fn send<R: Record>(&mut self, record: &mut R) -> Result<()> {
        let events = std::mem::replace(&mut self.pending, Vec::with_capacity(BATCH));
        match &mut self.how {
            How::Lanes(lanes) => lanes.launch(events, record),
            How::Layers(layers) => layers.decide(&events, record),
        }
    }

    /// Has Redis decide a run of events, in time order, and records the decisions, all of
    /// them before it returns. Runs of any length go `BATCH` events to a batch.
    #[cfg(test)]
    pub fn decide<R: Record>(&mut self, events: &[Event], record: &mut R) -> Result<()> {
        for &event in events {
            self.push(event, record)?;
        }
        self.flush(record)
    }
}

impl Engine for RedisEngine {
    fn push<R: Record>(&mut self, event: Event, record: &mut R) -> Result<()> {
        self.pending.push(event);
        if self.pending.len() == BATCH {
            self.send(record)?;
        }
        Ok(())
    }

    fn flush<R: Record>(&mut self, record: &mut R) -> Result<()> {
        if !self.pending.is_empty() {
            self.send(record)?;
        }
        match &mut self.how {
            How::Lanes(lanes) => lanes.land(record),
            How::Layers(_) => Ok(()),
        }
    }

    fn live(self) -> Result<Box<dyn Live>> {
        match self.how {
            How::Lanes(lanes) => lanes.live(&self.prefix),
            How::Layers(layers) => Ok(layers.live(&self.prefix)),
        }
    }
}

/// Returns a name no other replay's keys have: this process's, and the time now.
fn run_name() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{:x}{:x}", std::process::id(), nanos)
}
