//! Where the scripts run: one Redis server, or a Redis Cluster, behind one way of calling.

use std::time::Duration;

use anyhow::{Result, bail};
use redis::Value;

use super::cluster::Cluster;
use super::connection::{Redis, Ticket};
use super::{Script, is_noscript};

/// Calls sent and not yet read back: one server's ticket, or a cluster's replies, read
/// already.
#[must_use = "the replies must be read with Server::receive"]
pub enum Sent {
    /// Sent to one server; its replies are read with the ticket.
    Pending(Ticket),
    /// A cluster's replies.
    Read(Vec<Value>),
}

/// A Redis server or cluster, with the scripts it was asked to load, so that it can load
/// them again where a server lost them.
pub struct Server {
    kind: Kind,
    loaded: Vec<&'static Script>,
    /// What it was connected with, to connect again.
    urls: Vec<String>,
    timeout: Duration,
}

enum Kind {
    One(Redis),
    Cluster(Cluster),
}

impl Server {
    /// Connects to the first of `urls` that answers; if it is a node of a Redis Cluster
    /// (`cluster_enabled:1`), to every master of that cluster. Several URLs are seed nodes
    /// of one cluster, so each must be in cluster mode.
    pub fn connect(urls: &[String], timeout: Duration) -> Result<Server> {
        Server::reach(urls, timeout).map_err(Unavailable::wrap)
    }

    fn reach(urls: &[String], timeout: Duration) -> Result<Server> {
        let server = |kind| Server { kind, loaded: Vec::new(), urls: urls.to_vec(), timeout };
        let mut failure = None;
        for url in urls {
            match Redis::connect(url, timeout) {
                Ok(redis) if redis.is_cluster() => {
                    return Ok(server(Kind::Cluster(Cluster::connect(redis, timeout)?)));
                }
                Ok(_) if urls.len() > 1 => {
                    bail!(
                        "several --redis name the seed nodes of a cluster, and {url} is not in cluster mode"
                    )
                }
                Ok(redis) => return Ok(server(Kind::One(redis))),
                Err(e) => failure = Some(e),
            }
        }
        Err(failure.unwrap_or_else(|| anyhow::anyhow!("no Redis URL given")))
    }

    /// Whether a connection failed part way, so that it can serve no more calls.
    pub fn lost(&self) -> bool {
        match &self.kind {
            Kind::One(redis) => redis.lost(),
            Kind::Cluster(cluster) => cluster.lost(),
        }
    }

    /// Drops every connection and connects again as [`Server::connect`] did, within the
    /// same bounds; the scripts are loaded again where a server answers that it lacks them.
    pub fn reconnect(&mut self) -> Result<()> {
        self.kind = Server::connect(&self.urls, self.timeout)?.kind;
        Ok(())
    }

    /// Whether it is a Redis Cluster, where one script reaches the keys of one slot.
    pub fn is_cluster(&self) -> bool {
        matches!(self.kind, Kind::Cluster(_))
    }

    /// Returns the URL, of the server or of the seed node, for messages.
    pub fn url(&self) -> &str {
        match &self.kind {
            Kind::One(redis) => redis.url(),
            Kind::Cluster(cluster) => cluster.url(),
        }
    }

    /// Notes that calls will run a script, so that it is loaded where a server answers
    /// that it has not got it.
    pub fn uses(&mut self, script: &'static Script) {
        // The scripts are statics: one is known by its address, not by comparing its text.
        if !self.loaded.iter().any(|&loaded| std::ptr::eq(loaded, script)) {
            self.loaded.push(script);
        }
    }

    /// Loads a script, on every master of a cluster.
    pub fn load(&mut self, script: &'static Script) -> Result<()> {
        self.load_here(script).map_err(Unavailable::wrap)
    }

    fn load_here(&mut self, script: &'static Script) -> Result<()> {
        match &mut self.kind {
            Kind::One(redis) => redis.load(script)?,
            Kind::Cluster(cluster) => {
                for redis in cluster.masters() {
                    redis.load(script)?;
                }
            }
        }
        self.uses(script);
        Ok(())
    }

