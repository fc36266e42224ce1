//! Several limits at once in Redis: one atomic script call over every layer's keys.
//!
//! The layered script holds every limiter as a function that can ask without charging. It
//! asks each layer, and charges each only if all admit, so that a refused event changes no
//! layer, in one call that no other process can come between. One call reaches the keys
//! of one slot of a Redis Cluster, so there every layer's key must share a hash tag.

use std::cell::RefCell;
use std::fmt::Display;
use std::rc::Rc;

use anyhow::{Result, anyhow, bail};
use redis::Value;

use super::{Outcome, REPLAY_TTL_MS, Remote, Server, check_time, integers, layers_script, slot_of};
use crate::Record;
use crate::input::catalog::Event;
use crate::layered::Layer;
use crate::limiter::Decision;
use crate::live::Live;
use crate::units::time::Timestamp;

/// The hash tag of the keys of layers that are not keyed: one limit for every key.
pub const SHARED: &str = "all";

/// The layers of a layered limit as scripts, each beside its layer.
#[derive(Clone, Debug)]
pub struct RemoteLayers {
    each: Vec<(Remote, Layer)>,
}

/// What the layered script decided on one call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayersOutcome {
    /// Whether every layer admitted the call, and so each was charged.
    pub allowed: bool,
    /// Each layer's answer, as if it had been asked alone (a layer the cost can never
    /// pass refuses).
    pub layers: Vec<Outcome>,
}

impl RemoteLayers {
    /// Returns `layers` as scripts, each checked to run exactly, with the layered script
    /// loaded in `server`. On a Redis Cluster, a keyed layer's keys and an unkeyed one's
    /// lie in different slots, which one script cannot reach: that is refused.
    pub fn new(server: &mut Server, layers: &[Layer]) -> Result<RemoteLayers> {
        let keyed = layers.iter().filter(|l| l.keyed).count();
        if server.is_cluster() && keyed > 0 && keyed < layers.len() {
            bail!(
                "on a Redis Cluster, one script reaches the keys of one slot, and a keyed \
                 layer's keys lie in other slots than an unkeyed layer's: key every layer \
                 or none, or use one Redis server"
            );
        }
        let each = layers
            .iter()
            .map(|layer| {
                let s = layer.settings;
                // Made for a cost of 1; each call is costed as its event is.
                Ok((Remote::new(s.algorithm, s.rate, s.burst.get(), 1)?, layer.clone()))
            })
            .collect::<Result<Vec<_>>>()?;
        server.load(layers_script())?;
        Ok(RemoteLayers { each })
    }

    /// Returns the call deciding an event that costs `cost` at `now` (the server's clock
    /// if `None`), layer n's keys under `bases[n]`, with the hash slot of its keys; keys
    /// in two slots are an error on a `cluster`.
    pub fn command(
        &self,
        cluster: bool,
        bases: &[&[u8]],
        now: Option<Timestamp>,
        ttl_ms: i64,
        member: impl Display,
        cost: u64,
    ) -> Result<(u16, redis::Cmd)> {
        let mut keys = Vec::new();
        let mut args = vec![now.map_or(String::new(), |t| t.as_micros().to_string())];
        args.push(self.each.len().to_string());
        let mut slot: Option<(u16, Vec<u8>)> = None;
        for (n, ((remote, layer), base)) in self.each.iter().zip(bases).enumerate() {
            let cost = layer.cost.unwrap_or(cost);
            // A cost the layer can never pass is sent as kind 0, which refuses.
            let Some(remote) = remote.costing(cost) else {
                args.extend(["0", "0", "0"].map(str::to_owned));
                continue;
            };
            let mine = remote.keys(&[base, format!(":L{}", n + 1).as_bytes()].concat());
            let here = slot_of(&mine[0]);
            match &slot {
                Some((first, key)) if cluster && *first != here => bail!(
                    "on a Redis Cluster, one script reaches the keys of one slot, and the \
                     layers' keys {} and {} lie in two ({first} and {here}): give them one \
                     hash tag, or use one Redis server",
                    String::from_utf8_lossy(key),
                    String::from_utf8_lossy(&mine[0])
                ),
                Some(_) => {}
                None => slot = Some((here, mine[0].clone())),
            }
            let own = remote.args(now, ttl_ms, &member);
            args.extend([remote.kind(), mine.len(), own.len()].map(|a| a.to_string()));
            args.extend(own);
            keys.extend(mine);
        }
        let mut cmd = redis::cmd("EVALSHA");
        cmd.arg(layers_script().hash()).arg(keys.len()).arg(keys).arg(args);
        Ok((slot.map_or(0, |(s, _)| s), cmd))
    }