    /// Sends calls, each with its key's hash slot, and returns their replies in order; the
    /// whole exchange takes one round trip (one per master of a cluster, at once). Should a
    /// server have lost its scripts part way (`NOSCRIPT`), they are loaded again and the
    /// calls it refused are sent again: a call refused so changed nothing.
    pub fn run(&mut self, calls: &[(u16, redis::Cmd)]) -> Result<Vec<Value>> {
        let sent = self.send(calls)?;
        self.receive(calls, sent)
    }

    /// Sends `calls` and returns without their replies, which [`Server::receive`] reads,
    /// so that the caller can work while Redis does; to a cluster, whose calls may be
    /// redirected and sent again, it waits for them now.
    pub fn send(&mut self, calls: &[(u16, redis::Cmd)]) -> Result<Sent> {
        self.send_here(calls).map_err(Unavailable::wrap)
    }

    fn send_here(&mut self, calls: &[(u16, redis::Cmd)]) -> Result<Sent> {
        match &mut self.kind {
            Kind::One(redis) => Ok(Sent::Pending(redis.send(&packed(calls), calls.len())?)),
            Kind::Cluster(_) => Ok(Sent::Read(self.exchange(calls)?)),
        }
    }

    /// Reads the replies to `calls`, which [`Server::send`] sent, as [`Server::run`] does.
    pub fn receive(&mut self, calls: &[(u16, redis::Cmd)], sent: Sent) -> Result<Vec<Value>> {
        self.receive_here(calls, sent).map_err(Unavailable::wrap)
    }

    fn receive_here(&mut self, calls: &[(u16, redis::Cmd)], sent: Sent) -> Result<Vec<Value>> {
        let ticket = match sent {
            Sent::Read(replies) => return Ok(replies),
            Sent::Pending(ticket) => ticket,
        };
        let Kind::One(redis) = &mut self.kind else { bail!("a cluster's replies come with send") };
        let mut replies = redis.receive(ticket)?;
        // The calls from the first a server without its scripts refused: sent again, by
        // the exchange that loads them again.
        if let Some(first) = replies.iter().position(is_noscript) {
            replies.truncate(first);
            replies.extend(self.exchange(&calls[first..])?);
        }
        Ok(replies)
    }

    /// Sends calls and reads their replies, loading the scripts again where a server lost
    /// them, as [`Server::run`] says.
    fn exchange(&mut self, calls: &[(u16, redis::Cmd)]) -> Result<Vec<Value>> {
        let loaded = &self.loaded;
        let mut reload = |redis: &mut Redis| loaded.iter().try_for_each(|&s| redis.load(s));
        match &mut self.kind {
            Kind::Cluster(cluster) => cluster.run(calls, &mut reload),
            Kind::One(redis) => {
                let mut replies = Vec::with_capacity(calls.len());
                let mut reloaded = false;
                while replies.len() < calls.len() {
                    let rest = &calls[replies.len()..];
                    for reply in redis.round_trip(&packed(rest), rest.len())? {
                        if is_noscript(&reply) && !reloaded {
                            reload(redis)?;
                            reloaded = true;
                            break;
                        }
                        replies.push(reply);
                    }
                }
                Ok(replies)
            }
        }
    }
}

/// The calls written one after another as Redis reads them, to be sent at once.
fn packed(calls: &[(u16, redis::Cmd)]) -> Vec<u8> {
    let mut packed = Vec::new();
    for (_, cmd) in calls {
        cmd.write_packed_command(&mut packed);
    }
    packed
}

/// A failure of Redis, or of the way to it: what a caller that tells failures apart (the
/// Python package's `BackendError`) looks for. It reads as the failure it holds, whose
/// causes are its own.
#[derive(Debug)]
pub struct Unavailable(anyhow::Error);

impl Unavailable {
    /// Marks `err` as Redis's failure, once.
    fn wrap(err: anyhow::Error) -> anyhow::Error {
        match err.is::<Unavailable>() {
            true => err,
            false => anyhow::Error::new(Unavailable(err)),
        }
    }
}

impl std::fmt::Display for Unavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&self.0, f)
    }
}

impl std::error::Error for Unavailable {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}