    /// Reads the layered script's reply.
    pub fn outcome(&self, reply: &Value) -> Result<LayersOutcome> {
        let ints = integers(reply)?;
        let unexpected = || anyhow!("the layered script gave an unexpected reply: {reply:?}");
        let [all, each @ ..] = ints.as_slice() else { return Err(unexpected()) };
        if each.len() != 6 * self.each.len() {
            return Err(unexpected());
        }
        let layers = self
            .each
            .iter()
            .zip(each.chunks(6))
            .map(|((remote, _), answer)| remote.outcome_of(answer).ok_or_else(unexpected))
            .collect::<Result<Vec<_>>>()?;
        Ok(LayersOutcome { allowed: *all == 1, layers })
    }

    /// Decides one call now, at the server's time, layer n's keys under `bases[n]`.
    pub fn check(
        &self,
        server: &mut Server,
        bases: &[&[u8]],
        member: &str,
        cost: u64,
    ) -> Result<LayersOutcome> {
        server.uses(layers_script());
        let call = self.command(server.is_cluster(), bases, None, 0, member, cost)?;
        let reply = server.run(&[call])?.pop().unwrap_or(Value::Nil);
        self.outcome(&reply).map_err(|e| anyhow!("Redis at {}: {e}", server.url()))
    }

    /// Returns the layers.
    pub fn layers(&self) -> impl Iterator<Item = &Layer> {
        self.each.iter().map(|(_, layer)| layer)
    }

    /// Returns each layer's base: `own`, the event's key's, for a keyed layer, else
    /// `shared`, the one all keys share.
    pub fn bases<'a>(&self, own: &'a [u8], shared: &'a [u8]) -> Vec<&'a [u8]> {
        self.layers().map(|l| if l.keyed { own } else { shared }).collect()
    }
}

/// Layers decided in Redis: each event one call of the layered script, a batch of them
/// to a pipeline, in time order. Keyed layers' keys go under
/// `<prefix>replay:<run>:{k<key>}:L<n>:<algorithm>`, the others' under `{all}`.
pub(super) struct Layers {
    server: Rc<RefCell<Server>>,
    remote: RemoteLayers,
    base: String,
    calls: u64,
}

impl Layers {
    /// Returns the layers `remote` in `server`, deciding under `base`.
    pub(super) fn new(server: Rc<RefCell<Server>>, remote: RemoteLayers, base: String) -> Layers {
        Layers { server, remote, base, calls: 0 }
    }

    /// Returns the layers' live engine, under `prefix`.
    pub(super) fn live(self, prefix: &str) -> Box<dyn Live> {
        let script = super::live::LiveScript::Layers(self.remote);
        super::live::in_redis(self.server, script, prefix)
    }

    /// Has Redis decide `events`, and records what it decided, in order.
    pub(super) fn decide<R: Record>(&mut self, events: &[Event], record: &mut R) -> Result<()> {
        let cluster = self.server.borrow().is_cluster();
        let shared = format!("{}{{{SHARED}}}", self.base);
        let mut calls = Vec::with_capacity(events.len());
        for &Event { time, key, cost } in events {
            check_time(time)?;
            let own = format!("{}{{k{key}}}", self.base);
            let bases = self.remote.bases(own.as_bytes(), shared.as_bytes());
            self.calls += 1;
            let member = self.calls;
            calls.push(self.remote.command(
                cluster,
                &bases,
                Some(time),
                REPLAY_TTL_MS,
                member,
                cost,
            )?);
        }
        let replies = self.server.borrow_mut().run(&calls)?;
        let url = self.server.borrow().url().to_owned();
        for (&event, reply) in events.iter().zip(&replies) {
            let outcome = self.remote.outcome(reply).map_err(|e| anyhow!("Redis at {url}: {e}"))?;
            let refused = outcome
                .layers
                .iter()
                .enumerate()
                .fold(0, |bits, (n, o)| bits | u32::from(!o.allowed) << n);
            let passed = refused == 0;
            let each = self.remote.layers().zip(&outcome.layers).map(|(layer, answer)| {
                let wait = if passed { answer.wait } else { 0 };
                (layer.sees(event), Decision { passed, wait })
            });
            record.decided(event, refused, each)?;
        }
        Ok(())
    }
}
